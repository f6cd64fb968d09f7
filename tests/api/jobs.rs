//! The background jobs' HTTP door, `POST /api/v2/jobs/run/` (docs/deploying.md). Each app here
//! runs `spin.cloud.toml` (no cron trigger) with no scheduler, so nothing runs the jobs but the
//! test's own calls.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::fixtures::{Listener, Practice, cron_less, prescribe, register};
use crate::helpers::{ADMIN_TOKEN, JOBS_TOKEN, TestApp, spawn_app_with};
use receta_test_tsa::Server;

const DOOR: &str = "/api/v2/jobs/run/";
/// The jobs, in the order a run runs them.
const JOBS: [&str; 6] = [
    "forget_counters",
    "forget_idempotency_keys",
    "pharmacy_calls",
    "medic_reads",
    "constancias",
    "deliveries",
];

fn run(app: &TestApp, token: &str) -> Value {
    let answer = app.post(DOOR, Some(token), &json!({}));
    assert_eq!(answer.status, 200, "{}", answer.text());
    answer.json()
}

/// Subscribes `url` to the practice's prescriptions.
fn subscribe(app: &TestApp, p: &Practice, url: &str) {
    let resp = app.post(
        "/api/v2/webhooks/",
        Some(ADMIN_TOKEN),
        &json!({"url": url, "hospitals": [p.hospital]}),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
}

#[test]
fn the_jobs_door_takes_the_jobs_token_or_the_admins_and_says_what_each_job_did() {
    let app = spawn_app_with(cron_less(&[]));
    let p = Practice::new(&app, "jobs-door@example.mx", "Clínica Programada");
    let pharmacy = register(&app, "Farmacia Programada");

    assert_eq!(app.post(DOOR, None, &json!({})).status, 401);
    assert_eq!(app.post(DOOR, Some("not-a-token"), &json!({})).status, 401);
    for (who, token) in [("medic", p.medic.token()), ("pharmacy", pharmacy.token())] {
        let refused = app.post(DOOR, token, &json!({}));
        assert_eq!(refused.status, 403, "{who}: {}", refused.text());
        assert!(
            refused.json()["message"]
                .as_str()
                .is_some_and(|m| m.contains("jobs token")),
            "{who}: {}",
            refused.text()
        );
    }

    for token in [JOBS_TOKEN, ADMIN_TOKEN] {
        let done = run(&app, token);
        assert_eq!(done["ok"], json!(true), "{done}");
        assert_eq!(done["failed_jobs"], json!([]), "{done}");
        let names: Vec<&str> = done["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, JOBS, "{done}");
        for key in ["attempted", "delivered", "failed", "ms"] {
            assert!(done[key].is_u64(), "{key}: {done}");
        }
    }
    // Its older name runs the same jobs, for the same callers.
    let alias = app.post("/api/v2/deliveries/run/", Some(JOBS_TOKEN), &json!({}));
    assert_eq!(alias.status, 200, "{}", alias.text());
    assert_eq!(
        alias.json()["jobs"].as_array().map(Vec::len),
        Some(JOBS.len())
    );
    assert_eq!(
        app.post("/api/v2/deliveries/run/", p.medic.token(), &json!({}))
            .status,
        403
    );

    // The jobs token opens nothing else.
    for path in ["/api/v2/hospital/", "/api/v2/deliveries/"] {
        let resp = app.get(path, Some(JOBS_TOKEN));
        assert_eq!(resp.status, 403, "{path}: {}", resp.text());
    }
    let resp = app.get("/api/v2/pharmacy/rx/nothing/", Some(JOBS_TOKEN));
    assert_eq!(resp.status, 403, "{}", resp.text());
}

#[test]
fn without_a_jobs_token_configured_the_door_is_the_admins_alone() {
    let app = spawn_app_with(cron_less(&[("jobs_token", "")]));
    assert_eq!(app.post(DOOR, Some(JOBS_TOKEN), &json!({})).status, 401);
    run(&app, ADMIN_TOKEN);
}

#[test]
fn two_doors_called_at_once_never_deliver_one_row_twice() {
    const PRESCRIPTIONS: usize = 40;
    let receiver = Listener::ok();
    let app = spawn_app_with(cron_less(&[]));
    let p = Practice::new(&app, "dos-puertas@example.mx", "Clínica Dos Puertas");
    subscribe(&app, &p, &receiver.url("/hooks"));
    for _ in 0..PRESCRIPTIONS {
        prescribe(&app, &p);
    }
    assert_eq!(
        receiver.events().len(),
        0,
        "nothing runs the jobs but the doors"
    );

    // Two schedulers, each calling as fast as it can, until every webhook went out.
    let delivered: u64 = std::thread::scope(|s| {
        let callers: Vec<_> = [JOBS_TOKEN, ADMIN_TOKEN]
            .into_iter()
            .map(|token| {
                let (app, receiver) = (&app, &receiver);
                s.spawn(move || {
                    let mut delivered = 0;
                    for _ in 0..50 {
                        let done = run(app, token);
                        assert_eq!(done["ok"], json!(true), "{done}");
                        delivered += job(&done, "deliveries")["delivered"].as_u64().unwrap();
                        if receiver.events().len() >= PRESCRIPTIONS {
                            break;
                        }
                    }
                    delivered
                })
            })
            .collect();
        callers.into_iter().map(|c| c.join().unwrap()).sum()
    });
    let events = receiver.events();
    let ids: BTreeSet<&str> = events
        .iter()
        .map(|e| e.header("webhook-id").unwrap())
        .collect();
    assert_eq!(events.len(), PRESCRIPTIONS, "each row once");
    assert_eq!(ids.len(), PRESCRIPTIONS, "each webhook-id once");
    assert_eq!(delivered, PRESCRIPTIONS as u64, "the answers add up");
}

#[test]
fn a_job_that_fails_does_not_stop_the_others_and_the_answer_names_it() {
    if crate::helpers::on_libsql() {
        return; // It breaks a table in the database file: a local database only.
    }
    let tsa = Server::start();
    let receiver = Listener::ok();
    let app = spawn_app_with(cron_less(&[
        ("timestamp_url", &tsa.url("/tsr")),
        ("timestamp_ca", &tsa.authority().ca_pem()),
    ]));
    let p = Practice::new(&app, "job-roto@example.mx", "Clínica Rota");
    subscribe(&app, &p, &receiver.url("/hooks"));
    prescribe(&app, &p);

    // The constancias' queue is gone: their job fails; the deliveries, after it, still run.
    writable(&app)
        .execute_batch("ALTER TABLE stamp_queue RENAME TO stamp_queue_away")
        .unwrap();
    let done = run(&app, JOBS_TOKEN);
    assert_eq!(done["ok"], json!(false), "{done}");
    assert_eq!(done["failed_jobs"], json!(["constancias"]), "{done}");
    let constancias = job(&done, "constancias");
    assert_eq!(constancias["ok"], json!(false), "{done}");
    assert!(constancias["error"].is_string(), "{done}");
    assert!(
        !done.to_string().contains("no such table"),
        "an internal error's text stays in the log: {done}"
    );
    assert_eq!(job(&done, "deliveries")["ok"], json!(true), "{done}");
    assert_eq!(job(&done, "deliveries")["delivered"], json!(1), "{done}");
    assert_eq!(receiver.events().len(), 1);

    // Back in place, the next run stamps what waited.
    writable(&app)
        .execute_batch("ALTER TABLE stamp_queue_away RENAME TO stamp_queue")
        .unwrap();
    let done = run(&app, JOBS_TOKEN);
    assert_eq!(done["ok"], json!(true), "{done}");
    assert!(
        job(&done, "constancias")["delivered"].as_u64() >= Some(1),
        "{done}"
    );
}

/// The app's database file, to change it under the app (a local database only).
fn writable(app: &TestApp) -> rusqlite::Connection {
    rusqlite::Connection::open(app.database_file()).unwrap()
}

/// The report of job `name` in a jobs door's answer.
fn job<'a>(done: &'a Value, name: &str) -> &'a Value {
    done["jobs"]
        .as_array()
        .and_then(|jobs| jobs.iter().find(|j| j["name"] == name))
        .unwrap_or_else(|| panic!("no job {name} in {done}"))
}
