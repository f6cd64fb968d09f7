//! Medics (openapi/receta.json, docs/api.md): creation by the API admin, and search by email.

use serde_json::{Value, json};

use crate::helpers::{ADMIN_TOKEN, field_errors, medic_body, spawn_app};

#[test]
fn admin_creates_a_medic_with_every_field_and_gets_the_token_once() {
    let app = spawn_app();
    let mut body = medic_body("Ana.Lopez@Hospital.mx");
    body["name"] = json!("Dra. Ana López Ñúñez 李娜");
    body["female"] = json!(true);
    body["unknown"] = json!("ignored");
    let resp = app.post("/api/v2/medics/", Some(ADMIN_TOKEN), &body);
    assert_eq!(resp.status, 201, "{}", resp.text());
    assert_eq!(resp.header("cache-control"), Some("no-store"));
    let medic = resp.json();
    let mut keys: Vec<&str> = medic
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "alma_mater",
            "campaign",
            "cedula_prof",
            "curp",
            "date_of_birth",
            "email",
            "female",
            "hospital",
            "id",
            "is_active",
            "is_admin_membership",
            "name",
            "password",
            "rfc",
            "specialty",
            "specialty_no",
            "specialty_verified",
            "token",
        ]
    );
    assert!(medic["id"].as_i64().unwrap() > 0);
    assert_eq!(medic["name"], "Dra. Ana López Ñúñez 李娜");
    assert_eq!(medic["email"], "Ana.Lopez@Hospital.mx");
    assert_eq!(medic["date_of_birth"], "1980-05-17");
    assert_eq!(medic["cedula_prof"], "12345678");
    assert_eq!(medic["specialty_no"], "987654");
    assert_eq!(medic["specialty"], "Medicina Interna");
    assert_eq!(medic["alma_mater"], "UNAM");
    assert_eq!(medic["female"], true);
    assert_eq!(medic["specialty_verified"], true);
    assert_eq!(medic["hospital"], Value::Null);
    assert_eq!(medic["is_active"], true);
    assert_eq!(medic["is_admin_membership"], false);
    assert_eq!(medic["campaign"], Value::Null);
    // The password comes back as a real hash, never the plain value.
    let password = medic["password"].as_str().unwrap();
    assert!(password.starts_with("$argon2id$"), "{password}");
    assert!(!password.contains("correct horse"));
    // The token works, and is shown nowhere else.
    let token = medic["token"].as_str().unwrap();
    assert!(token.len() >= 40, "{token}");
    let locations = app.get("/api/v2/locations/", Some(token));
    assert_eq!(locations.status, 200, "{}", locations.text());
    assert_eq!(locations.json(), json!([]));
    let found = app
        .get("/api/v2/search/medics/?query=ana.lopez", Some(ADMIN_TOKEN))
        .json();
    assert_eq!(
        found["results"],
        json!([{"id": medic["id"], "email": "Ana.Lopez@Hospital.mx"}])
    );
    assert!(!found.to_string().contains(token));

    // A second medic gets a different token.
    let other = app.create_medic("otro@hospital.mx");
    assert_ne!(other.token, token);
    assert_ne!(other.id, medic["id"].as_i64().unwrap());
}

