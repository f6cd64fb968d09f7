//! Hospitals (openapi/receta.json, docs/api.md): create (JSON and multipart), list, get, PATCH, images, and who may do what.
//!
//! One file (over 500 lines): the black-box tests of one resource, the hospital (create, images, PATCH, access), sharing their fixtures.

use serde_json::{Value, json};

use crate::helpers::{
    ADMIN_TOKEN, FormPart, TestApp, assert_message, field_errors, hospital_body, jpeg, spawn_app,
};

/// The path of an absolute media URL (`<base_url>/media/...`), to fetch it from the test app.
fn media_path(url: &Value) -> String {
    let url = url.as_str().unwrap_or_else(|| panic!("not a URL: {url}"));
    assert!(
        url.starts_with("http://") || url.starts_with("https://"),
        "absolute: {url}"
    );
    let at = url
        .find("/media/")
        .unwrap_or_else(|| panic!("under /media/: {url}"));
    url[at..].to_string()
}

#[test]
fn create_with_every_optional_field_and_page_size_forms() {
    let app = spawn_app();
    let mut body = hospital_body("Hospital Ángeles Ñuñoa 東京病院");
    let extra = json!({
        "headline": "Atención 24 h — 急診",
        "page_size": 1,
        "info": true,
        "is_admin": false,
        "zip_code": "0".repeat(31),
        "location_lat": "19.4326077",
        "location_lon": "-99.133208",
        "send_emails": false,
        "google_place_id": "ChIJB3UJ2yYAzoURQeheJnYQBlQ",
        "page_template": "ignored: always classic",
        "unknown_field": "ignored",
    });
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let resp = app.post("/api/v2/hospital/", Some(ADMIN_TOKEN), &body);
    assert_eq!(resp.status, 201, "{}", resp.text());
    let created = resp.json();
    assert_eq!(created["name"], "Hospital Ángeles Ñuñoa 東京病院");
    assert_eq!(created["headline"], "Atención 24 h — 急診");
    assert_eq!(created["page_size"], 1);
    assert_eq!(created["page_template"], "classic");
    assert_eq!(created["info"], true);
    assert_eq!(
        created["is_admin"], false,
        "the API admin holds no membership"
    );
    assert_eq!(created["zip_code"], "0".repeat(31));
    assert_eq!(created["location_lat"], "19.4326077");
    assert_eq!(created["location_lon"], "-99.133208");
    assert_eq!(created["send_emails"], false);
    assert_eq!(created["is_active"], true);
    assert_eq!(created["google_place_id"], "ChIJB3UJ2yYAzoURQeheJnYQBlQ");
    assert_eq!(created["picture"], Value::Null);
    assert_eq!(created["university_logo"], Value::Null);
    assert!(created.get("unknown_field").is_none());
    let expected_keys = [
        "id",
        "created_at",
        "name",
        "patron",
        "location",
        "contact",
        "headline",
        "page_size",
        "page_template",
        "picture",
        "university_logo",
        "is_active",
        "is_admin",
        "info",
        "send_emails",
        "zip_code",
        "location_lat",
        "location_lon",
        "google_place_id",
    ];
    let mut keys: Vec<&str> = created
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    let mut expected = expected_keys.to_vec();
    expected.sort();
    assert_eq!(keys, expected);

    // The boolean form of page_size: true is Letter (0), false is Half Letter (1); always returned as 0/1.
    for (sent, returned) in [
        (json!(true), 0),
        (json!(false), 1),
        (json!(0), 0),
        (json!("1"), 1),
    ] {
        let mut body = hospital_body("Tamaño");
        body["page_size"] = sent.clone();
        let resp = app.post("/api/v2/hospital/", Some(ADMIN_TOKEN), &body);
        assert_eq!(resp.status, 201, "{sent}: {}", resp.text());
        assert_eq!(resp.json()["page_size"], returned, "{sent}");
    }
    for bad in [json!(2), json!(-1), json!("A4"), json!(0.5), json!([0])] {
        let mut body = hospital_body("Tamaño");
        body["page_size"] = bad.clone();
        let errors = field_errors(&app.post("/api/v2/hospital/", Some(ADMIN_TOKEN), &body));
        assert!(errors["page_size"].is_array(), "{bad}: {errors}");
    }
}

