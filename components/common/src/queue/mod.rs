//! A leased, retried queue, written once: the outbox (emails and webhooks, the notifications
//! component), the messages (SMS and WhatsApp, the same component) and the stamp queue (NOM-151
//! constancias, the constancias component) are its uses, and [`drain::run`] is the one run of them
//! all.
//!
//! A queue is a table with `status` (`pending`, `done`, `dead`), `attempts`, `next_attempt_at`,
//! `lease_until`, `updated_at` and `last_error`, keyed by one column; times are stored ISO 8601 text
//! (`crate::time::iso8601`), so comparing the text compares the times.
//!
//! - **Lease**: one `UPDATE … RETURNING` takes up to `limit` due rows until the lease's end and counts
//!   the attempt, so two workers (two nodes, the cron and the jobs door) never hold the same row.
//! - **Finish**: each leased row is ended (done), rescheduled (retry) or given up (dead) with the
//!   lease checked: a worker whose lease expired and was taken by another changes nothing.
//! - **Retry or dead** ([`Outcome::failed`]): Standard Webhooks' schedule with jitter
//!   ([`schedule`]); the 10th failed attempt is the last.
//!
//! **Commit policy: one transaction per row**, holding the row's end and what the use writes with
//! it (the attempt's record and the prescription's `sent`; the stored constancia). A row's outcome
//! is a fact about the world outside (the relay took the email, the authority signed the digest):
//! one row that cannot be recorded must not undo the others', which would leave them leased and
//! send or stamp them again when the lease ends. A batch is at most 25 rows a second, so the cost
//! is a few short write transactions a second.

pub mod drain;
pub mod schedule;

use std::time::{Duration, SystemTime};

use crate::db::{Db, Param, Row, int, text};
use crate::time::iso8601;
use crate::types::Error;

/// The rows due now: `?1` now. A use narrows it with its own condition (`also` below), on its own
/// parameters numbered from `?4` (`?2` and `?3` are the lease's end and limit).
const DUE: &str = "status = 'pending' AND next_attempt_at <= ?1 \
    AND (lease_until IS NULL OR lease_until < ?1)";

/// [`DUE`] and a use's own condition (none when empty).
fn due(also: &str) -> String {
    match also {
        "" => DUE.to_string(),
        also => format!("{DUE} AND {also}"),
    }
}

/// A queue table and its key column.
#[derive(Debug, Clone, Copy)]
pub struct Queue {
    pub table: &'static str,
    pub key: &'static str,
}

/// A leased row: what the use asked for, and the lease.
#[derive(Debug, Clone)]
pub struct Leased<T> {
    pub row: T,
    /// Attempts started, this one included.
    pub attempts: u32,
    /// The lease this worker holds (the row's `lease_until`).
    pub lease: String,
}

/// How an attempt ended, for the row.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Done,
    Retry { at: SystemTime, error: String },
    Dead { error: String },
}

impl Outcome {
    /// A failed attempt (the `attempts`-th of its row): try again on schedule (`scale` multiplies
    /// it: `outbox_retry_scale`), or give up after the last attempt.
    pub fn failed(attempts: u32, error: String, scale: f64) -> Outcome {
        match schedule::delay_after(attempts, scale, schedule::unit_random()) {
            Some(delay) => Outcome::Retry {
                at: SystemTime::now() + delay,
                error,
            },
            None => Outcome::Dead {
                error: format!("{error} (gave up after {attempts} attempts)"),
            },
        }
    }
}

/// How long a worker holds what it leased, when one attempt takes at most `timeout`: twice that plus
/// a margin, so a live worker never loses its lease and a dead worker's rows come back soon after.
pub fn lease_length(timeout: Duration) -> Duration {
    timeout * 2 + Duration::from_secs(5)
}

impl Queue {
    fn any_due_sql(&self, also: &str) -> String {
        format!(
            "SELECT EXISTS (SELECT 1 FROM {} WHERE {})",
            self.table,
            due(also)
        )
    }

