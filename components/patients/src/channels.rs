//! How a patient is reached (columns of `patients`, migrations 0029 and 0037; docs/patients.md,
//! "How the patient is reached"): the phone in E.164 (parsed when written: loading libphonenumber's
//! metadata costs an instance ~0.1 s the first time, which no read pays), the channels chosen (or
//! the default), and the WhatsApp opt-in with who recorded it, which the patient may withdraw from
//! their page.

use common::codes::{Channel, Coded};
use common::db::{Db, Row, int, opt_text, text};
use common::fields::is_valid_email;
use common::types::Error;

use crate::bindings::exports::receta::patients::patients::OptIn;

/// A patient row's contact columns (`patients`): the chosen codes and the opt-in while it is not
/// withdrawn.
pub const COLUMNS: &str = "patients.phone_e164 AS phone_e164, patients.channels AS channel_codes, \
    CASE WHEN patients.whatsapp_opt_in_at IS NOT NULL AND (patients.whatsapp_withdrawn_at IS NULL \
      OR patients.whatsapp_withdrawn_at < patients.whatsapp_opt_in_at) \
      THEN patients.whatsapp_opt_in_at END AS opt_in_at, \
    patients.whatsapp_opt_in_by AS opt_in_by";

/// `?1` patient, `?2` the codes or NULL (keep), `?3` opt-in at or NULL (keep), `?4` opt-in by,
/// `?5` withdrawn at or NULL (keep), `?6` withdrawn by, `?7` the phone in E.164 ('' when it does
/// not parse) or NULL (keep).
const UPDATE: &str = "UPDATE patients SET channels = COALESCE(?2, channels), \
    phone_e164 = COALESCE(?7, phone_e164), \
    whatsapp_opt_in_at = COALESCE(?3, whatsapp_opt_in_at), \
    whatsapp_opt_in_by = COALESCE(?4, whatsapp_opt_in_by), \
    whatsapp_withdrawn_at = COALESCE(?5, whatsapp_withdrawn_at), \
    whatsapp_withdrawn_by = COALESCE(?6, whatsapp_withdrawn_by) WHERE id = ?1";

/// `?1` signature: the prescription's patient record and its opt-in.
fn of_prescription_sql() -> String {
    format!(
        "SELECT patients.id, {COLUMNS} FROM prescriptions p \
         JOIN patients ON patients.id = p.patient_id WHERE p.signature = ?1"
    )
}

/// The channels of a patient row (with `COLUMNS` and `email`): as chosen, or the default.
pub fn from_row(r: &Row, email: &str) -> anyhow::Result<Vec<Channel>> {
    Ok(match r.opt_string("channel_codes")? {
        Some(codes) => codes.split(',').filter_map(Channel::parse).collect(),
        None if is_valid_email(email) => vec![Channel::Email],
        None => Vec::new(),
    })
}

/// The phone of a patient row (with `COLUMNS` and `phone`) in E.164: as stored when written, or
/// parsed now for a patient written before 0029.
pub fn e164_from_row(r: &Row, phone: &str) -> anyhow::Result<Option<String>> {
    Ok(e164_of(r.opt_string("phone_e164")?, phone))
}

/// The stored E.164 (`''`: the phone does not parse), or `phone` parsed now when none was stored.
fn e164_of(stored: Option<String>, phone: &str) -> Option<String> {
    match stored {
        Some(stored) => Some(stored).filter(|s| !s.is_empty()),
        None => common::phone::e164(phone),
    }
}

const STORED_E164: &str = "SELECT phone_e164 FROM patients WHERE id = ?1";

/// Patient `id`'s phone (`phone`) in E.164, as `e164_from_row` reads it.
pub fn stored_e164(db: &Db, id: i64, phone: &str) -> Result<Option<String>, Error> {
    let stored = db.query_opt(STORED_E164, &[int(id)], |r| r.opt_string("phone_e164"))?;
    Ok(e164_of(stored.flatten(), phone))
}

/// The opt-in of a patient row (with `COLUMNS`), while not withdrawn.
pub fn opt_in_from_row(r: &Row) -> anyhow::Result<Option<OptIn>> {
    Ok(match r.opt_string("opt_in_at")? {
        Some(at) => Some(OptIn {
            at,
            by: r.opt_string("opt_in_by")?.unwrap_or_default(),
        }),
        None => None,
    })
}

