//! Reading prescriptions. Lists and details by id are scoped to the medic (`medic_id = ?`); details by
//! signature, the PDF and the document to the issuing medic or the API admin. Anything else is
//! `not-found`, so a prescription's existence never leaks. A medic's or the admin's read by
//! signature goes into the prescription's access log (through `reads`); a pharmacy's lookup is logged with
//! its call-log row (the pharmacies component), not here.

use std::borrow::Cow;

use common::db::{Db, Param, Row, int, like_contains, opt_text, placeholders, rows, text};
use common::types::{Error, MedicKey, PageRequest, Principal};

use crate::bindings::exports::receta::prescriptions::prescriptions::{
    Medication, MedicationPage, Prescription, PrescriptionPage, RxHospital, RxPatient, RxStatus,
    Seal,
};
use crate::document::{is_signature, signature_of};
use crate::reads;
use crate::rules;
use crate::scope::{self, caller_param};
use common::codes::RxState;

/// A prescription's columns as its reads carry them, from [`VIEW`]: the row, its seal and terms,
/// the fills used, its NOM-151 constancia (`crate::constancia`), its pharmacy statuses
/// (`crate::status_reads`), its draft and its e.firma (`crate::efirma`).
pub(crate) const COLUMNS: &str = "p.id, p.medic_id, p.signature, p.hospital_id, p.hospital_patron, \
    p.hospital_location, p.clinic, p.medic_email, p.patient_uid, p.patient_name, p.patient_email, \
    p.patient_phone, p.patient_date_of_birth, p.patient_gender, p.diagnosis, p.extras, p.created_at, \
    p.sent, p.send_rx, p.show_diagnosis, p.rejected, p.bought, p.rx_status, p.sent_status, \
    p.reason_of_rejected, p.seal_kid, p.seal_sig, p.valid_until, p.expires_at, p.fills, \
    p.fill_interval_days, p.antibiotic_repeat_reason, p.fills_used, p.constancia_time, \
    p.constancia_tsa, p.status_updates, p.draft_rfc, p.draft_serial, p.draft_expires_at, \
    p.efirma_rfc, p.efirma_serial, p.efirma_signed_at";

/// A prescription as its reads see it: migration 0041's view, as `p` (a column a statement does
/// not name costs nothing).
pub(crate) const VIEW: &str = "prescription_view p";

/// `?2` a `LIKE … ESCAPE '\'` pattern or NULL, after the medic's scope (`scope::OWNED`, `?1`).
/// The patient's name, email and the diagnosis joined by U+001F, as in the index of migration
/// 0019: SQLite reads the joined string from the index and runs one `LIKE` per row instead of up
/// to three. The same matches as the three `LIKE`s, since a match cannot span a separator the term
/// does not hold, and no term holds one: the gateway refuses control characters in `search`
/// (`common::text`, a 400).
const SEARCHED: &str = "(?2 IS NULL OR (p.patient_name || char(31) || \
    p.patient_email || char(31) || p.diagnosis) LIKE ?2 ESCAPE '\\')";

/// A medication's columns, from `MEDICATIONS` (`m`, its prescription `p`).
const MEDICATION_COLUMNS: &str = "m.id, m.prescription_id, m.presentation, m.instructions, m.qty, \
    m.drug_upc, m.category, m.drug, m.cost, m.bought, m.bought_qty, m.order_id, m.qty_label, \
    m.fraccion, m.antibiotic, m.qty * p.fills AS qty_total, \
    m.substitution_allowed";

/// Medications (their class and substitution are columns since 0034) with their prescription's
/// `fills`.
const MEDICATIONS: &str = "medications m JOIN prescriptions p ON p.id = m.prescription_id";

/// `?1` signature, `?2` the medic, or NULL for the API admin.
pub(crate) const VISIBLE_BY_SIGNATURE: &str =
    "p.signature = ?1 AND (?2 IS NULL OR p.medic_id = ?2)";

