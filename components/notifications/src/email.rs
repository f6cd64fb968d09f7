//! The patient's email, as the relay takes it (decisions, "Events and delivery"):
//! `{"from", "to", "cc", "subject", "text", "html", "attachments": [{"filename", "content_type",
//! "content"}]}`, `content` in base64. In Spanish, with the medic's and hospital's names, the link to
//! the patient landing page (`cta_link`) and the PDF stored at issue attached.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::html::escape;
use serde_json::{Value, json};

/// What an email says and where it goes.
#[derive(Debug, Clone)]
pub struct Email<'a> {
    pub from: &'a str,
    pub to: &'a [String],
    pub cc: &'a [String],
    pub patient: &'a str,
    pub medic: &'a str,
    pub hospital: &'a str,
    pub signature: &'a str,
    pub cta_link: &'a str,
    /// The PDF stored at issue; `None` only for a prescription stored without one.
    pub pdf: Option<&'a [u8]>,
}

/// The relay's JSON body.
pub fn relay_body(e: &Email) -> Value {
    let subject = format!("Tu receta médica de {} — {}", e.medic, e.hospital);
    let greeting = greeting(e.patient);
    let attached = if e.pdf.is_some() {
        "Te enviamos adjunta, en PDF, la receta electrónica"
    } else {
        "Tienes una nueva receta electrónica"
    };
    let text = format!(
        "{greeting}\n\n\
         {attached} que te expidió {medic} en {hospital}.\n\n\
         Consulta tu receta y encuentra dónde surtir tus medicamentos en:\n{link}\n\n\
         Muestra la receta en la farmacia. Si no esperabas este correo, puedes ignorarlo.\n\n\
         Este mensaje se envió automáticamente; por favor no lo respondas.\n",
        medic = e.medic,
        hospital = e.hospital,
        link = e.cta_link,
    );
    let html = format!(
        "<!DOCTYPE html><html lang=\"es\"><body style=\"font-family:Helvetica,Arial,sans-serif;color:#222\">\
         <p>{greeting}</p>\
         <p>{attached} que te expidió <strong>{medic}</strong> en <strong>{hospital}</strong>.</p>\
         <p><a href=\"{link}\">Consulta tu receta y encuentra dónde surtir tus medicamentos</a></p>\
         <p>Muestra la receta en la farmacia. Si no esperabas este correo, puedes ignorarlo.</p>\
         <p style=\"color:#777;font-size:12px\">Este mensaje se envió automáticamente; por favor no lo respondas.</p>\
         </body></html>",
        greeting = escape(&greeting),
        medic = escape(e.medic),
        hospital = escape(e.hospital),
        link = escape(e.cta_link),
    );
    let attachments: Vec<Value> = e
        .pdf
        .map(|pdf| {
            json!({
                "filename": format!("receta-{}.pdf", common::folio::of(e.signature)),
                "content_type": "application/pdf",
                "content": STANDARD.encode(pdf),
            })
        })
        .into_iter()
        .collect();
    json!({
        "from": e.from,
        "to": e.to,
        "cc": e.cc,
        "subject": subject,
        "text": text,
        "html": html,
        "attachments": attachments,
    })
}

/// "Hola, <patient>:" (or "Hola:" without a name).
fn greeting(patient: &str) -> String {
    match patient.trim() {
        "" => "Hola:".to_string(),
        name => format!("Hola, {name}:"),
    }
}

/// What a pharmacy said, as the patient's message about it carries it.
#[derive(Debug, Clone)]
pub struct StatusNote<'a> {
    /// `ready_to_collect` or `not_dispensed`.
    pub status: &'a str,
    pub pharmacy: &'a str,
    pub pickup_code: Option<&'a str>,
    pub reason: Option<&'a str>,
}

/// The short email about a pharmacy's status: the pharmacy, the prescriber, the folio (the
/// signature's first 12 characters) and the link; no PDF, no medication, no diagnosis.
pub fn status_body(e: &Email, note: &StatusNote) -> Value {
    let folio = common::folio::of(e.signature);
    let greeting = greeting(e.patient);
    let (subject, said) = if note.status == "not_dispensed" {
        let why = note
            .reason
            .map(|r| format!(" Motivo: {r}."))
            .unwrap_or_default();
        (
            format!("{} no surtirá tu receta", note.pharmacy),
            format!(
                "{} no surtirá tu receta de {} (folio {folio}).{why} Puedes surtirla en otra farmacia.",
                note.pharmacy, e.medic
            ),
        )
    } else {
        let code = note
            .pickup_code
            .map(|c| format!(" Código para recogerla: {c}."))
            .unwrap_or_default();
        (
            format!("Tu receta está lista para recoger en {}", note.pharmacy),
            format!(
                "Tu receta de {} (folio {folio}) está lista para recoger en {}.{code}",
                e.medic, note.pharmacy
            ),
        )
    };
    let text = format!(
        "{greeting}\n\n{said}\n\nConsulta tu receta en:\n{link}\n\n\
         Este mensaje se envió automáticamente; por favor no lo respondas.\n",
        link = e.cta_link,
    );
    let html = format!(
        "<!DOCTYPE html><html lang=\"es\"><body style=\"font-family:Helvetica,Arial,sans-serif;color:#222\">\
         <p>{greeting}</p><p>{said}</p><p><a href=\"{link}\">Consulta tu receta</a></p>\
         <p style=\"color:#777;font-size:12px\">Este mensaje se envió automáticamente; por favor no lo respondas.</p>\
         </body></html>",
        greeting = escape(&greeting),
        said = escape(&said),
        link = escape(e.cta_link),
    );
    json!({
        "from": e.from,
        "to": e.to,
        "cc": e.cc,
        "subject": subject,
        "text": text,
        "html": html,
        "attachments": [],
    })
}

