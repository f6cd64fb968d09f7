//! `/api/v2/patient/` (openapi/receta.json, docs/api.md; decisions: gender, PATCH by id or uid, ownership).

use serde_json::{Value, json};

use crate::fixtures::{create_patient, patient_body};
use crate::helpers::{ADMIN_TOKEN, spawn_app};

fn is_uid(s: &str) -> bool {
    s.len() == 32
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && !s.bytes().all(|b| b.is_ascii_digit())
}

const OPTIONAL_TEXT: [&str; 8] = [
    "external_patient_file",
    "curp",
    "phone",
    "address",
    "state",
    "zip_code",
    "location",
    "email",
];

#[test]
fn create_answers_201_with_a_service_uid_and_every_default() {
    let app = spawn_app();
    let medic = app.create_medic("pat-create@example.mx");
    let body = create_patient(&app, &medic, &patient_body("Juan Pérez Ñúñez"));
    assert!(body["id"].as_i64().unwrap() > 0);
    assert!(is_uid(body["uid"].as_str().unwrap()), "{body}");
    assert_eq!(body["name"], "Juan Pérez Ñúñez");
    assert_eq!(body["date_of_birth"], "1990-06-15");
    assert_eq!(body["gender"], "M");
    assert_eq!(body["curp_valid"], false, "no CURP, no identity");
    for field in OPTIONAL_TEXT {
        assert_eq!(body[field], "", "{field} defaults to an empty string");
    }
    let mut keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    let mut expected = vec![
        "id",
        "uid",
        "name",
        "date_of_birth",
        "gender",
        "curp_valid",
        "phone_e164",
        "channels",
        "whatsapp_opt_in",
    ];
    expected.extend(OPTIONAL_TEXT);
    expected.sort();
    assert_eq!(keys, expected);
    assert_eq!(body["phone_e164"], Value::Null, "no phone, nothing parsed");
    assert_eq!(body["channels"], json!([]), "no email address, no channel");
    assert_eq!(body["whatsapp_opt_in"], Value::Null);

    // Every field given is returned as sent; a uid sent by the client is ignored.
    let full = json!({
        "uid": "mine", "id": 77,
        "name": "María López", "email": "maria@example.mx", "date_of_birth": "1985-02-28",
        "external_patient_file": "EXP-001", "gender": "F", "curp": "LOMM850228MDFPRR09",
        "phone": "+52 55 1234 5678", "address": "Calle 5 #10, Col. Centro", "state": "Jalisco",
        "zip_code": "44100", "location": "Guadalajara",
    });
    let body = create_patient(&app, &medic, &full);
    for (k, v) in full.as_object().unwrap() {
        if k != "uid" && k != "id" {
            assert_eq!(&body[k], v, "{k}");
        }
    }
    assert_ne!(body["uid"], "mine");
    assert_ne!(body["id"], 77);

    // Two patients never share a uid.
    let again = create_patient(&app, &medic, &patient_body("Juan Pérez Ñúñez"));
    assert_ne!(again["uid"], body["uid"]);
}

