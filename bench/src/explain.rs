//! `EXPLAIN QUERY PLAN` of the statements behind the benchmarked lists, searches and look-ups, on
//! the bench's own database after seeding. The statements are copied from the components (the
//! test below checks that each still appears in its source file, so a change there shows up here).

use std::fmt::Write as _;

use anyhow::{Context, Result};

use crate::args::Flags;

/// (what, source files (separated by spaces), the statement in parts; each part appears verbatim
/// in one of them).
const STATEMENTS: &[(&str, &str, &[&str])] = &[
    (
        "auth: the medic or pharmacy by token",
        "components/auth/src/lib.rs",
        &["SELECT 'medic' AS role, id FROM medics \
           WHERE token_hash = ?1 AND is_active = 1 \
           UNION ALL SELECT 'pharmacy' AS role, id FROM pharmacies \
           WHERE token_hash = ?1 AND is_active = 1 ORDER BY role LIMIT 1"],
    ),
    (
        "pharmacy calls: the pharmacy and its 404 beyond the limit in the last minute (every pharmacy call)",
        "components/pharmacies/src/calls.rs",
        &[
            "SELECT p.id, p.name, p.legal_name, p.license, p.address, p.zip_code, \
           p.state, p.contact, p.is_active, p.created_at, p.updated_at, \
           (SELECT c.created_at FROM pharmacy_calls c \
           WHERE c.pharmacy_id = p.id AND c.status = 404 AND c.created_at > ?2 \
           ORDER BY c.created_at DESC LIMIT 1 OFFSET ?3) AS over_since FROM pharmacies p WHERE ",
            "p.id = ?1",
        ],
    ),
    (
        "rx list/search: count",
        "components/prescriptions/src/read.rs components/prescriptions/src/scope.rs",
        &[
            "SELECT COUNT(*) AS count FROM prescriptions p WHERE ",
            RX_OWNED,
            " AND ",
            RX_SEARCHED,
        ],
    ),
    (
        "rx list/search over HTTP with a medic's token: count (its holder found in the statement)",
        "components/prescriptions/src/read.rs components/prescriptions/src/scope.rs",
        &[
            "SELECT COUNT(*) AS count FROM prescriptions p WHERE ",
            RX_OWNED_BY_HOLDER,
            " AND ",
            RX_SEARCHED,
        ],
    ),
    (
        "rx list/search: page",
        "components/prescriptions/src/read.rs components/prescriptions/src/scope.rs",
        &[
            "SELECT ",
            RX_COLUMNS,
            " FROM ",
            RX_FROM,
            " WHERE p.id IN (SELECT p.id FROM prescriptions p WHERE ",
            RX_OWNED,
            " AND ",
            RX_SEARCHED,
            " ORDER BY p.id DESC LIMIT ?3 OFFSET ?4) ORDER BY p.id DESC",
        ],
    ),
    (
        "rx: the medications of a page (3 ids)",
        "components/prescriptions/src/read.rs",
        &[
            "SELECT ",
            "m.id, m.prescription_id, m.presentation, m.instructions, m.qty, \
             m.drug_upc, m.category, m.drug, m.cost, m.bought, m.bought_qty, m.order_id, m.qty_label, \
             m.fraccion, m.antibiotic, m.qty * p.fills AS qty_total, \
             m.substitution_allowed",
            " FROM ",
            "medications m JOIN prescriptions p ON p.id = m.prescription_id",
            " WHERE m.prescription_id IN (",
            "?, ?, ?",
            ") ORDER BY m.prescription_id, m.position",
        ],
    ),
    (
        "rx detail, pharmacy lookup / dispense: the prescription by signature, its document, the \
         access log's check and its medications (one row each)",
        "components/prescriptions/src/detail.rs components/prescriptions/src/read.rs \
         components/prescriptions/src/reads.rs",
        &[
            "SELECT ",
            RX_COLUMNS,
            ", p.canonical, (",
            "SELECT 1 FROM access_log a WHERE a.prescription_id = p.id \
             AND a.action = 'read' AND a.actor = ?3 AND a.pharmacy_id IS NULL AND a.created_at >= ?4 LIMIT 1",
            ") AS seen, ",
            "m.id AS med_id, m.prescription_id AS med_prescription_id, \
             m.presentation AS med_presentation, m.instructions AS med_instructions, m.qty AS med_qty, \
             m.drug_upc AS med_drug_upc, m.category AS med_category, m.drug AS med_drug, \
             m.cost AS med_cost, m.bought AS med_bought, m.bought_qty AS med_bought_qty, \
             m.order_id AS med_order_id, m.qty_label AS med_qty_label, m.fraccion AS med_fraccion, \
             m.antibiotic AS med_antibiotic, m.qty * p.fills AS med_qty_total, \
             m.substitution_allowed AS med_substitution_allowed",
            " FROM ",
            RX_FROM,
            " LEFT JOIN medications m ON m.prescription_id = p.id WHERE ",
            "p.signature = ?1 AND (?2 IS NULL OR p.medic_id = ?2)",
            " ORDER BY m.position",
        ],
    ),
    (
        "rx PDF by signature",
        "components/prescriptions/src/read.rs",
        &[
            "SELECT d.pdf, dr.expires_at AS draft_expires_at FROM prescription_documents d \
             JOIN prescriptions p ON p.id = d.prescription_id \
             LEFT JOIN prescription_drafts dr ON dr.prescription_id = p.id WHERE ",
            "p.signature = ?1 AND (?2 IS NULL OR p.medic_id = ?2)",
        ],
    ),
    (
        "patients list/search",
        "components/patients/src/records.rs components/patients/src/channels.rs",
        &[
            "SELECT ",
            "patients.id, uid, name, email, date_of_birth, external_patient_file, gender, \
             curp, phone, address, state, zip_code, location",
            ", ",
            PATIENT_CONTACT_COLUMNS,
            " FROM patients WHERE medic_id = ?1 AND (?2 IS NULL OR name LIKE ?2 ESCAPE '\\' OR email LIKE ?2 ESCAPE '\\') \
             ORDER BY patients.id LIMIT ?3 OFFSET ?4",
        ],
    ),
    (
        "patient by uid (rx create)",
        "components/patients/src/records.rs components/patients/src/channels.rs",
        &[
            "SELECT ",
            "patients.id, uid, name, email, date_of_birth, external_patient_file, gender, \
             curp, phone, address, state, zip_code, location",
            ", ",
            PATIENT_CONTACT_COLUMNS,
            " FROM patients WHERE medic_id = ?1 AND ",
            "uid",
            " = ?2",
        ],
    ),
    (
        "outbox: any due webhook row (the background jobs, every second, no email relay configured)",
        "components/common/src/queue/mod.rs components/notifications/src/outbox.rs",
        &[
            "SELECT EXISTS (SELECT 1 FROM ",
            "outbox",
            " WHERE ",
            "status = 'pending' AND next_attempt_at <= ?1 \
             AND (lease_until IS NULL OR lease_until < ?1)",
            " AND ",
            "kind = 'webhook' AND NOT ?4",
            ")",
        ],
    ),
    (
        "outbox: any due row (the background jobs, every second)",
        "components/common/src/queue/mod.rs components/notifications/src/outbox.rs",
        &[
            "SELECT EXISTS (SELECT 1 FROM ",
            "outbox",
            " WHERE ",
            "status = 'pending' AND next_attempt_at <= ?1 \
             AND (lease_until IS NULL OR lease_until < ?1)",
            " AND ",
            "(?4 OR kind <> 'email')",
            ")",
        ],
    ),
    (
        "hospitals list: count",
        "components/catalog/src/hospitals.rs",
        &[
            "SELECT COUNT(*) FROM hospitals h WHERE ",
            "(?1 IS NULL OR EXISTS (SELECT 1 FROM memberships m \
             WHERE m.hospital_id = h.id AND m.medic_id = ?1 AND m.is_deleted = 0))",
        ],
    ),
];