/// `owner` the list's scope (`scope::OWNED`, `scope::OWNED_BY_HOLDER`), then `SEARCHED`.
fn count_sql(owner: &str) -> String {
    format!("SELECT COUNT(*) AS count FROM prescriptions p WHERE {owner} AND {SEARCHED}")
}

/// The page's ids are found first, in the covering search index (0011), so only the page's own
/// rows are read from the table: matched in one statement, SQLite walked the medic's rows through
/// `prescriptions_by_medic` and read each from the table to test it (a medic with 899
/// prescriptions: 1,334 µs for a surname's page, 259 µs this way; the bench's search row
/// 1,113-1,156 → 1,661-1,675 req/s by A/B). Counting the matches in the same pass
/// (`COUNT(*) OVER ()`) instead of the separate count was measured and is slower (1,455-1,517 vs
/// 1,534-1,577 req/s, A/B). The page comes first, and the count only when the page does not show
/// it (`PageRequest::total_shown`).
fn page_sql(owner: &str) -> String {
    format!(
        "SELECT {COLUMNS} FROM {VIEW} WHERE p.id IN (SELECT p.id FROM prescriptions p \
         WHERE {owner} AND {SEARCHED} ORDER BY p.id DESC LIMIT ?3 OFFSET ?4) ORDER BY p.id DESC"
    )
}

/// The medications of `page_sql`'s page, with its parameters: sent with it over HTTP.
fn page_medications_sql(owner: &str) -> String {
    format!(
        "SELECT {MEDICATION_COLUMNS} FROM {MEDICATIONS} WHERE m.prescription_id IN (SELECT p.id \
         FROM prescriptions p WHERE {owner} AND {SEARCHED} ORDER BY p.id DESC LIMIT ?3 OFFSET ?4) \
         ORDER BY m.prescription_id, m.position"
    )
}

fn by_id_sql() -> String {
    format!("SELECT {COLUMNS} FROM {VIEW} WHERE p.medic_id = ?1 AND p.id = ?2")
}

fn by_signature_sql() -> String {
    format!("SELECT {COLUMNS} FROM {VIEW} WHERE {VISIBLE_BY_SIGNATURE}")
}

/// The 409 of a prescription whose stored document no longer hashes to its signature.
pub const ALTERED: &str = "This prescription's stored document no longer matches its signature: it \
    was altered outside the service and is not served as genuine.";

fn pdf_sql() -> String {
    format!(
        "SELECT d.pdf, dr.expires_at AS draft_expires_at FROM prescription_documents d \
         JOIN prescriptions p ON p.id = d.prescription_id \
         LEFT JOIN prescription_drafts dr ON dr.prescription_id = p.id WHERE {VISIBLE_BY_SIGNATURE}"
    )
}

fn document_sql() -> String {
    format!(
        "SELECT d.canonical FROM prescription_documents d JOIN prescriptions p ON p.id = d.prescription_id \
         WHERE {VISIBLE_BY_SIGNATURE}"
    )
}

/// `?1` medic: how many medications they prescribed.
const COUNT_PRESCRIBED: &str = "SELECT COUNT(*) FROM medications m \
    JOIN prescriptions p ON p.id = m.prescription_id WHERE p.medic_id = ?1";

/// `?1` medic, `?2` limit, `?3` offset: their medications, newest prescription first.
fn prescribed_sql() -> String {
    format!(
        "SELECT {MEDICATION_COLUMNS} FROM {MEDICATIONS} WHERE p.medic_id = ?1 ORDER BY p.id DESC, m.position LIMIT ?2 OFFSET ?3"
    )
}

/// The medications `medic` prescribed, newest prescription first.
pub fn prescribed(medic: i64, page: PageRequest) -> Result<MedicationPage, Error> {
    let db = Db::open()?;
    let count = db.scalar_i64(COUNT_PRESCRIBED, &[int(medic)])?;
    let results = db.query(
        &prescribed_sql(),
        &[int(medic), int(page.limit.into()), int(page.offset.into())],
        medication_from_row,
    )?;
    Ok(MedicationPage {
        count: u64::try_from(count).unwrap_or(0),
        results: results.into_iter().map(|(_, m)| m).collect(),
    })
}

