//! What every test of the process shares, made once: the engine and linker of `receta up`, the
//! repository's `spin.toml`, the compiled components, and a database with `migrations/` applied
//! that each test copies.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{Context, Result, anyhow};
use tempfile::TempDir;
use wasmtime::Engine;
use wasmtime::component::{InstancePre, Linker};

use receta_host::app::migrations;
use receta_host::capability::keyvalue::KeyValueStores;
use receta_host::capability::sqlite::Databases;
use receta_host::capability::sqlite::config::{DEFAULT_DB_FILE, Location};
use receta_host::config::manifest::{ComponentDecl, Manifest};
use receta_host::config::variables::{AppVariables, env_key};
use receta_host::runtime::compose::Sources;
use receta_host::runtime::engine::{self, Limits, WasmtimeResultExt};
use receta_host::runtime::store::{ComponentContext, HostState};

/// The component every domain component is a dependency of, and whose configuration (database,
/// key-value store, variables, outbound hosts) it inherits.
pub const GATEWAY: &str = "gateway";

/// Linear memory of one instance (the host's default).
const MEMORY_LIMIT: usize = 128 << 20;

/// The process-wide state.
pub struct Shared {
    /// The engine (the host's: pooling allocator, epoch interruption, async).
    pub engine: Engine,
    /// Every host capability.
    pub linker: Linker<HostState>,
    /// The repository's `spin.toml`.
    pub manifest: Manifest,
    /// A migrated database file, copied by each test.
    template: PathBuf,
    _dir: TempDir,
    /// Pre-instantiated components, by key.
    pres: Mutex<HashMap<String, Arc<dyn Any + Send + Sync>>>,
}

/// The shared state, made on first use.
pub fn shared() -> Result<&'static Shared> {
    static SHARED: OnceLock<Result<Shared, String>> = OnceLock::new();
    SHARED
        .get_or_init(|| Shared::new().map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| anyhow!("the component test harness cannot start: {e}"))
}

/// The repository root (the harness lives in `tests/harness`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

impl Shared {
    fn new() -> Result<Self> {
        let engine = engine::new_engine(Limits {
            memory_bytes: MEMORY_LIMIT,
            max_instances: 32,
        })?;
        // Guests past their deadline trap (`runtime::store::new_store`), as in `receta up`.
        engine::start_epoch_ticker(engine.clone(), Arc::new(AtomicBool::new(false)))?;
        let linker = engine::new_linker(&engine)?;
        let manifest = Manifest::load(&root().join("spin.toml"))?;
        let dir = tempfile::tempdir().context("cannot create a temporary directory")?;
        let template = dir.path().join(DEFAULT_DB_FILE);
        migrate(&template)?;
        Ok(Self {
            engine,
            linker,
            manifest,
            template,
            _dir: dir,
            pres: Mutex::default(),
        })
    }

    /// The gateway's declaration in `spin.toml`.
    pub fn gateway(&self) -> Result<&ComponentDecl> {
        self.manifest
            .components
            .get(GATEWAY)
            .context("spin.toml has no gateway component")
    }

    /// The pre-instantiated component under `key`, made by `make` the first time.
    pub fn pre<P: Clone + Send + Sync + 'static>(
        &self,
        key: &str,
        make: impl FnOnce(&Self) -> Result<P>,
    ) -> Result<P> {
        let mut pres = self.pres.lock().map_err(|_| anyhow!("a test panicked"))?;
        if let Some(pre) = pres.get(key).and_then(|p| p.downcast_ref::<P>()) {
            return Ok(pre.clone());
        }
        let pre = make(self)?;
        pres.insert(key.to_string(), Arc::new(pre.clone()));
        Ok(pre)
    }

    /// The dependency `name` of the gateway, compiled (or loaded from the host's cache) and
    /// pre-instantiated against the host's capabilities.
    pub fn dependency(&self, name: &str) -> Result<InstancePre<HostState>> {
        let gateway = self.gateway()?;
        let dependency = gateway
            .dependencies
            .iter()
            .find(|d| d.name == name)
            .with_context(|| format!("spin.toml's gateway has no dependency {name:?}"))?;
        let bytes = std::fs::read(&dependency.source).with_context(|| {
            format!(
                "cannot read {} (build the components first: `cargo xtask build`)",
                dependency.source.display()
            )
        })?;
        let id = format!("{GATEWAY}/{name}");
        let single = Sources::single(&id, bytes);
        let (component, _, _) =
            engine::load_component(&self.engine, &id, &single.identity(), || {
                Ok(single.main.clone())
            })?;
        self.linker
            .instantiate_pre(&component)
            .anyhow()
            .with_context(|| format!("cannot link {name:?} to the host's capabilities"))
    }

    /// A fresh state directory: the migrated database and an empty key-value store.
    pub fn state(&self) -> Result<TempDir> {
        let dir = tempfile::tempdir().context("cannot create a temporary directory")?;
        std::fs::copy(&self.template, dir.path().join(DEFAULT_DB_FILE))
            .context("cannot copy the migrated database")?;
        Ok(dir)
    }

    /// The gateway's context on the state directory `state`, with the application variables
    /// `variables` (name, value) over spin.toml's defaults.
    pub async fn context(
        &self,
        state: &Path,
        variables: &BTreeMap<String, String>,
    ) -> Result<Arc<ComponentContext>> {
        let by_key: HashMap<String, &String> =
            variables.iter().map(|(k, v)| (env_key(k), v)).collect();
        let app =
            AppVariables::resolve(&self.manifest, |key| by_key.get(key).map(|v| v.to_string()))?;
        let location = Location::File(state.join(DEFAULT_DB_FILE));
        let databases =
            Databases::open(BTreeMap::from([("default".to_string(), location)])).await?;
        let key_value_stores = KeyValueStores::open(state)?;
        Ok(Arc::new(ComponentContext::new(
            self.gateway()?,
            &app,
            Arc::new(databases),
            Arc::new(key_value_stores),
            MEMORY_LIMIT,
        )?))
    }
}

/// Applies `migrations/` to a new database at `path`, the host's way, and folds its WAL in.
fn migrate(path: &Path) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime")?;
    runtime.block_on(async {
        let location = Location::File(path.to_path_buf());
        let databases =
            Databases::open(BTreeMap::from([("default".to_string(), location)])).await?;
        let default = databases.get("default").context("no default database")?;
        let mut conn = default.connect()?;
        migrations::apply(&mut conn, &root().join("migrations")).await?;
        anyhow::Ok(())
    })?;
    let conn = rusqlite::Connection::open(path).context("cannot open the migrated database")?;
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .context("cannot checkpoint the migrated database")?;
    Ok(())
}
