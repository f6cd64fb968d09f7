//! The patient landing, three ways (docs/api.md, openapi/receta.json; decisions `cta_link`, `raw_size`, "Who sees what"):
//!
//! - `GET /api/v2/rx/patient-landing/<signature>/` (token: the issuing medic or the API admin, anyone
//!   else 404): `{rx: {signature, raw_size, created_at, medications, medic: {name}, rx_status,
//!   reason_of_rejected, seal, valid_until, fills, sales, access_log}, campaigns, default_campaign}`
//!   (`rx_status` `[code, Spanish label]`; `sales` the seal of each sale; `access_log` who looked,
//!   newest first: `{action, actor, name, license, at, text}`, no tokens, no internal ids).
//! - `GET /rx/<signature>` (no token: the unguessable signature is the capability): the HTML page
//!   `cta_link` points to, or a friendly 404 page.
//! - `GET /rx/<signature>/pdf` (no token, same capability): the stored PDF as a download.
//! - `POST /rx/<signature>/counter-code` (no token, same capability): a code the patient shows at a
//!   pharmacy counter with their CURP (docs/patients.md), as a page or, asked for JSON, as JSON.
//! - `GET|POST /rx/<signature>/consents`, `DELETE /rx/<signature>/consents/<id>` (and the form's
//!   `POST …/<id>/withdraw`): the person's consents to share their medication history
//!   (docs/patients.md), as pages or, asked for JSON, as JSON.
//!
//! The public responses are private to the patient: `Cache-Control: private, no-store`, `noindex`,
//! no referrer, and a Content-Security-Policy that allows nothing but the page's own style sheet.

use serde::Serialize;
use serde_json::{Value, json};

use common::codes::DrugCategory;
use common::db::Db;
use common::types::{Error, FieldError, Principal};

use crate::bindings::campaigns::{self, Campaign};
use crate::bindings::patients::{self, Consent, ConsentVia, Grantee, PersonConsents};
use crate::bindings::pharmacies;
use crate::bindings::prescriptions::{self, LandingRx, Medication};
use crate::http::{Request, Response};
use crate::views::campaign_json::landing_json;
use crate::views::landing_html;

/// `GET /api/v2/rx/patient-landing/<signature>/` → 200 `{rx, campaigns, default_campaign}`.
pub fn json(caller: Principal, signature: &str) -> Result<Response, Error> {
    logs_caught_up();
    let db = Db::open()?;
    let rx = prescriptions::get_landing(db.lend().as_deref(), Some(caller), signature)?;
    let active = campaigns::active_campaigns(db.lend().as_deref())?;
    Ok(Response::json(200, &landing_body(rx, &active)))
}

/// Writes the queued lookups' rows first, so the access log shows every lookup answered so far
/// (`pharmacies.drain-calls`). A failure is logged: the page shows what the log holds.
fn logs_caught_up() {
    if let Err(e) = pharmacies::drain_calls() {
        eprintln!("receta: writing the queued pharmacy calls: {e:?}");
    }
}

/// A medication on the landing: the prescription's medication without `order_id`.
#[derive(Serialize)]
struct LandingMedication<'a> {
    id: i64,
    presentation: &'a str,
    instructions: &'a str,
    qty: u32,
    drug_upc: &'a str,
    category: DrugCategory,
    drug: &'a str,
    cost: f64,
    bought: bool,
    bought_qty: u32,
    qty_label: &'a str,
    fraccion: Option<&'a str>,
    antibiotic: Option<bool>,
    qty_total: u32,
    substitution_allowed: bool,
}

fn landing_medication(m: &Medication) -> LandingMedication<'_> {
    LandingMedication {
        id: m.id,
        presentation: &m.presentation,
        instructions: &m.instructions,
        qty: m.qty,
        drug_upc: &m.drug_upc,
        category: m.category,
        drug: &m.drug,
        cost: m.cost,
        bought: m.bought,
        bought_qty: m.bought_qty,
        qty_label: &m.qty_label,
        fraccion: m.fraccion.as_deref(),
        antibiotic: m.antibiotic,
        qty_total: m.qty_total,
        substitution_allowed: m.substitution_allowed,
    }
}