/// The medications of some prescriptions, in order.
pub(crate) fn medications_sql(count: usize) -> String {
    let placeholders = placeholders(count);
    format!(
        "SELECT {MEDICATION_COLUMNS} FROM {MEDICATIONS} WHERE m.prescription_id IN ({placeholders}) \
         ORDER BY m.prescription_id, m.position"
    )
}

pub(crate) fn from_row(r: &Row) -> anyhow::Result<Prescription> {
    Ok(Prescription {
        id: r.i64("id")?,
        medic_id: r.i64("medic_id")?,
        signature: r.string("signature")?,
        hospital: RxHospital {
            id: r.i64("hospital_id")?,
            patron: r.string("hospital_patron")?,
            location: r.string("hospital_location")?,
        },
        clinic: r.opt_string("clinic")?,
        medic: r.string("medic_email")?,
        patient: RxPatient {
            uid: r.string("patient_uid")?,
            name: r.string("patient_name")?,
            email: r.string("patient_email")?,
            phone: r.string("patient_phone")?,
            date_of_birth: r.string("patient_date_of_birth")?,
            gender: r.code("patient_gender")?,
        },
        diagnosis: r.string("diagnosis")?,
        medications: Vec::new(),
        extras: r.string("extras")?,
        created_at: r.string("created_at")?,
        sent: r.opt_i64("sent")?.map(|n| n != 0),
        send_rx: r.bool("send_rx")?,
        show_diagnosis: r.bool("show_diagnosis")?,
        rejected: r.bool("rejected")?,
        bought: r.bool("bought")?,
        status: RxStatus {
            rx_status: shown_state(r)?,
            sent_status: r.code("sent_status")?,
        },
        reason_of_rejected: r.string("reason_of_rejected")?,
        seal: seal_from_row(r)?,
        valid_until: r.opt_string("valid_until")?,
        fills: u32::try_from(r.i64("fills")?)?,
        fills_used: u32::try_from(r.i64("fills_used")?)?,
        fill_interval_days: u32::try_from(r.i64("fill_interval_days")?)?,
        antibiotic_repeat_reason: r.string("antibiotic_repeat_reason")?,
        constancia: crate::constancia::from_row(r, &r.string("signature")?)?,
        efirma: crate::efirma::from_row(r)?,
        status_updates: crate::status_reads::from_row(r)?,
    })
}

/// The state shown for a row with `rx_status` and `expires_at` columns: `expired` once its validity
/// is over with units left (`rules::shown_state`).
pub(crate) fn shown_state(r: &Row) -> anyhow::Result<RxState> {
    let stored = r.code("rx_status")?;
    let expires_at = r.opt_string("expires_at")?;
    Ok(rules::shown_state(
        stored,
        expires_at.as_deref(),
        &common::time::now_iso8601(),
    ))
}

/// The seal of a row with `seal_kid` and `seal_sig` columns (NULL when it has none).
pub(crate) fn seal_from_row(r: &Row) -> anyhow::Result<Option<Seal>> {
    Ok(
        match (r.opt_string("seal_kid")?, r.opt_string("seal_sig")?) {
            (Some(kid), Some(sig)) => Some(Seal {
                kid,
                alg: crate::seal::ALG.into(),
                sig,
            }),
            _ => None,
        },
    )
}

pub(crate) fn medication_from_row(r: &Row) -> anyhow::Result<(i64, Medication)> {
    prefixed_medication(r, "")
}

