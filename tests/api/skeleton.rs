//! The walking skeleton through every layer: gateway → auth → catalog → SQLite.

use serde_json::{Value, json};

use crate::helpers::{ADMIN_TOKEN, hospital_body, spawn_app};

#[test]
fn admin_creates_and_reads_a_hospital_with_every_default() {
    let app = spawn_app();
    let created = app.post(
        "/api/v2/hospital/",
        Some(ADMIN_TOKEN),
        &hospital_body("Clínica Ñuñoa 東京"),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let body = created.json();
    assert!(body["id"].as_i64().unwrap() > 0);
    assert_eq!(body["name"], "Clínica Ñuñoa 東京");
    assert_eq!(body["page_size"], 0);
    assert_eq!(body["page_template"], "classic");
    assert_eq!(body["picture"], Value::Null);
    assert_eq!(body["university_logo"], Value::Null);
    assert_eq!(body["send_emails"], true);
    assert_eq!(body["info"], false);
    assert_eq!(body["google_place_id"], "");
    assert_eq!(body["headline"], "");
    assert!(body["created_at"].as_str().unwrap().ends_with('Z'));

    let id = body["id"].as_i64().unwrap();
    let read = app.get(&format!("/api/v2/hospital/{id}"), Some(ADMIN_TOKEN));
    assert_eq!(read.status, 200);
    assert_eq!(read.json(), body);
    // With the trailing slash too.
    assert_eq!(
        app.get(&format!("/api/v2/hospital/{id}/"), Some(ADMIN_TOKEN))
            .json(),
        body
    );
}

#[test]
fn list_paginates_with_absolute_links() {
    let app = spawn_app();
    for i in 0..5 {
        assert_eq!(
            app.post(
                "/api/v2/hospital/",
                Some(ADMIN_TOKEN),
                &hospital_body(&format!("H{i}"))
            )
            .status,
            201
        );
    }
    let page = app.get("/api/v2/hospital/?limit=2&offset=2", Some(ADMIN_TOKEN));
    assert_eq!(page.status, 200);
    let body = page.json();
    assert_eq!(body["count"], 5);
    let names: Vec<&str> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["H2", "H3"]);
    let next = body["next"].as_str().unwrap();
    assert!(next.starts_with(&app.address), "next is absolute: {next}");
    assert!(
        next.ends_with("/api/v2/hospital/?limit=2&offset=4"),
        "{next}"
    );
    assert!(
        body["previous"]
            .as_str()
            .unwrap()
            .ends_with("/api/v2/hospital/?limit=2")
    );

    let last = app
        .get("/api/v2/hospital/?limit=2&offset=4", Some(ADMIN_TOKEN))
        .json();
    assert_eq!(last["next"], Value::Null);
    assert_eq!(last["results"].as_array().unwrap().len(), 1);

    let default = app.get("/api/v2/hospital/", Some(ADMIN_TOKEN)).json();
    assert_eq!(default["results"].as_array().unwrap().len(), 5);
    assert_eq!(default["previous"], Value::Null);

    for bad in ["limit=-1", "limit=abc", "offset=-2"] {
        let resp = app.get(&format!("/api/v2/hospital/?{bad}"), Some(ADMIN_TOKEN));
        assert_eq!(resp.status, 400, "{bad}");
        let key = bad.split('=').next().unwrap();
        assert!(resp.json()[key][0].is_string(), "{bad}: {}", resp.text());
    }
}

#[test]
fn missing_fields_are_400_keyed_by_field() {
    let app = spawn_app();
    let resp = app.post(
        "/api/v2/hospital/",
        Some(ADMIN_TOKEN),
        &json!({"name": "Solo nombre", "zip_code": "0".repeat(32)}),
    );
    assert_eq!(resp.status, 400);
    let body = resp.json();
    for field in ["patron", "location", "contact", "zip_code"] {
        assert!(body[field][0].is_string(), "{field} in {body}");
    }
    assert!(body.get("name").is_none());

    let malformed = app.raw(
        "POST",
        "/api/v2/hospital/",
        Some(ADMIN_TOKEN),
        Some(("application/json", b"{\"name\":")),
    );
    assert_eq!(malformed.status, 400);
    assert!(malformed.json()["message"].is_string());
}

#[test]
fn unknown_hospital_is_404_with_message() {
    let app = spawn_app();
    for path in ["/api/v2/hospital/999", "/api/v2/hospital/not-a-number/"] {
        let resp = app.get(path, Some(ADMIN_TOKEN));
        assert_eq!(resp.status, 404, "{path}");
        assert_eq!(resp.json(), json!({"message": "Not found."}));
    }
}

