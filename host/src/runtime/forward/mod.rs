//! Forwarding a lazily linked import to its dependency (`runtime::linking`): the host function the
//! component calls instantiates the dependency in the same store on first use and calls its export.
//!
//! Two ways to carry the call's values across:
//! - **typed** (`typed`): for the interfaces whose types the host was built with (`receta_erx`,
//!   generated from the app's `wit/`), the arguments and results are lifted into Rust values and
//!   lowered again, as a statically composed component's adapter would copy them;
//! - **dynamic** (`dynamic`): for any other interface, through Wasmtime's `Val`s, which work for
//!   every type but allocate a tree per value (a record's field names included): the rx list's 20
//!   prescriptions cost ~4x more to carry this way (docs/bench.md, findings).
//!
//! Both check the types: Wasmtime checks a host function against the component's import when the
//! component is pre-instantiated, and the callee against the same types on the call.

mod receta_erx;

use std::sync::Arc;

use anyhow::Result;
use wasmtime::StoreContextMut;
use wasmtime::component::{
    ComponentExportIndex, ComponentNamedList, Instance, InstancePre, Lift, LinkerInstance, Lower,
};

use crate::runtime::engine::WasmtimeResultExt;
use crate::runtime::store::HostState;

/// Where a forwarded call goes: dependency `n` of the store, and its export `index`.
#[derive(Clone)]
pub struct Target {
    /// The dependency's slot in `HostState::dependencies`.
    pub n: usize,
    /// The dependency, pre-instantiated against the host interfaces.
    pub pre: Arc<InstancePre<HostState>>,
    /// The function among the dependency's exports.
    pub index: ComponentExportIndex,
}

/// Defines `func` in `instance` to forward to `target`; typed when `typed` allows it and
/// `interface#func` is one the host knows. Returns whether it is typed.
pub fn define(
    instance: &mut LinkerInstance<'_, HostState>,
    interface: &str,
    func: &str,
    target: Target,
    typed: bool,
) -> Result<bool> {
    match receta_erx::forwarder(interface, func).filter(|_| typed) {
        Some(typed) => typed(instance, func, target).map(|()| true),
        None => dynamic(instance, func, target).map(|()| false),
    }
}

/// A typed forwarder for one function signature (`receta_erx`'s table picks one per function).
type Forwarder = fn(&mut LinkerInstance<'_, HostState>, &str, Target) -> Result<()>;

/// Forwards with the arguments `P` and results `R` as Rust values.
fn typed<P, R>(
    instance: &mut LinkerInstance<'_, HostState>,
    func: &str,
    target: Target,
) -> Result<()>
where
    P: ComponentNamedList + Lift + Lower + Send + Sync + 'static,
    R: ComponentNamedList + Lift + Lower + Send + Sync + 'static,
{
    instance
        .func_wrap_async(func, move |mut store, params: P| {
            let target = target.clone();
            Box::new(async move {
                let dependency = dependency(&mut store, &target).await?;
                let callee = dependency
                    .get_func(&mut store, target.index)
                    .ok_or_else(|| wasmtime::Error::msg("a dependency function is missing"))?
                    .typed::<P, R>(&store)?;
                callee.call_async(&mut store, params).await
            })
        })
        .anyhow()
}

/// Forwards through Wasmtime's dynamic `Val`s: any signature.
fn dynamic(instance: &mut LinkerInstance<'_, HostState>, func: &str, target: Target) -> Result<()> {
    // Shared, not copied per call: it is only read in the error below.
    let name: Arc<str> = Arc::from(func);
    instance
        .func_new_async(func, move |mut store, _ty, params, results| {
            let (target, name) = (target.clone(), name.clone());
            Box::new(async move {
                let dependency = dependency(&mut store, &target).await?;
                let Some(callee) = dependency.get_func(&mut store, target.index) else {
                    let missing = format!("dependency function {name:?} is missing");
                    return Err(wasmtime::Error::msg(missing));
                };
                callee.call_async(&mut store, params, results).await
            })
        })
        .anyhow()
}

/// The store's instance of the target's dependency, instantiated now if this is its first call.
async fn dependency(
    store: &mut StoreContextMut<'_, HostState>,
    target: &Target,
) -> wasmtime::Result<Instance> {
    if let Some(instance) = store.data().dependencies.get(target.n).copied().flatten() {
        return Ok(instance);
    }
    let instance = target.pre.instantiate_async(&mut *store).await?;
    let slots = &mut store.data_mut().dependencies;
    if slots.len() <= target.n {
        slots.resize(target.n + 1, None);
    }
    slots[target.n] = Some(instance);
    Ok(instance)
}
