//! NOM-151 constancias (migration 0020; docs/verification.md, "Constancias NOM-151"): one worker run
//! leases due `stamp_queue` rows, asks the timestamp authority (`timestamp_url`, RFC 3161 over HTTP)
//! for a timestamp of each digest, concurrently, checks every reply (`pkix::tsp::check_reply`:
//! granted, imprint, the nonce sent, the TSA's signature, the chain to `timestamp_ca` when set), and
//! stores an accepted one in `constancias` in the transaction that ends its queue row
//! (`common::queue`'s commit policy). A refused or missing reply is retried on the outbox's schedule
//! and never stored.

use std::time::SystemTime;

use common::db::{Db, blob, int, text};
use common::queue::{self, DUE, Outcome, Queue};
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

/// Stamps up to `limit` due digests. Nothing is leased while no
/// authority is configured (`timestamp_url` empty): the rows wait, as emails wait for a relay.
pub fn run(config: &Config, limit: u32) -> Result<DeliveryRun, Error> {
    let mut summary = DeliveryRun {
        attempted: 0,
        delivered: 0,
        failed: 0,
    };
    let Some(stamping) = config.stamping.as_ref() else {
        return Ok(summary);
    };
    if limit == 0 {
        return Ok(summary);
    }
    let db = Db::open()?;
    let now = SystemTime::now();
    if !QUEUE.any_due(&db, DUE, now, &[])? {
        return Ok(summary);
    }
    let leased = QUEUE.lease(
        &db,
        DUE,
        LEASED_COLUMNS,
        now,
        now + config.lease(),
        limit,
        &[],
        |r| {
            Ok(Row {
                digest: r.string("digest")?,
                subject: r.string("subject")?,
                prescription_id: r.i64("prescription_id")?,
            })
        },
    )?;
    let target = Target::parse(&stamping.url);
    let anchors = anchors(stamping);
    let requests: Vec<_> = leased.iter().map(|row| request(stamping, row)).collect();
    let timeout = config.timeout;
    let answers = spin_sdk::http::run(futures::future::join_all(requests.iter().map(|prepared| {
        let target = target.as_ref();
        async move {
            match (target, prepared) {
                (Ok(t), Ok(p)) => Some(send::post(t, &p.headers, p.query.clone(), timeout).await),
                _ => None,
            }
        }
    })));

    // Each row is recorded on its own (`common::queue`'s commit policy): a constancia is stored
    // once whatever happens (`STORE`). The first failure to record is returned at the end.
    let mut trouble = None;
    for ((row, prepared), answer) in leased.iter().zip(&requests).zip(answers) {
        summary.attempted += 1;
        let judged = match (&target, &anchors, prepared, answer) {
            (Err(e), ..) => Err(format!("timestamp_url: {e}")),
            (_, Err(e), ..) => Err(format!("timestamp_ca: {e}")),
            (_, _, Err(e), _) => Err(e.clone()),
            (Ok(_), Ok(anchors), Ok(p), Some(answer)) => judge(p, anchors.as_deref(), answer),
            (_, _, _, None) => Err("not sent".into()),
        };
        let (outcome, accepted) = match judged {
            Ok(accepted) => {
                summary.delivered += 1;
                (Outcome::Done, Some(accepted))
            }
            Err(error) => {
                summary.failed += 1;
                eprintln!("constancias: {}: {error}", row.row.digest);
                let outcome = Outcome::failed(row.attempts, error, config.retry_scale);
                (outcome, None)
            }
        };
        if let Err(e) = finish(&db, row, &outcome, accepted.as_ref()) {
            eprintln!("constancias: recording {}: {e:?}", row.row.digest);
            trouble.get_or_insert(e);
        }
    }
    match trouble {
        Some(e) => Err(e),
        None => Ok(summary),
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
