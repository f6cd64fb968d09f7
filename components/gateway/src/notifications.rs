//! Notifications: resending a prescription's email (its medic or the API admin), and, for the API
//! admin, webhook subscriptions (`/api/v2/webhooks/`) and the delivery log (`/api/v2/deliveries/`).
//!
//! Deliveries are durable outbox rows; whatever queues one (a create, a resend, a replay) leaves it to
//! the outbox worker, whose cron trigger delivers due rows every second, retries included: no
//! request waits for a relay or a receiver, nor holds its instance for one (docs/notifications.md).

use serde::Serialize;
use serde_json::{Value, json};

use common::db::Db;
use common::fields::{Fields, is_valid_email};
use common::types::{Error, PageRequest, Principal, RxEvent};

use crate::bindings::catalog;
use crate::bindings::notifications::{
    self, Attempt, Delivery, DeliveryFilter, DeliveryKind, DeliveryStatus, ListedMedic, NewWebhook,
    Webhook,
};
use crate::bindings::prescriptions;
use crate::http::{Request, Response, path_id};
use crate::roles::Admin;

/// Hospitals, and medics, one subscription may list.
const MAX_LISTED: usize = 100;
/// Addresses in `cc`, at most.
const MAX_CC: usize = 10;
const URL_UNDER: Option<usize> = Some(2001);

