//! Webhook subscriptions (tables `webhooks`, `webhook_hospitals`, `webhook_medics`, migration 0005,
//! and `webhook_events`, 0008): registration (with a signed ping the URL must answer 2xx), listing,
//! deletion, and `plan`, which picks the subscriptions a prescription event goes to.

use std::time::Duration;

use serde_json::{Value, json};

use common::db::{Db, Param, int, text};
use common::types::{Error, FieldError, MedicKey, PageRequest, RxEvent, WebhookDelivery};
use spin_sdk::sqlite3::QueryResult;

use crate::bindings::exports::receta::notifications::notifications::{
    ListedMedic, NewWebhook, Webhook, WebhookPage,
};
use crate::signing;
use outbound::send::{self, Failure};
use outbound::target::Target;

/// The longest a registration waits for the URL's answer to the ping.
pub const PING_TIMEOUT: Duration = Duration::from_secs(5);
/// The ping's body: not a prescription event, so receivers can tell it apart.
pub const PING_BODY: &str = r#"{"type":"webhook.ping"}"#;

const INSERT_WEBHOOK: &str =
    "INSERT INTO webhooks (url, secret, created_at) VALUES (?, ?, ?) RETURNING id";
const INSERT_HOSPITAL: &str =
    "INSERT INTO webhook_hospitals (webhook_id, position, hospital_id) VALUES (?, ?, ?)";
const INSERT_MEDIC: &str =
    "INSERT INTO webhook_medics (webhook_id, position, medic_id, given) VALUES (?, ?, ?, ?)";
const INSERT_EVENT: &str = "INSERT INTO webhook_events (webhook_id, event) VALUES (?, ?)";
/// An event 0008's CHECK on `webhook_events` does not list goes in 0028's `webhook_later_events`.
const INSERT_LATER_EVENT: &str =
    "INSERT INTO webhook_later_events (webhook_id, event) VALUES (?, ?)";

const COLUMNS: &str = "id, url, created_at, disabled_at";
const COUNT: &str = "SELECT COUNT(*) FROM webhooks WHERE deleted_at IS NULL";
const PAGE: &str = "SELECT id, url, created_at, disabled_at FROM webhooks WHERE deleted_at IS NULL \
    ORDER BY id LIMIT ? OFFSET ?";
const HOSPITALS_OF: &str =
    "SELECT hospital_id FROM webhook_hospitals WHERE webhook_id = ? ORDER BY position";
const MEDICS_OF: &str =
    "SELECT medic_id, given FROM webhook_medics WHERE webhook_id = ? ORDER BY position";
const EVENTS_OF: &str = "SELECT event FROM webhook_events WHERE webhook_id = ?1 \
    UNION ALL SELECT event FROM webhook_later_events WHERE webhook_id = ?1";

fn by_id_sql() -> String {
    format!("SELECT {COLUMNS} FROM webhooks WHERE id = ? AND deleted_at IS NULL")
}

/// `?1` now, `?2` id.
const DELETE: &str = "UPDATE webhooks SET deleted_at = ?1, secret = '' \
    WHERE id = ?2 AND deleted_at IS NULL RETURNING id";
/// A deleted subscription's pending deliveries end (a worker holding one finds it dead when done).
const END_PENDING: &str = "UPDATE outbox SET status = 'dead', updated_at = ?1, \
    last_error = 'the webhook subscription was deleted' \
    WHERE kind = 'webhook' AND status = 'pending' AND json_extract(payload, '$.subscription') = ?2";

/// A receiver answered 410 Gone: `?1` now, `?2` id.
const DISABLE: &str = "UPDATE webhooks SET disabled_at = ?1 WHERE id = ?2 AND disabled_at IS NULL";

