//! The patient as one person at the pharmacy counter (issue 72, docs/patients.md): a CURP is an
//! identity when PyPI `python-stdnum` says it is valid; the patient asks for a six-digit code on
//! their page and a pharmacy finds, with the CURP and the code, what it may dispense now of the
//! records that page speaks for (its own, and those the person proved theirs on it: issue 86), each
//! listed prescription logged in the patient's access log. Wrong codes are limited per CURP and
//! never tell whether a CURP is known.

use std::process::Command;

use serde_json::{Value, json};

use crate::fixtures::{
    ANA, BETO, Listener, Practice, TestPharmacy, create_patient, later, link, patient_body,
    prescribed_for, python, record_with, register, reject, relay_config,
};
use crate::helpers::{
    TestApp, TestMedic, TestResponse, assert_message, field_errors, spawn_app, spawn_app_with,
};

/// The values the CURP check is compared on, each with what `stdnum.mx.curp.is_valid` says: valid
/// CURPs drawn by Python (a fixed seed) and each one mutated (check digit, a letter, the date, the
/// state, the sex, case and separators), and free text.
fn stdnum_cases() -> Vec<(String, bool)> {
    let script = r#"
import json, random
from stdnum.mx import curp
rnd = random.Random(20261128)
L = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
C = "BCDFGHJKLMNPQRSTVWXYZ"
states = sorted(curp._valid_states)
values = ["BOXW310820HNERXN09", "ABCTEST", "", "boxw-310820 hnerxn09", "BOXW310820HNERXN0"]
while len(values) < 75:
    century = rnd.choice("0123456789ABCDEFGHIJ")
    first = rnd.choice(L) + rnd.choice("AEIOUX") + rnd.choice(L) + rnd.choice(L)
    date = "%02d%02d%02d" % (rnd.randrange(100), rnd.randrange(1, 13), rnd.randrange(1, 29))
    body = first + date + rnd.choice("HM") + rnd.choice(states) + "".join(rnd.choice(C) for _ in range(3)) + century
    value = body + curp.calc_check_digit(body + "0")
    if not curp.is_valid(value):
        continue
    values.append(value)
    i = rnd.randrange(6)
    if i == 0: values.append(value[:17] + str((int(value[17]) + 1) % 10))
    elif i == 1: values.append(value[:10] + "X" + value[11:])
    elif i == 2: values.append(value[:6] + "13" + value[8:])
    elif i == 3: values.append(value[:11] + "ZZ" + value[13:])
    elif i == 4: values.append(value.lower()[:9] + "-" + value.lower()[9:])
    else: values.append(value[:8] + "00" + value[10:])
print(json.dumps([[v, curp.is_valid(v)] for v in values]))
"#;
    let out = Command::new(python())
        .args(["-c", script])
        .output()
        .expect("python with python-stdnum (cargo xtask test installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cases: Vec<(String, bool)> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(cases.iter().filter(|(_, valid)| *valid).count() >= 20);
    assert!(cases.iter().filter(|(_, valid)| !*valid).count() >= 20);
    cases
}

#[test]
fn curp_valid_agrees_with_python_stdnum() {
    let app = spawn_app();
    let medic = app.create_medic("curp@example.mx");
    for (value, valid) in stdnum_cases() {
        let mut body = patient_body("Paciente CURP");
        body["curp"] = json!(value);
        let created = create_patient(&app, &medic, &body);
        assert_eq!(created["curp"], json!(value), "echoed as sent");
        assert_eq!(created["curp_valid"], json!(valid), "{value:?}");
        let read = app.get(
            &format!("/api/v2/patient/{}", created["uid"].as_str().unwrap()),
            medic.token(),
        );
        assert_eq!(read.json()["curp_valid"], json!(valid), "{value:?}");
    }
}

/// `POST /rx/<signature>/counter-code`, asking for JSON.
fn ask_code(app: &TestApp, signature: &str) -> TestResponse {
    app.request_with_headers(
        "POST",
        &format!("/rx/{signature}/counter-code"),
        &[("Accept", "application/json")],
        None,
    )
}

/// `POST /rx/<signature>/counter-code` as the page's form posts it (an empty form, HTML asked).
fn form_code(app: &TestApp, signature: &str) -> TestResponse {
    app.raw(
        "POST",
        &format!("/rx/{signature}/counter-code"),
        None,
        Some(("application/x-www-form-urlencoded", b"")),
    )
}

/// A fresh code for the person of `signature`.
fn code_for(app: &TestApp, signature: &str) -> String {
    let resp = ask_code(app, signature);
    assert_eq!(resp.status, 201, "{}", resp.text());
    assert_eq!(resp.header("cache-control"), Some("private, no-store"));
    let code = resp.json()["code"].as_str().unwrap().to_string();
    assert!(
        code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit()),
        "{code}"
    );
    code
}

