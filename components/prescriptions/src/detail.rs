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
use common::types::Error;
use spin_sdk::sqlite3::QueryResult;

use crate::bindings::exports::receta::prescriptions::prescriptions::{
    PharmacyView, Prescription, Reader, Sale,
};
use crate::document::{is_signature, signature_of};
use crate::read::{ALTERED, COLUMNS, VIEW, from_row, prefixed_medication};
use crate::reads::{self, Read};
use crate::scope::Visible;

/// The medication columns of `read::MEDICATION_COLUMNS`, each named `med_…` beside the
/// prescription's own (`m` the medication, `p` the prescription).
const MEDICATION_COLUMNS: &str = "m.id AS med_id, m.prescription_id AS med_prescription_id, \
    m.presentation AS med_presentation, m.instructions AS med_instructions, m.qty AS med_qty, \
    m.drug_upc AS med_drug_upc, m.category AS med_category, m.drug AS med_drug, \
    m.cost AS med_cost, m.bought AS med_bought, m.bought_qty AS med_bought_qty, \
    m.order_id AS med_order_id, m.qty_label AS med_qty_label, m.fraccion AS med_fraccion, \
    m.antibiotic AS med_antibiotic, m.qty * p.fills AS med_qty_total, \
    m.substitution_allowed AS med_substitution_allowed";

/// A pharmacy's read also carries the prescription's sales (`prescription_view.sales`), computed
/// once for all its rows (an uncorrelated subquery).
const SALES: &str = "(SELECT v.sales FROM prescription_view v WHERE v.signature = ?1) AS sales";

/// `?1` signature, `?2` whose it must be (`visible`), `?3` the reading actor and `?4` the start of
/// the minute (both NULL for a pharmacy's lookup, which is logged elsewhere): one row per
/// medication in order (one with NULL medication columns for a prescription without any), each
/// with the prescription, its stored document and `seen`, and, with `sales`, its sales.
fn sql(sales: bool, visible: &Visible) -> String {
    format!(
        "SELECT {COLUMNS}, p.canonical, ({}) AS seen, {}{MEDICATION_COLUMNS} \
         FROM {VIEW} LEFT JOIN medications m ON m.prescription_id = p.id \
         WHERE p.signature = ?1 AND {} ORDER BY m.position",
        reads::SEEN,
        if sales {
            format!("{SALES}, ")
        } else {
            String::new()
        },
        visible.condition(),
    )
}

/// The medic's or the admin's read by signature, logged (`reads`).
pub fn by_signature(reader: &Reader, signature: &str) -> Result<Prescription, Error> {
    let read = Read::now_by(reads::reader_actor(reader));
    let visible = Visible::of(reader);
    // Over HTTP the log row is written in the read's own request; else queued after it.
    let log = reads::logged_with_read(signature, &read, &visible)?;
    let found = checked(signature, &visible, Some(&read), false, log.as_ref())?;
    if !found.seen && log.is_none() {
        reads::queue(signature, &read)?;
    }
    Ok(found.rx)
}

/// Any prescription by signature: the answer after a change, a medic's history entry.
pub fn for_pharmacy(signature: &str) -> Result<Prescription, Error> {
    Ok(checked(signature, &Visible::Caller(Param::Null), None, false, None)?.rx)
}

/// Any prescription by signature with its sales, in one statement: what a pharmacy sees (its
/// lookup, and its answer after a sale); `conflict` for a draft awaiting its medic's e.firma.
pub fn pharmacy_view(signature: &str) -> Result<PharmacyView, Error> {
    let (sql, params) = pharmacy_view_read(signature);
    pharmacy_view_of(signature, &Db::open()?.execute(&sql, &params)?)
}

/// The statement [`pharmacy_view`] runs (`prescriptions.pharmacy-view-read`).
pub fn pharmacy_view_read(signature: &str) -> (String, Vec<Param>) {
    statement(signature, &Visible::Caller(Param::Null), None, true)
}

