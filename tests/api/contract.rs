//! The contract check every black-box request goes through (`TestApp::request_with_headers`):
//! each response is checked against the OpenAPI document the app serves, `openapi/receta.json`
//! (status code documented for the operation, JSON body valid against its schema), so the document
//! cannot drift from the code.
//!
//! With `RECETA_RECORD=<file>`, every exchange is also appended to that file as a JSON line
//! (method, path, status, request and response bodies): the raw material the document's examples and
//! schemas were first written from.

use std::io::Write;
use std::sync::{Mutex, OnceLock};

use serde_json::{Value, json};

use crate::paths::repo_root;
use receta_test_host::Response as TestResponse;

/// The OpenAPI document, and each operation's compiled response validators.
struct Contract {
    /// `(method, path template split on '/', responses: status → validator or None)`.
    operations: Vec<Operation>,
}

struct Operation {
    method: String,
    segments: Vec<String>,
    /// `(status, validator of the JSON body, when the status documents one)`.
    responses: Vec<(String, Option<jsonschema::Validator>)>,
}

fn contract() -> &'static Contract {
    static CONTRACT: OnceLock<Contract> = OnceLock::new();
    CONTRACT.get_or_init(|| {
        let text = std::fs::read_to_string(repo_root().join("openapi/receta.json"))
            .expect("openapi/receta.json");
        let doc: Value = serde_json::from_str(&text).expect("openapi/receta.json is JSON");
        let mut operations = Vec::new();
        for (template, item) in doc["paths"].as_object().expect("paths") {
            for (method, op) in item.as_object().expect("path item") {
                if method == "parameters" {
                    continue;
                }
                let responses = op["responses"]
                    .as_object()
                    .expect("responses")
                    .iter()
                    .map(|(status, r)| {
                        let schema = &r["content"]["application/json"]["schema"];
                        let validator = (!schema.is_null()).then(|| validator(&doc, schema));
                        (status.clone(), validator)
                    })
                    .collect();
                operations.push(Operation {
                    method: method.to_ascii_uppercase(),
                    segments: segments(template),
                    responses,
                });
            }
        }
        Contract { operations }
    })
}

/// A validator of `schema`, whose `$ref`s point into the document's `components`.
fn validator(doc: &Value, schema: &Value) -> jsonschema::Validator {
    let mut root = json!({ "components": doc["components"].clone() });
    root["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    for (k, v) in schema.as_object().into_iter().flatten() {
        root[k] = v.clone();
    }
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&root)
        .unwrap_or_else(|e| panic!("an OpenAPI schema does not compile: {e}: {schema}"))
}

fn segments(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether concrete `path` matches `template` (`{name}` matches one segment; trailing slashes
/// either way, as the app answers them).
fn matches(template: &[String], path: &[String]) -> bool {
    template.len() == path.len()
        && template
            .iter()
            .zip(path)
            .all(|(t, p)| (t.starts_with('{') && t.ends_with('}')) || t == p)
}

/// Checks one exchange against the document (see the module's documentation).
pub fn check(method: &str, path: &str, body: Option<&[u8]>, resp: &TestResponse) {
    if record(method, path, body, resp) {
        return;
    }
    let path_only = path.split('?').next().unwrap_or(path);
    // Messages name the path, not a 10 KB query string.
    let path: String = path.chars().take(200).collect();
    let concrete = segments(path_only);
    let Some(op) = contract()
        .operations
        .iter()
        .filter(|o| o.method == method && matches(&o.segments, &concrete))
        // The most specific template: the most literal segments.
        .max_by_key(|o| o.segments.iter().filter(|s| !s.starts_with('{')).count())
    else {
        // A path or method the app does not serve (the 404 and 405 tests): nothing else to check.
        // Anything else answered means a route the document lacks.
        assert!(
            [404, 405].contains(&resp.status),
            "{method} {path} answered {}, but openapi/receta.json has no such operation",
            resp.status
        );
        return;
    };
    let status = resp.status.to_string();
    let documented = op
        .responses
        .iter()
        .find(|(s, _)| *s == status)
        .or_else(|| op.responses.iter().find(|(s, _)| s == "default"));
    let Some((_, validator)) = documented else {
        panic!(
            "{method} {path} answered {status}, which openapi/receta.json does not document: {}",
            resp.text()
        );
    };
    let is_json = resp
        .header("content-type")
        .is_some_and(|c| c.starts_with("application/json"));
    if let (Some(validator), true) = (validator, is_json) {
        let body: Value = serde_json::from_slice(&resp.body)
            .unwrap_or_else(|e| panic!("{method} {path}: the JSON body does not parse: {e}"));
        if let Err(error) = validator.validate(&body) {
            panic!(
                "{method} {path} {status}: the body does not match openapi/receta.json: {error}\n{}",
                body
            );
        }
    }
}

/// `RECETA_RECORD`: appends the exchange as one JSON line (and then checks nothing: recording is
/// how a new operation's first description is drafted). Whether it recorded.
fn record(method: &str, path: &str, body: Option<&[u8]>, resp: &TestResponse) -> bool {
    static FILE: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();
    let file = FILE.get_or_init(|| {
        let path = std::env::var_os("RECETA_RECORD")?;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()
            .map(Mutex::new)
    });
    let Some(file) = file else { return false };
    let json_of = |bytes: &[u8]| serde_json::from_slice::<Value>(bytes).unwrap_or(Value::Null);
    let line = json!({
        "method": method,
        "path": path,
        "status": resp.status,
        "content_type": resp.header("content-type"),
        "request": body.map(json_of),
        "response": json_of(&resp.body),
    });
    let _ = writeln!(file.lock().unwrap(), "{line}");
    true
}