fn counter(app: &TestApp, ph: &TestPharmacy, curp: &str, code: &str) -> TestResponse {
    app.post(
        "/api/v2/pharmacy/patients/lookup/",
        ph.token(),
        &json!({"curp": curp, "code": code}),
    )
}

fn listed(resp: &TestResponse) -> Vec<String> {
    assert_eq!(resp.status, 200, "{}", resp.text());
    let json = resp.json();
    let results = json["results"].as_array().unwrap();
    assert_eq!(json["count"], json!(results.len()));
    results
        .iter()
        .map(|r| r["signature"].as_str().unwrap().to_string())
        .collect()
}

fn access_log(app: &TestApp, medic: &TestMedic, sig: &str) -> Vec<Value> {
    let resp = app.get(&format!("/api/v2/rx/patient-landing/{sig}/"), medic.token());
    resp.json()["rx"]["access_log"].as_array().unwrap().clone()
}

#[test]
fn one_persons_prescriptions_from_two_medics_are_found_at_the_counter_and_logged() {
    let relay = Listener::ok();
    let app = spawn_app_with(relay_config(&relay.url("/send")));
    let mut a = Practice::new(&app, "mostrador-a@example.mx", "Clínica Norte");
    let mut b = Practice::new(&app, "mostrador-b@example.mx", "Clínica Sur");
    let mut c = Practice::new(&app, "mostrador-c@example.mx", "Clínica Oriente");
    let ph = register(&app, "Farmacia Mostrador");
    let from_a = prescribed_for(&app, &mut a, ANA);
    // The same person at another medic, written the way a person types it, with her email there.
    let from_b = record_with(&app, &mut b, "boxw-310820-hnerxn09", "ana.sur@example.mx");
    // Another person, and one whose CURP is free text: never listed.
    let other = prescribed_for(&app, &mut c, BETO);
    let mut free = Practice::new(&app, "mostrador-d@example.mx", "Clínica Poniente");
    let untied = prescribed_for(&app, &mut free, "ABCTEST");
    let closed = prescribed_for(&app, &mut a, ANA);
    assert_eq!(reject(&app, &ph, &closed).status, 200);

    // A's page speaks for A's record only, until she proves B's record hers there (a code sent to
    // the email B's medic recorded).
    let code = code_for(&app, &from_a);
    assert_eq!(
        listed(&counter(&app, &ph, ANA, &code)),
        vec![from_a.clone()]
    );
    link(&app, &relay, &from_a, "ana.sur@example.mx");
    let code = code_for(&app, &from_a);
    let found = listed(&counter(&app, &ph, ANA, &code));
    assert_eq!(found, vec![from_b.clone(), from_a.clone()], "newest first");
    for sig in [&other, &untied, &closed] {
        assert!(!found.contains(sig));
    }
    // Each listed prescription in the lookup's shape.
    let first = counter_results_of(&app, &ph, &from_b);
    assert_eq!(
        first["status"]["rx_status"],
        json!(["available", "Disponible"])
    );
    assert_eq!(first["sales"], json!([]));
    assert!(first["medications"][0]["sku"].is_string());
    // One use.
    assert_message(&counter(&app, &ph, ANA, &code), 404);
    // Each record's page gives its own code; a new code ends the earlier one of the same record,
    // never another record's. B's page proved nothing of A's: its code lists B only.
    let old = code_for(&app, &from_a);
    let of_b = code_for(&app, &from_b);
    let new = code_for(&app, &from_a);
    if old != new {
        assert_message(&counter(&app, &ph, ANA, &old), 404);
    }
    assert_eq!(listed(&counter(&app, &ph, ANA, &new)).len(), 2);
    assert_eq!(
        listed(&counter(&app, &ph, ANA, &of_b)),
        vec![from_b.clone()]
    );
    // Every listed prescription shows the pharmacy's lookup to the patient.
    for (practice, sig) in [(&a, &from_a), (&b, &from_b)] {
        let log = access_log(&app, &practice.medic, sig);
        let lookups = log
            .iter()
            .filter(|e| e["action"] == "lookup" && e["name"] == "Farmacia Mostrador")
            .count();
        assert!(lookups >= 1, "{log:#?}");
    }
    assert!(
        access_log(&app, &c.medic, &other)
            .iter()
            .all(|e| e["action"] != "lookup")
    );
}

