//! Reading what a request carries beyond `Fields`: the `search` parameter, lists of objects, and the
//! closed sets more than one route reads.

use serde_json::{Map, Value};

use common::fields::Fields;
use common::types::{Error, FieldError};

use crate::http::Request;

/// The LGS art. 226 classes a medication may declare.
pub const FRACCIONES: [&str; 6] = ["I", "II", "III", "IV", "V", "VI"];

/// `search` in a list: strictly under this many characters.
pub const SEARCH: usize = 256;

/// The `search` query parameter: `None` when absent or empty, 400 when too long or carrying a
/// character stored text may not (`common::text`: `search=%00` does not match everything).
pub fn search_param(req: &Request) -> Result<Option<String>, Error> {
    match req.query().get("search") {
        None | Some("") => Ok(None),
        Some(s) if s.chars().count() >= SEARCH => Err(Error::field(
            "search",
            format!("Ensure this field has fewer than {SEARCH} characters."),
        )),
        Some(s) => match common::text::refused(s, false) {
            Some(message) => Err(Error::field("search", message)),
            None => Ok(Some(s.to_string())),
        },
    }
}

/// `field`: a required, non-empty list of at most `max` objects, each read by `item`. Every problem
/// is a message on `field`, `Item N, <field>: <message>` (numbered from 1), so one 400 names them
/// all; the items that read well are returned.
pub fn object_items<T>(
    f: &mut Fields,
    field: &str,
    max: usize,
    item: impl Fn(Map<String, Value>) -> Result<T, Vec<FieldError>>,
) -> Vec<T> {
    let items = match f.raw(field) {
        None | Some(Value::Null) => {
            f.error(field, common::fields::REQUIRED);
            return Vec::new();
        }
        Some(Value::Array(items)) => items.clone(),
        Some(other) => {
            let message = format!(
                "Expected a list of items but got type \"{}\".",
                json_type(other)
            );
            f.error(field, message);
            return Vec::new();
        }
    };
    if items.is_empty() {
        f.error(field, "This list may not be empty.");
        return Vec::new();
    }
    if items.len() > max {
        f.error(
            field,
            format!("Ensure this field has no more than {max} elements."),
        );
        return Vec::new();
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, value) in items.into_iter().enumerate() {
        let n = i + 1;
        let Value::Object(map) = value else {
            let message = format!(
                "Item {n}: Invalid data. Expected a dictionary, but got {}.",
                json_type(&value)
            );
            f.error(field, message);
            continue;
        };
        match item(map) {
            Ok(read) => out.push(read),
            Err(errors) => {
                for e in errors {
                    for message in e.messages {
                        f.error(field, format!("Item {n}, {}: {message}", e.field));
                    }
                }
            }
        }
    }
    out
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}