    /// `?1` now, `?2` the lease's end, `?3` the limit; `columns` are returned with `attempts` and
    /// `lease_until`.
    fn lease_sql(&self, also: &str, columns: &str) -> String {
        let Queue { table, key } = self;
        let due = due(also);
        format!(
            "UPDATE {table} SET lease_until = ?2, attempts = attempts + 1, updated_at = ?1 \
             WHERE {key} IN (SELECT {key} FROM {table} WHERE {due} \
             ORDER BY next_attempt_at, {key} LIMIT ?3) \
             RETURNING {columns}, attempts, lease_until"
        )
    }

    /// `?1` now, `?2` the key; `reset` the use's own columns set back, each followed by a comma.
    fn replay_sql(&self, reset: &str) -> String {
        let Queue { table, key } = self;
        format!(
            "UPDATE {table} SET status = 'pending', attempts = 0, next_attempt_at = ?1, \
             lease_until = NULL, {reset} updated_at = ?1 \
             WHERE {key} = ?2 AND (lease_until IS NULL OR lease_until < ?1) RETURNING {key}"
        )
    }

    /// `?1` now, `?2` the key, `?3` the lease held; then the outcome's own (`?4` the retry's time or
    /// the error, `?5` the retry's error).
    fn finish_sql(&self, outcome: &Outcome) -> String {
        let Queue { table, key } = self;
        let set = match outcome {
            Outcome::Done => "status = 'done', last_error = NULL",
            Outcome::Retry { .. } => "next_attempt_at = ?4, last_error = ?5",
            Outcome::Dead { .. } => "status = 'dead', last_error = ?4",
        };
        format!(
            "UPDATE {table} SET {set}, lease_until = NULL, updated_at = ?1 \
             WHERE {key} = ?2 AND lease_until = ?3 RETURNING {key}"
        )
    }

    /// Whether any row is due and meets `also` (a read, so an idle worker never takes the write
    /// lock). `extra` are the parameters of `also` from `?4` on.
    pub fn any_due(
        &self,
        db: &Db,
        also: &str,
        now: SystemTime,
        extra: &[Param],
    ) -> Result<bool, Error> {
        // SQLite takes exactly as many parameters as the highest number used: `?1` alone, or up to
        // the use's own from `?4`.
        let params = match extra {
            [] => vec![text(&iso8601(now))],
            _ => leading(now, None, None, extra),
        };
        Ok(db.scalar_i64(&self.any_due_sql(also), &params)? != 0)
    }

    /// Leases up to `limit` due rows meeting `also` until `until`, oldest due first.
    #[allow(clippy::too_many_arguments)]
    pub fn lease<T>(
        &self,
        db: &Db,
        also: &str,
        columns: &str,
        now: SystemTime,
        until: SystemTime,
        limit: u32,
        extra: &[Param],
        map: impl Fn(&Row) -> anyhow::Result<T>,
    ) -> Result<Vec<Leased<T>>, Error> {
        let params = leading(now, Some(until), Some(limit), extra);
        let rows = db.query(&self.lease_sql(also, columns), &params, |r| {
            Ok(Leased {
                row: map(r)?,
                attempts: u32::try_from(r.i64("attempts")?).unwrap_or(u32::MAX),
                lease: r.string("lease_until")?,
            })
        })?;
        Ok(rows)
    }

    /// Ends or reschedules the row `key` whose lease is `lease`, in its own transaction (the commit
    /// policy above), with what `also` writes beside it; `also` learns whether the lease was still
    /// held (when it was not, the row is not changed). Answers whether it was held.
    pub fn finish<E: From<anyhow::Error>>(
        &self,
        db: &Db,
        key: &Param,
        lease: &str,
        outcome: &Outcome,
        mut also: impl FnMut(&Db, bool) -> Result<(), E>,
    ) -> Result<bool, E> {
        let sql = self.finish_sql(outcome);
        let mut params = vec![text(&crate::time::now_iso8601()), key.clone(), text(lease)];
        match outcome {
            Outcome::Done => {}
            Outcome::Retry { at, error } => params.extend([text(&iso8601(*at)), text(error)]),
            Outcome::Dead { error } => params.push(text(error)),
        }
        db.transaction(|db| -> Result<bool, E> {
            let held = db.query_opt(&sql, &params, |_| Ok(()))?.is_some();
            also(db, held)?;
            Ok(held)
        })
    }

