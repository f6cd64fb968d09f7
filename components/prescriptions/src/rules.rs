//! The Mexican rules of a prescription's legal life (docs/mexican-rules.md), pure so they are tested
//! here: which medicines may be issued electronically, which may repeat, how long a prescription is
//! valid, and which fill a sale belongs to.

use common::codes::RxState;
use common::time::{Date, end_of_mexico_city_day, mexico_city_date};
use common::types::FieldError;

use crate::medications::Resolved;

/// Days of validity when neither the create nor the `rx_valid_days` variable says otherwise.
pub const DEFAULT_VALID_DAYS: u32 = 30;
/// The range of `valid_days` (and of the `rx_valid_days` variable).
pub const VALID_DAYS: std::ops::RangeInclusive<u32> = 1..=365;

/// Fracciones I-III (estupefacientes and psicotrópicos) need the paper special prescription: an
/// electronic signature is not accepted for them (FEUM, Suplemento para establecimientos, sec. XI).
pub fn paper_only(fraccion: Option<&str>) -> bool {
    matches!(fraccion, Some("I" | "II" | "III"))
}

/// A medicine of fracción IV, or of no declared class, may be filled more than once.
pub fn may_repeat(fraccion: Option<&str>) -> bool {
    matches!(fraccion, None | Some("IV"))
}

/// The validity and repeats of a prescription, as signed at issue.
#[derive(Debug, Clone, PartialEq)]
pub struct Terms {
    /// The last day it may be filled, `YYYY-MM-DD` (Mexico City).
    pub valid_until: String,
    /// The end of that day, as a stored UTC timestamp.
    pub expires_at: String,
    pub fills: u32,
    pub fill_interval_days: u32,
    pub antibiotic_repeat_reason: String,
}

/// The terms of a prescription issued at `issued_at` (a stored timestamp): valid through the day of
/// issue in Mexico City plus `valid_days`.
pub fn terms(
    issued_at: &str,
    valid_days: u32,
    fills: u32,
    fill_interval_days: u32,
    antibiotic_repeat_reason: &str,
) -> anyhow::Result<Terms> {
    let last = mexico_city_date(issued_at)
        .and_then(|d: Date| d.plus_days(valid_days.into()))
        .ok_or_else(|| anyhow::anyhow!("no validity date for {issued_at}"))?;
    Ok(Terms {
        valid_until: last.to_string(),
        expires_at: end_of_mexico_city_day(&last),
        fills,
        fill_interval_days,
        antibiotic_repeat_reason: antibiotic_repeat_reason.trim().to_string(),
    })
}

/// The `rx_valid_days` variable's value: its number when it is one in range, else the default.
pub fn configured_valid_days(variable: Option<&str>) -> u32 {
    variable
        .and_then(|v| v.trim().parse().ok())
        .filter(|d| VALID_DAYS.contains(d))
        .unwrap_or(DEFAULT_VALID_DAYS)
}

/// The state shown: a prescription with units left whose validity is over is `expired`; a final
/// state stays what it is. `expires_at` is none for prescriptions without validity.
pub fn shown_state(stored: RxState, expires_at: Option<&str>, now: &str) -> RxState {
    match (stored, expires_at) {
        (RxState::Available | RxState::PartiallyDispensed, Some(end)) if now >= end => {
            RxState::Expired
        }
        (state, _) => state,
    }
}

/// The fill that unit number `bought` of a medication prescribed `qty` per fill belongs to
/// (units 1..qty: fill 1, qty+1..2·qty: fill 2, …); 0 before any sale.
pub fn fill_of(bought: i64, qty: i64) -> i64 {
    if qty <= 0 || bought <= 0 {
        0
    } else {
        (bought + qty - 1) / qty
    }
}

