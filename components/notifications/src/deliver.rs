//! One worker run: lease due rows, build each request, send them all concurrently, record each attempt.

use std::time::SystemTime;

use serde_json::Value;

use common::db::{Db, int};
use common::types::Error;

use crate::config::Config;
use crate::email::{self, Email, LinkNote, StatusNote};
use crate::outbox::{self, AttemptRecord, EMAIL, Leased, WEBHOOK};
use crate::webhooks::{self, Signing};
use common::queue::Outcome;
use common::queue::drain::{self, Drain};
use common::types::DeliveryRun;
use outbound::send::{self, Answer, Failure};
use outbound::target::Target;

/// What the email needs from the prescription: its patient, its signed document (for the medic's and
/// hospital's names as printed), the PDF stored at issue, and its seal (`prescriptions.seal_kid`
/// and `seal_sig`: the link the patient gets carries it in its fragment).
const EMAIL_SOURCE: &str = "SELECT p.signature, p.patient_name, p.medic_email, p.hospital_patron, \
    d.canonical, d.pdf, p.seal_kid, p.seal_sig FROM prescriptions p \
    JOIN prescription_documents d ON d.prescription_id = p.id WHERE p.id = ?";

/// A request ready to go.
struct Prepared {
    target: Target,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    /// Webhook rows: the subscription (a 410 disables it).
    subscription: Option<i64>,
}

/// Leases up to `limit` due rows and delivers them (`common::queue::drain`).
pub fn run(limit: u32) -> Result<DeliveryRun, Error> {
    let config = Config::load();
    let emails = config.relay_url.is_some();
    drain::run(&Outbox { config, emails }, limit)
}

/// The outbox's steps of a run: emails only while a relay is configured.
struct Outbox {
    config: Config,
    emails: bool,
}

impl Drain for Outbox {
    type Row = outbox::Row;
    type Request = Prepared;
    /// The answer and how long it took (ms).
    type Answer = (Result<Answer, Failure>, u32);
    /// The attempt's record, and the subscription a 410 disables.
    type Record = (AttemptRecord, Option<i64>);

    const COMPONENT: &'static str = "notifications";

    fn describe(&self, row: &outbox::Row) -> String {
        format!("outbox row {}", row.id)
    }

    fn any_due(&self, db: &Db, now: SystemTime) -> Result<bool, Error> {
        outbox::any_due(db, now, self.emails)
    }

    fn lease(&self, db: &Db, now: SystemTime, limit: u32) -> Result<Vec<Leased>, Error> {
        outbox::lease(db, now, now + self.config.lease(), limit, self.emails)
    }

    fn prepare(&self, db: &Db, row: &Leased) -> Result<Prepared, Outcome> {
        prepare(db, &self.config, row).map_err(|stop| match stop {
            Stop::Dead(reason) => Outcome::Dead { error: reason },
            Stop::Internal(e) => {
                eprintln!("notifications: outbox row {}: {e:?}", row.row.id);
                let error = format!("internal error: {e:?}");
                Outcome::failed(row.attempts, error, self.config.retry_scale)
            }
        })
    }

    async fn send(&self, p: &Prepared) -> Self::Answer {
        let start = send::monotonic_now();
        let answer = send::post(&p.target, &p.headers, p.body.clone(), self.config.timeout).await;
        (answer, send::elapsed_ms(start))
    }

    fn judge(
        &self,
        row: &Leased,
        prepared: &Prepared,
        (answer, duration_ms): Self::Answer,
        started_at: SystemTime,
    ) -> (Outcome, Self::Record) {
        let (record, outcome) = judge(&self.config, row, started_at, duration_ms, &answer);
        let gone = matches!(&answer, Ok(a) if a.status == 410);
        (outcome, (record, prepared.subscription.filter(|_| gone)))
    }

    fn finish(
        &self,
        db: &Db,
        row: &Leased,
        outcome: &Outcome,
        record: Option<&Self::Record>,
    ) -> Result<(), Error> {
        let gone = record.and_then(|(_, gone)| *gone);
        outbox::finish(db, row, record.map(|(attempt, _)| attempt), gone, outcome)
    }
}

/// Why a row is not sent.
enum Stop {
    /// It never can be: ends the row.
    Dead(String),
    /// Something broke on our side: try again later.
    Internal(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Internal(e)
    }
}

