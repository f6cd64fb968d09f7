//! `/api/v2/campaigns/` (openapi/receta.json, decisions "Campaigns"): the pharmacy campaigns the API admin
//! manages and the patient landing shows. Shapes and defaults, validation, the admin-only rule,
//! PATCH, DELETE, and "at most one default".

use serde_json::{Value, json};

use crate::fixtures::ADMIN;
use crate::fixtures::{campaign_body, create_campaign};
use crate::helpers::{ADMIN_TOKEN, TestApp, spawn_app};

/// The fields of every campaign response: openapi/receta.json plus `is_default`, `is_active`, `created_at`.
const CAMPAIGN_KEYS: [&str; 12] = [
    "branches",
    "callback_redirect",
    "created_at",
    "cta_link",
    "display_contact",
    "display_name",
    "display_phone",
    "id",
    "is_active",
    "is_default",
    "main_site_redirect",
    "short_name",
];

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

fn path(campaign: &Value) -> String {
    format!("/api/v2/campaigns/{}/", campaign["id"])
}

#[test]
fn create_answers_201_with_every_field_and_the_defaults() {
    let app = spawn_app();
    let minimal = create_campaign(
        &app,
        &json!({"short_name": "ahorro", "display_name": "Farmacias del Ahorro"}),
    );
    assert_eq!(keys(&minimal), CAMPAIGN_KEYS, "{minimal}");
    assert!(minimal["id"].as_i64().unwrap() > 0);
    assert_eq!(minimal["short_name"], "ahorro");
    assert_eq!(minimal["display_name"], "Farmacias del Ahorro");
    assert_eq!(minimal["branches"], json!([]));
    assert_eq!(minimal["callback_redirect"], "landing_view");
    assert_eq!(minimal["main_site_redirect"], "landing_view");
    assert_eq!(minimal["display_phone"], "");
    assert_eq!(minimal["display_contact"], "");
    assert_eq!(minimal["cta_link"], "");
    assert_eq!(minimal["is_default"], false);
    assert_eq!(minimal["is_active"], true);
    let created_at = minimal["created_at"].as_str().unwrap();
    assert!(
        created_at.len() == 27 && created_at.ends_with('Z'),
        "{created_at}"
    );

    // Every field sent comes back as sent, branches in order with `Determinante` an integer.
    let body = campaign_body("benavides");
    let full = create_campaign(&app, &body);
    for field in [
        "short_name",
        "display_name",
        "display_phone",
        "display_contact",
        "cta_link",
        "callback_redirect",
        "main_site_redirect",
        "branches",
    ] {
        assert_eq!(full[field], body[field], "{field}");
    }
    assert_eq!(
        keys(&full["branches"][0]),
        ["Determinante", "Estado", "Formato", "address", "name"]
    );
    assert!(full["branches"][0]["Determinante"].is_i64());

    // Determinante as integer text (as a form sends it) is stored as an integer; optional branch
    // fields default to "".
    let mut body = campaign_body("guadalajara");
    body["branches"] = json!([{"Determinante": "77", "name": "Chapultepec"}]);
    body["is_active"] = json!(false);
    let c = create_campaign(&app, &body);
    assert_eq!(
        c["branches"],
        json!([{"Determinante": 77, "name": "Chapultepec", "Formato": "", "Estado": "", "address": ""}])
    );
    assert_eq!(c["is_active"], false);

    // GET one and the paginated list (oldest first) show the same objects.
    let one = app.get(&path(&full), ADMIN);
    assert_eq!(one.status, 200);
    assert_eq!(one.json(), full);
    let list = app.get("/api/v2/campaigns/?limit=2", ADMIN);
    assert_eq!(list.status, 200, "{}", list.text());
    let list = list.json();
    assert_eq!(list["count"], 3);
    assert_eq!(list["results"], json!([minimal, full]));
    assert!(
        list["next"]
            .as_str()
            .unwrap()
            .ends_with("/api/v2/campaigns/?limit=2&offset=2"),
        "{}",
        list["next"]
    );
    assert_eq!(list["previous"], Value::Null);
}

#[test]
fn campaigns_are_managed_by_the_api_admin_only() {
    let app = spawn_app();
    let medic = app.create_medic("camp-medic@example.mx");
    let c = create_campaign(&app, &campaign_body("ahorro"));
    let body = campaign_body("otra");
    let calls: [(&str, String, Option<&Value>); 5] = [
        ("POST", "/api/v2/campaigns/".into(), Some(&body)),
        ("GET", "/api/v2/campaigns/".into(), None),
        ("GET", path(&c), None),
        ("PATCH", path(&c), Some(&body)),
        ("DELETE", path(&c), None),
    ];
    for (method, url, body) in &calls {
        let resp = app.request(method, url, medic.token(), *body);
        assert_eq!(
            resp.status,
            403,
            "{method} {url} as a medic: {}",
            resp.text()
        );
        assert!(resp.json()["message"].is_string());

        let resp = app.request(method, url, None, *body);
        assert_eq!(resp.status, 401, "{method} {url} without a token");
        assert_eq!(resp.json(), json!({"message": "Invalid Token"}));

        let bearer = format!("Bearer {ADMIN_TOKEN}");
        let bytes = body.map(|b| b.to_string());
        let mut headers = vec![("Authorization", bearer.as_str())];
        if bytes.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        let resp =
            app.request_with_headers(method, url, &headers, bytes.as_deref().map(str::as_bytes));
        assert_eq!(resp.status, 401, "{method} {url} with Bearer");
    }
    // Nothing changed.
    let list = app.get("/api/v2/campaigns/", ADMIN).json();
    assert_eq!(list["count"], 1);
    assert_eq!(list["results"][0], c);
}

