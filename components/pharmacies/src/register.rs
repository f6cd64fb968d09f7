//! The pharmacy register (table `pharmacies`, migration 0008). The token is minted by the auth
//! component and only its hash arrives here; no statement ever returns it.

use common::db::{Db, Param, Row, int, opt_text, text};
use common::types::{Error, PageRequest};

use crate::bindings::exports::receta::pharmacies::pharmacies::{
    NewPharmacy, Pharmacy, PharmacyPage, PharmacyPatch,
};

const INSERT: &str = "INSERT INTO pharmacies \
    (name, legal_name, license, address, zip_code, state, contact, token_hash, is_active, created_at, updated_at) \
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?) \
    RETURNING id, name, legal_name, license, address, zip_code, state, contact, is_active, created_at, updated_at";

const COUNT: &str = "SELECT COUNT(*) FROM pharmacies";

const PAGE: &str = "SELECT id, name, legal_name, license, address, zip_code, state, contact, is_active, \
    created_at, updated_at FROM pharmacies ORDER BY id LIMIT ? OFFSET ?";

const BY_ID: &str = "SELECT id, name, legal_name, license, address, zip_code, state, contact, is_active, \
    created_at, updated_at FROM pharmacies WHERE id = ?";

/// `?1` id, `?2` now, then each field or NULL to keep it.
const UPDATE: &str = "UPDATE pharmacies SET updated_at = ?2, \
    name = COALESCE(?3, name), legal_name = COALESCE(?4, legal_name), license = COALESCE(?5, license), \
    address = COALESCE(?6, address), zip_code = COALESCE(?7, zip_code), state = COALESCE(?8, state), \
    contact = COALESCE(?9, contact), is_active = COALESCE(?10, is_active) WHERE id = ?1 \
    RETURNING id, name, legal_name, license, address, zip_code, state, contact, is_active, created_at, updated_at";

pub fn create(input: NewPharmacy) -> Result<Pharmacy, Error> {
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    let params = [
        text(&input.name),
        text(&input.legal_name),
        text(&input.license),
        text(&input.address),
        text(&input.zip_code),
        text(&input.state),
        text(&input.contact),
        text(&input.token_hash),
        text(&now),
        text(&now),
    ];
    Ok(db
        .query_opt(INSERT, &params, from_row)?
        .ok_or_else(|| anyhow::anyhow!("INSERT … RETURNING returned no row"))?)
}

pub fn list(page: PageRequest) -> Result<PharmacyPage, Error> {
    let db = Db::open()?;
    let count = db.scalar_i64(COUNT, &[])?;
    let results = db.query(
        PAGE,
        &[int(page.limit.into()), int(page.offset.into())],
        from_row,
    )?;
    Ok(PharmacyPage {
        count: u64::try_from(count).unwrap_or(0),
        results,
    })
}

pub fn get(id: i64) -> Result<Pharmacy, Error> {
    Db::open()?
        .query_opt(BY_ID, &[int(id)], from_row)?
        .ok_or_else(Error::not_found)
}

pub fn update(id: i64, patch: PharmacyPatch) -> Result<Pharmacy, Error> {
    let db = Db::open()?;
    let o = |v: &Option<String>| opt_text(v.as_deref());
    let params: [Param; 10] = [
        int(id),
        text(&common::time::now_iso8601()),
        o(&patch.name),
        o(&patch.legal_name),
        o(&patch.license),
        o(&patch.address),
        o(&patch.zip_code),
        o(&patch.state),
        o(&patch.contact),
        patch.is_active.map_or(Param::Null, |b| int(b.into())),
    ];
    db.query_opt(UPDATE, &params, from_row)?
        .ok_or_else(Error::not_found)
}

pub(crate) fn from_row(r: &Row) -> anyhow::Result<Pharmacy> {
    Ok(Pharmacy {
        id: r.i64("id")?,
        name: r.string("name")?,
        legal_name: r.string("legal_name")?,
        license: r.string("license")?,
        address: r.string("address")?,
        zip_code: r.string("zip_code")?,
        state: r.string("state")?,
        contact: r.string("contact")?,
        is_active: r.bool("is_active")?,
        created_at: r.string("created_at")?,
        updated_at: r.string("updated_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The columns a pharmacy is read from (never `token_hash`).
    const COLUMNS: &str = "id, name, legal_name, license, address, zip_code, state, contact, is_active, created_at, updated_at";

    #[test]
    fn no_statement_reads_the_token_hash() {
        for sql in [COLUMNS, PAGE, BY_ID] {
            assert!(!sql.contains("token_hash"), "{sql}");
        }
        for sql in [INSERT, UPDATE] {
            let returning = sql.split("RETURNING").nth(1).unwrap();
            assert!(!returning.contains("token_hash"), "{sql}");
            assert_eq!(returning.trim(), COLUMNS);
        }
        assert!(PAGE.contains(COLUMNS) && BY_ID.contains(COLUMNS));
    }
}
