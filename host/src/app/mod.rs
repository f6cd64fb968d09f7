//! Loading an application: manifest → variables → databases and migrations → components
//! (composed, compiled or loaded from the cache, pre-instantiated) → the triggers that run them.
//! Nothing is served before all of it succeeded. The top of the host: it knows every layer, and
//! nothing below imports it.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::Semaphore;
use wasmtime::Engine;
use wasmtime::component::InstancePre;
use wasmtime_wasi_http::handler::{ProxyHandler, ProxyPre as HandlerPre};
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p3::bindings::ServicePre;

pub mod migrations;

use crate::capability::keyvalue::KeyValueStores;
use crate::capability::sqlite::{Databases, config as sqlite_config};
use crate::cli::{UpOptions, env_number};
use crate::config::manifest::{Manifest, RouteSpec};
use crate::config::runtime::RuntimeConfig;
use crate::config::variables::AppVariables;
use crate::runtime::engine::{self, Limits, WasmtimeResultExt};
use crate::runtime::linking::{self, Composition, WASI_HTTP_P3};
use crate::runtime::store::{ComponentContext, HostState};
use crate::trigger::Runner;
use crate::trigger::cron::{CronJob, CronTrigger, SpinCronPre, schedule::Schedule};
use crate::trigger::http::reuse::Reuse;
use crate::trigger::http::{Handler, HttpComponent, HttpTrigger, router::Router};

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

/// A loaded application.
pub struct App {
    /// The manifest.
    pub manifest: Manifest,
    /// The HTTP trigger.
    pub http: Arc<HttpTrigger>,
    /// The cron trigger.
    pub cron: Arc<CronTrigger>,
    /// How components run (the engine, the instance budgets, the time limit).
    pub runner: Arc<Runner>,
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

        let runtime_config = RuntimeConfig::load(options.runtime_config.as_deref())?;
        let variables = AppVariables::resolve(&manifest, |key| std::env::var(key).ok())?;

        // Loading runs on a blocking thread of the async runtime; the databases' set-up is async
        // (a libSQL server is spoken to over HTTP).
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let locations = sqlite_config::locations(&state_dir, &runtime_config, &cwd)?;
        let databases = tokio::runtime::Handle::current().block_on(async {
            let databases = Databases::open(locations)
                .await
                .context("cannot set up the SQLite databases")?;
            prepare_default_database(&manifest, options, &databases).await?;
            anyhow::Ok(Arc::new(databases))
        })?;

        let key_value_stores = Arc::new(KeyValueStores::open(&state_dir)?);

        let settings = Settings::from_env()?;
        // The pool holds both budgets' instances.
        let engine = engine::new_engine(Limits {
            memory_bytes: settings.memory_limit,
            max_instances: settings.max_instances + settings.max_background,
        })?;
        let linker = engine::new_linker(&engine)?;
        let composition = Composition::from_env()?;

        // Which trigger kinds use each component.
        let mut routes = Vec::new();
        let mut used: BTreeMap<&str, (bool, bool)> = BTreeMap::new();
        for trigger in &manifest.http_triggers {
            used.entry(&trigger.component).or_default().0 = true;
            if let RouteSpec::Route(route) = &trigger.route {
                routes.push((route.as_str(), trigger.component.as_str()));
            }
        }
        let mut schedules = Vec::new();
        for trigger in &manifest.cron_triggers {
            used.entry(&trigger.component).or_default().1 = true;
            schedules.push((trigger, Schedule::parse(&trigger.cron_expression)?));
        }
        let router = Router::build(&manifest.application.http_base, routes)?;

        let mut http_components = HashMap::new();
        let mut cron_pres = HashMap::new();
        for (id, (is_http, is_cron)) in &used {
            let decl = &manifest.components[*id];
            let context = Arc::new(ComponentContext::new(
                decl,
                &variables,
                databases.clone(),
                key_value_stores.clone(),
                settings.memory_limit,
            )?);

            let instance_pre = linking::prepare(&engine, &linker, decl, composition)?;
            if *is_http {
                let handler =
                    http_handler(id, &instance_pre, &engine, &context, options, &settings)?;
                let context = context.clone();
                http_components.insert(id.to_string(), HttpComponent { context, handler });
            }
            if *is_cron {
                let pre = SpinCronPre::new(instance_pre).anyhow().with_context(|| {
                    format!("component {id:?} has a cron trigger but does not export handle-cron-event (fermyon:spin-cron@2.0.0)")
                })?;
                cron_pres.insert(id.to_string(), (context, pre));
            }
        }
        let jobs = schedules
            .into_iter()
            .map(|(trigger, schedule)| {
                let (context, pre) = cron_pres[&trigger.component].clone();
                CronJob {
                    context,
                    pre,
                    expression: trigger.cron_expression.clone(),
                    schedule,
                }
            })
            .collect();

