//! The API's contract, served by the app itself: `GET /api/v2/openapi.json` (the OpenAPI 3.1
//! document kept in the repository as `openapi/receta.json`, compiled in) and `GET /docs`, a
//! human-readable reference rendered from that same document. No token, no script, no external
//! asset; the page's one style sheet is allowed by its hash, as on the patient's page.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;
use sha2::{Digest, Sha256};

use common::html::escape;
use common::types::Error;

use crate::http::Response;

/// The OpenAPI document (see `openapi/README.md` for how it is kept), without its indentation
/// (`build.rs`).
pub const OPENAPI: &str = include_str!(concat!(env!("OUT_DIR"), "/openapi.json"));

const CSS: &str = "\
:root{color-scheme:light;--ink:#1b2a33;--muted:#5b6b75;--line:#d9e2e7;--bg:#f3f6f8;--card:#fff;--brand:#0b6e6e}\
*{box-sizing:border-box}\
body{margin:0;background:var(--bg);color:var(--ink);\
font:15px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,sans-serif}\
main{max-width:60rem;margin:0 auto;padding:0 1rem 3rem}\
.top{background:var(--brand);color:#fff;margin:0 -1rem 1rem;padding:1.25rem 1rem}\
h1{margin:0 0 .25rem;font-size:1.6rem}\
h2{font-size:1.25rem;margin:2rem 0 .5rem;border-bottom:2px solid var(--brand);padding-bottom:.25rem}\
.op{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:.75rem 1rem;margin:0 0 .75rem}\
.op h3{margin:0;font-size:1rem;font-family:ui-monospace,Menlo,Consolas,monospace;overflow-wrap:anywhere}\
.m{display:inline-block;min-width:4.2rem;font-weight:700;color:var(--brand)}\
.op p{margin:.35rem 0}\
.auth,.note{color:var(--muted);font-size:.9rem}\
table{border-collapse:collapse;width:100%;font-size:.9rem;margin:.25rem 0}\
td,th{text-align:left;border-top:1px solid var(--line);padding:.25rem .5rem;vertical-align:top}\
pre{background:#0f1f26;color:#e6f2f2;padding:.5rem .75rem;border-radius:6px;overflow:auto;font-size:.8rem;max-height:18rem}\
details{margin-top:.25rem}summary{cursor:pointer;color:var(--brand);font-weight:600}\
";

/// `GET /api/v2/openapi.json`.
pub fn openapi() -> Result<Response, Error> {
    Ok(
        Response::bytes(200, "application/json", OPENAPI.as_bytes().to_vec())
            .with_header("cache-control", "public, max-age=300"),
    )
}

/// `GET /docs`: the reference page.
pub fn docs() -> Result<Response, Error> {
    let doc: Value =
        serde_json::from_str(OPENAPI).map_err(|e| anyhow::anyhow!("openapi/receta.json: {e}"))?;
    let style_hash = BASE64.encode(Sha256::digest(CSS.as_bytes()));
    Ok(
        Response::bytes(200, "text/html; charset=utf-8", page(&doc).into_bytes())
            .with_header(
                "content-security-policy",
                format!(
                    "default-src 'none'; style-src 'sha256-{style_hash}'; form-action 'none'; \
                 frame-ancestors 'none'; base-uri 'none'"
                ),
            )
            .with_header("x-content-type-options", "nosniff")
            .with_header("cache-control", "public, max-age=300"),
    )
}

/// The page: the document's description, then every operation by tag, with its rights, parameters,
/// request example and answers.
fn page(doc: &Value) -> String {
    let info = &doc["info"];
    let mut html = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n\
         <header class=\"top\"><h1>{}</h1><p>{}</p></header>\n\
         <p class=\"note\">The same contract as JSON: <a href=\"/api/v2/openapi.json\">/api/v2/openapi.json</a> (OpenAPI {}).</p>\n",
        escape(text(&info["title"])),
        escape(text(&info["title"])),
        escape(text(&info["description"])),
        escape(text(&doc["openapi"])),
    );
    let paths = doc["paths"].as_object().cloned().unwrap_or_default();
    for tag in doc["tags"].as_array().into_iter().flatten() {
        let tag = text(&tag["name"]);
        html.push_str(&format!("<h2 id=\"{0}\">{0}</h2>\n", escape(tag)));
        for (path, item) in &paths {
            for (method, op) in item.as_object().into_iter().flatten() {
                if op["tags"][0].as_str() == Some(tag) {
                    html.push_str(&operation(method, path, op));
                }
            }
        }
    }
    html.push_str("</main>\n</body>\n</html>\n");
    html
}

fn operation(method: &str, path: &str, op: &Value) -> String {
    let mut html = format!(
        "<section class=\"op\">\n<h3><span class=\"m\">{}</span> {}</h3>\n<p>{}</p>\n",
        escape(&method.to_ascii_uppercase()),
        escape(path),
        escape(text(&op["description"])),
    );
    let who: Vec<&str> = op["security"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_object()?.keys().next().map(String::as_str))
        .collect();
    html.push_str(&format!(
        "<p class=\"auth\">Token: {}</p>\n",
        if who.is_empty() {
            "none".to_string()
        } else {
            escape(&who.join(" or "))
        }
    ));
    if let Some(params) = op["parameters"].as_array() {
        html.push_str("<table><tr><th>parameter</th><th>in</th><th>meaning</th></tr>\n");
        for p in params {
            html.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                escape(text(&p["name"])),
                escape(text(&p["in"])),
                escape(text(&p["description"])),
            ));
        }
        html.push_str("</table>\n");
    }
    let body = &op["requestBody"]["content"]["application/json"]["example"];
    if !body.is_null() {
        html.push_str(&format!(
            "<details><summary>Request body example</summary><pre>{}</pre></details>\n",
            escape(&serde_json::to_string_pretty(body).unwrap_or_default())
        ));
    }
    html.push_str("<table><tr><th>status</th><th>when</th></tr>\n");
    for (status, r) in op["responses"].as_object().into_iter().flatten() {
        html.push_str(&format!(
            "<tr><td>{}</td><td>{}",
            escape(status),
            escape(text(&r["description"]))
        ));
        let example = &r["content"]["application/json"]["example"];
        if !example.is_null() {
            html.push_str(&format!(
                "<details><summary>example</summary><pre>{}</pre></details>",
                escape(&serde_json::to_string_pretty(example).unwrap_or_default())
            ));
        }
        html.push_str("</td></tr>\n");
    }
    html.push_str("</table>\n</section>\n");
    html
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_openapi_3_1_and_the_page_lists_every_operation() {
        let doc: Value = serde_json::from_str(OPENAPI).unwrap();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
        let html = page(&doc);
        let operations: usize = doc["paths"]
            .as_object()
            .unwrap()
            .values()
            .map(|item| item.as_object().unwrap().len())
            .sum();
        assert_eq!(html.matches("<section class=\"op\">").count(), operations);
        assert!(html.contains("/api/v1/prescriptions/burn/{signature}"));
        assert!(!html.contains("<script"));
    }
}