    /// Makes the row `key` due now with a fresh schedule (a done or dead one is tried anew), with
    /// the use's own columns in `reset` set back (`"sending = NULL,"`); not while a worker holds
    /// it. Whether it was.
    pub fn replay(&self, db: &Db, key: &Param, reset: &str) -> Result<bool, Error> {
        let now = text(&crate::time::now_iso8601());
        let sql = self.replay_sql(reset);
        Ok(db
            .query_opt(&sql, &[now, key.clone()], |_| Ok(()))?
            .is_some())
    }
}

/// `?1` now, `?2` the lease's end, `?3` the limit (NULL where a statement has none), then `extra`.
fn leading(
    now: SystemTime,
    until: Option<SystemTime>,
    limit: Option<u32>,
    extra: &[Param],
) -> Vec<Param> {
    let mut params = vec![
        text(&iso8601(now)),
        until.map_or(Param::Null, |t| text(&iso8601(t))),
        limit.map_or(Param::Null, |l| int(l.into())),
    ];
    params.extend(extra.iter().cloned());
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q: Queue = Queue {
        table: "outbox",
        key: "id",
    };

    #[test]
    fn the_lease_is_one_update_returning_the_due_rows() {
        let sql = Q.lease_sql("kind = ?4", "id, kind");
        assert!(sql.starts_with("UPDATE outbox SET lease_until = ?2, attempts = attempts + 1"));
        assert!(sql.contains(&format!("{DUE} AND kind = ?4")), "{sql}");
        assert!(sql.contains("LIMIT ?3"), "{sql}");
        assert!(
            sql.ends_with("RETURNING id, kind, attempts, lease_until"),
            "{sql}"
        );
        assert!(Q.any_due_sql("").ends_with(&format!("WHERE {DUE})")));
    }

    #[test]
    fn every_end_checks_the_lease_and_takes_its_own_parameters() {
        let retry = Outcome::Retry {
            at: SystemTime::now(),
            error: "x".into(),
        };
        let dead = Outcome::Dead { error: "x".into() };
        for (outcome, highest) in [(Outcome::Done, 3), (retry, 5), (dead, 4)] {
            let sql = Q.finish_sql(&outcome);
            assert!(sql.contains("WHERE id = ?2 AND lease_until = ?3"), "{sql}");
            assert!(sql.contains(&format!("?{highest}")), "{sql}");
            assert!(!sql.contains(&format!("?{}", highest + 1)), "{sql}");
        }
    }

    #[test]
    fn a_replay_sets_the_row_back_unless_a_worker_holds_it() {
        let sql = Q.replay_sql("sending = NULL,");
        assert!(sql.contains("attempts = 0, next_attempt_at = ?1"), "{sql}");
        assert!(sql.contains("sending = NULL, updated_at = ?1"), "{sql}");
        assert!(sql.ends_with("(lease_until IS NULL OR lease_until < ?1) RETURNING id"));
    }

    #[test]
    fn a_failure_is_retried_until_the_last_attempt() {
        assert!(matches!(
            Outcome::failed(1, "e".into(), 1.0),
            Outcome::Retry { .. }
        ));
        match Outcome::failed(schedule::MAX_ATTEMPTS, "HTTP 500".into(), 1.0) {
            Outcome::Dead { error } => assert_eq!(error, "HTTP 500 (gave up after 10 attempts)"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            lease_length(Duration::from_secs(10)),
            Duration::from_secs(25)
        );
    }
}