/// `channels::COLUMNS` (components/patients/src/channels.rs).
const PATIENT_CONTACT_COLUMNS: &str = "patients.phone_e164 AS phone_e164, patients.channels AS channel_codes, \
    CASE WHEN patients.whatsapp_opt_in_at IS NOT NULL AND (patients.whatsapp_withdrawn_at IS NULL \
      OR patients.whatsapp_withdrawn_at < patients.whatsapp_opt_in_at) \
      THEN patients.whatsapp_opt_in_at END AS opt_in_at, \
    patients.whatsapp_opt_in_by AS opt_in_by";

/// `read::COLUMNS` (components/prescriptions/src/read.rs).
const RX_COLUMNS: &str = "p.id, p.medic_id, p.signature, p.hospital_id, p.hospital_patron, \
    p.hospital_location, p.clinic, p.medic_email, p.patient_uid, p.patient_name, p.patient_email, \
    p.patient_phone, p.patient_date_of_birth, p.patient_gender, p.diagnosis, p.extras, p.created_at, \
    p.sent, p.send_rx, p.show_diagnosis, p.rejected, p.bought, p.rx_status, p.sent_status, \
    p.reason_of_rejected, p.seal_kid, p.seal_sig, p.valid_until, p.expires_at, p.fills, \
    p.fill_interval_days, p.antibiotic_repeat_reason, p.fills_used, p.constancia_time, \
    p.constancia_tsa, p.status_updates, p.draft_rfc, p.draft_serial, p.draft_expires_at, \
    p.efirma_rfc, p.efirma_serial, p.efirma_signed_at";

