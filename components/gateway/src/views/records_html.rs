//! The patient's page of their other records (`/rx/<signature>/records`, docs/patients.md, "Who
//! speaks for whom"): the records this page proved the person's, a button that sends a code to the
//! email each other record's medic recorded, the form to enter one, and a button to undo a link.

use common::html::escape;

use crate::bindings::patients::LinkedRecord;
use crate::views::landing_html::{counter_page, spanish_date};

/// What the page says the codes are for, and what they are not.
const EXPLAIN: &str = "<p>Si otros médicos te hicieron recetas con tu CURP, puedes unirlas a esta \
    receta: te enviamos un código al correo que cada médico anotó en tu expediente y lo escribes \
    aquí. Así, el código para la farmacia y los permisos que des en esta receta incluirán esas \
    recetas. Tu CURP sola no basta: cualquiera puede escribirla.</p>\n";

/// The page: the linked records and the forms (`sent`: codes were just asked for).
pub fn page(signature: &str, records: &[LinkedRecord], sent: bool) -> String {
    let sig = escape(signature);
    let mut body = String::from(EXPLAIN);
    if sent {
        body.push_str(
            "<p id=\"enviados\">Si tienes recetas de otros médicos con un correo anotado, enviamos \
             un código a cada correo. Vence en 30 minutos.</p>\n",
        );
    }
    body.push_str(&format!(
        "<form method=\"post\" action=\"/rx/{sig}/records/codes\"><button class=\"btn\" \
         id=\"enviar-codigos\" type=\"submit\">Enviarme los códigos</button></form>\n\
         <form method=\"post\" action=\"/rx/{sig}/records\"><label for=\"codigo\">Código</label> \
         <input id=\"codigo\" name=\"code\" inputmode=\"numeric\" autocomplete=\"one-time-code\" \
         maxlength=\"6\" required> <button class=\"btn\" type=\"submit\">Unir</button></form>\n\
         <h2 id=\"unidas\">Recetas unidas a esta</h2>\n"
    ));
    if records.is_empty() {
        body.push_str("<p class=\"note\" id=\"sin-unir\">Ninguna todavía.</p>\n");
    }
    body.push_str("<ul class=\"branches\">\n");
    for r in records {
        body.push_str(&format!(
            "<li id=\"unida-{id}\">Tus recetas de {medic}<span class=\"meta\">Unidas el {at}, \
             con el código enviado a tu correo</span><form method=\"post\" \
             action=\"/rx/{sig}/records/{id}/unlink\"><button class=\"link\" type=\"submit\">\
             Separar</button></form></li>\n",
            id = r.id,
            medic = escape(&r.medic_name),
            at = escape(&spanish_date(&r.confirmed_at)),
        ));
    }
    body.push_str("</ul>\n");
    counter_page("Tus recetas de otros médicos", &body, signature)
}
