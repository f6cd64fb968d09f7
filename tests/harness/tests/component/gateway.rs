//! The gateway composed with its dependencies as `receta up` composes it, driven in-process
//! through `wasi:http/incoming-handler`: the routes, the error shapes, and a create whose email
//! leaves after the response.

use anyhow::Result;
use receta_harness::Gateway;
use serde_json::{Value, json};

use crate::helpers::parties;

fn json_body(response: &receta_harness::Response) -> Result<Value> {
    Ok(serde_json::from_slice(&response.body)?)
}

#[test]
fn an_unknown_path_is_a_json_404_and_a_known_one_under_another_method_a_405() -> Result<()> {
    let gateway = Gateway::new()?;
    let missing = gateway.get("/api/v2/nothing-here", None)?;
    assert_eq!(missing.status, 404);
    assert!(json_body(&missing)?["message"].is_string());
    let wrong = gateway.request("DELETE", "/api/v2/patient/", &[], b"")?;
    assert_eq!(wrong.status, 405);
    assert_eq!(wrong.header("allow"), Some("GET, POST"));
    Ok(())
}

#[test]
fn the_contract_is_served_without_a_token() -> Result<()> {
    let gateway = Gateway::new()?;
    let openapi = gateway.get("/api/v2/openapi.json", None)?;
    assert_eq!(openapi.status, 200);
    assert!(json_body(&openapi)?["paths"]["/api/v2/rx-endpoint/"].is_object());
    Ok(())
}

#[test]
fn a_call_without_a_valid_token_is_401_invalid_token() -> Result<()> {
    let gateway = Gateway::with_variables(&[("admin_token", "admin-secret")])?;
    for token in [None, Some("wrong")] {
        let refused = gateway.get("/api/v2/patient/", token)?;
        assert_eq!(refused.status, 401);
        assert_eq!(json_body(&refused)?, json!({"message": "Invalid Token"}));
    }
    assert_eq!(
        gateway
            .get("/api/v2/hospital/", Some("admin-secret"))?
            .status,
        200
    );
    Ok(())
}

#[test]
fn a_prescription_created_over_http_is_emailed_by_the_outbox_worker_s_pass() -> Result<()> {
    let relay = "http://relay.test/send";
    let gateway = Gateway::with_variables(&[
        ("email_relay_url", relay),
        ("email_relay_host", "http://relay.test"),
        ("admin_token", "admin-secret"),
    ])?;
    let seeded = parties(&gateway.db()?)?;
    gateway.db()?.execute(
        "INSERT INTO memberships (medic_id, hospital_id, type_membership, is_active, date_joined) \
         VALUES (?1, ?2, 'MEMBER', 1, '2026-01-01')",
        [seeded.medic, seeded.hospital],
    )?;
    gateway.db()?.execute(
        "UPDATE medics SET specialty_verified = 1 WHERE id = ?1",
        [seeded.medic],
    )?;
    gateway.outbound().respond(relay, 200, "{}");
    let body = json!({
        "patient": {"uid": "p-1"},
        "diagnosis": "Faringitis",
        "medications": [{"presentation": "Paracetamol 500 mg", "instructions": "1 cada 8 h", "qty": 1}],
    });
    let created = gateway.json(
        "POST",
        "/api/v2/rx-endpoint/",
        Some("medic-token"),
        &body.to_string(),
    )?;
    assert_eq!(created.status, 200, "{}", created.text());
    let signature = json_body(&created)?["signature"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(signature.len(), 64);
    assert!(
        gateway.outbound().sent().is_empty(),
        "no request delivers: the outbox worker does"
    );
    // One pass of the outbox worker, as its cron trigger makes every second.
    let run = gateway.json("POST", "/api/v2/deliveries/run/", Some("admin-secret"), "")?;
    assert_eq!(run.status, 200, "{}", run.text());
    assert_eq!(json_body(&run)?["delivered"], 1);
    let sent = gateway.outbound().sent();
    assert_eq!(sent.len(), 1, "the email went out once");
    assert_eq!(sent[0].url, relay);
    let detail = gateway.get(
        &format!("/api/v2/rx-endpoint/{signature}/"),
        Some("medic-token"),
    )?;
    assert_eq!(detail.status, 200);
    assert_eq!(
        json_body(&detail)?["status"]["sent_status"][0],
        "sent_email"
    );
    Ok(())
}
