//! `[[trigger.cron]]`: Spin's cron trigger plugin (`fermyon:spin-cron@2.0.0`, `handle-cron-event`),
//! on the schedules of `schedule`.
//!
//! Each firing runs like a request (`Runner`): a fresh store with the component's permissions and
//! the request time limit. A firing is skipped (and logged) while the previous run of the same
//! trigger is still going.

pub mod schedule;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use tokio::sync::watch;

use crate::runtime::store::{ComponentContext, HostState};
use crate::trigger::{Inflight, Runner, until_deadline};
use schedule::Schedule;

wasmtime::component::bindgen!({
    path: "wit",
    world: "fermyon:spin-cron/spin-cron",
    exports: { default: async },
});

/// The cron trigger: every `[[trigger.cron]]` of the app, ready to run.
pub struct CronTrigger {
    /// How components run.
    pub runner: Arc<Runner>,
    /// The schedules.
    pub jobs: Vec<CronJob>,
}

/// One scheduled trigger.
pub struct CronJob {
    /// The component's configuration.
    pub context: Arc<ComponentContext>,
    /// Its pre-instantiated `fermyon:spin-cron/spin-cron`.
    pub pre: SpinCronPre<HostState>,
    /// The expression, for logs.
    pub expression: String,
    /// The parsed expression.
    pub schedule: Schedule,
}

/// Starts one scheduler task per cron trigger; they stop when `stop` turns true.
pub fn start(cron: &Arc<CronTrigger>, stop: &watch::Receiver<bool>, inflight: &Arc<Inflight>) {
    for index in 0..cron.jobs.len() {
        let cron = cron.clone();
        let mut stop = stop.clone();
        let inflight = inflight.clone();
        tokio::spawn(async move {
            let job = &cron.jobs[index];
            let id = &job.context.id;
            let mut running: Option<tokio::task::JoinHandle<()>> = None;
            let mut last = unix_now();
            loop {
                let Some(next) = job.schedule.next_after(last) else {
                    eprintln!("receta: cron {id} ({}) never fires again", job.expression);
                    return;
                };
                let wait = Duration::from_secs(next).saturating_sub(since_epoch());
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = async { stop.wait_for(|s| *s).await.map(|_| ()) } => return,
                }
                last = next;
                if running.as_ref().is_some_and(|r| !r.is_finished()) {
                    eprintln!(
                        "receta: cron {id}: skipped the {next} firing, the previous run is still going"
                    );
                    continue;
                }
                let cron = cron.clone();
                let guard = inflight.enter();
                running = Some(tokio::spawn(async move {
                    let _guard = guard;
                    let job = &cron.jobs[index];
                    let started = Instant::now();
                    let outcome = match run(&cron.runner, job, next).await {
                        Ok(()) => "ok".to_string(),
                        Err(e) => format!("failed: {e:#}"),
                    };
                    eprintln!(
                        "receta: cron {} {outcome} {:.1}ms",
                        job.context.id,
                        started.elapsed().as_secs_f64() * 1000.0
                    );
                }));
            }
        });
    }
}

fn since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

fn unix_now() -> u64 {
    since_epoch().as_secs()
}

/// Runs one firing of `job`.
async fn run(runner: &Runner, job: &CronJob, timestamp: u64) -> Result<()> {
    let Some(run) = runner.start(&job.context, None).await? else {
        bail!("no instance became free");
    };
    let mut store = run.store;
    let call = async {
        let instance = job
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(anyhow::Error::from)
            .context("cannot instantiate the component")?;
        instance
            .call_handle_cron_event(&mut store, Metadata { timestamp })
            .await
            .map_err(anyhow::Error::from)
    };
    let result = until_deadline(run.deadline, runner.timeout, call).await;
    // The store before the permit that stands for its instance slot.
    drop(store);
    drop(run.slot);
    match result? {
        Ok(()) => Ok(()),
        Err(Error::Other(message)) => bail!("the component returned an error: {message}"),
    }
}
