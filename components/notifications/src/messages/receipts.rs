//! The providers' delivery receipts: what became of a sent message (`sent`, `delivered`, `read`,
//! `failed`), found by the provider's id for it. A receipt only moves a message forward (`sent`,
//! then `failed` or `delivered`, then `read`): providers may post them late or out of order. A
//! request whose signature does not check is refused before anything is read from it, and changes
//! nothing.

use common::db::{Db, opt_text, text};
use common::types::Error;
use serde_json::Value;

use crate::messages::rows::{SMS, WHATSAPP};
use crate::messages::{twilio, whatsapp};

/// `?1` channel, `?2` the provider's id, `?3` the receipt, `?4` when, `?5` the failure's words:
/// recorded unless the message already has as late a receipt (`sent` < `failed` < `delivered` <
/// `read`).
const RECORD: &str = "UPDATE messages SET receipt = ?3, receipt_at = ?4, \
    receipt_error = CASE WHEN ?3 = 'failed' THEN ?5 ELSE receipt_error END \
    WHERE channel = ?1 AND provider_id = ?2 \
    AND COALESCE(CASE receipt WHEN 'sent' THEN 1 WHEN 'failed' THEN 2 WHEN 'delivered' THEN 3 \
      WHEN 'read' THEN 4 END, 0) \
      < CASE ?3 WHEN 'sent' THEN 1 WHEN 'failed' THEN 2 WHEN 'delivered' THEN 3 WHEN 'read' THEN 4 END \
    RETURNING id";

/// Why a receipt request is refused.
const UNSIGNED: &str = "The request's signature does not check: nothing was recorded.";

/// Records one receipt; whether it changed a message.
fn record(
    db: &Db,
    channel: &str,
    id: &str,
    receipt: &str,
    at: &str,
    error: Option<&str>,
) -> Result<bool, Error> {
    let changed = db.query_opt(
        RECORD,
        &[
            text(channel),
            text(id),
            text(receipt),
            text(at),
            opt_text(error),
        ],
        |r| r.i64("id"),
    )?;
    Ok(changed.is_some())
}

/// A WhatsApp webhook POST (`body` exactly as received, `signature` its `X-Hub-Signature-256`):
/// how many messages it changed. `forbidden` when the signature does not check; `bad-request`
/// for a body that is not JSON.
pub fn whatsapp(body: &[u8], signature: Option<&str>) -> Result<u32, Error> {
    if !whatsapp::signed(body, signature) {
        return Err(Error::forbidden(UNSIGNED));
    }
    let json: Value = serde_json::from_slice(body)
        .map_err(|e| Error::BadRequest(format!("The body is not JSON: {e}")))?;
    let statuses = whatsapp::statuses(&json);
    let db = Db::open()?;
    let mut changed = 0;
    for s in statuses {
        let Some(receipt) = known(&s.status) else {
            continue;
        };
        let at = s
            .timestamp
            .and_then(|t| u64::try_from(t).ok())
            .map(|t| {
                common::time::iso8601(std::time::UNIX_EPOCH + std::time::Duration::from_secs(t))
            })
            .unwrap_or_else(common::time::now_iso8601);
        if record(&db, WHATSAPP, &s.id, receipt, &at, s.error.as_deref())? {
            changed += 1;
        }
    }
    Ok(changed)
}

/// A Twilio status callback (`params` the form's fields as posted, `signature` its
/// `X-Twilio-Signature`): how many messages it changed. `forbidden` when the signature does not
/// check against the callback URL Twilio was given.
pub fn twilio(
    config: &crate::config::Config,
    params: &[(String, String)],
    signature: Option<&str>,
) -> Result<u32, Error> {
    if !twilio::signed(&twilio::callback_url(config), params, signature) {
        return Err(Error::forbidden(UNSIGNED));
    }
    let field = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let (Some(sid), Some(status)) = (field("MessageSid"), field("MessageStatus")) else {
        return Err(Error::BadRequest(
            "A status callback carries MessageSid and MessageStatus.".into(),
        ));
    };
    let Some(receipt) = twilio::receipt_of(status) else {
        return Ok(0);
    };
    let error = field("ErrorCode").map(|code| format!("Twilio error {code}"));
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    Ok(u32::from(record(
        &db,
        SMS,
        sid,
        receipt,
        &now,
        error.as_deref(),
    )?))
}

/// A WhatsApp status as a receipt; others (`deleted`, `warning`) are not recorded.
fn known(status: &str) -> Option<&'static str> {
    match status {
        "sent" => Some("sent"),
        "delivered" => Some("delivered"),
        "read" => Some("read"),
        "failed" => Some("failed"),
        _ => None,
    }
}
