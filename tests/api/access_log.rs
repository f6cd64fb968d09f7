//! The patient's access log (issue 32, docs/lifecycle.md "Who looked"): every pharmacy lookup, claim,
//! release, sale and rejection, the medic's cancellation, and the medic's and the admin's reads by
//! signature are listed on the patient's page and in the landing JSON, newest first, in Spanish;
//! the patient's own page is not.

use serde_json::{Value, json};

use crate::fixtures::{
    Practice, burn, cancel, claimed, db, med_ids, prescribe, register, reject, release, signature,
};
use crate::helpers::{ADMIN_TOKEN, AppConfig, TestApp, spawn_app, start};

/// The landing JSON's `access_log`, as the issuing medic reads it (a read that is itself logged).
fn access_log(app: &TestApp, p: &Practice, sig: &str) -> Vec<Value> {
    let resp = app.get(
        &format!("/api/v2/rx/patient-landing/{sig}/"),
        p.medic.token(),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    resp.json()["rx"]["access_log"].as_array().unwrap().clone()
}

/// The access log's rows, once the queued lookups' rows are written (the patient's page drains the
/// queue first, and is itself no entry).
fn rows(app: &TestApp, sig: &str) -> i64 {
    assert_eq!(app.get(&format!("/rx/{sig}"), None).status, 200);
    count(app, "SELECT COUNT(*) FROM access_log")
}

/// The one number `sql` selects, read from the database file.
fn count(app: &TestApp, sql: &str) -> i64 {
    db(app).query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn the_patient_sees_who_used_the_prescription() {
    let app = spawn_app();
    let p = Practice::new(&app, "bitacora@example.mx", "Clínica Bitácora");
    let (a, b) = (
        register(&app, "Farmacia Ámbar"),
        register(&app, "Farmacia Boreal"),
    );
    let rx = prescribe(&app, &p);
    let sig = signature(&rx);
    let (first, _) = med_ids(&rx);

    assert_eq!(
        app.get(&format!("/api/v2/pharmacy/rx/{sig}"), Some(&a.token))
            .status,
        200
    );
    let secret = claimed(&app, &a, &sig)["secret"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        release(&app, &a, &sig, &json!({"secret": secret})).status,
        200
    );
    assert_eq!(burn(&app, &b, &sig, &[(first, 1)]).status, 200);
    let detail = format!("/api/v2/rx-endpoint/{sig}/");
    assert_eq!(app.get(&detail, p.medic.token()).status, 200);
    assert_eq!(app.get(&detail, Some(ADMIN_TOKEN)).status, 200);
    // Calls that did nothing are not entries: another medic's 404, an unknown signature.
    let stranger = Practice::new(&app, "ajeno@example.mx", "Clínica Ajena");
    assert_eq!(app.get(&detail, stranger.medic.token()).status, 404);

    // The patient's own page is not listed.
    let before = rows(&app, &sig);
    assert_eq!(app.get(&format!("/rx/{sig}"), None).status, 200);
    assert_eq!(app.get(&format!("/rx/{sig}/pdf"), None).status, 200);
    assert_eq!(rows(&app, &sig), before);

    let log = access_log(&app, &p, &sig);
    let medic = app
        .get(
            &format!("/api/v2/rx/patient-landing/{sig}/"),
            p.medic.token(),
        )
        .json()["rx"]["medic"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    // Reads are logged once per actor and minute (the page shows minutes): this landing read is
    // the medic's detail read's minute unless a minute turned in between.
    let log: Vec<Value> = match log.first() {
        Some(e) if log.len() == 7 && e["action"] == "read" && e["actor"] == "medic" => {
            log[1..].to_vec()
        }
        _ => log,
    };
    let actions: Vec<(&str, &str)> = log
        .iter()
        .map(|e| (e["action"].as_str().unwrap(), e["actor"].as_str().unwrap()))
        .collect();
    assert_eq!(
        actions,
        vec![
            ("read", "admin"),
            ("read", "medic"),
            ("dispense", "pharmacy"),
            ("release", "pharmacy"),
            ("claim", "pharmacy"),
            ("lookup", "pharmacy"),
        ],
        "newest first: {log:#?}"
    );
    let texts: Vec<&str> = log.iter().map(|e| e["text"].as_str().unwrap()).collect();
    let lookup = texts[5];
    assert!(
        lookup.starts_with("Consultada por Farmacia Ámbar (licencia LS-0001) el "),
        "{lookup}"
    );
    // `el dd/mm/yyyy HH:MM`
    let when = lookup.rsplit(" el ").next().unwrap();
    assert_eq!(when.len(), 16, "{when}");
    assert_eq!((&when[2..3], &when[5..6], &when[13..14]), ("/", "/", ":"));
    assert!(texts[4].starts_with("Apartada para surtir por Farmacia Ámbar"));
    assert!(texts[3].starts_with("Liberada por Farmacia Ámbar"));
    assert!(texts[2].starts_with("Surtida por Farmacia Boreal (licencia LS-0001)"));
    assert!(texts[1].starts_with(&format!("Consultada por el médico {medic} el ")));
    assert!(texts[0].starts_with("Consultada por el administrador del servicio el "));
    // Without tokens or internal ids: exactly these fields.
    for e in &log {
        let mut keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(
            keys,
            ["action", "actor", "at", "license", "name", "text"],
            "{e}"
        );
        assert!(!e.to_string().contains(&a.token) && !e.to_string().contains(&b.token));
    }
    assert_eq!(log[5]["name"], "Farmacia Ámbar");
    assert_eq!(log[5]["license"], "LS-0001");

    // Reading again and again adds one entry per minute at most; a change always adds its own.
    let before = rows(&app, &sig);
    for _ in 0..5 {
        assert_eq!(app.get(&detail, Some(ADMIN_TOKEN)).status, 200);
        assert_eq!(
            app.get(&format!("/api/v2/pharmacy/rx/{sig}"), Some(&a.token))
                .status,
            200
        );
    }
    let after = rows(&app, &sig);
    assert!(after - before <= 4, "two actors, at most two minutes");

    // The page shows the same list, escaped, newest first.
    let page = app.get(&format!("/rx/{sig}"), None).text();
    let at = |needle: &str| {
        page.find(needle)
            .unwrap_or_else(|| panic!("{needle} in {page}"))
    };
    assert!(page.contains("Quién ha usado tu receta"));
    assert!(
        at("Surtida por Farmacia Boreal") < at("Consultada por Farmacia Ámbar (licencia LS-0001)")
    );
    assert!(page.contains(&format!("Consultada por el médico {medic}")));
}

#[test]
fn rejections_and_cancellations_are_listed_with_who_made_them() {
    let app = spawn_app();
    let p = Practice::new(&app, "bitacora-fin@example.mx", "Clínica Fin");
    let a = register(&app, "Farmacia Cierre");

    let rejected = signature(&prescribe(&app, &p));
    assert_eq!(reject(&app, &a, &rejected).status, 200);
    let log = access_log(&app, &p, &rejected);
    assert_eq!(
        (log[1]["action"].as_str(), log[1]["actor"].as_str()),
        (Some("reject"), Some("pharmacy"))
    );
    assert!(
        log[1]["text"]
            .as_str()
            .unwrap()
            .starts_with("Rechazada por Farmacia Cierre")
    );

    let cancelled = signature(&prescribe(&app, &p));
    assert_eq!(cancel(&app, p.medic.token(), &cancelled).status, 200);
    let log = access_log(&app, &p, &cancelled);
    assert_eq!(
        log.len(),
        2,
        "the cancellation and this read only: {log:#?}"
    );
    assert_eq!(log[1]["action"], "cancel");
    let medic = log[0]["name"].as_str().unwrap();
    assert!(!medic.is_empty());
    assert!(
        log[1]["text"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Cancelada por el médico {medic} el ")),
        "{log:#?}"
    );
    // A refused change is not an entry: a second cancellation is 409.
    assert_eq!(cancel(&app, p.medic.token(), &cancelled).status, 409);
    let log = access_log(&app, &p, &cancelled);
    assert_eq!(
        log.iter().filter(|e| e["action"] == "cancel").count(),
        1,
        "{log:#?}"
    );
}

/// The rows a read writes (a pharmacy's call-log and access-log rows, a medic's or the admin's
/// read) are on their way to the disk before the answer, in the key-value store's queues. Killing
/// the host right after the answers loses none of them (docs/lifecycle.md, "What a crash can
/// lose"), and none is written twice when the worker and a reader drain the queues at once after
/// the restart.
#[test]
fn the_rows_reads_write_survive_a_kill_of_the_host_after_their_answers() {
    let app = spawn_app();
    let p = Practice::new(&app, "kill@example.mx", "Clínica Kill");
    let sigs: Vec<String> = (0..3).map(|_| signature(&prescribe(&app, &p))).collect();
    let pharmacies: Vec<_> = (0..3)
        .map(|i| register(&app, &format!("Farmacia Kill {i}")))
        .collect();
    let before = rows(&app, &sigs[0]);
    for ph in &pharmacies {
        for sig in &sigs {
            let path = format!("/api/v2/pharmacy/rx/{sig}");
            assert_eq!(app.get(&path, Some(&ph.token)).status, 200);
        }
    }
    for sig in &sigs {
        let detail = format!("/api/v2/rx-endpoint/{sig}/");
        assert_eq!(app.get(&detail, p.medic.token()).status, 200);
    }

    let app = start(AppConfig::default(), app.crash());
    assert_eq!(
        rows(&app, &sigs[0]) - before,
        9 + 3,
        "9 lookups and 3 medic reads"
    );
    assert_eq!(calls(&app), 9);
}

fn calls(app: &TestApp) -> i64 {
    count(app, "SELECT COUNT(*) FROM pharmacy_calls")
}

/// Nobody reads the logs: the outbox worker (every second) still writes the lookups' and the medic's
/// reads' queued rows into the tables, so an operator's own queries see them within seconds.
#[test]
fn the_outbox_worker_writes_the_queued_lookups_and_reads_into_the_logs() {
    let app = spawn_app();
    let p = Practice::new(&app, "cola@example.mx", "Clínica Cola");
    let sig = signature(&prescribe(&app, &p));
    let ph = register(&app, "Farmacia Cola");
    for _ in 0..3 {
        let path = format!("/api/v2/pharmacy/rx/{sig}");
        assert_eq!(app.get(&path, Some(&ph.token)).status, 200);
        let detail = format!("/api/v2/rx-endpoint/{sig}/");
        assert_eq!(app.get(&detail, p.medic.token()).status, 200);
    }
    let reads = |app: &TestApp| {
        count(
            app,
            "SELECT COUNT(*) FROM access_log WHERE action = 'read' AND actor = 'medic'",
        )
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while (calls(&app) < 3 || reads(&app) < 1) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(calls(&app), 3, "{}", app.log());
    let entries = count(
        &app,
        "SELECT COUNT(*) FROM access_log WHERE action = 'lookup'",
    );
    assert!(
        (1..=2).contains(&entries),
        "one entry per pharmacy and minute: {entries}"
    );
    let reads = reads(&app);
    assert!(
        (1..=2).contains(&reads),
        "one entry per medic and minute: {reads}"
    );
}
