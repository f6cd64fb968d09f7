//! The background jobs, written once (docs/deploying.md, "Background jobs"): one table, [`JOBS`],
//! of what must run every second or so, each with its batch, run in order by [`run`] within
//! [`BUDGET`]. Two doors run it, and only it: the outbox worker's cron trigger
//! (`components/outbox-worker`, where the platform has Spin's cron plugin) and the gateway's
//! `POST /api/v2/jobs/run/` (where it has not: Fermyon Cloud, SpinKube without the plugin), called
//! by a scheduler with the jobs token.
//!
//! A job that fails is logged and reported; the others still run. Two runs at once (two nodes, two
//! doors) never do one thing twice: every job leases its rows or drains its queue atomically.

use std::time::{Duration, Instant};

use serde::Serialize;

use common::types::{DeliveryRun, Error};

pub mod bindings;

use bindings::{constancias, notifications, pharmacies, prescriptions};

/// Outbox rows per `deliver-due` call.
pub const DELIVERY_BATCH: u32 = 50;
/// Constancias stamped per run: each costs the host ~2.4 ms of CPU (docs/bench.md), so at one run
/// a second stamping takes at most ~0.06 of a core from the API; a backlog drains at 25 a second
/// (2.2 million a day).
pub const STAMP_BATCH: u32 = 25;
/// No new batch starts after this long. A batch takes at most about `delivery_timeout_ms` (10 s by
/// default, 20 s at most), so a run answers within ~20 s by default: inside Fermyon Cloud's 30 s
/// request limit, and well before the next cron firing matters (a firing that overlaps another is
/// harmless: rows are leased).
pub const BUDGET: Duration = Duration::from_secs(10);

/// One background job.
pub struct Job {
    /// Its name in the jobs door's answer and in the log.
    pub name: &'static str,
    /// Rows one call takes (0: the job has no batch, it takes what is queued).
    pub batch: u32,
    /// Whether a full batch is followed by another while the budget lasts.
    pub repeat: bool,
    run: fn(u32) -> Result<Done, Error>,
}

/// What one call of a job did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Done {
    /// Rows taken (leased, drained, forgotten).
    pub attempted: u32,
    /// Of those, the ones that succeeded (delivered, stamped, written).
    pub delivered: u32,
    /// Of those, the ones that failed and were rescheduled (or given up).
    pub failed: u32,
}

impl Done {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: Done) {
        self.attempted += other.attempted;
        self.delivered += other.delivered;
        self.failed += other.failed;
    }
}

/// The jobs, in the order they run: the cheap drains first, so a slow relay never holds back the
/// patient's access log; deliveries last, repeated while full batches come and the budget lasts.
pub const JOBS: &[Job] = &[
    Job {
        name: "forget_counters",
        batch: 0,
        repeat: false,
        run: forget_counters,
    },
    Job {
        name: "forget_idempotency_keys",
        batch: 0,
        repeat: false,
        run: forget_idempotency_keys,
    },
    Job {
        name: "pharmacy_calls",
        batch: 0,
        repeat: false,
        run: |_| pharmacies::drain_calls().map(written),
    },
    Job {
        name: "medic_reads",
        batch: 0,
        repeat: false,
        run: |_| prescriptions::drain_reads().map(written),
    },
    Job {
        name: "constancias",
        batch: STAMP_BATCH,
        repeat: false,
        run: |batch| constancias::stamp_due(batch).map(done),
    },
    Job {
        name: "deliveries",
        batch: DELIVERY_BATCH,
        repeat: true,
        run: |batch| notifications::deliver_due(batch).map(done),
    },
];

/// What one job did in a run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub name: &'static str,
    /// False when a call failed (the log has why; the answer never shows an internal error's text).
    pub ok: bool,
    /// The error's kind when not `ok` (`internal`, `unavailable`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'static str>,
    /// Calls made (a repeated job makes several).
    pub calls: u32,
    #[serde(flatten)]
    pub done: Done,
    /// Wall-clock milliseconds the job took.
    pub ms: u64,
}

/// Runs every job of [`JOBS`] once, in order (a repeated job while it gets full batches and the
/// budget from `start` lasts). Never stops at a failed job.
pub fn run(start: Instant, budget: Duration) -> Vec<Report> {
    JOBS.iter().map(|job| run_one(job, start, budget)).collect()
}

