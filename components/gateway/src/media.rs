//! `/media/…`: uploaded hospital images, served without a token (they are printed on every prescription).

use common::db::Db;
use common::types::Error;

use crate::bindings::catalog::{self, ImageKind};
use crate::http::Response;

/// `GET /media/hospitals/<id>/picture.jpg` and `…/university_logo.jpg`.
pub fn hospital_image(id: &str, file: &str) -> Result<Response, Error> {
    let id: i64 = id.parse().map_err(|_| Error::not_found())?;
    let kind = match file {
        "picture.jpg" => ImageKind::Picture,
        "university_logo.jpg" => ImageKind::UniversityLogo,
        _ => return Err(Error::not_found()),
    };
    let db = Db::open()?;
    let bytes =
        catalog::get_hospital_image(db.lend().as_deref(), id, kind).ok_or_else(Error::not_found)?;
    Ok(Response::bytes(200, "image/jpeg", bytes)
        .with_header("cache-control", "public, max-age=86400"))
}
