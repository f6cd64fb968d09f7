//! The pharmacy calls (a pharmacy's token only), with the paths and shapes of the original service's
//! public pharmacy API, `/api/v1/` included:
//!
//! - `GET /api/v2/pharmacy/rx/<signature>`: look a prescription up
//! - `POST /api/v1/prescriptions/burn/<signature>`: record a sale (a dispense)
//! - `POST /api/v1/prescriptions/reject/<signature>`: reject it
//! - `POST /api/v2/pharmacy/rx/<signature>/claim/`, `…/release/`: hold it while dispensing, give
//!   it back (a burn with `X-Claim-Secret` closes the claim)
//! - `GET /api/v2/pharmacy/register/?from&to&format`: its antibiotic register (`register`)
//! - `GET /api/v2/pharmacy/receipts/<digest>/`: the sealed receipt of one of its sales
//! - `POST /api/v2/pharmacy/rx/<signature>/status/`: say what it is doing with it (`ready_to_collect`…)
//! - `POST /api/v2/pharmacy/patients/lookup/`: a person's prescriptions, found at the counter with
//!   their CURP and the code from their page (docs/patients.md)
//!
//! Every call is logged with the status it was answered (`pharmacies.record-call`), and a pharmacy
//! with more than `MISSES_PER_MINUTE` unknown-signature 404s in the last minute is answered 429
//! (`pharmacies.admit`). The state changes themselves, and the rule that nothing is sold twice, live
//! in the prescriptions component's transactions (docs/lifecycle.md), which also write the patient's
//! access log (a lookup, claim, release, sale or rejection that succeeded).
//!
//! One file (over 500 lines): every pharmacy call answers in the lookup's shape and is logged by the same `logged`, so they read together.

use serde::Serialize;
use serde_json::{Map, Value, json};

use common::codes::{Coded, PharmacyStatus};
use common::db::Db;
use common::fields::Fields;
use common::types::{Error, FieldError, RxEvent, WebhookDelivery};

use crate::bindings::notifications;
use crate::bindings::patients;
use crate::bindings::pharmacies::{self, Call, CallAction, Pharmacy, PharmacyKey};
use crate::bindings::prescriptions::{
    self, DispenseRequest, DispensedItem, Medication, PharmacyRef, PharmacyView, Prescription,
    ReceiptSeal, Sale, StateChange, StatusChange,
};
use crate::http::{self, Request, Response};
use crate::input::body::object_items;
use crate::roles::{PharmacyId, ReceiptReader};
use crate::views::rx_json::{RxJson, shape};

/// Unknown-signature 404s a pharmacy may get in a minute before it is answered 429.
pub const MISSES_PER_MINUTE: u32 = 20;
/// Items one sale may list (a prescription has at most 50 medications).
const MAX_ITEMS: usize = 50;
/// `sales_code`: at most 128 characters; `reason_of_rejected`: at most 1023.
const SALES_CODE: Option<usize> = Some(129);
const REASON: Option<usize> = Some(1024);
/// `curp` and `code` of a counter lookup: at most 63 characters (a CURP is 18).
const CURP: Option<usize> = Some(64);
/// The 404 `error` of the pharmacy calls.
const RX_NOT_FOUND: &str = "rx not found";
/// The header that carries a claim's secret on a burn (and a release).
const CLAIM_SECRET: &str = "x-claim-secret";
/// How long a claim lives when `claim_minutes` is not set.
const DEFAULT_CLAIM_MINUTES: u32 = 10;

/// `GET /api/v2/pharmacy/rx/<signature>` → 200 the prescription in the detail shape, each medication
/// with `sku` and `ad_id`, and `sales` (the seal of each sale so far); 404 `{"error": "rx not
/// found"}`.
pub fn lookup(pharmacy: PharmacyKey, signature: &str) -> Result<Response, Error> {
    viewed(pharmacy, signature, Kind::Lookup, |pharmacy, view| {
        Ok(Response::json(200, &pharmacy_shape(&view?, pharmacy.id)))
    })
}