/// The errors that make a prescription unlawful to issue electronically, by field: any item of
/// fracción I-III (`medications`); repeats (`fills` > 1) with an item that may not repeat
/// (`fills`) or with an antibiotic and no reason (`antibiotic_repeat_reason`).
pub fn check(meds: &[Resolved], fills: u32, antibiotic_repeat_reason: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut field = |name: &str, messages: Vec<String>| {
        if !messages.is_empty() {
            errors.push(FieldError {
                field: name.into(),
                messages,
            });
        }
    };
    let name = |m: &Resolved| {
        if m.drug.is_empty() {
            m.presentation.clone()
        } else {
            m.drug.clone()
        }
    };
    field(
        "medications",
        meds.iter()
            .enumerate()
            .filter(|(_, m)| paper_only(m.fraccion.as_deref()))
            .map(|(i, m)| {
                format!(
                    "Item {}: {} is a medicine of fracción {} (Ley General de Salud, art. 226): by law \
                     it needs the paper special prescription (recetario especial) and cannot be \
                     prescribed with an electronic signature.",
                    i + 1,
                    name(m),
                    m.fraccion.as_deref().unwrap_or_default()
                )
            })
            .collect(),
    );
    if fills > 1 {
        field(
            "fills",
            meds.iter()
                .enumerate()
                .filter(|(_, m)| {
                    !may_repeat(m.fraccion.as_deref()) && !paper_only(m.fraccion.as_deref())
                })
                .map(|(i, m)| {
                    format!(
                        "Item {}: {} is a medicine of fracción {}; only medicines of fracción IV (or of \
                         no declared class) may be filled more than once.",
                        i + 1,
                        name(m),
                        m.fraccion.as_deref().unwrap_or_default()
                    )
                })
                .collect(),
        );
        let antibiotics: Vec<String> = meds
            .iter()
            .filter(|m| m.antibiotic == Some(true))
            .map(name)
            .collect();
        if !antibiotics.is_empty() && antibiotic_repeat_reason.trim().is_empty() {
            field(
                "antibiotic_repeat_reason",
                vec![format!(
                    "This prescription holds an antibiotic ({}) and may be filled {fills} times: say \
                     why the antibiotic is repeated.",
                    antibiotics.join(", ")
                )],
            );
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn med(fraccion: Option<&str>, antibiotic: Option<bool>) -> Resolved {
        Resolved {
            presentation: "Tabletas".into(),
            instructions: "1 diaria".into(),
            qty: 1,
            drug_upc: String::new(),
            category: common::codes::DrugCategory::StandardDrug,
            drug: "Producto".into(),
            qty_label: "1 caja".into(),
            fraccion: fraccion.map(str::to_string),
            antibiotic,
            substitution_allowed: true,
        }
    }

    fn fields(errors: &[FieldError]) -> Vec<&str> {
        errors.iter().map(|e| e.field.as_str()).collect()
    }

    #[test]
    fn fracciones_one_to_three_are_never_issued() {
        for f in ["I", "II", "III"] {
            let e = check(&[med(Some("IV"), None), med(Some(f), None)], 1, "");
            assert_eq!(fields(&e), ["medications"]);
            assert!(e[0].messages[0].starts_with("Item 2: Producto"), "{e:?}");
            assert!(e[0].messages[0].contains("recetario especial"));
        }
        for f in [None, Some("IV"), Some("V"), Some("VI")] {
            assert!(check(&[med(f, None)], 1, "").is_empty());
        }
    }

    #[test]
    fn repeats_need_fraccion_four_or_none_and_a_reason_for_antibiotics() {
        assert!(check(&[med(None, None), med(Some("IV"), Some(false))], 12, "").is_empty());
        assert_eq!(fields(&check(&[med(Some("VI"), None)], 2, "")), ["fills"]);
        assert!(check(&[med(Some("VI"), None)], 1, "").is_empty());
        let e = check(&[med(Some("IV"), Some(true))], 2, "  ");
        assert_eq!(fields(&e), ["antibiotic_repeat_reason"]);
        assert!(check(&[med(Some("IV"), Some(true))], 2, "tratamiento de 14 días").is_empty());
        assert!(check(&[med(Some("IV"), Some(true))], 1, "").is_empty());
    }

    #[test]
    fn validity_ends_with_the_mexico_city_day() {
        // 03:00 UTC on the 26th is still the 25th in Mexico City.
        let t = terms("2026-11-26T03:00:00.000000Z", 30, 1, 0, " x ").unwrap();
        assert_eq!(t.valid_until, "2026-12-25");
        assert_eq!(t.expires_at, "2026-12-26T06:00:00.000000Z");
        assert_eq!(t.antibiotic_repeat_reason, "x");
    }

    #[test]
    fn expiry_is_shown_only_with_units_left() {
        let end = Some("2026-12-26T06:00:00.000000Z");
        let before = "2026-12-26T05:59:59.999999Z";
        let after = "2026-12-26T06:00:00.000000Z";
        assert_eq!(
            shown_state(RxState::Available, end, before),
            RxState::Available
        );
        assert_eq!(
            shown_state(RxState::Available, end, after),
            RxState::Expired
        );
        assert_eq!(
            shown_state(RxState::PartiallyDispensed, end, after),
            RxState::Expired
        );
        for s in [RxState::Dispensed, RxState::Rejected, RxState::Cancelled] {
            assert_eq!(shown_state(s, end, after), s);
        }
        assert_eq!(
            shown_state(RxState::Available, None, after),
            RxState::Available
        );
    }

    #[test]
    fn units_belong_to_fills_by_qty() {
        assert_eq!(
            [0, 1, 2, 3, 4, 5].map(|b| fill_of(b, 2)),
            [0, 1, 1, 2, 2, 3]
        );
    }

    #[test]
    fn the_variable_falls_back_to_thirty_days() {
        assert_eq!(configured_valid_days(Some("90")), 90);
        for bad in [None, Some(""), Some("0"), Some("366"), Some("x")] {
            assert_eq!(configured_valid_days(bad), 30);
        }
    }
}
