//! The formulary rules for one medication (the API's "drug catalog" rules: openapi/receta.json,
//! docs/patients-and-prescriptions.md):
//!
//! | `drug_upc`                 | `category` sent                   | result                                   |
//! |----------------------------|-----------------------------------|------------------------------------------|
//! | empty                      | none                              | `standard_drug`, no `drug`               |
//! | empty                      | any of the three                  | as sent, no `drug`                       |
//! | in the formulary           | none or `standard_drug`           | the formulary's category, `drug` = its name|
//! | in the formulary           | `basic_drug`                      | `basic_drug`, `drug` = the formulary name|
//! | in the formulary           | `unstructured_drug`               | error: free text has no UPC              |
//! | not in the formulary       | `basic_drug`                      | `basic_drug` (the integrator's product)  |
//! | not in the formulary       | anything else                     | error                                    |
//!
//! The class (`fraccion`, `antibiotic`): the formulary's where it declares one, else what was sent;
//! absent on both sides means "not declared".

use common::codes::{Coded, DrugCategory};

use crate::bindings::exports::receta::prescriptions::prescriptions::{Drug, NewMedication};

const STANDARD: DrugCategory = DrugCategory::StandardDrug;
const BASIC: DrugCategory = DrugCategory::BasicDrug;
const UNSTRUCTURED: DrugCategory = DrugCategory::UnstructuredDrug;

/// A medication with its category and formulary name settled, ready to sign and store.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub presentation: String,
    pub instructions: String,
    pub qty: u32,
    pub drug_upc: String,
    pub category: DrugCategory,
    pub drug: String,
    pub qty_label: String,
    /// LGS art. 226 class; `None`: not declared.
    pub fraccion: Option<String>,
    /// `None`: not declared.
    pub antibiotic: Option<bool>,
    /// Whether the prescriber allows substitution (RIS art. 31).
    pub substitution_allowed: bool,
}

/// Applies the rules to one medication; `formulary` is the formulary's entry for its UPC, if any.
/// The error is the message for the `medications` field (without the item number).
pub fn resolve(med: &NewMedication, formulary: Option<&Drug>) -> Result<Resolved, String> {
    let upc = med.drug_upc.trim();
    let asked = med.category;
    let (category, drug) = match (upc.is_empty(), formulary) {
        (true, _) => (asked.unwrap_or(STANDARD), String::new()),
        (false, Some(entry)) => match asked {
            Some(UNSTRUCTURED) => {
                return Err(format!(
                    "category {} is for free text without a drug_upc; drug_upc {upc} is in the service's drug catalog.",
                    UNSTRUCTURED.code()
                ));
            }
            Some(BASIC) => (BASIC, entry.name.clone()),
            _ => (entry.category, entry.name.clone()),
        },
        (false, None) => match asked {
            Some(BASIC) => (BASIC, String::new()),
            _ => {
                return Err(format!(
                    "drug_upc {upc} is not in the service's drug catalog; a product from your own catalog must be sent with category {}.",
                    BASIC.code()
                ));
            }
        },
    };
    let (fraccion, antibiotic) = match formulary.filter(|_| !upc.is_empty()) {
        Some(entry) => (
            entry.fraccion.clone().or_else(|| med.fraccion.clone()),
            entry.antibiotic.or(med.antibiotic),
        ),
        None => (med.fraccion.clone(), med.antibiotic),
    };
    Ok(Resolved {
        fraccion,
        antibiotic,
        substitution_allowed: med.substitution_allowed,
        presentation: med.presentation.clone(),
        instructions: med.instructions.clone(),
        qty: med.qty,
        drug_upc: upc.to_string(),
        category,
        drug,
        qty_label: qty_label(med.qty),
    })
}

