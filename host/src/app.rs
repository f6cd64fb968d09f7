//! Loading an application: manifest → variables → databases and migrations → components
//! (composed, compiled or loaded from the cache, pre-instantiated) → router. Nothing is served
//! before all of it succeeded.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::Semaphore;
use wasmtime::Engine;
use wasmtime_wasi_http::p2::bindings::ProxyPre;

use crate::cli::{UpOptions, env_number};
use crate::cron::{CronJob, Schedule, SpinCronPre};
use crate::engine::{self, Limits, Provenance, WasmtimeResultExt};
use crate::manifest::{Manifest, RouteSpec};
use crate::migrations;
use crate::outbound::AllowedHosts;
use crate::router::Router;
use crate::sqlite::Databases;
use crate::state::{ComponentContext, HostState};
use crate::variables::{AppVariables, ComponentVariables};

/// Defaults of the limits (overridable through the environment).
const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 30_000;
const DEFAULT_MEMORY_LIMIT_MB: u64 = 128;
const DEFAULT_MAX_INSTANCES: u64 = 64;
/// Instances for work a guest does after its response (delivering a new prescription's email and
/// webhooks): a budget of their own, so such work never holds the instances requests need.
const DEFAULT_MAX_BACKGROUND: u64 = 16;
/// Largest request body the host reads: the app's largest (5 MiB multipart; JSON is 1 MiB).
const DEFAULT_MAX_BODY_BYTES: u64 = 5 << 20;
/// The longest a request's body may take to arrive once its head is in.
const DEFAULT_BODY_TIMEOUT_MS: u64 = 10_000;

/// A component ready to run: its permissions and its pre-instantiated code, per trigger kind.
pub struct LoadedComponent {
    /// What the component may do.
    pub context: Arc<ComponentContext>,
    /// Pre-instantiated `wasi:http/proxy`, when an HTTP trigger uses the component
    /// (one `Store` per request is created from it).
    pub http: Option<ProxyPre<HostState>>,
    /// Pre-instantiated `fermyon:spin-cron/spin-cron`, when a cron trigger uses the component.
    pub cron: Option<SpinCronPre<HostState>>,
}

/// A loaded application.
pub struct App {
    /// The manifest.
    pub manifest: Manifest,
    /// The engine every component was compiled for.
    pub engine: Engine,
    /// HTTP routes.
    pub router: Router,
    /// Trigger components by id.
    pub components: HashMap<String, LoadedComponent>,
    /// `[[trigger.cron]]` schedules.
    pub cron_jobs: Vec<CronJob>,
    /// Time limit of one request (guest execution, including work after the response).
    pub request_timeout: Duration,
    /// One permit per instance the pooling allocator holds: a request or cron run waits for a
    /// permit instead of failing when every instance slot is busy.
    pub instance_permits: Arc<Semaphore>,
    /// The separate budget of instances that keep working after their response was sent.
    pub background_permits: Arc<Semaphore>,
    /// Largest request body read, in bytes (larger: 413 without an instance).
    pub max_body_bytes: usize,
    /// The longest a request body may take to arrive (slower: 408 without an instance).
    pub body_timeout: Duration,
    /// The state directory.
    pub state_dir: PathBuf,
}

