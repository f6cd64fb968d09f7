//! Hospitals: create, list, get, PATCH, their two images, and the hospital a medic prescribes from
//! (with the medic, `prescriber`).

use common::codes::PageSize;
use common::db::{Db, Param, Row, blob, boolean, int, text};
use common::types::{Error, MedicKey, PageRequest, Principal};
use sha2::{Digest, Sha256};
use spin_sdk::sqlite3::QueryResult;

use crate::access;
use crate::bindings::exports::receta::catalog::catalog::{
    Hospital, HospitalPage, HospitalPatch, Image, ImageKind, ImageUpdate, NewHospital, Prescriber,
};

const INSERT_HOSPITAL: &str = "INSERT INTO hospitals \
    (created_at, name, patron, location, contact, headline, page_size, info, send_emails, is_active, \
     zip_code, location_lat, location_lon, google_place_id) \
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id";

/// A PATCH: every `?` after the id is NULL when the field is left as it is.
const UPDATE_HOSPITAL: &str = "UPDATE hospitals SET \
    name = COALESCE(?2, name), patron = COALESCE(?3, patron), location = COALESCE(?4, location), \
    contact = COALESCE(?5, contact), headline = COALESCE(?6, headline), page_size = COALESCE(?7, page_size), \
    info = COALESCE(?8, info), send_emails = COALESCE(?9, send_emails), is_active = COALESCE(?10, is_active), \
    zip_code = COALESCE(?11, zip_code), location_lat = COALESCE(?12, location_lat), \
    location_lon = COALESCE(?13, location_lon), google_place_id = COALESCE(?14, google_place_id) \
    WHERE id = ?1";

const INSERT_IMAGE: &str = "INSERT OR REPLACE INTO hospital_images (hospital_id, kind, filename, bytes, sha256) VALUES (?, ?, ?, ?, ?)";

const DELETE_IMAGE: &str = "DELETE FROM hospital_images WHERE hospital_id = ? AND kind = ?";

const SELECT_IMAGE: &str = "SELECT bytes FROM hospital_images WHERE hospital_id = ? AND kind = ?";

/// Links the creating medic; it becomes their active hospital when they have no active one.
const INSERT_CREATOR_MEMBERSHIP: &str = "INSERT INTO memberships \
    (medic_id, hospital_id, type_membership, is_active, is_deleted, date_joined) \
    VALUES (?1, ?2, ?3, NOT EXISTS (SELECT 1 FROM memberships \
        WHERE medic_id = ?1 AND is_active = 1 AND is_deleted = 0), 0, ?4)";

/// The medic's active hospital (a live membership marked active).
/// `?1` medic: its active hospital (the one `locations/update` chose).
const ACTIVE_HOSPITAL_OF: &str = "SELECT hospital_id FROM memberships \
    WHERE medic_id = ?1 AND is_active = 1 AND is_deleted = 0";

