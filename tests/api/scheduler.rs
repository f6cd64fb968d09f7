//! The loopback scheduler of the cron-less pass (`RECETA_TEST_CRONLESS=1`): where the app runs on
//! `spin.cloud.toml` (no cron trigger), it calls the jobs door, `POST /api/v2/jobs/run/` with the
//! jobs token, every second, as a platform's scheduler would (docs/deploying.md), until the app it
//! serves is dropped. A failed call (the host restarting, a crash test) is simply retried at the next
//! tick; a refusal of the token is a defect, so it is kept and the test that owns the app fails.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the jobs door is called (the cron trigger's period).
const EVERY: Duration = Duration::from_secs(1);

pub struct Scheduler {
    stop: Arc<AtomicBool>,
    refused: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Scheduler {
    /// Calls `{address}/api/v2/jobs/run/` with `token` every second, from now on.
    pub fn start(address: &str, token: &str) -> Scheduler {
        let stop = Arc::new(AtomicBool::new(false));
        let refused = Arc::new(AtomicBool::new(false));
        let url = format!("{address}/api/v2/jobs/run/");
        let authorization = format!("Token {token}");
        let thread = {
            let (stop, refused) = (stop.clone(), refused.clone());
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .timeout_global(Some(Duration::from_secs(30)))
                    .http_status_as_error(false)
                    .build()
                    .into();
                while !stop.load(Ordering::Relaxed) {
                    let answer = agent
                        .post(&url)
                        .header("Authorization", &authorization)
                        .send_empty();
                    if let Ok(answer) = answer
                        && matches!(answer.status().as_u16(), 401 | 403)
                    {
                        refused.store(true, Ordering::Relaxed);
                    }
                    sleep_unless_stopped(&stop);
                }
            })
        };
        Scheduler {
            stop,
            refused,
            thread: Some(thread),
        }
    }

    /// Stops calling. A call under way is not waited for (a crash test kills the host next, while
    /// that call may still be delivering: as a platform's scheduler would, it just loses its answer).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        drop(self.thread.take());
        assert!(
            !self.refused.load(Ordering::Relaxed) || std::thread::panicking(),
            "the jobs door refused the scheduler's jobs token"
        );
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Sleeps one period in short steps, so a stop is seen promptly.
fn sleep_unless_stopped(stop: &AtomicBool) {
    let step = Duration::from_millis(50);
    let mut slept = Duration::ZERO;
    while slept < EVERY && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(step);
        slept += step;
    }
}