#[test]
fn one_400_names_every_bad_field() {
    let app = spawn_app();
    let resp = app.post(
        "/api/v2/campaigns/",
        ADMIN,
        &json!({
            "display_phone": ["not", "text"],
            "callback_redirect": "ftp://farmacia.example.mx",
            "main_site_redirect": "/inicio",
            "cta_link": "javascript:alert(1)",
            "is_default": "maybe",
            "branches": [
                {"Determinante": "uno", "name": "Centro"},
                {"name": ""},
                "Sucursal Roma",
            ],
        }),
    );
    assert_eq!(resp.status, 400, "{}", resp.text());
    let e = resp.json();
    assert_eq!(
        keys(&e),
        [
            "branches",
            "callback_redirect",
            "cta_link",
            "display_name",
            "display_phone",
            "is_default",
            "main_site_redirect",
            "short_name",
        ],
        "{e}"
    );
    assert_eq!(e["short_name"], json!(["This field is required."]));
    assert_eq!(e["display_name"], json!(["This field is required."]));
    assert_eq!(e["cta_link"], json!(["Enter a valid URL."]));
    let redirect = json!(["Enter a valid URL (http or https) or \"landing_view\"."]);
    assert_eq!(e["callback_redirect"], redirect);
    assert_eq!(e["main_site_redirect"], redirect);
    assert_eq!(
        e["branches"],
        json!([
            "Item 1, Determinante: A valid integer is required.",
            "Item 2, Determinante: This field is required.",
            "Item 2, name: This field may not be blank.",
            "Item 3: Invalid data. Expected a dictionary.",
        ])
    );

    // The URL check: an absolute http(s) URL with a host, nothing a browser could misread.
    for bad in [
        "https://",
        "https://user@ahorro.example.mx",
        "https://ahorro.example.mx/\"><script>",
        "data:text/html,hola",
        "landing_view",
    ] {
        let mut body = campaign_body("x");
        body["cta_link"] = json!(bad);
        let resp = app.post("/api/v2/campaigns/", ADMIN, &body);
        assert_eq!(resp.status, 400, "cta_link {bad:?}");
        assert_eq!(keys(&resp.json()), ["cta_link"], "{bad:?}");
    }
    let mut body = campaign_body("y");
    body["branches"] = json!({"Determinante": 1, "name": "Centro"});
    let resp = app.post("/api/v2/campaigns/", ADMIN, &body);
    assert_eq!(
        resp.json(),
        json!({"branches": ["Expected a list of items."]})
    );

    // Malformed JSON, a body that is not an object.
    let resp = app.raw(
        "POST",
        "/api/v2/campaigns/",
        ADMIN,
        Some(("application/json", b"{\"short_name\":")),
    );
    assert_eq!(resp.status, 400);
    assert!(resp.json()["message"].is_string());
    let resp = app.post("/api/v2/campaigns/", ADMIN, &json!(["ahorro"]));
    assert_eq!(resp.status, 400);
    assert!(resp.json()["message"].is_string());

    // A taken short name, without regard to case.
    create_campaign(&app, &campaign_body("ahorro"));
    let resp = app.post("/api/v2/campaigns/", ADMIN, &campaign_body("AHORRO"));
    assert_eq!(resp.status, 400);
    assert_eq!(
        resp.json(),
        json!({"short_name": ["campaign with this short name already exists."]})
    );
    assert_eq!(app.get("/api/v2/campaigns/", ADMIN).json()["count"], 1);
}