/// The names of the jobs of `reports` that failed, in order.
pub fn failed(reports: &[Report]) -> Vec<&'static str> {
    reports.iter().filter(|r| !r.ok).map(|r| r.name).collect()
}

fn run_one(job: &Job, start: Instant, budget: Duration) -> Report {
    let began = Instant::now();
    let mut report = Report {
        name: job.name,
        ok: true,
        error: None,
        calls: 0,
        done: Done::default(),
        ms: 0,
    };
    loop {
        report.calls += 1;
        match (job.run)(job.batch) {
            Ok(done) => {
                report.done.add(done);
                if !another_batch(job, done, start.elapsed(), budget) {
                    break;
                }
            }
            Err(e) => {
                eprintln!("receta: job {}: {e:?}", job.name);
                report.ok = false;
                report.error = Some(kind(&e));
                break;
            }
        }
    }
    report.ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
    report
}

/// Whether a repeated job calls again: its last batch was full (more may be due) and the budget
/// is not spent.
fn another_batch(job: &Job, last: Done, elapsed: Duration, budget: Duration) -> bool {
    job.repeat && last.attempted >= job.batch && elapsed < budget
}

/// Deletes the public verify's rate-limit counters of the minutes before the previous one (they no
/// longer count: `common::counters`).
fn forget_counters(_: u32) -> Result<Done, Error> {
    let minute = common::counters::minute_now();
    common::counters::Counters::open()
        .and_then(|c| c.forget_before(common::counters::VERIFY, minute - 1))
        .map_err(Error::from)?;
    Ok(Done::default())
}

/// How long an `Idempotency-Key` is kept at least (the gateway's `input/idempotency.rs`).
pub const IDEMPOTENCY_KEPT: Duration = Duration::from_secs(24 * 60 * 60);

/// `?1` the oldest key kept.
const FORGET_IDEMPOTENCY_KEYS: &str = "DELETE FROM idempotency_keys WHERE created_at < ?1";

/// Deletes the `Idempotency-Key`s older than [`IDEMPOTENCY_KEPT`]. Here, not in each create: on a
/// libSQL server every statement is a round trip.
fn forget_idempotency_keys(_: u32) -> Result<Done, Error> {
    let oldest = common::time::iso8601(std::time::SystemTime::now() - IDEMPOTENCY_KEPT);
    common::db::Db::open()
        .and_then(|db| db.execute(FORGET_IDEMPOTENCY_KEYS, &[common::db::text(&oldest)]))
        .map_err(Error::from)?;
    Ok(Done::default())
}

fn written(rows: u32) -> Done {
    Done {
        attempted: rows,
        delivered: rows,
        failed: 0,
    }
}

fn done(run: DeliveryRun) -> Done {
    Done {
        attempted: run.attempted,
        delivered: run.delivered,
        failed: run.failed,
    }
}

/// An error's kind, for the answer.
fn kind(e: &Error) -> &'static str {
    match e {
        Error::Unavailable(_) => "unavailable",
        Error::Internal(_) => "internal",
        _ => "refused",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deliveries() -> &'static Job {
        JOBS.iter().find(|j| j.name == "deliveries").unwrap()
    }

    #[test]
    fn a_repeated_job_batches_until_a_short_one_or_the_budget() {
        let full = Done {
            attempted: DELIVERY_BATCH,
            ..Done::default()
        };
        let short = Done {
            attempted: DELIVERY_BATCH - 1,
            ..Done::default()
        };
        let job = deliveries();
        assert!(another_batch(job, full, Duration::ZERO, BUDGET));
        assert!(!another_batch(job, short, Duration::ZERO, BUDGET));
        assert!(!another_batch(job, Done::default(), Duration::ZERO, BUDGET));
        assert!(!another_batch(job, full, BUDGET, BUDGET));
    }

    #[test]
    fn only_deliveries_repeat_and_every_job_has_its_own_name() {
        let repeated: Vec<_> = JOBS.iter().filter(|j| j.repeat).map(|j| j.name).collect();
        assert_eq!(repeated, ["deliveries"]);
        let mut names: Vec<_> = JOBS.iter().map(|j| j.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), JOBS.len());
    }
}
