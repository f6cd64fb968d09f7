//! `/api/v2/hospital/`: create (JSON or multipart), list, get, PATCH (JSON or multipart).

use common::codes::PageSize;
use serde_json::{Map, Value};

use common::fields::Fields;
use common::types::{Error, Principal};

use crate::bindings::catalog::{self, Hospital, HospitalPatch, Image, ImageUpdate, NewHospital};
use crate::http::{self, Request, Response, path_id};
use crate::views::links;

/// `zip_code`, `location_lat`, `location_lon`: strictly under 32 characters (docs/api-notes.md).
const SHORT_TEXT: Option<usize> = Some(32);
/// Names, patron, contact, headline, google_place_id: at most 255 characters.
const TEXT: Option<usize> = Some(256);
/// `location`, the full address: at most 1023 characters.
const ADDRESS: Option<usize> = Some(1024);

/// `POST /api/v2/hospital/` → 201 Hospital. Required: name, patron, location, contact. Optional, with
/// their defaults: headline "", page_size 0, info false, is_admin true (a medic caller joins as ADMIN;
/// false joins as MEMBER), send_emails true, is_active true, zip_code/location_lat/location_lon "",
/// google_place_id "", picture and university_logo (multipart files) none.
pub fn create(req: &Request, caller: Principal) -> Result<Response, Error> {
    let (mut fields, mut files) = read_form(req)?;
    let picture = upload(&mut fields, &mut files, "picture");
    let university_logo = upload(&mut fields, &mut files, "university_logo");
    let name = fields.required_str("name", TEXT);
    let patron = fields.required_str("patron", TEXT);
    let location = fields.required_str("location", ADDRESS);
    let contact = fields.required_str("contact", TEXT);
    let headline = fields.optional_str("headline", TEXT).unwrap_or_default();
    let page_size = page_size(&mut fields).unwrap_or(PageSize::Letter);
    let info = fields.optional_bool("info").unwrap_or(false);
    let is_admin = fields.optional_bool("is_admin").unwrap_or(true);
    let send_emails = fields.optional_bool("send_emails").unwrap_or(true);
    let is_active = fields.optional_bool("is_active").unwrap_or(true);
    let zip_code = fields
        .optional_str("zip_code", SHORT_TEXT)
        .unwrap_or_default();
    let location_lat = fields
        .optional_str("location_lat", SHORT_TEXT)
        .unwrap_or_default();
    let location_lon = fields
        .optional_str("location_lon", SHORT_TEXT)
        .unwrap_or_default();
    let google_place_id = fields
        .optional_str("google_place_id", TEXT)
        .unwrap_or_default();
    let picture = picture.into_file();
    let university_logo = university_logo.into_file();
    let input = fields.finish_then(|| {
        Some(NewHospital {
            name: name?,
            patron: patron?,
            location: location?,
            contact: contact?,
            headline,
            page_size,
            info,
            is_admin,
            send_emails,
            is_active,
            zip_code,
            location_lat,
            location_lon,
            google_place_id,
            picture,
            university_logo,
        })
    })?;
    let hospital = catalog::create_hospital(caller, &input)?;
    Ok(Response::json(201, &with_urls(hospital, &http::base_url())))
}

/// `GET /api/v2/hospital/` → 200 paginated Hospital list.
pub fn list(req: &Request, caller: Principal) -> Result<Response, Error> {
    let page = req.page()?;
    let found = catalog::list_hospitals(caller, page)?;
    let base_url = http::base_url();
    let results: Vec<Hospital> = found
        .results
        .into_iter()
        .map(|h| with_urls(h, &base_url))
        .collect();
    Ok(Response::page(req, &page, found.count, &results))
}

/// `GET /api/v2/hospital/<id>` → 200 Hospital, 404 `{message}`.
pub fn get(caller: Principal, id: &str) -> Result<Response, Error> {
    let id = path_id(id)?;
    let hospital = catalog::get_hospital(caller, id)?;
    Ok(Response::json(200, &with_urls(hospital, &http::base_url())))
}

