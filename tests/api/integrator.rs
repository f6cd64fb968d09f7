//! The calls of the original service's public docs that the seed lacked (`/api/v2/medics/` list,
//! detail and PATCH, one membership, the medic's medications), the compatibility cases (a general
//! practitioner without a specialty licence, `drug_upc` from anyone's catalog), and
//! `Idempotency-Key` on the creates.

use serde_json::{Value, json};

use crate::fixtures::{Practice, cron_less, db};
use crate::helpers::{
    ADMIN_TOKEN, TestApp, assert_message, field_errors, medic_body, spawn_app, spawn_app_with,
};

const MEDIC_KEYS: [&str; 16] = [
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
    "rfc",
    "specialty",
    "specialty_no",
    "specialty_verified",
];

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

fn ids(page: &Value) -> Vec<i64> {
    page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect()
}

#[test]
fn medics_are_listed_read_and_changed_within_the_callers_reach() {
    let app = spawn_app();
    let (boss, hospital) = app.medic_admin_of_new_hospital("jefa@example.mx", "Clínica Jefa");
    let member = app.create_medic("miembro@example.mx");
    app.add_membership(member.id, hospital, "MEMBER");
    let outsider = app.create_medic("fuera@example.mx");

    // The API admin: every medic, in the documented shape, never a secret.
    let all = app.get("/api/v2/medics/", Some(ADMIN_TOKEN));
    assert_eq!(all.status, 200, "{}", all.text());
    let all = all.json();
    assert_eq!(all["count"], 3);
    assert_eq!(ids(&all), vec![boss.id, member.id, outsider.id]);
    for m in all["results"].as_array().unwrap() {
        assert_eq!(keys(m), MEDIC_KEYS, "{m}");
        assert!(!m.to_string().contains(&boss.token));
    }
    let first = &all["results"][0];
    assert_eq!(first["hospital"], hospital);
    assert_eq!(first["is_admin_membership"], true);
    assert_eq!(first["campaign"], Value::Null);
    assert_eq!(all["results"][2]["hospital"], Value::Null);
    assert_eq!(all["results"][2]["is_admin_membership"], false);

    // A medic with an ADMIN membership: the medics of the hospitals they manage.
    let mine = app.get("/api/v2/medics/", boss.token()).json();
    assert_eq!(ids(&mine), vec![boss.id, member.id]);
    assert_eq!(
        app.get(&format!("/api/v2/medics/{}", member.id), boss.token())
            .status,
        200
    );
    assert_message(
        &app.get(&format!("/api/v2/medics/{}", outsider.id), boss.token()),
        404,
    );
    // A plain member: no list; only themselves.
    assert_message(&app.get("/api/v2/medics/", member.token()), 403);
    let me = app.get(&format!("/api/v2/medics/{}/", member.id), member.token());
    assert_eq!(me.json()["email"], "miembro@example.mx");
    assert_message(
        &app.get(&format!("/api/v2/medics/{}", boss.id), member.token()),
        404,
    );
    assert_message(&app.get("/api/v2/medics/999999", Some(ADMIN_TOKEN)), 404);
    assert_message(&app.get("/api/v2/medics/", None), 401);

    // PATCH: partial, 202 with the medic; the token never changes; the password is hashed again.
    let before: String = db(&app)
        .query_row(
            "SELECT password_hash FROM medics WHERE id = ?",
            [member.id],
            |r| r.get(0),
        )
        .unwrap();
    let resp = app.patch(
        &format!("/api/v2/medics/{}/", member.id),
        boss.token(),
        &json!({"name": "Dra. Nueva", "password": "otra contraseña segura", "specialty_no": ""}),
    );
    assert_eq!(resp.status, 202, "{}", resp.text());
    let changed = resp.json();
    assert_eq!(keys(&changed), MEDIC_KEYS);
    assert_eq!(changed["name"], "Dra. Nueva");
    assert_eq!(changed["specialty_no"], "");
    assert_eq!(changed["email"], "miembro@example.mx");
    let after: String = db(&app)
        .query_row(
            "SELECT password_hash FROM medics WHERE id = ?",
            [member.id],
            |r| r.get(0),
        )
        .unwrap();
    assert_ne!(before, after);
    assert!(after.starts_with("$argon2id$"), "{after}");
    assert!(!after.contains("otra contraseña"));
    assert_eq!(
        app.get("/api/v2/patient/", member.token()).status,
        200,
        "the token still works"
    );

    // The email stays unique; bad values are 400; admin-only fields are the API admin's.
    let taken = app.patch(
        &format!("/api/v2/medics/{}/", member.id),
        Some(ADMIN_TOKEN),
        &json!({"email": "JEFA@example.mx"}),
    );
    assert!(field_errors(&taken)["email"].is_array());
    for bad in [
        json!({"email": "not an address"}),
        json!({"name": ""}),
        json!({"date_of_birth": "1990-02-30"}),
        json!({"female": "maybe"}),
    ] {
        let resp = app.patch(
            &format!("/api/v2/medics/{}/", member.id),
            Some(ADMIN_TOKEN),
            &bad,
        );
        field_errors(&resp);
    }
    assert_message(
        &app.patch(
            &format!("/api/v2/medics/{}/", member.id),
            boss.token(),
            &json!({"specialty_verified": false}),
        ),
        403,
    );
    assert_message(
        &app.patch(
            &format!("/api/v2/medics/{}/", outsider.id),
            boss.token(),
            &json!({"name": "x"}),
        ),
        404,
    );
    let off = app.patch(
        &format!("/api/v2/medics/{}/", outsider.id),
        Some(ADMIN_TOKEN),
        &json!({"is_active": false}),
    );
    assert_eq!(off.json()["is_active"], false);
    assert_message(&app.get("/api/v2/patient/", outsider.token()), 401);
}