/// The JSON landing: `medications` are the 2.5 objects without `order_id`; `campaigns` the active
/// ones (openapi/receta.json fields); `default_campaign` the default one if it is active, else null.
fn landing_body(rx: LandingRx, active: &[Campaign]) -> Value {
    // A draft lists no medications until its medic signs it.
    let draft = crate::views::rx_json::is_draft(rx.efirma.as_ref());
    let medications: Vec<LandingMedication> = match draft {
        true => Vec::new(),
        false => rx.medications.iter().map(landing_medication).collect(),
    };
    let default_campaign = active
        .iter()
        .find(|c| c.is_default)
        .map_or(Value::Null, landing_json);
    json!({
        "rx": {
            "signature": rx.signature,
            "raw_size": rx.raw_size,
            "created_at": rx.created_at,
            "medications": medications,
            "medic": { "name": rx.medic_name },
            "rx_status": crate::views::rx_json::public_status(rx.rx_status, rx.efirma.as_ref()),
            "reason_of_rejected": rx.reason_of_rejected,
            "seal": rx.seal,
            "valid_until": rx.valid_until,
            "fills": rx.fills,
            "sales": rx.sales,
            "pharmacy_status": crate::views::status_json::latest(&rx.status_updates),
            "pharmacy_status_history": crate::views::status_json::history(&rx.status_updates),
            "access_log": rx.access_log,
            "constancia": crate::views::rx_json::constancia(&rx.constancia),
            "efirma": rx.efirma.as_ref().map(crate::views::rx_json::efirma),
        },
        "campaigns": active.iter().map(landing_json).collect::<Vec<_>>(),
        "default_campaign": default_campaign,
    })
}

/// `GET /rx/<signature>` → 200 the landing page; 404 the friendly page.
pub fn page(signature: &str) -> Result<Response, Error> {
    logs_caught_up();
    let db = Db::open()?;
    match prescriptions::get_landing(db.lend().as_deref(), None, signature) {
        Ok(rx) => {
            let active = campaigns::active_campaigns(db.lend().as_deref())?;
            let whatsapp = patients::whatsapp_opt_in_of(db.lend().as_deref(), signature)?.is_some();
            Ok(html(200, landing_html::page(&rx, &active, whatsapp)))
        }
        Err(Error::NotFound(_)) => Ok(not_found()),
        Err(other) => Err(other),
    }
}

/// `POST /rx/<signature>/counter-code` → with `Accept: application/json`, 201 `{code, expires_at}`
/// or the error in the API's shape (404 unknown signature, 409 no valid CURP on the patient's
/// record, 429 past the issue limit); otherwise (the page's form) 200 a page showing the code, a
/// page saying why not (409, 429), or the friendly 404 page.
pub fn counter_code(req: &Request, signature: &str) -> Result<Response, Error> {
    let issued = patients::issue_counter_code(Db::open()?.lend().as_deref(), signature);
    patient_answer(req.wants_json(), signature, issued, |code| {
        (
            201,
            json!({"code": code.code, "expires_at": code.expires_at}),
            landing_html::counter_code_page(signature, &code.code, &code.expires_at),
        )
    })
}

/// `POST /rx/<signature>/whatsapp-opt-out` (the page's form, or JSON) → the patient withdraws their
/// WhatsApp opt-in: JSON 200 `{"whatsapp_opt_in": null}`; the form is answered 303 to the page.
/// 404 for an unknown signature. Withdrawing twice changes nothing.
pub fn whatsapp_opt_out(req: &Request, signature: &str) -> Result<Response, Error> {
    match patients::withdraw_whatsapp(Db::open()?.lend().as_deref(), signature) {
        Ok(()) if req.wants_json() => Ok(private(Response::json(
            200,
            &json!({"whatsapp_opt_in": null}),
        ))),
        Ok(()) => Ok(private(Response::bytes(
            303,
            "text/plain; charset=utf-8",
            Vec::new(),
        ))
        .with_header("location", format!("/rx/{signature}"))),
        Err(e) => patient_error(req.wants_json(), signature, e),
    }
}

