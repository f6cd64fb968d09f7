//! NOM-151 constancias (migration 0020; docs/verification.md, "Constancias NOM-151"): one worker run
//! leases due `stamp_queue` rows, asks the timestamp authority (`timestamp_url`, RFC 3161 over HTTP)
//! for a timestamp of each digest, concurrently, checks every reply (`pkix::tsp::check_reply`:
//! granted, imprint, the nonce sent, the TSA's signature, the chain to `timestamp_ca` when set), and
//! stores an accepted one in `constancias` in the transaction that ends its queue row
//! (`common::queue`'s commit policy). A refused or missing reply is retried on the outbox's schedule
//! and never stored.

use std::time::SystemTime;

use common::db::{Db, blob, int, text};
use common::queue::drain::{self, Drain};
use common::queue::{self, Outcome, Queue};
use common::types::{DeliveryRun, Error};
use outbound::send::{self, Answer, Failure};
use outbound::target::Target;

use crate::config::{Config, Stamping};

/// The stamp queue (migration 0020), a leased queue keyed by the digest.
const QUEUE: Queue = Queue {
    table: "stamp_queue",
    key: "digest",
};

/// What a lease returns of each row.
const LEASED_COLUMNS: &str = "digest, subject, prescription_id";

/// Stored once: a second accepted reply for the same digest (a lost lease) is dropped.
const STORE: &str = "INSERT INTO constancias \
    (digest, subject, prescription_id, reply, gen_time, tsa, serial, created_at) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (digest) DO NOTHING";

/// A leased row's content.
struct Row {
    digest: String,
    subject: String,
    prescription_id: i64,
}

type Leased = queue::Leased<Row>;

/// An accepted reply and what it says.
type Accepted = (Vec<u8>, pkix::tsp::Stamp);

/// Stamps up to `limit` due digests (`common::queue::drain`). Nothing is leased while no
/// authority is configured (`timestamp_url` empty): the rows wait, as emails wait for a relay.
pub fn run(config: &Config, limit: u32) -> Result<DeliveryRun, Error> {
    let Some(stamping) = config.stamping.as_ref() else {
        return Ok(DeliveryRun {
            attempted: 0,
            delivered: 0,
            failed: 0,
        });
    };
    let stamps = Stamps {
        config,
        stamping,
        target: Target::parse(&stamping.url).map_err(|e| format!("timestamp_url: {e}")),
        anchors: anchors(stamping).map_err(|e| format!("timestamp_ca: {e}")),
    };
    drain::run(&stamps, limit)
}

/// The stamp queue's steps of a run, with the authority's address and anchors read once.
struct Stamps<'a> {
    config: &'a Config,
    stamping: &'a Stamping,
    target: Result<Target, String>,
    anchors: Result<Option<Vec<pkix::Certificate>>, String>,
}

impl Drain for Stamps<'_> {
    type Row = Row;
    /// A row's request, or why it cannot be sent (judged a failed attempt: it is tried again).
    type Request = Result<Prepared, String>;
    /// `None` when nothing was sent.
    type Answer = Option<Result<Answer, Failure>>;
    /// The accepted reply, stored with the row's end.
    type Record = Option<Accepted>;

    const COMPONENT: &'static str = "constancias";

    fn describe(&self, row: &Row) -> String {
        row.digest.clone()
    }

    fn any_due(&self, db: &Db, now: SystemTime) -> Result<bool, Error> {
        QUEUE.any_due(db, "", now, &[])
    }

    fn lease(&self, db: &Db, now: SystemTime, limit: u32) -> Result<Vec<Leased>, Error> {
        let until = now + self.config.lease();
        QUEUE.lease(db, "", LEASED_COLUMNS, now, until, limit, &[], |r| {
            Ok(Row {
                digest: r.string("digest")?,
                subject: r.string("subject")?,
                prescription_id: r.i64("prescription_id")?,
            })
        })
    }

    fn prepare(&self, _: &Db, row: &Leased) -> Result<Self::Request, Outcome> {
        Ok(request(self.stamping, row))
    }

    async fn send(&self, prepared: &Self::Request) -> Self::Answer {
        match (&self.target, prepared) {
            (Ok(t), Ok(p)) => {
                Some(send::post(t, &p.headers, p.query.clone(), self.config.timeout).await)
            }
            _ => None,
        }
    }

    fn judge(
        &self,
        row: &Leased,
        prepared: &Self::Request,
        answer: Self::Answer,
        _: SystemTime,
    ) -> (Outcome, Option<Accepted>) {
        let judged = match (&self.target, &self.anchors, prepared, answer) {
            (Err(e), ..) | (_, Err(e), ..) | (_, _, Err(e), _) => Err(e.clone()),
            (Ok(_), Ok(anchors), Ok(p), Some(answer)) => judge(p, anchors.as_deref(), answer),
            (_, _, _, None) => Err("not sent".into()),
        };
        match judged {
            Ok(accepted) => (Outcome::Done, Some(accepted)),
            Err(error) => {
                eprintln!("constancias: {}: {error}", row.row.digest);
                let outcome = Outcome::failed(row.attempts, error, self.config.retry_scale);
                (outcome, None)
            }
        }
    }

    fn finish(
        &self,
        db: &Db,
        row: &Leased,
        outcome: &Outcome,
        accepted: Option<&Option<Accepted>>,
    ) -> Result<(), Error> {
        finish(db, row, outcome, accepted.and_then(Option::as_ref))
    }
}