/// A medication from the columns of `MEDICATION_COLUMNS`, each named with `prefix` (`detail`
/// reads them beside a prescription's own columns, in one row).
pub(crate) fn prefixed_medication(r: &Row, prefix: &str) -> anyhow::Result<(i64, Medication)> {
    // Lists read their columns unprefixed: no name is built for them.
    let col = |name: &'static str| -> Cow<'static, str> {
        if prefix.is_empty() {
            Cow::Borrowed(name)
        } else {
            Cow::Owned(format!("{prefix}{name}"))
        }
    };
    Ok((
        r.i64(&col("prescription_id"))?,
        Medication {
            id: r.i64(&col("id"))?,
            presentation: r.string(&col("presentation"))?,
            instructions: r.string(&col("instructions"))?,
            qty: r.i64(&col("qty"))? as u32,
            drug_upc: r.string(&col("drug_upc"))?,
            category: r.code(&col("category"))?,
            drug: r.string(&col("drug"))?,
            cost: r.f64(&col("cost"))?,
            bought: r.bool(&col("bought"))?,
            bought_qty: r.i64(&col("bought_qty"))? as u32,
            order_id: r.i64(&col("order_id"))?,
            qty_label: r.string(&col("qty_label"))?,
            fraccion: r.opt_string(&col("fraccion"))?,
            antibiotic: r.opt_i64(&col("antibiotic"))?.map(|n| n != 0),
            qty_total: u32::try_from(r.i64(&col("qty_total"))?)?,
            substitution_allowed: r.bool(&col("substitution_allowed"))?,
        },
    ))
}

/// Fills in the medications of `prescriptions` with one query.
fn with_medications(
    db: &Db,
    mut prescriptions: Vec<Prescription>,
) -> Result<Vec<Prescription>, Error> {
    if prescriptions.is_empty() {
        return Ok(prescriptions);
    }
    let ids: Vec<Param> = prescriptions.iter().map(|p| int(p.id)).collect();
    let rows = db.query(&medications_sql(ids.len()), &ids, medication_from_row)?;
    attach(&mut prescriptions, rows);
    Ok(prescriptions)
}

/// Gives each of `prescriptions` its medications among `rows`.
fn attach(prescriptions: &mut [Prescription], rows: Vec<(i64, Medication)>) {
    for (prescription_id, medication) in rows {
        if let Some(p) = prescriptions.iter_mut().find(|p| p.id == prescription_id) {
            p.medications.push(medication);
        }
    }
}

/// The medic's prescriptions (`medic`: by id, or the holder of a token, `scope`), newest first.
pub fn list(
    medic: &MedicKey,
    search: Option<&str>,
    page: PageRequest,
) -> Result<PrescriptionPage, Error> {
    let db = Db::open()?;
    let pattern = search.filter(|s| !s.is_empty()).map(like_contains);
    let (owner, medic, by_token) = match medic {
        MedicKey::Id(id) => (scope::OWNED, int(*id), false),
        MedicKey::Token(hash) => (scope::OWNED_BY_HOLDER, text(hash), true),
    };
    let params = [
        medic,
        opt_text(pattern.as_deref()),
        int(page.limit.into()),
        int(page.offset.into()),
    ];
    if by_token || common::db::over_http()? {
        // One request: the page, the count and the page's medications together, after, for a
        // token, whether an active medic holds it (else a 401: the empty page is nobody's).
        let (page, count, medications) = (
            page_sql(owner),
            count_sql(owner),
            page_medications_sql(owner),
        );
        let mut steps: Vec<(&str, &[Param])> = Vec::with_capacity(4);
        if by_token {
            steps.push((scope::HOLDER, &params[..1]));
        }
        steps.extend([
            (page.as_str(), &params[..]),
            (count.as_str(), &params[..2]),
            (medications.as_str(), &params[..]),
        ]);
        let mut answers = db.together(&steps)?;
        if by_token && answers.remove(0).rows.is_empty() {
            return Err(Error::Unauthorized);
        }
        let mut results = rows(&answers[0], from_row)?;
        let count = rows(&answers[1], |r| r.i64("count"))?;
        attach(&mut results, rows(&answers[2], medication_from_row)?);
        let count = count.first().copied().unwrap_or_default() as u64;
        return Ok(PrescriptionPage { count, results });
    }
    let rows = db.query(&page_sql(owner), &params, from_row)?;
    let count = match page.total_shown(rows.len()) {
        Some(count) => count,
        None => db.scalar_i64(&count_sql(owner), &params[..2])? as u64,
    };
    let results = with_medications(&db, rows)?;
    Ok(PrescriptionPage { count, results })
}

