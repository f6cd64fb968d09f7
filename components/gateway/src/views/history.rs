//! A person's medication history as a medic reads it, with the person's consent (docs/patients.md,
//! "A medication history, only with consent"): the read itself (consent checked, every listed
//! prescription logged), its JSON and FHIR forms, and the create's duplicate-ingredient warnings.

use serde_json::{Value, json};

use common::db::Db;
use common::folio;
use common::types::Error;

use crate::bindings::catalog;
use crate::bindings::patients::{self, PatientKey};
use crate::bindings::prescriptions::{self, HistoryEntry, LifecycleKind, Medication};

/// How far back the history reaches: twelve months.
const DAYS: i64 = 365;

/// The history of the person behind `medic`'s own patient `key`: their prescriptions from other
/// medics of the last twelve months (`active_only`: only those still to be dispensed), each logged
/// in the patient's access log as read by `medic`, named `name` (the create has it already; the
/// history routes pass `None` and it is read here). `forbidden` without a standing consent that
/// covers the medic (by name, or a hospital where the medic has a live membership).
pub fn read(
    medic: i64,
    name: Option<&str>,
    key: &PatientKey,
    active_only: bool,
) -> Result<Vec<HistoryEntry>, Error> {
    let db = Db::open()?;
    let hospitals: Vec<i64> = catalog::list_locations(medic)?
        .iter()
        .map(|l| l.hospital.id)
        .collect();
    let records = patients::history_access(db.lend().as_deref(), medic, &hospitals, key)?;
    let name = match name {
        Some(name) => name.to_string(),
        None => catalog::get_medic(db.lend().as_deref(), medic)
            .map(|m| m.name)
            .unwrap_or_default(),
    };
    let now = common::time::now_iso8601();
    let since = common::time::shift(&now, -DAYS * 86_400).unwrap_or_default();
    prescriptions::history_of(
        db.lend().as_deref(),
        medic,
        &name,
        &records,
        &since,
        active_only,
    )
}