/// `GET /rx/<signature>/consents` → with `Accept: application/json`, 200 `{consents, issuing_medic,
/// issuing_hospital}`; otherwise the page listing them with its forms. 404 unknown signature; 409
/// the patient's record has no valid CURP.
pub fn consents(req: &Request, signature: &str) -> Result<Response, Error> {
    let found = patients::list_consents(Db::open()?.lend().as_deref(), signature);
    patient_answer(req.wants_json(), signature, found, |c| {
        (
            200,
            consents_json(c),
            landing_html::consents_page(signature, c),
        )
    })
}

/// `POST /rx/<signature>/consents` `{medic}` or `{hospital}` (an id; JSON, or the page's form) →
/// JSON 201 the consent (200 when the same one already stands); the form is answered 303 to the
/// consents page. 400 naming the field; 404, 409 as `consents`.
pub fn give_consent(req: &Request, signature: &str) -> Result<Response, Error> {
    let (mut f, form) = req.form_or_json_fields()?;
    let medic = f.optional_i64("medic");
    let hospital = f.optional_i64("hospital");
    f.finish()?;
    let grantee = match (medic, hospital) {
        (Some(m), None) => Grantee::Medic(m),
        (None, Some(h)) => Grantee::Hospital(h),
        _ => {
            return Err(Error::Invalid(vec![FieldError {
                field: "medic".into(),
                messages: vec![
                    "Name one medic (`medic`) or one hospital (`hospital`) by id.".into(),
                ],
            }]));
        }
    };
    let via = if form {
        ConsentVia::PageForm
    } else {
        ConsentVia::PageJson
    };
    let given = patients::give_consent(Db::open()?.lend().as_deref(), signature, grantee, via)
        .map(|(consent, new)| (consent, if new { 201 } else { 200 }));
    consent_answer(req, form, signature, given)
}

/// `DELETE /rx/<signature>/consents/<id>` → 200 the consent, withdrawn (kept with `withdrawn_at`);
/// `POST …/<id>/withdraw` is the page's form for it (303 to the consents page). 404 when `id` is not
/// one of the person's consents; otherwise as `consents`.
pub fn withdraw_consent(
    req: &Request,
    signature: &str,
    id: &str,
    form: bool,
) -> Result<Response, Error> {
    let id = crate::http::path_id(id)?;
    let withdrawn = patients::withdraw_consent(Db::open()?.lend().as_deref(), signature, id)
        .map(|consent| (consent, 200));
    consent_answer(req, form, signature, withdrawn)
}

/// A consent change's answer: a form not asking for JSON goes back to the consents page (303:
/// POST, redirect, GET); otherwise the consent as JSON with `status`, or the refusal.
fn consent_answer(
    req: &Request,
    form: bool,
    signature: &str,
    result: Result<(Consent, u16), Error>,
) -> Result<Response, Error> {
    let back = form && !req.wants_json();
    match result {
        Ok(_) if back => Ok(private(Response::bytes(
            303,
            "text/plain; charset=utf-8",
            Vec::new(),
        ))
        .with_header("location", format!("/rx/{signature}/consents"))),
        Ok((consent, status)) => Ok(private(Response::json(status, &consent_json(&consent)))),
        Err(e) => patient_error(!back, signature, e),
    }
}

/// A patient-page call's answer: JSON with its status, or the page (200: a form's answer is the
/// page it shows).
fn patient_answer<T>(
    json: bool,
    signature: &str,
    result: Result<T, Error>,
    ok: impl FnOnce(&T) -> (u16, Value, String),
) -> Result<Response, Error> {
    let value = match result {
        Ok(value) => value,
        Err(e) => return patient_error(json, signature, e),
    };
    let (status, body, page) = ok(&value);
    Ok(match json {
        true => private(Response::json(status, &body)),
        false => html(200, page),
    })
}

