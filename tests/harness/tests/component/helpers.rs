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