impl App {
    /// Loads everything `receta up` needs before it accepts a connection.
    pub fn load(options: &UpOptions) -> Result<Self> {
        let manifest = Manifest::load(&options.manifest)?;
        let state_dir = match &options.state_dir {
            Some(dir) => dir.clone(),
            None => manifest.dir.join(".spin"),
        };
        std::fs::create_dir_all(&state_dir).with_context(|| {
            format!("cannot create the state directory {}", state_dir.display())
        })?;

        let runtime_config = match &options.runtime_config {
            Some(path) => {
                let text = std::fs::read_to_string(path).with_context(|| {
                    format!("cannot read the runtime config {}", path.display())
                })?;
                let table: toml::Table = toml::from_str(&text)
                    .with_context(|| format!("invalid runtime config {}", path.display()))?;
                Some(table)
            }
            None => None,
        };

        let variables = AppVariables::resolve(&manifest, |key| std::env::var(key).ok())?;

        let databases = Databases::open(&state_dir, runtime_config.as_ref())
            .context("cannot set up the SQLite databases")?;
        prepare_default_database(&manifest, options, &databases)?;
        let databases = Arc::new(databases);

        let request_timeout = Duration::from_millis(env_number(
            "RECETA_REQUEST_TIMEOUT_MS",
            DEFAULT_REQUEST_TIMEOUT_MS,
        )?);
        let memory_limit = usize::try_from(env_number(
            "RECETA_MEMORY_LIMIT_MB",
            DEFAULT_MEMORY_LIMIT_MB,
        )?)
        .context("RECETA_MEMORY_LIMIT_MB is too large")?
            << 20;
        let max_instances =
            u32::try_from(env_number("RECETA_MAX_INSTANCES", DEFAULT_MAX_INSTANCES)?)
                .context("RECETA_MAX_INSTANCES is too large")?;
        let max_background =
            u32::try_from(env_number("RECETA_MAX_BACKGROUND", DEFAULT_MAX_BACKGROUND)?)
                .context("RECETA_MAX_BACKGROUND is too large")?;
        let max_body_bytes =
            usize::try_from(env_number("RECETA_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES)?)
                .context("RECETA_MAX_BODY_BYTES is too large")?;
        let body_timeout = Duration::from_millis(env_number(
            "RECETA_BODY_TIMEOUT_MS",
            DEFAULT_BODY_TIMEOUT_MS,
        )?);
        // The pool holds both budgets' instances.
        let engine = engine::new_engine(Limits {
            memory_bytes: memory_limit,
            max_instances: max_instances + max_background,
        })?;
        let linker = engine::new_linker(&engine)?;

        // Which trigger kinds use each component.
        let mut routes = Vec::new();
        let mut used: BTreeMap<&str, (bool, bool)> = BTreeMap::new();
        for trigger in &manifest.http_triggers {
            used.entry(&trigger.component).or_default().0 = true;
            if let RouteSpec::Route(route) = &trigger.route {
                routes.push((route.as_str(), trigger.component.as_str()));
            }
        }
        let mut cron_jobs = Vec::new();
        for trigger in &manifest.cron_triggers {
            used.entry(&trigger.component).or_default().1 = true;
            cron_jobs.push(CronJob {
                component: trigger.component.clone(),
                expression: trigger.cron_expression.clone(),
                schedule: Schedule::parse(&trigger.cron_expression)?,
            });
        }
        let router = Router::build(&manifest.application.http_base, routes)?;

        let mut components = HashMap::new();
        for (id, (is_http, is_cron)) in &used {
            let decl = &manifest.components[*id];
            let allowed_hosts: Vec<String> = decl
                .allowed_outbound_hosts
                .iter()
                .map(|t| t.render(&variables))
                .collect::<Result<_>>()
                .with_context(|| format!("component {id:?}: allowed_outbound_hosts"))?;
            let outbound = AllowedHosts::parse(&allowed_hosts)
                .with_context(|| format!("component {id:?}: allowed_outbound_hosts"))?;
            let context = Arc::new(ComponentContext {
                id: Arc::from(*id),
                sqlite_allowed: Arc::new(
                    decl.sqlite_databases
                        .iter()
                        .cloned()
                        .collect::<HashSet<_>>(),
                ),
                databases: databases.clone(),
                variables: ComponentVariables::new(id, &decl.variables, &variables)?,
                outbound: Arc::new(outbound),
                environment: decl
                    .environment
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                memory_limit,
            });

            let sources = crate::compose::Sources::read(decl)?;
            let identity = sources.identity();
            let dependencies = sources.dependencies.len();
            let (component, provenance, took) =
                engine::load_component(&engine, id, &identity, || sources.compose())?;
            eprintln!(
                "receta: component {id}: {} in {} ms",
                match (provenance, dependencies) {
                    (Provenance::Cached, _) => "loaded compiled code from the cache".to_string(),
                    (Provenance::Compiled, 0) => "compiled".to_string(),
                    (Provenance::Compiled, n) =>
                        format!("composed with {n} dependencies and compiled"),
                },
                took.as_millis(),
            );
            let instance_pre = linker
                .instantiate_pre(&component)
                .anyhow()
                .with_context(|| {
                    format!(
                        "component {id:?} imports something receta does not provide \
                     (receta provides WASI 0.2 cli/clocks/random/io/filesystem/sockets, wasi:http, \
                     spin:sqlite/sqlite@3.0.0 and fermyon:spin/variables@2.0.0)"
                    )
                })?;
            let http = match is_http {
                true => Some(ProxyPre::new(instance_pre.clone()).anyhow().with_context(|| {
                    format!("component {id:?} has an HTTP trigger but does not export wasi:http/incoming-handler@0.2.x")
                })?),
                false => None,
            };
            let cron = match is_cron {
                true => Some(SpinCronPre::new(instance_pre).anyhow().with_context(|| {
                    format!("component {id:?} has a cron trigger but does not export handle-cron-event (fermyon:spin-cron@2.0.0)")
                })?),
                false => None,
            };
            components.insert(
                id.to_string(),
                LoadedComponent {
                    context,
                    http,
                    cron,
                },
            );
        }

        Ok(Self {
            manifest,
            engine,
            router,
            components,
            cron_jobs,
            request_timeout,
            instance_permits: Arc::new(Semaphore::new(max_instances as usize)),
            background_permits: Arc::new(Semaphore::new(max_background as usize)),
            max_body_bytes,
            body_timeout,
            state_dir,
        })
    }
}

/// Migrations, then `--sqlite` statements, on `default`.
fn prepare_default_database(
    manifest: &Manifest,
    options: &UpOptions,
    databases: &Databases,
) -> Result<()> {
    let default = databases.get("default").context("no default database")?;
    let mut conn = default
        .acquire()
        .context("cannot open the default database")?;
    let dir = options
        .migrations
        .clone()
        .unwrap_or_else(|| manifest.dir.join("migrations"));
    let report = migrations::apply(&mut conn, &dir)
        .with_context(|| format!("migrations in {} failed", dir.display()))?;
    if !report.applied.is_empty() {
        eprintln!(
            "receta: applied {} migration(s) from {}: {}",
            report.applied.len(),
            dir.display(),
            report.applied.join(", ")
        );
    }
    for statement in &options.sqlite {
        migrations::run_sqlite_option(&conn, statement)?;
    }
    default.release(conn);
    Ok(())
}