#[test]
fn required_fields_and_bad_values_are_400_keyed_by_field() {
    let app = spawn_app();
    let medic = app.create_medic("pat-400@example.mx");
    let resp = app.post("/api/v2/patient/", medic.token(), &json!({}));
    assert_eq!(resp.status, 400);
    let body = resp.json();
    assert_eq!(body["name"], json!(["This field is required."]));
    assert_eq!(body["date_of_birth"], json!(["This field is required."]));

    let cases = [
        (json!({"name": "", "date_of_birth": "1990-06-15"}), "name"),
        (
            json!({"name": ["x"], "date_of_birth": "1990-06-15"}),
            "name",
        ),
        (
            json!({"name": "x".repeat(300), "date_of_birth": "1990-06-15"}),
            "name",
        ),
        (
            json!({"name": "A", "date_of_birth": "1990-13-01"}),
            "date_of_birth",
        ),
        (
            json!({"name": "A", "date_of_birth": "15/06/1990"}),
            "date_of_birth",
        ),
        (
            json!({"name": "A", "date_of_birth": "2999-01-01"}),
            "date_of_birth",
        ),
        (
            json!({"name": "A", "date_of_birth": 19900615}),
            "date_of_birth",
        ),
        (
            json!({"name": "A", "date_of_birth": "1990-06-15", "email": "abcd"}),
            "email",
        ),
        (
            json!({"name": "A", "date_of_birth": "1990-06-15", "email": "x".repeat(300)}),
            "email",
        ),
        (
            json!({"name": "A", "date_of_birth": "1990-06-15", "email": {"a": 1}}),
            "email",
        ),
        (
            json!({"name": "A", "date_of_birth": "1990-06-15", "phone": "5".repeat(40)}),
            "phone",
        ),
        (
            json!({"name": "A", "date_of_birth": "1990-06-15", "zip_code": "0".repeat(32)}),
            "zip_code",
        ),
        (
            json!({"name": "A", "date_of_birth": "1990-06-15", "address": "a".repeat(600)}),
            "address",
        ),
        (
            json!({"name": "A", "date_of_birth": "1990-06-15", "curp": true}),
            "curp",
        ),
    ];
    for (body, field) in cases {
        let resp = app.post("/api/v2/patient/", medic.token(), &body);
        assert_eq!(resp.status, 400, "{body}: {}", resp.text());
        let errors = resp.json();
        assert!(errors[field][0].is_string(), "{field} in {errors}");
        assert_eq!(
            errors.as_object().unwrap().len(),
            1,
            "only {field}: {errors}"
        );
    }

    // The email identifier needs more than 4 characters; it need not be an address.
    let ok = create_patient(
        &app,
        &medic,
        &json!({"name": "A", "date_of_birth": "1990-06-15", "email": "EXP-1"}),
    );
    assert_eq!(ok["email"], "EXP-1");
    let empty = create_patient(
        &app,
        &medic,
        &json!({"name": "A", "date_of_birth": "1990-06-15", "email": ""}),
    );
    assert_eq!(empty["email"], "");

    let malformed = app.raw(
        "POST",
        "/api/v2/patient/",
        medic.token(),
        Some(("application/json", b"{\"name\"")),
    );
    assert_eq!(malformed.status, 400);
    assert!(malformed.json()["message"].is_string());
    let array = app.post("/api/v2/patient/", medic.token(), &json!([1, 2]));
    assert_eq!(array.status, 400);
    assert!(array.json()["message"].is_string());
}

#[test]
fn gender_letters_are_kept_words_are_mapped_anything_else_is_400() {
    let app = spawn_app();
    let medic = app.create_medic("pat-gender@example.mx");
    for (sent, stored) in [
        ("M", "M"),
        ("F", "F"),
        ("O", "O"),
        ("H", "H"),
        ("male", "M"),
        ("Female", "F"),
        ("OTHER", "O"),
    ] {
        let mut body = patient_body("G");
        body["gender"] = json!(sent);
        assert_eq!(
            create_patient(&app, &medic, &body)["gender"],
            stored,
            "{sent}"
        );
    }
    for bad in [
        json!("X"),
        json!("hombre"),
        json!(""),
        json!(1),
        json!(true),
    ] {
        let mut body = patient_body("G");
        body["gender"] = bad.clone();
        let resp = app.post("/api/v2/patient/", medic.token(), &body);
        assert_eq!(resp.status, 400, "{bad}");
        let message = resp.json()["gender"][0].as_str().unwrap().to_string();
        assert!(message.contains("M, F, O, H"), "{message}");
    }
}

