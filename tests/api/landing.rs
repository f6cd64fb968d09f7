//! The patient landing (docs/api.md, openapi/receta.json; decisions `cta_link`, `raw_size`, "Who sees what"): the JSON
//! view for the issuing medic and the API admin, the public page at `/rx/<signature>` with its
//! headers, escaping and friendly 404, and the tokenless PDF download.
//!
//! One file (over 500 lines): the patient landing's three forms (JSON, HTML, PDF) tested against one prescription each.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::fixtures::{DIAGNOSIS, PATIENT_BIRTH, PATIENT_EMAIL, PATIENT_NAME, PATIENT_PHONE};
use crate::fixtures::{Issued, MEDIC_NAME, campaign_body, create_campaign, issue, medications};
use crate::helpers::{ADMIN_TOKEN, TestApp, TestResponse, spawn_app};

const ADMIN: Option<&str> = Some(ADMIN_TOKEN);

const SEED_NAME: &str = "Amoxicilina 500 mg, 12 cápsulas";

/// The PDF through the authenticated API (`{pdf}` in base64).
fn api_pdf(app: &TestApp, issued: &Issued) -> Vec<u8> {
    let resp = app.get(
        &format!("/api/v2/rx/pdf/{}/", issued.signature()),
        issued.medic.token(),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    BASE64.decode(resp.json()["pdf"].as_str().unwrap()).unwrap()
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .cloned()
        .collect();
    k.sort();
    k
}

fn landing_path(signature: &str) -> String {
    format!("/api/v2/rx/patient-landing/{signature}/")
}

/// The fields of a campaign on the landing: exactly openapi/receta.json.
const CAMPAIGN_KEYS: [&str; 9] = [
    "branches",
    "callback_redirect",
    "cta_link",
    "display_contact",
    "display_name",
    "display_phone",
    "id",
    "main_site_redirect",
    "short_name",
];

#[test]
fn landing_json_has_the_spec_shape() {
    let app = spawn_app();
    let issued = issue(&app, "landing-shape@example.mx", medications());
    let path = landing_path(issued.signature());

    // No campaigns yet: an empty list and a null default.
    let resp = app.get(&path, issued.medic.token());
    assert_eq!(resp.status, 200, "{}", resp.text());
    let body = resp.json();
    assert_eq!(keys(&body), ["campaigns", "default_campaign", "rx"]);
    assert_eq!(body["campaigns"], json!([]));
    assert_eq!(body["default_campaign"], Value::Null);

    let rx = &body["rx"];
    assert_eq!(
        keys(rx),
        [
            "access_log",
            "constancia",
            "created_at",
            "efirma",
            "fills",
            "medic",
            "medications",
            "pharmacy_status",
            "pharmacy_status_history",
            "raw_size",
            "reason_of_rejected",
            "rx_status",
            "sales",
            "seal",
            "signature",
            "valid_until"
        ]
    );
    assert_eq!(rx["pharmacy_status"], Value::Null);
    assert_eq!(rx["pharmacy_status_history"], json!([]));
    assert_eq!(rx["rx_status"], json!(["available", "Disponible"]));
    assert_eq!(rx["reason_of_rejected"], "");
    assert_eq!(rx["signature"], issued.signature());
    assert_eq!(rx["medic"], json!({"name": MEDIC_NAME}));
    // raw_size: the bytes of the stored PDF, the same bytes the PDF endpoint serves.
    let pdf = api_pdf(&app, &issued);
    assert!(pdf.starts_with(b"%PDF-"));
    assert_eq!(rx["raw_size"], json!(pdf.len()));
    // created_at: the full timestamp, the same day as the prescription's `created_at`.
    let created_at = rx["created_at"].as_str().unwrap();
    assert!(
        created_at.len() == 27 && created_at.ends_with('Z') && created_at.as_bytes()[10] == b'T',
        "{created_at}"
    );
    assert_eq!(&created_at[..10], issued.rx["created_at"].as_str().unwrap());

    // medications: the 2.5 objects without order_id, as the prescription has them.
    let meds = rx["medications"].as_array().unwrap();
    let issued_meds = issued.rx["medications"].as_array().unwrap();
    assert_eq!(meds.len(), 2);
    for (m, full) in meds.iter().zip(issued_meds) {
        let mut expected = full.clone();
        expected.as_object_mut().unwrap().remove("order_id");
        assert_eq!(m, &expected);
    }
    assert_eq!(
        keys(&meds[0]),
        [
            "antibiotic",
            "bought",
            "bought_qty",
            "category",
            "cost",
            "drug",
            "drug_upc",
            "fraccion",
            "id",
            "instructions",
            "presentation",
            "qty",
            "qty_label",
            "qty_total",
            "substitution_allowed"
        ]
    );
    assert_eq!(meds[0]["drug"], SEED_NAME);
    assert_eq!(meds[0]["qty_label"], "3 cajas");

    // Nothing of the patient and no diagnosis.
    let text = resp.text();
    for secret in [
        DIAGNOSIS,
        PATIENT_NAME,
        "Olvera",
        PATIENT_EMAIL,
        PATIENT_PHONE,
        PATIENT_BIRTH,
    ] {
        assert!(!text.contains(secret), "{secret:?} leaked: {text}");
    }

    // Campaigns: the active ones (default first), in the 2.8 shape; default_campaign is the default.
    let plain = create_campaign(&app, &campaign_body("benavides"));
    let mut inactive = campaign_body("cerrada");
    inactive["is_active"] = json!(false);
    create_campaign(&app, &inactive);
    let mut body = campaign_body("ahorro");
    body["is_default"] = json!(true);
    let default = create_campaign(&app, &body);

    let body = app.get(&path, ADMIN).json();
    let campaigns = body["campaigns"].as_array().unwrap();
    let names: Vec<&str> = campaigns
        .iter()
        .map(|c| c["short_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ahorro", "benavides"], "active only, default first");
    for c in campaigns {
        assert_eq!(keys(c), CAMPAIGN_KEYS, "{c}");
    }
    let shape = |c: &Value| {
        let mut c = c.clone();
        let map = c.as_object_mut().unwrap();
        for extra in ["is_default", "is_active", "created_at"] {
            map.remove(extra);
        }
        c
    };
    assert_eq!(campaigns[0], shape(&default));
    assert_eq!(campaigns[1], shape(&plain));
    assert_eq!(body["default_campaign"], shape(&default));

    // A default that is not active is not shown, and there is no default then.
    app.patch(
        &format!("/api/v2/campaigns/{}/", default["id"]),
        ADMIN,
        &json!({"is_active": false}),
    );
    let body = app.get(&path, ADMIN).json();
    assert_eq!(body["default_campaign"], Value::Null);
    assert_eq!(body["campaigns"], json!([shape(&plain)]));
}

#[test]
fn landing_json_is_for_the_issuing_medic_and_the_api_admin() {
    let app = spawn_app();
    let issued = issue(&app, "landing-owner@example.mx", medications());
    let other = app.create_medic("landing-other@example.mx");
    let path = landing_path(issued.signature());

    assert_eq!(app.get(&path, issued.medic.token()).status, 200);
    assert_eq!(app.get(&path, ADMIN).status, 200);
    // Without the trailing slash too.
    assert_eq!(app.get(path.trim_end_matches('/'), ADMIN).status, 200);

    // Another medic: 404, so existence does not leak; the same as a signature that names nothing.
    for (path, token) in [
        (path.clone(), other.token()),
        (landing_path(&"f".repeat(64)), issued.medic.token()),
        (landing_path(&"f".repeat(64)), ADMIN),
        (landing_path("not-a-signature"), ADMIN),
        (landing_path(&issued.signature().to_uppercase()), ADMIN),
    ] {
        let resp = app.get(&path, token);
        assert_eq!(resp.status, 404, "{path}");
        assert_eq!(resp.json(), json!({"message": "Not found."}));
    }

    // A token is required (Token scheme only).
    let resp = app.get(&path, None);
    assert_eq!(resp.status, 401);
    assert_eq!(resp.json(), json!({"message": "Invalid Token"}));
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    let resp = app.request_with_headers("GET", &path, &[("Authorization", &bearer)], None);
    assert_eq!(resp.status, 401);
    let resp = app.get(&path, Some("not-a-token"));
    assert_eq!(resp.status, 401);
}

/// Checks the headers every public landing response carries.
fn assert_private_headers(resp: &TestResponse) {
    assert_eq!(resp.header("cache-control"), Some("private, no-store"));
    assert_eq!(resp.header("x-robots-tag"), Some("noindex, nofollow"));
    assert_eq!(resp.header("referrer-policy"), Some("no-referrer"));
    assert_eq!(resp.header("x-content-type-options"), Some("nosniff"));
}

/// Checks an HTML response's CSP: nothing but the page's own `<style>`, allowed by its hash.
fn assert_strict_csp(resp: &TestResponse) {
    let csp = resp.header("content-security-policy").expect("a CSP");
    let directives: Vec<&str> = csp.split(';').map(str::trim).collect();
    for d in [
        "default-src 'none'",
        "img-src 'self' data:",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ] {
        assert!(directives.contains(&d), "{d:?} missing from {csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    assert!(!csp.contains("script-src"), "no script at all: {csp}");
    let html = resp.text();
    let style = html
        .split_once("<style>")
        .and_then(|(_, rest)| rest.split_once("</style>"))
        .map(|(css, _)| css)
        .expect("one inline style sheet");
    assert_eq!(html.matches("<style").count(), 1);
    let hash = BASE64.encode(Sha256::digest(style.as_bytes()));
    assert!(
        directives.contains(&format!("style-src 'sha256-{hash}'").as_str()),
        "the style sheet's hash is not in {csp}"
    );
    assert!(
        !html.contains("style=\""),
        "no style attribute: the CSP would block it"
    );
    assert!(!html.contains("<script"), "no script");
    for external in ["src=\"http", "href=\"//", "@import", "url(http"] {
        assert!(!html.contains(external), "external asset {external:?}");
    }
}

#[test]
fn the_public_page_is_html_for_the_patient_with_strict_headers() {
    let app = spawn_app();
    let issued = issue(&app, "landing-page@example.mx", medications());
    let mut default = campaign_body("ahorro");
    default["is_default"] = json!(true);
    default["display_name"] = json!("Farmacias del Ahorro");
    default["main_site_redirect"] = json!("https://www.ahorro.example.mx/");
    create_campaign(&app, &default);
    let mut hidden = campaign_body("cerrada");
    hidden["is_active"] = json!(false);
    hidden["display_name"] = json!("Farmacia Cerrada");
    create_campaign(&app, &hidden);

    // cta_link names this page.
    let signature = issued.signature();
    assert!(
        issued.rx["cta_link"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/rx/{signature}"))
    );
    let path = format!("/rx/{signature}");
    let resp = app.get(&path, None);
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(
        resp.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_private_headers(&resp);
    assert_strict_csp(&resp);
    let html = resp.text();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<html lang=\"es-MX\">"));
    assert!(html.contains("<meta name=\"robots\" content=\"noindex, nofollow\">"));
    assert!(
        html.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
    );

    // What the patient needs: a greeting by first name, the medic, the date, the medications with
    // quantity and instructions, the download, and the active campaigns with branches and links.
    let created = issued.rx["created_at"].as_str().unwrap();
    let months = [
        "enero",
        "febrero",
        "marzo",
        "abril",
        "mayo",
        "junio",
        "julio",
        "agosto",
        "septiembre",
        "octubre",
        "noviembre",
        "diciembre",
    ];
    let day: u32 = created[8..10].parse().unwrap();
    let month = months[created[5..7].parse::<usize>().unwrap() - 1];
    let date = format!("{day} de {month} de {}", &created[..4]);
    for expected in [
        "Hola, Mariana",
        MEDIC_NAME,
        "Clínica Roma Norte",
        date.as_str(),
        "Amoxicilina cápsulas 500 mg",
        SEED_NAME,
        "3 cajas",
        "1 cápsula cada 8 horas durante 7 días",
        "Paracetamol 500 mg tabletas",
        "1 caja",
        "1 tableta cada 8 horas si hay fiebre o dolor",
        &format!("href=\"/rx/{signature}/pdf\""),
        "Descargar receta",
        "Farmacias del Ahorro",
        "Recomendada",
        "href=\"https://ahorro.example.mx/surtir\"",
        "href=\"https://www.ahorro.example.mx/\"",
        "Madero 10, Centro, 06000 CDMX",
        "Sucursal núm. 1012",
        "Polanco",
        "55 5000 1234",
    ] {
        assert!(
            html.contains(expected),
            "{expected:?} missing from the page:\n{html}"
        );
    }
    // Nothing else of the patient, no diagnosis, no inactive campaign, no redirect literal.
    for absent in [
        DIAGNOSIS,
        "Olvera",
        "Zamudio",
        PATIENT_EMAIL,
        PATIENT_PHONE,
        PATIENT_BIRTH,
        "OEZM910309",
        "Farmacia Cerrada",
        "landing_view",
        "callback",
    ] {
        assert!(!html.contains(absent), "{absent:?} must not be on the page");
    }

    // With a trailing slash too; a HEAD-less browser GET with a query string is the same page.
    let again = app.get(&format!("{path}/"), None);
    assert_eq!(again.status, 200);
    assert_eq!(again.text(), html);
    assert_eq!(
        app.get(&format!("{path}?utm_source=sms"), None).text(),
        html
    );
}

#[test]
fn the_public_pdf_is_the_stored_pdf_as_a_download() {
    let app = spawn_app();
    let issued = issue(&app, "landing-pdf@example.mx", medications());
    let signature = issued.signature();
    let resp = app.get(&format!("/rx/{signature}/pdf"), None);
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.header("content-type"), Some("application/pdf"));
    assert_eq!(
        resp.header("content-disposition"),
        Some(format!("attachment; filename=\"receta-{}.pdf\"", &signature[..8]).as_str())
    );
    assert_private_headers(&resp);
    assert_eq!(
        resp.body,
        api_pdf(&app, &issued),
        "the bytes stored at issue"
    );
    let landing = app.get(&landing_path(signature), ADMIN).json();
    assert_eq!(landing["rx"]["raw_size"], json!(resp.body.len()));
    // A trailing slash is the same.
    assert_eq!(
        app.get(&format!("/rx/{signature}/pdf/"), None).body,
        resp.body
    );
}

#[test]
fn links_that_name_no_prescription_get_a_friendly_404_page() {
    let app = spawn_app();
    let issued = issue(&app, "landing-404@example.mx", medications());
    let signature = issued.signature();
    for path in [
        format!("/rx/{}", "f".repeat(64)),
        format!("/rx/{}/", &signature[..63]),
        format!("/rx/{}", signature.to_uppercase()),
        format!("/rx/{signature}x"),
        "/rx/".to_string(),
        "/rx/%3Cscript%3E".to_string(),
        format!("/rx/{}/pdf", "0".repeat(64)),
        format!("/rx/{signature}/otra-cosa"),
        format!("/rx/{signature}/pdf/extra"),
    ] {
        let resp = app.get(&path, None);
        assert_eq!(resp.status, 404, "{path}");
        assert_eq!(
            resp.header("content-type"),
            Some("text/html; charset=utf-8"),
            "{path}"
        );
        assert_private_headers(&resp);
        assert_strict_csp(&resp);
        let html = resp.text();
        assert!(
            html.contains("No encontramos esta receta"),
            "{path}: {html}"
        );
        assert!(html.contains("<meta name=\"robots\" content=\"noindex, nofollow\">"));
        assert!(!html.contains("<script"), "{path}");
    }
}

#[test]
fn a_script_in_a_medication_or_a_campaign_is_text_on_the_page() {
    let app = spawn_app();
    let issued = issue(
        &app,
        "landing-xss@example.mx",
        json!([{
            "presentation": "<script>alert(\"receta\")</script> Jarabe",
            "instructions": "<img src=x onerror=alert(1)> 5 ml cada 8 horas & reposo",
        }]),
    );
    let mut body = campaign_body("xss");
    body["display_name"] = json!("<b onmouseover='alert(1)'>Farmacia</b>");
    body["display_contact"] = json!("</style><script>alert(2)</script>");
    body["branches"] = json!([{"Determinante": 1, "name": "<iframe src=//evil.example>", "address": "\"><svg onload=alert(3)>"}]);
    create_campaign(&app, &body);

    let html = app.get(&format!("/rx/{}", issued.signature()), None).text();
    for raw in ["<script", "<img", "<b ", "<iframe", "<svg", "</style><"] {
        assert!(!html.contains(raw), "{raw:?} reached the page unescaped");
    }
    for escaped in [
        "&lt;script&gt;alert(&quot;receta&quot;)&lt;/script&gt; Jarabe",
        "&lt;img src=x onerror=alert(1)&gt; 5 ml cada 8 horas &amp; reposo",
        "&lt;b onmouseover=&#39;alert(1)&#39;&gt;Farmacia&lt;/b&gt;",
        "&lt;/style&gt;&lt;script&gt;alert(2)&lt;/script&gt;",
        "&lt;iframe src=//evil.example&gt;",
        "&quot;&gt;&lt;svg onload=alert(3)&gt;",
    ] {
        assert!(html.contains(escaped), "{escaped:?} missing:\n{html}");
    }
    // The JSON view returns the text as sent (JSON is not HTML).
    let json = app.get(&landing_path(issued.signature()), ADMIN).json();
    assert_eq!(
        json["rx"]["medications"][0]["presentation"],
        "<script>alert(\"receta\")</script> Jarabe"
    );
}
