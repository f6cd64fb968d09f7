//! Hospitals: create, list, get, and their two images.

use common::db::{Db, Row, blob, boolean, int, text};
use common::types::{Error, PageRequest, Principal};

use crate::bindings::exports::receta::erx::catalog::{
    Hospital, HospitalPage, Image, ImageKind, NewHospital,
};

const INSERT_HOSPITAL: &str = "INSERT INTO hospitals \
    (created_at, name, patron, location, contact, headline, page_size, info, zip_code, location_lat, location_lon) \
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

const INSERT_IMAGE: &str = "INSERT OR REPLACE INTO hospital_images (hospital_id, kind, filename, bytes) VALUES (?, ?, ?, ?)";

const SELECT_IMAGE: &str = "SELECT bytes FROM hospital_images WHERE hospital_id = ? AND kind = ?";

/// Links the creating medic; it becomes their active hospital when they have no active one.
const INSERT_CREATOR_MEMBERSHIP: &str = "INSERT INTO memberships \
    (medic_id, hospital_id, type_membership, is_active, is_deleted, date_joined) \
    VALUES (?1, ?2, ?3, NOT EXISTS (SELECT 1 FROM memberships \
        WHERE medic_id = ?1 AND is_active = 1 AND is_deleted = 0), 0, ?4)";

/// The columns of a hospital as the caller `?1` (a medic id, or NULL for the API admin) sees it.
const HOSPITAL_COLUMNS: &str = "h.id, h.created_at, h.name, h.patron, h.location, h.contact, h.headline, \
    h.page_size, h.page_template, h.is_active, h.info, h.send_emails, h.zip_code, h.location_lat, \
    h.location_lon, h.google_place_id, \
    EXISTS (SELECT 1 FROM hospital_images i WHERE i.hospital_id = h.id AND i.kind = 'picture') AS has_picture, \
    EXISTS (SELECT 1 FROM hospital_images i WHERE i.hospital_id = h.id AND i.kind = 'university_logo') AS has_logo, \
    EXISTS (SELECT 1 FROM memberships m WHERE m.hospital_id = h.id AND m.medic_id = ?1 \
        AND m.is_deleted = 0 AND m.type_membership = 'ADMIN') AS is_admin";

/// Which hospitals caller `?1` may see: all for the admin (NULL), those with a live membership for a medic.
const VISIBLE_TO_CALLER: &str = "(?1 IS NULL OR EXISTS (SELECT 1 FROM memberships m \
    WHERE m.hospital_id = h.id AND m.medic_id = ?1 AND m.is_deleted = 0))";

fn select_page() -> String {
    format!(
        "SELECT {HOSPITAL_COLUMNS} FROM hospitals h WHERE {VISIBLE_TO_CALLER} ORDER BY h.id LIMIT ?2 OFFSET ?3"
    )
}

fn count_visible() -> String {
    format!("SELECT COUNT(*) FROM hospitals h WHERE {VISIBLE_TO_CALLER}")
}

fn select_one() -> String {
    format!("SELECT {HOSPITAL_COLUMNS} FROM hospitals h WHERE {VISIBLE_TO_CALLER} AND h.id = ?2")
}

/// The `?1` parameter for a caller.
fn caller_param(caller: &Principal) -> common::db::Param {
    match caller {
        Principal::Admin => common::db::Param::Null,
        Principal::Medic(id) => int(*id),
    }
}

fn image_kind(kind: ImageKind) -> &'static str {
    match kind {
        ImageKind::Picture => "picture",
        ImageKind::UniversityLogo => "university_logo",
    }
}

fn from_row(r: &Row) -> anyhow::Result<Hospital> {
    let id = r.i64("id")?;
    let media = |present: bool, file: &str| present.then(|| format!("hospitals/{id}/{file}"));
    Ok(Hospital {
        id,
        created_at: r.string("created_at")?,
        name: r.string("name")?,
        patron: r.string("patron")?,
        location: r.string("location")?,
        contact: r.string("contact")?,
        headline: r.string("headline")?,
        page_size: r.i64("page_size")? as u8,
        page_template: r.string("page_template")?,
        picture: media(r.bool("has_picture")?, "picture.jpg"),
        university_logo: media(r.bool("has_logo")?, "university_logo.jpg"),
        is_active: r.bool("is_active")?,
        is_admin: r.bool("is_admin")?,
        info: r.bool("info")?,
        send_emails: r.bool("send_emails")?,
        zip_code: r.string("zip_code")?,
        location_lat: r.string("location_lat")?,
        location_lon: r.string("location_lon")?,
        google_place_id: r.string("google_place_id")?,
    })
}

pub fn create(caller: Principal, input: NewHospital) -> Result<Hospital, Error> {
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    let id = db.transaction(|db| -> Result<i64, Error> {
        db.execute(
            INSERT_HOSPITAL,
            &[
                text(&now),
                text(&input.name),
                text(&input.patron),
                text(&input.location),
                text(&input.contact),
                text(&input.headline),
                int(input.page_size.into()),
                boolean(input.info),
                text(&input.zip_code),
                text(&input.location_lat),
                text(&input.location_lon),
            ],
        )?;
        let id = db.last_insert_rowid();
        for (kind, image) in [
            (ImageKind::Picture, &input.picture),
            (ImageKind::UniversityLogo, &input.university_logo),
        ] {
            if let Some(Image { filename, bytes }) = image {
                db.execute(
                    INSERT_IMAGE,
                    &[int(id), text(image_kind(kind)), text(filename), blob(bytes)],
                )?;
            }
        }
        if let Principal::Medic(medic) = caller {
            let kind = if input.is_admin { "ADMIN" } else { "MEMBER" };
            db.execute(
                INSERT_CREATOR_MEMBERSHIP,
                &[int(medic), int(id), text(kind), text(&now)],
            )?;
        }
        Ok(id)
    })?;
    get(caller, id)
}

pub fn list(caller: Principal, page: PageRequest) -> Result<HospitalPage, Error> {
    let db = Db::open()?;
    let who = caller_param(&caller);
    let count = db.scalar_i64(&count_visible(), std::slice::from_ref(&who))? as u64;
    let results = db.query(
        &select_page(),
        &[who, int(page.limit.into()), int(page.offset.into())],
        from_row,
    )?;
    Ok(HospitalPage { count, results })
}

pub fn get(caller: Principal, id: i64) -> Result<Hospital, Error> {
    let db = Db::open()?;
    db.query_opt(&select_one(), &[caller_param(&caller), int(id)], from_row)?
        .ok_or_else(Error::not_found)
}

pub fn image(id: i64, kind: ImageKind) -> Option<Vec<u8>> {
    let db = Db::open().ok()?;
    db.query_opt(SELECT_IMAGE, &[int(id), text(image_kind(kind))], |r| {
        r.blob("bytes")
    })
    .ok()
    .flatten()
}