/// `GET /api/v2/pharmacy/rx/<signature>/fhir/` → 200 `application/fhir+json`: the lookup as a FHIR
/// R4 `Bundle` (docs/fhir.md); logged as a lookup, refused as one (404 `{"error": "rx not found"}`,
/// 409 for a draft).
pub fn fhir(pharmacy: PharmacyKey, signature: &str) -> Result<Response, Error> {
    viewed(pharmacy, signature, Kind::Lookup, |pharmacy, view| {
        let mut rx = view?.prescription;
        // Of the pharmacies' statuses, only its own (as its JSON lookup).
        rx.status_updates.retain(|u| u.pharmacy.id == pharmacy.id);
        crate::views::fhir_json::respond(&rx, crate::views::fhir_json::Audience::Pharmacy)
    })
}

/// `POST /api/v1/prescriptions/burn/<signature>` `{sales_code, medications: [{id, bought_qty}]}` → 200
/// the updated prescription (the lookup's shape) with `receipt: {digest, kid, alg, sig}`, the seal of
/// the sale's receipt (`receipt`). 404 `{"error": "rx not found"}`; 400 for the body
/// or for an item that is not this prescription's or sells more than is left (nothing applied);
/// 409 `{message}` when it is rejected, cancelled or fully dispensed, or another pharmacy holds a
/// live claim; 403 when `X-Claim-Secret` does not open the pharmacy's own claim. Without a claim it
/// is an implicit claim and close.
pub fn burn(req: &Request, pharmacy: PharmacyKey, signature: &str) -> Result<Response, Error> {
    viewed(pharmacy, signature, Kind::Dispense, |pharmacy, view| {
        let principal = format!("pharmacy:{}", pharmacy.id);
        crate::input::idempotency::once(req, &principal, || {
            dispense(req, signature, pharmacy, view?.prescription)
        })
    })
}

/// A burn, once admitted (and, with an `Idempotency-Key`, once per key).
fn dispense(
    req: &Request,
    signature: &str,
    pharmacy: &Pharmacy,
    rx: Prescription,
) -> Result<Response, Error> {
    let mut f = req.json_fields()?;
    let sales_code = f.required_str("sales_code", SALES_CODE);
    let items = sold_items(&mut f);
    let sales_code = f.finish_with(sales_code)?.trim().to_string();
    let webhooks = plan(&rx, RxEvent::Dispensed)?;
    let db = Db::open()?;
    let request = DispenseRequest {
        pharmacy: pharmacy_ref(pharmacy),
        signature: signature.to_string(),
        sales_code,
        items,
        webhooks,
        claim_secret: req.header(CLAIM_SECRET).map(str::to_string),
    };
    let sold = prescriptions::dispense(db.lend().as_deref(), &request)?;
    let body = Burned {
        rx: pharmacy_shape(&sold.prescription, pharmacy.id),
        receipt: &sold.receipt,
    };
    Ok(Response::json(200, &body))
}

/// `GET /api/v2/pharmacy/receipts/<digest>/` (the pharmacy that sold, or the API admin) → 200
/// `{"document": "<the canonical JSON, exactly as sealed>", "receipt": {digest, kid, alg, sig}}`
/// (docs/verification.md, "Dispense receipts"); 404 for an unknown digest or another pharmacy's
/// sale; 409 when the stored document no longer hashes to the digest.
pub fn receipt(pharmacy: ReceiptReader, digest: &str) -> Result<Response, Error> {
    let pharmacy = pharmacy.pharmacy();
    let receipt = prescriptions::get_receipt(Db::open()?.lend().as_deref(), pharmacy, digest)?;
    Ok(Response::json(
        200,
        &json!({
            "document": receipt.document,
            "receipt": receipt.seal,
            "constancia": crate::views::rx_json::constancia(&receipt.constancia),
        }),
    ))
}

/// `GET /api/v2/pharmacy/receipts/<digest>/constancia/` (the pharmacy that sold, or the API admin)
/// → 200 `application/timestamp-reply`: the receipt's NOM-151 constancia (DER, as stored); 404
/// `{"message"}` while there is none, and for another pharmacy's sale.
pub fn receipt_constancia(pharmacy: ReceiptReader, digest: &str) -> Result<Response, Error> {
    let pharmacy = pharmacy.pharmacy();
    let reply =
        prescriptions::get_receipt_constancia(Db::open()?.lend().as_deref(), pharmacy, digest)?;
    Ok(Response::bytes(200, http::TIMESTAMP_REPLY, reply))
}

