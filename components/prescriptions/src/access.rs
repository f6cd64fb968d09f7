//! The patient's access log (table `access_log`, migration 0015): who looked at or changed a
//! prescription, shown on its page (`/rx/<signature>`) and in the landing JSON (docs/lifecycle.md,
//! "Who looked"). NOM-024-SSA3 asks a health record system for such a log.
//!
//! A change (claim, release, sale, rejection, cancellation) writes its row in its own transaction.
//! Reads are queued in the key-value store and written in batches, at most one per actor and
//! minute (the page shows minutes): the medic's or the admin's read by signature by `reads`, a
//! pharmacy's lookup by the pharmacies component (`pharmacies.record-call`, `drain-calls`). The
//! patient's own page is never logged.

use common::db::{Db, Param, Row, int, text};
use common::time::{MEXICO_CITY_OFFSET_SECS, parse_iso8601};
use common::types::Error;

use crate::bindings::exports::receta::prescriptions::prescriptions::{AccessEntry, PharmacyRef};

/// The entries a page shows, newest first.
pub const SHOWN: i64 = 200;

/// `?1` signature, `?2` action, `?3` actor, `?4` pharmacy id, `?5` name, `?6` license, `?7` now: one
/// row for the prescription the signature names (none for an unknown one).
const RECORD: &str = "INSERT INTO access_log \
    (prescription_id, action, actor, pharmacy_id, actor_name, actor_license, created_at) \
    SELECT id, ?2, ?3, ?4, ?5, ?6, ?7 FROM prescriptions WHERE signature = ?1";

/// `?1` prescription, `?2` how many: the newest entries by time (a pharmacy lookup's entry is
/// written when its queued row is drained, after entries of later calls); a medic is named by the
/// entry when it names one (another medic's read of the patient's history, `history`), else from
/// the signed document (the issuing medic).
const LIST: &str = "SELECT a.action, a.actor, a.actor_license, a.created_at, \
    CASE WHEN a.actor = 'medic' AND a.actor_name <> '' THEN a.actor_name \
    WHEN a.actor = 'medic' AND json_valid(d.canonical) \
      THEN COALESCE(json_extract(d.canonical, '$.medic.name'), '') ELSE a.actor_name END AS name \
    FROM access_log a LEFT JOIN prescription_documents d ON d.prescription_id = a.prescription_id \
    WHERE a.prescription_id = ?1 ORDER BY a.created_at DESC, a.id DESC LIMIT ?2";

/// What a change did (reads are written by `reads`, a pharmacy's `lookup` by the pharmacies
/// component, a sale's `dispense` by its statement, migration 0032).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    Claim,
    Release,
    Reject,
    Cancel,
}

impl Action {
    fn code(self) -> &'static str {
        match self {
            Action::Claim => "claim",
            Action::Release => "release",
            Action::Reject => "reject",
            Action::Cancel => "cancel",
        }
    }

    /// The Spanish participle the page shows (a prescription, "receta", is feminine).
    fn spanish(code: &str) -> &'static str {
        match code {
            "lookup" | "read" => "Consultada",
            "claim" => "Apartada para surtir",
            "release" => "Liberada",
            "dispense" => "Surtida",
            "reject" => "Rechazada",
            "cancel" => "Cancelada",
            _ => "Usada",
        }
    }
}

/// Who did it (the admin only reads: `reads`).
pub enum Actor<'a> {
    Pharmacy(&'a PharmacyRef),
    /// The issuing medic.
    Medic,
}

/// Adds a change's entry for the prescription `signature` names (inside the change's transaction).
pub fn record(
    db: &Db,
    signature: &str,
    action: Action,
    actor: &Actor,
    now: &str,
) -> Result<(), Error> {
    db.execute(RECORD, &params(signature, action, actor, now))?;
    Ok(())
}

/// `?1` … `?7` of `RECORD`.
fn params(signature: &str, action: Action, actor: &Actor, now: &str) -> Vec<Param> {
    let (kind, pharmacy, name, license) = match actor {
        Actor::Pharmacy(p) => ("pharmacy", int(p.id), p.name.as_str(), p.license.as_str()),
        Actor::Medic => ("medic", Param::Null, "", ""),
    };
    vec![
        text(signature),
        text(action.code()),
        text(kind),
        pharmacy,
        text(name),
        text(license),
        text(now),
    ]
}