/// One prescription of the history: who issued it (by name) and when, its state, its medications
/// and what was sold of each, named by its folio. Not its signature, diagnosis, observations or
/// the patient's contact data (the consent is to see medications, docs/patients.md).
pub fn entry_json(e: &HistoryEntry) -> Value {
    let rx = &e.prescription;
    let (code, label) =
        crate::views::rx_json::public_status(rx.status.rx_status, rx.efirma.as_ref());
    let medications: Vec<Value> = rx
        .medications
        .iter()
        .map(|m| {
            json!({
                "id": m.id,
                "presentation": m.presentation,
                "drug": m.drug,
                "drug_upc": m.drug_upc,
                "instructions": m.instructions,
                "qty": m.qty,
                "qty_total": m.qty_total,
                "bought_qty": m.bought_qty,
            })
        })
        .collect();
    let events: Vec<Value> = e
        .events
        .iter()
        .map(|ev| {
            json!({
                "kind": match ev.kind {
                    LifecycleKind::Dispense => "dispense",
                    LifecycleKind::Rejection => "rejection",
                    LifecycleKind::Cancellation => "cancellation",
                },
                "at": ev.created_at,
                "pharmacy": ev.pharmacy.as_ref().map(|p| p.name.clone()),
                "items": ev.items.iter().map(|i| json!({"medication": i.medication, "qty": i.qty})).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "folio": folio::of(&rx.signature),
        "created_at": rx.created_at,
        "medic": {"name": e.medic_name},
        "hospital": rx.hospital,
        "rx_status": [code, label],
        "valid_until": rx.valid_until,
        "fills": rx.fills,
        "medications": medications,
        "events": events,
    })
}

/// The history as a FHIR R4 `Bundle` (`collection`): each prescription's resources as its pharmacy
/// bundle carries them (no national identifier of anyone: docs/fhir.md), each resource once, with
/// no contact data (`telecom`, `address` of the patient) and the prescription named by its folio
/// (`rx-folio`), never its signature.
pub fn fhir_bundle(entries: &[HistoryEntry], key: &str) -> Result<Value, Error> {
    let db = Db::open()?;
    let base = crate::http::base_url();
    let mut seen = std::collections::HashSet::new();
    let mut merged = Vec::new();
    for e in entries {
        let source =
            prescriptions::get_fhir_source(db.lend().as_deref(), &e.prescription.signature)?;
        let document: Value = serde_json::from_str(&source.document).unwrap_or(Value::Null);
        let bundle = crate::views::fhir_json::bundle(
            &e.prescription,
            &document,
            &source.dispenses,
            None,
            &base,
        );
        for entry in bundle["entry"].as_array().into_iter().flatten() {
            if seen.insert(entry["fullUrl"].as_str().unwrap_or_default().to_string()) {
                let mut entry = entry.clone();
                let resource = &mut entry["resource"];
                if resource["resourceType"] == "Patient"
                    && let Some(fields) = resource.as_object_mut()
                {
                    fields.remove("telecom");
                    fields.remove("address");
                }
                unsign(&mut entry, &e.prescription.signature);
                merged.push(entry);
            }
        }
    }
    let now = common::time::now_iso8601();
    Ok(json!({
        "resourceType": "Bundle",
        "id": format!("medication-history-{key}"),
        "meta": {"lastUpdated": now},
        "type": "collection",
        "timestamp": now,
        "entry": merged,
    }))
}

/// Replaces the prescription's signature wherever it stands in `value` by its folio, and names the
/// identifier systems that carried it `rx-folio`.
fn unsign(value: &mut Value, signature: &str) {
    match value {
        Value::String(s) if s.contains(signature) => {
            *s = s.replace(signature, folio::of(signature))
        }
        Value::String(s) if s.ends_with("/rx-signature") => {
            *s = s.replace("/rx-signature", "/rx-folio")
        }
        Value::Array(items) => items.iter_mut().for_each(|v| unsign(v, signature)),
        Value::Object(fields) => fields.values_mut().for_each(|v| unsign(v, signature)),
        _ => {}
    }
}

/// The active ingredients a medication names: its catalog name (else its presentation) up to the
/// first word that starts with a digit, split at `con`, `y`, `+` and `/`, lower-cased without
/// accents ("Amoxicilina con ácido clavulánico 875 mg/125 mg" → amoxicilina, acido clavulanico).
pub fn ingredients(m: &Medication) -> Vec<String> {
    let name = if m.drug.trim().is_empty() {
        &m.presentation
    } else {
        &m.drug
    };
    let words: Vec<String> = name
        .split_whitespace()
        .take_while(|w| !w.starts_with(|c: char| c.is_ascii_digit()))
        .map(|w| fold(w.trim_matches(|c: char| c == ',' || c == ';')))
        .collect();
    let joined = words.join(" ");
    joined
        .split(['+', '/'])
        .flat_map(|part| part.split(" con ").flat_map(|p| p.split(" y ")))
        .map(|p| p.trim().to_string())
        .filter(|p| p.len() > 2)
        .collect()
}

/// Lower case, Spanish accents removed.
fn fold(word: &str) -> String {
    word.chars()
        .flat_map(char::to_lowercase)
        .map(|c| match c {
            'á' => 'a',
            'é' => 'e',
            'í' => 'i',
            'ó' => 'o',
            'ú' | 'ü' => 'u',
            other => other,
        })
        .collect()
}

/// The create's warnings: for each new medication, each active prescription of another medic (in
/// `active`, the person's history, active only) with an active ingredient in common.
pub fn warnings(new: &[Medication], active: &[HistoryEntry]) -> Vec<Value> {
    let mut out = Vec::new();
    for m in new {
        let mine = ingredients(m);
        for e in active {
            for other in &e.prescription.medications {
                let shared: Vec<&String> = ingredients(other)
                    .iter()
                    .filter_map(|i| mine.iter().find(|x| *x == i))
                    .collect();
                let Some(ingredient) = shared.first() else {
                    continue;
                };
                out.push(json!({
                    "code": "same_active_ingredient",
                    "message": format!(
                        "\"{}\" has the active ingredient {ingredient}, as \"{}\" of an active \
                         prescription by {} of {}.",
                        m.presentation, other.presentation, e.medic_name,
                        e.prescription.created_at.get(..10).unwrap_or_default()
                    ),
                    "ingredient": ingredient,
                    "medication": m.id,
                    "other": {
                        "folio": folio::of(&e.prescription.signature),
                        "created_at": e.prescription.created_at,
                        "medic": {"name": e.medic_name},
                        "presentation": other.presentation,
                    },
                }));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn med(drug: &str, presentation: &str) -> Medication {
        Medication {
            id: 1,
            presentation: presentation.into(),
            instructions: String::new(),
            qty: 1,
            drug_upc: String::new(),
            category: common::codes::DrugCategory::StandardDrug,
            drug: drug.into(),
            cost: 0.0,
            bought: false,
            bought_qty: 0,
            order_id: 0,
            qty_label: String::new(),
            fraccion: None,
            antibiotic: None,
            qty_total: 1,
            substitution_allowed: true,
        }
    }

    #[test]
    fn the_signature_is_replaced_by_the_folio_everywhere() {
        let sig = "ab".repeat(32);
        let mut v = json!({
            "groupIdentifier": {"system": "https://receta.mx/fhir/sid/rx-signature", "value": sig},
            "note": [format!("https://x/rx/{sig}")],
        });
        unsign(&mut v, &sig);
        let text = v.to_string();
        assert!(
            !text.contains(&sig) && !text.contains("rx-signature"),
            "{text}"
        );
        assert_eq!(v["groupIdentifier"]["value"], "abababababab");
    }

    #[test]
    fn ingredients_come_from_the_name_before_the_strength() {
        assert_eq!(
            ingredients(&med(
                "Amoxicilina con ácido clavulánico 875 mg/125 mg, 10 tabletas",
                ""
            )),
            ["amoxicilina", "acido clavulanico"]
        );
        assert_eq!(
            ingredients(&med("", "Paracetamol 500 mg tabletas")),
            ["paracetamol"]
        );
        assert_eq!(
            ingredients(&med("Diclofenaco sódico 100 mg", "x")),
            ["diclofenaco sodico"]
        );
    }
}
