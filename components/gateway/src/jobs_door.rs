//! The jobs door, `POST /api/v2/jobs/run/` (the jobs token or the API admin's): one run of the
//! background jobs (`components/jobs`), exactly what one cron firing runs, for platforms without
//! Spin's cron trigger (Fermyon Cloud; SpinKube without the plugin), where a scheduler calls it
//! every few seconds (docs/deploying.md). `POST /api/v2/deliveries/run/` is its older name.

use std::time::Instant;

use serde_json::json;

use common::types::Error;

use crate::http::Response;
use crate::roles::Scheduler;

/// → 200 `{ok, failed_jobs, attempted, delivered, failed, ms, jobs: [{name, ok, error?, calls,
/// attempted, delivered, failed, ms}]}`. `attempted`/`delivered`/`failed` at the top add up the
/// deliveries and constancias (what `/api/v2/deliveries/run/` always answered). A job that failed
/// is `ok: false` with its error's kind (the log has the detail) and the others still ran: the
/// answer is 200 whenever the run happened, with `ok: false` and the failed jobs named.
pub fn run(_: Scheduler) -> Result<Response, Error> {
    let start = Instant::now();
    let reports = jobs::run(start, jobs::BUDGET);
    let failed_jobs = jobs::failed(&reports);
    let mut outbound = jobs::Done::default();
    for r in &reports {
        if matches!(r.name, "deliveries" | "constancias") {
            outbound.add(r.done);
        }
    }
    Ok(Response::json(
        200,
        &json!({
            "ok": failed_jobs.is_empty(),
            "failed_jobs": failed_jobs,
            "attempted": outbound.attempted,
            "delivered": outbound.delivered,
            "failed": outbound.failed,
            "ms": u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
            "jobs": reports,
        }),
    ))
}