/// `chosen` as stored (duplicates removed, in the API's order) if the patient can be reached on
/// each (`e164`: the phone parsed, if it does): `invalid` on `channels` saying why not.
pub fn check(chosen: &[Channel], email: &str, e164: Option<&str>) -> Result<String, Error> {
    for channel in chosen {
        match channel {
            Channel::Email if !is_valid_email(email) => {
                return Err(Error::field(
                    "channels",
                    "`email` needs an email address in the patient's `email`.",
                ));
            }
            Channel::Sms | Channel::Whatsapp if e164.is_none() => {
                return Err(Error::field(
                    "channels",
                    format!(
                        "`{}` needs a phone number: the patient's `phone` does not parse as one \
                         (`phone_e164` is null).",
                        channel.code()
                    ),
                ));
            }
            _ => {}
        }
    }
    Ok(Channel::ALL
        .iter()
        .filter(|c| chosen.contains(c))
        .map(|c| c.code())
        .collect::<Vec<_>>()
        .join(","))
}

/// What a write changes of how a patient is reached; `None` keeps each as it is.
#[derive(Default)]
pub struct Change<'a> {
    /// The phone just written, parsed: `Some(None)` when it does not parse.
    pub e164: Option<Option<&'a str>>,
    /// The chosen channels, from `check`.
    pub codes: Option<&'a str>,
    /// True: the opt-in recorded now by `by`; false: withdrawn now by `by`.
    pub opt_in: Option<bool>,
}

/// Records `change` for patient `id`, made by `by`.
pub fn write(db: &Db, id: i64, change: &Change, by: &str) -> Result<(), Error> {
    let Change {
        e164,
        codes,
        opt_in,
    } = change;
    if e164.is_none() && codes.is_none() && opt_in.is_none() {
        return Ok(());
    }
    let now = common::time::now_iso8601();
    let (given, withdrawn) = match opt_in {
        Some(true) => (Some(now.as_str()), None),
        Some(false) => (None, Some(now.as_str())),
        None => (None, None),
    };
    db.execute(
        UPDATE,
        &[
            int(id),
            opt_text(*codes),
            opt_text(given),
            opt_text(given.map(|_| by)),
            opt_text(withdrawn),
            opt_text(withdrawn.map(|_| by)),
            opt_text(e164.map(|e| e.unwrap_or_default())),
        ],
    )?;
    Ok(())
}

/// The opt-in of the patient of prescription `signature`; see `whatsapp-opt-in-of` in the WIT.
pub fn opt_in_of(signature: &str) -> Result<Option<OptIn>, Error> {
    let db = Db::open()?;
    db.query_opt(&of_prescription_sql(), &[text(signature)], opt_in_from_row)?
        .ok_or_else(Error::not_found)
}

/// The patient withdraws their opt-in from their page; see `withdraw-whatsapp` in the WIT.
pub fn withdraw(signature: &str) -> Result<(), Error> {
    let db = Db::open()?;
    db.transaction(|db| -> Result<(), Error> {
        let (id, opt_in) = db
            .query_opt(&of_prescription_sql(), &[text(signature)], |r| {
                Ok((r.i64("id")?, opt_in_from_row(r)?))
            })?
            .ok_or_else(Error::not_found)?;
        match opt_in {
            Some(_) => {
                let change = Change {
                    opt_in: Some(false),
                    ..Change::default()
                };
                write(db, id, &change, "patient")
            }
            None => Ok(()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phone_channel_needs_a_phone_that_parses() {
        assert!(check(&[Channel::Sms], "", None).is_err());
        assert!(check(&[Channel::Whatsapp], "", None).is_err());
        assert!(check(&[Channel::Email], "no-es-correo", Some("+525512345678")).is_err());
        assert_eq!(
            check(
                &[
                    Channel::Whatsapp,
                    Channel::Email,
                    Channel::Sms,
                    Channel::Email
                ],
                "ana@example.mx",
                Some("+525512345678")
            )
            .unwrap(),
            "email,sms,whatsapp"
        );
        assert_eq!(check(&[], "", None).unwrap(), "");
    }
}