        let runner = Arc::new(Runner {
            engine,
            instance_permits: Arc::new(Semaphore::new(settings.max_instances as usize)),
            background_permits: Arc::new(Semaphore::new(settings.max_background as usize)),
            timeout: settings.request_timeout,
        });
        Ok(Self {
            manifest,
            http: Arc::new(HttpTrigger {
                runner: runner.clone(),
                router,
                components: http_components,
                max_body_bytes: settings.max_body_bytes,
                body_timeout: settings.body_timeout,
            }),
            cron: Arc::new(CronTrigger {
                runner: runner.clone(),
                jobs,
            }),
            runner,
            state_dir,
        })
    }
}

/// The component's `wasi:http` export: a WASIp3 handler (reused instances) or a WASIp2 one.
fn http_handler(
    id: &str,
    instance_pre: &InstancePre<HostState>,
    engine: &Engine,
    context: &Arc<ComponentContext>,
    options: &UpOptions,
    settings: &Settings,
) -> Result<Handler> {
    if let Ok(pre) = ServicePre::new(instance_pre.clone()) {
        let reuse = Reuse {
            engine: engine.clone(),
            context: context.clone(),
            config: options.reuse,
            timeout: settings.request_timeout,
        };
        return Ok(Handler::P3(ProxyHandler::new(reuse, HandlerPre::P3(pre))));
    }
    let pre = ProxyPre::new(instance_pre.clone())
        .anyhow()
        .with_context(|| {
            format!(
                "component {id:?} has an HTTP trigger but exports neither \
             wasi:http/incoming-handler@0.2.x nor {WASI_HTTP_P3}"
            )
        })?;
    Ok(Handler::P2(pre))
}

/// The limits `receta up` runs with, from the environment (`RECETA_*`, host/README.md) or their
/// defaults.
struct Settings {
    request_timeout: Duration,
    memory_limit: usize,
    max_instances: u32,
    max_background: u32,
    max_body_bytes: usize,
    body_timeout: Duration,
}

impl Settings {
    fn from_env() -> Result<Self> {
        let millis = |name, default| env_number(name, default).map(Duration::from_millis);
        Ok(Self {
            request_timeout: millis("RECETA_REQUEST_TIMEOUT_MS", DEFAULT_REQUEST_TIMEOUT_MS)?,
            memory_limit: usize::try_from(env_number(
                "RECETA_MEMORY_LIMIT_MB",
                DEFAULT_MEMORY_LIMIT_MB,
            )?)
            .context("RECETA_MEMORY_LIMIT_MB is too large")?
                << 20,
            max_instances: u32::try_from(env_number(
                "RECETA_MAX_INSTANCES",
                DEFAULT_MAX_INSTANCES,
            )?)
            .context("RECETA_MAX_INSTANCES is too large")?,
            max_background: u32::try_from(env_number(
                "RECETA_MAX_BACKGROUND",
                DEFAULT_MAX_BACKGROUND,
            )?)
            .context("RECETA_MAX_BACKGROUND is too large")?,
            max_body_bytes: usize::try_from(env_number(
                "RECETA_MAX_BODY_BYTES",
                DEFAULT_MAX_BODY_BYTES,
            )?)
            .context("RECETA_MAX_BODY_BYTES is too large")?,
            body_timeout: millis("RECETA_BODY_TIMEOUT_MS", DEFAULT_BODY_TIMEOUT_MS)?,
        })
    }
}

/// Migrations, then `--sqlite` statements, on `default`.
async fn prepare_default_database(
    manifest: &Manifest,
    options: &UpOptions,
    databases: &Databases,
) -> Result<()> {
    let default = databases.get("default").context("no default database")?;
    let mut conn = default
        .connect()
        .context("cannot open the default database")?;
    let dir = options
        .migrations
        .clone()
        .unwrap_or_else(|| manifest.dir.join("migrations"));
    crate::capability::clock::offset();
    let report = migrations::apply(&mut conn, &dir).await.with_context(|| {
        format!(
            "migrations in {} ({}) failed",
            dir.display(),
            default.describe()
        )
    })?;
    if !report.applied.is_empty() {
        eprintln!(
            "receta: applied {} migration(s) from {} to {}: {}",
            report.applied.len(),
            dir.display(),
            default.describe(),
            report.applied.join(", ")
        );
    }
    for statement in &options.sqlite {
        migrations::run_sqlite_option(&mut conn, statement)
            .await
            .with_context(|| format!("on {}", default.describe()))?;
    }
    Ok(())
}
