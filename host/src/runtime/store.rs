//! The store data (`Store<HostState>`: one request's, one cron run's, or one reused WASIp3
//! instance's) and the per-component configuration it is built from.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::{Instance, ResourceTable};
use wasmtime::{Engine, Store, StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, p2, p3};

use anyhow::{Context, Result};

use crate::capability::keyvalue::{KeyValueState, KeyValueStores};
use crate::capability::outbound::{AllowedHosts, OutboundHooks};
use crate::capability::sqlite::{Databases, SqliteState};
use crate::capability::variables::{ComponentVariables, VariablesState};
use crate::config::manifest::ComponentDecl;
use crate::config::variables::AppVariables;

/// What a component may do: built once at start-up, shared by all of its stores.
pub struct ComponentContext {
    /// The component id.
    pub id: Arc<str>,
    /// `sqlite_databases`
    pub sqlite_allowed: Arc<HashSet<String>>,
    /// Every configured database.
    pub databases: Arc<Databases>,
    /// `key_value_stores`
    pub key_value_allowed: Arc<HashSet<String>>,
    /// Every defined key-value store.
    pub key_value_stores: Arc<KeyValueStores>,
    /// Rendered `[component.x.variables]`.
    pub variables: Arc<ComponentVariables>,
    /// Rendered `allowed_outbound_hosts`.
    pub outbound: Arc<AllowedHosts>,
    /// `environment`
    pub environment: Vec<(String, String)>,
    /// Linear-memory limit per memory, in bytes.
    pub memory_limit: usize,
}

impl ComponentContext {
    /// The context of `decl` (a dependency that inherits configuration runs with its
    /// component's): its templates rendered with the application `variables`.
    pub fn new(
        decl: &ComponentDecl,
        variables: &AppVariables,
        databases: Arc<Databases>,
        key_value_stores: Arc<KeyValueStores>,
        memory_limit: usize,
    ) -> Result<Self> {
        let id = decl.id.as_str();
        let allowed_hosts: Vec<String> = decl
            .allowed_outbound_hosts
            .iter()
            .map(|t| t.render(|name| variables.get(name)))
            .collect::<Result<_>>()
            .with_context(|| format!("component {id:?}: allowed_outbound_hosts"))?;
        let outbound = AllowedHosts::parse(&allowed_hosts)
            .with_context(|| format!("component {id:?}: allowed_outbound_hosts"))?;
        Ok(Self {
            id: Arc::from(id),
            sqlite_allowed: Arc::new(decl.sqlite_databases.iter().cloned().collect()),
            databases,
            key_value_allowed: Arc::new(decl.key_value_stores.iter().cloned().collect()),
            key_value_stores,
            variables: Arc::new(ComponentVariables::new(id, &decl.variables, variables)?),
            outbound: Arc::new(outbound),
            environment: decl
                .environment
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            memory_limit,
        })
    }
}

/// The data of one store (one request, or one cron tick).
pub struct HostState {
    /// Resources of WASI and `wasi:http` (SQLite keeps its connections in its own state).
    pub table: ResourceTable,
    /// `wasi:cli` and friends: no preopened directories, no network, stdout/stderr to the host's stderr.
    pub wasi: WasiCtx,
    /// `wasi:http` state.
    pub http: WasiHttpCtx,
    /// `wasi:http` hooks (allowed_outbound_hosts).
    pub hooks: OutboundHooks,
    /// SQLite permission, databases and connections.
    pub sqlite: SqliteState,
    /// Key-value permission, stores, buckets.
    pub key_value: KeyValueState,
    /// The component's variables.
    pub variables: VariablesState,
    /// Memory and instance limits.
    pub limits: StoreLimits,
    /// The dependencies instantiated so far in this store, by index (lazy linking,
    /// `runtime::linking`).
    pub dependencies: Vec<Option<Instance>>,
}

impl HostState {
    /// Fresh state for one store of `component`.
    pub fn new(component: Arc<ComponentContext>) -> Self {
        let mut wasi = WasiCtx::builder();
        wasi.stdout(std::io::stderr())
            .stderr(std::io::stderr())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .envs(&component.environment);
        if let Some(secs) = crate::capability::clock::offset() {
            wasi.wall_clock(crate::capability::clock::ShiftedWallClock(secs));
        }
        let limits = StoreLimitsBuilder::new()
            .memory_size(component.memory_limit)
            .trap_on_grow_failure(false)
            .build();
        Self {
            table: ResourceTable::new(),
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            hooks: OutboundHooks {
                component_id: component.id.clone(),
                allowed: component.outbound.clone(),
                intercept: None,
            },
            sqlite: SqliteState::new(
                component.sqlite_allowed.clone(),
                component.databases.clone(),
            ),
            key_value: KeyValueState::new(
                component.key_value_allowed.clone(),
                component.key_value_stores.clone(),
            ),
            variables: VariablesState(component.variables.clone()),
            limits,
            dependencies: Vec::new(),
        }
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl p2::WasiHttpView for HostState {
    fn http(&mut self) -> p2::WasiHttpCtxView<'_> {
        p2::WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

impl p3::WasiHttpView for HostState {
    fn http(&mut self) -> p3::WasiHttpCtxView<'_> {
        p3::WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

/// A fresh store for one request or cron run of `component`, limited in memory and in time: the
/// guest yields to the scheduler at every epoch tick (so the caller's `timeout_at(deadline)` can
/// fire and other work keeps running), and as a backstop traps once well past `deadline`.
pub fn new_store(
    engine: &Engine,
    component: Arc<ComponentContext>,
    deadline: Instant,
) -> Store<HostState> {
    // A reused store's set-up (memory limit, a yield at every tick), plus the hard deadline.
    let mut store = new_reused_store(engine, component);
    let hard_deadline = deadline + Duration::from_secs(1);
    store.epoch_deadline_callback(move |_| {
        if Instant::now() >= hard_deadline {
            Err(wasmtime::Trap::Interrupt.into())
        } else {
            Ok(UpdateDeadline::Yield(1))
        }
    });
    store
}

/// A store for a reused instance of a WASIp3 component: it lives as long as the instance, so it
/// has no deadline of its own. The guest yields to the scheduler at every epoch tick, and
/// Wasmtime's `ProxyHandler` times each request out (`trigger::http::reuse`).
pub fn new_reused_store(engine: &Engine, component: Arc<ComponentContext>) -> Store<HostState> {
    let mut store = Store::new(engine, HostState::new(component));
    store.limiter(|state| &mut state.limits);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|_| Ok(UpdateDeadline::Yield(1)));
    store
}
