//! Only the person speaks for the person (issue 86, docs/patients.md "Who speaks for whom"). Each
//! attack the issue lists, tried as a medic who writes someone's CURP on a record of their own, a
//! holder of one prescription's link and a pharmacy would, and the person's own flows that still
//! work: proving another record theirs by a code sent to its email, the counter and the history
//! following what they proved.

use std::time::Duration;

use serde_json::{Value, json};

use crate::fixtures::{
    ANA, AT_DENTIST, AT_PSYCHIATRIST, FORGER_OWN, Practice, TestPharmacy, folio, link,
    link_codes_sent_to, medic_name_of, medication_history, named_practice, nth_curp, page_json,
    person_scene, prescribe, record_with, register, signature, wait_link_code,
};
use crate::helpers::{TestApp, TestResponse, assert_message};

const WAIT: Duration = Duration::from_secs(30);

/// `POST /rx/<sig>/consents` naming `medic`, as JSON.
fn consent_to(app: &TestApp, sig: &str, medic: i64) -> TestResponse {
    let body = json!({"medic": medic});
    page_json(app, "POST", &format!("/rx/{sig}/consents"), Some(&body))
}

fn folios(resp: &TestResponse) -> Vec<String> {
    assert_eq!(resp.status, 200, "{}", resp.text());
    resp.json()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["folio"].as_str().unwrap().to_string())
        .collect()
}

fn counter(app: &TestApp, ph: &TestPharmacy, curp: &str, code: &str) -> TestResponse {
    app.post(
        "/api/v2/pharmacy/patients/lookup/",
        ph.token(),
        &json!({"curp": curp, "code": code}),
    )
}

fn counter_code(app: &TestApp, sig: &str) -> TestResponse {
    page_json(app, "POST", &format!("/rx/{sig}/counter-code"), None)
}

fn code_of(resp: TestResponse) -> String {
    assert_eq!(resp.status, 201, "{}", resp.text());
    resp.json()["code"].as_str().unwrap().to_string()
}

/// The signatures a counter lookup lists.
fn listed(resp: &TestResponse) -> Vec<String> {
    assert_eq!(resp.status, 200, "{}", resp.text());
    let mut found: Vec<String> = resp.json()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["signature"].as_str().unwrap().to_string())
        .collect();
    found.sort();
    found
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Attack 1: medic Z writes the victim's CURP on a record of their own and uses its page.
#[test]
fn a_medic_who_writes_someones_curp_reaches_nothing_of_theirs() {
    let s = person_scene("uno");
    let app = &s.app;
    let ph = register(app, "Farmacia Uno");
    // The victim trusts her dentist with her history, on the psychiatrist's prescription's page.
    let given = consent_to(app, &s.from_c, s.b.medic.id);
    assert_eq!(given.status, 201, "{}", given.text());
    let victims = given.json()["id"].as_i64().unwrap();

    // Z's page lists none of her consents and withdraws none of them.
    let listed_on_z = page_json(app, "GET", &format!("/rx/{}/consents", s.from_z), None);
    assert_eq!(listed_on_z.json()["consents"], json!([]));
    let path = format!("/rx/{}/consents/{victims}", s.from_z);
    assert_message(&page_json(app, "DELETE", &path, None), 404);
    let hers = page_json(app, "GET", &format!("/rx/{}/consents", s.from_c), None);
    assert_eq!(hers.json()["consents"][0]["withdrawn_at"], Value::Null);

    // Z consents to Z on Z's own page: Z's history holds nothing of hers.
    let own = consent_to(app, &s.from_z, s.z.medic.id);
    assert_eq!(own.status, 201, "{}", own.text());
    assert_eq!(folios(&medication_history(app, &s.z)), Vec::<String>::new());

    // Her live counter code and her hour of codes are untouched by Z's ten codes.
    let hers = code_of(counter_code(app, &s.from_b));
    let mut zs = String::new();
    for _ in 0..10 {
        zs = code_of(counter_code(app, &s.from_z));
    }
    assert_message(&counter_code(app, &s.from_z), 429);
    assert_eq!(
        listed(&counter(app, &ph, ANA, &hers)),
        vec![s.from_b.clone()]
    );
    code_of(counter_code(app, &s.from_b));
    // Z's code lists only Z's own record at the counter.
    assert_eq!(listed(&counter(app, &ph, ANA, &zs)), vec![s.from_z.clone()]);

    // Z asks for link codes: they go to her emails, never to Z; Z's guesses run out.
    let asked = page_json(
        app,
        "POST",
        &format!("/rx/{}/records/codes", s.from_z),
        None,
    );
    assert_eq!(asked.status, 202, "{}", asked.text());
    let theirs = crate::fixtures::eventually_in(app, "her link codes", WAIT, || {
        let sent = link_codes_sent_to(&s.relay, AT_DENTIST);
        (!sent.is_empty()).then_some(sent)
    });
    assert!(link_codes_sent_to(&s.relay, FORGER_OWN).is_empty());
    let wrong = if theirs[0] == "000000" {
        "000001"
    } else {
        "000000"
    };
    let guess = json!({"code": wrong});
    let records = format!("/rx/{}/records", s.from_z);
    for _ in 0..5 {
        assert_message(&page_json(app, "POST", &records, Some(&guess)), 404);
    }
    let limited = page_json(app, "POST", &records, Some(&json!({"code": theirs[0]})));
    assert_message(&limited, 429);
    assert!(limited.header("retry-after").is_some());
    assert_eq!(
        page_json(app, "GET", &records, None).json()["records"],
        json!([])
    );
    assert_eq!(folios(&medication_history(app, &s.z)), Vec::<String>::new());
}

