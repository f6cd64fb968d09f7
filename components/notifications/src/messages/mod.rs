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
use common::queue::{Leased, Outcome};
use common::types::{DeliveryRun, Error};
use outbound::send::{self, Answer, Failure};

use crate::config::Config;
use provider::{Provider, Request};
use rows::{Row, SENDING, finish, lease};
pub use rows::{list, list_for, replay};

/// Leases up to `limit` due messages of the configured channels and sends them.
pub fn run(limit: u32) -> Result<DeliveryRun, Error> {
    let mut summary = DeliveryRun {
        attempted: 0,
        delivered: 0,
        failed: 0,
    };
    let config = Config::load();
    let providers = Providers::load(&config);
    let channels = providers.channels();
    if limit == 0 || channels.is_empty() {
        return Ok(summary);
    }
    let db = Db::open()?;
    let now = SystemTime::now();
    if !rows::any_due(&db, now, &channels)? {
        return Ok(summary);
    }
    let leased = lease(&db, now, now + config.lease(), limit, &channels)?;
    let mut trouble = None;
    let mut ready = Vec::with_capacity(leased.len());
    for row in leased {
        let outcome = match prepare(&db, &config, &providers, &row) {
            Ok(request) => {
                ready.push((row, request));
                continue;
            }
            Err(outcome) => outcome,
        };
        if let Err(e) = finish(&db, &row, &outcome, None) {
            eprintln!("notifications: recording message {}: {e:?}", row.row.id);
            trouble.get_or_insert(e);
        }
    }
    let timeout = config.timeout;
    let answers = spin_sdk::http::run(futures::future::join_all(ready.iter().map(
        |(_, (_, request))| async move {
            send::post(
                &request.target,
                &request.headers,
                request.body.clone(),
                timeout,
            )
            .await
        },
    )));
    for ((row, (provider, _)), answer) in ready.iter().zip(answers) {
        summary.attempted += 1;
        let (outcome, provider_id) = judge(&config, *provider, row, &answer);
        if outcome == Outcome::Done {
            summary.delivered += 1;
        } else {
            summary.failed += 1;
        }
        if let Err(e) = finish(&db, row, &outcome, provider_id.as_deref()) {
            eprintln!("notifications: recording message {}: {e:?}", row.row.id);
            trouble.get_or_insert(e);
        }
    }
    match trouble {
        Some(e) => Err(e),
        None => Ok(summary),
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

/// The row's provider and request, marked `sending`; or how it ends without one.
fn prepare<'a>(
    db: &Db,
    config: &Config,
    providers: &'a Providers,
    leased: &Leased<Row>,
) -> Result<(&'a dyn Provider, Request), Outcome> {
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
        Ok(Some(_)) => Ok((provider, request)),
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