/// `POST /api/v2/pharmacy/rx/<signature>/claim/` → 200 `{"claim": {id, secret, expires_at},
/// "prescription": <the lookup's shape>}`: the pharmacy holds the prescription for `claim_minutes`
/// (docs/lifecycle.md, "Claims"); the secret is shown only here. 409 `{message}` while another
/// pharmacy's claim is live (saying until when), or when the prescription is rejected, cancelled,
/// expired or fully dispensed; 404 `{"error": "rx not found"}`. Logged as a lookup.
pub fn claim(pharmacy: PharmacyKey, signature: &str) -> Result<Response, Error> {
    logged(pharmacy, signature, Kind::Claim, |pharmacy| {
        let db = Db::open()?;
        let grant = prescriptions::claim(
            db.lend().as_deref(),
            &pharmacy_ref(pharmacy),
            signature,
            claim_minutes(),
        )?;
        let view = for_pharmacy(signature)?;
        let body = json!({
            "claim": {"id": grant.id, "secret": grant.secret, "expires_at": grant.expires_at},
            "prescription": pharmacy_shape(&view, pharmacy.id),
        });
        Ok(Response::json(200, &body))
    })
}

/// `POST /api/v2/pharmacy/rx/<signature>/release/` with the claim's secret (`X-Claim-Secret`, or
/// `{"secret": "..."}`) → 200 `{message, prescription}`: available again at once. 400 on `secret`
/// without one; 403 for a secret that is not the claim's; 409 when there is no live claim or
/// another pharmacy holds it; 404 `{"error": "rx not found"}`. Logged as a lookup.
pub fn release(req: &Request, pharmacy: PharmacyKey, signature: &str) -> Result<Response, Error> {
    logged(pharmacy, signature, Kind::Release, |pharmacy| {
        let secret = match req.header(CLAIM_SECRET) {
            Some(secret) => secret.to_string(),
            None => {
                let mut f = req.json_fields_or_empty()?;
                let secret = f.required_str("secret", Some(129));
                f.finish_with(secret)?
            }
        };
        let db = Db::open()?;
        prescriptions::release(
            db.lend().as_deref(),
            &pharmacy_ref(pharmacy),
            signature,
            &secret,
        )?;
        let view = for_pharmacy(signature)?;
        let body = json!({
            "message": "The claim was released: the prescription is available again.",
            "prescription": pharmacy_shape(&view, pharmacy.id),
        });
        Ok(Response::json(200, &body))
    })
}

/// `claim_minutes` (1-60, default 10): how long a claim lives.
fn claim_minutes() -> u32 {
    spin_sdk::variables::get("claim_minutes")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .map_or(DEFAULT_CLAIM_MINUTES, |m| m.clamp(1, 60))
}

/// `POST /api/v1/prescriptions/reject/<signature>` `{rejected: true, reason_of_rejected}` → 200
/// `{"status": "202 OK"}`; 404 `{"status": "400 Bad Response", "error": "rx not found"}`; 409
/// `{message}` once anything was dispensed, or when it is rejected or cancelled already.
pub fn reject(req: &Request, pharmacy: PharmacyKey, signature: &str) -> Result<Response, Error> {
    viewed(pharmacy, signature, Kind::Reject, |pharmacy, view| {
        let rx = view?.prescription;
        let mut f = req.json_fields()?;
        if f.optional_bool("rejected") == Some(false) {
            f.error("rejected", "Must be true: a rejection cannot be undone.");
        }
        let reason = f.required_str("reason_of_rejected", REASON);
        let reason = f.finish_with(reason)?.trim().to_string();
        let webhooks = plan(&rx, RxEvent::Rejected)?;
        let change = StateChange {
            signature: signature.to_string(),
            reason,
            webhooks,
        };
        prescriptions::reject(
            Db::open()?.lend().as_deref(),
            &pharmacy_ref(pharmacy),
            &change,
        )?;
        Ok(Response::json(200, &json!({"status": "202 OK"})))
    })
}

