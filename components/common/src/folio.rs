//! The folio: how people name a prescription (the patient's emails and messages, the history, the
//! consents, file names). The first characters of its signature: enough to tell a person's
//! prescriptions apart, never enough to open one (the whole signature is the capability that
//! opens its page and PDF; docs/patients.md, "No link leaves its owner").

/// Characters of the signature that make the folio. The patients component's SQL takes the same
/// (`substr(signature, 1, 12)`, `consents.rs`).
pub const LEN: usize = 12;

/// The folio of `signature` (all of it when shorter).
pub fn of(signature: &str) -> &str {
    signature.get(..LEN).unwrap_or(signature)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folio_is_the_signature_start() {
        assert_eq!(of(&"ab12".repeat(16)), "ab12ab12ab12");
        assert_eq!(of("short"), "short");
    }
}