/// `POST /api/v2/rx/resend/<signature>/` `{email?, cc?}` (the issuing medic or the API admin) → 200
/// `{message}`; the email goes to `email` (default: the patient's) with `cc` (addresses separated by
/// commas, semicolons or spaces) copied. 404 `{message}` naming the signature; 403 when the hospital
/// does not send emails; 429 `{message}` with `Retry-After` over the resend limits (at most
/// `resends_per_prescription_hour` resends of one prescription, and `resend_recipients_per_hour`
/// recipients per caller, an hour: docs/notifications.md), nothing queued.
pub fn resend(req: &Request, caller: Principal, signature: &str) -> Result<Response, Error> {
    let db = Db::open()?;
    let rx = match prescriptions::get_by_signature(
        db.lend().as_deref(),
        &prescriptions::Reader::Caller(caller),
        signature,
    ) {
        Ok(rx) => rx,
        Err(Error::NotFound(_)) => {
            let shown: String = signature.chars().take(128).collect();
            return Err(Error::NotFound(format!(
                "Prescription with signature \"{shown}\" not found."
            )));
        }
        Err(other) => return Err(other),
    };
    crate::views::rx_json::issued(&rx)?;
    let mut f = req.json_fields_or_empty()?;
    let email = f
        .optional_str("email", Some(255))
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| rx.patient.email.trim().to_string());
    if email.is_empty() {
        f.error(
            "email",
            "This field is required: the patient has no email address.",
        );
    } else if !is_valid_email(&email) {
        f.error("email", common::fields::BAD_EMAIL);
    }
    let cc_text = f.optional_str("cc", Some(1024)).unwrap_or_default();
    let cc: Vec<String> = cc_text
        .split([',', ';', ' ', '\n', '\t'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if let Some(bad) = cc.iter().find(|c| !is_valid_email(c)) {
        f.error("cc", format!("\"{bad}\" is not a valid email address."));
    } else if cc.len() > MAX_CC {
        f.error("cc", format!("At most {MAX_CC} addresses."));
    }
    f.finish()?;
    let db = Db::open()?;
    if !catalog::hospital_sends_emails(db.lend().as_deref(), rx.hospital.id)? {
        return Err(Error::forbidden(
            "This prescription's hospital does not send emails (send_emails is false).",
        ));
    }
    match notifications::resend_email(
        db.lend().as_deref(),
        caller,
        rx.id,
        std::slice::from_ref(&email),
        &cc,
    ) {
        Ok(_) => {}
        Err(Error::TooManyRequests(seconds)) => {
            return Ok(Response::message(
                429,
                &format!(
                    "Resend limit reached: this prescription was resent too often, or this caller \
                     sent it to too many recipients, in the last hour. Try again in {seconds} s."
                ),
            )
            .with_header("retry-after", seconds.to_string()));
        }
        Err(other) => return Err(other),
    }
    let message = if cc.is_empty() {
        format!("The prescription has been resent to {email}.")
    } else {
        format!(
            "The prescription has been resent to {email} (cc: {}).",
            cc.join(", ")
        )
    };
    Ok(Response::message(200, &message))
}

/// `POST /api/v2/webhooks/` `{url, hospitals: [ids], medics: [ids or emails], events?}` (API admin)
/// → 201 Webhook with its `secret` (shown only here). `events` (default `["prescription.created"]`)
/// chooses what it receives. 400 when a hospital or medic does not exist, when neither list names
/// anything, for an unknown or empty `events`, or when the URL does not answer a test POST with 2xx
/// (or the manifest does not allow its host).
pub fn create_webhook(req: &Request, admin: Admin) -> Result<Response, Error> {
    // The caller's own principal (the API admin's): the look-ups below see every hospital and
    // medic because the caller may.
    let caller = admin.principal();
    let mut f = req.json_fields()?;
    let url = f.required_str("url", URL_UNDER);
    let hospitals = hospitals(&mut f, caller)?;
    let medics = medics(&mut f, caller);
    let events = events(&mut f);
    if !f.has_errors() && hospitals.is_empty() && medics.is_empty() {
        f.error(
            "hospitals",
            "List at least one hospital or one medic to be notified about.",
        );
    }
    let input = f.finish_then(|| {
        Some(NewWebhook {
            url: url?.trim().to_string(),
            hospitals,
            medics,
            events,
        })
    })?;
    let created = notifications::create_webhook(&input)?;
    Ok(Response::json(201, &webhook_json(created)))
}

/// `GET /api/v2/webhooks/?limit&offset` (API admin) → 200 paginated Webhooks (no secrets).
pub fn list_webhooks(req: &Request, _: Admin) -> Result<Response, Error> {
    let page = req.page()?;
    let found = notifications::list_webhooks(page)?;
    let results: Vec<Value> = found.results.into_iter().map(webhook_json).collect();
    Ok(Response::page(req, &page, found.count, &results))
}

/// `GET /api/v2/webhooks/<id>/` (API admin) → 200 Webhook; 404.
pub fn get_webhook(id: &str, _: Admin) -> Result<Response, Error> {
    let webhook = notifications::get_webhook(path_id(id)?)?;
    Ok(Response::json(200, &webhook_json(webhook)))
}

/// `DELETE /api/v2/webhooks/<id>/` (API admin) → 204; its pending deliveries end. 404.
pub fn delete_webhook(id: &str, _: Admin) -> Result<Response, Error> {
    notifications::delete_webhook(path_id(id)?)?;
    Ok(Response::no_content())
}

/// The delivery kinds and statuses by their API names.
const KINDS: [(&str, DeliveryKind); 2] = [
    ("email", DeliveryKind::Email),
    ("webhook", DeliveryKind::Webhook),
];
pub(crate) const STATUSES: [(&str, DeliveryStatus); 3] = [
    ("pending", DeliveryStatus::Pending),
    ("done", DeliveryStatus::Done),
    ("dead", DeliveryStatus::Dead),
];

/// The API name of a kind or status.
pub(crate) fn name_of<T: PartialEq + Copy>(table: &[(&'static str, T)], value: T) -> &'static str {
    table
        .iter()
        .find(|(_, v)| *v == value)
        .map_or("", |(name, _)| name)
}

/// `GET /api/v2/deliveries/?kind&status&signature&webhook&limit&offset` (API admin) → 200 paginated
/// deliveries (emails and webhooks), newest first.
pub fn list_deliveries(req: &Request, _: Admin) -> Result<Response, Error> {
    let page = req.page()?;
    let q = req.query();
    let mut errors = Fields::from_map(Default::default());
    let kind = q.choice(&mut errors, "kind", &KINDS);
    let status = q.choice(&mut errors, "status", &STATUSES);
    let subscription = match q.get("webhook").filter(|v| !v.is_empty()) {
        None => None,
        Some(v) => match v.parse::<i64>() {
            Ok(n) => Some(n),
            Err(_) => {
                errors.error("webhook", "A valid integer is required.");
                None
            }
        },
    };
    errors.finish()?;
    let filter = DeliveryFilter {
        kind,
        status,
        signature: q
            .get("signature")
            .filter(|v| !v.is_empty())
            .map(str::to_string),
        subscription,
    };
    let found = notifications::list_deliveries(&filter, page)?;
    let results = found
        .results
        .iter()
        .map(|d| delivery_view(d, false))
        .collect::<Vec<_>>();
    Ok(Response::page(req, &page, found.count, &results))
}

/// `GET /api/v2/deliveries/<id>/` (API admin) → 200 delivery with every attempt (`history`); 404.
pub fn get_delivery(id: &str, _: Admin) -> Result<Response, Error> {
    let delivery = notifications::get_delivery(path_id(id)?)?;
    Ok(Response::json(200, &delivery_view(&delivery, true)))
}

/// `POST /api/v2/deliveries/<id>/replay/` (API admin) → 200 the delivery, due now with a fresh retry
/// schedule, delivered by the outbox worker within a second (a webhook keeps its `webhook-id`). 400 when its
/// subscription was deleted or disabled, or an attempt is under way; 404.
pub fn replay(id: &str, _: Admin) -> Result<Response, Error> {
    let delivery = notifications::replay_delivery(path_id(id)?)?;
    Ok(Response::json(200, &delivery_view(&delivery, true)))
}

/// `hospitals`: a list of existing hospital ids (default empty). A hospital that cannot be looked
/// up (the database failing) is the request's failure, not a field error.
fn hospitals(f: &mut Fields, caller: Principal) -> Result<Vec<i64>, Error> {
    let Some(items) = list(f, "hospitals") else {
        return Ok(Vec::new());
    };
    let mut ids = Vec::with_capacity(items.len());
    for item in items {
        let Some(id) = item.as_i64() else {
            f.error(
                "hospitals",
                format!("{item} is not a hospital id (an integer)."),
            );
            continue;
        };
        match catalog::get_hospital(caller, id) {
            Ok(_) => ids.push(id),
            Err(Error::NotFound(_)) => {
                f.error("hospitals", format!("Hospital {id} does not exist."))
            }
            Err(other) => return Err(other),
        }
    }
    Ok(ids)
}

/// `medics`: a list of existing medics by id or email (default empty).
fn medics(f: &mut Fields, caller: Principal) -> Vec<ListedMedic> {
    let Some(items) = list(f, "medics") else {
        return Vec::new();
    };
    let mut medics = Vec::with_capacity(items.len());
    for item in items {
        let found = match &item {
            Value::Number(n) => n.as_i64().and_then(medic_by_id).map(|m| m.id),
            Value::String(email) => medic_by_email(email.trim(), caller),
            _ => {
                f.error(
                    "medics",
                    format!("{item} is not a medic id (an integer) or email (a string)."),
                );
                continue;
            }
        };
        match found {
            Some(id) => medics.push(ListedMedic {
                id,
                given: item.to_string(),
            }),
            None => f.error("medics", format!("Medic {item} does not exist.")),
        }
    }
    medics
}

/// A JSON list field (absent or null: `None`), at most `MAX_LISTED` items.
fn list(f: &mut Fields, field: &str) -> Option<Vec<Value>> {
    match f.raw(field) {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) if items.len() <= MAX_LISTED => Some(items.clone()),
        Some(Value::Array(_)) => {
            f.error(
                field,
                format!("Ensure this field has no more than {MAX_LISTED} elements."),
            );
            None
        }
        Some(_) => {
            f.error(field, "Expected a list.");
            None
        }
    }
}

/// `events`: a non-empty list of event names (`common::events`); absent or null means
/// `["prescription.created"]`, so a registration that never heard of events behaves as before.
fn events(f: &mut Fields) -> Vec<RxEvent> {
    let items = match f.raw("events") {
        None | Some(Value::Null) => return vec![RxEvent::Created],
        Some(Value::Array(items)) if items.is_empty() => {
            f.error("events", "This list may not be empty.");
            return Vec::new();
        }
        Some(Value::Array(items)) => items.clone(),
        Some(_) => {
            f.error("events", "Expected a list.");
            return Vec::new();
        }
    };
    let allowed = || common::events::ALL.map(common::events::name).join(", ");
    let mut events = Vec::with_capacity(items.len());
    for item in items {
        match item.as_str().and_then(common::events::parse) {
            Some(e) if !events.contains(&e) => events.push(e),
            Some(_) => {}
            None => f.error(
                "events",
                format!(
                    "{item} is not a valid choice. Allowed values: {}.",
                    allowed()
                ),
            ),
        }
    }
    events
}

/// The id of the medic with this email (ASCII case-insensitive), if any.
fn medic_by_email(email: &str, caller: Principal) -> Option<i64> {
    if !is_valid_email(email) {
        return None;
    }
    let page = PageRequest {
        limit: 100,
        offset: 0,
    };
    catalog::search_medics(caller, email, page)
        .ok()?
        .results
        .into_iter()
        .find(|m| m.email.eq_ignore_ascii_case(email))
        .map(|m| m.id)
}

/// A subscription as the API shows it: `medics` as they were given (ids or emails); `secret` only
/// in the creation response.
fn webhook_json(w: Webhook) -> Value {
    let medics: Vec<Value> = w
        .medics
        .iter()
        .map(|m| serde_json::from_str(&m.given).unwrap_or(json!(m.id)))
        .collect();
    let mut v = json!({
        "id": w.id,
        "url": w.url,
        "hospitals": w.hospitals,
        "medics": medics,
        "events": w.events.iter().map(|e| common::events::name(*e)).collect::<Vec<_>>(),
        "created_at": w.created_at,
        "active": w.active,
        "disabled_at": w.disabled_at,
    });
    if let Some(secret) = w.secret {
        v["secret"] = json!(secret);
    }
    v
}

/// A delivery as the admin sees it: the fields of its kind only (`to`/`cc` for an email row,
/// `subscription`/`webhook_id` for a webhook row), and `history` in the detail only.
#[derive(Serialize)]
struct DeliveryView<'a> {
    id: i64,
    kind: &'a str,
    prescription: i64,
    signature: &'a str,
    target: &'a str,
    status: &'a str,
    attempts: u32,
    next_attempt_at: &'a str,
    created_at: &'a str,
    updated_at: &'a str,
    last_error: &'a Option<String>,
    #[serde(flatten)]
    recipients: Recipients<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    history: Option<&'a [Attempt]>,
}

/// Who a delivery goes to, by kind.
#[derive(Serialize)]
#[serde(untagged)]
enum Recipients<'a> {
    Email {
        to: &'a [String],
        cc: &'a [String],
    },
    Webhook {
        subscription: Option<i64>,
        webhook_id: &'a Option<String>,
    },
}

fn delivery_view(d: &Delivery, with_history: bool) -> DeliveryView<'_> {
    DeliveryView {
        id: d.id,
        kind: name_of(&KINDS, d.kind),
        prescription: d.prescription,
        signature: &d.signature,
        target: &d.target,
        status: name_of(&STATUSES, d.status),
        attempts: d.attempts,
        next_attempt_at: &d.next_attempt_at,
        created_at: &d.created_at,
        updated_at: &d.updated_at,
        last_error: &d.last_error,
        recipients: if d.kind == DeliveryKind::Email {
            Recipients::Email {
                to: &d.to,
                cc: &d.cc,
            }
        } else {
            Recipients::Webhook {
                subscription: d.subscription,
                webhook_id: &d.webhook_id,
            }
        },
        history: with_history.then_some(d.history.as_slice()),
    }
}

/// A medic by id, through the request's connection; `None` also when the database cannot be read
/// (the caller then reports the id as unknown, as before).
fn medic_by_id(id: i64) -> Option<catalog::MedicProfile> {
    catalog::get_medic(Db::open().ok()?.lend().as_deref(), id)
}