/// A request ready to go, and the nonce its reply must carry.
struct Prepared {
    query: Vec<u8>,
    headers: Vec<(String, Vec<u8>)>,
    digest: [u8; 32],
    nonce: [u8; 16],
}

fn request(stamping: &Stamping, leased: &Leased) -> Result<Prepared, String> {
    let digest = digest_bytes(&leased.row.digest).ok_or("the queued digest is not 64 hex")?;
    let mut nonce = [0u8; 16];
    getrandom::fill(&mut nonce).map_err(|e| format!("no randomness: {e}"))?;
    let query = pkix::tsp::request(&digest, &nonce)?;
    let mut headers = vec![
        (
            "content-type".to_string(),
            pkix::tsp::QUERY_TYPE.as_bytes().to_vec(),
        ),
        (
            "accept".to_string(),
            pkix::tsp::REPLY_TYPE.as_bytes().to_vec(),
        ),
        (
            "user-agent".to_string(),
            crate::config::USER_AGENT.as_bytes().to_vec(),
        ),
    ];
    if let Some(token) = &stamping.token {
        headers.push((
            "authorization".to_string(),
            format!("Bearer {token}").into_bytes(),
        ));
    }
    Ok(Prepared {
        query,
        headers,
        digest,
        nonce,
    })
}

/// The stored reply and what it says, or why it is not taken.
fn judge(
    prepared: &Prepared,
    anchors: Option<&[pkix::Certificate]>,
    answer: Result<Answer, Failure>,
) -> Result<Accepted, String> {
    let answer = answer.map_err(|f| f.to_string())?;
    if let Some(refusal) = answer.refusal() {
        return Err(refusal);
    }
    let stamp = pkix::tsp::check_reply(
        &answer.body,
        &prepared.digest,
        Some(&prepared.nonce),
        anchors,
    )
    .map_err(|why| format!("reply refused, not stored: {why}"))?;
    Ok((answer.body, stamp))
}

/// Ends or reschedules the row and, when `accepted`, stores the constancia in the same transaction;
/// nothing at all when this worker lost its lease.
fn finish(
    db: &Db,
    leased: &Leased,
    outcome: &Outcome,
    accepted: Option<&Accepted>,
) -> Result<(), Error> {
    let row = &leased.row;
    QUEUE.finish(
        db,
        &text(&row.digest),
        &leased.lease,
        outcome,
        |db, held| {
            if let (true, Some((reply, stamp))) = (held, accepted) {
                db.execute(
                    STORE,
                    &[
                        text(&row.digest),
                        text(&row.subject),
                        int(row.prescription_id),
                        blob(reply),
                        text(&stamp.gen_time),
                        text(&stamp.tsa),
                        text(&stamp.serial),
                        text(&common::time::now_iso8601()),
                    ],
                )?;
            }
            Ok::<(), Error>(())
        },
    )?;
    Ok(())
}

/// The authorities of `timestamp_ca`: `None` when it is not set (the chain is not checked); an
/// error, refusing every reply, when it is set but holds no certificate.
fn anchors(stamping: &Stamping) -> Result<Option<Vec<pkix::Certificate>>, String> {
    let Some(pem) = stamping.ca.as_deref() else {
        return Ok(None);
    };
    match pkix::pem_bundle(pem)? {
        certs if certs.is_empty() => Err("it holds no PEM certificate".into()),
        certs => Ok(Some(certs)),
    }
}

/// 64 hex characters as the 32 bytes they spell.
fn digest_bytes(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_read_as_their_bytes() {
        let hex = "00ff".repeat(16);
        let bytes = digest_bytes(&hex).unwrap();
        assert_eq!((bytes[0], bytes[1], bytes[31]), (0x00, 0xff, 0xff));
        assert!(digest_bytes("abc").is_none());
        assert!(digest_bytes(&"zz".repeat(32)).is_none());
    }
}
