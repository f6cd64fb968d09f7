//! WhatsApp through Meta's WhatsApp Business Cloud API: a template message
//! (`POST {whatsapp_api_url}/{whatsapp_phone_number_id}/messages`, Bearer token), whose answer's
//! `messages[0].id` (`wamid…`) is the message's id; and the webhook Meta calls with its delivery
//! receipts: a `GET` subscription check (`hub.verify_token`, echo `hub.challenge`) and `POST`s of
//! statuses signed by `X-Hub-Signature-256` (HMAC-SHA256 of the raw body with the app secret).
//!
//! Business-initiated messages must be approved templates, in the patient's language (`es_MX`).
//! `whatsapp_template_issued` takes two body parameters (the prescriber, the folio) and a URL
//! button whose parameter is the prescription's signature (the template's URL ends
//! `…/rx/{{1}}`); `whatsapp_template_status` takes four (the pharmacy, what it said, the folio,
//! the pickup code or `—`) and the same button (docs/notifications.md has their texts).

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use outbound::send::Answer;
use outbound::target::Target;

use crate::config::{USER_AGENT, var};
use crate::messages::provider::{Provider, Request};
use crate::messages::rows::Row;
use crate::messages::text::{About, Said};

/// The Graph API's base, with the version the requests were written against.
pub const DEFAULT_API_URL: &str = "https://graph.facebook.com/v21.0";
/// Template names used when the variables are empty.
pub const DEFAULT_TEMPLATE_ISSUED: &str = "receta_emitida";
pub const DEFAULT_TEMPLATE_STATUS: &str = "receta_estado";
/// The language of every template.
const LANGUAGE: &str = "es_MX";

/// The configured sender: set when `whatsapp_token` and `whatsapp_phone_number_id` are.
pub struct WhatsApp {
    api_url: String,
    token: String,
    phone_number_id: String,
    template_issued: String,
    template_status: String,
}

impl WhatsApp {
    pub fn load() -> Option<WhatsApp> {
        Some(WhatsApp {
            api_url: var("whatsapp_api_url")
                .unwrap_or_else(|| DEFAULT_API_URL.into())
                .trim_end_matches('/')
                .to_string(),
            token: var("whatsapp_token")?,
            phone_number_id: var("whatsapp_phone_number_id")?,
            template_issued: var("whatsapp_template_issued")
                .unwrap_or_else(|| DEFAULT_TEMPLATE_ISSUED.into()),
            template_status: var("whatsapp_template_status")
                .unwrap_or_else(|| DEFAULT_TEMPLATE_STATUS.into()),
        })
    }

    /// The template message's JSON for `said`, to `to` (E.164).
    pub fn body(&self, to: &str, said: &Said) -> Value {
        let text = |t: &str| json!({"type": "text", "text": t});
        let (name, parameters) = match &said.about {
            About::Issued { medic } => {
                (&self.template_issued, vec![text(medic), text(&said.folio)])
            }
            About::Status {
                pharmacy,
                status,
                pickup_code,
            } => (
                &self.template_status,
                vec![
                    text(pharmacy),
                    text(Said::status_words(status)),
                    text(&said.folio),
                    text(pickup_code.as_deref().unwrap_or("—")),
                ],
            ),
        };
        json!({
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": to.trim_start_matches('+'),
            "type": "template",
            "template": {
                "name": name,
                "language": {"code": LANGUAGE},
                "components": [
                    {"type": "body", "parameters": parameters},
                    {"type": "button", "sub_type": "url", "index": "0",
                     "parameters": [text(&said.signature)]},
                ],
            },
        })
    }
}

impl Provider for WhatsApp {
    fn request(&self, message: &Row, said: &Said) -> Result<Request, String> {
        let url = format!("{}/{}/messages", self.api_url, self.phone_number_id);
        let target = Target::parse(&url).map_err(|e| format!("whatsapp_api_url: {e}"))?;
        Ok(Request {
            target,
            headers: vec![
                (
                    "authorization".into(),
                    format!("Bearer {}", self.token).into_bytes(),
                ),
                ("content-type".into(), b"application/json".to_vec()),
                ("user-agent".into(), USER_AGENT.as_bytes().to_vec()),
            ],
            body: self.body(&message.target, said).to_string().into_bytes(),
        })
    }

