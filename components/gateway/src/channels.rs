//! The patient's SMS and WhatsApp (docs/notifications.md, "SMS and WhatsApp"):
//!
//! - `GET|POST /api/v2/channels/whatsapp/webhook/`: Meta's subscription check and its delivery
//!   receipts (signed `X-Hub-Signature-256`, checked by the notifications component);
//! - `POST /api/v2/channels/twilio/status/`: Twilio's status callbacks (signed
//!   `X-Twilio-Signature`);
//! - `GET /api/v2/rx-endpoint/<signature>/messages/` (its medic, the API admin): every email, SMS
//!   and WhatsApp message that went, or is going, to the patient about the prescription;
//! - `GET /api/v2/messages/`, `POST /api/v2/messages/<id>/replay/` (the API admin).
//!
//! The receipts' routes take no token: the provider's signature over the request is the proof, and
//! a request without a good one changes nothing (403).

use serde::Serialize;
use serde_json::json;

use common::db::Db;
use common::fields::Fields;
use common::types::{Error, PageRequest, Principal};

use crate::bindings::notifications::{
    self, Delivery, DeliveryFilter, DeliveryKind, DeliveryStatus, Message, MessageChannel,
    MessageFilter, MessageReceipt,
};
use crate::bindings::prescriptions;
use crate::http::{Request, Response, path_id};
use crate::notifications::{STATUSES, name_of};
use crate::roles::Admin;

/// `GET /api/v2/channels/whatsapp/webhook/?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…`
/// → 200 `text/plain` the challenge, when the token is `whatsapp_verify_token`; 403 otherwise.
pub fn whatsapp_challenge(req: &Request) -> Result<Response, Error> {
    let q = req.query();
    let get = |key: &str| q.get(key).unwrap_or_default().to_string();
    let challenge = notifications::whatsapp_challenge(
        &get("hub.mode"),
        &get("hub.verify_token"),
        &get("hub.challenge"),
    )?;
    Ok(Response::bytes(200, "text/plain", challenge.into_bytes()))
}

/// `POST /api/v2/channels/whatsapp/webhook/` (Meta, signed) → 200 `{"updated": n}`: the statuses of
/// the messages it names recorded; 403 `{message}` when the signature is missing or wrong.
pub fn whatsapp_receipts(req: &Request) -> Result<Response, Error> {
    let signature = req.header("x-hub-signature-256").map(str::to_string);
    let updated = notifications::whatsapp_receipts(req.body(), signature.as_deref())?;
    Ok(Response::json(200, &json!({ "updated": updated })))
}

/// `POST /api/v2/channels/twilio/status/` (Twilio, form-encoded, signed) → 200 `{"updated": n}`;
/// 403 `{message}` when the signature is missing or wrong.
pub fn twilio_status(req: &Request) -> Result<Response, Error> {
    let fields: Vec<(String, String)> = form_urlencoded::parse(req.body())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let signature = req.header("x-twilio-signature").map(str::to_string);
    let updated = notifications::twilio_receipt(&fields, signature.as_deref())?;
    Ok(Response::json(200, &json!({ "updated": updated })))
}

/// One message to the patient, whichever its channel, as the medic's list shows it.
#[derive(Serialize)]
struct Sent<'a> {
    channel: &'static str,
    id: i64,
    to: &'a str,
    /// `issued`, or the pharmacy's status it tells.
    about: &'a str,
    /// `pending`, `sent` (the relay or provider took it), `delivered`, `read` (the provider's
    /// receipts), `failed`.
    status: &'static str,
    attempts: u32,
    last_error: &'a Option<String>,
    provider_id: Option<&'a str>,
    receipt_at: Option<&'a str>,
    created_at: &'a str,
    updated_at: &'a str,
}

/// `GET /api/v2/rx-endpoint/<signature>/messages/` (the issuing medic or the API admin; anyone else
/// 404) → 200 `{count, results}`: the prescription's messages to its patient, every channel, in the
/// order they were queued.
pub fn of_prescription(caller: Principal, signature: &str) -> Result<Response, Error> {
    let db = Db::open()?;
    // Not a read of the prescription (the access log's kind): only whose it is.
    let rx = match prescriptions::get_for_pharmacy(db.lend().as_deref(), signature) {
        Ok(view) => view.prescription,
        Err(Error::NotFound(_)) => return Err(Error::not_found()),
        Err(other) => return Err(other),
    };
    if matches!(caller, Principal::Medic(medic) if medic != rx.medic_id) {
        return Err(Error::not_found());
    }
    let emails = notifications::list_deliveries(
        &DeliveryFilter {
            kind: Some(DeliveryKind::Email),
            status: None,
            signature: Some(rx.signature.clone()),
            subscription: None,
        },
        PageRequest {
            limit: 1000,
            offset: 0,
        },
    )?;
    let messages = notifications::messages_of(db.lend().as_deref(), rx.id)?;
    let mut results: Vec<(&str, Sent)> = emails
        .results
        .iter()
        .map(|d| (d.created_at.as_str(), email(d)))
        .chain(messages.iter().map(|m| (m.created_at.as_str(), phone(m))))
        .collect();
    results.sort_by(|a, b| a.0.cmp(b.0));
    let results: Vec<Sent> = results.into_iter().map(|(_, s)| s).collect();
    Ok(Response::json(
        200,
        &json!({"count": results.len(), "results": results}),
    ))
}