#[test]
fn a_general_practitioner_is_accepted_and_verified_by_the_admin() {
    let app = spawn_app();
    let mut body = medic_body("general@example.mx");
    body["specialty_no"] = json!("");
    body.as_object_mut().unwrap().remove("specialty_verified");
    let resp = app.post("/api/v2/medics/", Some(ADMIN_TOKEN), &body);
    assert_eq!(resp.status, 201, "{}", resp.text());
    let created = resp.json();
    assert_eq!(created["specialty_verified"], false);
    assert_eq!(created["specialty_no"], "");
    let mut no_field = medic_body("general2@example.mx");
    no_field.as_object_mut().unwrap().remove("specialty_no");
    assert_eq!(
        app.post("/api/v2/medics/", Some(ADMIN_TOKEN), &no_field)
            .status,
        201
    );

    // Unverified: may not prescribe until the API admin verifies them.
    let token = created["token"].as_str().unwrap().to_string();
    let id = created["id"].as_i64().unwrap();
    let hospital = app.create_hospital(ADMIN_TOKEN, "Consultorio General");
    app.add_membership(id, hospital, "ADMIN");
    let patient = app
        .post(
            "/api/v2/patient/",
            Some(&token),
            &json!({"name": "Ana López", "date_of_birth": "1990-01-01"}),
        )
        .json();
    let rx = json!({"patient": {"uid": patient["uid"]}, "medications": [{"presentation": "Paracetamol", "instructions": "1 c/8 h"}]});
    assert_message(&app.post("/api/v2/rx-endpoint/", Some(&token), &rx), 403);
    let verified = app.patch(
        &format!("/api/v2/medics/{id}/"),
        Some(ADMIN_TOKEN),
        &json!({"specialty_verified": true}),
    );
    assert_eq!(verified.status, 202);
    assert_eq!(
        app.post("/api/v2/rx-endpoint/", Some(&token), &rx).status,
        200
    );
}

#[test]
fn drug_upc_is_anyones_catalog_identifier() {
    let app = spawn_app();
    let p = Practice::new(&app, "upc@example.mx", "Clínica UPC");
    let body = |upc: &str| {
        json!({"hospital": p.hospital, "patient": {"uid": p.patient["uid"]},
               "medications": [{"presentation": "Producto propio", "instructions": "Según indicación",
                                "drug_upc": upc, "category": "basic_drug"}]})
    };
    for upc in ["SKU-ÁRBOL-0001", "a1b2c3", &"7".repeat(255)] {
        let resp = app.post("/api/v2/rx-endpoint/", p.medic.token(), &body(upc));
        assert_eq!(resp.status, 200, "{upc}: {}", resp.text());
        assert_eq!(resp.json()["medications"][0]["drug_upc"], upc);
    }
    for bad in ["x".repeat(256), "tab\there".to_string()] {
        let resp = app.post("/api/v2/rx-endpoint/", p.medic.token(), &body(&bad));
        assert!(field_errors(&resp)["medications"].is_array());
    }
}