/// `POST /api/v2/pharmacy/rx/<signature>/status/` `{status, pickup_code?, reason?}` → 201 the status
/// posted (`views::status_json`) with `message_queued` (whether the patient was messaged: once per
/// status value per pharmacy, `ready_to_collect` once in two hours); docs/lifecycle.md, "The
/// pharmacy's status". 400 on `status` (not
/// one of the codes), `pickup_code` (only with `ready_to_collect`; 1-32 letters, digits or `-`)
/// or `reason` (required with `not_dispensed`, refused with the others); 409 `{message}` for a
/// status the rules refuse, a prescription rejected, cancelled, expired, claimed by another
/// pharmacy, or fully dispensed by another; 404 `{"error": "rx not found"}`. Logged as a lookup.
pub fn status(req: &Request, pharmacy: PharmacyKey, signature: &str) -> Result<Response, Error> {
    viewed(pharmacy, signature, Kind::Status, |pharmacy, view| {
        let rx = view?.prescription;
        let mut f = req.json_fields()?;
        let status = if f.has("status") {
            f.coded("status", PharmacyStatus::ALL, false)
        } else {
            f.error("status", "This field is required.");
            None
        };
        let pickup_code = f.optional_str("pickup_code", Some(33));
        let reason = f.optional_str("reason", REASON);
        let reason = reason.map(|r| r.trim().to_string());
        if let Some(code) = &pickup_code
            && (code.is_empty() || !code.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        {
            f.error("pickup_code", "Use 1 to 32 letters, digits or `-`.");
        }
        match status {
            Some(PharmacyStatus::ReadyToCollect) | None => {}
            Some(_) if pickup_code.is_some() => {
                f.error("pickup_code", "Only with the status `ready_to_collect`.")
            }
            Some(_) => {}
        }
        match (status, reason.as_deref()) {
            (Some(PharmacyStatus::NotDispensed), None | Some("")) => f.error(
                "reason",
                "Required with the status `not_dispensed`: say why, for the patient.",
            ),
            (Some(PharmacyStatus::NotDispensed) | None, _) | (_, None) => {}
            (Some(_), Some(_)) => f.error("reason", "Only with the status `not_dispensed`."),
        }
        let status = f.finish_with(status)?;
        let change = StatusChange {
            signature: signature.to_string(),
            status,
            pickup_code,
            reason,
            webhooks: plan(&rx, RxEvent::StatusChanged)?,
        };
        let db = Db::open()?;
        let (posted, queued) =
            prescriptions::set_status(db.lend().as_deref(), &pharmacy_ref(pharmacy), &change)?;
        let mut answer = serde_json::to_value(crate::views::status_json::status(&posted))
            .map_err(anyhow::Error::from)?;
        answer["message_queued"] = queued.into();
        Ok(Response::json(201, &answer))
    })
}

/// `POST /api/v2/pharmacy/patients/lookup/` `{curp, code}` → 200 `{count, results}`: the
/// prescriptions of the records the code speaks for (the record whose page asked for it and the
/// records that page proved the person's, docs/patients.md) that this pharmacy may dispense now,
/// each in the lookup's shape, and each logged as a lookup (the patient's access log shows it).
/// The code is used up. 400 on `curp`/`code` when malformed; 404 `{message}` for a wrong, used or
/// expired code and an unknown CURP alike; 429 once the CURP had 5 misses in the last hour, or
/// this pharmacy 10 across CURPs.
pub fn patients_lookup(req: &Request, pharmacy: PharmacyId) -> Result<Response, Error> {
    let pharmacy = pharmacy.get();
    let mut f = req.json_fields()?;
    let curp = f.required_str("curp", CURP);
    let code = f.required_str("code", CURP);
    let (curp, code) = f.finish_then(|| Some((curp?, code?)))?;
    let db = Db::open()?;
    pharmacies::admit(
        db.lend().as_deref(),
        &PharmacyKey::Id(pharmacy),
        MISSES_PER_MINUTE,
    )?;
    let records = patients::redeem_counter_code(db.lend().as_deref(), pharmacy, &curp, &code)?;
    let signatures = prescriptions::dispensable_for(db.lend().as_deref(), pharmacy, &records)?;
    let mut results = Vec::with_capacity(signatures.len());
    for signature in &signatures {
        let view = for_pharmacy(signature)?;
        results.push(
            serde_json::to_value(pharmacy_shape(&view, pharmacy)).map_err(anyhow::Error::from)?,
        );
        record(pharmacy, signature, Kind::Lookup, 200);
    }
    Ok(Response::json(
        200,
        &json!({"count": results.len(), "results": results}),
    ))
}

/// `GET /api/v2/pharmacy/register/?from=YYYY-MM-DD&to=YYYY-MM-DD[&format=csv][&limit&offset]`
/// (pharmacy token) → 200 its own antibiotic register (`register`).
pub fn register(req: &Request, pharmacy: PharmacyId) -> Result<Response, Error> {
    let pharmacy = pharmacy.get();
    crate::views::register::respond(req, pharmacy)
}

/// Which pharmacy call `logged` runs.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Lookup,
    Claim,
    Release,
    Dispense,
    Reject,
    Status,
}

