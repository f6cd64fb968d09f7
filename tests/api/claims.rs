//! Claims (issue 32, docs/lifecycle.md "Claims"): a pharmacy holds a prescription while it
//! dispenses; another pharmacy's claim or burn is 409 until the holder burns with the secret,
//! releases it, or the claim expires by time. A burn without a claim works as before.

use std::sync::Arc;

use serde_json::json;

use crate::fixtures::claim;
use crate::fixtures::{
    Practice, burn, burn_with, claimed, db, each_at_once, later, med_ids, prescribe, register,
    release, signature,
};
use crate::helpers::{AppConfig, TestApp, assert_message, spawn_app, spawn_app_with};

fn claims_rows(app: &TestApp) -> i64 {
    db(app)
        .query_row("SELECT COUNT(*) FROM claims", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_claim_holds_the_prescription_until_the_holder_burns_with_its_secret() {
    let app = spawn_app();
    let p = Practice::new(&app, "reclamo@example.mx", "Clínica Reclamo");
    let (a, b) = (register(&app, "Farmacia A"), register(&app, "Farmacia B"));
    let rx = prescribe(&app, &p);
    let sig = signature(&rx);

    let grant = claimed(&app, &a, &sig);
    let secret = grant["secret"].as_str().unwrap().to_string();
    assert_eq!(secret.len(), 64, "{grant}");
    assert!(secret.chars().all(|c| c.is_ascii_hexdigit()));
    assert!(grant["id"].as_str().is_some_and(|id| !id.is_empty()));
    let expires_at = grant["expires_at"].as_str().unwrap().to_string();
    // The secret is stored hashed only.
    let stored: String = db(&app)
        .query_row("SELECT secret_hash FROM claims", [], |r| r.get(0))
        .unwrap();
    assert_ne!(stored, secret);

    // Another pharmacy can neither claim nor burn: 409 saying it is dispensed elsewhere, until when.
    for resp in [claim(&app, &b, &sig), burn_with(&app, &b, &rx, None)] {
        assert_message(&resp, 409);
        let message = resp.json()["message"].as_str().unwrap().to_string();
        assert!(message.contains("elsewhere"), "{message}");
        assert!(message.contains(&expires_at), "{message}");
    }
    // A secret that is not the claim's opens nothing.
    let resp = burn_with(&app, &a, &rx, Some(&"0".repeat(64)));
    assert_message(&resp, 403);
    // The holder burns with the secret: the sale is made and the claim is closed.
    let resp = burn_with(&app, &a, &rx, Some(&secret));
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.json()["medications"][0]["bought_qty"], 1);
    assert_eq!(claims_rows(&app), 0);
    // What is left may be claimed by another pharmacy now.
    claimed(&app, &b, &sig);
}

#[test]
fn a_release_gives_the_prescription_back_at_once() {
    let app = spawn_app();
    let p = Practice::new(&app, "liberar@example.mx", "Clínica Liberar");
    let (a, b) = (register(&app, "Farmacia A"), register(&app, "Farmacia B"));
    let rx = prescribe(&app, &p);
    let sig = signature(&rx);
    let secret = claimed(&app, &a, &sig)["secret"]
        .as_str()
        .unwrap()
        .to_string();

    // No secret: 400 on `secret`; a wrong one: 403; another pharmacy: 409.
    let resp = release(&app, &a, &sig, &json!({}));
    assert_eq!(resp.status, 400, "{}", resp.text());
    assert!(resp.json()["secret"].is_array());
    assert_message(
        &release(&app, &a, &sig, &json!({"secret": "f".repeat(64)})),
        403,
    );
    assert_message(&release(&app, &b, &sig, &json!({"secret": secret})), 409);
    assert_message(&claim(&app, &b, &sig), 409);

    let resp = release(&app, &a, &sig, &json!({"secret": secret}));
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert!(resp.json()["message"].is_string());
    assert_eq!(resp.json()["prescription"]["signature"], sig.as_str());
    // Available again at once: another pharmacy claims it; the old secret opens nothing.
    claimed(&app, &b, &sig);
    assert_message(&release(&app, &a, &sig, &json!({"secret": secret})), 409);
    assert_message(&burn_with(&app, &a, &rx, Some(&secret)), 409);
}

#[test]
fn a_burn_without_a_claim_works_as_before() {
    let app = spawn_app();
    let p = Practice::new(&app, "sin-reclamo@example.mx", "Clínica Sin Reclamo");
    let (a, b) = (register(&app, "Farmacia A"), register(&app, "Farmacia B"));
    let rx = prescribe(&app, &p);
    let sig = signature(&rx);
    let (first, second) = med_ids(&rx);
    // Nobody holds it: an implicit claim and close.
    let resp = burn(&app, &a, &sig, &[(first, 1)]);
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(claims_rows(&app), 0);
    // The holder of a claim may burn without sending its secret; that closes its claim.
    claimed(&app, &b, &sig);
    let resp = burn(&app, &b, &sig, &[(second, 1)]);
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(claims_rows(&app), 0);
}

#[test]
fn a_claim_on_a_closed_prescription_says_which() {
    let app = spawn_app();
    let p = Practice::new(&app, "cerradas@example.mx", "Clínica Cerradas");
    let ph = register(&app, "Farmacia Cerradas");

    let rejected = signature(&prescribe(&app, &p));
    let body = json!({"rejected": true, "reason_of_rejected": "Ilegible"});
    let resp = app.post(
        &format!("/api/v1/prescriptions/reject/{rejected}"),
        Some(&ph.token),
        &body,
    );
    assert_eq!(resp.status, 200);
    let cancelled = signature(&prescribe(&app, &p));
    let resp = app.post(
        &format!("/api/v2/rx-endpoint/{cancelled}/cancel/"),
        p.medic.token(),
        &json!({"reason": "Dosis equivocada"}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    let rx = prescribe(&app, &p);
    let (first, second) = med_ids(&rx);
    let dispensed = signature(&rx);
    let resp = burn(&app, &ph, &dispensed, &[(first, 2), (second, 1)]);
    assert_eq!(resp.status, 200, "{}", resp.text());

    for (sig, word) in [
        (&rejected, "rejected"),
        (&cancelled, "cancelled"),
        (&dispensed, "fully dispensed"),
    ] {
        let resp = claim(&app, &ph, sig);
        assert_message(&resp, 409);
        let message = resp.json()["message"].as_str().unwrap().to_string();
        assert!(message.contains(word), "{word}: {message}");
    }
    let resp = claim(&app, &ph, &"0".repeat(64));
    assert_eq!(resp.status, 404);
    assert_eq!(resp.json(), json!({"error": "rx not found"}));
}

#[test]
fn of_fifty_concurrent_claims_exactly_one_wins() {
    let app = Arc::new(spawn_app());
    let p = Practice::new(&app, "carrera-reclamo@example.mx", "Clínica Carrera");
    let sig = signature(&prescribe(&app, &p));
    let statuses = each_at_once(&app, 50, move |app, ph| claim(app, ph, &sig).status);
    let errors: Vec<String> = app
        .log()
        .lines()
        .filter(|l| !l.contains(" 409 ") && !l.contains(" 201 "))
        .map(str::to_string)
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?} {errors:?}"
    );
    assert!(
        statuses.iter().all(|s| [200, 409].contains(s)),
        "{statuses:?} {errors:?}"
    );
}

#[test]
fn an_expired_claim_is_gone_without_a_worker() {
    let app = spawn_app_with(AppConfig::with_variables(&[("claim_minutes", "1")]));
    let p = Practice::new(&app, "vencido@example.mx", "Clínica Vencido");
    let (a, b) = (register(&app, "Farmacia A"), register(&app, "Farmacia B"));
    let rx = prescribe(&app, &p);
    let sig = signature(&rx);
    let grant = claimed(&app, &a, &sig);
    assert_message(&claim(&app, &b, &sig), 409);
    // Two minutes later (the host's test clock; no sleep), the claim is over by time alone.
    let app = later(app, 120);
    let grant_b = claimed(&app, &b, &sig);
    assert_ne!(grant_b["id"], grant["id"]);
    let old = grant["secret"].as_str().unwrap();
    assert_message(&burn_with(&app, &a, &rx, Some(old)), 409);
}

/// The app on `app`'s state restarted `secs` later (the host's test clock), `claim_minutes` 1.
fn one_minute_claims_at(app: TestApp, secs: i64) -> TestApp {
    let state = app.crash();
    crate::helpers::start(
        AppConfig::with_variables(&[("claim_minutes", "1")])
            .with_env("RECETA_CLOCK_OFFSET_SECONDS", &secs.to_string()),
        state,
    )
}

#[test]
fn a_claim_and_its_renewals_last_at_most_three_claim_minutes() {
    let app = spawn_app_with(AppConfig::with_variables(&[("claim_minutes", "1")]));
    let p = Practice::new(&app, "renueva@example.mx", "Clínica Renueva");
    let (a, b) = (register(&app, "Farmacia A"), register(&app, "Farmacia B"));
    let sig = signature(&prescribe(&app, &p));
    let first = claimed(&app, &a, &sig);
    let mut app = app;
    // A re-claims before each expiry: renewed, while B is refused; the expiry never passes three
    // minutes after the first claim.
    let mut expiries = vec![first["expires_at"].as_str().unwrap().to_string()];
    for secs in [40, 90, 140, 170] {
        app = one_minute_claims_at(app, secs);
        let renewed = claimed(&app, &a, &sig);
        expiries.push(renewed["expires_at"].as_str().unwrap().to_string());
        assert_message(&claim(&app, &b, &sig), 409);
    }
    let bound = db(&app)
        .query_row(
            "SELECT strftime('%Y-%m-%dT%H:%M:%S', started_at, '+180 seconds') FROM claims",
            [],
            |r| r.get::<_, String>(0),
        )
        .unwrap();
    assert!(
        expiries.last().unwrap().starts_with(&bound),
        "cut at the first start + 3 min: {expiries:?} vs {bound}"
    );
    // Past the bound the holder's re-claim is 409, and the prescription is free for B.
    app = one_minute_claims_at(app, 190);
    let resp = claim(&app, &a, &sig);
    assert_eq!(resp.status, 409, "{}", resp.text());
    assert!(
        resp.json()["message"]
            .as_str()
            .unwrap()
            .contains("as long as a claim"),
        "{}",
        resp.text()
    );
    claimed(&app, &b, &sig);
}