fn prepare(db: &Db, config: &Config, leased: &Leased) -> Result<Prepared, Stop> {
    let row = &leased.row;
    let target_of = |url: &str| Target::parse(url).map_err(|e| Stop::Dead(format!("bad URL: {e}")));
    match row.kind.as_str() {
        EMAIL => {
            let relay = config
                .relay_url
                .as_deref()
                .ok_or_else(|| Stop::Internal(anyhow::anyhow!("no email relay").into()))?;
            let target = Target::parse(relay)
                .map_err(|e| Stop::Internal(anyhow::anyhow!("email_relay_url: {e}").into()))?;
            let body = email_body(db, config, leased)?;
            let mut headers = vec![
                ("content-type".to_string(), b"application/json".to_vec()),
                // The same on every attempt of this email: a relay that supports it drops retries.
                (
                    "idempotency-key".to_string(),
                    format!("receta-email-{}", row.id).into_bytes(),
                ),
                (
                    "user-agent".to_string(),
                    crate::config::USER_AGENT.as_bytes().to_vec(),
                ),
            ];
            if let Some(token) = &config.relay_token {
                headers.push((
                    "authorization".to_string(),
                    format!("Bearer {token}").into_bytes(),
                ));
            }
            Ok(Prepared {
                target,
                headers,
                body,
                subscription: None,
            })
        }
        WEBHOOK => {
            let p = &row.payload;
            let (Some(signature), Some(message_id), Some(subscription)) = (
                p["signature"].as_str(),
                p["webhook_id"].as_str(),
                p["subscription"].as_i64(),
            ) else {
                return Err(Stop::Dead("malformed webhook payload".into()));
            };
            let secret = match webhooks::signing_state(db, subscription)? {
                Signing::Active(secret) => secret,
                Signing::Stopped(why) => return Err(Stop::Dead(why.into())),
            };
            let target = target_of(&row.target)?;
            let body = webhooks::event_body(signature, p["type"].as_str(), p);
            let mut headers =
                crate::signing::headers(&secret, message_id, webhooks::unix_seconds(), &body)
                    .map_err(Stop::Dead)?;
            headers.push(("content-type".into(), b"application/json".to_vec()));
            headers.push((
                "user-agent".into(),
                crate::config::USER_AGENT.as_bytes().to_vec(),
            ));
            Ok(Prepared {
                target,
                headers,
                body,
                subscription: Some(subscription),
            })
        }
        other => Err(Stop::Dead(format!("unknown kind {other:?}"))),
    }
}

/// The relay's JSON for an email row.
fn email_body(db: &Db, config: &Config, leased: &Leased) -> Result<Vec<u8>, Stop> {
    let row = &leased.row;
    let source = db
        .query_opt(EMAIL_SOURCE, &[int(row.prescription_id)], |r| {
            Ok((
                r.string("signature")?,
                r.string("patient_name")?,
                r.string("medic_email")?,
                r.string("hospital_patron")?,
                r.string("canonical")?,
                r.blob("pdf")?,
                r.opt_string("seal_kid")?.zip(r.opt_string("seal_sig")?),
            ))
        })
        .map_err(|e| Stop::Internal(e.into()))?
        .ok_or_else(|| Stop::Dead("the prescription does not exist".into()))?;
    let (signature, patient, medic_email, patron, canonical, pdf, seal) = source;
    let document: Value = serde_json::from_str(&canonical).unwrap_or(Value::Null);
    let name = |v: &Value, fallback: &str| {
        v.as_str()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or(fallback)
            .to_string()
    };
    let medic = name(&document["medic"]["name"], &medic_email);
    let hospital = name(&document["hospital"]["name"], &patron);
    let strings = |key: &str| outbox::strings(&row.payload, key);
    let mut to = strings("to");
    if to.is_empty() {
        to.push(row.target.clone());
    }
    let cc = strings("cc");
    let cta_link = match seal {
        Some((kid, sig)) => format!("{}#{kid}.{sig}", config.cta_link(&signature)),
        None => config.cta_link(&signature),
    };
    let mail = Email {
        from: &config.from,
        to: &to,
        cc: &cc,
        patient: &patient,
        medic: &medic,
        hospital: &hospital,
        signature: &signature,
        cta_link: &cta_link,
        pdf: Some(&pdf),
    };
    let said = &row.payload["status"];
    let link = &row.payload["link_code"];
    let body = match said["status"].as_str() {
        _ if link.is_object() => email::link_code_body(
            &mail,
            &LinkNote {
                code: link["code"].as_str().unwrap_or_default(),
            },
        ),
        Some(status) => email::status_body(
            &mail,
            &StatusNote {
                status,
                pharmacy: said["pharmacy"]["name"].as_str().unwrap_or_default(),
                pickup_code: said["pickup_code"].as_str(),
                reason: said["reason"].as_str(),
            },
        ),
        None => email::relay_body(&mail),
    };
    Ok(body.to_string().into_bytes())
}

/// What an answer means for the row, and the attempt's record.
fn judge(
    config: &Config,
    row: &Leased,
    started_at: SystemTime,
    duration_ms: u32,
    answer: &Result<Answer, Failure>,
) -> (AttemptRecord, Outcome) {
    let (status_code, error) = match answer {
        Ok(a) => (Some(a.status), a.refusal()),
        Err(f) => (None, Some(f.to_string())),
    };
    let outcome = match &error {
        None => Outcome::Done,
        Some(e) if row.row.kind == WEBHOOK && status_code == Some(410) => Outcome::Dead {
            error: format!("{e} (410 Gone: the subscription is now disabled)"),
        },
        Some(e) => Outcome::failed(row.attempts, e.clone(), config.retry_scale),
    };
    let record = AttemptRecord {
        started_at,
        duration_ms,
        status_code,
        error,
    };
    (record, outcome)
}
