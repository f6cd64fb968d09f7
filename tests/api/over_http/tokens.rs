//! The caller's token checked inside the domain's first request (issue 87, `roles::token_first`):
//! the requests a detail, a list and a pharmacy's call send, counted at a proxy, and every refusal
//! as before.

use serde_json::json;

use super::proxy::CommitCutter;
use super::{quiet_app_through, read_only};
use crate::helpers::ADMIN_TOKEN;
use crate::sqld::Sqld;

#[test]
fn a_medics_detail_and_list_are_one_request_to_the_database_and_a_wrong_token_is_still_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Sqld::primary(&dir.path().join("sqld"));
    let proxy = CommitCutter::to(&db.url);
    let app = quiet_app_through(&db, &proxy.url, &db.token.clone());
    let practice = crate::fixtures::Practice::new(&app, "una@example.mx", "Clínica Una");
    let signature = crate::fixtures::signature(&practice.prescribe(&app)).to_string();
    let path = format!("/api/v2/rx-endpoint/{signature}/");

    // The token's check, the read and its access-log row: one request.
    for _ in 0..2 {
        let mark = proxy.mark();
        let read = app.get(&path, Some(&practice.medic.token));
        assert_eq!(read.status, 200, "{}", read.text());
        assert_eq!(
            read.json()["signature"],
            json!(signature),
            "{}",
            read.text()
        );
        let sent = proxy.since(mark);
        assert_eq!(sent.len(), 1, "one request to the database: {sent:#?}");
        assert!(
            sent[0].contains("token_hash") && sent[0].contains("INSERT INTO access_log"),
            "the token's check and the log row travel with the read: {}",
            sent[0]
        );
    }
    // The admin's token needs no lookup: one request too.
    let mark = proxy.mark();
    let read = app.get(&path, Some(ADMIN_TOKEN));
    assert_eq!(read.status, 200, "{}", read.text());
    assert_eq!(proxy.since(mark).len(), 1, "{:#?}", proxy.since(mark));

    // What the read finds nothing for is answered as before: a token nobody holds 401, a
    // pharmacy's 403, another medic's 404, and none of them is logged as a read.
    let nobody = app.get(&path, Some("not-anyones-token-0123456789abcdef"));
    assert_eq!(nobody.status, 401, "{}", nobody.text());
    assert_eq!(nobody.json(), json!({"message": "Invalid Token"}));
    let pharmacy_token = crate::fixtures::pharmacy::register(&app, "Farmacia Una").token;
    let pharmacy = app.get(&path, Some(&pharmacy_token));
    assert_eq!(pharmacy.status, 403, "{}", pharmacy.text());
    let other = crate::fixtures::Practice::new(&app, "otra.una@example.mx", "Clínica Dos");
    let other = app.get(&path, Some(&other.medic.token));
    assert_eq!(other.status, 404, "{}", other.text());
    let inactive = app.patch(
        &format!("/api/v2/medics/{}/", practice.medic.id),
        Some(ADMIN_TOKEN),
        &json!({"is_active": false}),
    );
    assert_eq!(inactive.status, 202, "{}", inactive.text());
    let deactivated = app.get(&path, Some(&practice.medic.token));
    assert_eq!(deactivated.status, 401, "{}", deactivated.text());

    // The list and the search: the token's check, the page, its count and its medications, one
    // request; refused as before, a bad parameter after the token (401 first).
    let active = app.patch(
        &format!("/api/v2/medics/{}/", practice.medic.id),
        Some(ADMIN_TOKEN),
        &json!({"is_active": true}),
    );
    assert_eq!(active.status, 202, "{}", active.text());
    for query in ["", "?search=juan", "?search=nadie"] {
        let mark = proxy.mark();
        let listed = app.get(
            &format!("/api/v2/rx-endpoint/{query}"),
            Some(&practice.medic.token),
        );
        assert_eq!(listed.status, 200, "{}", listed.text());
        let expected = if query.ends_with("nadie") { 0 } else { 1 };
        assert_eq!(listed.json()["count"], json!(expected), "{}", listed.text());
        let sent = proxy.since(mark);
        assert_eq!(sent.len(), 1, "one request for the list{query}: {sent:#?}");
    }
    let empty = crate::fixtures::Practice::new(&app, "vacia@example.mx", "Clínica Vacía");
    let listed = app.get("/api/v2/rx-endpoint/", Some(&empty.medic.token));
    assert_eq!((listed.status, &listed.json()["count"]), (200, &json!(0)));
    for (token, status) in [
        ("not-anyones-token-0123456789abcdef", 401),
        (ADMIN_TOKEN, 403),
        (pharmacy_token.as_str(), 403),
    ] {
        let refused = app.get("/api/v2/rx-endpoint/", Some(token));
        assert_eq!(refused.status, status, "{token}: {}", refused.text());
        let refused = app.get("/api/v2/rx-endpoint/?limit=nope", Some(token));
        assert_eq!(refused.status, status, "{token}: {}", refused.text());
    }
    let bad = app.get(
        "/api/v2/rx-endpoint/?limit=nope",
        Some(&practice.medic.token),
    );
    assert_eq!(bad.status, 400, "{}", bad.text());

    let file = read_only(&db);
    let reads: i64 = file
        .query_row(
            "SELECT count(*) FROM access_log a JOIN prescriptions p ON p.id = a.prescription_id \
             WHERE p.signature = ?1 AND a.action = 'read'",
            [&signature],
            |r| r.get(0),
        )
        .unwrap();
    // The medic's two reads fall in one minute or two; the admin's is its own.
    assert!((2..=3).contains(&reads), "{reads} reads logged");
}

