//! The patient's SMS and WhatsApp messages (table `messages`, migration 0030; docs/notifications.md,
//! "SMS and WhatsApp"): a third use of the leased queue (`common::queue`), with the outbox's
//! schedule, dead letters and replay. A run leases the due rows of the channels whose provider is
//! configured (the others wait, as emails do without a relay), builds each provider's request
//! (`whatsapp`, `twilio`: the seam is [`provider::Provider`]), sends them concurrently, and ends each row with
//! the provider's id for it; the providers' receipts (`receipts`) then say what became of it.
//!
//! **Never sent twice.** Before its request goes, a row is marked `sending` (the attempt's number),
//! and its end clears the mark. A row leased again with the mark still set was cut off by a crash
//! while its request was in flight: it may have reached the provider, so it is ended (dead, saying
//! so) and not sent again; a replay sends it anew.
//!
//! What a message says is short and carries no diagnosis and no medication (`text`).

pub mod provider;
pub mod receipts;
pub mod rows;
pub mod text;
pub mod twilio;
pub mod whatsapp;

use std::time::SystemTime;

use common::db::{Db, int};
use common::queue::drain::{self, Drain};
use common::queue::{Leased, Outcome};
use common::types::{DeliveryRun, Error};
use outbound::send::{self, Answer, Failure};

use crate::config::Config;
use provider::{Provider, Request};
use rows::{Row, SENDING, finish, lease};
pub use rows::{list, list_for, replay};

/// Leases up to `limit` due messages of the configured channels and sends them
/// (`common::queue::drain`).
pub fn run(limit: u32) -> Result<DeliveryRun, Error> {
    let config = Config::load();
    let providers = Providers::load(&config);
    let channels = providers.channels();
    if channels.is_empty() {
        return Ok(DeliveryRun {
            attempted: 0,
            delivered: 0,
            failed: 0,
        });
    }
    drain::run(
        &Messages {
            config,
            providers,
            channels,
        },
        limit,
    )
}

/// The messages' steps of a run: only the channels whose provider is configured.
struct Messages {
    config: Config,
    providers: Providers,
    channels: Vec<&'static str>,
}

impl Drain for Messages {
    type Row = Row;
    /// The row's channel and its provider's request.
    type Request = (String, Request);
    type Answer = Result<Answer, Failure>;
    /// The provider's id of an accepted message.
    type Record = Option<String>;

    const COMPONENT: &'static str = "notifications";

    fn describe(&self, row: &Row) -> String {
        format!("message {}", row.id)
    }

    fn any_due(&self, db: &Db, now: SystemTime) -> Result<bool, Error> {
        rows::any_due(db, now, &self.channels)
    }

    fn lease(&self, db: &Db, now: SystemTime, limit: u32) -> Result<Vec<Leased<Row>>, Error> {
        lease(db, now, now + self.config.lease(), limit, &self.channels)
    }

    fn prepare(&self, db: &Db, row: &Leased<Row>) -> Result<Self::Request, Outcome> {
        prepare(db, &self.config, &self.providers, row)
            .map(|request| (row.row.channel.clone(), request))
    }

    async fn send(&self, (_, request): &Self::Request) -> Self::Answer {
        send::post(
            &request.target,
            &request.headers,
            request.body.clone(),
            self.config.timeout,
        )
        .await
    }

    fn judge(
        &self,
        row: &Leased<Row>,
        (channel, _): &Self::Request,
        answer: Self::Answer,
        _: SystemTime,
    ) -> (Outcome, Option<String>) {
        match self.providers.of(channel) {
            Some(provider) => judge(&self.config, provider, row, &answer),
            None => (
                Outcome::Dead {
                    error: format!("no provider for channel {channel:?}"),
                },
                None,
            ),
        }
    }

    fn finish(
        &self,
        db: &Db,
        row: &Leased<Row>,
        outcome: &Outcome,
        provider_id: Option<&Option<String>>,
    ) -> Result<(), Error> {
        finish(db, row, outcome, provider_id.and_then(Option::as_deref))
    }
}

/// The configured providers, by channel.
struct Providers {
    whatsapp: Option<whatsapp::WhatsApp>,
    twilio: Option<twilio::Twilio>,
}

impl Providers {
    fn load(config: &Config) -> Providers {
        Providers {
            whatsapp: whatsapp::WhatsApp::load(),
            twilio: twilio::Twilio::load(config),
        }
    }

    /// The channels whose messages may be sent now.
    fn channels(&self) -> Vec<&'static str> {
        let mut channels = Vec::new();
        if self.twilio.is_some() {
            channels.push(rows::SMS);
        }
        if self.whatsapp.is_some() {
            channels.push(rows::WHATSAPP);
        }
        channels
    }

    fn of(&self, channel: &str) -> Option<&dyn Provider> {
        match channel {
            rows::SMS => self.twilio.as_ref().map(|p| p as &dyn Provider),
            rows::WHATSAPP => self.whatsapp.as_ref().map(|p| p as &dyn Provider),
            _ => None,
        }
    }
}

/// The row's provider's request, marked `sending`; or how it ends without one.
fn prepare(
    db: &Db,
    config: &Config,
    providers: &Providers,
    leased: &Leased<Row>,
) -> Result<Request, Outcome> {
    let row = &leased.row;
    if let Some(attempt) = row.sending {
        return Err(Outcome::Dead {
            error: format!(
                "attempt {attempt} was cut off while its request was in flight (the service \
                 stopped): it may have reached the provider, so it is not sent again; replay it \
                 to send it anew"
            ),
        });
    }
    let provider = providers.of(&row.channel).ok_or_else(|| Outcome::Dead {
        error: format!("no provider for channel {:?}", row.channel),
    })?;
    let said = text::said(db, config, row).map_err(|e| {
        Outcome::failed(
            leased.attempts,
            format!("internal error: {e:?}"),
            config.retry_scale,
        )
    })?;
    let request = provider
        .request(row, &said)
        .map_err(|error| Outcome::Dead { error })?;
    // Marked before it goes: see the module's text.
    let marked = db.query_opt(
        SENDING,
        &[
            int(leased.attempts.into()),
            int(row.id),
            common::db::text(&leased.lease),
        ],
        |r| r.i64("id"),
    );
    match marked {
        Ok(Some(_)) => Ok(request),
        Ok(None) => Err(Outcome::failed(
            leased.attempts,
            "the lease was lost before sending".into(),
            config.retry_scale,
        )),
        Err(e) => Err(Outcome::failed(
            leased.attempts,
            format!("internal error: {e:?}"),
            config.retry_scale,
        )),
    }
}

/// What an answer means for the row, and the provider's id for an accepted message.
fn judge(
    config: &Config,
    provider: &dyn Provider,
    leased: &Leased<Row>,
    answer: &Result<Answer, Failure>,
) -> (Outcome, Option<String>) {
    let failed = |error: String| Outcome::failed(leased.attempts, error, config.retry_scale);
    match answer {
        Err(failure) => (failed(failure.to_string()), None),
        Ok(answer) => match answer.refusal() {
            // A 4xx but 401, 403 (the service's credentials, which the operator may mend) and 429
            // is the provider refusing this message: asking again will not change its mind.
            Some(refusal)
                if (400..500).contains(&answer.status)
                    && !matches!(answer.status, 401 | 403 | 429) =>
            {
                (Outcome::Dead { error: refusal }, None)
            }
            Some(refusal) => (failed(refusal), None),
            None => match provider.accepted(answer) {
                Ok(id) => (Outcome::Done, Some(id)),
                Err(why) => (failed(why), None),
            },
        },
    }
}