/// The columns of a hospital as the caller `?1` (a medic id, or NULL for the API admin) sees it.
/// `*_sha` is NULL without an image, else the version of its URL.
const HOSPITAL_COLUMNS: &str = "h.id, h.created_at, h.name, h.patron, h.location, h.contact, h.headline, \
    h.page_size, h.page_template, h.is_active, h.info, h.send_emails, h.zip_code, h.location_lat, \
    h.location_lon, h.google_place_id, \
    (SELECT i.sha256 FROM hospital_images i WHERE i.hospital_id = h.id AND i.kind = 'picture') AS picture_sha, \
    (SELECT i.sha256 FROM hospital_images i WHERE i.hospital_id = h.id AND i.kind = 'university_logo') AS logo_sha, \
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
fn caller_param(caller: &Principal) -> Param {
    match caller {
        Principal::Admin => Param::Null,
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
    // The media path, versioned by content so a replaced image gets a new URL.
    let media = |sha: Option<String>, file: &str| {
        sha.map(|sha| match sha.get(..12) {
            Some(version) => format!("hospitals/{id}/{file}?v={version}"),
            None => format!("hospitals/{id}/{file}"),
        })
    };
    Ok(Hospital {
        id,
        created_at: r.string("created_at")?,
        name: r.string("name")?,
        patron: r.string("patron")?,
        location: r.string("location")?,
        contact: r.string("contact")?,
        headline: r.string("headline")?,
        page_size: {
            let n = r.i64("page_size")?;
            PageSize::from_number(n)
                .ok_or_else(|| anyhow::anyhow!("page_size {n} is not 0 or 1"))?
        },
        page_template: r.string("page_template")?,
        picture: media(r.opt_string("picture_sha")?, "picture.jpg"),
        university_logo: media(r.opt_string("logo_sha")?, "university_logo.jpg"),
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

fn store_image(db: &Db, id: i64, kind: ImageKind, image: &Image) -> anyhow::Result<()> {
    let sha = common::hex::encode(&Sha256::digest(&image.bytes));
    db.execute(
        INSERT_IMAGE,
        &[
            int(id),
            text(image_kind(kind)),
            text(&image.filename),
            blob(&image.bytes),
            text(&sha),
        ],
    )?;
    Ok(())
}

pub fn create(caller: Principal, input: NewHospital) -> Result<Hospital, Error> {
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    let id = db.transaction(|db| -> Result<i64, Error> {
        let id = db.scalar_i64(
            INSERT_HOSPITAL,
            &[
                text(&now),
                text(&input.name),
                text(&input.patron),
                text(&input.location),
                text(&input.contact),
                text(&input.headline),
                int(input.page_size.number().into()),
                boolean(input.info),
                boolean(input.send_emails),
                boolean(input.is_active),
                text(&input.zip_code),
                text(&input.location_lat),
                text(&input.location_lon),
                text(&input.google_place_id),
            ],
        )?;
        for (kind, image) in [
            (ImageKind::Picture, &input.picture),
            (ImageKind::UniversityLogo, &input.university_logo),
        ] {
            if let Some(image) = image {
                store_image(db, id, kind, image)?;
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
    find(&db, &caller, id)?.ok_or_else(Error::not_found)
}

fn find(db: &Db, caller: &Principal, id: i64) -> anyhow::Result<Option<Hospital>> {
    db.query_opt(&select_one(), &[caller_param(caller), int(id)], from_row)
}

pub fn authorize_admin(caller: Principal, id: i64) -> Result<(), Error> {
    access::require_manager(&Db::open()?, &caller, id)
}

pub fn update(caller: Principal, id: i64, patch: HospitalPatch) -> Result<Hospital, Error> {
    let db = Db::open()?;
    db.transaction(|db| -> Result<(), Error> {
        access::require_manager(db, &caller, id)?;
        let opt_text = |s: &Option<String>| s.as_deref().map_or(Param::Null, text);
        let opt_bool = |b: Option<bool>| b.map_or(Param::Null, boolean);
        db.execute(
            UPDATE_HOSPITAL,
            &[
                int(id),
                opt_text(&patch.name),
                opt_text(&patch.patron),
                opt_text(&patch.location),
                opt_text(&patch.contact),
                opt_text(&patch.headline),
                patch
                    .page_size
                    .map_or(Param::Null, |p| int(p.number().into())),
                opt_bool(patch.info),
                opt_bool(patch.send_emails),
                opt_bool(patch.is_active),
                opt_text(&patch.zip_code),
                opt_text(&patch.location_lat),
                opt_text(&patch.location_lon),
                opt_text(&patch.google_place_id),
            ],
        )?;
        for (kind, update) in [
            (ImageKind::Picture, &patch.picture),
            (ImageKind::UniversityLogo, &patch.university_logo),
        ] {
            match update {
                ImageUpdate::Keep => {}
                ImageUpdate::Clear => {
                    db.execute(DELETE_IMAGE, &[int(id), text(image_kind(kind))])?;
                }
                ImageUpdate::Set(image) => store_image(db, id, kind, image)?,
            }
        }
        Ok(())
    })?;
    get(caller, id)
}

/// `?1` hospital.
const SENDS_EMAILS: &str = "SELECT send_emails FROM hospitals WHERE id = ?1";

pub fn sends_emails(id: i64) -> Result<bool, Error> {
    let db = Db::open()?;
    db.query_opt(SENDS_EMAILS, &[int(id)], |r| r.bool("send_emails"))?
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

/// `?1` medic, `?2` the hospital asked for (NULL: the medic's active one). One row while the
/// medic exists: its profile (`medic_…`), `asked` (`?2`, else the active hospital, NULL when it has
/// none) and that hospital's columns when the medic holds a live membership there (NULL
/// otherwise). One statement for a create's two reads: on a libSQL server each is a round trip.
fn select_prescriber() -> String {
    format!(
        "SELECT {}, r.asked, {HOSPITAL_COLUMNS} FROM medics md \
         CROSS JOIN (SELECT COALESCE(?2, ({ACTIVE_HOSPITAL_OF})) AS asked) r \
         LEFT JOIN hospitals h ON h.id = r.asked AND {VISIBLE_TO_CALLER} WHERE md.id = ?1",
        crate::medics::PROFILE_COLUMNS
    )
}

/// The statement that reads medic `medic` and the hospital it prescribes from
/// (`catalog.prescriber-read`), `hospital` asked or its active one.
pub fn prescriber_read(medic: &MedicKey, hospital: Option<i64>) -> (String, Vec<Param>) {
    let (sql, medic) = common::holder::statement(&select_prescriber(), medic);
    (sql, vec![medic, hospital.map_or(Param::Null, int)])
}

/// The medic and the hospital it prescribes from in `read`, the result of [`prescriber_read`]'s
/// statement (`catalog.prescriber-of`), or `None` for an unknown medic.
pub fn prescriber_of(read: &QueryResult) -> Result<Option<Prescriber>, Error> {
    let found = common::db::rows(read, |r| {
        let profile = crate::medics::prefixed_profile(r)?;
        let hospital = match (r.opt_i64("asked")?, r.opt_i64("id")?) {
            (None, _) => Err(Error::field(
                "hospital",
                "The medic has no active hospital: send `hospital`.",
            )),
            (Some(_), None) => Err(Error::field(
                "hospital",
                "The medic has no membership on this hospital.",
            )),
            (Some(_), Some(_)) => match from_row(r)? {
                found if !found.is_active => {
                    Err(Error::field("hospital", "This hospital is not active."))
                }
                found => Ok(found),
            },
        };
        Ok(Prescriber {
            medic: profile,
            hospital,
        })
    })?;
    Ok(found.into_iter().next())
}
