//! The person proves their other records theirs, on a prescription's page (docs/patients.md, "Who
//! speaks for whom"). No token: the signature opens the page, and a code sent to the email another
//! record's own medic recorded proves that record the person's.
//!
//! - `GET /rx/<signature>/records` → 200 `{records}` (JSON) or the page
//! - `POST /rx/<signature>/records/codes` → 202 `{message}` (JSON) or the page: a code to each
//!   other record's email, the same answer whether or not there is any
//! - `POST /rx/<signature>/records` `{code}` → 201 the linked record (200 when it already was), or
//!   303 back to the page for the form
//! - `DELETE /rx/<signature>/records/<id>` (the form: `POST …/<id>/unlink`) → 200 `{}` or 303

use serde_json::{Value, json};

use common::db::Db;
use common::types::Error;

use crate::bindings::notifications;
use crate::bindings::patients::{self, LinkedRecord};
use crate::http::{Request, Response};
use crate::landing::{patient_error, private};
use crate::views::records_html;

/// What a request for codes answers, whatever it found.
const SENT: &str = "If you have prescriptions from other medics whose record has an email, a code \
    was sent to each of those emails. Enter it on this page within 30 minutes.";

/// `GET /rx/<signature>/records`.
pub fn list(req: &Request, signature: &str) -> Result<Response, Error> {
    match patients::linked_records(Db::open()?.lend().as_deref(), signature) {
        Ok(records) => Ok(answer(req, signature, &records, false)),
        Err(e) => patient_error(req.wants_json(), signature, e),
    }
}

/// `POST /rx/<signature>/records/codes`: makes the codes and queues their emails.
pub fn send_codes(req: &Request, signature: &str) -> Result<Response, Error> {
    let db = Db::open()?;
    let codes = match patients::request_link_codes(db.lend().as_deref(), signature) {
        Ok(codes) => codes,
        Err(e) => return patient_error(req.wants_json(), signature, e),
    };
    for c in &codes {
        notifications::queue_link_code(db.lend().as_deref(), c.prescription, &c.to, &c.code)?;
    }
    if req.wants_json() {
        return Ok(private(Response::json(202, &json!({"message": SENT}))));
    }
    let records = patients::linked_records(db.lend().as_deref(), signature)?;
    Ok(answer(req, signature, &records, true))
}

/// `POST /rx/<signature>/records` `{code}` (JSON or the page's form).
pub fn confirm(req: &Request, signature: &str) -> Result<Response, Error> {
    let (mut f, form) = req.form_or_json_fields()?;
    let code = f.required_str("code", Some(64));
    let code = f.finish_then(|| code)?;
    let back = form && !req.wants_json();
    match patients::confirm_link(Db::open()?.lend().as_deref(), signature, code.trim()) {
        Ok(_) if back => Ok(to_page(signature)),
        Ok((record, new)) => Ok(private(Response::json(
            if new { 201 } else { 200 },
            &record_json(&record),
        ))),
        Err(e) => patient_error(!back, signature, e),
    }
}

/// `DELETE /rx/<signature>/records/<id>`, or the form's `POST …/<id>/unlink` (`form`).
pub fn unlink(req: &Request, signature: &str, id: &str, form: bool) -> Result<Response, Error> {
    let id = crate::http::path_id(id)?;
    let back = form && !req.wants_json();
    match patients::unlink_record(Db::open()?.lend().as_deref(), signature, id) {
        Ok(()) if back => Ok(to_page(signature)),
        Ok(()) => Ok(private(Response::json(200, &json!({})))),
        Err(e) => patient_error(!back, signature, e),
    }
}

/// A linked record as the API shows it: the link's id, the record's medic by name, how and when
/// it was proved. Nothing of the record itself.
fn record_json(r: &LinkedRecord) -> Value {
    json!({
        "id": r.id,
        "medic": {"name": r.medic_name},
        "channel": r.channel,
        "confirmed_at": r.confirmed_at,
    })
}

/// The page's records: 200 as JSON, or the page (`sent`: codes were just asked for).
fn answer(req: &Request, signature: &str, records: &[LinkedRecord], sent: bool) -> Response {
    match req.wants_json() {
        true => private(Response::json(
            200,
            &json!({"records": records.iter().map(record_json).collect::<Vec<_>>()}),
        )),
        false => crate::landing::html(200, records_html::page(signature, records, sent)),
    }
}

/// The form's answer: back to the page (303: POST, redirect, GET).
fn to_page(signature: &str) -> Response {
    private(Response::bytes(
        303,
        "text/plain; charset=utf-8",
        Vec::new(),
    ))
    .with_header("location", format!("/rx/{signature}/records"))
}