/// What a counter lookup with a fresh code lists for `sig`'s prescription.
fn counter_results_of(app: &TestApp, ph: &TestPharmacy, sig: &str) -> Value {
    let code = code_for(app, sig);
    let resp = counter(app, ph, ANA, &code);
    let json = resp.json();
    json["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["signature"] == json!(sig))
        .cloned()
        .unwrap()
}

#[test]
fn wrong_codes_are_limited_per_curp_and_never_tell_whether_it_is_known() {
    let app = spawn_app();
    let mut a = Practice::new(&app, "limite@example.mx", "Clínica Límite");
    let ph = register(&app, "Farmacia Intentos");
    let sig = prescribed_for(&app, &mut a, ANA);
    let code = code_for(&app, &sig);
    let wrong = if code == "000000" { "000001" } else { "000000" };

    // A known CURP and one nobody has: the same status and body.
    let known = counter(&app, &ph, ANA, wrong);
    let unknown = counter(&app, &ph, BETO, wrong);
    assert_eq!((known.status, unknown.status), (404, 404));
    assert_eq!(known.json(), unknown.json());
    assert_eq!(known.json().as_object().unwrap().len(), 1, "{{message}}");

    // Malformed input is 400 on its field and counts nothing.
    field_errors(&counter(&app, &ph, "ABCTEST", &code))
        .get("curp")
        .expect("curp");
    field_errors(&counter(&app, &ph, ANA, "12ab56"))
        .get("code")
        .expect("code");

    // Five misses in the hour (one above), then 429 even for the right code.
    for _ in 0..4 {
        assert_message(&counter(&app, &ph, ANA, wrong), 404);
    }
    let limited = counter(&app, &ph, ANA, &code);
    assert_message(&limited, 429);
    assert!(limited.header("retry-after").is_some());
    // The unknown CURP is limited the same way.
    for _ in 0..4 {
        assert_message(&counter(&app, &ph, BETO, wrong), 404);
    }
    assert_message(&counter(&app, &ph, BETO, wrong), 429);
    // Only a pharmacy's token.
    assert_eq!(
        app.post(
            "/api/v2/pharmacy/patients/lookup/",
            a.medic.token(),
            &json!({"curp": ANA, "code": code})
        )
        .status,
        403
    );
}

#[test]
fn the_page_gives_the_code_and_a_record_without_a_valid_curp_gets_none() {
    let app = spawn_app();
    let mut a = Practice::new(&app, "pagina@example.mx", "Clínica Página");
    let ph = register(&app, "Farmacia Página");
    let sig = prescribed_for(&app, &mut a, ANA);
    let page = app.get(&format!("/rx/{sig}"), None).text();
    assert!(
        page.contains(&format!("action=\"/rx/{sig}/counter-code\"")),
        "the page's form"
    );

    // The form's answer is a page with the code, which works at the counter.
    let resp = form_code(&app, &sig);
    assert_eq!(resp.status, 200);
    assert!(
        resp.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let html = resp.text();
    let at = html.find("id=\"codigo\">").expect("the code on the page") + 12;
    let code = &html[at..at + 6];
    assert_eq!(listed(&counter(&app, &ph, ANA, code)), vec![sig.clone()]);

    // Free text as CURP: accepted on the record, but no identity, so no code.
    let free = prescribed_for(&app, &mut a, "ABCTEST");
    assert_message(&ask_code(&app, &free), 409);
    let resp = form_code(&app, &free);
    assert_eq!(resp.status, 409);
    assert!(resp.text().contains("CURP"));
    assert_message(&ask_code(&app, &"0".repeat(64)), 404);

    // At most 10 codes per record per hour (one was given above): then 429, as JSON and as a page.
    for _ in 0..9 {
        code_for(&app, &sig);
    }
    let limited = ask_code(&app, &sig);
    assert_message(&limited, 429);
    assert!(limited.header("retry-after").is_some());
    let page = form_code(&app, &sig);
    assert_eq!(page.status, 429);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
}

#[test]
fn a_code_expires_after_ten_minutes() {
    let app = spawn_app();
    let mut a = Practice::new(&app, "vence@example.mx", "Clínica Vence");
    let ph = register(&app, "Farmacia Vence");
    let sig = prescribed_for(&app, &mut a, ANA);
    let resp = ask_code(&app, &sig);
    assert_eq!(resp.status, 201);
    let (code, expires_at) = (
        resp.json()["code"].clone(),
        resp.json()["expires_at"].clone(),
    );
    // Ten minutes from now (give or take the request), in UTC.
    let clock = rusqlite::Connection::open_in_memory().unwrap();
    let ten_minutes: bool = clock
        .query_row(
            "SELECT ?1 > strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '+9 minutes', '+50 seconds') \
             AND ?1 <= strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '+10 minutes')",
            [expires_at.as_str().unwrap()],
            |r| r.get(0),
        )
        .unwrap();
    assert!(ten_minutes, "{expires_at}");
    // Eleven minutes later (the host's test clock), it no longer works.
    let app = later(app, 11 * 60);
    assert_message(&counter(&app, &ph, ANA, code.as_str().unwrap()), 404);
}
