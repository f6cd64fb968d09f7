//! Forwarding a lazily linked import to its dependency (`runtime::linking`): the host function the
//! component calls instantiates the dependency in the same store on first use and calls its export.
//!
//! Two ways to carry the call's values across:
//! - **typed** (`calls::typed`): for the interfaces whose types the host was built with
//!   (`app_wit`, generated from the app's `wit/` at build time), the arguments and results are lifted into
//!   Rust values and lowered again, as a statically composed component's adapter copies them;
//! - **dynamic** (`calls::dynamic`): for any other interface, through Wasmtime's `Val`s, which work
//!   for every type but allocate a tree per value (a record's field names, a `Val` per byte of a
//!   `list<u8>`): a stored PDF's request cost ~6x the CPU this way (docs/bench.md, findings).
//!
//! Both check the types: Wasmtime checks a host function against the component's import when the
//! component is pre-instantiated, and the callee against the same types on the call.

mod app_wit;
mod calls;

use anyhow::Result;
use wasmtime::component::LinkerInstance;

use crate::runtime::store::HostState;

pub use calls::Target;

/// Defines `func` in `instance` to forward to `target`; typed when `typed` allows it and
/// `interface#func` is one the host knows. Returns whether it is typed.
pub fn define(
    instance: &mut LinkerInstance<'_, HostState>,
    interface: &str,
    func: &str,
    target: Target,
    typed: bool,
) -> Result<bool> {
    match app_wit::forwarder(interface, func).filter(|_| typed) {
        Some(typed) => typed(instance, func, target).map(|()| true),
        None => calls::dynamic(instance, func, target).map(|()| false),
    }
}