/// The active subscriptions that list medic `?1` or hospital `?2` and chose event `?3` (a
/// subscription with no `webhook_events` or `webhook_later_events` rows chose
/// `prescription.created` only).
const MATCHING: &str = "SELECT w.id, w.url FROM webhooks w \
    WHERE w.deleted_at IS NULL AND w.disabled_at IS NULL AND ( \
      EXISTS (SELECT 1 FROM webhook_medics m WHERE m.webhook_id = w.id AND m.medic_id = ?1) \
      OR EXISTS (SELECT 1 FROM webhook_hospitals h WHERE h.webhook_id = w.id AND h.hospital_id = ?2)) \
    AND (EXISTS (SELECT 1 FROM webhook_events e WHERE e.webhook_id = w.id AND e.event = ?3) \
      OR EXISTS (SELECT 1 FROM webhook_later_events e WHERE e.webhook_id = w.id AND e.event = ?3) \
      OR (?3 = 'prescription.created' \
          AND NOT EXISTS (SELECT 1 FROM webhook_events e WHERE e.webhook_id = w.id) \
          AND NOT EXISTS (SELECT 1 FROM webhook_later_events e WHERE e.webhook_id = w.id))) \
    ORDER BY w.id";

const SIGNING_STATE: &str = "SELECT secret, disabled_at, deleted_at FROM webhooks WHERE id = ?";

/// Registers a subscription after its URL answered the ping with 2xx.
pub fn create(input: NewWebhook) -> Result<Webhook, Error> {
    let target = Target::parse(&input.url).map_err(|m| Error::field("url", m))?;
    let mut hospitals = input.hospitals;
    dedup(&mut hospitals, |h| *h);
    let mut medics = input.medics;
    dedup(&mut medics, |m| m.id);
    // In the documented order (that of `common::events::ALL`), as the list and detail show them.
    let mut events = input.events;
    events.sort_by_key(|e| *e as u8);
    events.dedup();
    let secret = signing::new_secret();
    ping(&target, &secret)?;

    let db = Db::open()?;
    let now = common::time::now_iso8601();
    let url = input.url.trim().to_string();
    let id = db.transaction(|db| -> Result<i64, Error> {
        let id = db
            .query_opt(
                INSERT_WEBHOOK,
                &[text(&url), text(&secret), text(&now)],
                |r| r.i64("id"),
            )?
            .ok_or_else(|| anyhow::anyhow!("INSERT … RETURNING returned no row"))?;
        for (position, hospital) in hospitals.iter().enumerate() {
            db.execute(
                INSERT_HOSPITAL,
                &[int(id), int(position as i64), int(*hospital)],
            )?;
        }
        for (position, medic) in medics.iter().enumerate() {
            db.execute(
                INSERT_MEDIC,
                &[
                    int(id),
                    int(position as i64),
                    int(medic.id),
                    text(&medic.given),
                ],
            )?;
        }
        for event in &events {
            let sql = match event {
                RxEvent::StatusChanged => INSERT_LATER_EVENT,
                _ => INSERT_EVENT,
            };
            db.execute(sql, &[int(id), text(common::events::name(*event))])?;
        }
        Ok(id)
    })?;
    Ok(Webhook {
        id,
        url,
        hospitals,
        medics,
        events,
        secret: Some(secret),
        created_at: now,
        active: true,
        disabled_at: None,
    })
}

/// POSTs a signed ping; anything but a 2xx answer is `invalid` on `url`, saying why.
fn ping(target: &Target, secret: &str) -> Result<(), Error> {
    let id = signing::new_message_id();
    let timestamp = unix_seconds();
    let mut headers = signing::headers(secret, &id, timestamp, PING_BODY.as_bytes())
        .map_err(|e| anyhow::anyhow!(e))?;
    headers.push(("content-type".into(), b"application/json".to_vec()));
    headers.push((
        "user-agent".into(),
        crate::config::USER_AGENT.as_bytes().to_vec(),
    ));
    let answer = spin_sdk::http::run(send::post(
        target,
        &headers,
        PING_BODY.as_bytes().to_vec(),
        PING_TIMEOUT,
    ));
    let origin = target.origin();
    let message = match answer {
        Ok(a) if (200..300).contains(&a.status) => return Ok(()),
        Ok(a) => format!(
            "The URL answered the test POST with HTTP {}; it must answer 2xx.",
            a.status
        ),
        Err(Failure::Denied) => format!(
            "The service may not send requests to {origin}: the manifest's allowed_outbound_hosts \
             does not allow it. Ask the operator to add it (the webhook_host_* variables)."
        ),
        Err(Failure::Timeout) => format!(
            "The URL did not answer the test POST within {} s.",
            PING_TIMEOUT.as_secs()
        ),
        Err(Failure::Other(e)) => format!("The test POST to the URL failed: {e}."),
    };
    Err(Error::Invalid(vec![FieldError {
        field: "url".into(),
        messages: vec![message],
    }]))
}

