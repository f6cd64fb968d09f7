//! A pharmacy's status as the API and the patient's page write it (docs/lifecycle.md, "The
//! pharmacy's status"): `{id, status, label, pharmacy: {id, name}, pickup_code, reason,
//! created_at, text}`, `text` the sentence the patient reads ("Lista para recoger en Farmacia X,
//! código A7").

use serde::Serialize;

use common::codes::{Coded, Labelled};

use crate::bindings::prescriptions::StatusUpdate;

/// One status, borrowed from the record.
#[derive(Serialize)]
pub struct StatusJson<'a> {
    id: i64,
    status: &'static str,
    label: &'static str,
    pharmacy: PharmacyJson<'a>,
    pickup_code: Option<&'a str>,
    reason: Option<&'a str>,
    created_at: &'a str,
    text: String,
}

#[derive(Serialize)]
struct PharmacyJson<'a> {
    id: i64,
    name: &'a str,
}

pub fn status(u: &StatusUpdate) -> StatusJson<'_> {
    StatusJson {
        id: u.id,
        status: u.status.code(),
        label: u.status.label(),
        pharmacy: PharmacyJson {
            id: u.pharmacy.id,
            name: &u.pharmacy.name,
        },
        pickup_code: u.pickup_code.as_deref(),
        reason: u.reason.as_deref(),
        created_at: &u.created_at,
        text: sentence(u),
    }
}

/// Every status, oldest first.
pub fn history(updates: &[StatusUpdate]) -> Vec<StatusJson<'_>> {
    updates.iter().map(status).collect()
}

/// The latest status, or none.
pub fn latest(updates: &[StatusUpdate]) -> Option<StatusJson<'_>> {
    updates.last().map(status)
}

/// The sentence the patient reads, in Spanish.
pub fn sentence(u: &StatusUpdate) -> String {
    use common::codes::PharmacyStatus::*;
    let at = &u.pharmacy.name;
    match u.status {
        WithPharmacy => format!("Recibida en {at}"),
        Preparing => format!("En preparación en {at}"),
        ReadyToCollect => match u.pickup_code.as_deref() {
            Some(code) => format!("Lista para recoger en {at}, código {code}"),
            None => format!("Lista para recoger en {at}"),
        },
        ReadyToDispatch => format!("Lista para envío desde {at}"),
        Dispatched => format!("Enviada por {at}"),
        Collected => format!("Entregada por {at}"),
        NotDispensed => match u.reason.as_deref() {
            Some(why) => format!("No surtida en {at}: {why}"),
            None => format!("No surtida en {at}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::prescriptions::PharmacyRef;
    use common::codes::PharmacyStatus;

    fn update(status: PharmacyStatus, code: Option<&str>) -> StatusUpdate {
        StatusUpdate {
            id: 4,
            status,
            pharmacy: PharmacyRef {
                id: 2,
                name: "Farmacia Roma".into(),
                license: String::new(),
            },
            pickup_code: code.map(str::to_string),
            reason: None,
            created_at: "2026-11-28T20:00:00Z".into(),
        }
    }

    #[test]
    fn the_patient_reads_where_and_the_code() {
        let u = update(PharmacyStatus::ReadyToCollect, Some("A7"));
        let v = serde_json::to_value(status(&u)).unwrap();
        assert_eq!(v["status"], "ready_to_collect");
        assert_eq!(v["label"], "Lista para recoger");
        assert_eq!(
            v["pharmacy"],
            serde_json::json!({"id": 2, "name": "Farmacia Roma"})
        );
        assert_eq!(v["text"], "Lista para recoger en Farmacia Roma, código A7");
    }
}
