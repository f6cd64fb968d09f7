//! `/api/v2/drugs/`: the service's drug catalog (the formulary, owned by the prescriptions component). The API admin loads it (a JSON array of
//! `{upc, name, category, fraccion, antibiotic}`, added or replaced by UPC, all or nothing; a class
//! left out keeps the stored one); anyone with a token searches it.

use serde_json::Value;

use common::codes::DrugCategory;
use common::fields::Fields;
use common::types::{Error, FieldError};

use crate::bindings::prescriptions::{self, Drug};
use crate::http::{Request, Response};
use crate::input::body::{FRACCIONES, search_param};
use crate::roles::Admin;

/// Drug names: at most 255 characters.
const NAME: Option<usize> = Some(256);
/// Products per load, at most.
const MAX_DRUGS: usize = 5000;
/// The categories a catalog product may have (`unstructured_drug` is free text, never a product).
const CATEGORIES: [DrugCategory; 2] = [DrugCategory::StandardDrug, DrugCategory::BasicDrug];
const BAD_UPC: &str = "Enter a valid GTIN: 8, 12, 13 or 14 digits with a valid check digit.";

/// `POST /api/v2/drugs/` (API admin) `[{upc, name, category?, fraccion?, antibiotic?}, …]` → 200
/// `{created, updated}`.
/// `category` defaults to `standard_drug`. Errors: 400 `{"drugs": ["Item N, field: message", …]}`.
pub fn load(req: &Request, _: Admin) -> Result<Response, Error> {
    let Value::Array(items) = common::fields::parse_json(req.body())? else {
        return Err(Error::BadRequest(
            "Invalid data. Expected a JSON array of drugs.".into(),
        ));
    };
    let drugs = parse(items)?;
    let result = prescriptions::load_drugs(&drugs)?;
    Ok(Response::json(200, &result))
}

/// `GET /api/v2/drugs/?search=&limit=&offset=` (any token) → 200 paginated `{upc, name, category}` by
/// name; `search` matches the name anywhere or the UPC's beginning.
pub fn search(req: &Request) -> Result<Response, Error> {
    let page = req.page()?;
    let search = search_param(req)?;
    let found = prescriptions::search_drugs(search.as_deref(), page)?;
    Ok(Response::page(req, &page, found.count, &found.results))
}

/// The drugs of a load, or one 400 on `drugs` naming every bad item.
fn parse(items: Vec<Value>) -> Result<Vec<Drug>, Error> {
    let mut messages = Vec::new();
    if items.is_empty() {
        messages.push("This list may not be empty.".to_string());
    } else if items.len() > MAX_DRUGS {
        messages.push(format!(
            "Ensure this field has no more than {MAX_DRUGS} elements."
        ));
    }
    let mut drugs = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate().take(MAX_DRUGS) {
        let n = i + 1;
        let Value::Object(map) = item else {
            messages.push(format!("Item {n}: Invalid data. Expected a dictionary."));
            continue;
        };
        let mut f = Fields::from_map(map);
        let upc = f.required_gtin("upc", BAD_UPC);
        let name = f.required_str("name", NAME);
        let category = f
            .coded("category", &CATEGORIES, true)
            .unwrap_or(DrugCategory::StandardDrug);
        let fraccion = f.choice("fraccion", &FRACCIONES, true);
        let antibiotic = f.optional_bool("antibiotic");
        let read = f.finish_then(|| {
            Some(Drug {
                upc: upc?.into(),
                name: name?.trim().to_string(),
                category,
                fraccion,
                antibiotic,
            })
        });
        match read {
            Ok(drug) => drugs.push(drug),
            Err(Error::Invalid(errors)) => {
                for e in errors {
                    messages.extend(
                        e.messages
                            .into_iter()
                            .map(|m| format!("Item {n}, {}: {m}", e.field)),
                    );
                }
            }
            Err(other) => return Err(other),
        }
    }
    if messages.is_empty() {
        Ok(drugs)
    } else {
        Err(Error::Invalid(vec![FieldError {
            field: "drugs".into(),
            messages,
        }]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_defaults_the_category() {
        let drugs = parse(vec![
            json!({"upc": "7501055300075", "name": "Paracetamol 500 mg"}),
            json!({"upc": " 2000000000015 ", "name": "X", "category": "basic_drug"}),
        ])
        .unwrap();
        assert_eq!(drugs[0].category, DrugCategory::StandardDrug);
        assert_eq!(drugs[1].upc, "2000000000015");
        assert_eq!(drugs[1].category, DrugCategory::BasicDrug);
    }

    #[test]
    fn names_every_bad_item() {
        let Err(Error::Invalid(e)) = parse(vec![
            json!({"upc": "7501055300076", "name": "bad check digit"}),
            json!("text"),
            json!({"upc": "7501055300075"}),
            json!({"upc": "7501055300075", "name": "x", "category": "unstructured_drug"}),
        ]) else {
            panic!()
        };
        assert_eq!(e[0].field, "drugs");
        let m = &e[0].messages;
        assert!(m[0].starts_with("Item 1, upc: Enter a valid GTIN"), "{m:?}");
        assert!(m[1].starts_with("Item 2: Invalid data"), "{m:?}");
        assert!(
            m[2].starts_with("Item 3, name: This field is required."),
            "{m:?}"
        );
        assert!(m[3].starts_with("Item 4, category: "), "{m:?}");
        assert!(parse(vec![]).is_err());
    }
}