pub fn by_id(medic: i64, id: i64) -> Result<Prescription, Error> {
    let db = Db::open()?;
    let found = db.query_opt(&by_id_sql(), &[int(medic), int(id)], from_row)?;
    one(&db, found)
}

/// The prescription `signature` names, if `caller` may see it (its medic or the API admin).
pub fn visible(
    db: &Db,
    caller: &Principal,
    signature: &str,
) -> Result<Option<Prescription>, Error> {
    if !is_signature(signature) {
        return Ok(None);
    }
    Ok(db.query_opt(
        &by_signature_sql(),
        &[text(signature), caller_param(caller)],
        from_row,
    )?)
}

fn one(db: &Db, found: Option<Prescription>) -> Result<Prescription, Error> {
    let p = found.ok_or_else(Error::not_found)?;
    Ok(with_medications(db, vec![p])?.remove(0))
}

pub fn pdf(caller: &Principal, signature: &str) -> Result<Vec<u8>, Error> {
    if !is_signature(signature) {
        return Err(Error::not_found());
    }
    let db = Db::open()?;
    let (pdf, draft) = db
        .query_opt(&pdf_sql(), &[text(signature), caller_param(caller)], |r| {
            Ok((r.blob("pdf")?, r.opt_string("draft_expires_at")?))
        })?
        .ok_or_else(Error::not_found)?;
    if let Some(refused) = crate::efirma::refusal(draft.as_deref()) {
        return Err(refused);
    }
    reads::record(&db, signature, caller)?;
    Ok(pdf)
}

/// `?1` signature, `?2` the medic or NULL (the admin): the row exists when the caller may see it,
/// its `reply` is NULL while there is no constancia.
fn constancia_sql() -> String {
    format!(
        "SELECT c.reply FROM prescriptions p LEFT JOIN constancias c ON c.digest = p.signature \
         WHERE {VISIBLE_BY_SIGNATURE}"
    )
}

/// A prescription's stored NOM-151 constancia (`crate::constancia`), for its issuing medic or the
/// API admin.
pub fn constancia(caller: &Principal, signature: &str) -> Result<Vec<u8>, Error> {
    if !is_signature(signature) {
        return Err(Error::not_found());
    }
    let db = Db::open()?;
    let params = [text(signature), caller_param(caller)];
    crate::constancia::stored(&db, &constancia_sql(), &params)
}

pub fn document(caller: &Principal, signature: &str) -> Result<String, Error> {
    if !is_signature(signature) {
        return Err(Error::not_found());
    }
    let db = Db::open()?;
    let canonical = db
        .query_opt(
            &document_sql(),
            &[text(signature), caller_param(caller)],
            |r| r.string("canonical"),
        )?
        .ok_or_else(Error::not_found)?;
    if signature_of(&canonical) != signature {
        return Err(Error::Conflict(ALTERED.into()));
    }
    reads::record(&db, signature, caller)?;
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_is_scoped() {
        for sql in [count_sql(scope::OWNED), page_sql(scope::OWNED), by_id_sql()] {
            assert!(sql.contains("p.medic_id = ?1"), "{sql}");
        }
        for sql in [by_signature_sql(), pdf_sql(), document_sql()] {
            assert!(sql.contains("(?2 IS NULL OR p.medic_id = ?2)"), "{sql}");
        }
        assert!(medications_sql(3).contains("IN (?, ?, ?)"));
        assert!(prescribed_sql().contains("WHERE p.medic_id = ?1"));
        assert!(prescribed_sql().starts_with("SELECT m.id, m.prescription_id, m.presentation"));
        assert!(medications_sql(1).contains("WHERE m.prescription_id IN (?)"));
    }
}