/// The newest `SHOWN` entries of a prescription, newest first.
pub fn list(db: &Db, prescription: i64) -> Result<Vec<AccessEntry>, Error> {
    Ok(db.query(LIST, &[int(prescription), int(SHOWN)], entry_from_row)?)
}

fn entry_from_row(r: &Row) -> anyhow::Result<AccessEntry> {
    let action = r.string("action")?;
    let actor = r.string("actor")?;
    let name = r.string("name")?;
    let license = r.string("actor_license")?;
    let at = r.string("created_at")?;
    let text = describe(&action, &actor, &name, &license, &at);
    Ok(AccessEntry {
        action,
        actor,
        name,
        license,
        at,
        text,
    })
}

/// The entry as the page reads it: `Consultada por Farmacia X (licencia L) el 24/11/2026 13:05`
/// (Mexico City time).
pub fn describe(action: &str, actor: &str, name: &str, license: &str, at: &str) -> String {
    let who = match actor {
        "pharmacy" if license.is_empty() => name.to_string(),
        "pharmacy" => format!("{name} (licencia {license})"),
        "medic" if name.is_empty() => "el médico que la emitió".to_string(),
        "medic" => format!("el médico {name}"),
        _ => "el administrador del servicio".to_string(),
    };
    format!(
        "{} por {who} el {}",
        Action::spanish(action),
        mexico_city_minute(at)
    )
}

/// `dd/mm/yyyy HH:MM` in Mexico City; the timestamp itself if it does not parse.
fn mexico_city_minute(at: &str) -> String {
    let Some(secs) = parse_iso8601(at)
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs() as i64 + MEXICO_CITY_OFFSET_SECS)
    else {
        return at.to_string();
    };
    let Some(date) = common::time::Date::from_days(secs.div_euclid(86_400)) else {
        return at.to_string();
    };
    let minute = secs.rem_euclid(86_400) / 60;
    format!(
        "{:02}/{:02}/{:04} {:02}:{:02}",
        date.day,
        date.month,
        date.year,
        minute / 60,
        minute % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: &str = "2026-11-24T19:05:42.123456Z";

    #[test]
    fn entries_read_in_spanish_in_mexico_city_time() {
        assert_eq!(
            describe("lookup", "pharmacy", "Farmacia X", "L-123", AT),
            "Consultada por Farmacia X (licencia L-123) el 24/11/2026 13:05"
        );
        assert_eq!(
            describe("dispense", "pharmacy", "Farmacia X", "", AT),
            "Surtida por Farmacia X el 24/11/2026 13:05"
        );
        assert_eq!(
            describe("cancel", "medic", "Ana Ruiz", "", AT),
            "Cancelada por el médico Ana Ruiz el 24/11/2026 13:05"
        );
        assert_eq!(
            describe("read", "admin", "", "", AT),
            "Consultada por el administrador del servicio el 24/11/2026 13:05"
        );
        assert!(describe("claim", "pharmacy", "F", "L", AT).starts_with("Apartada para surtir"));
        assert!(describe("release", "pharmacy", "F", "L", AT).starts_with("Liberada"));
        assert!(describe("reject", "pharmacy", "F", "L", AT).starts_with("Rechazada"));
    }

    #[test]
    fn the_day_turns_at_mexico_city_midnight() {
        assert_eq!(
            mexico_city_minute("2026-11-25T05:59:00Z"),
            "24/11/2026 23:59"
        );
        assert_eq!(
            mexico_city_minute("2026-11-25T06:00:00Z"),
            "25/11/2026 00:00"
        );
        assert_eq!(mexico_city_minute("not a time"), "not a time");
    }

    #[test]
    fn a_row_is_only_written_for_a_known_prescription() {
        assert!(RECORD.contains("FROM prescriptions WHERE signature = ?1"));
        assert!(LIST.contains("ORDER BY a.created_at DESC, a.id DESC LIMIT ?2"));
    }
}
