//! What exactly was handed over (issue 62): a burn item's GTIN, lot, expiry, serial and
//! substitution, or the GS1 element string scanned from the box, stored as the library `biip`
//! (PyPI, an independent GS1 reader) parses it; the refusals (a bad check digit or an unparsable
//! string 400, an expired lot 409, a substitute the prescriber did not allow 409); and where it
//! shows: the dispense list, the sealed receipt (version 2), the antibiotic register (JSON, CSV).

use std::process::Command;

use serde_json::{Value, json};

use crate::fixtures::{Listener, Practice, TestPharmacy, python, register, signature};
use crate::helpers::{ADMIN_TOKEN, TestApp, TestResponse, field_errors, spawn_app};

/// The seed catalog's amoxicillin (an antibiotic: it goes into the register).
const AMOXICILINA: &str = "2000000000107";
/// A real GTIN (EAN-13 with its check digit), as a GTIN-14.
const GTIN: &str = "07501055300075";

/// What `biip` reads in a GS1 element string: `{gtin, expiry, lot, serial}`.
fn biip(element_string: &str) -> Value {
    let script = r#"
import json, sys, biip
from biip.gs1_messages import GS1Message
s = sys.argv[1]
m = GS1Message.parse_hri(s) if s.startswith("(") else biip.parse(s).gs1_message
out = {}
for e in m.element_strings:
    ai = e.ai.ai
    if ai == "01": out["gtin"] = e.value
    elif ai == "17": out["expiry"] = e.date.isoformat()
    elif ai == "10": out["lot"] = e.value
    elif ai == "21": out["serial"] = e.value
print(json.dumps(out))
"#;
    biip_script(script, element_string)
}

