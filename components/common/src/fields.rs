//! Reading request fields with every error collected, so a 400 names all bad fields at once:
//! `{"name": ["This field is required."], "zip_code": ["Ensure this field has fewer than 32 characters."]}`.
//!
//! A `Fields` reads a JSON object; multipart forms are turned into an object of strings first, so the
//! typed readers also accept the text forms (`"true"`, `"1"`) that form fields carry. The readers
//! parse: they give typed values (`Email`, `Date`, `Gtin`, bounded text), `None` only with the
//! field's error recorded, and `finish_with` turns "every field valid" into the values themselves.
//!
//! One file (over 500 lines): every reader records its errors in the same map, and half the file is
//! their unit tests.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::codes::Coded;
use crate::gtin::Gtin;
use crate::time::Date;
use crate::types::{Error, FieldError};

pub const REQUIRED: &str = "This field is required.";
pub const NOT_A_STRING: &str = "Not a valid string.";
pub const NOT_A_BOOLEAN: &str = "Must be a valid boolean.";
pub const NOT_AN_INTEGER: &str = "A valid integer is required.";
pub const BAD_DATE: &str = "Date has wrong format. Use one of these formats instead: YYYY-MM-DD.";
pub const NULL: &str = "This field may not be null.";
pub const BLANK: &str = "This field may not be blank.";
pub const BAD_EMAIL: &str = "Enter a valid email address.";
pub const FUTURE_BIRTH: &str = "The date of birth cannot be in the future.";

/// An email address that passed `is_valid_email`, without surrounding whitespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email(String);

impl Email {
    /// The address in `s` (trimmed), if it is one.
    pub fn parse(s: &str) -> Option<Email> {
        let s = s.trim();
        is_valid_email(s).then(|| Email(s.to_string()))
    }
}

impl From<Email> for String {
    fn from(email: Email) -> String {
        email.0
    }
}

/// The fields of one request body and the errors found so far.
#[derive(Debug, Default)]
pub struct Fields {
    map: Map<String, Value>,
    errors: BTreeMap<String, Vec<String>>,
}

/// A JSON body as a value: 400 `JSON parse error - …` (DRF's words) when it is not JSON.
pub fn parse_json(body: &[u8]) -> Result<Value, Error> {
    serde_json::from_slice(body).map_err(|e| Error::BadRequest(format!("JSON parse error - {e}")))
}

impl Fields {
    /// Reads a JSON body: it must be an object. Unknown fields are ignored.
    pub fn from_json(body: &[u8]) -> Result<Fields, Error> {
        match parse_json(body)? {
            Value::Object(map) => Ok(Fields {
                map,
                errors: BTreeMap::new(),
            }),
            _ => Err(Error::BadRequest(
                "Invalid data. Expected a JSON object.".into(),
            )),
        }
    }

    pub fn from_map(map: Map<String, Value>) -> Fields {
        Fields {
            map,
            errors: BTreeMap::new(),
        }
    }

    /// Records an error on a field.
    pub fn error(&mut self, field: &str, message: impl Into<String>) {
        self.errors
            .entry(field.to_string())
            .or_default()
            .push(message.into());
    }

    /// Whether the body has the field at all (null counts as present).
    pub fn has(&self, field: &str) -> bool {
        self.map.contains_key(field)
    }

    pub fn raw(&self, field: &str) -> Option<&Value> {
        self.map.get(field)
    }

    /// A required, non-blank string, strictly shorter than `under` characters when given. `None`
    /// only with the field's error recorded (as every `required_*`: `finish_with` takes it).
    pub fn required_str(&mut self, field: &str, under: Option<usize>) -> Option<String> {
        match self.optional_str(field, under) {
            Some(s) if !s.trim().is_empty() => Some(s),
            Some(_) => {
                self.error(field, BLANK);
                None
            }
            None => {
                if !self.errors.contains_key(field) {
                    self.error(field, REQUIRED);
                }
                None
            }
        }
    }

    /// An optional string (absent or null is `None`), strictly shorter than `under` characters when
    /// given, with no character `text::refused_in` refuses for this field.
    pub fn optional_str(&mut self, field: &str, under: Option<usize>) -> Option<String> {
        let s = match self.map.get(field) {
            None | Some(Value::Null) => return None,
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(_) => {
                self.error(field, NOT_A_STRING);
                return None;
            }
        };
        if let Some(limit) = under
            && s.chars().count() >= limit
        {
            self.error(
                field,
                format!("Ensure this field has fewer than {limit} characters."),
            );
            return None;
        }
        if let Some(message) = crate::text::refused_in(field, &s) {
            self.error(field, message);
            return None;
        }
        Some(s)
    }

