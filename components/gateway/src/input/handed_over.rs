//! What a burn's item says was handed over (docs/lifecycle.md, "What was handed over"): `gtin`
//! (at most 14 digits, check digit verified; kept as GTIN-14), `lot`, `expiry` (`YYYY-MM-DD`),
//! `serial`, `substituted` with `substitution_reason`; or, instead of the first four, `gs1`: the
//! GS1 element string scanned from the box (`input::gs1`). Kept apart from `pharmacy.rs`, which
//! reads the rest of the burn.

use super::gs1::Product;
use common::fields::Fields;

/// Lot and serial: GS1 allows at most 20 characters.
const LOT: Option<usize> = Some(21);
/// `substitution_reason`: at most 1023 characters.
const REASON: Option<usize> = Some(1024);
/// A scanned element string: GS1 allows at most 70 characters.
const GS1: Option<usize> = Some(129);

/// The item's handed-over fields; each problem recorded on its field.
pub struct HandedOver {
    pub product: Product,
    pub substituted: bool,
    pub substitution_reason: Option<String>,
}

pub fn read(m: &mut Fields) -> HandedOver {
    let gtin = m
        .optional_str("gtin", Some(15))
        .and_then(|g| match common::gtin::fourteen(&g) {
            Some(g) => Some(g),
            None => {
                m.error(
                    "gtin",
                    "Not a GTIN: up to 14 digits whose last is the GS1 check digit.",
                );
                None
            }
        });
    let lot = m.optional_str("lot", LOT);
    let serial = m.optional_str("serial", LOT);
    let expiry = m.optional_str("expiry", Some(11)).and_then(|e| {
        match common::time::Date::parse(e.trim()) {
            Some(d) => Some(d.to_string()),
            None => {
                m.error("expiry", "A date as YYYY-MM-DD is required.");
                None
            }
        }
    });
    let mut product = Product {
        gtin,
        expiry,
        lot,
        serial,
    };
    if let Some(scan) = m.optional_str("gs1", GS1) {
        if product != Product::default() {
            m.error(
                "gs1",
                "Send either gs1 or gtin, lot, expiry and serial, not both.",
            );
        } else {
            match super::gs1::parse(&scan) {
                Ok(p) => product = p,
                Err(e) => m.error(
                    "gs1",
                    format!("Not a GS1 element string this service reads: {e}."),
                ),
            }
        }
    }
    let substituted = m.optional_bool("substituted").unwrap_or(false);
    let substitution_reason = m.optional_str("substitution_reason", REASON);
    HandedOver {
        product,
        substituted,
        substitution_reason,
    }
}
