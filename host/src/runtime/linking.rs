//! How a trigger component gets its dependencies (`[component.x.dependencies]`), two ways:
//!
//! - **lazy** (the default): the component and each dependency are compiled on their own. The
//!   component's imports that a dependency satisfies are host functions of this component's own
//!   linker; the first call of one within a store instantiates that dependency *in the same store*
//!   (with the same host state: the component's permissions, as with
//!   `dependencies_inherit_configuration`) and forwards the call; later calls in that store reuse
//!   the instance. A request pays only for the dependencies it calls, and every request still gets
//!   fresh instances: nothing survives between stores, which is Spin's semantics.
//! - **static** (`RECETA_COMPOSITION=static`): composed with `wac-graph` as Spin does
//!   (`compose.rs`), every dependency instantiated with the component on every request.
//!
//! Both modes plug the same imports (Spin's key matching, `compose::plugs`) and refuse the same
//! manifests; the app and `spin.toml` are the same either way, and real Spin composes statically.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use wasmtime::Engine;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, InstancePre, Linker};

use crate::capability::PROVIDED;
use crate::config::manifest::{ComponentDecl, Dependency};
use crate::runtime::compose::{Sources, check_inheritance, plugs};
use crate::runtime::engine::{self, Provenance, WasmtimeResultExt};
use crate::runtime::forward;
use crate::runtime::store::HostState;

/// How dependencies are linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Composition {
    /// Instantiated on first use, in the same store; calls forwarded typed where the host knows
    /// the interface (`runtime::forward`).
    Lazy,
    /// As `Lazy`, but every call forwarded through dynamic values (for comparison and tests).
    LazyDynamic,
    /// Composed ahead of time, all instantiated with the component.
    Static,
}

impl Composition {
    /// `RECETA_COMPOSITION`: `lazy` (default), `lazy-dynamic` or `static`.
    pub fn from_env() -> Result<Self> {
        match std::env::var("RECETA_COMPOSITION").as_deref() {
            Err(_) | Ok("") | Ok("lazy") => Ok(Self::Lazy),
            Ok("lazy-dynamic") => Ok(Self::LazyDynamic),
            Ok("static") => Ok(Self::Static),
            Ok(other) => bail!(
                "RECETA_COMPOSITION must be `lazy`, `lazy-dynamic` or `static`, not {other:?}"
            ),
        }
    }
}

/// The component `decl`, compiled (or loaded from the cache) and pre-instantiated with its
/// dependencies linked the `composition` way; `base` provides the host interfaces.
pub fn prepare(
    engine: &Engine,
    base: &Linker<HostState>,
    decl: &ComponentDecl,
    composition: Composition,
) -> Result<InstancePre<HostState>> {
    let id = decl.id.as_str();
    let sources = Sources::read(decl)?;
    let instance_pre = |linker: &Linker<HostState>, component: &Component| {
        linker.instantiate_pre(component).anyhow().with_context(|| {
            format!(
                "component {id:?} imports something receta does not provide \
                     (receta provides {PROVIDED})"
            )
        })
    };
    // A WASIp3 handler's instance is reused (`trigger::http::reuse`), dependencies and all: it is
    // composed as Spin composes it, since linking a dependency lazily would save nothing.
    if composition == Composition::Static
        || sources.dependencies.is_empty()
        || exports_wasi_http_p3(&sources.main)?
    {
        let identity = sources.identity();
        let dependencies = sources.dependencies.len();
        let (component, provenance, took) =
            engine::load_component(engine, id, &identity, || sources.compose())?;
        log(id, provenance, took, dependencies, "composed with");
        return instance_pre(base, &component);
    }

    let Sources {
        main, dependencies, ..
    } = sources;
    if dependencies.len() >= engine::COMPONENT_INSTANCES_PER_STORE as usize {
        bail!(
            "component {id:?} has {} dependencies; linked lazily, a store holds at most {} \
             (run with RECETA_COMPOSITION=static)",
            dependencies.len(),
            engine::COMPONENT_INSTANCES_PER_STORE - 1
        );
    }
    let main = Sources::single(id, main);
    let (component, provenance, took) =
        engine::load_component(engine, id, &main.identity(), || Ok(main.main.clone()))?;
    log(id, provenance, took, 0, "");
    let imports: Vec<String> = component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    let plugged = plugs(id, &imports, dependencies.iter().map(|(dep, _)| dep))?;

    let mut linker = base.clone();
    // Functions forwarded typed and dynamically (`runtime::forward`).
    let (mut typed_count, mut dynamic_count) = (0, 0);
    // Each dependency compiled alone and pre-instantiated against the host interfaces.
    let mut prepared: Vec<Option<(Arc<InstancePre<HostState>>, Component)>> =
        vec![None; dependencies.len()];
    for (import, n) in &plugged {
        let (dep, bytes) = &dependencies[*n];
        if prepared[*n].is_none() {
            prepared[*n] = Some(prepare_dependency(engine, base, id, dep, bytes)?);
        }
        let (pre, dep_component) = prepared[*n].clone().expect("prepared above");
        let linked = Linked {
            id,
            n: *n,
            pre,
            dep_component: &dep_component,
            dep,
        };
        let (typed, dynamic) = link_import(
            engine,
            &mut linker,
            &component,
            import,
            &linked,
            composition,
        )?;
        typed_count += typed;
        dynamic_count += dynamic;
    }
    eprintln!(
        "receta: component {id}: {} dependency functions linked lazily: {} typed, {} dynamically",
        typed_count + dynamic_count,
        typed_count,
        dynamic_count
    );
    instance_pre(&linker, &component)
}