    /// An optional boolean; JSON booleans and the usual text forms (`true`/`false`, `1`/`0`, `yes`/`no`).
    pub fn optional_bool(&mut self, field: &str) -> Option<bool> {
        let parsed = match self.map.get(field)? {
            Value::Null => return None,
            Value::Bool(b) => Some(*b),
            Value::Number(n) => match n.as_i64() {
                Some(1) => Some(true),
                Some(0) => Some(false),
                _ => None,
            },
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Some(true),
                "false" | "0" | "no" | "off" => Some(false),
                _ => None,
            },
            _ => None,
        };
        if parsed.is_none() {
            self.error(field, NOT_A_BOOLEAN);
        }
        parsed
    }

    /// A required boolean.
    pub fn required_bool(&mut self, field: &str) -> Option<bool> {
        if !self.has(field) || self.map.get(field) == Some(&Value::Null) {
            self.error(field, REQUIRED);
            return None;
        }
        self.optional_bool(field)
    }

    /// An optional integer; JSON integers and integer text.
    pub fn optional_i64(&mut self, field: &str) -> Option<i64> {
        let parsed = match self.map.get(field)? {
            Value::Null => return None,
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        if parsed.is_none() {
            self.error(field, NOT_AN_INTEGER);
        }
        parsed
    }

    /// An optional integer from `min` to `max`, with DRF's range messages.
    pub fn optional_in(&mut self, field: &str, min: i64, max: i64) -> Option<i64> {
        match self.optional_i64(field)? {
            n if n < min => {
                self.error(
                    field,
                    format!("Ensure this value is greater than or equal to {min}."),
                );
                None
            }
            n if n > max => {
                self.error(
                    field,
                    format!("Ensure this value is less than or equal to {max}."),
                );
                None
            }
            n => Some(n),
        }
    }

    /// A required integer.
    pub fn required_i64(&mut self, field: &str) -> Option<i64> {
        if matches!(self.map.get(field), None | Some(Value::Null)) {
            self.error(field, REQUIRED);
            return None;
        }
        self.optional_i64(field)
    }

    /// A required date of birth: a calendar date `YYYY-MM-DD`, not after today. `None` only with
    /// the field's error recorded.
    pub fn required_birth_date(&mut self, field: &str) -> Option<Date> {
        let s = self.required_str(field, None)?;
        self.birth_date(field, &s)
    }

    /// For a PATCH: a date of birth as `required_birth_date` reads it, `None` when absent.
    pub fn patch_birth_date(&mut self, field: &str) -> Option<Date> {
        let s = self.patch_str(field, None, false)?;
        self.birth_date(field, &s)
    }

    fn birth_date(&mut self, field: &str, s: &str) -> Option<Date> {
        let today = Date::parse(&crate::time::today());
        match Date::parse(s) {
            None => {
                self.error(field, BAD_DATE);
                None
            }
            Some(date) if today.is_some_and(|t| date > t) => {
                self.error(field, FUTURE_BIRTH);
                None
            }
            date => date,
        }
    }

    /// For a PATCH: `None` when the field is absent; `null` is an error, anything else reads as
    /// `optional_str`. With `allow_blank` false, an empty or all-whitespace value is an error too.
    pub fn patch_str(
        &mut self,
        field: &str,
        under: Option<usize>,
        allow_blank: bool,
    ) -> Option<String> {
        if self.map.get(field) == Some(&Value::Null) {
            self.error(field, NULL);
            return None;
        }
        let s = self.optional_str(field, under)?;
        if !allow_blank && s.trim().is_empty() {
            self.error(field, BLANK);
            return None;
        }
        Some(s)
    }

    /// For a PATCH: `None` when the field is absent; `null` is an error, anything else reads as
    /// `optional_bool`.
    pub fn patch_bool(&mut self, field: &str) -> Option<bool> {
        if self.map.get(field) == Some(&Value::Null) {
            self.error(field, NULL);
            return None;
        }
        self.optional_bool(field)
    }

    /// For a PATCH: `None` when the field is absent; `null` is an error, anything else reads as
    /// `optional_i64`.
    pub fn patch_i64(&mut self, field: &str) -> Option<i64> {
        if self.map.get(field) == Some(&Value::Null) {
            self.error(field, NULL);
            return None;
        }
        self.optional_i64(field)
    }

    /// A required email address. `None` only with the field's error recorded.
    pub fn required_email(&mut self, field: &str) -> Option<Email> {
        self.required_parsed(field, None, Email::parse, BAD_EMAIL)
    }

    /// For a PATCH: an email address, `None` when absent (or with the field's error recorded).
    pub fn patch_email(&mut self, field: &str, under: Option<usize>) -> Option<Email> {
        let s = self.patch_str(field, under, false)?;
        self.parsed(field, &s, Email::parse, BAD_EMAIL)
    }

    /// A required GTIN (`common::gtin`), at most 32 characters. `None` only with the field's error
    /// recorded (`bad` is the message for a code that is not a GTIN).
    pub fn required_gtin(&mut self, field: &str, bad: &str) -> Option<Gtin> {
        self.required_parsed(field, Some(32), Gtin::parse, bad)
    }

    /// `required_str`, then `parse`; `bad` when it gives nothing.
    fn required_parsed<T>(
        &mut self,
        field: &str,
        under: Option<usize>,
        parse: fn(&str) -> Option<T>,
        bad: &str,
    ) -> Option<T> {
        // `None`: `required_str` recorded why.
        let s = self.required_str(field, under)?;
        self.parsed(field, &s, parse, bad)
    }

    /// `parse(s)`, or `None` with `bad` recorded on `field`.
    fn parsed<T>(
        &mut self,
        field: &str,
        s: &str,
        parse: fn(&str) -> Option<T>,
        bad: &str,
    ) -> Option<T> {
        let value = parse(s);
        if value.is_none() {
            self.error(field, bad);
        }
        value
    }

    /// One of `choices`, matched exactly: `None` when absent (or null with `allow_null`), an error
    /// naming the allowed values otherwise.
    pub fn choice(&mut self, field: &str, choices: &[&str], allow_null: bool) -> Option<String> {
        match self.map.get(field) {
            None => None,
            Some(Value::Null) if allow_null => None,
            Some(Value::Null) => {
                self.error(field, NULL);
                None
            }
            Some(Value::String(s)) if choices.contains(&s.as_str()) => Some(s.clone()),
            Some(other) => {
                let shown = match other {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let allowed = choices.join(", ");
                self.error(
                    field,
                    format!("\"{shown}\" is not a valid choice. Allowed values: {allowed}."),
                );
                None
            }
        }
    }

    /// A choice among `choices`, codes of a closed set (`codes::Coded`), read as its value; the
    /// errors are `choice`'s.
    pub fn coded<T: Coded>(&mut self, field: &str, choices: &[T], allow_null: bool) -> Option<T> {
        let codes: Vec<&str> = choices.iter().map(|v| v.code()).collect();
        self.choice(field, &codes, allow_null)
            .and_then(|code| T::parse(&code))
    }

    /// A required choice (see `choice`).
    pub fn required_choice(&mut self, field: &str, choices: &[&str]) -> Option<String> {
        if matches!(self.map.get(field), None | Some(Value::Null)) {
            self.error(field, REQUIRED);
            return None;
        }
        self.choice(field, choices, false)
    }

    /// Whether any error was recorded.
    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    /// `Ok(())` when every field read was valid, else the 400 with all of them.
    pub fn finish(self) -> Result<(), Error> {
        self.finish_item().map_err(Error::Invalid)
    }

    /// `finish`, then the parsed value: a handler builds its input from values that are there, and
    /// never checks after `finish` that a parser gave something back. `value` is `None` only when
    /// a parser recorded an error; if one ever returns `None` without an error, that is this
    /// crate's bug, answered as an internal error (500, logged) rather than a panic.
    pub fn finish_with<T>(self, value: Option<T>) -> Result<T, Error> {
        self.finish_then(|| value)
    }

    /// `finish`, then `build` from the values the parsers gave (`build` uses `?` on each
    /// `required_*` value: `None` there only when a parser recorded an error, which `finish` has
    /// answered already; one without an error is this crate's bug, answered as an internal error).
    pub fn finish_then<T>(self, build: impl FnOnce() -> Option<T>) -> Result<T, Error> {
        self.finish()?;
        build().ok_or_else(|| Error::Internal("a field parser gave no value and no error".into()))
    }

    /// `finish_then` for a list item (`finish_item`); the impossible `None` is an error on the
    /// item itself.
    pub fn finish_item_then<T>(
        self,
        build: impl FnOnce() -> Option<T>,
    ) -> Result<T, Vec<FieldError>> {
        self.finish_item()?;
        build().ok_or_else(|| {
            vec![FieldError {
                field: "item".into(),
                messages: vec!["a field parser gave no value and no error".into()],
            }]
        })
    }

    /// `finish` for a list item: `Err` with every field error found, for a caller that merges them
    /// into the list's own errors.
    pub fn finish_item(self) -> Result<(), Vec<FieldError>> {
        if self.errors.is_empty() {
            return Ok(());
        }
        Err(self
            .errors
            .into_iter()
            .map(|(field, messages)| FieldError { field, messages })
            .collect())
    }
}

/// A pragmatic address check (what a mail relay will accept): one `@`; a local part of at most 64
/// characters without spaces, quotes or leading/trailing/double dots; a domain of at least two
/// dot-separated labels (letters, digits, hyphens, or non-ASCII letters for internationalised names),
/// none starting or ending with a hyphen, the last one not all digits; 254 characters at most.
pub fn is_valid_email(s: &str) -> bool {
    if s.chars().count() > 254 {
        return false;
    }
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    let local_ok = !local.is_empty()
        && local.chars().count() <= 64
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local
            .chars()
            .all(|c| c.is_alphanumeric() || "!#$%&'*+/=?^_`{|}~.-".contains(c));
    let labels: Vec<&str> = domain.split('.').collect();
    let domain_ok = labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.chars().count() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_alphanumeric() || c == '-')
        })
        && !labels
            .last()
            .is_some_and(|tld| tld.chars().all(|c| c.is_ascii_digit()));
    local_ok && domain_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_with_gives_the_value_or_every_error() {
        let mut f = Fields::from_map(serde_json::Map::new());
        let n = f.optional_i64("n");
        assert!(matches!(f.finish_with(Some(n)), Ok(None)));
        let mut f = Fields::from_json(br#"{"n": "x"}"#).unwrap();
        let n = f.optional_i64("n");
        assert!(matches!(f.finish_with(n), Err(Error::Invalid(e)) if e[0].field == "n"));
        let f = Fields::from_map(serde_json::Map::new());
        assert!(matches!(
            f.finish_with(None::<i64>),
            Err(Error::Internal(_))
        ));
    }
    use serde_json::json;

    fn fields(v: Value) -> Fields {
        Fields::from_json(v.to_string().as_bytes()).unwrap()
    }

    fn messages(result: Result<(), Error>) -> BTreeMap<String, Vec<String>> {
        match result {
            Err(Error::Invalid(errors)) => {
                errors.into_iter().map(|e| (e.field, e.messages)).collect()
            }
            other => panic!("expected field errors, got {other:?}"),
        }
    }

    #[test]
    fn collects_every_bad_field() {
        let mut f = fields(json!({"name": "", "zip": "x".repeat(32), "flag": "maybe", "n": 1.5}));
        f.required_str("name", None);
        f.required_str("missing", None);
        f.optional_str("zip", Some(32));
        f.optional_bool("flag");
        f.optional_i64("n");
        let m = messages(f.finish());
        assert_eq!(m["name"], ["This field may not be blank."]);
        assert_eq!(m["missing"], [REQUIRED]);
        assert_eq!(
            m["zip"],
            ["Ensure this field has fewer than 32 characters."]
        );
        assert_eq!(m["flag"], [NOT_A_BOOLEAN]);
        assert_eq!(m["n"], [NOT_AN_INTEGER]);
    }

    #[test]
    fn under_is_strict_and_counts_characters() {
        let mut f = fields(json!({"a": "ñ".repeat(31), "b": "x".repeat(32)}));
        assert_eq!(f.optional_str("a", Some(32)).unwrap().chars().count(), 31);
        assert!(f.optional_str("b", Some(32)).is_none());
        assert!(f.has_errors());
    }

    #[test]
    fn form_text_is_accepted_for_typed_fields() {
        let mut f = fields(json!({"b": "false", "i": "1", "t": true}));
        assert_eq!(f.optional_bool("b"), Some(false));
        assert_eq!(f.optional_i64("i"), Some(1));
        assert_eq!(f.optional_bool("t"), Some(true));
        assert!(f.finish().is_ok());
    }

    #[test]
    fn non_objects_and_bad_json_are_rejected() {
        assert!(Fields::from_json(b"[1]").is_err());
        assert!(Fields::from_json(b"{").is_err());
        assert!(Fields::from_json(b"{}").is_ok());
    }

    #[test]
    fn wrong_type_is_not_also_reported_missing() {
        let mut f = fields(json!({"name": ["x"]}));
        f.required_str("name", None);
        assert_eq!(messages(f.finish())["name"], [NOT_A_STRING]);
    }

    #[test]
    fn birth_dates_exist_and_are_not_in_the_future() {
        let mut f = fields(json!({
            "d": "2023-02-29", "ok": "2024-02-29", "future": "2999-01-01", "p": "1980-13-01"
        }));
        assert_eq!(f.required_birth_date("d"), None);
        assert_eq!(
            f.required_birth_date("ok")
                .map(|d| d.to_string())
                .as_deref(),
            Some("2024-02-29")
        );
        assert_eq!(f.required_birth_date("future"), None);
        assert_eq!(f.required_birth_date("missing"), None);
        assert_eq!(f.patch_birth_date("absent"), None);
        assert_eq!(f.patch_birth_date("p"), None);
        let m = messages(f.finish());
        assert_eq!(m["d"], [BAD_DATE]);
        assert_eq!(m["future"], [FUTURE_BIRTH]);
        assert_eq!(m["missing"], [REQUIRED]);
        assert_eq!(m["p"], [BAD_DATE]);
        assert!(!m.contains_key("ok") && !m.contains_key("absent"));
    }

    #[test]
    fn patch_readers_distinguish_absent_null_and_blank() {
        let mut f = fields(
            json!({"a": null, "b": "  ", "c": "x", "d": null, "e": false, "g": null, "h": "7"}),
        );
        assert_eq!(f.patch_str("missing", None, false), None);
        assert_eq!(f.patch_str("a", None, true), None);
        assert_eq!(f.patch_str("b", None, false), None);
        assert_eq!(f.patch_str("c", None, false).as_deref(), Some("x"));
        assert_eq!(f.patch_bool("d"), None);
        assert_eq!(f.patch_bool("e"), Some(false));
        assert_eq!(f.patch_i64("g"), None);
        assert_eq!(f.patch_i64("h"), Some(7));
        let m = messages(f.finish());
        assert_eq!(m["a"], [NULL]);
        assert_eq!(m["b"], [BLANK]);
        assert_eq!(m["d"], [NULL]);
        assert_eq!(m["g"], [NULL]);
        assert!(!m.contains_key("c") && !m.contains_key("e") && !m.contains_key("missing"));
        let mut f = fields(json!({"b": "  "}));
        assert_eq!(f.patch_str("b", None, true).as_deref(), Some("  "));
        assert!(f.finish().is_ok());
    }

    #[test]
    fn emails() {
        for ok in [
            "a@b.co",
            "ana.maria+rx@hospital.com.mx",
            "médico@clínica.mx",
            "x_y-z@sub-domain.example.org",
        ] {
            assert!(is_valid_email(ok), "{ok}");
        }
        let long_local = format!("{}@b.co", "a".repeat(65));
        for bad in [
            "",
            "a",
            "a@",
            "@b.co",
            "a@b",
            "a@@b.co",
            "a b@c.co",
            "a@b .co",
            ".a@b.co",
            "a.@b.co",
            "a..b@c.co",
            "a@-b.co",
            "a@b-.co",
            "a@b..co",
            "a@1.2.3.4",
            "\"a\"@b.co",
            "a@b.co\n",
            long_local.as_str(),
        ] {
            assert!(!is_valid_email(bad), "{bad:?}");
        }
        let mut f = fields(json!({"email": " ana@b.mx ", "bad": "nope", "p": "x@y"}));
        assert_eq!(
            f.required_email("email").map(String::from).as_deref(),
            Some("ana@b.mx")
        );
        assert_eq!(f.required_email("bad"), None);
        assert_eq!(f.required_email("missing"), None);
        assert_eq!(f.patch_email("absent", None), None);
        assert_eq!(f.patch_email("p", None), None);
        let m = messages(f.finish());
        assert_eq!(m["bad"], [BAD_EMAIL]);
        assert_eq!(m["missing"], [REQUIRED]);
        assert_eq!(m["p"], [BAD_EMAIL]);
    }

    #[test]
    fn choices_name_the_allowed_values() {
        let mut f = fields(json!({"t": "ADMIN", "u": "admin", "v": 3, "n": null}));
        assert_eq!(
            f.choice("t", &["ADMIN", "MEMBER"], false).as_deref(),
            Some("ADMIN")
        );
        assert_eq!(f.choice("u", &["ADMIN", "MEMBER"], false), None);
        assert_eq!(f.choice("v", &["ADMIN", "MEMBER"], false), None);
        assert_eq!(f.choice("n", &["ADMIN"], true), None);
        assert_eq!(f.choice("absent", &["ADMIN"], false), None);
        assert_eq!(f.required_choice("missing", &["ADMIN"]), None);
        let m = messages(f.finish());
        assert_eq!(
            m["u"],
            ["\"admin\" is not a valid choice. Allowed values: ADMIN, MEMBER."]
        );
        assert_eq!(
            m["v"],
            ["\"3\" is not a valid choice. Allowed values: ADMIN, MEMBER."]
        );
        assert_eq!(m["missing"], [REQUIRED]);
        assert!(!m.contains_key("n") && !m.contains_key("absent"));
    }
}