/// Attacks 2, 3, 4 and 7: no answer hands out another prescription's signature or contact data,
/// and a medic is named by name.
#[test]
fn no_answer_hands_out_another_prescriptions_link_or_contact() {
    let s = person_scene("dos");
    let app = &s.app;
    // She proves the psychiatrist's record hers on the dentist's prescription's page.
    let linked = link(app, &s.relay, &s.from_b, AT_PSYCHIATRIST);
    assert_eq!(linked["medic"]["name"], json!(medic_name_of(app, &s.c)));
    // A consent given on the psychiatrist's page, seen from the dentist's: by folio only.
    let given = consent_to(app, &s.from_c, s.z.medic.id);
    assert_eq!(given.status, 201, "{}", given.text());
    assert_eq!(given.json()["given_on"], json!(folio(&s.from_c)));
    assert_eq!(given.json()["given_here"], json!(true));
    let seen = page_json(app, "GET", &format!("/rx/{}/consents", s.from_b), None);
    assert_eq!(
        seen.json()["consents"][0]["given_on"],
        json!(folio(&s.from_c))
    );
    assert_eq!(seen.json()["consents"][0]["given_here"], json!(false));
    assert!(!seen.text().contains(&s.from_c), "{}", seen.text());

    // The consented medic's history and warnings: folios, names, no signature, no contact data.
    let read = medication_history(app, &s.z);
    assert_eq!(folios(&read), vec![folio(&s.from_c).to_string()]);
    let entry = &read.json()["results"][0];
    assert_eq!(entry["medic"]["name"], json!(medic_name_of(app, &s.c)));
    for leaked in [&s.from_c, AT_PSYCHIATRIST, s.c.medic.email.as_str()] {
        assert!(!read.text().contains(leaked), "{leaked} in {}", read.text());
    }
    let rx = prescribe(app, &s.z);
    let warnings = rx["warnings"].as_array().unwrap();
    assert!(!warnings.is_empty(), "{rx:#?}");
    for w in warnings {
        assert_eq!(w["other"]["folio"], json!(folio(&s.from_c)));
        assert_eq!(w["other"]["medic"]["name"], json!(medic_name_of(app, &s.c)));
        let text = w.to_string();
        assert!(
            !text.contains(&s.from_c) && !text.contains(&s.c.medic.email),
            "{text}"
        );
    }
    let uid = s.z.patient["uid"].as_str().unwrap();
    let fhir = app.get(
        &format!("/api/v2/patient/{uid}/medication-history/fhir/"),
        s.z.medic.token(),
    );
    assert_eq!(fhir.status, 200, "{}", fhir.text());
    let text = fhir.text();
    assert!(text.contains(folio(&s.from_c)));
    for leaked in [&s.from_c, "telecom", AT_PSYCHIATRIST, "rx-signature"] {
        assert!(!text.contains(leaked), "{leaked} in {text}");
    }
}