/// A dependency prepared for lazy linking: its place in the list, its instance-pre and component.
struct Linked<'a> {
    /// The importing component's id, for errors.
    id: &'a str,
    n: usize,
    pre: Arc<InstancePre<HostState>>,
    dep_component: &'a Component,
    dep: &'a Dependency,
}

/// Compiles a dependency alone and pre-instantiates it against the host interfaces.
fn prepare_dependency(
    engine: &Engine,
    base: &Linker<HostState>,
    id: &str,
    dep: &Dependency,
    bytes: &[u8],
) -> Result<(Arc<InstancePre<HostState>>, Component)> {
    let name = format!("{id}/{}", dep.name);
    let single = Sources::single(&name, bytes.to_vec());
    let (dep_component, provenance, took) =
        engine::load_component(engine, &name, &single.identity(), || {
            Ok(single.main.clone())
        })?;
    log(&name, provenance, took, 0, "");
    let dep_imports: Vec<String> = dep_component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    check_inheritance(dep, dep_imports.iter())?;
    let pre = base
        .instantiate_pre(&dep_component)
        .anyhow()
        .with_context(|| {
            format!(
                "dependency {:?} of component {id:?} imports something receta does not provide \
                 (receta provides {PROVIDED})",
                dep.name
            )
        })?;
    Ok((Arc::new(pre), dep_component))
}

/// Defines every function of `component`'s import `import` in `linker`, each forwarded to the
/// dependency's export (`runtime::forward`); how many were forwarded typed and dynamically.
fn link_import(
    engine: &Engine,
    linker: &mut Linker<HostState>,
    component: &Component,
    import: &str,
    linked: &Linked,
    composition: Composition,
) -> Result<(usize, usize)> {
    let Linked {
        id,
        n,
        pre,
        dep_component,
        dep,
    } = linked;
    let (mut typed_count, mut dynamic_count) = (0, 0);
    let export = dep.export.clone().unwrap_or_else(|| import.to_string());
    let Some(interface) = dep_component.get_export_index(None, &export) else {
        bail!(
            "dependency {:?} ({}) does not export {export:?} to satisfy import {import:?}",
            dep.name,
            dep.source.display()
        );
    };
    let Some(ComponentItem::ComponentInstance(ty)) =
        component.component_type().get_import(engine, import)
    else {
        bail!("import {import:?} of component {id:?} is not an interface");
    };
    let mut instance = linker
        .instance(import)
        .anyhow()
        .with_context(|| format!("cannot link import {import:?}"))?;
    for (func, item) in ty.exports(engine) {
        // Types need no definition, nor does a resource the interface uses from the host
        // (`spin:sqlite`'s `connection`, which the gateway lends): an interface of functions,
        // types and such resources is what the app has.
        match item {
            ComponentItem::ComponentFunc(_) => {}
            ComponentItem::Type(_) => continue,
            ComponentItem::Resource(_) => continue,
            _ => bail!(
                "import {import:?}: only functions, types and the host's resources can be \
                 linked lazily"
            ),
        }
        let Some(index) = dep_component.get_export_index(Some(&interface), func) else {
            bail!(
                "dependency {:?} export {export:?} has no function {func:?}",
                dep.name
            );
        };
        let target = forward::Target {
            n: *n,
            pre: pre.clone(),
            index,
        };
        let typed = composition == Composition::Lazy;
        let typed = forward::define(&mut instance, import, func, target, typed)
            .with_context(|| format!("cannot link {import}#{func}"))?;
        if typed {
            typed_count += 1;
        } else {
            dynamic_count += 1;
        }
    }
    Ok((typed_count, dynamic_count))
}

/// The WASIp3 HTTP handler Spin 4.0.2 serves (and only this release candidate).
pub const WASI_HTTP_P3: &str = "wasi:http/handler@0.3.0-rc-2026-03-15";

/// Whether the component in `bytes` exports [`WASI_HTTP_P3`], read from its export section.
fn exports_wasi_http_p3(bytes: &[u8]) -> Result<bool> {
    // Nested modules and components have export sections of their own: only the outermost counts.
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload.context("not a WebAssembly component")? {
            wasmparser::Payload::ComponentExportSection(exports) if depth == 0 => {
                for export in exports {
                    if export.context("unreadable export")?.name.0 == WASI_HTTP_P3 {
                        return Ok(true);
                    }
                }
            }
            wasmparser::Payload::ModuleSection { .. }
            | wasmparser::Payload::ComponentSection { .. } => depth += 1,
            wasmparser::Payload::End(_) if depth == 0 => break,
            wasmparser::Payload::End(_) => depth -= 1,
            _ => {}
        }
    }
    Ok(false)
}

fn log(id: &str, provenance: Provenance, took: std::time::Duration, deps: usize, how: &str) {
    let what = match (provenance, deps) {
        (Provenance::Cached, _) => "loaded compiled code from the cache".to_string(),
        (Provenance::Compiled, 0) => "compiled".to_string(),
        (Provenance::Compiled, n) => format!("{how} {n} dependencies and compiled"),
    };
    eprintln!("receta: component {id}: {what} in {} ms", took.as_millis());
}