#[test]
fn a_known_path_with_another_method_is_405_with_allow() {
    let app = spawn_app();
    for (method, path, allow) in [
        ("PUT", "/api/v2/hospital/", "GET, POST"),
        ("DELETE", "/api/v2/hospital/7/", "GET, PATCH"),
        ("DELETE", "/api/v2/medics", "GET, POST"),
        ("POST", "/rx/abc", "GET"),
    ] {
        let resp = app.request(method, path, Some(ADMIN_TOKEN), None);
        assert_eq!(resp.status, 405, "{method} {path}");
        assert_eq!(resp.header("allow"), Some(allow), "{method} {path}");
        assert_eq!(
            resp.json(),
            json!({"message": format!("Method \"{method}\" not allowed.")})
        );
    }
    let resp = app.request("PUT", "/api/v2/nothing/", Some(ADMIN_TOKEN), None);
    assert_eq!(resp.status, 404);
    assert_eq!(resp.json(), json!({"message": "Not found."}));
}

#[test]
fn bad_or_missing_token_is_401_invalid_token() {
    let app = spawn_app();
    let invalid = json!({"message": "Invalid Token"});
    for token in [None, Some("wrong"), Some("")] {
        let resp = app.get("/api/v2/hospital/", token);
        assert_eq!(resp.status, 401);
        assert_eq!(resp.json(), invalid);
    }
    let resp = app.post("/api/v2/hospital/", Some("nope"), &hospital_body("X"));
    assert_eq!(resp.status, 401);
    assert_eq!(resp.json(), invalid);
}

#[test]
fn bearer_scheme_is_refused() {
    let app = spawn_app();
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    let resp = app.request_with_headers(
        "GET",
        "/api/v2/hospital/",
        &[("Authorization", &bearer)],
        None,
    );
    assert_eq!(resp.status, 401);
    assert_eq!(resp.json(), json!({"message": "Invalid Token"}));
    let token = format!("Token {ADMIN_TOKEN}");
    assert_eq!(
        app.request_with_headers(
            "GET",
            "/api/v2/hospital/",
            &[("Authorization", &token)],
            None
        )
        .status,
        200
    );
}

#[test]
fn no_admin_token_configured_means_no_admin() {
    let config = crate::helpers::AppConfig {
        env: vec![],
        ..Default::default()
    };
    let app = crate::helpers::spawn_app_with(config);
    // An empty token in the header must not match an empty configured token.
    let resp = app.request_with_headers(
        "GET",
        "/api/v2/hospital/",
        &[("Authorization", "Token ")],
        None,
    );
    assert_eq!(resp.status, 401);
    assert_eq!(app.get("/api/v2/hospital/", Some(ADMIN_TOKEN)).status, 401);
}

#[test]
fn oversized_json_is_413() {
    let app = spawn_app();
    let mut body = hospital_body("Grande");
    body["headline"] = Value::String("x".repeat(1_100_000));
    let resp = app.post("/api/v2/hospital/", Some(ADMIN_TOKEN), &body);
    assert_eq!(resp.status, 413);
    assert!(resp.json()["message"].is_string());
}

#[test]
fn the_contract_is_served_and_readable() {
    let app = spawn_app();
    let resp = app.get("/api/v2/openapi.json", None);
    assert_eq!(resp.status, 200);
    let served = resp.json();
    let kept: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(crate::helpers::repo_root().join("openapi/receta.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(served, kept, "the app serves the repository's document");
    assert!(served["openapi"].as_str().unwrap().starts_with("3.1"));
    for path in [
        "/api/v2/pharmacy/rx/{signature}",
        "/api/v1/prescriptions/burn/{signature}",
        "/api/v2/verify/{signature}",
        "/api/v2/medics/{medic_id}/",
        "/.well-known/receta-keys.json",
    ] {
        assert!(served["paths"].get(path).is_some(), "{path}");
    }
    let page = app.get("/docs", None);
    assert_eq!(page.status, 200);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let html = page.text();
    assert!(
        html.contains("/api/v1/prescriptions/burn/{signature}"),
        "{html}"
    );
    assert!(!html.contains("<script") && !html.contains("http://cdn"));
    assert!(
        page.header("content-security-policy")
            .unwrap()
            .contains("default-src 'none'")
    );
}
