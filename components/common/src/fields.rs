//! Reading request fields with every error collected, so a 400 names all bad fields at once:
//! `{"name": ["This field is required."], "zip_code": ["Ensure this field has fewer than 32 characters."]}`.
//!
//! A `Fields` reads a JSON object; multipart forms are turned into an object of strings first, so the
//! typed readers also accept the text forms (`"true"`, `"1"`) that form fields carry.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::types::{Error, FieldError};

pub const REQUIRED: &str = "This field is required.";
pub const NOT_A_STRING: &str = "Not a valid string.";
pub const NOT_A_BOOLEAN: &str = "Must be a valid boolean.";
pub const NOT_AN_INTEGER: &str = "A valid integer is required.";
pub const BAD_DATE: &str = "Date has wrong format. Use one of these formats instead: YYYY-MM-DD.";

/// The fields of one request body and the errors found so far.
#[derive(Debug, Default)]
pub struct Fields {
    map: Map<String, Value>,
    errors: BTreeMap<String, Vec<String>>,
}

impl Fields {
    /// Reads a JSON body: it must be an object. Unknown fields are ignored.
    pub fn from_json(body: &[u8]) -> Result<Fields, Error> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| Error::BadRequest(format!("JSON parse error - {e}")))?;
        match value {
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

    /// A required, non-blank string, strictly shorter than `under` characters when given.
    pub fn required_str(&mut self, field: &str, under: Option<usize>) -> String {
        match self.optional_str(field, under) {
            Some(s) if !s.trim().is_empty() => s,
            Some(_) => {
                self.error(field, "This field may not be blank.");
                String::new()
            }
            None => {
                if !self.errors.contains_key(field) {
                    self.error(field, REQUIRED);
                }
                String::new()
            }
        }
    }

    /// An optional string (absent or null is `None`), strictly shorter than `under` characters when given.
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
    pub fn required_bool(&mut self, field: &str) -> bool {
        if !self.has(field) || self.map.get(field) == Some(&Value::Null) {
            self.error(field, REQUIRED);
            return false;
        }
        self.optional_bool(field).unwrap_or(false)
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

    /// A required integer.
    pub fn required_i64(&mut self, field: &str) -> i64 {
        if matches!(self.map.get(field), None | Some(Value::Null)) {
            self.error(field, REQUIRED);
            return 0;
        }
        self.optional_i64(field).unwrap_or(0)
    }

    /// A required calendar date `YYYY-MM-DD`.
    pub fn required_date(&mut self, field: &str) -> String {
        let s = self.required_str(field, None);
        if !s.is_empty() && crate::time::Date::parse(&s).is_none() {
            self.error(field, BAD_DATE);
        }
        s
    }

    /// Whether any error was recorded.
    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    /// `Ok(())` when every field read was valid, else the 400 with all of them.
    pub fn finish(self) -> Result<(), Error> {
        if self.errors.is_empty() {
            return Ok(());
        }
        Err(Error::Invalid(
            self.errors
                .into_iter()
                .map(|(field, messages)| FieldError { field, messages })
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn dates_must_exist() {
        let mut f = fields(json!({"d": "2023-02-29", "ok": "2024-02-29"}));
        f.required_date("d");
        f.required_date("ok");
        let m = messages(f.finish());
        assert_eq!(m["d"], [BAD_DATE]);
        assert!(!m.contains_key("ok"));
    }
}
