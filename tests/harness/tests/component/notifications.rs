//! `receta:notifications/notifications`: webhook subscriptions and the outbox's deliveries (the
//! email relay, the retry schedule), with the outbound HTTP answered by the test.

use anyhow::Result;
use receta_harness::Harness;
use receta_harness::worlds::notifications::NotificationsComponent;
use receta_harness::worlds::notifications::exports::receta::notifications::notifications::NewWebhook;
use receta_harness::worlds::notifications::receta::common::types::{Error, RxEvent};

use crate::prescriptions::{Rx, issue, medication, request};

const RELAY: &str = "http://relay.test/send";
const HOOK: &str = "http://hooks.test/rx";

/// The prescriptions component with an email relay and a webhook host allowed.
fn app() -> Result<Rx> {
    Rx::with_variables(&[
        ("email_relay_url", RELAY),
        ("email_relay_host", "http://relay.test"),
        ("email_relay_token", "relay-secret"),
        ("webhook_host_a", "http://hooks.test"),
    ])
}

fn notifications(rx: &Rx) -> Result<Harness<NotificationsComponent>> {
    rx.beside::<NotificationsComponent>()
}

/// Issues a prescription with its email queued; returns its id.
fn issued(rx: &Rx) -> Result<i64> {
    Ok(issue(rx, &request(rx, vec![medication("A", 1)]))?
        .unwrap()
        .id)
}

/// Delivers every due row: each test's database is its own, so these are its prescription's.
fn deliver(n: &Harness<NotificationsComponent>) -> Result<(u32, u32, u32)> {
    let run = n.call(async |c, s| {
        c.receta_notifications_notifications()
            .call_deliver_due(s, 10)
            .await
    })??;
    Ok((run.attempted, run.delivered, run.failed))
}

#[test]
fn the_email_goes_to_the_relay_with_its_token_and_marks_the_prescription_sent() -> Result<()> {
    let rx = app()?;
    let n = notifications(&rx)?;
    let id = issued(&rx)?;
    rx.outbound().respond(RELAY, 202, "{}");
    assert_eq!(deliver(&n)?, (1, 1, 0));
    let sent = rx.outbound().sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].method, "POST");
    assert!(
        sent[0]
            .headers
            .contains(&("authorization".into(), "Bearer relay-secret".into())),
        "{:?}",
        sent[0].headers
    );
    let body = String::from_utf8_lossy(&sent[0].body);
    assert!(body.contains("luis@example.com"), "{body}");
    let status: String = rx.db()?.query_row(
        "SELECT sent_status FROM prescriptions WHERE id = ?1",
        [id],
        |r| r.get(0),
    )?;
    assert_eq!(status, "sent_email");
    assert_eq!(deliver(&n)?, (0, 0, 0), "delivered once");
    Ok(())
}

#[test]
fn a_failed_attempt_comes_back_after_five_seconds_with_jitter() -> Result<()> {
    let rx = app()?;
    let n = notifications(&rx)?;
    let id = issued(&rx)?;
    rx.outbound().respond(RELAY, 503, "{\"message\":\"busy\"}");
    assert_eq!(deliver(&n)?, (1, 0, 1));
    let (attempts, wait, error): (i64, f64, String) = rx.db()?.query_row(
        "SELECT attempts, (julianday(next_attempt_at) - julianday(updated_at)) * 86400, \
         last_error FROM outbox WHERE prescription_id = ?1",
        [id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    assert_eq!(attempts, 1);
    assert!((4.4..=5.6).contains(&wait), "waits 5 s ± 10%: {wait}");
    assert!(error.contains("503"), "{error}");
    assert_eq!(deliver(&n)?, (0, 0, 0), "not due yet");
    Ok(())
}

#[test]
fn the_last_failed_attempt_leaves_the_delivery_dead() -> Result<()> {
    let rx = app()?;
    let n = notifications(&rx)?;
    let id = issued(&rx)?;
    rx.db()?.execute(
        "UPDATE outbox SET attempts = 9 WHERE prescription_id = ?1",
        [id],
    )?;
    assert_eq!(deliver(&n)?, (1, 0, 1), "no answer at all");
    let status: String = rx.db()?.query_row(
        "SELECT status FROM outbox WHERE prescription_id = ?1",
        [id],
        |r| r.get(0),
    )?;
    assert_eq!(status, "dead");
    Ok(())
}

#[test]
fn emails_wait_while_no_relay_is_configured() -> Result<()> {
    let rx = Rx::new()?;
    let n = notifications(&rx)?;
    issued(&rx)?;
    assert_eq!(deliver(&n)?, (0, 0, 0));
    assert!(rx.outbound().sent().is_empty());
    Ok(())
}

fn subscription(hospital: i64, events: Vec<RxEvent>) -> NewWebhook {
    NewWebhook {
        url: HOOK.into(),
        hospitals: vec![hospital],
        medics: Vec::new(),
        events,
    }
}

#[test]
fn a_subscription_is_registered_only_when_its_receiver_answers_the_signed_ping() -> Result<()> {
    let rx = app()?;
    let n = notifications(&rx)?;
    let new = subscription(rx.parties.hospital, vec![RxEvent::Created]);
    let refused = n.call(async |c, s| {
        c.receta_notifications_notifications()
            .call_create_webhook(s, &new)
            .await
    })?;
    assert!(
        matches!(&refused, Err(Error::Invalid(f)) if f[0].field == "url"),
        "{refused:?}"
    );

    rx.outbound().respond(HOOK, 200, "");
    let created = n
        .call(async |c, s| {
            c.receta_notifications_notifications()
                .call_create_webhook(s, &new)
                .await
        })?
        .unwrap();
    assert!(created.secret.is_some_and(|s| s.starts_with("whsec_")));
    let ping = rx.outbound().sent().pop().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ping.body),
        "{\"type\":\"webhook.ping\"}"
    );
    for header in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
        assert!(ping.headers.iter().any(|(n, _)| n == header), "{header}");
    }
    Ok(())
}

#[test]
fn a_webhook_is_planned_only_for_the_events_and_parties_it_chose() -> Result<()> {
    let rx = app()?;
    let n = notifications(&rx)?;
    rx.outbound().respond(HOOK, 200, "");
    let new = subscription(rx.parties.hospital, vec![RxEvent::Dispensed]);
    n.call(async |c, s| {
        c.receta_notifications_notifications()
            .call_create_webhook(s, &new)
            .await
    })?
    .unwrap();
    let (medic, hospital) = (rx.parties.medic, rx.parties.hospital);
    let plan = |event| {
        n.call(async move |c, s| {
            let db = receta_harness::lend(s).await?;
            c.receta_notifications_notifications()
                .call_plan(&mut *s, Some(db), medic, hospital, event)
                .await
        })
    };
    assert!(plan(RxEvent::Created)??.is_empty());
    let dispensed = plan(RxEvent::Dispensed)??;
    assert_eq!(dispensed.len(), 1);
    assert_eq!(dispensed[0].url, HOOK);
    assert!(dispensed[0].message_id.starts_with("msg_"));
    let other = n.call(async |c, s| {
        let db = receta_harness::lend(s).await?;
        c.receta_notifications_notifications()
            .call_plan(&mut *s, Some(db), medic, hospital + 1, RxEvent::Dispensed)
            .await
    })??;
    assert!(
        other.is_empty(),
        "another hospital's prescriptions are not announced"
    );
    Ok(())
}
