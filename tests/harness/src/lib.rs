//! Component tests in the `spin test` style: one of the app's components, alone and in-process,
//! on the host's own capabilities (`receta_host`), driven from plain `#[test]` functions.
//!
//! - [`Harness`] instantiates one **domain component** (`worlds`: auth, catalog, patients,
//!   prescriptions, pharmacies, notifications) with the configuration it has under the gateway in
//!   spin.toml: a copy of a database with `migrations/` applied (seed and inspect it with
//!   [`Harness::db`]), the application variables (override them with [`Harness::with_variables`]),
//!   the `default` key-value store, and an outbound HTTP the test answers ([`Outbound`]). Each
//!   [`Harness::call`] runs in a fresh instance, as every request does on Spin; the database
//!   persists across calls.
//! - [`Gateway`] does the same for the gateway, composed with its dependencies as `receta up`
//!   composes it, and driven through `wasi:http/incoming-handler` without a socket.
//!
//! `docs/testing-components.md` shows a test and maps these to `spin test`'s concepts.

mod base;
mod gateway;
mod outbound;
mod shared;
pub mod worlds;

use std::sync::Arc;

use anyhow::Result;
use wasmtime::Store;
use wasmtime::component::Resource;

use base::Base;
use receta_host::capability::sqlite::bindings::sqlite::{
    Connection, HostConnection, QueryResult, Value,
};
use receta_host::runtime::store::HostState;

pub use gateway::{Gateway, Response};
pub use outbound::{Outbound, Sent};
pub use worlds::World;

/// One domain component of world `W` under test.
pub struct Harness<W: World> {
    pre: W::Pre,
    base: Arc<Base>,
}

impl<W: World> Harness<W> {
    /// The component with spin.toml's variable defaults.
    pub fn new() -> Result<Self> {
        Self::with_variables(&[])
    }

    /// The component with these application variables (name, value) over spin.toml's defaults.
    pub fn with_variables(variables: &[(&str, &str)]) -> Result<Self> {
        let shared = shared::shared()?;
        Ok(Self {
            pre: pre::<W>(shared)?,
            base: Arc::new(Base::new(variables)?),
        })
    }

    /// Another component of the app on this one's database, variables and outbound HTTP, as
    /// two dependencies of the gateway share them (e.g. prescriptions to issue, notifications to
    /// deliver what was issued).
    pub fn beside<V: World>(&self) -> Result<Harness<V>> {
        Ok(Harness {
            pre: pre::<V>(shared::shared()?)?,
            base: self.base.clone(),
        })
    }

    /// Runs `f` on a fresh instance of the component: `f` calls its exports.
    pub fn call<R>(
        &self,
        f: impl AsyncFnOnce(&W, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R> {
        self.base.run(async |store| {
            let instance = W::instantiate(&self.pre, store).await?;
            f(&instance, store).await
        })
    }

    /// A connection to the component's database, to seed it and to look at what it stored.
    pub fn db(&self) -> Result<rusqlite::Connection> {
        self.base.db()
    }

    /// The component's outbound HTTP.
    pub fn outbound(&self) -> &Outbound {
        &self.base.outbound
    }
}

/// A connection to the `default` database opened in `store` the way a component's `open` makes
/// one, to lend to an export that takes `db: option<borrow<connection>>` (as the gateway lends the
/// request's). Given back when the store ends.
pub async fn lend(store: &mut Store<HostState>) -> wasmtime::Result<Resource<Connection>> {
    HostConnection::open(&mut store.data_mut().sqlite, "default".to_string())
        .await?
        .map_err(|e| wasmtime::Error::msg(format!("cannot open the database: {e:?}")))
}

/// Runs a statement an export gave for its caller to send (`catalog.prescriber-read` and the
/// like) on the `default` database, as the gateway does, and answers its result for the export
/// that reads it.
pub async fn run(
    store: &mut Store<HostState>,
    (sql, params): (String, Vec<Value>),
) -> wasmtime::Result<QueryResult> {
    let db = lend(store).await?;
    HostConnection::execute(&mut store.data_mut().sqlite, db, sql, params)
        .await?
        .map_err(|e| wasmtime::Error::msg(format!("running the statement: {e:?}")))
}

fn pre<W: World>(shared: &shared::Shared) -> Result<W::Pre> {
    shared.pre(W::DEPENDENCY, |s| W::pre(s.dependency(W::DEPENDENCY)?))
}