    fn accepted(&self, answer: &Answer) -> Result<String, String> {
        let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
        body["messages"][0]["id"]
            .as_str()
            .filter(|id| !id.is_empty())
            .map(str::to_string)
            .ok_or_else(|| "the answer carries no messages[0].id".into())
    }
}

/// The `hub.challenge` to echo when `mode` is `subscribe` and `token` is `whatsapp_verify_token`
/// (compared in constant time); `None` otherwise, and always while no token is configured.
pub fn challenge(mode: &str, token: &str, challenge: &str) -> Option<String> {
    let expected = var("whatsapp_verify_token")?;
    (mode == "subscribe" && same(token.as_bytes(), expected.as_bytes()))
        .then(|| challenge.to_string())
}

/// Whether `a` and `b` are equal, in time that does not depend on where they differ: both are
/// keyed into HMAC-SHA256 and the MACs compared with `verify_slice` (constant time).
fn same(a: &[u8], b: &[u8]) -> bool {
    let mac = |bytes: &[u8]| {
        let mut mac = Hmac::<Sha256>::new_from_slice(b"receta:compare").expect("any key");
        mac.update(bytes);
        mac
    };
    mac(a).verify_slice(&mac(b).finalize().into_bytes()).is_ok()
}

/// Whether `header` (`X-Hub-Signature-256`) is `sha256=<hex of HMAC-SHA256(app secret, body)>`,
/// compared in constant time. False while `whatsapp_app_secret` is not configured.
pub fn signed(body: &[u8], header: Option<&str>) -> bool {
    let (Some(secret), Some(header)) = (var("whatsapp_app_secret"), header) else {
        return false;
    };
    let Some(sig) = header
        .trim()
        .strip_prefix("sha256=")
        .and_then(common::hex::decode)
    else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(&sig).is_ok()
}

/// One status of a receipt POST: the message's `wamid`, its status, when (unix seconds), and the
/// error's title for a failure.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub id: String,
    pub status: String,
    pub timestamp: Option<i64>,
    pub error: Option<String>,
}

/// The statuses of a webhook POST's JSON (`entry[].changes[].value.statuses[]`); other changes
/// (incoming messages) are left alone.
pub fn statuses(body: &Value) -> Vec<Status> {
    let mut out = Vec::new();
    for entry in body["entry"].as_array().into_iter().flatten() {
        for change in entry["changes"].as_array().into_iter().flatten() {
            for s in change["value"]["statuses"].as_array().into_iter().flatten() {
                let (Some(id), Some(status)) = (s["id"].as_str(), s["status"].as_str()) else {
                    continue;
                };
                let timestamp = match &s["timestamp"] {
                    Value::String(t) => t.parse().ok(),
                    Value::Number(n) => n.as_i64(),
                    _ => None,
                };
                let error = s["errors"][0]["title"]
                    .as_str()
                    .or(s["errors"][0]["message"].as_str())
                    .map(str::to_string);
                out.push(Status {
                    id: id.to_string(),
                    status: status.to_string(),
                    timestamp,
                    error,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statuses_of_a_webhook_post_are_read_where_meta_puts_them() {
        let body = json!({"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [
            {"field": "messages", "value": {"messaging_product": "whatsapp", "statuses": [
                {"id": "wamid.A", "status": "delivered", "timestamp": "1764630000", "recipient_id": "525512345678"},
                {"id": "wamid.B", "status": "failed", "timestamp": "1764630001",
                 "errors": [{"code": 131026, "title": "Message undeliverable"}]}]}}]}]});
        let s = statuses(&body);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].id, "wamid.A");
        assert_eq!(s[0].timestamp, Some(1_764_630_000));
        assert_eq!(s[1].error.as_deref(), Some("Message undeliverable"));
        assert!(
            statuses(&json!({"entry": [{"changes": [{"value": {"messages": []}}]}]})).is_empty()
        );
    }
}
