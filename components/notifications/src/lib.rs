//! The notifications component: wires `receta:notifications/notifications` to its modules.
//!
//! - `webhooks`: subscriptions, the registration ping, `plan`
//! - `outbox`: queueing emails, leasing, recording attempts, the admin's view and replay
//! - `resends`: the resend limits (per prescription, per caller's recipients)
//! - `deliver`: one worker run (lease, build, send concurrently, record)
//! - `messages`: the patient's SMS (Twilio) and WhatsApp (Cloud API) messages and their receipts
//! - `email`: the relay's JSON (pure); `signing`: Standard Webhooks (pure); `config`: the variables
//!
//! The queue itself (lease, finish, retry or dead) is `common::queue`; outbound HTTP is `outbound`.

mod config;
mod deliver;
mod email;
mod messages;
mod outbox;
mod resends;
mod signing;
mod webhooks;

use common::db::lent;
use common::types::{
    DeliveryRun, Error, MedicKey, PageRequest, Principal, RxEvent, WebhookDelivery,
};
use spin_sdk::sqlite3::{Connection, QueryResult, Value};

mod bindings;

use bindings::exports::receta::notifications::notifications::{
    Delivery, DeliveryFilter, DeliveryKind, DeliveryPage, Guest, Message, MessageFilter,
    MessagePage, NewWebhook, Webhook, WebhookPage,
};

struct Notifications;

impl Guest for Notifications {
    fn create_webhook(input: NewWebhook) -> Result<Webhook, Error> {
        webhooks::create(input)
    }

    fn list_webhooks(page: PageRequest) -> Result<WebhookPage, Error> {
        webhooks::list(page)
    }

    fn get_webhook(id: i64) -> Result<Webhook, Error> {
        webhooks::get(id)
    }

    fn delete_webhook(id: i64) -> Result<(), Error> {
        webhooks::delete(id)
    }

    fn plan(
        db: Option<&Connection>,
        medic: i64,
        hospital: i64,
        event: RxEvent,
    ) -> Result<Vec<WebhookDelivery>, Error> {
        lent(db, || webhooks::plan(medic, hospital, event))
    }

    fn plan_read(medic: MedicKey, hospital: i64, event: RxEvent) -> (String, Vec<Value>) {
        webhooks::plan_read(&medic, hospital, event)
    }

    fn plan_of(event: RxEvent, read: QueryResult) -> Result<Vec<WebhookDelivery>, Error> {
        webhooks::plan_of(event, &read)
    }

    fn queue_link_code(
        db: Option<&Connection>,
        prescription: i64,
        to: String,
        code: String,
    ) -> Result<i64, Error> {
        lent(db, || outbox::queue_link_code(prescription, &to, &code))
    }

    fn resend_email(
        db: Option<&Connection>,
        sender: Principal,
        prescription: i64,
        to: Vec<String>,
        cc: Vec<String>,
    ) -> Result<i64, Error> {
        lent(db, || outbox::resend_email(sender, prescription, &to, &cc))
    }

    fn deliver_due(limit: u32) -> Result<DeliveryRun, Error> {
        let outbox = deliver::run(limit)?;
        let messages = messages::run(limit)?;
        Ok(DeliveryRun {
            attempted: outbox.attempted + messages.attempted,
            delivered: outbox.delivered + messages.delivered,
            failed: outbox.failed + messages.failed,
        })
    }

    fn list_messages(filter: MessageFilter, page: PageRequest) -> Result<MessagePage, Error> {
        messages::list(&filter, page)
    }

    fn messages_of(db: Option<&Connection>, prescription: i64) -> Result<Vec<Message>, Error> {
        lent(db, || messages::list_for(prescription))
    }

    fn replay_message(id: i64) -> Result<Message, Error> {
        messages::replay(id)
    }

    fn whatsapp_challenge(mode: String, token: String, challenge: String) -> Result<String, Error> {
        messages::whatsapp::challenge(&mode, &token, &challenge).ok_or_else(|| {
            Error::forbidden("The verify token is not this service's: no subscription.")
        })
    }

    fn whatsapp_receipts(body: Vec<u8>, signature: Option<String>) -> Result<u32, Error> {
        messages::receipts::whatsapp(&body, signature.as_deref())
    }

    fn twilio_receipt(
        fields: Vec<(String, String)>,
        signature: Option<String>,
    ) -> Result<u32, Error> {
        messages::receipts::twilio(&config::Config::load(), &fields, signature.as_deref())
    }

    fn list_deliveries(filter: DeliveryFilter, page: PageRequest) -> Result<DeliveryPage, Error> {
        outbox::list(&filter, page)
    }

    fn get_delivery(id: i64) -> Result<Delivery, Error> {
        outbox::get(id)
    }

    fn replay_delivery(id: i64) -> Result<Delivery, Error> {
        outbox::replay(id, |db, d| match (d.kind, d.subscription) {
            (DeliveryKind::Webhook, Some(subscription)) => {
                match webhooks::signing_state(db, subscription)? {
                    webhooks::Signing::Active(_) => Ok(()),
                    webhooks::Signing::Stopped(why) => Err(Error::BadRequest(format!(
                        "This delivery cannot be replayed: {why}."
                    ))),
                }
            }
            _ => Ok(()),
        })
    }
}

// Exported only when built as a component: a native build (unit tests, clippy) has no component ABI.
#[cfg(target_arch = "wasm32")]
bindings::export!(Notifications with_types_in bindings);
