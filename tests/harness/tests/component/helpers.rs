//! Seeding shared by the modules: rows the components expect to find.

use anyhow::Result;
use sha2::{Digest, Sha256};

/// SHA-256 of `text`, lowercase hex (how tokens are stored).
pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Inserts an active medic whose token is `token`; returns its id.
pub fn medic(db: &rusqlite::Connection, email: &str, token: &str) -> Result<i64> {
    db.execute(
        "INSERT INTO medics (created_at, name, email, password_hash, token_hash, date_of_birth, \
         cedula_prof, specialty) VALUES ('2026-01-01T00:00:00Z', 'Dra. Ana Ruiz', ?1, 'x', ?2, \
         '1980-01-01', '1234567', 'Pediatría')",
        (email, sha256_hex(token)),
    )?;
    Ok(db.last_insert_rowid())
}

/// The parties a prescription refers to, as rows.
pub struct Parties {
    pub medic: i64,
    pub hospital: i64,
    pub patient: i64,
    pub pharmacy: i64,
}

/// Inserts a medic (token `medic-token`), a hospital, the medic's patient and a pharmacy (token
/// `pharmacy-token`).
pub fn parties(db: &rusqlite::Connection) -> Result<Parties> {
    let medic = medic(db, "ana@example.com", "medic-token")?;
    db.execute(
        "INSERT INTO hospitals (created_at, name, patron, location, contact) VALUES \
         ('2026-01-01T00:00:00Z', 'Clínica Roma', 'Clínica Roma', 'Av. Álvaro Obregón 10, CDMX', \
         '55 1234 5678')",
        (),
    )?;
    let hospital = db.last_insert_rowid();
    db.execute(
        "INSERT INTO patients (uid, medic_id, created_at, updated_at, name, email, date_of_birth) \
         VALUES ('p-1', ?1, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', 'Luis Pérez', \
         'luis@example.com', '1990-05-01')",
        [medic],
    )?;
    let patient = db.last_insert_rowid();
    db.execute(
        "INSERT INTO pharmacies (name, license, token_hash, created_at, updated_at) VALUES \
         ('Farmacia Centro', 'LS-0001', ?1, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
        [sha256_hex("pharmacy-token")],
    )?;
    let pharmacy = db.last_insert_rowid();
    Ok(Parties {
        medic,
        hospital,
        patient,
        pharmacy,
    })
}