#[test]
fn medic_creating_a_hospital_joins_it_as_admin_or_member() {
    let app = spawn_app();
    let medic = app.create_medic("creadora@clinica.mx");
    let resp = app.post(
        "/api/v2/hospital/",
        medic.token(),
        &hospital_body("Consultorio Propio"),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let own = resp.json();
    assert_eq!(own["is_admin"], true);
    let own_id = own["id"].as_i64().unwrap();

    let mut body = hospital_body("Hospital Ajeno");
    body["is_admin"] = json!(false);
    let resp = app.post("/api/v2/hospital/", medic.token(), &body);
    assert_eq!(resp.status, 201);
    assert_eq!(resp.json()["is_admin"], false);
    let member_id = resp.json()["id"].as_i64().unwrap();

    let memberships = app
        .get("/api/v2/management/memberships/", Some(ADMIN_TOKEN))
        .json();
    let mine: Vec<(i64, String, bool)> = memberships["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert_eq!(m["medic"]["id"], medic.id);
            (
                m["hospital"].as_i64().unwrap(),
                m["type_membership"].as_str().unwrap().to_string(),
                m["is_active"] == true,
            )
        })
        .collect();
    assert_eq!(
        mine,
        [
            (own_id, "ADMIN".to_string(), true),
            (member_id, "MEMBER".to_string(), false)
        ]
    );

    // The medic sees both, with their own membership type as is_admin; the admin sees is_admin false.
    let list = app.get("/api/v2/hospital/", medic.token()).json();
    assert_eq!(list["count"], 2);
    let flags: Vec<&Value> = list["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h["is_admin"])
        .collect();
    assert_eq!(flags, [&json!(true), &json!(false)]);
    assert_eq!(
        app.get(&format!("/api/v2/hospital/{member_id}/"), medic.token())
            .json()["is_admin"],
        false
    );
    assert_eq!(
        app.get(&format!("/api/v2/hospital/{own_id}"), Some(ADMIN_TOKEN))
            .json()["is_admin"],
        false
    );
}

#[test]
fn a_medic_sees_only_hospitals_with_a_live_membership() {
    let app = spawn_app();
    let a = app.create_hospital(ADMIN_TOKEN, "A");
    let b = app.create_hospital(ADMIN_TOKEN, "B");
    let medic = app.create_medic("ve@clinica.mx");
    let membership = app.add_membership(medic.id, a, "MEMBER");

    let list = app.get("/api/v2/hospital/", medic.token()).json();
    assert_eq!(list["count"], 1);
    assert_eq!(list["results"][0]["id"], a);
    assert_eq!(
        app.get(&format!("/api/v2/hospital/{a}"), medic.token())
            .status,
        200
    );
    let hidden = app.get(&format!("/api/v2/hospital/{b}"), medic.token());
    assert_eq!(hidden.status, 404);
    assert_eq!(hidden.json(), json!({"message": "Not found."}));
    assert_eq!(
        app.get("/api/v2/hospital/", Some(ADMIN_TOKEN)).json()["count"],
        2
    );

    let deleted = app.delete(
        &format!("/api/v2/management/memberships/{membership}/"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(deleted.status, 204);
    assert_eq!(
        app.get("/api/v2/hospital/", medic.token()).json()["count"],
        0
    );
    assert_eq!(
        app.get(&format!("/api/v2/hospital/{a}"), medic.token())
            .status,
        404
    );
}

#[test]
fn multipart_create_stores_jpegs_and_serves_them_at_absolute_urls() {
    let app = spawn_app();
    let picture = jpeg(10_000);
    let logo = jpeg(1_999_999);
    let resp = app.multipart(
        "POST",
        "/api/v2/hospital/",
        Some(ADMIN_TOKEN),
        &[
            FormPart::Text("name", "Clínica São José 聖ヨセフ"),
            FormPart::Text("patron", "Dr. Ñandú"),
            FormPart::Text("location", "Calle 5 de Mayo 10, 06000 CDMX"),
            FormPart::Text("contact", "+52 55 1234 5678"),
            FormPart::Text("info", "true"),
            FormPart::Text("page_size", "1"),
            FormPart::Text("zip_code", "06000"),
            FormPart::File {
                name: "picture",
                filename: "foto.JPG",
                bytes: &picture,
            },
            FormPart::File {
                name: "university_logo",
                filename: "unam.jpg",
                bytes: &logo,
            },
        ],
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let created = resp.json();
    assert_eq!(created["name"], "Clínica São José 聖ヨセフ");
    assert_eq!(created["patron"], "Dr. Ñandú");
    assert_eq!(created["info"], true);
    assert_eq!(created["page_size"], 1);
    assert_eq!(created["zip_code"], "06000");

    let served = app.get(&media_path(&created["picture"]), None);
    assert_eq!(served.status, 200);
    assert_eq!(served.header("content-type"), Some("image/jpeg"));
    assert_eq!(served.body, picture);
    let served = app.get(&media_path(&created["university_logo"]), None);
    assert_eq!(served.status, 200);
    assert_eq!(served.body, logo);

    // Durable: the same URLs come back on read.
    let id = created["id"].as_i64().unwrap();
    let read = app
        .get(&format!("/api/v2/hospital/{id}"), Some(ADMIN_TOKEN))
        .json();
    assert_eq!(read["picture"], created["picture"]);
    assert_eq!(
        app.get(&format!("/media/hospitals/{id}/missing.jpg"), None)
            .status,
        404
    );
    assert_eq!(
        app.get("/media/hospitals/999/picture.jpg", None).status,
        404
    );

    // An empty file input (what browsers send when no file is chosen) is no file.
    let resp = app.multipart(
        "POST",
        "/api/v2/hospital/",
        Some(ADMIN_TOKEN),
        &[
            FormPart::Text("name", "Sin foto"),
            FormPart::Text("patron", "P"),
            FormPart::Text("location", "L"),
            FormPart::Text("contact", "C"),
            FormPart::File {
                name: "picture",
                filename: "",
                bytes: b"",
            },
        ],
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    assert_eq!(resp.json()["picture"], Value::Null);
}

#[test]
fn images_must_be_jpegs_strictly_under_2_mb() {
    let app = spawn_app();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01".to_vec();
    let ok = jpeg(500);
    let too_big = jpeg(2_000_000);
    let cases: [(&str, &str, &[u8]); 5] = [
        ("picture", "foto.png", &ok),  // a JPEG named .png
        ("picture", "foto.jpg", &png), // a PNG named .jpg
        ("university_logo", "logo.jpg", b"not an image at all"),
        ("university_logo", "logo.jpg", &too_big), // exactly 2 MB
        ("picture", "foto.jpg", b""),              // empty
    ];
    for (field, filename, bytes) in cases {
        let resp = app.multipart(
            "POST",
            "/api/v2/hospital/",
            Some(ADMIN_TOKEN),
            &[
                FormPart::Text("name", "N"),
                FormPart::Text("patron", "P"),
                FormPart::Text("location", "L"),
                FormPart::Text("contact", "C"),
                FormPart::File {
                    name: field,
                    filename,
                    bytes,
                },
            ],
        );
        let errors = field_errors(&resp);
        assert_eq!(
            errors.as_object().unwrap().len(),
            1,
            "{field} {filename}: {errors}"
        );
        assert!(errors[field].is_array(), "{field} {filename}: {errors}");
    }
    // A URL or text where a file belongs (JSON cannot carry files).
    let mut body = hospital_body("N");
    body["picture"] = json!("http://example.com/a.jpg");
    assert!(
        field_errors(&app.post("/api/v2/hospital/", Some(ADMIN_TOKEN), &body))["picture"]
            .is_array()
    );
    // Nothing was created by the failures.
    assert_eq!(
        app.get("/api/v2/hospital/", Some(ADMIN_TOKEN)).json()["count"],
        0
    );
}

#[test]
fn short_fields_are_strictly_under_32_characters() {
    let app = spawn_app();
    for field in ["zip_code", "location_lat", "location_lon"] {
        let mut body = hospital_body("Límites");
        body[field] = json!("ñ".repeat(31));
        let resp = app.post("/api/v2/hospital/", Some(ADMIN_TOKEN), &body);
        assert_eq!(resp.status, 201, "{field}: {}", resp.text());
        assert_eq!(resp.json()[field], "ñ".repeat(31));
        body[field] = json!("1".repeat(32));
        let errors = field_errors(&app.post("/api/v2/hospital/", Some(ADMIN_TOKEN), &body));
        assert_eq!(
            errors[field][0], "Ensure this field has fewer than 32 characters.",
            "{field}"
        );
    }
}

#[test]
fn bad_input_is_a_4xx_in_the_error_shape_never_a_500() {
    let app = spawn_app();
    // Every required field missing at once.
    let errors = field_errors(&app.post("/api/v2/hospital/", Some(ADMIN_TOKEN), &json!({})));
    for field in ["name", "patron", "location", "contact"] {
        assert_eq!(errors[field], json!(["This field is required."]), "{field}");
    }
    // Wrong types, blanks, too long.
    let mut body = hospital_body("x");
    body["name"] = json!(["a list"]);
    body["patron"] = json!("   ");
    body["contact"] = json!({"an": "object"});
    body["location"] = json!("L".repeat(1024));
    body["info"] = json!("maybe");
    body["send_emails"] = json!(3);
    body["headline"] = json!("h".repeat(256));
    let errors = field_errors(&app.post("/api/v2/hospital/", Some(ADMIN_TOKEN), &body));
    for field in [
        "name",
        "patron",
        "contact",
        "location",
        "info",
        "send_emails",
        "headline",
    ] {
        assert!(errors[field].is_array(), "{field}: {errors}");
    }
    // Bodies that are not a JSON object, or not parseable at all.
    for raw in [
        &b"[]"[..],
        b"\"text\"",
        b"null",
        b"{\"name\": ",
        b"",
        b"\xff\xfe",
    ] {
        let resp = app.raw(
            "POST",
            "/api/v2/hospital/",
            Some(ADMIN_TOKEN),
            Some(("application/json", raw)),
        );
        assert_message(&resp, 400);
    }
    // A broken multipart body.
    let resp = app.raw(
        "POST",
        "/api/v2/hospital/",
        Some(ADMIN_TOKEN),
        Some((
            "multipart/form-data; boundary=XYZ",
            b"--XYZ\r\nno headers here",
        )),
    );
    assert_message(&resp, 400);
    // Over the limits: 1 MiB of JSON, 5 MiB of multipart.
    let mut big = hospital_body("grande");
    big["headline"] = json!("x".repeat(1 << 20));
    assert_message(&app.post("/api/v2/hospital/", Some(ADMIN_TOKEN), &big), 413);
    // A multipart body declared over 5 MiB is refused before it is read. (Sent by hand: the host closes
    // the connection after an early answer, so a client still writing the body would see a reset.)
    let (status, body) = declare_only(&app, "multipart/form-data; boundary=XYZ", (5 << 20) + 1);
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("\"message\""), "{body}");
    // Path ids that are not integers, or too large for one, name nothing.
    for path in [
        "/api/v2/hospital/abc",
        "/api/v2/hospital/99999999999999999999999/",
        "/api/v2/hospital/-1",
    ] {
        assert_eq!(
            app.get(path, Some(ADMIN_TOKEN)).json(),
            json!({"message": "Not found."}),
            "{path}"
        );
        let resp = app.patch(path, Some(ADMIN_TOKEN), &json!({"name": "x"}));
        assert_eq!(resp.status, 404, "{path}");
    }
}

/// Sends a `POST /api/v2/hospital/` whose headers declare `length` bytes of `content_type` but sends
/// no body, and reads the answer: status and body text.
fn declare_only(app: &TestApp, content_type: &str, length: usize) -> (u16, String) {
    use std::io::{Read, Write};
    let authority = app.address.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let head = format!(
        "POST /api/v2/hospital/ HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Token {ADMIN_TOKEN}\r\n\
         Content-Type: {content_type}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

/// A hospital with every field set, and its id.
fn full_hospital(app: &TestApp, token: &str) -> i64 {
    let resp = app.post("/api/v2/hospital/", Some(token), &hospital_body("Original"));
    assert_eq!(resp.status, 201);
    resp.json()["id"].as_i64().unwrap()
}

#[test]
fn patch_changes_every_field_and_leaves_the_rest() {
    let app = spawn_app();
    let id = full_hospital(&app, ADMIN_TOKEN);
    let before = app
        .get(&format!("/api/v2/hospital/{id}"), Some(ADMIN_TOKEN))
        .json();
    let changes = json!({
        "name": "Renombrado — 新名前",
        "patron": "Dr. Nuevo",
        "location": "Nueva dirección 1, 44100 Guadalajara, Jal.",
        "contact": "33 1234 5678",
        "headline": "",
        "page_size": false,
        "info": true,
        "send_emails": false,
        "is_active": false,
        "zip_code": "44100",
        "location_lat": "20.6597",
        "location_lon": "-103.3496",
        "google_place_id": "place-123",
        "is_admin": true,
        "page_template": "modern",
        "id": 999,
    });
    let resp = app.patch(
        &format!("/api/v2/hospital/{id}/"),
        Some(ADMIN_TOKEN),
        &changes,
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    let after = resp.json();
    for field in [
        "name",
        "patron",
        "location",
        "contact",
        "headline",
        "info",
        "send_emails",
        "is_active",
        "zip_code",
        "location_lat",
        "location_lon",
        "google_place_id",
    ] {
        assert_eq!(after[field], changes[field], "{field}");
    }
    assert_eq!(after["page_size"], 1);
    assert_eq!(after["id"], id, "ids are not writable");
    assert_eq!(after["page_template"], "classic");
    assert_eq!(
        after["is_admin"], false,
        "is_admin is the caller's membership type"
    );
    assert_eq!(after["created_at"], before["created_at"]);
    assert_eq!(
        app.get(&format!("/api/v2/hospital/{id}"), Some(ADMIN_TOKEN))
            .json(),
        after
    );

    // A partial PATCH leaves the other fields alone; `{}` changes nothing.
    let resp = app.patch(
        &format!("/api/v2/hospital/{id}"),
        Some(ADMIN_TOKEN),
        &json!({"send_emails": true}),
    );
    assert_eq!(resp.status, 200);
    let partial = resp.json();
    assert_eq!(partial["send_emails"], true);
    assert_eq!(partial["name"], "Renombrado — 新名前");
    assert_eq!(partial["is_active"], false);
    let resp = app.patch(
        &format!("/api/v2/hospital/{id}"),
        Some(ADMIN_TOKEN),
        &json!({}),
    );
    assert_eq!(resp.json(), partial);

    // Invalid values: 400 on each field, nothing changed.
    let bad = json!({
        "name": null,
        "patron": "",
        "zip_code": "x".repeat(32),
        "location_lat": "y".repeat(40),
        "info": "perhaps",
        "page_size": 7,
        "is_active": null,
    });
    let errors =
        field_errors(&app.patch(&format!("/api/v2/hospital/{id}"), Some(ADMIN_TOKEN), &bad));
    for field in [
        "name",
        "patron",
        "zip_code",
        "location_lat",
        "info",
        "page_size",
        "is_active",
    ] {
        assert!(errors[field].is_array(), "{field}: {errors}");
    }
    assert_eq!(
        app.get(&format!("/api/v2/hospital/{id}"), Some(ADMIN_TOKEN))
            .json(),
        partial
    );
    let resp = app.raw(
        "PATCH",
        &format!("/api/v2/hospital/{id}/"),
        Some(ADMIN_TOKEN),
        Some(("application/json", b"{")),
    );
    assert_message(&resp, 400);

    let missing = app.patch(
        "/api/v2/hospital/4242/",
        Some(ADMIN_TOKEN),
        &json!({"name": "x"}),
    );
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json(), json!({"message": "Not found."}));
}

#[test]
fn patch_replaces_and_removes_images() {
    let app = spawn_app();
    let id = full_hospital(&app, ADMIN_TOKEN);
    let first = jpeg(300);
    let resp = app.multipart(
        "PATCH",
        &format!("/api/v2/hospital/{id}/"),
        Some(ADMIN_TOKEN),
        &[
            FormPart::Text("headline", "Con imágenes"),
            FormPart::File {
                name: "picture",
                filename: "a.jpg",
                bytes: &first,
            },
            FormPart::File {
                name: "university_logo",
                filename: "b.jpg",
                bytes: &first,
            },
        ],
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    let with_images = resp.json();
    assert_eq!(with_images["headline"], "Con imágenes");
    assert_eq!(
        app.get(&media_path(&with_images["picture"]), None).body,
        first
    );

    // Replacing gives a new URL, so no cache serves the old bytes.
    let mut second = jpeg(400);
    second[10] = 7;
    let resp = app.multipart(
        "PATCH",
        &format!("/api/v2/hospital/{id}/"),
        Some(ADMIN_TOKEN),
        &[FormPart::File {
            name: "picture",
            filename: "c.jpg",
            bytes: &second,
        }],
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    let replaced = resp.json();
    assert_ne!(replaced["picture"], with_images["picture"]);
    assert_eq!(
        replaced["university_logo"], with_images["university_logo"],
        "untouched"
    );
    assert_eq!(
        app.get(&media_path(&replaced["picture"]), None).body,
        second
    );

    // A bad file is a 400 on that field and keeps the old image.
    let resp = app.multipart(
        "PATCH",
        &format!("/api/v2/hospital/{id}/"),
        Some(ADMIN_TOKEN),
        &[FormPart::File {
            name: "picture",
            filename: "c.gif",
            bytes: b"GIF89a",
        }],
    );
    assert!(field_errors(&resp)["picture"].is_array());
    assert_eq!(
        app.get(&format!("/api/v2/hospital/{id}"), Some(ADMIN_TOKEN))
            .json()["picture"],
        replaced["picture"]
    );

    // null (JSON) and an empty form field remove an image.
    let resp = app.patch(
        &format!("/api/v2/hospital/{id}/"),
        Some(ADMIN_TOKEN),
        &json!({"picture": null}),
    );
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json()["picture"], Value::Null);
    assert_eq!(
        app.get(&format!("/media/hospitals/{id}/picture.jpg"), None)
            .status,
        404
    );
    let resp = app.multipart(
        "PATCH",
        &format!("/api/v2/hospital/{id}/"),
        Some(ADMIN_TOKEN),
        &[FormPart::Text("university_logo", "")],
    );
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json()["university_logo"], Value::Null);
}

#[test]
fn patch_is_for_the_api_admin_and_the_hospitals_medic_admins() {
    let app = spawn_app();
    let (admin_a, a) = app.medic_admin_of_new_hospital("admin.a@clinica.mx", "A");
    let b = app.create_hospital(ADMIN_TOKEN, "B");
    let member = app.create_medic("miembro@clinica.mx");
    app.add_membership(member.id, a, "MEMBER");
    let outsider = app.create_medic("ajeno@clinica.mx");

    // The medic admin of A may PATCH A, and sees is_admin true.
    let resp = app.patch(
        &format!("/api/v2/hospital/{a}/"),
        admin_a.token(),
        &json!({"headline": "Editado"}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.json()["is_admin"], true);
    // ... but not B, which exists.
    assert_message(
        &app.patch(
            &format!("/api/v2/hospital/{b}/"),
            admin_a.token(),
            &json!({"name": "x"}),
        ),
        403,
    );
    // A MEMBER of A cannot PATCH it, even with an invalid body (the right is checked first).
    assert_message(
        &app.patch(
            &format!("/api/v2/hospital/{a}/"),
            member.token(),
            &json!({"name": "x"}),
        ),
        403,
    );
    assert_message(
        &app.patch(
            &format!("/api/v2/hospital/{a}/"),
            member.token(),
            &json!({"name": null}),
        ),
        403,
    );
    // Nor can a medic without any membership there.
    assert_message(
        &app.patch(
            &format!("/api/v2/hospital/{a}/"),
            outsider.token(),
            &json!({"name": "x"}),
        ),
        403,
    );
    // Absent is 404 for a medic too.
    let resp = app.patch(
        "/api/v2/hospital/777/",
        admin_a.token(),
        &json!({"name": "x"}),
    );
    assert_eq!(resp.status, 404);
    // No token, a wrong token: 401.
    for token in [None, Some("not-a-token")] {
        let resp = app.patch(
            &format!("/api/v2/hospital/{a}/"),
            token,
            &json!({"name": "x"}),
        );
        assert_eq!(resp.status, 401);
        assert_eq!(resp.json(), json!({"message": "Invalid Token"}));
    }
    assert_eq!(
        app.get(&format!("/api/v2/hospital/{a}"), Some(ADMIN_TOKEN))
            .json()["name"],
        "A"
    );

    // Demoted to MEMBER, the former admin loses the right.
    let memberships = app
        .get(&format!("/api/v2/memberships/{a}/"), Some(ADMIN_TOKEN))
        .json();
    let admin_membership = memberships
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["medic"]["id"] == admin_a.id)
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let path = format!("/api/v2/management/memberships/{admin_membership}/");
    assert_eq!(
        app.patch(
            &path,
            Some(ADMIN_TOKEN),
            &json!({"type_membership": "MEMBER"})
        )
        .status,
        200
    );
    assert_message(
        &app.patch(
            &format!("/api/v2/hospital/{a}/"),
            admin_a.token(),
            &json!({"name": "x"}),
        ),
        403,
    );
    // Promoted again, then deleted: a deleted membership grants nothing.
    assert_eq!(
        app.patch(
            &path,
            Some(ADMIN_TOKEN),
            &json!({"type_membership": "ADMIN"})
        )
        .status,
        200
    );
    assert_eq!(
        app.patch(
            &format!("/api/v2/hospital/{a}/"),
            admin_a.token(),
            &json!({"info": true})
        )
        .status,
        200
    );
    assert_eq!(app.delete(&path, Some(ADMIN_TOKEN)).status, 204);
    assert_message(
        &app.patch(
            &format!("/api/v2/hospital/{a}/"),
            admin_a.token(),
            &json!({"name": "x"}),
        ),
        403,
    );
}

#[test]
fn every_catalog_endpoint_answers_401_without_a_valid_token() {
    let app = spawn_app();
    let id = app.create_hospital(ADMIN_TOKEN, "H");
    let endpoints: [(&str, String); 13] = [
        ("GET", "/api/v2/hospital/".into()),
        ("POST", "/api/v2/hospital/".into()),
        ("GET", format!("/api/v2/hospital/{id}")),
        ("PATCH", format!("/api/v2/hospital/{id}/")),
        ("POST", "/api/v2/medics/".into()),
        ("GET", "/api/v2/search/medics/?query=a".into()),
        ("GET", "/api/v2/management/memberships/".into()),
        ("POST", "/api/v2/management/memberships/".into()),
        ("PATCH", "/api/v2/management/memberships/1/".into()),
        ("DELETE", "/api/v2/management/memberships/1/".into()),
        ("GET", format!("/api/v2/memberships/{id}/")),
        ("GET", "/api/v2/locations/".into()),
        ("PATCH", "/api/v2/locations/update/".into()),
    ];
    for (method, path) in &endpoints {
        for token in [
            None,
            Some("0123456789abcdef0123456789abcdef01234567"),
            Some(""),
        ] {
            let body = (*method != "GET" && *method != "DELETE").then(|| json!({}));
            let resp = app.request(method, path, token, body.as_ref());
            assert_eq!(
                resp.status,
                401,
                "{method} {path} {token:?}: {}",
                resp.text()
            );
            assert_eq!(
                resp.json(),
                json!({"message": "Invalid Token"}),
                "{method} {path}"
            );
        }
    }
}
