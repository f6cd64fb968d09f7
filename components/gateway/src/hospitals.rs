//! `/api/v2/hospital/`: create (JSON or multipart), list, get.

use serde_json::{Map, Value};

use common::fields::Fields;
use common::types::Error;

use crate::bindings::catalog::{self, Hospital, Image, NewHospital};
use crate::http::{Request, Response};
use crate::media;

/// `zip_code`, `location_lat`, `location_lon`: strictly under 32 characters.
const SHORT_TEXT: Option<usize> = Some(32);
/// Uploaded images: strictly under 2 MB.
const MAX_IMAGE_BYTES: usize = 2_000_000;

/// `POST /api/v2/hospital/` → 201 Hospital.
pub fn create(req: &Request) -> Result<Response, Error> {
    let caller = req.caller()?;
    let (mut fields, mut files) = read_form(req)?;
    let picture = take_image(&mut fields, &mut files, "picture");
    let university_logo = take_image(&mut fields, &mut files, "university_logo");
    let input = NewHospital {
        name: fields.required_str("name", None),
        patron: fields.required_str("patron", None),
        location: fields.required_str("location", None),
        contact: fields.required_str("contact", None),
        headline: fields.optional_str("headline", None).unwrap_or_default(),
        page_size: page_size(&mut fields).unwrap_or(0),
        info: fields.optional_bool("info").unwrap_or(false),
        is_admin: fields.optional_bool("is_admin").unwrap_or(true),
        zip_code: fields
            .optional_str("zip_code", SHORT_TEXT)
            .unwrap_or_default(),
        location_lat: fields
            .optional_str("location_lat", SHORT_TEXT)
            .unwrap_or_default(),
        location_lon: fields
            .optional_str("location_lon", SHORT_TEXT)
            .unwrap_or_default(),
        picture,
        university_logo,
    };
    fields.finish()?;
    let hospital = catalog::create_hospital(caller, &input)?;
    Ok(Response::json(201, &to_json(hospital)))
}

/// `GET /api/v2/hospital/` → 200 paginated Hospital list.
pub fn list(req: &Request) -> Result<Response, Error> {
    let caller = req.caller()?;
    let page = req.page()?;
    let found = catalog::list_hospitals(caller, page)?;
    let results = found.results.into_iter().map(to_json).collect();
    Ok(Response::page(req, &page, found.count, results))
}

/// `GET /api/v2/hospital/<id>` → 200 Hospital, 404 `{message}`.
pub fn get(req: &Request, id: &str) -> Result<Response, Error> {
    let caller = req.caller()?;
    let id: i64 = id.parse().map_err(|_| Error::not_found())?;
    Ok(Response::json(
        200,
        &to_json(catalog::get_hospital(caller, id)?),
    ))
}

/// The API shape: image paths become absolute URLs.
fn to_json(hospital: Hospital) -> Value {
    let mut value = serde_json::to_value(&hospital).expect("records serialize");
    for key in ["picture", "university_logo"] {
        if let Some(Value::String(path)) = value.get(key) {
            let url = media::url(path);
            value[key] = Value::String(url);
        }
    }
    value
}

/// `page_size`: 0 (Letter) or 1 (Half Letter); `true`/`false` are accepted for 0/1.
fn page_size(fields: &mut Fields) -> Option<u8> {
    let raw = fields.raw("page_size")?.clone();
    let size = match &raw {
        Value::Null => return None,
        Value::Bool(true) => Some(0),
        Value::Bool(false) => Some(1),
        Value::Number(n) => n.as_u64().filter(|n| *n <= 1).map(|n| n as u8),
        Value::String(s) => match s.trim() {
            "0" | "true" | "True" => Some(0),
            "1" | "false" | "False" => Some(1),
            _ => None,
        },
        _ => None,
    };
    if size.is_none() {
        let shown = match &raw {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        fields.error(
            "page_size",
            format!("\"{shown}\" is not a valid choice. Use 0 (Letter) or 1 (Half Letter)."),
        );
    }
    size
}

/// A file part of a multipart form.
struct File {
    filename: String,
    bytes: Vec<u8>,
}

/// The body as fields plus uploaded files (none for JSON).
fn read_form(req: &Request) -> Result<(Fields, Vec<(String, File)>), Error> {
    if !req.is_multipart() {
        return Ok((req.json_fields()?, Vec::new()));
    }
    let boundary = common::multipart::boundary(req.header("content-type").unwrap_or_default())
        .unwrap_or_default();
    let parts = common::multipart::parse(req.body(), &boundary)
        .ok_or_else(|| Error::BadRequest("Multipart form parse error.".into()))?;
    let mut map = Map::new();
    let mut files = Vec::new();
    for part in parts {
        match part.filename {
            Some(filename) => files.push((
                part.name,
                File {
                    filename,
                    bytes: part.data,
                },
            )),
            None => {
                let text = String::from_utf8(part.data)
                    .map_err(|_| Error::field(&part.name, "The value is not valid UTF-8."))?;
                map.insert(part.name, Value::String(text));
            }
        }
    }
    Ok((Fields::from_map(map), files))
}

/// An uploaded image field: a `.jpg` file whose bytes are a JPEG, strictly under 2 MB.
fn take_image(fields: &mut Fields, files: &mut Vec<(String, File)>, name: &str) -> Option<Image> {
    if let Some(i) = files.iter().position(|(n, _)| n == name) {
        let (_, file) = files.swap_remove(i);
        let is_jpg_name = file.filename.to_ascii_lowercase().ends_with(".jpg");
        let is_jpeg = file.bytes.starts_with(&[0xFF, 0xD8, 0xFF]);
        if !is_jpg_name || !is_jpeg {
            fields.error(
                name,
                "Upload a valid image: only .jpg (JPEG) files are accepted.",
            );
            return None;
        }
        if file.bytes.len() >= MAX_IMAGE_BYTES {
            fields.error(name, "The file must be smaller than 2 MB.");
            return None;
        }
        return Some(Image {
            filename: file.filename,
            bytes: file.bytes,
        });
    }
    match fields.raw(name) {
        None | Some(Value::Null) => None,
        // A multipart text part that is empty means "no file", as browsers send it.
        Some(Value::String(s)) if s.is_empty() => None,
        Some(_) => {
            fields.error(
                name,
                "The submitted data was not a file. Check the encoding type on the form.",
            );
            None
        }
    }
}