impl Kind {
    /// The call log's `action`: claims, releases and statuses are logged as lookups (the log's
    /// `action` column predates them; the access log names claims and releases, written by their
    /// own transactions).
    fn action(self) -> CallAction {
        match self {
            Kind::Lookup | Kind::Claim | Kind::Release | Kind::Status => CallAction::Lookup,
            Kind::Dispense => CallAction::Dispense,
            Kind::Reject => CallAction::Reject,
        }
    }
}

/// Runs a pharmacy call for the token's pharmacy, if it is admitted, and logs it with its status.
/// A token that is not a pharmacy's never gets here (the route answers 401/403, unlogged: there
/// is no pharmacy). Over HTTP the pharmacy comes as its token's hash (`roles::pharmacy_call`) and
/// is found by the admission itself; when that finds none (or refuses it), nothing is run or
/// logged and the error goes back to the wrapper, which authenticates the token and comes back
/// with the pharmacy's id.
/// An unknown signature is the original pharmacy API's 404 body for the call. A lookup answered
/// 2xx is the patient's access-log entry too, written in the call-log row's commit.
fn logged(
    pharmacy: PharmacyKey,
    signature: &str,
    kind: Kind,
    call: impl FnOnce(&Pharmacy) -> Result<Response, Error>,
) -> Result<Response, Error> {
    let admitted = Db::open()
        .map_err(Error::from)
        .and_then(|db| pharmacies::admit(db.lend().as_deref(), &pharmacy, MISSES_PER_MINUTE));
    answered(pharmacy, admitted, signature, kind, call)
}

/// As [`logged`], for a call that starts from the prescription as a pharmacy sees it
/// (`prescriptions.get-for-pharmacy`): the admission and that read are sent together, each its
/// component's own statement (`pharmacies.admit-read`, `prescriptions.pharmacy-view-read`), so over
/// HTTP they are one request to the database (issue 87); `call` gets the read's answer. A refused
/// admission's read is dropped unseen.
fn viewed(
    pharmacy: PharmacyKey,
    signature: &str,
    kind: Kind,
    call: impl FnOnce(&Pharmacy, View) -> Result<Response, Error>,
) -> Result<Response, Error> {
    let (admitted, view) = match admitted_and_viewed(&pharmacy, signature) {
        Ok((admitted, view)) => (admitted, Some(view)),
        Err(e) => (Err(e), None),
    };
    answered(pharmacy, admitted, signature, kind, |p| {
        call(
            p,
            view.unwrap_or_else(|| Err(Error::Internal("no read".into()))),
        )
    })
}

/// A pharmacy's admission, or why it was refused.
type Admission = Result<Pharmacy, Error>;
/// The prescription as a pharmacy sees it, or why it cannot.
type View = Result<PharmacyView, Error>;

/// The admission and the pharmacy's read, sent together ([`viewed`]).
fn admitted_and_viewed(
    pharmacy: &PharmacyKey,
    signature: &str,
) -> Result<(Admission, View), Error> {
    let db = Db::open()?;
    let (admit, admit_params) = pharmacies::admit_read(pharmacy, MISSES_PER_MINUTE);
    let (view, view_params) = prescriptions::pharmacy_view_read(signature);
    let answers = db.together(&[(&admit, &admit_params), (&view, &view_params)])?;
    let [admitted, view] = <[_; 2]>::try_from(answers)
        .map_err(|_| Error::Internal("the admission's and the read's answers".into()))?;
    Ok((
        pharmacies::admit_of(&admitted),
        prescriptions::pharmacy_view_of(signature, &view),
    ))
}

