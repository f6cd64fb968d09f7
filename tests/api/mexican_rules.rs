//! A prescription's legal life in Mexico (docs/mexican-rules.md): drug classes (LGS art. 226
//! fracción, antibiotic) in the catalog and on every medication, fracciones I-III refused,
//! validity (`valid_days`, `valid_until`, `expired`), repeats (`fills`, `fill_interval_days`), the
//! seal of each sale, and the antibiotic register in JSON and CSV.
//!
//! Time moves by restarting the host on the same state with `RECETA_CLOCK_OFFSET_SECONDS` (the
//! host's test clock), never by sleeping.
//!
//! One file (over 500 lines): the legal rules share one practice, its helpers and the host's test clock; split by rule, each file would copy them.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::fixtures::{
    Practice, burn, db, each_at_once, later, listed, lookup, register, signature,
};
use crate::helpers::{ADMIN_TOKEN, TestApp, TestResponse, field_errors, spawn_app};

const DAY: i64 = 86_400;
/// The seed catalog's products used here (migrations/0004 and 0012).
const AMOXICILINA: &str = "2000000000107";
const PARACETAMOL: &str = "2000000000015";
const MORFINA: &str = "2000000000473";
const METILFENIDATO: &str = "2000000000480";

/// The create body of a prescription at `p`'s hospital with `medications` and `extra` fields.
fn body(p: &Practice, medications: Value, extra: Value) -> Value {
    let mut b = json!({
        "hospital": p.hospital,
        "patient": {"uid": p.patient["uid"]},
        "diagnosis": "Hipertensión arterial",
        "medications": medications,
    });
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

fn item(presentation: &str, qty: i64) -> Value {
    json!({"presentation": presentation, "instructions": "1 diaria", "qty": qty})
}

fn create(app: &TestApp, p: &Practice, body: &Value) -> TestResponse {
    app.post("/api/v2/rx-endpoint/", p.medic.token(), body)
}

fn created(app: &TestApp, p: &Practice, body: &Value) -> Value {
    let resp = create(app, p, body);
    assert_eq!(resp.status, 200, "{}", resp.text());
    resp.json()
}

fn count(app: &TestApp, table: &str) -> i64 {
    db(app)
        .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

/// Today in Mexico City (UTC-6), `YYYY-MM-DD`, from the database's clock (as the service sees it).
fn mexico_city_today(app: &TestApp) -> String {
    db(app)
        .query_row("SELECT date('now', '-6 hours')", [], |r| r.get(0))
        .unwrap()
}

fn date_plus(app: &TestApp, date: &str, days: i64) -> String {
    db(app)
        .query_row(
            "SELECT date(?1, ?2)",
            (date, format!("{days:+} days")),
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn fracciones_one_to_three_are_refused_and_nothing_is_stored() {
    let app = spawn_app();
    let p = Practice::new(&app, "fraccion@example.mx", "Clínica Fracción");
    let catalog = |upc: &str| json!([{"presentation": "Ampolleta", "instructions": "c/4 h", "drug_upc": upc}]);
    for meds in [
        catalog(MORFINA),
        catalog(METILFENIDATO),
        json!([item("Losartán 50 mg", 1), {"presentation": "Clonazepam 2 mg", "instructions": "1 noche", "category": "unstructured_drug", "fraccion": "II"}]),
        json!([{"presentation": "Buprenorfina", "instructions": "c/8 h", "drug_upc": "7501000000001", "category": "basic_drug", "fraccion": "III"}]),
    ] {
        let resp = create(&app, &p, &body(&p, meds.clone(), json!({})));
        assert_eq!(resp.status, 400, "{meds}: {}", resp.text());
        let messages = field_errors(&resp)["medications"].to_string();
        assert!(messages.contains("recetario especial"), "{messages}");
        assert!(messages.contains("fracción"), "{messages}");
    }
    assert_eq!(count(&app, "prescriptions"), 0, "nothing is stored");
    assert_eq!(count(&app, "medications"), 0);

    // Not a class at all.
    let meds = json!([{"presentation": "X", "instructions": "y", "fraccion": "VII"}]);
    let resp = create(&app, &p, &body(&p, meds, json!({})));
    assert_eq!(resp.status, 400);
    assert!(
        field_errors(&resp)["medications"]
            .to_string()
            .contains("VII")
    );
}

#[test]
fn a_catalog_antibiotic_is_flagged_everywhere() {
    let app = spawn_app();
    let p = Practice::new(&app, "antibiotico@example.mx", "Clínica Antibiótico");
    let ph = register(&app, "Farmacia Flags");

    // The catalog says what each product is.
    let found = app
        .get("/api/v2/drugs/?search=Amoxicilina%20500", p.medic.token())
        .json();
    let amox = &found["results"][0];
    assert_eq!(amox["upc"], AMOXICILINA);
    assert_eq!(
        (&amox["fraccion"], &amox["antibiotic"]),
        (&json!("IV"), &json!(true))
    );

    let meds = json!([
        {"presentation": "Amoxicilina 500 mg", "instructions": "1 c/8 h por 7 días", "drug_upc": AMOXICILINA},
        {"presentation": "Té de manzanilla", "instructions": "1 taza"},
        {"presentation": "Claritromicina 500 mg", "instructions": "1 c/12 h", "category": "unstructured_drug", "fraccion": "IV", "antibiotic": true},
    ]);
    let rx = created(&app, &p, &body(&p, meds, json!({})));
    let sig = signature(&rx);
    let expect = [
        (json!("IV"), json!(true)),
        (Value::Null, Value::Null),
        (json!("IV"), json!(true)),
    ];
    let check = |where_: &str, meds: &Value| {
        for (i, (fraccion, antibiotic)) in expect.iter().enumerate() {
            assert_eq!(&meds[i]["fraccion"], fraccion, "{where_} item {i}: {meds}");
            assert_eq!(
                &meds[i]["antibiotic"], antibiotic,
                "{where_} item {i}: {meds}"
            );
        }
    };
    check("create", &rx["medications"]);
    let detail = app
        .get(&format!("/api/v2/rx-endpoint/{sig}/"), p.medic.token())
        .json();
    check("detail", &detail["medications"]);
    let list = app.get("/api/v2/rx-endpoint/", p.medic.token()).json();
    check("list", &list["results"][0]["medications"]);
    check("lookup", &lookup(&app, &ph, &sig).json()["medications"]);
    let landing = app
        .get(
            &format!("/api/v2/rx/patient-landing/{sig}/"),
            p.medic.token(),
        )
        .json();
    check("landing", &landing["rx"]["medications"]);
    let page = app.get(&format!("/rx/{sig}"), None).text();
    assert!(page.contains("Antibiótico"), "the patient's page says so");

    // The admin classifies a product; a reload that does not mention the class keeps it.
    let load = json!([{"upc": "7501055300075", "name": "Cefuroxima 500 mg", "fraccion": "IV", "antibiotic": true}]);
    assert_eq!(
        app.post("/api/v2/drugs/", Some(ADMIN_TOKEN), &load).status,
        200
    );
    let load = json!([{"upc": "7501055300075", "name": "Cefuroxima 500 mg, 10 tabletas"}]);
    assert_eq!(
        app.post("/api/v2/drugs/", Some(ADMIN_TOKEN), &load).status,
        200
    );
    let drug = &app
        .get("/api/v2/drugs/?search=7501055300075", p.medic.token())
        .json()["results"][0];
    assert_eq!(
        (&drug["fraccion"], &drug["antibiotic"]),
        (&json!("IV"), &json!(true))
    );
    let bad = json!([{"upc": "7501055300075", "name": "x", "fraccion": "iv"}]);
    assert_eq!(
        app.post("/api/v2/drugs/", Some(ADMIN_TOKEN), &bad).status,
        400
    );
}

#[test]
fn a_prescription_expires_at_the_end_of_its_last_day() {
    let app = spawn_app();
    let p = Practice::new(&app, "vigencia@example.mx", "Clínica Vigencia");
    let ph = register(&app, "Farmacia Vigencia");

    // Default: 30 days after the day of issue (Mexico City).
    let rx = created(
        &app,
        &p,
        &body(&p, json!([item("Losartán 50 mg", 1)]), json!({})),
    );
    let today = mexico_city_today(&app);
    assert_eq!(rx["valid_until"], date_plus(&app, &today, 30));
    assert_eq!((&rx["fills"], &rx["fills_used"]), (&json!(1), &json!(0)));

    for bad in [0, 366] {
        let resp = create(
            &app,
            &p,
            &body(&p, json!([item("x", 1)]), json!({"valid_days": bad})),
        );
        assert_eq!(resp.status, 400, "valid_days {bad}");
        assert!(field_errors(&resp).get("valid_days").is_some());
    }
    let short = created(
        &app,
        &p,
        &body(
            &p,
            json!([item("Enalapril 10 mg", 2)]),
            json!({"valid_days": 1}),
        ),
    );
    assert_eq!(short["valid_until"], date_plus(&app, &today, 1));
    let sig = signature(&short);
    let med = short["medications"][0]["id"].as_i64().unwrap();
    assert_eq!(burn(&app, &ph, &sig, &[(med, 1)]).status, 200);

    // Three days later it is over: shown everywhere, and no more sales.
    let app = later(app, 3 * DAY);
    let expired = json!(["expired", "Vencida"]);
    let detail = app
        .get(&format!("/api/v2/rx-endpoint/{sig}/"), p.medic.token())
        .json();
    assert_eq!(detail["status"]["rx_status"], expired, "{detail}");
    let listed = listed(&app, p.medic.token(), &sig);
    assert_eq!(listed["status"]["rx_status"], expired);
    assert_eq!(
        lookup(&app, &ph, &sig).json()["status"]["rx_status"],
        expired
    );
    let landing = app
        .get(
            &format!("/api/v2/rx/patient-landing/{sig}/"),
            p.medic.token(),
        )
        .json();
    assert_eq!(landing["rx"]["rx_status"], expired);
    assert!(
        app.get(&format!("/rx/{sig}"), None)
            .text()
            .contains("Vencida")
    );
    let verify = app.get(&format!("/api/v2/verify/{sig}"), None).json();
    assert_eq!(
        (&verify["rx_status"], &verify["valid"]),
        (&expired, &json!(true))
    );
    let resp = burn(&app, &ph, &sig, &[(med, 1)]);
    assert_eq!(resp.status, 409, "{}", resp.text());
    assert!(resp.json()["message"].as_str().unwrap().contains("expired"));

    // The 30-day one is still good.
    let first = signature(&rx);
    let detail = app
        .get(&format!("/api/v2/rx-endpoint/{first}/"), p.medic.token())
        .json();
    assert_eq!(
        detail["status"]["rx_status"],
        json!(["available", "Disponible"])
    );
}

#[test]
fn repeats_sell_one_fill_at_a_time_up_to_qty_times_fills() {
    let app = spawn_app();
    let p = Practice::new(&app, "resurtir@example.mx", "Clínica Resurtir");
    let ph = register(&app, "Farmacia Resurtir");

    for (extra, field) in [
        (json!({"fills": 0}), "fills"),
        (json!({"fills": 13}), "fills"),
        (json!({"fill_interval_days": 91}), "fill_interval_days"),
    ] {
        let resp = create(&app, &p, &body(&p, json!([item("x", 1)]), extra.clone()));
        assert_eq!(resp.status, 400, "{extra}");
        assert!(
            field_errors(&resp).get(field).is_some(),
            "{extra}: {}",
            resp.text()
        );
    }
    // An over-the-counter medicine (fracción VI) does not repeat; an antibiotic needs a reason.
    let otc =
        json!([{"presentation": "Paracetamol", "instructions": "c/8 h", "drug_upc": PARACETAMOL}]);
    let resp = create(&app, &p, &body(&p, otc, json!({"fills": 2})));
    assert_eq!(resp.status, 400);
    assert!(
        field_errors(&resp).get("fills").is_some(),
        "{}",
        resp.text()
    );
    let amox =
        json!([{"presentation": "Amoxicilina", "instructions": "c/8 h", "drug_upc": AMOXICILINA}]);
    let resp = create(&app, &p, &body(&p, amox.clone(), json!({"fills": 2})));
    assert_eq!(resp.status, 400);
    assert!(
        field_errors(&resp)
            .get("antibiotic_repeat_reason")
            .is_some(),
        "{}",
        resp.text()
    );
    let ok = created(
        &app,
        &p,
        &body(
            &p,
            amox,
            json!({"fills": 2, "antibiotic_repeat_reason": "Segundo ciclo"}),
        ),
    );
    assert_eq!(ok["antibiotic_repeat_reason"], "Segundo ciclo");

    // fills 2, qty 2: 3 at once is more than one fill; 2 + 2 is all; a fifth unit is refused.
    let rx = created(
        &app,
        &p,
        &body(
            &p,
            json!([item("Metformina 850 mg", 2)]),
            json!({"fills": 2}),
        ),
    );
    let sig = signature(&rx);
    let med = rx["medications"][0]["id"].as_i64().unwrap();
    assert_eq!(
        (&rx["medications"][0]["qty_total"], &rx["fills"]),
        (&json!(4), &json!(2))
    );
    let resp = burn(&app, &ph, &sig, &[(med, 3)]);
    assert_eq!(resp.status, 400, "{}", resp.text());
    let after = burn(&app, &ph, &sig, &[(med, 2)]);
    assert_eq!(after.status, 200, "{}", after.text());
    let after = after.json();
    assert_eq!(after["status"]["rx_status"][0], "partially_dispensed");
    assert_eq!(
        (&after["fills_used"], &after["medications"][0]["bought_qty"]),
        (&json!(1), &json!(2))
    );
    let after = burn(&app, &ph, &sig, &[(med, 2)]).json();
    assert_eq!(after["status"]["rx_status"][0], "dispensed");
    assert_eq!(
        (&after["fills_used"], &after["medications"][0]["bought_qty"]),
        (&json!(2), &json!(4))
    );
    assert_eq!(after["medications"][0]["bought"], true);
    let resp = burn(&app, &ph, &sig, &[(med, 1)]);
    assert_eq!(resp.status, 409, "{}", resp.text());

    // The seal of each sale, in order, for the next pharmacy and for the patient.
    let sales = lookup(&app, &ph, &sig).json()["sales"].clone();
    let sales = sales.as_array().unwrap();
    assert_eq!(sales.len(), 2, "{sales:?}");
    for (i, sale) in sales.iter().enumerate() {
        assert_eq!(sale["fill"], i as i64 + 1);
        assert_eq!(
            (&sale["pharmacy_name"], &sale["pharmacy_license"]),
            (&json!("Farmacia Resurtir"), &json!("LS-0001"))
        );
        assert_eq!(
            sale["lines"],
            json!([{"medication": med, "presentation": "Metformina 850 mg", "qty": 2}])
        );
        assert!(sale["sold_at"].as_str().unwrap().ends_with('Z'));
    }
    let landing = app
        .get(
            &format!("/api/v2/rx/patient-landing/{sig}/"),
            p.medic.token(),
        )
        .json();
    assert_eq!(landing["rx"]["sales"].as_array().unwrap().len(), 2);
    let page = app.get(&format!("/rx/{sig}"), None).text();
    assert!(
        page.contains("Farmacia Resurtir") && page.contains("LS-0001"),
        "{page}"
    );
}

#[test]
fn the_next_fill_waits_for_the_interval() {
    let app = spawn_app();
    let p = Practice::new(&app, "intervalo@example.mx", "Clínica Intervalo");
    let ph = register(&app, "Farmacia Intervalo");
    let extra = json!({"fills": 3, "fill_interval_days": 10});
    let rx = created(
        &app,
        &p,
        &body(&p, json!([item("Losartán 50 mg", 2)]), extra),
    );
    let sig = signature(&rx);
    let med = rx["medications"][0]["id"].as_i64().unwrap();

    // Fill 1 may be sold in parts; fill 2 may not start before 10 days.
    assert_eq!(burn(&app, &ph, &sig, &[(med, 1)]).status, 200);
    assert_eq!(burn(&app, &ph, &sig, &[(med, 1)]).status, 200);
    let resp = burn(&app, &ph, &sig, &[(med, 1)]);
    assert_eq!(resp.status, 409, "{}", resp.text());
    assert!(
        resp.json()["message"]
            .as_str()
            .unwrap()
            .contains("may be dispensed from")
    );

    let app = later(app, 11 * DAY);
    let resp = burn(&app, &ph, &sig, &[(med, 2)]);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let resp = burn(&app, &ph, &sig, &[(med, 1)]);
    assert_eq!(resp.status, 409, "fill 3 waits 10 days after fill 2");
}

fn register_of(app: &TestApp, path: &str, token: Option<&str>, query: &str) -> TestResponse {
    app.get(&format!("{path}?{query}"), token)
}

#[test]
fn the_antibiotic_register_holds_exactly_the_pharmacys_antibiotic_sales() {
    let app = spawn_app();
    let p = Practice::new(&app, "registro@example.mx", "Clínica Registro Antibióticos");
    let a = register(&app, "Farmacia A");
    let b = register(&app, "Farmacia B");
    let meds = json!([
        {"presentation": "Amoxicilina 500 mg", "instructions": "c/8 h", "drug_upc": AMOXICILINA, "qty": 2},
        item("Losartán 50 mg", 1),
        {"presentation": "=HYPERLINK(\"http://x\")", "instructions": "c/12 h", "category": "unstructured_drug", "antibiotic": true},
    ]);
    let rx = created(&app, &p, &body(&p, meds.clone(), json!({})));
    let ids: Vec<i64> = rx["medications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        burn(
            &app,
            &a,
            &signature(&rx),
            &[(ids[0], 2), (ids[1], 1), (ids[2], 1)]
        )
        .status,
        200
    );
    let other = created(&app, &p, &body(&p, meds, json!({})));
    let other_ids: Vec<i64> = other["medications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        burn(&app, &b, &signature(&other), &[(other_ids[0], 1)]).status,
        200
    );

    let today = mexico_city_today(&app);
    let period = format!(
        "from={}&to={}",
        date_plus(&app, &today, -1),
        date_plus(&app, &today, 1)
    );
    let own = "/api/v2/pharmacy/register/";
    let resp = register_of(&app, own, Some(&a.token), &period);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let page = resp.json();
    assert_eq!(
        page["count"], 2,
        "two antibiotic lines, not the losartán: {page}"
    );
    let row = &page["results"][0];
    assert_eq!(row["drug_name"], "Amoxicilina 500 mg, 12 cápsulas");
    assert_eq!(
        (&row["drug_upc"], &row["qty"]),
        (&json!(AMOXICILINA), &json!(2))
    );
    assert_eq!(row["signature"], rx["signature"]);
    assert_eq!(row["sales_code"], "PHX12345");
    for field in [
        "medic_name",
        "medic_cedula_prof",
        "hospital_address",
        "sold_at",
        "presentation",
    ] {
        assert!(!row[field].as_str().unwrap().is_empty(), "{field}: {row}");
    }
    let b_page = register_of(&app, own, Some(&b.token), &period).json();
    assert_eq!(b_page["count"], 1, "B sees only its own sale: {b_page}");
    assert_eq!(b_page["results"][0]["signature"], other["signature"]);

    // CSV, as a spreadsheet reads it: a header and the same rows, formulas neutralised.
    let resp = register_of(&app, own, Some(&a.token), &format!("{period}&format=csv"));
    assert_eq!(resp.status, 200);
    assert!(resp.header("content-type").unwrap().starts_with("text/csv"));
    let text = resp.text();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    assert_eq!(
        header[..5],
        ["sold_at", "drug_name", "drug_upc", "presentation", "qty"]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(&rows[0][2], AMOXICILINA);
    assert!(
        rows[1][3].starts_with("'="),
        "formula neutralised: {:?}",
        &rows[1][3]
    );

    // The API admin reads any pharmacy's; nobody else; bad periods are 400; another period is empty.
    let admin = register_of(
        &app,
        &format!("/api/v2/pharmacies/{}/register/", b.id),
        Some(ADMIN_TOKEN),
        &period,
    );
    assert_eq!(admin.json()["count"], 1);
    assert_eq!(
        register_of(
            &app,
            "/api/v2/pharmacies/999999/register/",
            Some(ADMIN_TOKEN),
            &period
        )
        .status,
        404
    );
    assert_eq!(register_of(&app, own, p.medic.token(), &period).status, 403);
    assert_eq!(register_of(&app, own, None, &period).status, 401);
    for bad in [
        "from=2026-13-01",
        "from=2026-11-30&to=2026-11-01",
        "format=xml",
        "from=2020-01-01&to=2026-01-01",
    ] {
        assert_eq!(
            register_of(&app, own, Some(&a.token), bad).status,
            400,
            "{bad}"
        );
    }
    let past = register_of(&app, own, Some(&a.token), "from=2020-01-01&to=2020-01-31").json();
    assert_eq!(past["count"], 0);
}

#[test]
fn pharmacies_racing_for_the_last_fills_never_sell_past_qty_times_fills() {
    let app = Arc::new(spawn_app());
    let p = Practice::new(&app, "carrera@example.mx", "Clínica Carrera");
    let rx = created(
        &app,
        &p,
        &body(&p, json!([item("Amlodipino 5 mg", 2)]), json!({"fills": 3})),
    );
    let sig = signature(&rx);
    let med = rx["medications"][0]["id"].as_i64().unwrap();
    let statuses = each_at_once(&app, 12, move |app, ph| {
        burn(app, ph, &sig, &[(med, 2)]).status
    });
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        3,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| [200, 409].contains(s)),
        "{statuses:?}"
    );
    let total: i64 = db(&app)
        .query_row(
            "SELECT bought_qty FROM medications WHERE id = ?1",
            [med],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(total, 6);
}

/// The text of a PDF, as `pdftotext -raw` reads it (Poppler: an independent reader).
pub(crate) fn pdf_text(pdf: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rx.pdf");
    std::fs::write(&path, pdf).unwrap();
    let out = std::process::Command::new("pdftotext")
        .args(["-raw", "-enc", "UTF-8"])
        .arg(&path)
        .arg("-")
        .output()
        .expect("pdftotext (poppler-utils)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The stored PDF of `sig`, as the patient's download serves it.
pub(crate) fn stored_pdf_text(app: &TestApp, sig: &str) -> String {
    let resp = app.get(&format!("/rx/{sig}/pdf"), None);
    assert_eq!(resp.status, 200, "{}", resp.text());
    pdf_text(&resp.body)
}

#[test]
fn the_prescriber_may_forbid_substitution_per_medication() {
    let app = spawn_app();
    let p = Practice::new(&app, "sustituible@example.mx", "Clínica Sustitución");
    let mut fixed = item("Losartán 50 mg, 30 tabletas (Cozaar)", 1);
    fixed["substitution_allowed"] = json!(false);
    let rx = created(
        &app,
        &p,
        &body(&p, json!([fixed, item("Paracetamol 500 mg", 1)]), json!({})),
    );
    let allowed: Vec<Value> = rx["medications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["substitution_allowed"].clone())
        .collect();
    assert_eq!(allowed, [json!(false), json!(true)], "default true");
    let sig = signature(&rx);
    let detail = app
        .get(&format!("/api/v2/rx-endpoint/{sig}/"), p.medic.token())
        .json();
    assert_eq!(detail["medications"][0]["substitution_allowed"], false);
    assert_eq!(detail["medications"][1]["substitution_allowed"], true);
    // Signed: the document says it.
    let document = app
        .get(
            &format!("/api/v2/rx-endpoint/{sig}/document/"),
            p.medic.token(),
        )
        .json();
    assert_eq!(document["version"], 3);
    assert_eq!(document["medications"][0]["substitution_allowed"], false);
    // Printed and shown.
    let text = stored_pdf_text(&app, &sig);
    assert_eq!(text.matches("No sustituible").count(), 1, "{text}");
    assert!(
        app.get(&format!("/rx/{sig}"), None)
            .text()
            .contains("No sustituible")
    );
    let pharmacy = register(&app, "Farmacia Sustituye");
    assert_eq!(
        lookup(&app, &pharmacy, &sig).json()["medications"][0]["substitution_allowed"],
        false
    );
    // Anything but a boolean is a 400 on the item.
    let mut bad = item("Losartán 50 mg", 1);
    bad["substitution_allowed"] = json!([false]);
    let resp = create(&app, &p, &body(&p, json!([bad]), json!({})));
    assert_eq!(resp.status, 400, "{}", resp.text());
    assert!(
        resp.text().contains("substitution_allowed"),
        "{}",
        resp.text()
    );
}
