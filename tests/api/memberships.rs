//! Memberships (openapi/receta.json, docs/lifecycle.md, docs/api.md): create (and reactivate), the management list, the per-hospital
//! list, PATCH, soft DELETE, and rules 1-3: only managed hospitals; `is_active` only through
//! locations; creating an existing membership reactivates it.
//!
//! One file (over 500 lines): the black-box tests of memberships and locations, one resource's rules sharing their fixtures.

use serde_json::{Value, json};

use crate::helpers::{ADMIN_TOKEN, TestApp, TestResponse, field_errors, spawn_app};

const MANAGE: &str = "/api/v2/management/memberships/";

fn assert_forbidden(resp: &TestResponse) {
    assert_eq!(resp.status, 403, "{}", resp.text());
    let body = resp.json();
    assert!(body["message"].is_string(), "{body}");
}

fn assert_not_found(resp: &TestResponse) {
    assert_eq!(resp.status, 404, "{}", resp.text());
    assert_eq!(resp.json(), json!({"message": "Not found."}));
}

/// Asserts the full Membership shape of openapi/receta.json.
fn assert_membership_shape(m: &Value) {
    let mut keys: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "date_joined",
            "hospital",
            "id",
            "is_active",
            "is_deleted",
            "medic",
            "type_membership"
        ],
        "{m}"
    );
    let mut medic_keys: Vec<&str> = m["medic"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    medic_keys.sort();
    assert_eq!(medic_keys, ["email", "id", "name"]);
    assert!(m["id"].is_i64() && m["hospital"].is_i64() && m["medic"]["id"].is_i64());
    assert!(m["is_active"].is_boolean() && m["is_deleted"].is_boolean());
    assert!(m["date_joined"].as_str().unwrap().ends_with('Z'));
}

fn membership(app: &TestApp, hospital: i64, id: i64) -> Value {
    let all = app
        .get(
            &format!("/api/v2/memberships/{hospital}/"),
            Some(ADMIN_TOKEN),
        )
        .json();
    all.as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} in {all}"))
}

