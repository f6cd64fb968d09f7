//! Dispense receipts (table `receipts`, migration 0015; docs/verification.md, "Dispense receipts"):
//! every sale gets a canonical JSON document (JCS, as a prescription's), its SHA-256 `digest`, and
//! the service's Ed25519 signature of the ASCII bytes `receta:dispense:v1:<digest>` with the same
//! keys (and `kid`s) that seal prescriptions. A pharmacy keeps it as proof of what it sold, against
//! which prescription, when; an inspector checks it offline (`receta-verify`) or online
//! (`GET /api/v2/verify/receipt/<digest>`). Stored once, in the sale's transaction, never changed.

use serde_json::{Value, json};

use common::db::{Db, Param, int, text};
use common::types::Error;

use crate::bindings::exports::receta::prescriptions::prescriptions::{
    DispensedItem, PharmacyRef, Receipt, ReceiptCheck, ReceiptSeal,
};
use crate::document::{is_signature, signature_of, text_fields};
use crate::seal::{self, ALG};

/// What a receipt's seal signs: this prefix, then the 64-hex digest.
const MESSAGE_PREFIX: &str = "receta:dispense:v1:";
/// The document's `type`.
pub const TYPE: &str = "receta.dispense-receipt";
/// The receipt format: 2 added each item's `gtin`, `lot`, `expiry`, `serial`, `substituted` and
/// `substitution_reason` (null or false when the pharmacy said nothing). Version 1 receipts still
/// verify: the seal covers the stored document, whatever its version.
pub const VERSION: u32 = 2;

/// `?1` digest, `?2` the pharmacy that sold, or NULL for the API admin.
const GET: &str = "SELECT r.document, r.kid, r.sig, nc.gen_time AS constancia_time, \
    nc.tsa AS constancia_tsa FROM receipts r LEFT JOIN constancias nc ON nc.digest = r.digest \
    WHERE r.digest = ?1 AND (?2 IS NULL OR r.pharmacy_id = ?2)";

const CHECK: &str = "SELECT r.document, r.kid, r.sig, r.created_at, nc.gen_time AS constancia_time, \
    nc.tsa AS constancia_tsa FROM receipts r LEFT JOIN constancias nc ON nc.digest = r.digest \
    WHERE r.digest = ?1";

/// The answer for a stored receipt that no longer hashes to its digest.
const ALTERED: &str = "This receipt's stored document no longer matches its digest: it was \
    altered outside the service.";

/// One medication's units in the sale.
pub struct Line<'a> {
    pub medication: i64,
    pub drug_upc: &'a str,
    pub presentation: &'a str,
    pub qty: u32,
    /// What the pharmacy says it handed over (`crate::handover`).
    pub handed_over: &'a DispensedItem,
}

/// Everything a receipt states.
pub struct Sale<'a> {
    /// The dispense's event id.
    pub dispense_id: i64,
    pub signature: &'a str,
    pub pharmacy: &'a PharmacyRef,
    pub sales_code: &'a str,
    pub lines: Vec<Line<'a>>,
    pub fill: i64,
    /// When the pharmacy's claim started, if it sold under one.
    pub claimed_at: Option<&'a str>,
    pub sold_at: &'a str,
}

/// The receipt's canonical document (JCS).
pub fn document(sale: &Sale) -> String {
    let items: Vec<Value> = sale
        .lines
        .iter()
        .map(|l| {
            let h = l.handed_over;
            json!({
                "medication_id": l.medication,
                "drug_upc": l.drug_upc,
                "presentation": l.presentation,
                "qty": l.qty,
                "gtin": h.gtin,
                "lot": h.lot,
                "expiry": h.expiry,
                "serial": h.serial,
                "substituted": h.substituted,
                "substitution_reason": h.substitution_reason,
            })
        })
        .collect();
    let doc = json!({
        "type": TYPE,
        "version": VERSION,
        "dispense_id": sale.dispense_id,
        "signature": sale.signature,
        "pharmacy": {
            "id": sale.pharmacy.id,
            "name": sale.pharmacy.name,
            "license": sale.pharmacy.license,
        },
        "sales_code": sale.sales_code,
        "items": items,
        "fill": sale.fill,
        "claimed_at": sale.claimed_at,
        "sold_at": sale.sold_at,
    });
    crate::canonical::to_string(&doc)
}

/// The message a receipt's seal signs.
pub fn message(digest: &str) -> String {
    format!("{MESSAGE_PREFIX}{digest}")
}

