//! SMS through Twilio's Messages API, the common SMS provider in Mexico: a form-encoded `POST
//! {twilio_api_url}/2010-04-01/Accounts/{twilio_account_sid}/Messages.json` (`To`, `From` or
//! `MessagingServiceSid`, `Body`, `StatusCallback`) with HTTP Basic auth (the account SID and its
//! auth token), whose answer's `sid` (`SM…`) is the message's id; and the status callbacks Twilio
//! posts to `StatusCallback` (`POST /api/v2/channels/twilio/status/`), form-encoded and signed by
//! `X-Twilio-Signature`: base64 of HMAC-SHA1, keyed by the auth token, over the callback's full URL
//! followed by each parameter's name and value, sorted by name.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha1::Sha1;

use outbound::send::Answer;
use outbound::target::Target;

use crate::config::{Config, USER_AGENT, var};
use crate::messages::provider::{Provider, Request};
use crate::messages::rows::Row;
use crate::messages::text::Said;

/// Twilio's API origin.
pub const DEFAULT_API_URL: &str = "https://api.twilio.com";
/// Where the status callbacks come, under `base_url`.
pub const CALLBACK_PATH: &str = "/api/v2/channels/twilio/status/";

/// The configured sender: set when `twilio_account_sid`, `twilio_auth_token` and `twilio_from`
/// are.
pub struct Twilio {
    api_url: String,
    account_sid: String,
    auth_token: String,
    /// A phone number (`From`) or a Messaging Service's SID (`MG…`, `MessagingServiceSid`).
    from: String,
    /// The `StatusCallback` URL.
    callback: String,
}

impl Twilio {
    pub fn load(config: &Config) -> Option<Twilio> {
        Some(Twilio {
            api_url: var("twilio_api_url")
                .unwrap_or_else(|| DEFAULT_API_URL.into())
                .trim_end_matches('/')
                .to_string(),
            account_sid: var("twilio_account_sid")?,
            auth_token: var("twilio_auth_token")?,
            from: var("twilio_from")?,
            callback: callback_url(config),
        })
    }

    /// The form fields of the message `said`, to `to` (E.164), in the order they are sent.
    pub fn fields(&self, to: &str, said: &Said) -> Vec<(&'static str, String)> {
        let from = match self.from.starts_with("MG") {
            true => ("MessagingServiceSid", self.from.clone()),
            false => ("From", self.from.clone()),
        };
        vec![
            ("To", to.to_string()),
            from,
            ("Body", said.sms()),
            ("StatusCallback", self.callback.clone()),
        ]
    }
}

/// The `StatusCallback` URL: `base_url`'s origin and [`CALLBACK_PATH`].
pub fn callback_url(config: &Config) -> String {
    format!("{}{CALLBACK_PATH}", config.base_url)
}

impl Provider for Twilio {
    fn request(&self, message: &Row, said: &Said) -> Result<Request, String> {
        let url = format!(
            "{}/2010-04-01/Accounts/{}/Messages.json",
            self.api_url, self.account_sid
        );
        let target = Target::parse(&url).map_err(|e| format!("twilio_api_url: {e}"))?;
        let basic = STANDARD.encode(format!("{}:{}", self.account_sid, self.auth_token));
        Ok(Request {
            target,
            headers: vec![
                (
                    "authorization".into(),
                    format!("Basic {basic}").into_bytes(),
                ),
                (
                    "content-type".into(),
                    b"application/x-www-form-urlencoded".to_vec(),
                ),
                ("user-agent".into(), USER_AGENT.as_bytes().to_vec()),
            ],
            body: form(&self.fields(&message.target, said)).into_bytes(),
        })
    }

    fn accepted(&self, answer: &Answer) -> Result<String, String> {
        let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
        body["sid"]
            .as_str()
            .filter(|sid| !sid.is_empty())
            .map(str::to_string)
            .ok_or_else(|| "the answer carries no sid".into())
    }
}

/// `application/x-www-form-urlencoded`: each name and value percent-encoded (spaces as `+`).
pub fn form(fields: &[(&str, String)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                out.push(char::from(b))
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Whether `header` (`X-Twilio-Signature`) signs a callback to `url` with `params` (as posted):
/// base64 of HMAC-SHA1 keyed by `twilio_auth_token` over `url` and every name and value, sorted by
/// name, compared in constant time. False while no auth token is configured.
pub fn signed(url: &str, params: &[(String, String)], header: Option<&str>) -> bool {
    let (Some(token), Some(header)) = (var("twilio_auth_token"), header) else {
        return false;
    };
    let Ok(sig) = STANDARD.decode(header.trim()) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(token.as_bytes()) else {
        return false;
    };
    mac.update(signed_text(url, params).as_bytes());
    mac.verify_slice(&sig).is_ok()
}

/// What Twilio signs: the URL, then each parameter's name and value, sorted by name.
pub fn signed_text(url: &str, params: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    sorted.sort();
    let mut text = url.to_string();
    for (k, v) in sorted {
        text.push_str(k);
        text.push_str(v);
    }
    text
}

/// A Twilio `MessageStatus` as a receipt (`sent`, `delivered`, `read`, `failed`); `None` for the
/// statuses before it leaves (`accepted`, `queued`, `sending`, `scheduled`).
pub fn receipt_of(status: &str) -> Option<&'static str> {
    match status {
        "sent" => Some("sent"),
        "delivered" => Some("delivered"),
        "read" => Some("read"),
        "undelivered" | "failed" | "canceled" => Some("failed"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twilios_own_example_signs_as_twilio_says() {
        // Twilio's documented example ("Validating Requests are coming from Twilio"): auth token
        // 12345, this URL and these parameters sign to this value.
        let url = "https://mycompany.com/myapp.php?foo=1&bar=2";
        let params: Vec<(String, String)> = [
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+12349013030"),
            ("Digits", "1234"),
            ("From", "+12349013030"),
            ("To", "+18005551212"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let mut mac = Hmac::<Sha1>::new_from_slice(b"12345").unwrap();
        mac.update(signed_text(url, &params).as_bytes());
        let sig = STANDARD.encode(mac.finalize().into_bytes());
        assert_eq!(sig, "0/KCTR6DLpKmkAf8muzZqo1nDgQ=");
    }

    #[test]
    fn a_form_is_percent_encoded_with_plus_for_spaces() {
        let fields = [
            ("To", "+525512345678".to_string()),
            ("Body", "Receta de Dra. Ña, folio 1.".to_string()),
        ];
        assert_eq!(
            form(&fields),
            "To=%2B525512345678&Body=Receta+de+Dra.+%C3%91a%2C+folio+1."
        );
    }

    #[test]
    fn only_what_happened_after_sending_is_a_receipt() {
        assert_eq!(receipt_of("queued"), None);
        assert_eq!(receipt_of("undelivered"), Some("failed"));
        assert_eq!(receipt_of("delivered"), Some("delivered"));
    }
}