/// What a Python `script` using `biip` prints as JSON for `element_string` (its `sys.argv[1]`).
fn biip_script(script: &str, element_string: &str) -> Value {
    let out = Command::new(python())
        .args(["-c", script, element_string])
        .output()
        .expect("python with biip (cargo xtask test installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every value `biip` reads for each AI of a bracketed element string: `{ai: [values]}`.
fn biip_values(element_string: &str) -> Value {
    let script = r#"
import json, sys
from biip.gs1_messages import GS1Message
out = {}
for e in GS1Message.parse_hri(sys.argv[1]).element_strings:
    out.setdefault(e.ai.ai, []).append(e.value)
print(json.dumps(out))
"#;
    biip_script(script, element_string)
}

/// A prescription of amoxicillin (substitution allowed) and a fixed brand ("No sustituible"), each
/// 3 boxes; its signature and the two medication ids.
fn prescribed(app: &TestApp, p: &Practice) -> (String, i64, i64) {
    let body = json!({
        "hospital": p.hospital,
        "patient": {"uid": p.patient["uid"]},
        "diagnosis": "Faringitis",
        "medications": [
            {"presentation": "Amoxicilina 500 mg", "instructions": "1 c/8 h", "qty": 3, "drug_upc": AMOXICILINA},
            {"presentation": "Losartán 50 mg (Cozaar)", "instructions": "1 diaria", "qty": 3, "substitution_allowed": false},
        ],
    });
    let resp = app.post("/api/v2/rx-endpoint/", p.medic.token(), &body);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let rx = resp.json();
    let ids: Vec<i64> = rx["medications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect();
    (signature(&rx), ids[0], ids[1])
}

fn burn(app: &TestApp, ph: &TestPharmacy, sig: &str, items: Value) -> TestResponse {
    app.post(
        &format!("/api/v1/prescriptions/burn/{sig}"),
        ph.token(),
        &json!({"sales_code": "T-1", "medications": items}),
    )
}

/// An expiry well ahead: `YYMMDD` (day 00: the month's last day) and as the service stores it.
fn future_expiry() -> (&'static str, &'static str) {
    ("301200", "2030-12-31")
}

fn conflict_says(resp: &TestResponse, needle: &str) {
    assert_eq!(resp.status, 409, "{}", resp.text());
    let message = resp.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains(needle), "{message}");
}

#[test]
fn a_scanned_box_is_stored_as_biip_reads_it_and_shows_everywhere() {
    let app = spawn_app();
    let p = Practice::new(&app, "entrega@example.mx", "Clínica Entrega");
    let ph = register(&app, "Farmacia Trazable");
    let hooks = Listener::ok();
    let subscribed = app.post(
        "/api/v2/webhooks/",
        Some(ADMIN_TOKEN),
        &json!({"url": hooks.url("/sales"), "hospitals": [p.hospital], "events": ["prescription.dispensed"]}),
    );
    assert_eq!(subscribed.status, 201, "{}", subscribed.text());
    let (sig, amox, fixed) = prescribed(&app, &p);
    let (yymmdd, expiry) = future_expiry();
    // Raw, as a scanner types it: symbology identifier, FNC1 as GS.
    let scan = format!("]d201{GTIN}17{yymmdd}10LOTE-7\u{1d}21SN0001");
    let read = biip(&scan);
    assert_eq!(read["expiry"], expiry);

    let resp = burn(
        &app,
        &ph,
        &sig,
        json!([
            {"id": amox, "bought_qty": 1, "gs1": scan, "substituted": true, "substitution_reason": "Genérico intercambiable"},
            {"id": fixed, "bought_qty": 1, "gtin": "7501055300075", "lot": "A1", "expiry": "2031-01-31", "serial": "X9"},
        ]),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    let digest = resp.json()["receipt"]["digest"]
        .as_str()
        .unwrap()
        .to_string();

    // The dispense list: the scan as biip reads it, the typed fields as sent (GTIN-14).
    let events = app
        .get(
            &format!("/api/v2/rx-endpoint/{sig}/dispenses/"),
            p.medic.token(),
        )
        .json();
    let items = events["results"][0]["medications"]
        .as_array()
        .unwrap()
        .clone();
    let of = |id: i64| items.iter().find(|i| i["id"] == id).unwrap().clone();
    let scanned = of(amox);
    for field in ["gtin", "expiry", "lot", "serial"] {
        assert_eq!(
            scanned[field], read[field],
            "{field}: {scanned} vs biip {read}"
        );
    }
    assert_eq!(scanned["substituted"], true);
    assert_eq!(scanned["substitution_reason"], "Genérico intercambiable");
    let typed = of(fixed);
    assert_eq!(
        (
            &typed["gtin"],
            &typed["lot"],
            &typed["expiry"],
            &typed["serial"],
            &typed["substituted"]
        ),
        (
            &json!(GTIN),
            &json!("A1"),
            &json!("2031-01-31"),
            &json!("X9"),
            &Value::Null
        )
    );

    // The sealed receipt states it (version 2).
    let receipt = app.get(&format!("/api/v2/pharmacy/receipts/{digest}/"), ph.token());
    assert_eq!(receipt.status, 200, "{}", receipt.text());
    let document: Value =
        serde_json::from_str(receipt.json()["document"].as_str().unwrap()).unwrap();
    assert_eq!(document["version"], 2);
    let sealed = document["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["medication_id"] == amox)
        .unwrap()
        .clone();
    assert_eq!(
        (&sealed["lot"], &sealed["substituted"]),
        (&json!("LOTE-7"), &json!(true))
    );

    // The dispensed webhook carries the items.
    let event = hooks
        .wait_for_events(1, std::time::Duration::from_secs(30))
        .remove(0)
        .json();
    assert_eq!(event["type"], "prescription.dispensed");
    let hooked = event["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == amox)
        .unwrap()
        .clone();
    assert_eq!(
        (&hooked["gtin"], &hooked["lot"]),
        (&json!(GTIN), &json!("LOTE-7"))
    );

    // The antibiotic register: the amoxicillin sale with its product, JSON and CSV.
    let register = app.get("/api/v2/pharmacy/register/", ph.token()).json();
    let row = &register["results"][0];
    assert_eq!(
        (
            &row["gtin"],
            &row["lot"],
            &row["expiry"],
            &row["substituted"]
        ),
        (&json!(GTIN), &json!("LOTE-7"), &json!(expiry), &json!(true))
    );
    let csv = app
        .get("/api/v2/pharmacy/register/?format=csv", ph.token())
        .text();
    let header = csv.lines().next().unwrap();
    assert!(header.ends_with(",gtin,lot,expiry,substituted"), "{header}");
    assert!(
        csv.contains(&format!(",{GTIN},LOTE-7,{expiry},true")),
        "{csv}"
    );
}

#[test]
fn each_refusal_says_why_and_sells_nothing() {
    let app = spawn_app();
    let p = Practice::new(&app, "rechazo-entrega@example.mx", "Clínica Rechazos");
    let ph = register(&app, "Farmacia Cuidadosa");
    let (sig, amox, fixed) = prescribed(&app, &p);

    let bad = |item: Value, field: &str| {
        let resp = burn(&app, &ph, &sig, json!([item]));
        assert_eq!(resp.status, 400, "{}", resp.text());
        let messages = field_errors(&resp)["medications"].to_string();
        assert!(messages.contains(field), "{field}: {messages}");
    };
    bad(
        json!({"id": amox, "bought_qty": 1, "gtin": "7501055300076"}),
        "gtin",
    );
    bad(
        json!({"id": amox, "bought_qty": 1, "gtin": "075010553000750"}),
        "gtin",
    );
    bad(
        json!({"id": amox, "bought_qty": 1, "gs1": "(01)07501055300076(10)L1"}),
        "check digit",
    );
    bad(
        json!({"id": amox, "bought_qty": 1, "gs1": "(99)NADA"}),
        "gs1",
    );
    bad(
        json!({"id": amox, "bought_qty": 1, "expiry": "31/12/2030"}),
        "expiry",
    );
    bad(
        json!({"id": amox, "bought_qty": 1, "gs1": format!("(01){GTIN}"), "lot": "L1"}),
        "either gs1",
    );

    let expired = burn(
        &app,
        &ph,
        &sig,
        json!([{"id": amox, "bought_qty": 1, "lot": "VIEJO", "expiry": "2020-01-31"}]),
    );
    conflict_says(&expired, "lot expired");
    let scanned_expired = burn(
        &app,
        &ph,
        &sig,
        json!([{"id": amox, "bought_qty": 1, "gs1": format!("(01){GTIN}(17)200131(10)VIEJO")}]),
    );
    conflict_says(&scanned_expired, "lot expired");
    let swapped = burn(
        &app,
        &ph,
        &sig,
        json!([{"id": fixed, "bought_qty": 1, "substituted": true}]),
    );
    conflict_says(&swapped, "did not allow substitution");

    // An AI given twice with two values: biip reads both (it does not choose), and the service
    // refuses the string naming the AI rather than keep one of them.
    for (scan, ai) in [
        (format!("(01){GTIN}(01)00012345600012"), "01"),
        (format!("(01){GTIN}(17)200131(17)301231"), "17"),
        (format!("(01){GTIN}(10)LOTA(10)LOTB"), "10"),
    ] {
        let read = biip_values(&scan);
        let values = read[ai].as_array().unwrap();
        assert_eq!(values.len(), 2, "{scan}: {read}");
        assert_ne!(values[0], values[1], "{scan}: {read}");
        bad(
            json!({"id": amox, "bought_qty": 1, "gs1": scan}),
            &format!("({ai}) is given twice"),
        );
    }

    // Nothing was sold.
    let detail = app
        .get(&format!("/api/v2/rx-endpoint/{sig}/"), p.medic.token())
        .json();
    let sold: Vec<&Value> = detail["medications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["bought_qty"])
        .collect();
    assert_eq!(sold, [&json!(0), &json!(0)]);
}
