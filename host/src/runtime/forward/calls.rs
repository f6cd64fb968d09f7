//! The two ways a forwarded call carries its values (see `super`), and the store's dependency
//! instance both call into.

use std::sync::Arc;

use anyhow::Result;
use wasmtime::StoreContextMut;
use wasmtime::component::{
    ComponentExportIndex, ComponentNamedList, Func, Instance, InstancePre, Lift, LinkerInstance,
    Lower, Val,
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

/// A typed forwarder for one function signature (`app_wit`'s generated table picks one per function).
pub type Forwarder = fn(&mut LinkerInstance<'_, HostState>, &str, Target) -> Result<()>;

/// Forwards with the arguments `P` and results `R` as Rust values.
pub fn typed<P, R>(
    instance: &mut LinkerInstance<'_, HostState>,
    func: &str,
    target: Target,
) -> Result<()>
where
    P: ComponentNamedList + Lift + Lower + Send + Sync + 'static,
    R: ComponentNamedList + Lift + Lower + Send + Sync + 'static,
{
    let name: Arc<str> = Arc::from(func);
    instance
        .func_wrap_async(func, move |mut store, params: P| {
            let (target, name) = (target.clone(), name.clone());
            Box::new(async move {
                let callee = callee(&mut store, &target, &name).await?;
                callee
                    .typed::<P, R>(&store)?
                    .call_async(&mut store, params)
                    .await
            })
        })
        .anyhow()
}

/// Forwards through Wasmtime's dynamic `Val`s: any signature.
pub fn dynamic(
    instance: &mut LinkerInstance<'_, HostState>,
    func: &str,
    target: Target,
) -> Result<()> {
    let name: Arc<str> = Arc::from(func);
    instance
        .func_new_async(func, move |mut store, _ty, params, results| {
            let (target, name) = (target.clone(), name.clone());
            Box::new(async move {
                let callee = callee(&mut store, &target, &name).await?;
                callee.call_async(&mut store, params, results).await?;
                // A borrowed resource (the connection the gateway lends) was lifted into the
                // store's host table for this call; the borrow ends here, before the caller's
                // call does.
                for param in params {
                    if let Val::Resource(r) = param
                        && !r.owned()
                    {
                        r.resource_drop_async(&mut store).await?;
                    }
                }
                Ok(())
            })
        })
        .anyhow()
}

/// The target function in the store's instance of its dependency (`name`, shared rather than
/// copied per call, is only read in the error).
async fn callee(
    store: &mut StoreContextMut<'_, HostState>,
    target: &Target,
    name: &str,
) -> wasmtime::Result<Func> {
    let dependency = dependency(store, target).await?;
    dependency
        .get_func(&mut *store, target.index)
        .ok_or_else(|| wasmtime::Error::msg(format!("dependency function {name:?} is missing")))
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
