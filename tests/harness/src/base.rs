//! What every component under test runs on, whether a domain component (`Harness`) or the
//! composed gateway (`Gateway`): a tokio runtime, a state directory with a copy of the migrated
//! database, the component's context (variables, databases, outbound allow-list) and the test's
//! outbound HTTP; and one call run on a fresh store within the host's time limit.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use tempfile::TempDir;
use wasmtime::Store;

use receta_host::capability::sqlite::config::DEFAULT_DB_FILE;
use receta_host::runtime::store::{ComponentContext, HostState, new_reused_store, new_store};

use crate::outbound::Outbound;
use crate::shared;

/// The longest one call may run (the host's request time limit).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// What a component under test runs on: its state directory, context and outbound HTTP.
pub(crate) struct Base {
    runtime: tokio::runtime::Runtime,
    state: TempDir,
    context: Arc<ComponentContext>,
    pub(crate) outbound: Outbound,
}

impl Base {
    pub(crate) fn new(variables: &[(&str, &str)]) -> Result<Self> {
        let shared = shared::shared()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start a runtime")?;
        let state = shared.state()?;
        let variables: BTreeMap<String, String> = variables
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let context = runtime.block_on(shared.context(state.path(), &variables))?;
        Ok(Self {
            runtime,
            state,
            context,
            outbound: Outbound::default(),
        })
    }

    /// Runs `f` on a fresh store, within the time limit.
    pub(crate) fn run<R>(
        &self,
        f: impl AsyncFnOnce(&mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R> {
        let shared = shared::shared()?;
        let deadline = Instant::now() + CALL_TIMEOUT;
        let mut store = new_store(&shared.engine, self.context.clone(), deadline);
        store.data_mut().hooks.intercept = Some(self.outbound.interceptor());
        let call = async { tokio::time::timeout(CALL_TIMEOUT, f(&mut store)).await };
        match self.runtime.block_on(call) {
            Ok(result) => result.map_err(anyhow::Error::from),
            Err(_) => Err(anyhow!("the call took longer than {CALL_TIMEOUT:?}")),
        }
    }

    /// A store that lives as long as its instance (a reused WASIp3 instance's), with `f`'s
    /// instance made in it.
    pub(crate) fn reused<R>(
        &self,
        f: impl AsyncFnOnce(&mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<(Store<HostState>, R)> {
        let shared = shared::shared()?;
        let mut store = new_reused_store(&shared.engine, self.context.clone());
        store.data_mut().hooks.intercept = Some(self.outbound.interceptor());
        let made = self.run_on(&mut store, f)?;
        Ok((store, made))
    }

    /// Runs `f` on `store`, within the time limit.
    pub(crate) fn run_on<R>(
        &self,
        store: &mut Store<HostState>,
        f: impl AsyncFnOnce(&mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R> {
        let call = async { tokio::time::timeout(CALL_TIMEOUT, f(store)).await };
        match self.runtime.block_on(call) {
            Ok(result) => result.map_err(anyhow::Error::from),
            Err(_) => Err(anyhow!("the call took longer than {CALL_TIMEOUT:?}")),
        }
    }

    pub(crate) fn db(&self) -> Result<rusqlite::Connection> {
        let path: PathBuf = self.state.path().join(DEFAULT_DB_FILE);
        let conn = rusqlite::Connection::open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        conn.busy_timeout(Duration::from_secs(5))?;
        Ok(conn)
    }
}
