//! `/api/v2/patient/` (medic token): create, list (a bare array), get and PATCH by `id` or `uid`.
//! A patient belongs to the medic who created it; for any other caller it does not exist (404).
//! `GET /api/v2/patient/<id or uid>/medication-history/` (and `fhir/`): the person's prescriptions
//! from other medics, only with their consent (docs/patients.md).

use serde_json::Value;

use common::codes::{Channel, Coded, Gender};
use common::db::Db;
use common::fields::Fields;
use common::types::Error;

use crate::bindings::patients::{self, NewPatient, PatientKey, PatientPatch};
use crate::http::{Request, Response};
use crate::input::body::search_param;
use crate::roles::MedicId;

/// Length limits, strictly under (characters).
const NAME: Option<usize> = Some(256);
const EMAIL: Option<usize> = Some(256);
const SHORT: Option<usize> = Some(32);
const STATE: Option<usize> = Some(128);
const LONG: Option<usize> = Some(512);
/// The patient `email` identifier: "more than 4 characters" (docs/api-notes.md).
const EMAIL_MIN: usize = 5;

/// The gender letters (decisions): M male (default), F female, O other, H hombre (male).
const BAD_GENDER: &str =
    "is not a valid choice. Allowed values: M, F, O, H (or male, female, other).";

/// `POST /api/v2/patient/` → 201 Patient.
/// With an `Idempotency-Key`, a retry answers the first response again (`idempotency`).
pub fn create(req: &Request, medic: MedicId) -> Result<Response, Error> {
    let medic = medic.get();
    crate::input::idempotency::once(req, &format!("medic:{medic}"), || create_for(req, medic))
}

fn create_for(req: &Request, medic: i64) -> Result<Response, Error> {
    let mut f = req.json_fields()?;
    let date_of_birth = f.required_birth_date("date_of_birth");
    let name = f.required_str("name", NAME);
    let email = email(&mut f, false).unwrap_or_default();
    let external_patient_file = f
        .optional_str("external_patient_file", NAME)
        .unwrap_or_default();
    let gender = gender(&mut f, false).unwrap_or(Gender::M);
    let curp = f.optional_str("curp", SHORT).unwrap_or_default();
    let phone = f.optional_str("phone", SHORT).unwrap_or_default();
    let address = f.optional_str("address", LONG).unwrap_or_default();
    let state = f.optional_str("state", STATE).unwrap_or_default();
    let zip_code = f.optional_str("zip_code", SHORT).unwrap_or_default();
    let location = f.optional_str("location", LONG).unwrap_or_default();
    let channels = channels(&mut f);
    let whatsapp_opt_in = f.optional_bool("whatsapp_opt_in").unwrap_or(false);
    let input = f.finish_then(|| {
        Some(NewPatient {
            name: name?,
            email,
            date_of_birth: date_of_birth?.to_string(),
            external_patient_file,
            gender,
            curp,
            phone,
            address,
            state,
            zip_code,
            location,
            channels,
            whatsapp_opt_in,
        })
    })?;
    let patient = patients::create_patient(Db::open()?.lend().as_deref(), medic, &input)?;
    Ok(Response::json(201, &patient))
}

/// `GET /api/v2/patient/?limit&offset&search` → 200 bare array of the medic's patients, oldest first;
/// `search` matches the name or the email (contains, `%` and `_` literally).
pub fn list(req: &Request, medic: MedicId) -> Result<Response, Error> {
    let medic = medic.get();
    let page = req.page()?;
    let search = search_param(req)?;
    let found = patients::list_patients(
        Db::open()?.lend().as_deref(),
        medic,
        search.as_deref(),
        page,
    )?;
    Ok(Response::json(200, &found))
}

/// `GET /api/v2/patient/<uid>` (or the integer id) → 200 Patient; 404 `{message}`.
pub fn get(medic: MedicId, segment: &str) -> Result<Response, Error> {
    let medic = medic.get();
    let key = path_key(segment)?;
    let db = Db::open()?;
    Ok(Response::json(
        200,
        &patients::get_owned(db.lend().as_deref(), medic, &key)?,
    ))
}

/// `GET /api/v2/patient/<id or uid>/medication-history/` → 200 `{count, results}`: the person's
/// prescriptions from other medics of the last twelve months, newest first, each logged in the
/// patient's access log; 403 `{message}` without the person's consent (saying how they give it);
/// 404 when the patient is not the medic's.
pub fn history(medic: MedicId, segment: &str) -> Result<Response, Error> {
    let key = path_key(segment)?;
    let entries = crate::views::history::read(medic.get(), None, &key, false)?;
    let results: Vec<Value> = entries
        .iter()
        .map(crate::views::history::entry_json)
        .collect();
    Ok(Response::json(
        200,
        &serde_json::json!({"count": results.len(), "results": results}),
    ))
}