/// A code the person enters on another prescription's page to prove this record theirs
/// (docs/patients.md, "Who speaks for whom").
#[derive(Debug, Clone)]
pub struct LinkNote<'a> {
    pub code: &'a str,
}

/// The email carrying a link code: the code, the record's own medic, and what to do if it was not
/// the person. Nothing of the page it was asked on (the address may be a forger's, who must not
/// learn who else treats the person), no link (a link opens a prescription), no PDF, no medication.
pub fn link_code_body(e: &Email, note: &LinkNote) -> Value {
    let greeting = greeting(e.patient);
    let said = format!(
        "En la página de otra de tus recetas se pidió unir a ella tus recetas de {medic}. \
         Si fuiste tú, escribe este código en esa página: {code}. Vence en 30 minutos.",
        medic = e.medic,
        code = note.code,
    );
    let warn = "Si no fuiste tú, no compartas este código con nadie: alguien pudo escribir tu CURP \
        en un expediente que no es tuyo, y sin el código no verá nada de tus recetas.";
    let text = format!(
        "{greeting}\n\n{said}\n\n{warn}\n\n\
         Este mensaje se envió automáticamente; por favor no lo respondas.\n"
    );
    let html = format!(
        "<!DOCTYPE html><html lang=\"es\"><body style=\"font-family:Helvetica,Arial,sans-serif;color:#222\">\
         <p>{greeting}</p><p>{said}</p><p>{warn}</p>\
         <p style=\"color:#777;font-size:12px\">Este mensaje se envió automáticamente; por favor no lo respondas.</p>\
         </body></html>",
        greeting = escape(&greeting),
        said = escape(&said),
        warn = escape(warn),
    );
    json!({
        "from": e.from,
        "to": e.to,
        "cc": e.cc,
        "subject": format!("Tu código para unir tus recetas: {}", note.code),
        "text": text,
        "html": html,
        "attachments": [],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn email<'a>(to: &'a [String], cc: &'a [String], pdf: Option<&'a [u8]>) -> Email<'a> {
        Email {
            from: "Receta <recetas@example.mx>",
            to,
            cc,
            patient: "Juan Pérez",
            medic: "Dra. Ana <Núñez>",
            hospital: "Clínica Roma & Asociados",
            signature: "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12",
            cta_link: "https://receta.mx/rx/ab12",
            pdf,
        }
    }

    #[test]
    fn has_every_field_of_the_relay_contract() {
        let to = vec!["juan@example.mx".to_string()];
        let cc = vec!["tutor@example.mx".to_string()];
        let body = relay_body(&email(&to, &cc, Some(b"%PDF-1.7 test")));
        let keys: Vec<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for key in ["from", "to", "cc", "subject", "text", "html", "attachments"] {
            assert!(keys.contains(&key), "{key}");
        }
        assert_eq!(body["to"], json!(["juan@example.mx"]));
        assert_eq!(body["cc"], json!(["tutor@example.mx"]));
        let subject = body["subject"].as_str().unwrap();
        assert!(subject.contains("Dra. Ana <Núñez>") && subject.contains("Clínica Roma"));
        let text = body["text"].as_str().unwrap();
        assert!(text.contains("Hola, Juan Pérez:"), "{text}");
        assert!(text.contains("https://receta.mx/rx/ab12"));
        assert!(text.contains("Clínica Roma & Asociados"));
        let html = body["html"].as_str().unwrap();
        assert!(html.contains("Dra. Ana &lt;Núñez&gt;"), "{html}");
        assert!(html.contains("Clínica Roma &amp; Asociados"));
        assert!(html.contains("href=\"https://receta.mx/rx/ab12\""));
        let a = &body["attachments"][0];
        assert_eq!(a["filename"], "receta-ab12cd34ef56.pdf");
        assert_eq!(a["content_type"], "application/pdf");
        assert_eq!(
            STANDARD.decode(a["content"].as_str().unwrap()).unwrap(),
            b"%PDF-1.7 test"
        );
    }

    #[test]
    fn a_status_message_names_the_pharmacy_and_the_code_and_attaches_nothing() {
        let to = vec!["juan@example.mx".to_string()];
        let note = StatusNote {
            status: "ready_to_collect",
            pharmacy: "Farmacia <Roma>",
            pickup_code: Some("A7-22"),
            reason: None,
        };
        let body = status_body(&email(&to, &[], Some(b"%PDF")), &note);
        assert_eq!(body["attachments"], json!([]));
        let text = body["text"].as_str().unwrap();
        assert!(
            text.contains("(folio ab12cd34ef56) está lista para recoger en Farmacia <Roma>."),
            "{text}"
        );
        assert!(text.contains("Código para recogerla: A7-22."), "{text}");
        assert!(
            body["html"]
                .as_str()
                .unwrap()
                .contains("Farmacia &lt;Roma&gt;")
        );
        let note = StatusNote {
            status: "not_dispensed",
            reason: Some("sin existencias"),
            ..note
        };
        let body = status_body(&email(&to, &[], None), &note);
        let text = body["text"].as_str().unwrap();
        assert!(text.contains("no surtirá tu receta"), "{text}");
        assert!(text.contains("Motivo: sin existencias."), "{text}");
    }

    #[test]
    fn without_a_stored_pdf_nothing_is_attached() {
        let to = vec!["juan@example.mx".to_string()];
        let body = relay_body(&email(&to, &[], None));
        assert_eq!(body["attachments"], json!([]));
        assert!(!body["text"].as_str().unwrap().contains("adjunta"));
    }
}
