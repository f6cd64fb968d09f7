//! What an SMS or a WhatsApp message says: short, and never a diagnosis or a medication
//! (docs/notifications.md, "SMS and WhatsApp"). An issued prescription: its prescriber's name, its
//! folio and the patient's link. A pharmacy's status: the pharmacy, what it said (`lista para
//! recoger`, with its pickup code; `no surtida`), the folio and the link; a `not_dispensed`
//! status's reason (the pharmacy's own words, which may name a medication) stays on the page.

use serde_json::Value;

use common::db::{Db, int};

use crate::config::Config;
use crate::messages::rows::Row;

/// The prescription's signature, its medic's email and its signed document (for the name as
/// printed).
const SOURCE: &str = "SELECT p.signature, p.medic_email, d.canonical FROM prescriptions p \
    JOIN prescription_documents d ON d.prescription_id = p.id WHERE p.id = ?1";

/// What a message is about.
#[derive(Debug, Clone, PartialEq)]
pub enum About {
    /// The prescription was issued by `medic`.
    Issued { medic: String },
    /// `pharmacy` posted `status` (`ready_to_collect`, `not_dispensed`), with its pickup code.
    Status {
        pharmacy: String,
        status: String,
        pickup_code: Option<String>,
    },
}

/// What one message says, before a provider words it.
#[derive(Debug, Clone, PartialEq)]
pub struct Said {
    pub about: About,
    pub signature: String,
    /// The signature's first characters.
    pub folio: String,
    /// The patient's page (`<base_url>/rx/<signature>`).
    pub link: String,
}

/// What `row` says, read from its prescription.
pub fn said(db: &Db, config: &Config, row: &Row) -> anyhow::Result<Said> {
    let (signature, medic_email, canonical) = db
        .query_opt(SOURCE, &[int(row.prescription_id)], |r| {
            Ok((
                r.string("signature")?,
                r.string("medic_email")?,
                r.string("canonical")?,
            ))
        })?
        .ok_or_else(|| anyhow::anyhow!("prescription {} is gone", row.prescription_id))?;
    let document: Value = serde_json::from_str(&canonical).unwrap_or(Value::Null);
    let medic = document["medic"]["name"]
        .as_str()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or(&medic_email)
        .to_string();
    let status = &row.payload["status"];
    let about = match status["status"].as_str() {
        Some(code) => About::Status {
            pharmacy: status["pharmacy"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            status: code.to_string(),
            pickup_code: status["pickup_code"].as_str().map(str::to_string),
        },
        None => About::Issued { medic },
    };
    Ok(Said {
        about,
        folio: common::folio::of(&signature).to_string(),
        link: config.cta_link(&signature),
        signature,
    })
}

impl Said {
    /// The status in Spanish, as a message says it.
    pub fn status_words(status: &str) -> &'static str {
        match status {
            "ready_to_collect" => "está lista para recoger",
            "not_dispensed" => "no pudo surtirse",
            _ => "actualizada",
        }
    }

    /// The whole text of an SMS.
    pub fn sms(&self) -> String {
        match &self.about {
            About::Issued { medic } => format!(
                "Receta de {medic}, folio {}. Consúltela en {}",
                self.folio, self.link
            ),
            About::Status {
                pharmacy,
                status,
                pickup_code,
            } if status == "ready_to_collect" => {
                let code = pickup_code
                    .as_deref()
                    .map(|c| format!(" Código: {c}."))
                    .unwrap_or_default();
                format!(
                    "{pharmacy}: su receta folio {} está lista para recoger.{code} {}",
                    self.folio, self.link
                )
            }
            About::Status {
                pharmacy, status, ..
            } => format!(
                "{pharmacy}: su receta folio {} {}. Detalles: {}",
                self.folio,
                Self::status_words(status),
                self.link
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(about: About) -> Said {
        Said {
            about,
            signature: "ab".repeat(32),
            folio: "ab".repeat(6),
            link: format!("https://receta.example/rx/{}", "ab".repeat(32)),
        }
    }

    #[test]
    fn an_sms_says_who_the_folio_and_the_link_only() {
        let issued = said(About::Issued {
            medic: "Dra. Ana Pérez".into(),
        })
        .sms();
        assert_eq!(
            issued,
            format!(
                "Receta de Dra. Ana Pérez, folio abababababab. Consúltela en \
                 https://receta.example/rx/{}",
                "ab".repeat(32)
            )
        );
        let ready = said(About::Status {
            pharmacy: "Farmacia Roma".into(),
            status: "ready_to_collect".into(),
            pickup_code: Some("A7-42".into()),
        })
        .sms();
        assert!(ready.starts_with("Farmacia Roma: su receta folio abababababab está lista para recoger. Código: A7-42. https://"), "{ready}");
        let turned_away = said(About::Status {
            pharmacy: "Farmacia Roma".into(),
            status: "not_dispensed".into(),
            pickup_code: None,
        })
        .sms();
        assert!(
            turned_away.contains("no pudo surtirse. Detalles: https://"),
            "{turned_away}"
        );
    }
}