/// [`pharmacy_view`]'s answer in `read`, the result of its statement
/// (`prescriptions.pharmacy-view-of`).
pub fn pharmacy_view_of(signature: &str, read: &QueryResult) -> Result<PharmacyView, Error> {
    let found = found_in(signature, true, read)?;
    crate::efirma::issued(found.rx).map(|prescription| PharmacyView {
        prescription,
        sales: found.sales,
    })
}

/// What the first row says beyond its medication: the prescription, its stored document (none if
/// it has lost it), whether this read is already logged this minute, and its sales (when read).
struct Head {
    rx: Prescription,
    canonical: Option<String>,
    seen: bool,
    sales: Vec<Sale>,
}

/// A checked read: the prescription, whether the read is already logged, its sales (when read).
struct Found {
    rx: Prescription,
    seen: bool,
    sales: Vec<Sale>,
}

/// The prescription `signature` names, if `visible`, with its medications, if
/// its stored document still hashes to its signature (else 409 `ALTERED`); whether `read` is
/// already logged this minute; and, with `sales`, its sales. `after`, a statement sent in the same
/// request after the read (`Db::together`): its log row over HTTP.
fn checked(
    signature: &str,
    visible: &Visible,
    read: Option<&Read>,
    sales: bool,
    after: Option<&(String, Vec<Param>)>,
) -> Result<Found, Error> {
    if !is_signature(signature) {
        return Err(Error::not_found());
    }
    let (sql, params) = statement(signature, visible, read, sales);
    let db = Db::open()?;
    let answer = match after {
        Some((log, log_params)) => db
            .together(&[(&sql, &params), (log, log_params)])?
            .remove(0),
        None => db.execute(&sql, &params)?,
    };
    found_in(signature, sales, &answer)
}

/// The statement of a read by signature ([`sql`]) with its parameters.
fn statement(
    signature: &str,
    visible: &Visible,
    read: Option<&Read>,
    sales: bool,
) -> (String, Vec<Param>) {
    let (actor, minute) = match read {
        Some(read) => (text(read.actor), text(&read.minute)),
        None => (Param::Null, Param::Null),
    };
    let params = vec![text(signature), visible.param(), actor, minute];
    (sql(sales, visible), params)
}

/// What a read by signature found in its statement's `answer` ([`checked`]); `sales` as there.
fn found_in(signature: &str, sales: bool, answer: &QueryResult) -> Result<Found, Error> {
    if !is_signature(signature) {
        return Err(Error::not_found());
    }
    let first = Cell::new(true);
    let rows = common::db::rows(answer, |r| {
        let head = if first.replace(false) {
            Some(head(r, sales)?)
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
    let Some((Some(head), first_medication)) = rows.next() else {
        return Err(Error::not_found());
    };
    let Head {
        mut rx,
        canonical,
        seen,
        sales,
    } = head;
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
    Ok(Found { rx, seen, sales })
}

fn head(r: &Row, sales: bool) -> anyhow::Result<Head> {
    Ok(Head {
        rx: from_row(r)?,
        canonical: r.opt_string("canonical")?,
        seen: r.opt_i64("seen")?.is_some(),
        sales: match sales {
            true => crate::sales::parse(r.opt_string("sales")?.as_deref())?,
            false => Vec::new(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statement_is_scoped_and_reads_each_medication_once() {
        let sql = sql(false, &Visible::Caller(Param::Null));
        assert!(sql.contains("(?2 IS NULL OR p.medic_id = ?2)"), "{sql}");
        let by_token = super::sql(false, &Visible::TokenHolder("hash".into()));
        assert!(
            by_token.contains("p.signature = ?1 AND p.medic_id = (SELECT t.id FROM medics t"),
            "{by_token}"
        );
        assert!(sql.contains("a.actor = ?3"), "{sql}");
        assert!(sql.ends_with("ORDER BY m.position"), "{sql}");
        // Every medication column is named apart from the prescription's own.
        for column in MEDICATION_COLUMNS.split(" AS ").skip(1) {
            assert!(column.starts_with("med_"), "{column}");
        }
    }
}
