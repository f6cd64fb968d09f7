//! Locations (openapi/receta.json, docs/api.md): the medic's hospitals with the default (active) one, and switching it.

use serde_json::{Value, json};

use crate::helpers::{ADMIN_TOKEN, spawn_app};

const UPDATE: &str = "/api/v2/locations/update/";

#[test]
fn lists_live_memberships_with_the_default_and_switches_it() {
    let app = spawn_app();
    let a = app.create_hospital(ADMIN_TOKEN, "Clínica Álamo");
    let b = app.create_hospital(ADMIN_TOKEN, "病院 B");
    let c = app.create_hospital(ADMIN_TOKEN, "C, sin membresía");
    let medic = app.create_medic("loc@clinica.mx");
    app.add_membership(medic.id, a, "MEMBER");
    app.add_membership(medic.id, b, "ADMIN");

    let resp = app.get("/api/v2/locations/", medic.token());
    assert_eq!(resp.status, 200, "{}", resp.text());
    let location = "Av. Insurgentes Sur 1234, Col. Del Valle, 03100 Ciudad de México, CDMX";
    assert_eq!(
        resp.json(),
        json!([
            {"hospital": {"name": "Clínica Álamo", "id": a, "location": location}, "default": true, "clinics": []},
            {"hospital": {"name": "病院 B", "id": b, "location": location}, "default": false, "clinics": []},
        ])
    );

    // Switch to B: B becomes the only default, and the memberships say so.
    let resp = app.patch(UPDATE, medic.token(), &json!({"hospital_id": b}));
    assert_eq!(resp.status, 200, "{}", resp.text());
    let body = resp.json();
    assert!(body["message"].is_string(), "{body}");
    let defaults: Vec<(Value, Value)> = app
        .get("/api/v2/locations", medic.token())
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["hospital"]["id"].clone(), l["default"].clone()))
        .collect();
    assert_eq!(
        defaults,
        [(json!(a), json!(false)), (json!(b), json!(true))]
    );
    let memberships = app
        .get("/api/v2/management/memberships/", Some(ADMIN_TOKEN))
        .json();
    let active: Vec<(Value, Value)> = memberships["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["hospital"].clone(), m["is_active"].clone()))
        .collect();
    assert_eq!(active, [(json!(a), json!(false)), (json!(b), json!(true))]);
    // Switching to the current one again is fine; the trailing slash is optional.
    assert_eq!(
        app.patch(
            "/api/v2/locations/update",
            medic.token(),
            &json!({"hospital_id": b})
        )
        .status,
        200
    );

    // No membership on C, or no such hospital: 404 {message}, nothing changes.
    for hospital in [json!(c), json!(987654), json!("987654")] {
        let resp = app.patch(UPDATE, medic.token(), &json!({"hospital_id": hospital}));
        assert_eq!(resp.status, 404, "{hospital}");
        assert!(resp.json()["message"].is_string());
    }
    assert_eq!(
        app.get("/api/v2/locations/", medic.token()).json()[1]["default"],
        true
    );

    // Another medic sees only their own.
    let other = app.create_medic("otro@clinica.mx");
    assert_eq!(
        app.get("/api/v2/locations/", other.token()).json(),
        json!([])
    );
    assert_eq!(
        app.patch(UPDATE, other.token(), &json!({"hospital_id": a}))
            .status,
        404
    );
}

#[test]
fn deleted_memberships_and_inactive_hospitals_are_not_locations() {
    let app = spawn_app();
    let a = app.create_hospital(ADMIN_TOKEN, "A");
    let b = app.create_hospital(ADMIN_TOKEN, "B");
    let medic = app.create_medic("loc@clinica.mx");
    let m_a = app.add_membership(medic.id, a, "MEMBER");
    app.add_membership(medic.id, b, "MEMBER");

    // A deleted membership: not listed, not selectable; B becomes the default.
    assert_eq!(
        app.delete(
            &format!("/api/v2/management/memberships/{m_a}/"),
            Some(ADMIN_TOKEN)
        )
        .status,
        204
    );
    let list = app.get("/api/v2/locations/", medic.token()).json();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["hospital"]["id"], b);
    assert_eq!(list[0]["default"], true);
    assert_eq!(
        app.patch(UPDATE, medic.token(), &json!({"hospital_id": a}))
            .status,
        404
    );

    // A hospital made inactive is not shown to its members.
    let resp = app.patch(
        &format!("/api/v2/hospital/{b}/"),
        Some(ADMIN_TOKEN),
        &json!({"is_active": false}),
    );
    assert_eq!(resp.status, 200);
    assert_eq!(
        app.get("/api/v2/locations/", medic.token()).json(),
        json!([])
    );
    assert_eq!(
        app.patch(UPDATE, medic.token(), &json!({"hospital_id": b}))
            .status,
        404
    );
    let resp = app.patch(
        &format!("/api/v2/hospital/{b}/"),
        Some(ADMIN_TOKEN),
        &json!({"is_active": true}),
    );
    assert_eq!(resp.status, 200);
    assert_eq!(
        app.get("/api/v2/locations/", medic.token()).json()[0]["default"],
        true
    );
}

#[test]
fn bad_input_and_access() {
    let app = spawn_app();
    let hospital = app.create_hospital(ADMIN_TOKEN, "H");
    let medic = app.create_medic("loc@clinica.mx");
    app.add_membership(medic.id, hospital, "MEMBER");

    for (body, message) in [
        (json!({}), "This field is required."),
        (json!({"hospital_id": null}), "This field is required."),
        (
            json!({"hospital_id": "uno"}),
            "A valid integer is required.",
        ),
        (json!({"hospital_id": 1.5}), "A valid integer is required."),
        (json!({"hospital_id": true}), "A valid integer is required."),
        (
            serde_json::from_str(r#"{"hospital_id": 123456789012345678901234567890}"#).unwrap(),
            "A valid integer is required.",
        ),
    ] {
        let resp = app.patch(UPDATE, medic.token(), &body);
        assert_eq!(resp.status, 400, "{body}");
        assert_eq!(resp.json(), json!({"hospital_id": [message]}), "{body}");
    }
    let resp = app.raw(
        "PATCH",
        UPDATE,
        medic.token(),
        Some(("application/json", b"hospital_id=1")),
    );
    assert_eq!(resp.status, 400);
    assert!(resp.json()["message"].is_string());

    // Locations belong to medics: the API admin has none (403), a bad token is 401.
    for resp in [
        app.get("/api/v2/locations/", Some(ADMIN_TOKEN)),
        app.patch(UPDATE, Some(ADMIN_TOKEN), &json!({"hospital_id": hospital})),
        app.patch(UPDATE, Some(ADMIN_TOKEN), &json!({})),
    ] {
        assert_eq!(resp.status, 403, "{}", resp.text());
        assert!(resp.json()["message"].is_string());
    }
    for token in [None, Some("bad")] {
        assert_eq!(
            app.get("/api/v2/locations/", token).json(),
            json!({"message": "Invalid Token"})
        );
        assert_eq!(
            app.patch(UPDATE, token, &json!({"hospital_id": hospital}))
                .status,
            401
        );
    }
}