fn email(d: &Delivery) -> Sent<'_> {
    Sent {
        channel: "email",
        id: d.id,
        to: &d.target,
        about: "issued",
        status: match d.status {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Done => "sent",
            DeliveryStatus::Dead => "failed",
        },
        attempts: d.attempts,
        last_error: &d.last_error,
        provider_id: None,
        receipt_at: None,
        created_at: &d.created_at,
        updated_at: &d.updated_at,
    }
}

fn phone(m: &Message) -> Sent<'_> {
    Sent {
        channel: name_of(&CHANNELS, m.channel),
        id: m.id,
        to: &m.to,
        about: &m.about,
        status: shown_status(m),
        attempts: m.attempts,
        last_error: &m.last_error,
        provider_id: m.provider_id.as_deref(),
        receipt_at: m.receipt_at.as_deref(),
        created_at: &m.created_at,
        updated_at: &m.updated_at,
    }
}

/// Where a message stands for its reader: the queue's word until the provider took it, then the
/// provider's last receipt.
fn shown_status(m: &Message) -> &'static str {
    match (m.status, m.receipt) {
        (DeliveryStatus::Pending, _) => "pending",
        (DeliveryStatus::Dead, _) => "failed",
        (DeliveryStatus::Done, None | Some(MessageReceipt::Sent)) => "sent",
        (DeliveryStatus::Done, Some(MessageReceipt::Delivered)) => "delivered",
        (DeliveryStatus::Done, Some(MessageReceipt::Read)) => "read",
        (DeliveryStatus::Done, Some(MessageReceipt::Failed)) => "failed",
    }
}

const CHANNELS: [(&str, MessageChannel); 2] = [
    ("sms", MessageChannel::Sms),
    ("whatsapp", MessageChannel::Whatsapp),
];

/// A message as the admin's calls show it.
#[derive(Serialize)]
struct MessageView<'a> {
    id: i64,
    channel: &'static str,
    prescription: i64,
    signature: &'a str,
    to: &'a str,
    about: &'a str,
    /// The queue's: `pending`, `done` (the provider took it), `dead`.
    status: &'static str,
    /// Its reader's (`shown_status`).
    delivery: &'static str,
    attempts: u32,
    next_attempt_at: &'a str,
    last_error: &'a Option<String>,
    provider_id: &'a Option<String>,
    receipt_at: &'a Option<String>,
    receipt_error: &'a Option<String>,
    created_at: &'a str,
    updated_at: &'a str,
}

fn view(m: &Message) -> MessageView<'_> {
    MessageView {
        id: m.id,
        channel: name_of(&CHANNELS, m.channel),
        prescription: m.prescription,
        signature: &m.signature,
        to: &m.to,
        about: &m.about,
        status: name_of(&STATUSES, m.status),
        delivery: shown_status(m),
        attempts: m.attempts,
        next_attempt_at: &m.next_attempt_at,
        last_error: &m.last_error,
        provider_id: &m.provider_id,
        receipt_at: &m.receipt_at,
        receipt_error: &m.receipt_error,
        created_at: &m.created_at,
        updated_at: &m.updated_at,
    }
}

/// `GET /api/v2/messages/?channel&status&signature&limit&offset` (API admin) → 200 paginated
/// messages, newest first; 400 on a filter that is not one of its values.
pub fn list(req: &Request, _: Admin) -> Result<Response, Error> {
    let page = req.page()?;
    let q = req.query();
    let mut errors = Fields::from_map(Default::default());
    let channel = q.choice(&mut errors, "channel", &CHANNELS);
    let status = q.choice(&mut errors, "status", &STATUSES);
    errors.finish()?;
    let filter = MessageFilter {
        channel,
        status,
        signature: q
            .get("signature")
            .filter(|v| !v.is_empty())
            .map(str::to_string),
    };
    let found = notifications::list_messages(&filter, page)?;
    let results: Vec<MessageView> = found.results.iter().map(view).collect();
    Ok(Response::page(req, &page, found.count, &results))
}

/// `POST /api/v2/messages/<id>/replay/` (API admin) → 200 the message, due now with a fresh
/// schedule; 400 while an attempt is in flight; 404.
pub fn replay(id: &str, _: Admin) -> Result<Response, Error> {
    let message = notifications::replay_message(path_id(id)?)?;
    Ok(Response::json(200, &view(&message)))
}
