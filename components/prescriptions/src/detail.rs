//! A prescription by its signature in one statement: the medic's or the admin's detail (logged in
//! the access log through `reads`) and a pharmacy's lookup. Its rows carry the prescription, its
//! stored document (checked against the signature: `genuine`), whether this read is already in the
//! access log this minute (`seen`), and one medication each.
//!
//! Why one statement: on real Spin every statement is a hop to a blocking thread and back, and the
//! detail made four (the prescription, its medications, the access log's check, and the caller's
//! token in auth); `perf` of Spin's detail put a fifth of its CPU in thread switches
//! (docs/architecture.md, "On real Spin").

use std::cell::Cell;

use common::db::{Db, Param, Row, text};
use common::types::{Error, Principal};

use crate::bindings::exports::receta::prescriptions::prescriptions::Prescription;
use crate::document::{is_signature, signature_of};
use crate::read::{
    ALTERED, COLUMNS, SEALED, VISIBLE_BY_SIGNATURE, caller_param, from_row, prefixed_medication,
};
use crate::reads::{self, Read};

/// The medication columns of `read::MEDICATION_COLUMNS`, each named `med_…` beside the
/// prescription's own (`m` the medication, `c` its class, `t` the prescription's terms).
const MEDICATION_COLUMNS: &str = "m.id AS med_id, m.prescription_id AS med_prescription_id, \
    m.presentation AS med_presentation, m.instructions AS med_instructions, m.qty AS med_qty, \
    m.drug_upc AS med_drug_upc, m.category AS med_category, m.drug AS med_drug, \
    m.cost AS med_cost, m.bought AS med_bought, m.bought_qty AS med_bought_qty, \
    m.order_id AS med_order_id, m.qty_label AS med_qty_label, c.fraccion AS med_fraccion, \
    c.antibiotic AS med_antibiotic, m.qty * COALESCE(t.fills, 1) AS med_qty_total, \
    ns.medication_id IS NULL AS med_substitution_allowed";

/// `?1` signature, `?2` the medic (NULL: anyone's), `?3` the reading actor and `?4` the start of
/// the minute (both NULL for a pharmacy's lookup, which is logged elsewhere): one row per
/// medication in order (one with NULL medication columns for a prescription without any), each
/// with the prescription, its stored document and `seen`.
fn sql() -> String {
    format!(
        "SELECT {COLUMNS}, d.canonical AS canonical, ({}) AS seen, {MEDICATION_COLUMNS} \
         FROM {SEALED} LEFT JOIN prescription_documents d ON d.prescription_id = p.id \
         LEFT JOIN medications m ON m.prescription_id = p.id \
         LEFT JOIN medication_classes c ON c.medication_id = m.id \
         LEFT JOIN medication_no_substitution ns ON ns.medication_id = m.id \
         WHERE {VISIBLE_BY_SIGNATURE} ORDER BY m.position",
        reads::SEEN
    )
}

/// The medic's or the admin's read by signature, logged (`reads`).
pub fn by_signature(caller: &Principal, signature: &str) -> Result<Prescription, Error> {
    let read = Read::now(caller);
    let (rx, seen) = checked(signature, caller_param(caller), Some(&read))?;
    if !seen {
        reads::queue(signature, &read)?;
    }
    Ok(rx)
}

/// Any prescription by signature: a pharmacy's lookup, and the answer after a change.
pub fn for_pharmacy(signature: &str) -> Result<Prescription, Error> {
    Ok(checked(signature, Param::Null, None)?.0)
}

/// What the first row says beyond its medication: the prescription, its stored document (none if
/// it has lost it) and whether this read is already logged this minute.
type Head = (Prescription, Option<String>, bool);

/// The prescription `signature` names, among `medic`'s (NULL: anyone's), with its medications, if
/// its stored document still hashes to its signature (else 409 `ALTERED`); and whether `read` is
/// already logged this minute.
fn checked(
    signature: &str,
    medic: Param,
    read: Option<&Read>,
) -> Result<(Prescription, bool), Error> {
    if !is_signature(signature) {
        return Err(Error::not_found());
    }
    let (actor, minute) = match read {
        Some(read) => (text(read.actor), text(&read.minute)),
        None => (Param::Null, Param::Null),
    };
    let first = Cell::new(true);
    let rows = Db::open()?.query(&sql(), &[text(signature), medic, actor, minute], |r| {
        let head = if first.replace(false) {
            Some(head(r)?)
        } else {
            None
        };
        let medication = match r.opt_i64("med_id")? {
            Some(_) => Some(prefixed_medication(r, "med_")?.1),
            None => None,
        };
        Ok((head, medication))
    })?;
    let mut rows = rows.into_iter();
    let Some((Some((mut rx, canonical, seen)), first_medication)) = rows.next() else {
        return Err(Error::not_found());
    };
    if canonical.is_none_or(|c| signature_of(&c) != rx.signature) {
        eprintln!(
            "prescriptions: prescription {} fails its integrity check",
            rx.id
        );
        return Err(Error::Conflict(ALTERED.into()));
    }
    rx.medications = first_medication
        .into_iter()
        .chain(rows.filter_map(|(_, m)| m))
        .collect();
    Ok((rx, seen))
}

fn head(r: &Row) -> anyhow::Result<Head> {
    Ok((
        from_row(r)?,
        r.opt_string("canonical")?,
        r.opt_i64("seen")?.is_some(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statement_is_scoped_and_reads_each_medication_once() {
        let sql = sql();
        assert!(sql.contains("(?2 IS NULL OR p.medic_id = ?2)"), "{sql}");
        assert!(sql.contains("a.actor = ?3"), "{sql}");
        assert!(sql.ends_with("ORDER BY m.position"), "{sql}");
        // Every medication column is named apart from the prescription's own.
        for column in MEDICATION_COLUMNS.split(" AS ").skip(1) {
            assert!(column.starts_with("med_"), "{column}");
        }
    }
}
