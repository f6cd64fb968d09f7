//! The resend limits (an `outbox` row's `resent_by` and `resent_to`, migrations 0013 and 0038): a
//! prescription's email may be resent a few times an hour, and one caller may send it to a bounded
//! number of recipients an hour, so a leaked token or a looping integration cannot turn the relay
//! into a mail cannon (docs/notifications.md).
//!
//! Counted in the database, in the transaction that queues the email, so the limits hold across
//! nodes and under concurrency. The create's own email is not a resend and is not counted.

use std::time::{Duration, SystemTime};

use common::db::{Db, int, text};
use common::time::{iso8601, parse_iso8601};
use common::types::{Error, Principal};

/// The window both limits count in.
pub const WINDOW: Duration = Duration::from_secs(3600);
/// Resends of one prescription per hour when `resends_per_prescription_hour` is not set.
pub const DEFAULT_PER_PRESCRIPTION: i64 = 5;
/// Recipients (to + cc) one caller may resend to per hour when `resend_recipients_per_hour` is not set.
pub const DEFAULT_RECIPIENTS: i64 = 50;

/// `?1` prescription, `?2` the window's start.
const OF_PRESCRIPTION: &str = "SELECT created_at AS at FROM outbox \
    WHERE prescription_id = ?1 AND resent_by IS NOT NULL AND created_at > ?2 ORDER BY created_at";
/// `?1` sender, `?2` the window's start.
const OF_SENDER: &str = "SELECT resent_to AS recipients, created_at AS at FROM outbox \
    WHERE resent_by = ?1 AND created_at > ?2 ORDER BY created_at";

/// The two limits (Spin variables, read by the caller).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Resends of one prescription per hour.
    pub per_prescription: i64,
    /// Recipients (to + cc) of one caller per hour.
    pub recipients: i64,
}

impl Limits {
    /// The variables `resends_per_prescription_hour` and `resend_recipients_per_hour`; a missing or
    /// malformed one (or below 1) takes its default.
    pub fn load() -> Limits {
        let var = |name: &str, default: i64| {
            spin_sdk::variables::get(name)
                .ok()
                .and_then(|v| v.trim().parse::<i64>().ok())
                .filter(|n| *n >= 1)
                .unwrap_or(default)
        };
        Limits {
            per_prescription: var("resends_per_prescription_hour", DEFAULT_PER_PRESCRIPTION),
            recipients: var("resend_recipients_per_hour", DEFAULT_RECIPIENTS),
        }
    }
}

/// How a caller is named in `outbox.resent_by`.
pub fn sender(p: Principal) -> String {
    match p {
        Principal::Admin => "admin".into(),
        Principal::Medic(id) => format!("medic:{id}"),
    }
}

/// Inside the queueing transaction: refuses (429, with the seconds until it would be admitted) a
/// resend over either limit; nothing is written then.
pub fn admit(
    db: &Db,
    limits: Limits,
    sender: &str,
    prescription: i64,
    recipients: i64,
    now: SystemTime,
) -> Result<(), Error> {
    let since = iso8601(now - WINDOW);
    let times = |rows: Vec<(i64, String)>| -> Vec<(i64, SystemTime)> {
        rows.into_iter()
            .filter_map(|(n, at)| Some((n, parse_iso8601(&at)?)))
            .collect()
    };
    let of_rx = db.query(OF_PRESCRIPTION, &[int(prescription), text(&since)], |r| {
        Ok((1, r.string("at")?))
    })?;
    if let Some(wait) = wait(&times(of_rx), 1, limits.per_prescription, now) {
        return Err(refusal(
            format!(
                "This prescription was resent {} times in the last hour, the most allowed.",
                limits.per_prescription
            ),
            wait,
        ));
    }
    let of_sender = db.query(OF_SENDER, &[text(sender), text(&since)], |r| {
        Ok((r.i64("recipients")?, r.string("at")?))
    })?;
    if let Some(wait) = wait(&times(of_sender), recipients, limits.recipients, now) {
        return Err(refusal(
            format!(
                "Resending to {recipients} more recipients would pass the limit of {} recipients \
                 an hour for this caller.",
                limits.recipients
            ),
            wait,
        ));
    }
    Ok(())
}

/// The 429 with whole seconds to wait (at least 1); `message`, which limit, goes to the log (the
/// WIT error carries only the seconds; the gateway words the client's message).
fn refusal(message: String, wait: Duration) -> Error {
    let seconds = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
    eprintln!("resend refused: {message}");
    Error::TooManyRequests(seconds.min(WINDOW.as_secs()) as u32)
}

/// How long until `adding` more fits under `limit`, given the window's `(amount, at)` rows oldest
/// first; `None` when it fits now. More than `limit` alone waits the whole window.
fn wait(rows: &[(i64, SystemTime)], adding: i64, limit: i64, now: SystemTime) -> Option<Duration> {
    let mut used: i64 = rows.iter().map(|(n, _)| n).sum();
    if used + adding <= limit {
        return None;
    }
    if adding > limit {
        return Some(WINDOW);
    }
    for (n, at) in rows {
        used -= n;
        if used + adding <= limit {
            return Some((*at + WINDOW).duration_since(now).unwrap_or_default());
        }
    }
    Some(WINDOW)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(now: SystemTime, minutes_ago: u64) -> SystemTime {
        now - Duration::from_secs(minutes_ago * 60)
    }

    #[test]
    fn under_the_limit_waits_nothing() {
        let now = SystemTime::now();
        let rows = vec![(1, at(now, 50)), (1, at(now, 10))];
        assert_eq!(wait(&rows, 1, 5, now), None);
        assert_eq!(wait(&rows, 3, 5, now), None);
    }

    #[test]
    fn over_the_limit_waits_until_enough_leaves_the_window() {
        let now = SystemTime::now();
        let five: Vec<_> = (0..5).map(|i| (1, at(now, 50 - i * 10))).collect();
        // The oldest (50 minutes ago) leaves in 10 minutes.
        assert_eq!(wait(&five, 1, 5, now), Some(Duration::from_secs(600)));
        // Recipients: 11 + 11 + 11 + 11 used; 11 more needs the first two gone.
        let recipients = vec![
            (11, at(now, 40)),
            (11, at(now, 30)),
            (11, at(now, 20)),
            (11, at(now, 10)),
        ];
        assert_eq!(wait(&recipients, 6, 50, now), None);
        assert_eq!(
            wait(&recipients, 7, 50, now),
            Some(Duration::from_secs(20 * 60))
        );
    }

    #[test]
    fn more_than_the_limit_alone_waits_the_window() {
        let now = SystemTime::now();
        assert_eq!(wait(&[], 11, 10, now), Some(WINDOW));
    }

    #[test]
    fn senders_are_named_by_role_and_id() {
        assert_eq!(sender(Principal::Admin), "admin");
        assert_eq!(sender(Principal::Medic(7)), "medic:7");
    }
}
