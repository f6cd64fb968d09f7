//! Bounded documents and hostile inputs (issue "availability"): a create that would print on
//! thousands of pages is refused before anything is stored, a pharmacy catalog of any size never
//! breaks the patient's page, a `Host` header is checked and never copied into links, and the email
//! relay gets a stable `Idempotency-Key` (tests/api/notifications.rs).

use serde_json::{Value, json};

use crate::helpers::{ADMIN_TOKEN, assert_message, field_errors, spawn_app};
use crate::outbound::{Practice, db};

#[test]
fn a_create_that_would_print_thousands_of_pages_is_400_and_stores_nothing() {
    let app = spawn_app();
    let p = Practice::new(&app, "enorme@example.mx", "Clínica Enorme");
    // 50 medications, each with 2,000 lines of instructions (under the 4,096-character field limit).
    let instructions = "x\n".repeat(1999);
    let medications: Vec<Value> = (0..50)
        .map(|i| json!({"presentation": format!("Medicamento {i}"), "instructions": instructions}))
        .collect();
    let body = json!({"hospital": p.hospital, "patient": {"uid": p.patient["uid"]}, "medications": medications});
    let started = std::time::Instant::now();
    let resp = app.post("/api/v2/rx-endpoint/", p.medic.token(), &body);
    let errors = field_errors(&resp);
    let message = errors["medications"][0].as_str().unwrap();
    assert!(message.contains("at most 20"), "{message}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let stored: i64 = db(&app)
        .query_row("SELECT COUNT(*) FROM prescriptions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored, 0, "nothing stored, nothing queued");
    let queued: i64 = db(&app)
        .query_row("SELECT COUNT(*) FROM outbox", [], |r| r.get(0))
        .unwrap();
    assert_eq!(queued, 0);

    // A real long prescription (50 medications of ordinary instructions) is still fine.
    let medications: Vec<Value> = (0..50)
        .map(|i| json!({"presentation": format!("Medicamento {i}, tabletas"), "instructions": "Tomar 1 tableta cada 8 horas durante 7 días, con alimentos."}))
        .collect();
    let body = json!({"hospital": p.hospital, "patient": {"uid": p.patient["uid"]}, "medications": medications});
    assert_eq!(
        app.post("/api/v2/rx-endpoint/", p.medic.token(), &body)
            .status,
        200
    );
}

#[test]
fn a_huge_pharmacy_catalog_never_breaks_the_patients_page() {
    let app = spawn_app();
    let p = Practice::new(&app, "catalogo@example.mx", "Clínica Catálogo");
    let rx = p.prescribe(&app);
    let signature = rx["signature"].as_str().unwrap();
    let branches: Vec<Value> = (0..1000)
        .map(|i| json!({"Determinante": i, "name": format!("Sucursal {i}"), "Formato": "Farmacia", "Estado": "CDMX", "address": format!("Calle {i} núm. {i}, Col. Centro")}))
        .collect();
    for i in 0..40 {
        let body = json!({"short_name": format!("cadena{i}"), "display_name": format!("Cadena {i}"),
                          "branches": branches, "is_default": i == 0});
        let resp = app.post("/api/v2/campaigns/", Some(ADMIN_TOKEN), &body);
        assert_eq!(resp.status, 201, "campaign {i}: {}", resp.text());
    }
    let page = app.get(&format!("/rx/{signature}"), None);
    assert_eq!(page.status, 200, "{}", page.text());
    let html = page.text();
    assert!(html.contains("Cadena 0") && html.contains("Recomendada"));
    assert_eq!(
        html.matches("<article").count(),
        20,
        "at most 20 campaigns shown"
    );
    let landing = app
        .get(
            &format!("/api/v2/rx/patient-landing/{signature}/"),
            p.medic.token(),
        )
        .json();
    let campaigns = landing["campaigns"].as_array().unwrap();
    assert_eq!(campaigns.len(), 20);
    assert!(
        campaigns
            .iter()
            .all(|c| c["branches"].as_array().unwrap().len() == 50)
    );
    assert_eq!(landing["default_campaign"]["short_name"], "cadena0");
    // The admin still sees everything.
    let all = app
        .get("/api/v2/campaigns/?limit=1", Some(ADMIN_TOKEN))
        .json();
    assert_eq!(all["count"], 40);
    assert_eq!(
        all["results"][0]["branches"].as_array().unwrap().len(),
        1000
    );
}

#[test]
fn a_host_header_is_checked_and_never_copied_into_links() {
    let app = spawn_app();
    for _ in 0..3 {
        app.create_hospital(ADMIN_TOKEN, "Clínica Paginada");
    }
    let auth = format!("Token {ADMIN_TOKEN}");
    for bad in ["evil.com/path", "a b", "host:99999", "<x>"] {
        let resp = app.request_with_headers(
            "GET",
            "/api/v2/hospital/?limit=1",
            &[("Authorization", &auth), ("Host", bad)],
            None,
        );
        assert_message(&resp, 400);
    }
    // A valid host the service does not answer for: links are built from base_url.
    let forged = app.request_with_headers(
        "GET",
        "/api/v2/hospital/?limit=1",
        &[("Authorization", &auth), ("Host", "evil.example.com")],
        None,
    );
    assert_eq!(forged.status, 200);
    let next = forged.json()["next"].as_str().unwrap().to_string();
    assert!(
        next.starts_with("http://127.0.0.1:3000/api/v2/hospital/"),
        "{next}"
    );
    // The service's own host (a loopback address here): links use it.
    let own = app
        .get("/api/v2/hospital/?limit=1", Some(ADMIN_TOKEN))
        .json();
    assert!(
        own["next"].as_str().unwrap().starts_with(&app.address),
        "{own}"
    );
}