#[test]
fn one_membership_and_the_medics_medications() {
    let app = spawn_app();
    let p = Practice::new(&app, "meds@example.mx", "Clínica Medicamentos");
    let member = app.create_medic("meds-miembro@example.mx");
    let id = app.add_membership(member.id, p.hospital, "MEMBER");
    let stranger = app.create_medic("meds-otro@example.mx");

    let list = app
        .get("/api/v2/management/memberships/", Some(ADMIN_TOKEN))
        .json();
    let listed = list["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .unwrap()
        .clone();
    for token in [Some(ADMIN_TOKEN), p.medic.token(), member.token()] {
        let one = app.get(&format!("/api/v2/management/memberships/{id}"), token);
        assert_eq!(one.status, 200, "{}", one.text());
        assert_eq!(one.json(), listed);
    }
    assert_message(
        &app.get(
            &format!("/api/v2/management/memberships/{id}/"),
            stranger.token(),
        ),
        403,
    );
    assert_message(
        &app.get("/api/v2/management/memberships/99999", Some(ADMIN_TOKEN)),
        404,
    );

    // The medic's prescribed medications, newest first, in the medication shape plus ad_id.
    let first = p.prescribe(&app);
    let second = p.prescribe(&app);
    let meds = app.get("/api/v2/medications/", p.medic.token());
    assert_eq!(meds.status, 200, "{}", meds.text());
    let meds = meds.json();
    assert_eq!(meds["count"], 2);
    let newest = &meds["results"][0];
    let mut expected = second["medications"][0].clone();
    expected["ad_id"] = json!("");
    assert_eq!(newest, &expected);
    assert_eq!(meds["results"][1]["id"], first["medications"][0]["id"]);
    let paged = app
        .get("/api/v2/medications/?limit=1&offset=1", p.medic.token())
        .json();
    assert_eq!(paged["results"][0]["id"], first["medications"][0]["id"]);
    assert_eq!(
        app.get("/api/v2/medications/", stranger.token()).json()["count"],
        0
    );
    assert_message(&app.get("/api/v2/medications/", Some(ADMIN_TOKEN)), 403);
}

/// Sends a POST with an `Idempotency-Key`.
fn post_once(
    app: &TestApp,
    path: &str,
    token: &str,
    key: &str,
    body: &Value,
) -> crate::helpers::TestResponse {
    let auth = format!("Token {token}");
    let bytes = serde_json::to_vec(body).unwrap();
    app.request_with_headers(
        "POST",
        path,
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("Idempotency-Key", key),
        ],
        Some(&bytes),
    )
}