#[test]
fn create_list_patch_delete_and_reactivate() {
    let app = spawn_app();
    let hospital = app.create_hospital(ADMIN_TOKEN, "Hospital Ñ");
    let medic = app.create_medic("médica@clinica.mx");

    let body = json!({"hospital": hospital, "type_membership": "MEMBER", "medic": medic.id});
    let resp = app.post(MANAGE, Some(ADMIN_TOKEN), &body);
    assert_eq!(resp.status, 201, "{}", resp.text());
    let created = resp.json();
    assert_eq!(created["medic"], medic.id, "the integer id");
    assert_eq!(created["type_membership"], "MEMBER");
    let id = created["id"].as_i64().unwrap();

    // Management list: paginated, full shape; the first membership is the active one.
    let list = app.get(MANAGE, Some(ADMIN_TOKEN));
    assert_eq!(list.status, 200);
    let list = list.json();
    assert_eq!(list["count"], 1);
    assert_eq!(list["next"], Value::Null);
    assert_eq!(list["previous"], Value::Null);
    let m = &list["results"][0];
    assert_membership_shape(m);
    assert_eq!(m["id"], id);
    assert_eq!(
        m["medic"],
        json!({"id": medic.id, "email": medic.email, "name": "Dr. José Núñez"})
    );
    assert_eq!(m["hospital"], hospital);
    assert_eq!(m["is_active"], true);
    assert_eq!(m["is_deleted"], false);

    // PATCH the type: 200 with the Membership object.
    let resp = app.patch(
        &format!("{MANAGE}{id}/"),
        Some(ADMIN_TOKEN),
        &json!({"type_membership": "ADMIN"}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    let patched = resp.json();
    assert_membership_shape(&patched);
    assert_eq!(patched["type_membership"], "ADMIN");
    assert_eq!(patched["date_joined"], m["date_joined"]);

    // DELETE: 204, empty; the record stays, soft-deleted and no longer active.
    let resp = app.delete(&format!("{MANAGE}{id}/"), Some(ADMIN_TOKEN));
    assert_eq!(resp.status, 204);
    assert!(resp.body.is_empty());
    let gone = membership(&app, hospital, id);
    assert_eq!(gone["is_deleted"], true);
    assert_eq!(gone["is_active"], false);
    assert_eq!(app.get(MANAGE, Some(ADMIN_TOKEN)).json()["count"], 1);
    assert_eq!(
        app.delete(&format!("{MANAGE}{id}"), Some(ADMIN_TOKEN))
            .status,
        204,
        "idempotent"
    );

    // Creating it again: 201, the same record reactivated with the type sent.
    let resp = app.post(MANAGE, Some(ADMIN_TOKEN), &body);
    assert_eq!(resp.status, 201, "{}", resp.text());
    assert_eq!(resp.json()["id"], id);
    assert_eq!(resp.json()["type_membership"], "MEMBER");
    let back = membership(&app, hospital, id);
    assert_eq!(back["is_deleted"], false);
    assert_eq!(
        back["is_active"], true,
        "the medic's only live membership is active again"
    );
    assert_eq!(app.get(MANAGE, Some(ADMIN_TOKEN)).json()["count"], 1);
    // And with it, access.
    assert_eq!(
        app.get(&format!("/api/v2/hospital/{hospital}"), medic.token())
            .status,
        200
    );
}

#[test]
fn management_list_paginates() {
    let app = spawn_app();
    let hospital = app.create_hospital(ADMIN_TOKEN, "H");
    for i in 0..5 {
        let medic = app.create_medic(&format!("m{i}@clinica.mx"));
        app.add_membership(medic.id, hospital, "MEMBER");
    }
    let page = app
        .get(&format!("{MANAGE}?limit=2&offset=2"), Some(ADMIN_TOKEN))
        .json();
    assert_eq!(page["count"], 5);
    let emails: Vec<&str> = page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["medic"]["email"].as_str().unwrap())
        .collect();
    assert_eq!(emails, ["m2@clinica.mx", "m3@clinica.mx"]);
    assert!(
        page["next"]
            .as_str()
            .unwrap()
            .ends_with("/api/v2/management/memberships/?limit=2&offset=4")
    );
    assert!(
        page["previous"]
            .as_str()
            .unwrap()
            .ends_with("/api/v2/management/memberships/?limit=2")
    );
    let resp = app.get(&format!("{MANAGE}?offset=abc"), Some(ADMIN_TOKEN));
    assert!(field_errors(&resp)["offset"].is_array());
}

#[test]
fn create_validates_every_field() {
    let app = spawn_app();
    let hospital = app.create_hospital(ADMIN_TOKEN, "H");
    let medic = app.create_medic("m@clinica.mx");

    let errors = field_errors(&app.post(MANAGE, Some(ADMIN_TOKEN), &json!({})));
    for field in ["hospital", "medic", "type_membership"] {
        assert_eq!(errors[field], json!(["This field is required."]), "{field}");
    }
    let cases = [
        json!({"hospital": hospital, "medic": medic.id, "type_membership": "OWNER"}),
        json!({"hospital": hospital, "medic": medic.id, "type_membership": "admin"}),
        json!({"hospital": hospital, "medic": medic.id, "type_membership": 1}),
        json!({"hospital": "first", "medic": medic.id, "type_membership": "ADMIN"}),
        json!({"hospital": hospital, "medic": [1], "type_membership": "ADMIN"}),
        json!({"hospital": 9999, "medic": medic.id, "type_membership": "ADMIN"}),
        json!({"hospital": hospital, "medic": 9999, "type_membership": "ADMIN"}),
        json!({"hospital": hospital, "medic": serde_json::from_str::<Value>("1e30").unwrap(), "type_membership": "ADMIN"}),
    ];
    let fields = [
        "type_membership",
        "type_membership",
        "type_membership",
        "hospital",
        "medic",
        "hospital",
        "medic",
        "medic",
    ];
    for (body, field) in cases.iter().zip(fields) {
        let errors = field_errors(&app.post(MANAGE, Some(ADMIN_TOKEN), body));
        assert!(errors[field].is_array(), "{body}: {errors}");
        assert_eq!(errors.as_object().unwrap().len(), 1, "{body}: {errors}");
    }
    let errors = field_errors(&app.post(
        MANAGE,
        Some(ADMIN_TOKEN),
        &json!({"hospital": 0, "medic": -3, "type_membership": "MEMBER"}),
    ));
    assert!(
        errors["hospital"].is_array() && errors["medic"].is_array(),
        "{errors}"
    );
    let resp = app.raw(
        "POST",
        MANAGE,
        Some(ADMIN_TOKEN),
        Some(("application/json", b"{\"medic\": 1,")),
    );
    assert_eq!(resp.status, 400);
    assert!(resp.json()["message"].is_string());
    assert_eq!(app.get(MANAGE, Some(ADMIN_TOKEN)).json()["count"], 0);
}

#[test]
fn a_medic_admin_manages_only_their_hospitals() {
    let app = spawn_app();
    let (boss, a) = app.medic_admin_of_new_hospital("jefa.a@clinica.mx", "A");
    let b = app.create_hospital(ADMIN_TOKEN, "B");
    let newcomer = app.create_medic("nuevo@clinica.mx");
    let in_b = app.create_medic("en.b@clinica.mx");
    let b_membership = app.add_membership(in_b.id, b, "ADMIN");

    // Create on A: allowed. On B: 403 (rule 1).
    let resp = app.post(
        MANAGE,
        boss.token(),
        &json!({"hospital": a, "medic": newcomer.id, "type_membership": "MEMBER"}),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let newcomer_membership = resp.json()["id"].as_i64().unwrap();
    assert_forbidden(&app.post(
        MANAGE,
        boss.token(),
        &json!({"hospital": b, "medic": newcomer.id, "type_membership": "MEMBER"}),
    ));

    // The management list holds A's memberships only.
    let list = app.get(MANAGE, boss.token()).json();
    assert_eq!(list["count"], 2);
    assert!(
        list["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["hospital"] == a),
        "{list}"
    );
    // The per-hospital list: A yes (an array), B no.
    let resp = app.get(&format!("/api/v2/memberships/{a}/"), boss.token());
    assert_eq!(resp.status, 200);
    let of_a = resp.json();
    assert_eq!(of_a.as_array().unwrap().len(), 2);
    of_a.as_array()
        .unwrap()
        .iter()
        .for_each(assert_membership_shape);
    assert_forbidden(&app.get(&format!("/api/v2/memberships/{b}/"), boss.token()));
    assert_not_found(&app.get("/api/v2/memberships/777/", boss.token()));
    assert_not_found(&app.get("/api/v2/memberships/abc/", boss.token()));

    // PATCH and DELETE: A's yes, B's 403, an unknown id 404.
    let resp = app.patch(
        &format!("{MANAGE}{newcomer_membership}/"),
        boss.token(),
        &json!({"type_membership": "ADMIN"}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_forbidden(&app.patch(
        &format!("{MANAGE}{b_membership}/"),
        boss.token(),
        &json!({"type_membership": "MEMBER"}),
    ));
    assert_forbidden(&app.patch(
        &format!("{MANAGE}{b_membership}/"),
        boss.token(),
        &json!({"type_membership": "nonsense"}),
    ));
    assert_forbidden(&app.delete(&format!("{MANAGE}{b_membership}/"), boss.token()));
    assert_not_found(&app.patch(
        &format!("{MANAGE}4242/"),
        boss.token(),
        &json!({"type_membership": "MEMBER"}),
    ));
    assert_not_found(&app.patch(&format!("{MANAGE}x1/"), boss.token(), &json!({})));
    assert_not_found(&app.delete(&format!("{MANAGE}4242/"), boss.token()));
    // Moving one of A's memberships to B needs B's management too.
    assert_forbidden(&app.patch(
        &format!("{MANAGE}{newcomer_membership}/"),
        boss.token(),
        &json!({"hospital": b}),
    ));
    // B's membership is untouched.
    assert_eq!(
        membership(&app, b, b_membership)["type_membership"],
        "ADMIN"
    );
    assert_eq!(membership(&app, b, b_membership)["is_deleted"], false);

    // The API admin manages all.
    assert_eq!(app.get(MANAGE, Some(ADMIN_TOKEN)).json()["count"], 3);
    assert_eq!(
        app.get(&format!("/api/v2/memberships/{b}/"), Some(ADMIN_TOKEN))
            .status,
        200
    );
}

#[test]
fn a_member_manages_nothing_but_may_leave() {
    let app = spawn_app();
    let hospital = app.create_hospital(ADMIN_TOKEN, "H");
    let member = app.create_medic("miembro@clinica.mx");
    let own = app.add_membership(member.id, hospital, "MEMBER");
    let other = app.create_medic("otro@clinica.mx");
    let others = app.add_membership(other.id, hospital, "MEMBER");

    assert_forbidden(&app.get(MANAGE, member.token()));
    assert_forbidden(&app.get(&format!("{MANAGE}?limit=bad"), member.token()));
    let resp = app.raw(
        "POST",
        MANAGE,
        member.token(),
        Some(("application/json", b"{")),
    );
    assert_forbidden(&resp);
    assert_forbidden(&app.get(&format!("/api/v2/memberships/{hospital}/"), member.token()));
    assert_forbidden(&app.post(
        MANAGE,
        member.token(),
        &json!({"hospital": hospital, "medic": other.id, "type_membership": "ADMIN"}),
    ));
    assert_forbidden(&app.patch(
        &format!("{MANAGE}{own}/"),
        member.token(),
        &json!({"type_membership": "ADMIN"}),
    ));
    assert_forbidden(&app.patch(
        &format!("{MANAGE}{others}/"),
        member.token(),
        &json!({"is_deleted": true}),
    ));
    assert_forbidden(&app.delete(&format!("{MANAGE}{others}/"), member.token()));
    assert_eq!(membership(&app, hospital, own)["type_membership"], "MEMBER");

    // Spec 2.2: a member may remove their own membership.
    assert_eq!(
        app.delete(&format!("{MANAGE}{own}/"), member.token())
            .status,
        204
    );
    assert_eq!(membership(&app, hospital, own)["is_deleted"], true);
    assert_eq!(membership(&app, hospital, others)["is_deleted"], false);
    assert_not_found(&app.get(&format!("/api/v2/hospital/{hospital}"), member.token()));
}

#[test]
fn a_deleted_membership_no_longer_grants_access() {
    let app = spawn_app();
    let (boss, hospital) = app.medic_admin_of_new_hospital("jefe@clinica.mx", "H");
    let someone = app.create_medic("alguien@clinica.mx");
    let someones = app.add_membership(someone.id, hospital, "MEMBER");
    let bosses = app
        .get(
            &format!("/api/v2/memberships/{hospital}/"),
            Some(ADMIN_TOKEN),
        )
        .json()[0]["id"]
        .as_i64()
        .unwrap();
    assert_eq!(app.get(MANAGE, boss.token()).status, 200);

    let resp = app.patch(
        &format!("{MANAGE}{bosses}/"),
        Some(ADMIN_TOKEN),
        &json!({"is_deleted": true}),
    );
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json()["is_deleted"], true);
    assert_eq!(resp.json()["is_active"], false);

    assert_not_found(&app.get(&format!("/api/v2/hospital/{hospital}"), boss.token()));
    assert_eq!(
        app.get("/api/v2/hospital/", boss.token()).json()["count"],
        0
    );
    assert_forbidden(&app.patch(
        &format!("/api/v2/hospital/{hospital}/"),
        boss.token(),
        &json!({"name": "x"}),
    ));
    assert_forbidden(&app.get(MANAGE, boss.token()));
    assert_forbidden(&app.get(&format!("/api/v2/memberships/{hospital}/"), boss.token()));
    assert_forbidden(&app.patch(
        &format!("{MANAGE}{someones}/"),
        boss.token(),
        &json!({"is_deleted": true}),
    ));
    assert_forbidden(&app.post(
        MANAGE,
        boss.token(),
        &json!({"hospital": hospital, "medic": boss.id, "type_membership": "ADMIN"}),
    ));
    assert_forbidden(&app.get("/api/v2/search/medics/?query=a", boss.token()));
    assert_eq!(
        app.get("/api/v2/locations/", boss.token()).json(),
        json!([])
    );
    let resp = app.patch(
        "/api/v2/locations/update/",
        boss.token(),
        &json!({"hospital_id": hospital}),
    );
    assert_eq!(resp.status, 404);

    // Reactivated by PATCH is_deleted false: access is back.
    let resp = app.patch(
        &format!("{MANAGE}{bosses}/"),
        Some(ADMIN_TOKEN),
        &json!({"is_deleted": false}),
    );
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json()["is_deleted"], false);
    assert_eq!(resp.json()["is_active"], true);
    assert_eq!(app.get(MANAGE, boss.token()).status, 200);
}

#[test]
fn patch_moves_memberships_and_ignores_is_active() {
    let app = spawn_app();
    let a = app.create_hospital(ADMIN_TOKEN, "A");
    let b = app.create_hospital(ADMIN_TOKEN, "B");
    let first = app.create_medic("primero@clinica.mx");
    let second = app.create_medic("segundo@clinica.mx");
    let m_a = app.add_membership(first.id, a, "MEMBER");
    let m_b = app.add_membership(first.id, b, "MEMBER");
    assert_eq!(
        membership(&app, a, m_a)["is_active"],
        true,
        "the first membership is the active one"
    );
    assert_eq!(membership(&app, b, m_b)["is_active"], false);

    // Rule 2: is_active is not changed by PATCH.
    let resp = app.patch(
        &format!("{MANAGE}{m_b}/"),
        Some(ADMIN_TOKEN),
        &json!({"is_active": true}),
    );
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json()["is_active"], false);
    assert_eq!(membership(&app, a, m_a)["is_active"], true);

    // Move B's membership to the second medic: it is their first, so active; the first medic keeps A.
    let resp = app.patch(
        &format!("{MANAGE}{m_b}/"),
        Some(ADMIN_TOKEN),
        &json!({"medic": second.id}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    let moved = resp.json();
    assert_membership_shape(&moved);
    assert_eq!(moved["medic"]["id"], second.id);
    assert_eq!(moved["medic"]["email"], "segundo@clinica.mx");
    assert_eq!(moved["is_active"], true);
    assert_eq!(
        app.get(&format!("/api/v2/hospital/{b}"), second.token())
            .status,
        200
    );
    assert_eq!(
        app.get(&format!("/api/v2/hospital/{b}"), first.token())
            .status,
        404
    );

    // Move it to hospital A: the second medic now belongs to A.
    let resp = app.patch(
        &format!("{MANAGE}{m_b}/"),
        Some(ADMIN_TOKEN),
        &json!({"hospital": a}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.json()["hospital"], a);
    // The first medic already holds A: moving theirs onto the same pair is refused.
    let errors = field_errors(&app.patch(
        &format!("{MANAGE}{m_b}/"),
        Some(ADMIN_TOKEN),
        &json!({"medic": first.id}),
    ));
    assert!(errors["non_field_errors"].is_array(), "{errors}");
    // Targets must exist; values must be valid.
    for (body, field) in [
        (json!({"medic": 9999}), "medic"),
        (json!({"hospital": 9999}), "hospital"),
        (json!({"medic": "uno"}), "medic"),
        (json!({"hospital": null}), "hospital"),
        (json!({"type_membership": "OWNER"}), "type_membership"),
        (json!({"type_membership": null}), "type_membership"),
        (json!({"is_deleted": "maybe"}), "is_deleted"),
    ] {
        let errors = field_errors(&app.patch(&format!("{MANAGE}{m_b}/"), Some(ADMIN_TOKEN), &body));
        assert!(errors[field].is_array(), "{body}: {errors}");
    }
    let resp = app.raw(
        "PATCH",
        &format!("{MANAGE}{m_b}/"),
        Some(ADMIN_TOKEN),
        Some(("application/json", b"[")),
    );
    assert_eq!(resp.status, 400);
    assert!(resp.json()["message"].is_string());
    assert_eq!(
        membership(&app, a, m_b)["medic"]["id"],
        second.id,
        "unchanged by the failures"
    );
}

#[test]
fn deleting_the_active_membership_moves_the_default_to_the_oldest_live_one() {
    let app = spawn_app();
    let hospitals: Vec<i64> = ["A", "B", "C"]
        .iter()
        .map(|n| app.create_hospital(ADMIN_TOKEN, n))
        .collect();
    let medic = app.create_medic("viajero@clinica.mx");
    let ids: Vec<i64> = hospitals
        .iter()
        .map(|h| app.add_membership(medic.id, *h, "MEMBER"))
        .collect();
    let resp = app.patch(
        "/api/v2/locations/update/",
        medic.token(),
        &json!({"hospital_id": hospitals[2]}),
    );
    assert_eq!(resp.status, 200);
    assert_eq!(
        app.delete(&format!("{MANAGE}{}/", ids[2]), Some(ADMIN_TOKEN))
            .status,
        204
    );
    let active: Vec<bool> = hospitals
        .iter()
        .zip(&ids)
        .map(|(h, id)| membership(&app, *h, *id)["is_active"].as_bool().unwrap())
        .collect();
    assert_eq!(active, [true, false, false]);
}