#[test]
fn a_pharmacys_token_is_checked_by_its_admission_and_its_refusals_are_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = Sqld::primary(&dir.path().join("sqld"));
    let proxy = CommitCutter::to(&db.url);
    let app = quiet_app_through(&db, &proxy.url, &db.token.clone());
    let practice = crate::fixtures::Practice::new(&app, "tres@example.mx", "Clínica Tres");
    let signature = crate::fixtures::signature(&practice.prescribe(&app)).to_string();
    let pharmacy = crate::fixtures::pharmacy::register(&app, "Farmacia Tres");
    let path = format!("/api/v2/pharmacy/rx/{signature}");

    // The token's check is the admission's own statement, sent with the read: two requests (the
    // admission with the read, the call's row), none of them the token's lookup alone.
    for _ in 0..2 {
        let mark = proxy.mark();
        let found = crate::fixtures::pharmacy::lookup(&app, &pharmacy, &signature);
        assert_eq!(found.status, 200, "{}", found.text());
        let sent = proxy.since(mark);
        assert!(
            !sent
                .iter()
                .any(|r| r.contains("UNION ALL SELECT 'pharmacy'")),
            "no request looks the token up on its own: {sent:#?}"
        );
        assert!(
            sent[0].contains("p.token_hash = ?1") && sent[0].contains("LEFT JOIN medications"),
            "the admission and the read travel together: {}",
            sent[0]
        );
        assert_eq!(sent.len(), 2, "{sent:#?}");
    }
    let unknown = crate::fixtures::pharmacy::lookup(&app, &pharmacy, "f00d");
    assert_eq!(unknown.status, 404, "{}", unknown.text());
    assert_eq!(unknown.json(), json!({"error": "rx not found"}));
    let mark = proxy.mark();
    let claimed = crate::fixtures::pharmacy::claim(&app, &pharmacy, &signature);
    assert_eq!(claimed.status, 200, "{}", claimed.text());
    let sent = proxy.since(mark);
    assert!(sent[0].contains("p.token_hash = ?1"), "{}", sent[0]);
    // The admission, the transaction's statements and its `COMMIT`, the answer's read and the
    // call's row: 8 (9 when the token was looked up on its own first).
    assert_eq!(sent.len(), 8, "{sent:#?}");

    // Refused as before, and nothing logged for them.
    for (token, status) in [
        ("not-anyones-token-0123456789abcdef", 401),
        (practice.medic.token.as_str(), 403),
        (ADMIN_TOKEN, 403),
    ] {
        let refused = app.get(&path, Some(token));
        assert_eq!(refused.status, status, "{token}: {}", refused.text());
        let refused = app.post(
            &format!("/api/v2/pharmacy/rx/{signature}/claim/"),
            Some(token),
            &json!({}),
        );
        assert_eq!(refused.status, status, "{token}: {}", refused.text());
    }
    let inactive = app.patch(
        &format!("/api/v2/pharmacies/{}/", pharmacy.id),
        Some(ADMIN_TOKEN),
        &json!({"is_active": false}),
    );
    assert!(inactive.status < 300, "{}", inactive.text());
    let refused = crate::fixtures::pharmacy::lookup(&app, &pharmacy, &signature);
    assert_eq!(refused.status, 401, "{}", refused.text());

    let file = read_only(&db);
    let calls: Vec<(i64, String, i64)> = file
        .prepare("SELECT pharmacy_id, action, status FROM pharmacy_calls ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let id = pharmacy.id;
    assert_eq!(
        calls,
        vec![
            (id, "lookup".to_string(), 200),
            (id, "lookup".to_string(), 200),
            (id, "lookup".to_string(), 404),
            (id, "lookup".to_string(), 200),
        ],
        "the pharmacy's own calls, by its id; none for the refused tokens"
    );
}