/// `GET /api/v2/patient/<id or uid>/medication-history/fhir/` → 200 `application/fhir+json`: the
/// same history as a FHIR R4 `Bundle` (docs/fhir.md); refused as the JSON.
pub fn history_fhir(medic: MedicId, segment: &str) -> Result<Response, Error> {
    let key = path_key(segment)?;
    let entries = crate::views::history::read(medic.get(), None, &key, false)?;
    let bundle = crate::views::history::fhir_bundle(&entries, segment)?;
    let body = serde_json::to_vec(&bundle).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(Response::bytes(
        200,
        crate::views::fhir_json::FHIR_JSON,
        body,
    ))
}

/// `PATCH /api/v2/patient/<id or uid>/` → 202 Patient; 400 field errors; 404 `{message}`.
/// `id` and `uid` in the body are ignored (read-only).
pub fn update(req: &Request, medic: MedicId, segment: &str) -> Result<Response, Error> {
    let medic = medic.get();
    let key = path_key(segment)?;
    let mut f = req.json_fields()?;
    let date_of_birth = f.patch_birth_date("date_of_birth");
    let patch = PatientPatch {
        name: f.patch_str("name", NAME, false),
        email: email(&mut f, true),
        date_of_birth: date_of_birth.map(|d| d.to_string()),
        external_patient_file: f.patch_str("external_patient_file", NAME, true),
        gender: gender(&mut f, true),
        curp: f.patch_str("curp", SHORT, true),
        phone: f.patch_str("phone", SHORT, true),
        address: f.patch_str("address", LONG, true),
        state: f.patch_str("state", STATE, true),
        zip_code: f.patch_str("zip_code", SHORT, true),
        location: f.patch_str("location", LONG, true),
        channels: channels(&mut f),
        whatsapp_opt_in: f.optional_bool("whatsapp_opt_in"),
    };
    f.finish()?;
    let patient = patients::update_patient(Db::open()?.lend().as_deref(), medic, &key, &patch)?;
    Ok(Response::json(202, &patient))
}

/// A path segment naming a patient: all digits is the integer `id` (uids never are), anything else a
/// `uid`. A number too large, or a segment no uid could be, names nothing: 404.
pub fn path_key(segment: &str) -> Result<PatientKey, Error> {
    if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
        return segment
            .parse()
            .map(PatientKey::Id)
            .map_err(|_| Error::not_found());
    }
    if segment.is_empty() || segment.len() > 64 {
        return Err(Error::not_found());
    }
    Ok(PatientKey::Uid(segment.to_string()))
}

/// `email`: an address or another identifier of more than 4 characters; empty or absent is "none".
/// In a PATCH (`patch`), absent is `None` and null an error.
fn email(f: &mut Fields, patch: bool) -> Option<String> {
    let value = if patch {
        f.patch_str("email", EMAIL, true)?
    } else {
        f.optional_str("email", EMAIL)?
    };
    let value = value.trim().to_string();
    if !value.is_empty() && value.chars().count() < EMAIL_MIN {
        f.error(
            "email",
            format!("Ensure this field has at least {EMAIL_MIN} characters."),
        );
        return None;
    }
    Some(value)
}

/// `channels`: a list of `email`, `sms`, `whatsapp` (duplicates dropped; docs/patients.md, "How the
/// patient is reached"); absent or null is `None` (the default on create, unchanged in a PATCH).
/// Whether the patient can be reached on each is the patients component's check.
fn channels(f: &mut Fields) -> Option<Vec<Channel>> {
    let raw = f.raw("channels")?.clone();
    let items = match raw {
        Value::Null => return None,
        Value::Array(items) => items,
        other => {
            let kind = match other {
                Value::String(_) => "str",
                Value::Object(_) => "dict",
                _ => "scalar",
            };
            f.error(
                "channels",
                format!("Expected a list of items but got type \"{kind}\"."),
            );
            return None;
        }
    };
    let mut chosen = Vec::with_capacity(items.len());
    for item in &items {
        match item.as_str().and_then(Channel::parse) {
            Some(c) if chosen.contains(&c) => {}
            Some(c) => chosen.push(c),
            None => {
                let shown = item
                    .as_str()
                    .map_or_else(|| item.to_string(), str::to_string);
                f.error(
                    "channels",
                    format!(
                        "\"{shown}\" is not a valid choice. Allowed values: email, sms, whatsapp."
                    ),
                );
                return None;
            }
        }
    }
    Some(chosen)
}