/// The subscriptions not deleted, oldest first.
pub fn list(page: PageRequest) -> Result<WebhookPage, Error> {
    let db = Db::open()?;
    let count = db.scalar_i64(COUNT, &[])?;
    let heads = db.query(
        PAGE,
        &[int(page.limit.into()), int(page.offset.into())],
        head,
    )?;
    let results = heads
        .into_iter()
        .map(|w| with_lists(&db, w))
        .collect::<Result<_, _>>()?;
    Ok(WebhookPage {
        count: u64::try_from(count).unwrap_or(0),
        results,
    })
}

/// One subscription not deleted.
pub fn get(id: i64) -> Result<Webhook, Error> {
    let db = Db::open()?;
    let w = db
        .query_opt(&by_id_sql(), &[int(id)], head)?
        .ok_or_else(Error::not_found)?;
    with_lists(&db, w)
}

/// Deletes a subscription and ends its pending deliveries.
pub fn delete(id: i64) -> Result<(), Error> {
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    db.transaction(|db| -> Result<(), Error> {
        db.query_opt(DELETE, &[text(&now), int(id)], |r| r.i64("id"))?
            .ok_or_else(Error::not_found)?;
        db.execute(END_PENDING, &[text(&now), int(id)])?;
        Ok(())
    })
}

/// The deliveries of `event` for a prescription by `medic` at `hospital`, each with a fresh
/// `webhook-id`.
pub fn plan(medic: i64, hospital: i64, event: RxEvent) -> Result<Vec<WebhookDelivery>, Error> {
    let (sql, params) = plan_read(&MedicKey::Id(medic), hospital, event);
    plan_of(event, &Db::open()?.execute(&sql, &params)?)
}

/// The statement [`plan`] runs (`notifications.plan-read`).
pub fn plan_read(medic: &MedicKey, hospital: i64, event: RxEvent) -> (String, Vec<Param>) {
    let (sql, medic) = common::holder::statement(MATCHING, medic);
    (
        sql,
        vec![medic, int(hospital), text(common::events::name(event))],
    )
}

/// The deliveries in `read`, the result of [`plan_read`]'s statement (`notifications.plan-of`):
/// each with a fresh message id.
pub fn plan_of(event: RxEvent, read: &QueryResult) -> Result<Vec<WebhookDelivery>, Error> {
    let rows = common::db::rows(read, |r| {
        Ok(WebhookDelivery {
            event,
            subscription: r.i64("id")?,
            url: r.string("url")?,
            message_id: signing::new_message_id(),
        })
    })?;
    Ok(rows)
}