/// Attack 5: a pharmacy alternating statuses messages the patient once.
#[test]
fn a_pharmacy_messages_the_patient_about_a_status_at_most_once() {
    let s = person_scene("tres");
    let app = &s.app;
    let ph = register(app, "Farmacia Vaivén");
    let other = register(app, "Farmacia Otra");
    let rx = prescribe(app, &s.b);
    let sig = signature(&rx);
    let post = |ph: &TestPharmacy, status: &str| {
        let resp = app.post(
            &format!("/api/v2/pharmacy/rx/{sig}/status/"),
            ph.token(),
            &json!({"status": status}),
        );
        assert_eq!(resp.status, 201, "{}", resp.text());
        resp.json()["message_queued"].as_bool().unwrap()
    };
    assert!(post(&ph, "ready_to_collect"));
    for _ in 0..6 {
        assert!(!post(&ph, "ready_to_dispatch"));
        assert!(!post(&ph, "ready_to_collect"));
    }
    // Another pharmacy's `ready_to_collect` within two hours is recorded, not messaged; a new
    // status value is.
    assert!(!post(&other, "ready_to_collect"));
    let reason = json!({"status": "not_dispensed", "reason": "Sin existencias"});
    let refused = app.post(
        &format!("/api/v2/pharmacy/rx/{sig}/status/"),
        other.token(),
        &reason,
    );
    assert_eq!(refused.json()["message_queued"], json!(true));
    // Every status is still shown.
    let detail = app.get(&format!("/api/v2/rx-endpoint/{sig}/"), s.b.medic.token());
    assert!(detail.text().matches("ready_to_collect").count() >= 8);
    // What reached the relay: one "ready" email and one "not dispensed".
    let subjects = |needle: &str| {
        s.relay
            .requests()
            .iter()
            .filter(|r| {
                r.json()["subject"]
                    .as_str()
                    .is_some_and(|t| t.contains(needle))
            })
            .count()
    };
    crate::fixtures::eventually_in(app, "the two status emails", WAIT, || {
        (subjects("no surtirá") == 1).then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(subjects("lista para recoger"), 1);
}

/// Attack 6: a CURP written with no-break spaces or Unicode dashes is the same person.
#[test]
fn a_curp_with_unicode_spaces_or_dashes_is_the_same_person() {
    let s = person_scene("cuatro");
    let app = &s.app;
    let ph = register(app, "Farmacia Espacios");
    let mut n = Practice::new(app, "espacios@example.mx", "Clínica Espacios");
    let padded = "\u{a0}BOXW310820HNERXN09\u{a0}";
    let from_n = record_with(app, &mut n, padded, "ana.espacios@example.mx");
    assert_eq!(n.patient["curp"], json!(padded), "echoed as sent");
    assert_eq!(n.patient["curp_valid"], json!(true));
    let mut d = Practice::new(app, "guiones@example.mx", "Clínica Guiones");
    let dashed = "boxw\u{2011}310820\u{2013}hnerxn09";
    let from_d = record_with(app, &mut d, dashed, "ana.guiones@example.mx");
    // Its own code works at the counter with the plain CURP.
    let code = code_of(counter_code(app, &from_n));
    assert_eq!(listed(&counter(app, &ph, ANA, &code)), vec![from_n.clone()]);
    // And both are found as hers: the plain record's page sends each a code and links them.
    link(app, &s.relay, &s.from_b, "ana.espacios@example.mx");
    let code = wait_link_code(app, &s.relay, "ana.guiones@example.mx", 1);
    let linked = page_json(
        app,
        "POST",
        &format!("/rx/{}/records", s.from_b),
        Some(&json!({"code": code})),
    );
    assert_eq!(linked.status, 201, "{}", linked.text());
    let code = code_of(counter_code(app, &s.from_b));
    let found = listed(&counter(app, &ph, ANA, &code));
    assert_eq!(found, sorted(vec![s.from_b.clone(), from_n, from_d]));
}

/// Attack 8: one pharmacy's wrong codes across many CURPs lock that pharmacy out, not the people;
/// a page change sent from another site is refused.
#[test]
fn one_pharmacy_cannot_lock_people_out_and_other_sites_cannot_post() {
    let s = person_scene("cinco");
    let app = &s.app;
    let guesser = register(app, "Farmacia Adivina");
    let honest = register(app, "Farmacia Honesta");
    let hers = code_of(counter_code(app, &s.from_b));
    let wrong = if hers == "000000" { "000001" } else { "000000" };
    // One miss on her CURP, then nine on others: ten in the hour, and the guesser is refused.
    assert_message(&counter(app, &guesser, ANA, wrong), 404);
    for n in 1..=9 {
        assert_message(&counter(app, &guesser, &nth_curp(n), wrong), 404);
    }
    let refused = counter(app, &guesser, &nth_curp(10), wrong);
    assert_message(&refused, 429);
    assert!(refused.header("retry-after").is_some());
    assert_message(&counter(app, &guesser, ANA, &hers), 429);
    // She is not locked out: another pharmacy serves her code.
    assert_eq!(
        listed(&counter(app, &honest, ANA, &hers)),
        vec![s.from_b.clone()]
    );

    // Another site's page cannot post to hers; her own page's forms can.
    let consents = format!("/rx/{}/consents", s.from_b);
    let body = format!("medic={}", s.b.medic.id);
    let form = |headers: &[(&str, &str)]| {
        let mut all = vec![("Content-Type", "application/x-www-form-urlencoded")];
        all.extend_from_slice(headers);
        app.request_with_headers("POST", &consents, &all, Some(body.as_bytes()))
    };
    assert_message(&form(&[("Origin", "https://otro-sitio.example")]), 403);
    assert_message(&form(&[("Sec-Fetch-Site", "cross-site")]), 403);
    assert_message(&form(&[("Origin", "null")]), 403);
    let codes = format!("/rx/{}/counter-code", s.from_b);
    let cross = [
        ("Sec-Fetch-Site", "cross-site"),
        ("Accept", "application/json"),
    ];
    assert_message(&app.request_with_headers("POST", &codes, &cross, None), 403);
    let own = app.url("");
    let own = own.trim_end_matches('/');
    let allowed = form(&[("Origin", own), ("Sec-Fetch-Site", "same-origin")]);
    assert_eq!(allowed.status, 303, "{}", allowed.text());
}

/// The person's own flows: she proves her records hers on one page; the counter and a consented
/// medic's history follow; she withdraws and unlinks from that page; a link gives nothing back.
#[test]
fn the_person_links_her_records_and_the_counter_and_history_follow() {
    let s = person_scene("seis");
    let app = &s.app;
    let ph = register(app, "Farmacia Completa");
    let mut g = named_practice(
        app,
        "nuevo.medico@example.mx",
        "Clínica Nueva",
        "Dra. Elena Nava",
    );
    let from_g = record_with(app, &mut g, ANA, "ana.nueva@example.mx");
    // Before: the new medic's page speaks for its own record only.
    let code = code_of(counter_code(app, &from_g));
    assert_eq!(listed(&counter(app, &ph, ANA, &code)), vec![from_g.clone()]);

    let linked = link(app, &s.relay, &from_g, AT_DENTIST);
    let code = wait_link_code(app, &s.relay, AT_PSYCHIATRIST, 1);
    let records = format!("/rx/{from_g}/records");
    let second = page_json(app, "POST", &records, Some(&json!({"code": code})));
    assert_eq!(second.status, 201, "{}", second.text());
    let again = page_json(app, "POST", &records, Some(&json!({"code": code})));
    assert_message(&again, 404);
    let list = page_json(app, "GET", &records, None).json();
    assert_eq!(list["records"].as_array().unwrap().len(), 2, "{list:#?}");
    // The forger's record got a code too, at the forger's own address: useless without her page,
    // and it names nothing of her other medics. No email carries a link.
    wait_link_code(app, &s.relay, FORGER_OWN, 1);
    let mails: Vec<Value> = s.relay.requests().iter().map(|r| r.json()).collect();
    for mail in mails
        .iter()
        .filter(|m| m["subject"].as_str().unwrap_or("").contains("unir"))
    {
        let text = mail["text"].as_str().unwrap();
        assert!(!text.contains("/rx/"), "{text}");
        if mail["to"] == json!([FORGER_OWN]) {
            for name in [
                medic_name_of(app, &g),
                medic_name_of(app, &s.b),
                medic_name_of(app, &s.c),
            ] {
                assert!(!text.contains(&name), "{name} in {text}");
            }
        }
    }

    // The counter lists all three; the dentist's own page still only its own.
    let code = code_of(counter_code(app, &from_g));
    let all = sorted(vec![from_g.clone(), s.from_b.clone(), s.from_c.clone()]);
    assert_eq!(listed(&counter(app, &ph, ANA, &code)), all);
    let code = code_of(counter_code(app, &s.from_b));
    assert_eq!(
        listed(&counter(app, &ph, ANA, &code)),
        vec![s.from_b.clone()]
    );

    // She lets the new medic see her history, from the new prescription's page.
    let consents = format!("/rx/{from_g}/consents");
    let given = consent_to(app, &from_g, g.medic.id);
    assert_eq!(given.status, 201, "{}", given.text());
    let seen = sorted(folios(&medication_history(app, &g)));
    let expected = sorted(vec![folio(&s.from_b).into(), folio(&s.from_c).into()]);
    assert_eq!(seen, expected);
    // Withdrawn from her own page: closed again.
    let id = given.json()["id"].as_i64().unwrap();
    let withdrawn = page_json(app, "DELETE", &format!("{consents}/{id}"), None);
    assert_eq!(withdrawn.status, 200, "{}", withdrawn.text());
    assert_message(&medication_history(app, &g), 403);

    // Undone: the counter stops listing the unlinked record.
    let id = linked["id"].as_i64().unwrap();
    let undone = page_json(app, "DELETE", &format!("{records}/{id}"), None);
    assert_eq!(undone.status, 200, "{}", undone.text());
    let code = code_of(counter_code(app, &from_g));
    let left = sorted(vec![from_g.clone(), s.from_c.clone()]);
    assert_eq!(listed(&counter(app, &ph, ANA, &code)), left);
    assert_message(
        &page_json(app, "DELETE", &format!("{records}/{id}"), None),
        404,
    );

    // The page of her records and its forms: the dentist's record linked again.
    let page = app.get(&records, None);
    assert!(
        page.text().contains("Tus recetas de otros médicos"),
        "{}",
        page.text()
    );
    assert!(
        page.text()
            .contains(&format!("action=\"/rx/{from_g}/records/codes\""))
    );
    let form = |path: &str, body: &str| {
        let content = ("application/x-www-form-urlencoded", body.as_bytes());
        app.raw("POST", path, None, Some(content))
    };
    let sent = form(&format!("{records}/codes"), "");
    assert_eq!(sent.status, 200, "{}", sent.text());
    assert!(sent.text().contains("id=\"enviados\""));
    let code = wait_link_code(app, &s.relay, AT_DENTIST, 2);
    let linked = form(&records, &format!("code={code}"));
    assert_eq!(linked.status, 303, "{}", linked.text());
    assert_eq!(linked.header("location"), Some(records.as_str()));
    let list = page_json(app, "GET", &records, None).json();
    assert_eq!(list["records"].as_array().unwrap().len(), 2, "{list:#?}");
}