#[test]
fn a_retried_create_with_the_same_key_is_issued_once() {
    let app = spawn_app();
    let p = Practice::new(&app, "idem@example.mx", "Clínica Idempotente");
    let token = p.medic.token.clone();
    let body = json!({"hospital": p.hospital, "patient": {"uid": p.patient["uid"]},
                      "medications": [{"presentation": "Paracetamol 500 mg", "instructions": "1 c/8 h"}]});
    let first = post_once(&app, "/api/v2/rx-endpoint/", &token, "retry-0001", &body);
    assert_eq!(first.status, 200, "{}", first.text());
    let again = post_once(&app, "/api/v2/rx-endpoint/", &token, "retry-0001", &body);
    assert_eq!(again.status, 200);
    assert_eq!(again.body, first.body, "the same body, byte for byte");
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    let list = app.get("/api/v2/rx-endpoint/", Some(&token)).json();
    assert_eq!(list["count"], 1, "issued once");

    // The same key with another body: 409; another key: a new prescription.
    let mut other = body.clone();
    other["diagnosis"] = json!("Otra cosa");
    assert_message(
        &post_once(&app, "/api/v2/rx-endpoint/", &token, "retry-0001", &other),
        409,
    );
    assert_eq!(
        post_once(&app, "/api/v2/rx-endpoint/", &token, "retry-0002", &body).status,
        200
    );
    assert_eq!(
        app.get("/api/v2/rx-endpoint/", Some(&token)).json()["count"],
        2
    );

    // Keys are per principal: another medic's same key is theirs.
    let q = Practice::new(&app, "idem2@example.mx", "Clínica Idempotente 2");
    let body_q = json!({"hospital": q.hospital, "patient": {"uid": q.patient["uid"]},
                        "medications": [{"presentation": "Paracetamol 500 mg", "instructions": "1 c/8 h"}]});
    assert_eq!(
        post_once(
            &app,
            "/api/v2/rx-endpoint/",
            &q.medic.token,
            "retry-0001",
            &body_q
        )
        .status,
        200
    );

    // Patients too; a refusal is not kept (a retry runs again); a bad key is 400.
    let patient = json!({"name": "Luisa Mora", "date_of_birth": "1991-03-04"});
    let a = post_once(&app, "/api/v2/patient/", &token, "p-1", &patient);
    let b = post_once(&app, "/api/v2/patient/", &token, "p-1", &patient);
    assert_eq!((a.status, b.status), (201, 201));
    assert_eq!(a.json()["uid"], b.json()["uid"]);
    let bad = json!({"name": "Sin fecha"});
    field_errors(&post_once(&app, "/api/v2/patient/", &token, "p-2", &bad));
    field_errors(&post_once(&app, "/api/v2/patient/", &token, "p-2", &bad));
    assert_message(
        &post_once(&app, "/api/v2/patient/", &token, &"k".repeat(256), &patient),
        400,
    );
    let uids: i64 = db(&app)
        .query_row(
            "SELECT COUNT(*) FROM patients WHERE name = 'Luisa Mora'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(uids, 1);
}

#[test]
fn a_key_older_than_a_day_is_a_new_request_and_the_jobs_forget_it() {
    if crate::helpers::on_libsql() {
        return; // It ages a row in the database file: a local database only.
    }
    let app = spawn_app_with(cron_less(&[]));
    let p = Practice::new(&app, "idem-old@example.mx", "Clínica Olvidadiza");
    let token = p.medic.token.clone();
    let body = json!({"hospital": p.hospital, "patient": {"uid": p.patient["uid"]},
                      "medications": [{"presentation": "Paracetamol 500 mg", "instructions": "1 c/8 h"}]});
    let first = post_once(&app, "/api/v2/rx-endpoint/", &token, "old-0001", &body);
    assert_eq!(first.status, 200, "{}", first.text());
    // Makes the `old-` keys `hours` old.
    let age = |hours: &str| {
        let conn = rusqlite::Connection::open(app.database_file()).unwrap();
        conn.execute(
            "UPDATE idempotency_keys SET created_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?1) \
             WHERE key LIKE 'old-%'",
            [hours],
        )
        .unwrap();
    };
    // 23 hours old: still the first answer.
    age("-23 hours");
    let again = post_once(&app, "/api/v2/rx-endpoint/", &token, "old-0001", &body);
    assert_eq!(again.body, first.body);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    // 25 hours old: a new request, issued anew, even before the jobs run.
    age("-25 hours");
    let later = post_once(&app, "/api/v2/rx-endpoint/", &token, "old-0001", &body);
    assert_eq!(later.status, 200, "{}", later.text());
    assert_eq!(later.header("idempotent-replayed"), None);
    assert_ne!(later.json()["signature"], first.json()["signature"]);
    assert_eq!(
        app.get("/api/v2/rx-endpoint/", Some(&token)).json()["count"],
        2
    );
    // The jobs delete keys older than a day, and only those.
    age("-25 hours");
    post_once(&app, "/api/v2/rx-endpoint/", &token, "new-0001", &body);
    let done = app.post("/api/v2/jobs/run/", Some(ADMIN_TOKEN), &json!({}));
    assert_eq!(done.status, 200, "{}", done.text());
    let keys: Vec<String> = {
        let conn = db(&app);
        let mut stmt = conn.prepare("SELECT key FROM idempotency_keys").unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(keys, ["new-0001"]);
}
