//! The triggers that run components: `http` (the server) and `cron` (Spin's cron trigger plugin).
//! Both run a component the same way ([`Runner`]): wait for an instance permit, set the deadline,
//! make a fresh store, instantiate, and stop the guest at the deadline. `Inflight` lets shutdown
//! wait for whatever either trigger still runs.

pub mod cron;
pub mod http;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use wasmtime::{Engine, Store};

use crate::runtime::store::{ComponentContext, HostState, new_store};

/// What every run of a component needs: the engine, the instance budgets and the time limit.
pub struct Runner {
    /// The engine every component was compiled for.
    pub engine: Engine,
    /// One permit per instance the pooling allocator holds for requests and cron runs: a run waits
    /// for a permit instead of failing when every instance slot is busy.
    pub instance_permits: Arc<Semaphore>,
    /// The separate budget of instances that keep working after their response was sent.
    pub background_permits: Arc<Semaphore>,
    /// Time limit of one run (guest execution, including work after an HTTP response).
    pub timeout: Duration,
}

/// The instance slot a run holds: a permit, which a run may swap for another budget's.
pub type Slot = Arc<Mutex<Option<OwnedSemaphorePermit>>>;

/// A run about to start: its slot, its deadline and its fresh store.
pub struct Run {
    /// The instance slot (free it after the store is dropped).
    pub slot: Slot,
    /// When the guest is stopped.
    pub deadline: Instant,
    /// The store the guest runs in.
    pub store: Store<HostState>,
}

impl Runner {
    /// Waits for an instance permit: at most `wait`, when given (`None` back if none freed in
    /// time).
    pub async fn admit(&self, wait: Option<Duration>) -> Result<Option<OwnedSemaphorePermit>> {
        let acquire = self.instance_permits.clone().acquire_owned();
        let permit = match wait {
            Some(wait) => match tokio::time::timeout(wait, acquire).await {
                Ok(permit) => permit,
                Err(_) => return Ok(None),
            },
            None => acquire.await,
        };
        permit.context("the instance pool is closed").map(Some)
    }

    /// Waits for an instance permit ([`Runner::admit`]), then makes the run's store with its
    /// deadline.
    pub async fn start(
        &self,
        component: &Arc<ComponentContext>,
        wait: Option<Duration>,
    ) -> Result<Option<Run>> {
        let Some(permit) = self.admit(wait).await? else {
            return Ok(None);
        };
        let deadline = Instant::now() + self.timeout;
        Ok(Some(Run {
            slot: Arc::new(Mutex::new(Some(permit))),
            deadline,
            store: new_store(&self.engine, component.clone(), deadline),
        }))
    }
}

/// Runs `call` (the guest's instantiation and export call) until `deadline`.
pub async fn until_deadline<T>(
    deadline: Instant,
    timeout: Duration,
    call: impl Future<Output = Result<T>>,
) -> Result<T> {
    match tokio::time::timeout_at(deadline.into(), call).await {
        Ok(result) => result,
        Err(_) => Err(anyhow!("time limit of {} ms exceeded", timeout.as_millis())),
    }
}

/// Counts in-flight work (connections, guest tasks) so shutdown can wait for it.
#[derive(Default)]
pub struct Inflight {
    count: AtomicUsize,
    idle: Notify,
}

/// Decrements the [`Inflight`] count when dropped.
pub struct InflightGuard(Arc<Inflight>);

impl Inflight {
    /// Registers one piece of work.
    pub fn enter(self: &Arc<Self>) -> InflightGuard {
        self.count.fetch_add(1, Ordering::SeqCst);
        InflightGuard(self.clone())
    }

    /// Waits until nothing is in flight.
    pub async fn wait_idle(&self) {
        loop {
            let notified = self.idle.notified();
            if self.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}