/// Runs `call` for the pharmacy `admitted` (a refused admission is its answer), answers the
/// pharmacy calls' 404, and logs the call with its status. With a token `pharmacy` whose
/// admission failed nothing is run or logged: the wrapper settles the token (`token_first`).
fn answered(
    pharmacy: PharmacyKey,
    admitted: Result<Pharmacy, Error>,
    signature: &str,
    kind: Kind,
    call: impl FnOnce(&Pharmacy) -> Result<Response, Error>,
) -> Result<Response, Error> {
    let id = match (&admitted, &pharmacy) {
        (Ok(admitted), _) => admitted.id,
        (Err(_), PharmacyKey::Id(id)) => *id,
        // No pharmacy known yet: nothing run, nothing logged; the wrapper settles the token.
        (Err(e), PharmacyKey::Token(_)) => return Err(e.clone()),
    };
    let response = match admitted.and_then(|p| call(&p)) {
        Ok(response) => response,
        Err(Error::NotFound(_)) if kind == Kind::Reject => Response::json(
            404,
            &json!({"status": "400 Bad Response", "error": RX_NOT_FOUND}),
        ),
        Err(Error::NotFound(_)) => Response::json(404, &json!({"error": RX_NOT_FOUND})),
        Err(other) => Response::error(other),
    };
    record(id, signature, kind, response.status());
    Ok(response)
}

/// Logs one pharmacy call with the status it was answered (a lookup answered 2xx is the patient's
/// access-log entry too); a failure to log is logged, never the call's answer.
fn record(pharmacy: i64, signature: &str, kind: Kind, status: u16) {
    let call = Call {
        pharmacy,
        signature: signature.to_string(),
        action: kind.action(),
        status,
        created_at: String::new(),
    };
    if let Err(e) = pharmacies::record_call(&call, kind == Kind::Lookup) {
        eprintln!("logging pharmacy {pharmacy}'s call: {e:?}");
    }
}

/// The prescription `signature` names, with its sales, read on the request's connection.
fn for_pharmacy(signature: &str) -> Result<PharmacyView, Error> {
    prescriptions::get_for_pharmacy(Db::open()?.lend().as_deref(), signature)
}

/// The webhook deliveries of `event` for `rx`, planned on the request's connection.
fn plan(rx: &Prescription, event: RxEvent) -> Result<Vec<WebhookDelivery>, Error> {
    let db = Db::open()?;
    notifications::plan(db.lend().as_deref(), rx.medic_id, rx.hospital.id, event)
}

fn pharmacy_ref(p: &Pharmacy) -> PharmacyRef {
    PharmacyRef {
        id: p.id,
        name: p.name.clone(),
        license: p.license.clone(),
    }
}

/// A medication as the pharmacy calls show it: the detail's fields plus `sku` (its `drug_upc`) and
/// `ad_id` (always empty: no ads).
#[derive(Serialize)]
struct PharmacyMedication<'a> {
    #[serde(flatten)]
    medication: &'a Medication,
    sku: &'a str,
    ad_id: &'static str,
}

/// What a pharmacy sees: the detail shape with the seal of each sale (and, of the pharmacies'
/// statuses, only its own).
#[derive(Serialize)]
struct PharmacyRx<'a> {
    #[serde(flatten)]
    rx: RxJson<
        'a,
        &'a prescriptions::RxHospital,
        &'a prescriptions::RxPatient,
        Vec<PharmacyMedication<'a>>,
    >,
    /// Every sale so far, oldest first: when, which pharmacy (name, license), what.
    sales: &'a [Sale],
}

/// A burn's answer: the lookup's shape and the seal of the sale's receipt.
#[derive(Serialize)]
struct Burned<'a> {
    #[serde(flatten)]
    rx: PharmacyRx<'a>,
    receipt: &'a ReceiptSeal,
}