/// A sale's receipt, built and sealed: its canonical document, the document's digest and its seal.
/// The sale's statement stores it (migration 0032).
pub struct Sealed {
    pub document: String,
    pub seal: ReceiptSeal,
}

/// Builds and seals the sale's receipt (inside the sale's transaction).
pub fn seal(db: &Db, sale: &Sale) -> Result<Sealed, Error> {
    let document = document(sale);
    let digest = signature_of(&document);
    let signer = seal::signer(db)?;
    let sig = signer.sign(&message(&digest));
    Ok(Sealed {
        document,
        seal: ReceiptSeal {
            digest,
            kid: signer.kid,
            alg: ALG.into(),
            sig,
        },
    })
}

/// A receipt for the pharmacy that sold (or the admin); see `prescriptions.get-receipt`.
pub fn get(pharmacy: Option<i64>, digest: &str) -> Result<Receipt, Error> {
    if !is_signature(digest) {
        return Err(Error::not_found());
    }
    let who = pharmacy.map_or(Param::Null, int);
    let db = Db::open()?;
    let (document, kid, sig, constancia) = db
        .query_opt(GET, &[text(digest), who], |r| {
            Ok((
                r.string("document")?,
                r.string("kid")?,
                r.string("sig")?,
                crate::constancia::from_row(r, digest)?,
            ))
        })?
        .ok_or_else(Error::not_found)?;
    if signature_of(&document) != digest {
        return Err(Error::Conflict(ALTERED.into()));
    }
    Ok(Receipt {
        document,
        seal: ReceiptSeal {
            digest: digest.into(),
            kid,
            alg: ALG.into(),
            sig,
        },
        constancia,
    })
}

/// The public check of a receipt; see `prescriptions.verify-receipt`.
pub fn verify(digest: &str, client: &str) -> Result<ReceiptCheck, Error> {
    crate::verify::admit(client, None)?;
    let db = Db::open()?;
    if !is_signature(digest) {
        return Err(Error::not_found());
    }
    let (document, kid, sig, sold_at, constancia) = db
        .query_opt(CHECK, &[text(digest)], |r| {
            Ok((
                r.string("document")?,
                r.string("kid")?,
                r.string("sig")?,
                r.string("created_at")?,
                crate::constancia::from_row(r, digest)?,
            ))
        })?
        .ok_or_else(Error::not_found)?;
    let valid = signature_of(&document) == digest
        && seal::key_for(&db, &kid)?.is_some_and(|key| seal::check(&key, &sig, &message(digest)));
    // The pharmacy as the document states it.
    let field = text_fields(&document);
    Ok(ReceiptCheck {
        valid,
        kid,
        sold_at,
        pharmacy_name: field("/pharmacy/name"),
        pharmacy_license: field("/pharmacy/license"),
        constancia,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pharmacy() -> PharmacyRef {
        PharmacyRef {
            id: 3,
            name: "Farmacia Ñ".into(),
            license: "LS-1".into(),
        }
    }

    #[test]
    fn the_document_is_canonical_and_states_the_sale() {
        let p = pharmacy();
        let mut handed = crate::handover::tests::item(5);
        handed.lot = Some("L-7".into());
        handed.substituted = true;
        let sale = Sale {
            dispense_id: 9,
            signature: "ab",
            pharmacy: &p,
            sales_code: "T-1",
            lines: vec![Line {
                medication: 5,
                drug_upc: "7501",
                presentation: "Caja 10",
                qty: 2,
                handed_over: &handed,
            }],
            fill: 1,
            claimed_at: None,
            sold_at: "2026-11-24T19:05:00.000000Z",
        };
        let doc = document(&sale);
        assert_eq!(
            doc,
            "{\"claimed_at\":null,\"dispense_id\":9,\"fill\":1,\"items\":[{\"drug_upc\":\"7501\",\
             \"expiry\":null,\"gtin\":null,\"lot\":\"L-7\",\"medication_id\":5,\
             \"presentation\":\"Caja 10\",\"qty\":2,\"serial\":null,\"substituted\":true,\
             \"substitution_reason\":null}],\"pharmacy\":{\"id\":3,\
             \"license\":\"LS-1\",\"name\":\"Farmacia Ñ\"},\"sales_code\":\"T-1\",\"signature\":\"ab\",\
             \"sold_at\":\"2026-11-24T19:05:00.000000Z\",\"type\":\"receta.dispense-receipt\",\
             \"version\":2}"
        );
        assert_eq!(message("cd"), "receta:dispense:v1:cd");
    }
}
