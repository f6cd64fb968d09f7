//! How a patient is reached (issue 71, docs/patients.md "How the patient is reached"): `phone`
//! echoed as sent and `phone_e164` exactly as PyPI `phonenumbers` formats it (a national number
//! taken as Mexican), the `channels` chosen or the default, a phone channel refused without a phone
//! that parses, and the WhatsApp opt-in: who recorded it and when, withdrawn by the patient on
//! their page.

use std::process::Command;

use serde_json::{Value, json};

use crate::fixtures::{create_patient, patient_body, python};
use crate::helpers::{TestApp, TestMedic, TestResponse, field_errors, spawn_app};

/// Phones as integrators send them, each with what `phonenumbers` makes of it (`None`: it does
/// not parse): Mexican numbers in every usual spelling, other countries, and things that are not
/// phones.
fn python_cases() -> Vec<(String, Option<String>)> {
    let script = r#"
import json, random
import phonenumbers as p
rnd = random.Random(20261128)
values = ["555123456", "5512345678", "55 1234 5678", "(55) 1234-5678", "+52 55 1234 5678",
    "+52 1 55 1234 5678", "044 55 1234 5678", "01 55 1234 5678", "1 55 1234 5678",
    "55-1234-5678 ext. 12", "tel:+52-55-1234-5678", "+1 415 555 2671", "00 1 415 555 2671",
    "+44 20 7946 0018", "+34 912 345 678", "+57 601 2345678", "abc", "", "+", "1234",
    "33.1234.5678", "81 1234 5678", "+52 (81) 1234-5678"]
while len(values) < 60:
    area = rnd.choice(["55", "33", "81", "222", "999", "664"])
    rest = "".join(rnd.choice("0123456789") for _ in range(10 - len(area)))
    sep = rnd.choice([" ", "-", "", "."])
    prefix = rnd.choice(["", "+52 ", "+52", "52 "])
    values.append(prefix + area + sep + rest[:4] + sep + rest[4:])
def e164(v):
    try:
        return p.format_number(p.parse(v, "MX"), p.PhoneNumberFormat.E164)
    except p.NumberParseException:
        return None
print(json.dumps([[v, e164(v)] for v in values]))
"#;
    let out = Command::new(python())
        .args(["-c", script])
        .output()
        .expect("python with phonenumbers (cargo xtask test installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn patient_with(app: &TestApp, medic: &TestMedic, fields: Value) -> TestResponse {
    let mut body = patient_body("Paciente Contacto");
    for (k, v) in fields.as_object().unwrap() {
        body[k] = v.clone();
    }
    app.post("/api/v2/patient/", medic.token(), &body)
}

fn patch(app: &TestApp, medic: &TestMedic, uid: &str, body: Value) -> TestResponse {
    app.patch(&format!("/api/v2/patient/{uid}/"), medic.token(), &body)
}

#[test]
fn phone_e164_is_what_python_phonenumbers_says() {
    let app = spawn_app();
    let medic = app.create_medic("telefonos@example.mx");
    let cases = python_cases();
    assert!(cases.iter().filter(|(_, e)| e.is_some()).count() >= 40);
    assert!(cases.iter().filter(|(_, e)| e.is_none()).count() >= 3);
    for (phone, expected) in &cases {
        let created = patient_with(&app, &medic, json!({"phone": phone}));
        assert_eq!(created.status, 201, "{phone:?}: {}", created.text());
        let created = created.json();
        assert_eq!(created["phone"], json!(phone), "echoed as sent");
        assert_eq!(created["phone_e164"], json!(expected), "{phone:?}");
        let read = app.get(
            &format!("/api/v2/patient/{}", created["uid"].as_str().unwrap()),
            medic.token(),
        );
        assert_eq!(
            read.json()["phone_e164"],
            json!(expected),
            "{phone:?} read back"
        );
    }
    // A PATCH of the phone parses the new one.
    let p = create_patient(&app, &medic, &patient_body("Paciente Cambia"));
    let uid = p["uid"].as_str().unwrap();
    let changed = patch(&app, &medic, uid, json!({"phone": "+1 415 555 2671"}));
    assert_eq!(changed.status, 202, "{}", changed.text());
    assert_eq!(changed.json()["phone_e164"], "+14155552671");
    let cleared = patch(&app, &medic, uid, json!({"phone": "no tengo"}));
    assert_eq!(cleared.json()["phone_e164"], Value::Null);
}

#[test]
fn channels_default_to_email_and_a_phone_channel_needs_a_phone() {
    let app = spawn_app();
    let medic = app.create_medic("canales@example.mx");
    let with_email = patient_with(&app, &medic, json!({"email": "ana@example.mx"})).json();
    assert_eq!(with_email["channels"], json!(["email"]));
    assert_eq!(with_email["whatsapp_opt_in"], Value::Null);
    let without = patient_with(&app, &medic, json!({"email": "EXP-12345"})).json();
    assert_eq!(without["channels"], json!([]));

    for (fields, why) in [
        (
            json!({"phone": "abc", "channels": ["sms"]}),
            "`sms` needs a phone number",
        ),
        (
            json!({"channels": ["whatsapp"]}),
            "`whatsapp` needs a phone number",
        ),
        (
            json!({"email": "EXP-12345", "channels": ["email"]}),
            "`email` needs an email address",
        ),
        (json!({"channels": ["fax"]}), "is not a valid choice"),
        (json!({"channels": "sms"}), "Expected a list"),
    ] {
        let resp = patient_with(&app, &medic, fields.clone());
        assert_eq!(resp.status, 400, "{fields}: {}", resp.text());
        let messages = field_errors(&resp)["channels"].to_string();
        assert!(messages.contains(why), "{fields}: {messages}");
    }
    let chosen = patient_with(
        &app,
        &medic,
        json!({"phone": "55 1234 5678", "email": "ana@example.mx",
               "channels": ["whatsapp", "sms", "email", "sms"]}),
    );
    assert_eq!(chosen.status, 201, "{}", chosen.text());
    let chosen = chosen.json();
    assert_eq!(chosen["channels"], json!(["email", "sms", "whatsapp"]));
    assert_eq!(chosen["phone_e164"], "+525512345678");
    let uid = chosen["uid"].as_str().unwrap();

    // A PATCH is checked against the record as updated.
    let only_sms = patch(&app, &medic, uid, json!({"channels": ["sms"]}));
    assert_eq!(only_sms.status, 202, "{}", only_sms.text());
    assert_eq!(only_sms.json()["channels"], json!(["sms"]));
    let no_phone = patch(&app, &medic, uid, json!({"phone": "", "channels": ["sms"]}));
    assert_eq!(no_phone.status, 400, "{}", no_phone.text());
    let kept = app
        .get(&format!("/api/v2/patient/{uid}"), medic.token())
        .json();
    assert_eq!(
        kept["phone"], "55 1234 5678",
        "a refused PATCH changes nothing"
    );
    assert_eq!(kept["channels"], json!(["sms"]));
    let none = patch(&app, &medic, uid, json!({"channels": []}));
    assert_eq!(none.json()["channels"], json!([]));
}

#[test]
fn the_whatsapp_opt_in_is_recorded_and_the_patient_withdraws_it_on_their_page() {
    let app = spawn_app();
    let (medic, hospital) = app.medic_admin_of_new_hospital("optin@example.mx", "Clínica WA");
    let created = patient_with(
        &app,
        &medic,
        json!({"phone": "55 1234 5678", "channels": ["whatsapp"], "whatsapp_opt_in": true}),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    let opt_in = &created["whatsapp_opt_in"];
    assert_eq!(opt_in["by"], format!("medic:{}", medic.id));
    assert!(opt_in["at"].as_str().unwrap().ends_with('Z'), "{opt_in}");
    let uid = created["uid"].as_str().unwrap().to_string();

    let rx = app.post(
        "/api/v2/rx-endpoint/",
        medic.token(),
        &json!({"hospital": hospital, "patient": {"uid": uid}, "diagnosis": "Control",
                "medications": [{"presentation": "Paracetamol 500 mg", "instructions": "1 cada 8 h"}]}),
    );
    assert_eq!(rx.status, 200, "{}", rx.text());
    let sig = rx.json()["signature"].as_str().unwrap().to_string();
    let page = app.get(&format!("/rx/{sig}"), None).text();
    assert!(
        page.contains(&format!("action=\"/rx/{sig}/whatsapp-opt-out\"")),
        "{page}"
    );

    // The page's form: 303 back to the page, which no longer offers it.
    let form = app.raw(
        "POST",
        &format!("/rx/{sig}/whatsapp-opt-out"),
        None,
        Some(("application/x-www-form-urlencoded", b"")),
    );
    assert_eq!(form.status, 303, "{}", form.text());
    assert_eq!(form.header("location"), Some(format!("/rx/{sig}").as_str()));
    let read = app
        .get(&format!("/api/v2/patient/{uid}"), medic.token())
        .json();
    assert_eq!(read["whatsapp_opt_in"], Value::Null);
    assert_eq!(
        read["channels"],
        json!(["whatsapp"]),
        "the choice stays; the opt-in is gone"
    );
    assert!(
        !app.get(&format!("/rx/{sig}"), None)
            .text()
            .contains("whatsapp-opt-out")
    );

    // As JSON, twice: nothing more changes; an unknown signature is 404.
    let json_call = |sig: &str| {
        app.request_with_headers(
            "POST",
            &format!("/rx/{sig}/whatsapp-opt-out"),
            &[("Accept", "application/json")],
            None,
        )
    };
    let again = json_call(&sig);
    assert_eq!(again.status, 200, "{}", again.text());
    assert_eq!(again.json(), json!({"whatsapp_opt_in": null}));
    assert_eq!(json_call(&"ab".repeat(32)).status, 404);

    // A medic records a new opt-in (the patient agreed again).
    let renewed = patch(&app, &medic, &uid, json!({"whatsapp_opt_in": true}));
    assert_eq!(renewed.status, 202, "{}", renewed.text());
    assert_eq!(
        renewed.json()["whatsapp_opt_in"]["by"],
        format!("medic:{}", medic.id)
    );
    assert!(
        app.get(&format!("/rx/{sig}"), None)
            .text()
            .contains("whatsapp-opt-out")
    );
}