#[test]
fn list_is_a_bare_array_with_limit_offset_and_literal_search() {
    let app = spawn_app();
    let medic = app.create_medic("pat-list@example.mx");
    let names = [
        "Ana Gómez",
        "Beto Ruiz",
        "Carla Díaz",
        "100% Real_Name",
        "Dora O'Brien",
    ];
    for (i, name) in names.iter().enumerate() {
        let mut body = patient_body(name);
        body["email"] = json!(format!("p{i}@correo.mx"));
        create_patient(&app, &medic, &body);
    }
    let all = app.get("/api/v2/patient/", medic.token());
    assert_eq!(all.status, 200);
    let listed: Vec<String> = all
        .json()
        .as_array()
        .expect("a bare array")
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed, names, "oldest first");

    let page = app
        .get("/api/v2/patient/?limit=2&offset=1", medic.token())
        .json();
    let page: Vec<&str> = page
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(page, ["Beto Ruiz", "Carla Díaz"]);

    let search = |q: &str| -> Vec<String> {
        let resp = app.get(&format!("/api/v2/patient/?search={q}"), medic.token());
        assert_eq!(resp.status, 200, "{q}: {}", resp.text());
        resp.json()
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(search("carla"), ["Carla Díaz"], "name, any case");
    assert_eq!(search("p1%40correo"), ["Beto Ruiz"], "email");
    assert_eq!(search("%25"), ["100% Real_Name"], "% is literal");
    assert_eq!(search("_"), ["100% Real_Name"], "_ is literal");
    assert_eq!(
        search("R_al"),
        Vec::<String>::new(),
        "_ does not match any character"
    );
    assert_eq!(search("O'Brien"), ["Dora O'Brien"]);
    assert_eq!(
        search("%27%20OR%201%3D1%20--"),
        Vec::<String>::new(),
        "injection-looking text matches nothing"
    );
    assert_eq!(
        search("%5C"),
        Vec::<String>::new(),
        "a backslash is literal"
    );
    assert_eq!(search("").len(), 5);

    for bad in ["limit=-1", "limit=abc", "offset=-1", "limit=0"] {
        let resp = app.get(&format!("/api/v2/patient/?{bad}"), medic.token());
        assert_eq!(resp.status, 400, "{bad}");
    }
    let long = app.get(
        &format!("/api/v2/patient/?search={}", "a".repeat(300)),
        medic.token(),
    );
    assert_eq!(long.status, 400);
    assert!(long.json()["search"][0].is_string());
}

#[test]
fn get_by_uid_or_id_and_404_otherwise() {
    let app = spawn_app();
    let medic = app.create_medic("pat-get@example.mx");
    let created = create_patient(&app, &medic, &patient_body("Elena"));
    let uid = created["uid"].as_str().unwrap();
    let id = created["id"].as_i64().unwrap();
    for path in [
        format!("/api/v2/patient/{uid}"),
        format!("/api/v2/patient/{uid}/"),
        format!("/api/v2/patient/{id}/"),
    ] {
        let resp = app.get(&path, medic.token());
        assert_eq!(resp.status, 200, "{path}");
        assert_eq!(resp.json(), created);
    }
    for missing in [
        "0123456789abcdef0123456789abcdef",
        "999999",
        "99999999999999999999999",
        "%27%20OR%201=1",
    ] {
        let resp = app.get(&format!("/api/v2/patient/{missing}/"), medic.token());
        assert_eq!(resp.status, 404, "{missing}");
        assert_eq!(resp.json(), json!({"message": "Not found."}));
    }
}

