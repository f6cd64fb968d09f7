//! Hrana over HTTP v3 on the wire (tursodatabase/libsql `docs/HRANA_3_SPEC.md`): the JSON of a
//! pipeline request and of its answer, as far as [`super::Stream`] uses them (one batch, `close`),
//! and Spin's SQLite values in Hrana's form.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use serde::{Deserialize, Serialize};
use spin_sdk::sqlite3::{Error, QueryResult, RowResult, Value};

#[derive(Serialize)]
pub struct PipelineRequest<'a> {
    pub baton: Option<&'a str>,
    pub requests: Vec<StreamRequest<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamRequest<'a> {
    Batch { batch: Batch<'a> },
    Close,
}

#[derive(Serialize)]
pub struct Batch<'a> {
    pub steps: Vec<Step<'a>>,
}

#[derive(Serialize)]
pub struct Step<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<Condition>,
    pub stmt: Stmt<'a>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Condition {
    Ok { step: u32 },
    Not { cond: Box<Condition> },
}

#[derive(Serialize)]
pub struct Stmt<'a> {
    pub sql: &'a str,
    pub args: Vec<Arg<'a>>,
    pub want_rows: bool,
}

/// A parameter as Hrana writes values: `{"type": "integer", "value": "42"}` (an integer as text,
/// so no JSON reader rounds it), `float`, `text`, `blob` (`base64`, unpadded), `null`.
pub struct Arg<'a>(pub &'a Value);

impl Serialize for Arg<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(2))?;
        match self.0 {
            Value::Null => map.serialize_entry("type", "null")?,
            Value::Integer(n) => {
                map.serialize_entry("type", "integer")?;
                map.serialize_entry("value", &n.to_string())?;
            }
            Value::Real(x) => {
                map.serialize_entry("type", "float")?;
                map.serialize_entry("value", x)?;
            }
            Value::Text(t) => {
                map.serialize_entry("type", "text")?;
                map.serialize_entry("value", t)?;
            }
            Value::Blob(b) => {
                map.serialize_entry("type", "blob")?;
                map.serialize_entry("base64", &STANDARD_NO_PAD.encode(b))?;
            }
        }
        map.end()
    }
}

#[derive(Deserialize)]
pub struct PipelineResponse {
    pub baton: Option<String>,
    pub base_url: Option<String>,
    pub results: Vec<StreamResult>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamResult {
    Ok { response: StreamResponse },
    Error { error: ServerError },
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamResponse {
    Batch { result: BatchResult },
    Close,
}

#[derive(Deserialize)]
pub struct BatchResult {
    pub step_results: Vec<Option<StmtResult>>,
    pub step_errors: Vec<Option<ServerError>>,
}

#[derive(Deserialize)]
pub struct StmtResult {
    pub cols: Vec<Col>,
    pub rows: Vec<Vec<Cell>>,
}

#[derive(Deserialize)]
pub struct Col {
    pub name: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Cell {
    Null,
    Integer { value: String },
    Float { value: f64 },
    Text { value: String },
    Blob { base64: String },
}

#[derive(Deserialize, Clone)]
pub struct ServerError {
    pub message: String,
    #[serde(default)]
    pub code: Option<String>,
}

impl From<ServerError> for Error {
    /// The server's message, then its code (`SQLITE_CONSTRAINT`, `SQLITE_BUSY`, …) in brackets.
    fn from(e: ServerError) -> Error {
        match e.code {
            Some(code) => Error::Io(format!("{} [{code}]", e.message)),
            None => Error::Io(e.message),
        }
    }
}

impl From<StmtResult> for QueryResult {
    fn from(r: StmtResult) -> QueryResult {
        QueryResult {
            columns: r
                .cols
                .into_iter()
                .map(|c| c.name.unwrap_or_default())
                .collect(),
            rows: r
                .rows
                .into_iter()
                .map(|cells| RowResult {
                    values: cells.into_iter().map(Value::from).collect(),
                })
                .collect(),
        }
    }
}

impl From<Cell> for Value {
    fn from(cell: Cell) -> Value {
        match cell {
            Cell::Null => Value::Null,
            // The server writes what SQLite holds: an i64 always parses.
            Cell::Integer { value } => value.parse().map_or(Value::Null, Value::Integer),
            Cell::Float { value } => Value::Real(value),
            Cell::Text { value } => Value::Text(value),
            Cell::Blob { base64 } => base64_blob(&base64),
        }
    }
}

/// A blob's bytes, padded or not.
fn base64_blob(text: &str) -> Value {
    let text = text.trim_end_matches('=');
    STANDARD_NO_PAD
        .decode(text)
        .map_or(Value::Null, Value::Blob)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_written_and_read_as_hrana_writes_them() {
        let args = [
            Value::Null,
            Value::Integer(i64::MIN),
            Value::Real(1.5),
            Value::Text("é".into()),
            Value::Blob(vec![0, 255]),
        ];
        let written: Vec<_> = args
            .iter()
            .map(|v| serde_json::to_value(Arg(v)).unwrap())
            .collect();
        assert_eq!(
            serde_json::Value::Array(written.clone()),
            serde_json::json!([
                {"type": "null"},
                {"type": "integer", "value": "-9223372036854775808"},
                {"type": "float", "value": 1.5},
                {"type": "text", "value": "é"},
                {"type": "blob", "base64": "AP8"},
            ])
        );
        for (arg, json) in args.iter().zip(written) {
            let read: Value = serde_json::from_value::<Cell>(json).unwrap().into();
            assert_eq!(format!("{read:?}"), format!("{arg:?}"));
        }
    }
}