const RX_FROM: &str = "prescription_view p";

const RX_OWNED: &str = "p.medic_id = ?1";

const RX_OWNED_BY_HOLDER: &str =
    "p.medic_id = (SELECT t.id FROM medics t WHERE t.token_hash = ?1 AND t.is_active = 1)";

const RX_SEARCHED: &str = "(?2 IS NULL OR (p.patient_name || char(31) || \
    p.patient_email || char(31) || p.diagnosis) LIKE ?2 ESCAPE '\\')";

pub fn run(flags: &Flags) -> Result<()> {
    let path = flags.str("db")?;
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("open {path}"))?;
    let mut out = String::new();
    for (what, _, parts) in STATEMENTS {
        let sql = parts.concat();
        let mut stmt = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .with_context(|| format!("{what}: {sql}"))?;
        // The plan does not depend on the values; rusqlite wants every parameter bound.
        let nulls = vec![rusqlite::types::Value::Null; stmt.parameter_count()];
        let rows = stmt.query_map(rusqlite::params_from_iter(nulls), |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(3)?,
            ))
        })?;
        let mut depth: Vec<(i64, usize)> = Vec::new();
        writeln!(out, "{what}:")?;
        for row in rows {
            let (id, parent, detail) = row?;
            let level = depth
                .iter()
                .find(|(i, _)| *i == parent)
                .map_or(0, |(_, l)| l + 1);
            depth.push((id, level));
            writeln!(out, "  {}{detail}", "  ".repeat(level))?;
        }
    }
    print!("{out}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This crate's directory as `cargo test` says at run time (a test binary built in another
    /// checkout that shares the target directory names that one), else as it was when compiled.
    fn manifest_dir() -> std::path::PathBuf {
        std::env::var_os("CARGO_MANIFEST_DIR")
            .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
    }

    /// A Rust source file as the strings it spells: line continuations joined, `\\` as `\`.
    fn as_strings(source: &str) -> String {
        let mut out = String::new();
        let mut rest = source;
        while let Some(i) = rest.find("\\\n") {
            out.push_str(&rest[..i]);
            rest = rest[i + 2..].trim_start();
        }
        out.push_str(rest);
        out.replace("\\\\", "\\")
    }

    #[test]
    fn statements_are_the_components() {
        let root = manifest_dir().join("..");
        for (what, file, parts) in STATEMENTS {
            let source: String = file
                .split_whitespace()
                .map(|f| as_strings(&std::fs::read_to_string(root.join(f)).unwrap()))
                .collect();
            // The placeholders are generated (`IN (?, ?, …)`).
            for part in parts.iter().filter(|p| p.contains(char::is_alphabetic)) {
                assert!(source.contains(part), "{what}: {part:?} is not in {file}");
            }
        }
    }

    #[test]
    fn every_statement_prepares_on_the_migrated_schema() {
        let migrations = manifest_dir().join("../migrations");
        let mut files: Vec<_> = std::fs::read_dir(&migrations)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "sql"))
            .collect();
        files.sort();
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        for file in files {
            conn.execute_batch(&std::fs::read_to_string(&file).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        }
        for (what, _, parts) in STATEMENTS {
            conn.prepare(&format!("EXPLAIN QUERY PLAN {}", parts.concat()))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
}