/// `gender`: `M`, `F`, `O` or `H` (any case; stored as the capital letter sent), or `male`,
/// `female`, `other` (any case) stored as `M`, `F`, `O`. Absent is `None` (create defaults to `M`);
/// null is `None` on create and an error in a PATCH.
fn gender(f: &mut Fields, patch: bool) -> Option<Gender> {
    let raw = f.raw("gender")?.clone();
    let parsed = match &raw {
        Value::Null if !patch => return None,
        Value::String(s) => parse_gender(s),
        _ => None,
    };
    if parsed.is_none() {
        let shown = match &raw {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        f.error("gender", format!("\"{shown}\" {BAD_GENDER}"));
    }
    parsed
}

/// The stored letter for a gender value, if it is one of the allowed values.
pub fn parse_gender(s: &str) -> Option<Gender> {
    let upper = s.trim().to_uppercase();
    Gender::parse(&upper).or(match upper.as_str() {
        "MALE" => Some(Gender::M),
        "FEMALE" => Some(Gender::F),
        "OTHER" => Some(Gender::O),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(v: Value) -> Fields {
        Fields::from_json(v.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn genders_letters_kept_words_mapped() {
        for (sent, stored) in [
            ("M", "M"),
            ("F", "F"),
            ("O", "O"),
            ("H", "H"),
            ("h", "H"),
            ("male", "M"),
            ("FEMALE", "F"),
            ("Other", "O"),
            (" f ", "F"),
        ] {
            assert_eq!(parse_gender(sent).map(Coded::code), Some(stored), "{sent}");
        }
        for bad in ["", "X", "mujer", "hombre", "MF", "m ale"] {
            assert_eq!(parse_gender(bad), None, "{bad}");
        }
    }

    #[test]
    fn gender_field_errors_name_the_allowed_values() {
        let mut f = fields(json!({"gender": 1}));
        assert_eq!(gender(&mut f, false), None);
        let Err(Error::Invalid(e)) = f.finish() else {
            panic!()
        };
        assert!(e[0].messages[0].contains("M, F, O, H"), "{:?}", e);

        let mut f = fields(json!({"gender": null}));
        assert_eq!(gender(&mut f, false), None);
        assert!(f.finish().is_ok(), "null on create means the default");
        let mut f = fields(json!({"gender": null}));
        assert_eq!(gender(&mut f, true), None);
        assert!(f.finish().is_err(), "null in a PATCH is an error");
    }

    #[test]
    fn email_identifier_needs_more_than_four_characters() {
        let mut f = fields(json!({"email": "abcd"}));
        assert_eq!(email(&mut f, false), None);
        assert!(f.finish().is_err());
        for ok in ["abcde", "EXP-12345", "ana@b.mx", ""] {
            let mut f = fields(json!({ "email": ok }));
            assert_eq!(email(&mut f, false).as_deref(), Some(ok));
            assert!(f.finish().is_ok(), "{ok}");
        }
        let mut f = fields(json!({}));
        assert_eq!(email(&mut f, false), None);
    }

    #[test]
    fn channels_are_a_list_of_known_codes() {
        let mut f = fields(json!({"channels": ["sms", "email", "sms"]}));
        assert_eq!(channels(&mut f), Some(vec![Channel::Sms, Channel::Email]));
        assert!(f.finish().is_ok());
        for bad in [json!("sms"), json!(["fax"]), json!([1])] {
            let mut f = fields(json!({ "channels": bad }));
            assert_eq!(channels(&mut f), None);
            assert!(f.finish().is_err(), "{bad}");
        }
        let mut f = fields(json!({"channels": null}));
        assert_eq!(channels(&mut f), None);
        assert!(f.finish().is_ok());
    }

    #[test]
    fn path_keys() {
        assert!(matches!(path_key("42"), Ok(PatientKey::Id(42))));
        assert!(matches!(
            path_key("0f1e2d3c4b5a69788796a5b4c3d2e1f0"),
            Ok(PatientKey::Uid(_))
        ));
        assert!(path_key("99999999999999999999999").is_err());
        assert!(path_key(&"a".repeat(65)).is_err());
    }
}