/// A patient-page call's refusal: in the API's error shape for JSON; as a page otherwise (the
/// friendly 404, a page saying why for 400, 409 and 429).
pub fn patient_error(json: bool, signature: &str, e: Error) -> Result<Response, Error> {
    Ok(match (e, json) {
        (
            e @ (Error::NotFound(_)
            | Error::Conflict(_)
            | Error::Invalid(_)
            | Error::TooManyRequests(_)),
            true,
        ) => private(Response::error(e)),
        (Error::TooManyRequests(seconds), false) => html(
            429,
            landing_html::counter_refused_page(
                signature,
                "Pediste demasiados códigos en la última hora: espera un poco y vuelve a intentarlo.",
            ),
        )
        .with_header("retry-after", seconds.to_string()),
        (Error::NotFound(_), false) => not_found(),
        (Error::Conflict(_), false) => {
            html(409, landing_html::counter_refused_page(signature, NO_CURP))
        }
        (Error::Invalid(_), false) => html(
            400,
            landing_html::counter_refused_page(signature, "No encontramos a quién das el permiso."),
        ),
        (other, _) => return Err(other),
    })
}

/// The page's words when the patient's record has no valid CURP.
const NO_CURP: &str = "Tu receta no tiene una CURP válida: pide a tu médico que la agregue a tu \
    expediente y vuelve a intentarlo.";

fn consents_json(c: &PersonConsents) -> Value {
    json!({
        "consents": c.consents.iter().map(consent_json).collect::<Vec<_>>(),
        "issuing_medic": {"id": c.issuing_medic, "name": c.issuing_medic_name},
        "issuing_hospital": {"id": c.issuing_hospital, "name": c.issuing_hospital_name},
    })
}

/// A consent as the API shows it (docs/patients.md): whom (`medic` or `hospital`, the other
/// null, and `name`), when and how it was given, the folio of the prescription it was given on
/// (never its link) and whether that is this page's, and its withdrawal.
fn consent_json(c: &Consent) -> Value {
    let (medic, hospital) = match c.grantee {
        Grantee::Medic(m) => (Some(m), None),
        Grantee::Hospital(h) => (None, Some(h)),
    };
    json!({
        "id": c.id,
        "medic": medic,
        "hospital": hospital,
        "name": c.grantee_name,
        "given_at": c.given_at,
        "given_via": match c.given_via {
            ConsentVia::PageForm => "page_form",
            ConsentVia::PageJson => "page_json",
        },
        "given_on": c.given_on,
        "given_here": c.given_here,
        "withdrawn_at": c.withdrawn_at,
    })
}

/// `GET /rx/<signature>/pdf` → 200 `application/pdf` as an attachment; 404 the friendly page.
pub fn pdf(signature: &str) -> Result<Response, Error> {
    match prescriptions::get_landing_pdf(Db::open()?.lend().as_deref(), signature) {
        Ok(bytes) => Ok(private(Response::bytes(200, "application/pdf", bytes))
            .with_header(
                "content-disposition",
                format!(
                    "attachment; filename=\"{}\"",
                    landing_html::pdf_filename(signature)
                ),
            )
            .with_header("content-security-policy", "default-src 'none'; sandbox")),
        Err(Error::NotFound(_)) => Ok(not_found()),
        Err(other) => Err(other),
    }
}

/// The friendly 404 page, for any `/rx/…` path that names no prescription.
pub fn not_found() -> Response {
    html(404, landing_html::not_found_page())
}

pub fn html(status: u16, body: String) -> Response {
    private(Response::bytes(
        status,
        "text/html; charset=utf-8",
        body.into_bytes(),
    ))
    .with_header(
        "content-security-policy",
        landing_html::content_security_policy(),
    )
    .with_header("x-frame-options", "DENY")
}

/// The headers every public landing response carries: for the patient only, never indexed, never
/// stored by a shared cache, never leaked through a referrer.
pub fn private(response: Response) -> Response {
    response
        .with_header("cache-control", "private, no-store")
        .with_header("x-robots-tag", "noindex, nofollow")
        .with_header("referrer-policy", "no-referrer")
        .with_header("x-content-type-options", "nosniff")
}