/// `PATCH /api/v2/hospital/<id>/` → 200 Hospital. The API admin, or a medic with a live ADMIN
/// membership there (else 403); 404 when absent. Any field of create except `is_admin` (the caller's
/// membership type, changed through memberships) may be sent; `picture`/`university_logo` as files
/// replace the image, as `null` (JSON) or an empty text field (form) remove it.
pub fn update(req: &Request, caller: Principal, id: &str) -> Result<Response, Error> {
    let id = path_id(id)?;
    catalog::authorize_hospital_admin(caller, id)?;
    let (mut fields, mut files) = read_form(req)?;
    let picture = upload(&mut fields, &mut files, "picture");
    let university_logo = upload(&mut fields, &mut files, "university_logo");
    let page_size = if fields.raw("page_size") == Some(&Value::Null) {
        fields.error("page_size", common::fields::NULL);
        None
    } else {
        page_size(&mut fields)
    };
    let patch = HospitalPatch {
        name: fields.patch_str("name", TEXT, false),
        patron: fields.patch_str("patron", TEXT, false),
        location: fields.patch_str("location", ADDRESS, false),
        contact: fields.patch_str("contact", TEXT, false),
        headline: fields.patch_str("headline", TEXT, true),
        page_size,
        info: fields.patch_bool("info"),
        send_emails: fields.patch_bool("send_emails"),
        is_active: fields.patch_bool("is_active"),
        zip_code: fields.patch_str("zip_code", SHORT_TEXT, true),
        location_lat: fields.patch_str("location_lat", SHORT_TEXT, true),
        location_lon: fields.patch_str("location_lon", SHORT_TEXT, true),
        google_place_id: fields.patch_str("google_place_id", TEXT, true),
        picture: picture.into_update(),
        university_logo: university_logo.into_update(),
    };
    fields.finish()?;
    let hospital = catalog::update_hospital(caller, id, &patch)?;
    Ok(Response::json(200, &with_urls(hospital, &http::base_url())))
}

/// The API shape: the record with its image paths made absolute URLs.
fn with_urls(mut hospital: Hospital, base_url: &str) -> Hospital {
    for path in [&mut hospital.picture, &mut hospital.university_logo]
        .into_iter()
        .flatten()
    {
        *path = links::media_url(base_url, path);
    }
    hospital
}

/// `page_size`: 0 (Letter) or 1 (Half Letter); `true`/`false` are accepted for 0/1.
fn page_size(fields: &mut Fields) -> Option<PageSize> {
    let raw = fields.raw("page_size")?.clone();
    let size = match &raw {
        Value::Null => return None,
        Value::Bool(true) => Some(PageSize::Letter),
        Value::Bool(false) => Some(PageSize::HalfLetter),
        Value::Number(n) => n.as_i64().and_then(PageSize::from_number),
        Value::String(s) => match s.trim() {
            "0" | "true" | "True" => Some(PageSize::Letter),
            "1" | "false" | "False" => Some(PageSize::HalfLetter),
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
    let boundary = crate::http::multipart::boundary(req.header("content-type").unwrap_or_default())
        .unwrap_or_default();
    let parts = crate::http::multipart::parse(req.body(), &boundary)
        .ok_or_else(|| Error::BadRequest("Multipart form parse error.".into()))?;
    let mut map = Map::new();
    let mut files = Vec::new();
    for part in parts {
        match part.filename {
            // A file input left empty: browsers send a part with an empty name and no bytes.
            Some(filename) if filename.is_empty() && part.data.is_empty() => {}
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

/// What the request says about one image field.
enum Upload {
    /// Not sent (or an invalid value, already recorded as a field error).
    Absent,
    /// `null`, or an empty form text field: no image.
    Null,
    /// A valid JPEG.
    File(Image),
}

impl Upload {
    fn into_file(self) -> Option<Image> {
        match self {
            Upload::File(image) => Some(image),
            Upload::Absent | Upload::Null => None,
        }
    }

    fn into_update(self) -> ImageUpdate {
        match self {
            Upload::Absent => ImageUpdate::Keep,
            Upload::Null => ImageUpdate::Clear,
            Upload::File(image) => ImageUpdate::Set(image),
        }
    }
}

/// An image field: a `.jpg` file part whose bytes are a JPEG, strictly under 2 MB; any other value
/// but `null`/empty text is a field error.
fn upload(fields: &mut Fields, files: &mut Vec<(String, File)>, name: &str) -> Upload {
    if let Some(i) = files.iter().position(|(n, _)| n == name) {
        let (_, file) = files.swap_remove(i);
        if let Err(message) = crate::input::image::check_jpeg(&file.filename, &file.bytes) {
            fields.error(name, message);
            return Upload::Absent;
        }
        return Upload::File(Image {
            filename: file.filename,
            bytes: file.bytes,
        });
    }
    match fields.raw(name) {
        None => Upload::Absent,
        Some(Value::Null) => Upload::Null,
        Some(Value::String(s)) if s.is_empty() => Upload::Null,
        Some(_) => {
            fields.error(
                name,
                "The submitted data was not a file. Check the encoding type on the form.",
            );
            Upload::Absent
        }
    }
}