#[test]
fn patch_by_id_or_uid_answers_202() {
    let app = spawn_app();
    let medic = app.create_medic("pat-patch@example.mx");
    let created = create_patient(&app, &medic, &patient_body("Fer"));
    let uid = created["uid"].as_str().unwrap().to_string();
    let id = created["id"].as_i64().unwrap();

    let resp = app.patch(
        &format!("/api/v2/patient/{id}/"),
        medic.token(),
        &json!({"phone": "5512345678", "gender": "female", "uid": "x", "id": 1}),
    );
    assert_eq!(resp.status, 202, "{}", resp.text());
    let body = resp.json();
    assert_eq!(body["phone"], "5512345678");
    assert_eq!(body["gender"], "F");
    assert_eq!(body["uid"], uid.as_str(), "uid is read-only");
    assert_eq!(body["id"], id);
    assert_eq!(body["name"], "Fer", "fields left out are kept");

    let resp = app.patch(
        &format!("/api/v2/patient/{uid}"),
        medic.token(),
        &json!({"name": "Fernanda", "email": "fer@example.mx", "date_of_birth": "1991-01-31"}),
    );
    assert_eq!(resp.status, 202);
    let body = resp.json();
    assert_eq!(
        (
            body["name"].as_str(),
            body["email"].as_str(),
            body["date_of_birth"].as_str()
        ),
        (Some("Fernanda"), Some("fer@example.mx"), Some("1991-01-31"))
    );
    assert_eq!(body["phone"], "5512345678");
    assert_eq!(
        app.get(&format!("/api/v2/patient/{uid}"), medic.token())
            .json(),
        body
    );

    // Clearing an optional field with "" is allowed.
    let cleared = app
        .patch(
            &format!("/api/v2/patient/{id}"),
            medic.token(),
            &json!({"email": ""}),
        )
        .json();
    assert_eq!(cleared["email"], "");

    for (bad, field) in [
        (json!({"name": ""}), "name"),
        (json!({"name": null}), "name"),
        (json!({"gender": "Z"}), "gender"),
        (json!({"gender": null}), "gender"),
        (json!({"date_of_birth": "1991-02-30"}), "date_of_birth"),
        (json!({"email": "abc"}), "email"),
        (json!({"email": null}), "email"),
        (json!({"zip_code": "1".repeat(40)}), "zip_code"),
    ] {
        let resp = app.patch(&format!("/api/v2/patient/{id}/"), medic.token(), &bad);
        assert_eq!(resp.status, 400, "{bad}");
        assert!(resp.json()[field][0].is_string(), "{bad}: {}", resp.text());
    }
    let missing = app.patch(
        "/api/v2/patient/999999/",
        medic.token(),
        &json!({"name": "X"}),
    );
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json(), json!({"message": "Not found."}));
}

#[test]
fn another_medics_patient_does_not_exist_for_you() {
    let app = spawn_app();
    let owner = app.create_medic("owner@example.mx");
    let other = app.create_medic("other@example.mx");
    let created = create_patient(&app, &owner, &patient_body("Privada"));
    let uid = created["uid"].as_str().unwrap();
    let id = created["id"].as_i64().unwrap();

    for path in [
        format!("/api/v2/patient/{uid}"),
        format!("/api/v2/patient/{id}"),
    ] {
        let resp = app.get(&path, other.token());
        assert_eq!(resp.status, 404);
        assert_eq!(resp.json(), json!({"message": "Not found."}));
        let resp = app.patch(&path, other.token(), &json!({"name": "Robada"}));
        assert_eq!(resp.status, 404);
    }
    assert_eq!(app.get("/api/v2/patient/", other.token()).json(), json!([]));
    assert_eq!(
        app.get("/api/v2/patient/?search=Privada", other.token())
            .json(),
        json!([])
    );
    // The owner's patient is untouched.
    assert_eq!(
        app.get(&format!("/api/v2/patient/{uid}"), owner.token())
            .json()["name"],
        "Privada"
    );
}

#[test]
fn patients_need_a_medic_token() {
    let app = spawn_app();
    for (method, path) in [
        ("GET", "/api/v2/patient/"),
        ("POST", "/api/v2/patient/"),
        ("GET", "/api/v2/patient/abc"),
        ("PATCH", "/api/v2/patient/1/"),
    ] {
        let body = patient_body("X");
        let resp = app.request(method, path, None, Some(&body));
        assert_eq!(resp.status, 401, "{method} {path}");
        assert_eq!(resp.json(), json!({"message": "Invalid Token"}));
        let resp = app.request(method, path, Some(ADMIN_TOKEN), Some(&body));
        assert_eq!(resp.status, 403, "{method} {path}");
        assert!(resp.json()["message"].is_string());
    }
}