#[test]
fn a_hospital_on_creation_is_the_first_membership() {
    let app = spawn_app();
    let hospital = app.create_hospital(ADMIN_TOKEN, "Hospital Central");
    let mut body = medic_body("jefa@central.mx");
    body["hospital"] = json!(hospital);
    body["is_admin_membership"] = json!(true);
    let resp = app.post("/api/v2/medics/", Some(ADMIN_TOKEN), &body);
    assert_eq!(resp.status, 201, "{}", resp.text());
    let admin = resp.json();
    assert_eq!(admin["hospital"], hospital);
    assert_eq!(admin["is_admin_membership"], true);
    let admin_token = admin["token"].as_str().unwrap();

    let mut body = medic_body("residente@central.mx");
    body["hospital"] = json!(hospital);
    let resp = app.post("/api/v2/medics/", Some(ADMIN_TOKEN), &body);
    assert_eq!(resp.status, 201, "{}", resp.text());
    let member = resp.json();
    assert_eq!(member["is_admin_membership"], false);

    let memberships = app
        .get(
            &format!("/api/v2/memberships/{hospital}/"),
            Some(ADMIN_TOKEN),
        )
        .json();
    let summary: Vec<(Value, Value, Value)> = memberships
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["medic"]["id"].clone(),
                m["type_membership"].clone(),
                m["is_active"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (admin["id"].clone(), json!("ADMIN"), json!(true)),
            (member["id"].clone(), json!("MEMBER"), json!(true))
        ]
    );
    // The ADMIN may edit the hospital; both see it as their default location.
    let resp = app.patch(
        &format!("/api/v2/hospital/{hospital}/"),
        Some(admin_token),
        &json!({"info": true}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    let member_token = member["token"].as_str().unwrap();
    let resp = app.patch(
        &format!("/api/v2/hospital/{hospital}/"),
        Some(member_token),
        &json!({"info": false}),
    );
    assert_eq!(resp.status, 403);
    let locations = app.get("/api/v2/locations/", Some(member_token)).json();
    assert_eq!(locations[0]["hospital"]["id"], hospital);
    assert_eq!(locations[0]["default"], true);
}

#[test]
fn invalid_medics_are_400_on_each_field() {
    let app = spawn_app();
    // Every required field, at once (`specialty_no` and `specialty_verified` may be left out: a
    // general practitioner, unverified until the API admin says so).
    let errors = field_errors(&app.post("/api/v2/medics/", Some(ADMIN_TOKEN), &json!({})));
    let required = [
        "name",
        "password",
        "email",
        "date_of_birth",
        "cedula_prof",
        "specialty",
        "alma_mater",
        "female",
    ];
    for field in required {
        assert_eq!(errors[field], json!(["This field is required."]), "{field}");
    }
    assert_eq!(
        errors.as_object().unwrap().len(),
        required.len(),
        "{errors}"
    );

    // Wrong types and formats.
    let cases = [
        ("email", json!("not-an-email")),
        ("email", json!("a@b")),
        ("email", json!(42)),
        ("date_of_birth", json!("17/05/1980")),
        ("date_of_birth", json!("1980-02-30")),
        ("date_of_birth", json!("2999-01-01")),
        ("female", json!("sometimes")),
        ("specialty_verified", json!("perhaps")),
        ("name", json!("n".repeat(256))),
        ("name", json!(["list"])),
        ("name", json!("   ")),
        ("password", json!("")),
        ("hospital", json!("abc")),
        ("hospital", json!(1.5)),
        ("hospital", json!(123456789)),
        (
            "hospital",
            serde_json::from_str("99999999999999999999").unwrap(),
        ),
        ("is_active", json!("nope")),
        ("is_admin_membership", json!([])),
    ];
    for (field, value) in cases {
        let mut body = medic_body("valido@clinica.mx");
        body[field] = value.clone();
        let errors = field_errors(&app.post("/api/v2/medics/", Some(ADMIN_TOKEN), &body));
        assert!(errors[field].is_array(), "{field}={value}: {errors}");
        assert_eq!(
            errors.as_object().unwrap().len(),
            1,
            "{field}={value}: {errors}"
        );
    }
    // Malformed JSON.
    let resp = app.raw(
        "POST",
        "/api/v2/medics/",
        Some(ADMIN_TOKEN),
        Some(("application/json", b"{\"name\"")),
    );
    assert_eq!(resp.status, 400);
    assert!(resp.json()["message"].is_string());
    // A JSON body over 1 MiB.
    let mut big = medic_body("grande@clinica.mx");
    big["alma_mater"] = json!("x".repeat(1_100_000));
    let resp = app.post("/api/v2/medics/", Some(ADMIN_TOKEN), &big);
    assert_eq!(resp.status, 413);
    assert!(resp.json()["message"].is_string());
    // None of the failures created a medic.
    let found = app
        .get("/api/v2/search/medics/?query=valido", Some(ADMIN_TOKEN))
        .json();
    assert_eq!(found["count"], 0);
}

#[test]
fn a_taken_email_is_400_on_email_whatever_its_case() {
    let app = spawn_app();
    app.create_medic("dup@clinica.mx");
    for email in ["dup@clinica.mx", "DUP@Clinica.MX"] {
        let errors =
            field_errors(&app.post("/api/v2/medics/", Some(ADMIN_TOKEN), &medic_body(email)));
        assert!(errors["email"].is_array(), "{email}: {errors}");
    }
    // Both problems at once.
    let mut body = medic_body("dup@clinica.mx");
    body["hospital"] = json!(4040);
    let errors = field_errors(&app.post("/api/v2/medics/", Some(ADMIN_TOKEN), &body));
    assert!(
        errors["email"].is_array() && errors["hospital"].is_array(),
        "{errors}"
    );
}

#[test]
fn only_the_api_admin_creates_medics() {
    let app = spawn_app();
    let (medic_admin, _) = app.medic_admin_of_new_hospital("jefe@clinica.mx", "H");
    let resp = app.post(
        "/api/v2/medics/",
        medic_admin.token(),
        &medic_body("nuevo@clinica.mx"),
    );
    assert_eq!(resp.status, 403);
    assert!(resp.json()["message"].is_string());
    // Forbidden before the body is even read.
    let resp = app.raw(
        "POST",
        "/api/v2/medics/",
        medic_admin.token(),
        Some(("application/json", b"{")),
    );
    assert_eq!(resp.status, 403);
    let resp = app.post("/api/v2/medics/", None, &medic_body("nuevo@clinica.mx"));
    assert_eq!(resp.status, 401);
    assert_eq!(resp.json(), json!({"message": "Invalid Token"}));
}

#[test]
fn an_inactive_medics_token_is_refused() {
    let app = spawn_app();
    let mut body = medic_body("baja@clinica.mx");
    body["is_active"] = json!(false);
    let resp = app.post("/api/v2/medics/", Some(ADMIN_TOKEN), &body);
    assert_eq!(resp.status, 201);
    assert_eq!(resp.json()["is_active"], false);
    let token = resp.json()["token"].as_str().unwrap().to_string();
    let resp = app.get("/api/v2/locations/", Some(&token));
    assert_eq!(resp.status, 401);
    assert_eq!(resp.json(), json!({"message": "Invalid Token"}));
}

#[test]
fn search_matches_email_substrings_case_insensitively_and_literally() {
    let app = spawn_app();
    let ids: Vec<i64> = [
        "ana@uno.mx",
        "ANA.maria@dos.mx",
        "beto@uno.mx",
        "100%_real@tres.mx",
        "100x_real@tres.mx",
        "under_score@tres.mx",
        "underXscore@tres.mx",
    ]
    .iter()
    .map(|e| app.create_medic(e).id)
    .collect();

    let search = |q: &str| {
        let resp = app.get(
            &format!("/api/v2/search/medics/?query={q}"),
            Some(ADMIN_TOKEN),
        );
        assert_eq!(resp.status, 200, "{q}: {}", resp.text());
        resp.json()
    };
    let body = search("ana");
    assert_eq!(body["count"], 2);
    assert_eq!(body["next"], Value::Null);
    assert_eq!(body["previous"], Value::Null);
    assert_eq!(
        body["results"],
        json!([{"id": ids[0], "email": "ana@uno.mx"}, {"id": ids[1], "email": "ANA.maria@dos.mx"}])
    );
    assert_eq!(search("UNO.MX")["count"], 2);
    // `%` and `_` are matched literally (percent-encoded in the query string).
    assert_eq!(
        search("100%25_")["results"],
        json!([{"id": ids[3], "email": "100%_real@tres.mx"}])
    );
    assert_eq!(
        search("under_")["results"],
        json!([{"id": ids[5], "email": "under_score@tres.mx"}])
    );
    assert_eq!(search("%25")["count"], 1);
    // Nothing matches: still 200, count 0. No query: nothing.
    let none = search("nadie@nada.mx");
    assert_eq!(
        none,
        json!({"count": 0, "next": null, "previous": null, "results": []})
    );
    assert_eq!(search("")["count"], 0);
    let resp = app.get("/api/v2/search/medics/", Some(ADMIN_TOKEN));
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json()["count"], 0);

    // Paginated with absolute links.
    let page = app
        .get(
            "/api/v2/search/medics/?query=.mx&limit=3&offset=3",
            Some(ADMIN_TOKEN),
        )
        .json();
    assert_eq!(page["count"], 7);
    assert_eq!(page["results"].as_array().unwrap().len(), 3);
    assert_eq!(page["results"][0]["id"], ids[3]);
    let next = page["next"].as_str().unwrap();
    assert!(
        next.starts_with("http://") && next.contains("query=.mx") && next.contains("offset=6"),
        "{next}"
    );
    assert!(page["previous"].as_str().unwrap().contains("limit=3"));
    let resp = app.get("/api/v2/search/medics/?query=a&limit=-5", Some(ADMIN_TOKEN));
    assert_eq!(resp.status, 400);
    assert!(resp.json()["limit"].is_array());
}

#[test]
fn search_is_for_the_api_admin_and_medic_admins() {
    let app = spawn_app();
    let (medic_admin, hospital) = app.medic_admin_of_new_hospital("jefe@clinica.mx", "H");
    let member = app.create_medic("miembro@clinica.mx");
    app.add_membership(member.id, hospital, "MEMBER");
    let loner = app.create_medic("solo@clinica.mx");

    let resp = app.get("/api/v2/search/medics/?query=miembro", medic_admin.token());
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(
        resp.json()["results"],
        json!([{"id": member.id, "email": "miembro@clinica.mx"}])
    );
    for medic in [&member, &loner] {
        let resp = app.get("/api/v2/search/medics/?query=jefe", medic.token());
        assert_eq!(resp.status, 403);
        assert!(resp.json()["message"].is_string());
        // The right is checked before the query string.
        assert_eq!(
            app.get("/api/v2/search/medics/?limit=x", medic.token())
                .status,
            403
        );
    }
    let resp = app.get("/api/v2/search/medics/?query=jefe", Some("wrong"));
    assert_eq!(resp.status, 401);
}