/// The detail shape of `GET /api/v2/rx-endpoint/<signature>/`, medications with `sku` and `ad_id`,
/// and `sales`.
fn pharmacy_shape(view: &PharmacyView, pharmacy: i64) -> PharmacyRx<'_> {
    PharmacyRx {
        rx: detail_with_skus(&view.prescription, pharmacy),
        sales: &view.sales,
    }
}

fn detail_with_skus(
    rx: &Prescription,
    pharmacy: i64,
) -> RxJson<
    '_,
    &'_ prescriptions::RxHospital,
    &'_ prescriptions::RxPatient,
    Vec<PharmacyMedication<'_>>,
> {
    let medications = rx
        .medications
        .iter()
        .map(|m| PharmacyMedication {
            medication: m,
            sku: &m.drug_upc,
            ad_id: "",
        })
        .collect();
    shape(
        rx,
        &http::base_url(),
        &rx.hospital,
        &rx.patient,
        medications,
    )
    .for_pharmacy(pharmacy)
}

/// `medications`: a non-empty list of `{id, bought_qty}` (`bought_qty` at least 1). Every problem is
/// a message on `medications`, `Item N, field: …`, as for a create.
fn sold_items(f: &mut Fields) -> Vec<DispensedItem> {
    object_items(f, "medications", MAX_ITEMS, sold_item)
}

/// One `{id, bought_qty}` object, or its field errors.
fn sold_item(map: Map<String, Value>) -> Result<DispensedItem, Vec<FieldError>> {
    let mut m = Fields::from_map(map);
    let id = m.required_i64("id");
    let qty = m
        .required_i64("bought_qty")
        .and_then(|qty| match u32::try_from(qty) {
            Ok(qty) if qty >= 1 => Some(qty),
            _ => {
                m.error(
                    "bought_qty",
                    "Ensure this value is greater than or equal to 1.",
                );
                None
            }
        });
    let handed = crate::input::handed_over::read(&mut m);
    m.finish_item_then(|| {
        Some(DispensedItem {
            medication: id?,
            qty: qty?,
            gtin: handed.product.gtin,
            lot: handed.product.lot,
            expiry: handed.product.expiry,
            serial: handed.product.serial,
            substituted: handed.substituted,
            substitution_reason: handed.substitution_reason,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(v: Value) -> Fields {
        Fields::from_json(v.to_string().as_bytes()).unwrap()
    }

    fn messages(f: Fields) -> Vec<String> {
        match f.finish() {
            Err(Error::Invalid(errors)) => errors.into_iter().flat_map(|e| e.messages).collect(),
            other => panic!("expected field errors, got {other:?}"),
        }
    }

    #[test]
    fn a_sale_lists_ids_and_quantities() {
        let mut f = fields(
            json!({"medications": [{"id": 7, "bought_qty": 2}, {"id": "8", "bought_qty": 1}]}),
        );
        let items = sold_items(&mut f);
        assert!(f.finish().is_ok());
        assert_eq!(items.len(), 2);
        assert_eq!((items[0].medication, items[0].qty), (7, 2));
        assert_eq!((items[1].medication, items[1].qty), (8, 1));
    }

    #[test]
    fn every_bad_item_is_named() {
        let mut f = fields(json!({"medications": [
            {"id": 7, "bought_qty": 0},
            {"bought_qty": 1},
            "x",
            {"id": 9, "bought_qty": -3},
            {"id": 10},
        ]}));
        sold_items(&mut f);
        let m = messages(f);
        let has = |s: &str| m.iter().any(|x| x.starts_with(s));
        assert!(
            has("Item 1, bought_qty: Ensure this value is greater than or equal to 1."),
            "{m:?}"
        );
        assert!(has("Item 2, id: This field is required."), "{m:?}");
        assert!(has("Item 3: Invalid data."), "{m:?}");
        assert!(has("Item 4, bought_qty: Ensure"), "{m:?}");
        assert!(has("Item 5, bought_qty: This field is required."), "{m:?}");
    }

    #[test]
    fn medications_must_be_a_non_empty_list() {
        for body in [
            json!({}),
            json!({"medications": []}),
            json!({"medications": {"id": 1}}),
        ] {
            let mut f = fields(body.clone());
            sold_items(&mut f);
            assert_eq!(messages(f).len(), 1, "{body}");
        }
    }
}