/// How a subscription stands when a delivery is about to go out.
pub enum Signing {
    /// Sign with this secret.
    Active(String),
    /// Do not send: why.
    Stopped(&'static str),
}

/// The secret of subscription `id`, unless it was deleted or disabled.
pub fn signing_state(db: &Db, id: i64) -> Result<Signing, Error> {
    let row = db.query_opt(SIGNING_STATE, &[int(id)], |r| {
        Ok((
            r.string("secret")?,
            r.opt_string("disabled_at")?,
            r.opt_string("deleted_at")?,
        ))
    })?;
    Ok(match row {
        None | Some((_, _, Some(_))) => Signing::Stopped("the webhook subscription was deleted"),
        Some((_, Some(_), None)) => Signing::Stopped(
            "the webhook subscription is disabled (its receiver answered 410 Gone)",
        ),
        Some((secret, None, None)) => Signing::Active(secret),
    })
}

/// A receiver answered 410 Gone: nothing more is sent to this subscription.
pub fn disable(db: &Db, id: i64) -> Result<(), Error> {
    db.execute(DISABLE, &[text(&common::time::now_iso8601()), int(id)])?;
    Ok(())
}

fn head(r: &common::db::Row) -> anyhow::Result<Webhook> {
    let disabled_at = r.opt_string("disabled_at")?;
    Ok(Webhook {
        id: r.i64("id")?,
        url: r.string("url")?,
        hospitals: Vec::new(),
        medics: Vec::new(),
        events: Vec::new(),
        secret: None,
        created_at: r.string("created_at")?,
        active: disabled_at.is_none(),
        disabled_at,
    })
}

fn with_lists(db: &Db, mut w: Webhook) -> Result<Webhook, Error> {
    w.hospitals = db.query(HOSPITALS_OF, &[int(w.id)], |r| r.i64("hospital_id"))?;
    w.medics = db.query(MEDICS_OF, &[int(w.id)], |r| {
        Ok(ListedMedic {
            id: r.i64("medic_id")?,
            given: r.string("given")?,
        })
    })?;
    let chosen = db.query(EVENTS_OF, &[int(w.id)], |r| r.string("event"))?;
    w.events = common::events::ALL
        .into_iter()
        .filter(|e| chosen.iter().any(|c| c == common::events::name(*e)))
        .collect();
    if chosen.is_empty() {
        w.events.push(RxEvent::Created);
    }
    Ok(w)
}

/// Keeps the first of each key, in order.
fn dedup<T>(items: &mut Vec<T>, key: impl Fn(&T) -> i64) {
    let mut seen = std::collections::HashSet::new();
    items.retain(|item| seen.insert(key(item)));
}

/// Seconds since the Unix epoch (the `webhook-timestamp`).
pub fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The body of a prescription webhook: exactly `{"signature":"…"}` for `prescription.created` (spec
/// 6), `{"signature":"…","type":"prescription.dispensed"}` (and so on) for the later events; a sale
/// that said what was handed over adds its `items` (the payload's, `prescriptions/src/handover.rs`).
pub fn event_body(signature: &str, event_type: Option<&str>, payload: &Value) -> Vec<u8> {
    let mut body = match event_type {
        None => json!({ "signature": signature }),
        Some(t) => json!({ "signature": signature, "type": t }),
    };
    if let Some(items) = payload.get("items") {
        body["items"] = items.clone();
    }
    // A pharmacy's status: `status`, `pharmacy`, `pickup_code`, `reason` beside the signature.
    if let Some(Value::Object(said)) = payload.get("status") {
        for (key, value) in said {
            body[key] = value.clone();
        }
    }
    body.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_body_is_exactly_the_signature() {
        assert_eq!(
            event_body("ab12", None, &Value::Null),
            br#"{"signature":"ab12"}"#.to_vec()
        );
        assert_eq!(
            event_body(
                "ab12",
                Some("prescription.rejected"),
                &json!({"signature": "ab12"})
            ),
            br#"{"signature":"ab12","type":"prescription.rejected"}"#.to_vec()
        );
    }

    #[test]
    fn a_status_event_carries_what_the_pharmacy_said() {
        let payload = json!({"signature": "ab12", "status": {"status": "ready_to_collect",
            "pharmacy": {"id": 3, "name": "Farmacia Roma"}, "pickup_code": "A7", "reason": null}});
        let body: Value = serde_json::from_slice(&event_body(
            "ab12",
            Some("prescription.status_changed"),
            &payload,
        ))
        .unwrap();
        assert_eq!(
            body,
            json!({"signature": "ab12", "type": "prescription.status_changed",
                "status": "ready_to_collect", "pharmacy": {"id": 3, "name": "Farmacia Roma"},
                "pickup_code": "A7", "reason": null})
        );
    }

    #[test]
    fn dedup_keeps_the_first_of_each() {
        let mut v = vec![3, 1, 3, 2, 1];
        dedup(&mut v, |x| *x);
        assert_eq!(v, vec![3, 1, 2]);
    }
}