#[test]
fn patch_changes_only_what_is_sent_and_answers_200() {
    let app = spawn_app();
    let c = create_campaign(&app, &campaign_body("ahorro"));
    let other = create_campaign(&app, &campaign_body("benavides"));

    let resp = app.patch(
        &path(&c),
        ADMIN,
        &json!({"display_name": "Farmacias del Ahorro", "main_site_redirect": "https://www.ahorro.example.mx/", "is_active": false}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    let patched = resp.json();
    assert_eq!(patched["display_name"], "Farmacias del Ahorro");
    assert_eq!(
        patched["main_site_redirect"],
        "https://www.ahorro.example.mx/"
    );
    assert_eq!(patched["is_active"], false);
    for unchanged in [
        "id",
        "short_name",
        "branches",
        "callback_redirect",
        "display_phone",
        "display_contact",
        "cta_link",
        "is_default",
        "created_at",
    ] {
        assert_eq!(patched[unchanged], c[unchanged], "{unchanged}");
    }

    // Branches are replaced as a whole; an empty list clears them; cta_link may be emptied.
    let branches = json!([{"Determinante": 5, "name": "Roma", "Formato": "", "Estado": "CDMX", "address": "Orizaba 1"}]);
    let resp = app.patch(&path(&c), ADMIN, &json!({"branches": branches}));
    assert_eq!(resp.json()["branches"], branches);
    let resp = app.patch(&path(&c), ADMIN, &json!({"branches": [], "cta_link": ""}));
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json()["branches"], json!([]));
    assert_eq!(resp.json()["cta_link"], "");
    assert_eq!(app.get(&path(&c), ADMIN).json(), resp.json());

    // Bad values: null, blank, a bad URL, a short name taken by another campaign.
    let resp = app.patch(
        &path(&c),
        ADMIN,
        &json!({"short_name": "", "branches": null, "callback_redirect": null, "cta_link": "www.ahorro.mx"}),
    );
    assert_eq!(resp.status, 400);
    let e = resp.json();
    assert_eq!(e["short_name"], json!(["This field may not be blank."]));
    assert_eq!(e["branches"], json!(["This field may not be null."]));
    assert_eq!(
        e["callback_redirect"],
        json!(["This field may not be null."])
    );
    assert_eq!(e["cta_link"], json!(["Enter a valid URL."]));
    let resp = app.patch(&path(&c), ADMIN, &json!({"short_name": "Benavides"}));
    assert_eq!(resp.status, 400);
    assert_eq!(
        resp.json(),
        json!({"short_name": ["campaign with this short name already exists."]})
    );
    // Its own short name is not "taken".
    let resp = app.patch(&path(&c), ADMIN, &json!({"short_name": "ahorro"}));
    assert_eq!(resp.status, 200);
    assert_eq!(app.get(&path(&other), ADMIN).json(), other);

    // 404 before the body is read, for a missing id and a non-integer one.
    for missing in ["/api/v2/campaigns/999999/", "/api/v2/campaigns/abc/"] {
        let resp = app.patch(missing, ADMIN, &json!({"short_name": ""}));
        assert_eq!(resp.status, 404, "{missing}");
        assert_eq!(resp.json(), json!({"message": "Not found."}));
    }
}

#[test]
fn at_most_one_campaign_is_the_default() {
    let app = spawn_app();
    let defaults = |app: &TestApp| -> Vec<String> {
        let list = app.get("/api/v2/campaigns/", ADMIN).json();
        list["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["is_default"] == true)
            .map(|c| c["short_name"].as_str().unwrap().to_string())
            .collect()
    };
    let mut body = campaign_body("ahorro");
    body["is_default"] = json!(true);
    let a = create_campaign(&app, &body);
    assert_eq!(a["is_default"], true);
    assert_eq!(defaults(&app), ["ahorro"]);

    // A new default replaces the old one.
    let mut body = campaign_body("benavides");
    body["is_default"] = json!(true);
    let b = create_campaign(&app, &body);
    assert_eq!(b["is_default"], true);
    assert_eq!(defaults(&app), ["benavides"]);

    // So does a PATCH; PATCHing the default to true again changes nothing.
    let resp = app.patch(&path(&a), ADMIN, &json!({"is_default": true}));
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json()["is_default"], true);
    assert_eq!(defaults(&app), ["ahorro"]);
    let resp = app.patch(&path(&a), ADMIN, &json!({"is_default": true}));
    assert_eq!(resp.status, 200);
    assert_eq!(defaults(&app), ["ahorro"]);

    // false leaves no default; deleting the default too.
    app.patch(&path(&a), ADMIN, &json!({"is_default": false}));
    assert!(defaults(&app).is_empty());
    app.patch(&path(&b), ADMIN, &json!({"is_default": true}));
    assert_eq!(app.delete(&path(&b), ADMIN).status, 204);
    assert!(defaults(&app).is_empty());
}

#[test]
fn delete_answers_204_and_the_campaign_is_gone() {
    let app = spawn_app();
    let keep = create_campaign(&app, &campaign_body("benavides"));
    let c = create_campaign(&app, &campaign_body("ahorro"));
    let resp = app.delete(&path(&c), ADMIN);
    assert_eq!(resp.status, 204);
    assert!(resp.body.is_empty());
    for resp in [
        app.get(&path(&c), ADMIN),
        app.delete(&path(&c), ADMIN),
        app.patch(&path(&c), ADMIN, &json!({"display_name": "x"})),
        app.delete("/api/v2/campaigns/abc/", ADMIN),
    ] {
        assert_eq!(resp.status, 404);
        assert_eq!(resp.json(), json!({"message": "Not found."}));
    }
    let list = app.get("/api/v2/campaigns/", ADMIN).json();
    assert_eq!(list["count"], 1);
    assert_eq!(list["results"], json!([keep]));
    // The short name is free again.
    create_campaign(&app, &campaign_body("ahorro"));
}