/// The descriptive label of a quantity, in the boxes (`cajas`) Mexican pharmacies dispense by.
pub fn qty_label(qty: u32) -> String {
    if qty == 1 {
        "1 caja".to_string()
    } else {
        format!("{qty} cajas")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn med(upc: &str, category: Option<DrugCategory>) -> NewMedication {
        NewMedication {
            presentation: "Amoxicilina 500 mg".into(),
            instructions: "1 cápsula cada 8 horas por 7 días".into(),
            qty: 2,
            drug_upc: upc.into(),
            category,
            fraccion: Some("VI".into()),
            antibiotic: None,
            substitution_allowed: true,
        }
    }

    fn entry(category: DrugCategory) -> Drug {
        Drug {
            upc: "2000000000107".into(),
            name: "Amoxicilina 500 mg, 12 cápsulas".into(),
            category,
            fraccion: Some("IV".into()),
            antibiotic: Some(true),
        }
    }

    #[test]
    fn the_formulary_class_wins_where_it_declares_one() {
        let r = resolve(&med("2000000000107", None), Some(&entry(STANDARD))).unwrap();
        assert_eq!(
            (r.fraccion.as_deref(), r.antibiotic),
            (Some("IV"), Some(true))
        );
        let undeclared = Drug {
            fraccion: None,
            antibiotic: None,
            ..entry(STANDARD)
        };
        let r = resolve(&med("2000000000107", None), Some(&undeclared)).unwrap();
        assert_eq!((r.fraccion.as_deref(), r.antibiotic), (Some("VI"), None));
        let r = resolve(&med("7501234567890", Some(BASIC)), None).unwrap();
        assert_eq!((r.fraccion.as_deref(), r.antibiotic), (Some("VI"), None));
    }

    #[test]
    fn no_upc_no_rule() {
        let r = resolve(&med("", None), None).unwrap();
        assert_eq!(
            (r.category, r.drug.as_str(), r.drug_upc.as_str()),
            (STANDARD, "", "")
        );
        for c in [STANDARD, BASIC, UNSTRUCTURED] {
            assert_eq!(resolve(&med("  ", Some(c)), None).unwrap().category, c);
        }
    }

    #[test]
    fn formulary_upc_gets_formulary_name_and_category() {
        let e = entry(STANDARD);
        let r = resolve(&med("2000000000107", None), Some(&e)).unwrap();
        assert_eq!(
            (r.category, r.drug.as_str()),
            (STANDARD, "Amoxicilina 500 mg, 12 cápsulas")
        );
        let basic_in_formulary = entry(BASIC);
        let r = resolve(
            &med("2000000000107", Some(STANDARD)),
            Some(&basic_in_formulary),
        )
        .unwrap();
        assert_eq!(r.category, BASIC, "the formulary decides, not the caller");
    }

    #[test]
    fn basic_drug_may_be_asked_for_a_formulary_upc() {
        let r = resolve(&med("2000000000107", Some(BASIC)), Some(&entry(STANDARD))).unwrap();
        assert_eq!(r.category, BASIC);
        assert_eq!(r.drug, "Amoxicilina 500 mg, 12 cápsulas");
    }

    #[test]
    fn unknown_upc_needs_basic_drug() {
        let r = resolve(&med("7501234567890", Some(BASIC)), None).unwrap();
        assert_eq!(
            (r.category, r.drug.as_str(), r.drug_upc.as_str()),
            (BASIC, "", "7501234567890")
        );
        for c in [None, Some(STANDARD), Some(UNSTRUCTURED)] {
            let e = resolve(&med("7501234567890", c), None).unwrap_err();
            assert!(
                e.contains("7501234567890") && e.contains(BASIC.code()),
                "{e}"
            );
        }
    }

    #[test]
    fn unstructured_with_a_formulary_upc_is_refused() {
        assert!(
            resolve(
                &med("2000000000107", Some(UNSTRUCTURED)),
                Some(&entry(STANDARD))
            )
            .is_err()
        );
    }

    #[test]
    fn quantity_labels() {
        assert_eq!(qty_label(1), "1 caja");
        assert_eq!(qty_label(3), "3 cajas");
        assert_eq!(resolve(&med("", None), None).unwrap().qty_label, "2 cajas");
    }
}
