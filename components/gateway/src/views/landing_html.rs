//! The patient landing page (`<base_url>/rx/<signature>`), rendered on the server: Spanish, readable
//! on a phone, no script and no external asset. Pure: it takes the view and returns HTML, so the
//! escaping is unit-tested here.
//!
//! Every dynamic value goes through [`escape`]; the only links built from stored data are campaign
//! URLs that pass [`is_http_url`]. The one inline `<style>` is allowed by its SHA-256 in the
//! Content-Security-Policy ([`content_security_policy`]), so no inline script or style attribute would
//! run even if one slipped in.
//!
//! One file (over 500 lines): the patient's HTML page, markup and styles together, so the page reads top to bottom.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use common::codes::RxState;
use sha2::{Digest, Sha256};

use super::links::is_http_url;
use crate::bindings::campaigns::Campaign;
use crate::bindings::patients::{Grantee, PersonConsents};
use crate::bindings::prescriptions::{
    Constancia, ConstanciaStatus, EfirmaStatus, LandingRx, RxEfirma,
};
use common::html::escape;

/// The page's only style sheet. Its hash is in the CSP; change it freely, the hash follows.
pub const CSS: &str = "\
:root{color-scheme:light;--ink:#1b2a33;--muted:#5b6b75;--line:#d9e2e7;--bg:#f3f6f8;--card:#fff;\
--brand:#0b6e6e;--brand-dark:#075454;--soft:#e6f2f2}\
*{box-sizing:border-box}\
html{-webkit-text-size-adjust:100%}\
body{margin:0;background:var(--bg);color:var(--ink);\
font:16px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,sans-serif}\
main{max-width:40rem;margin:0 auto;padding:0 1rem 2rem}\
.top{background:var(--brand);color:#fff;margin:0 -1rem 1rem;padding:1.25rem 1rem 1.5rem}\
.brand{margin:0;font-size:.8rem;letter-spacing:.08em;text-transform:uppercase;opacity:.85}\
h1{margin:.25rem 0 .25rem;font-size:1.6rem;line-height:1.2}\
.lead{margin:0;opacity:.95}\
h2{font-size:1.15rem;margin:1.5rem 0 .5rem}\
h3{font-size:1.05rem;margin:0 0 .25rem;overflow-wrap:anywhere}\
.card{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:1rem;margin:0 0 .75rem}\
.card h2{margin-top:0}\
.facts{margin:0 0 1rem;display:grid;gap:.5rem}\
.facts div{display:flex;gap:.75rem}\
.facts dt{flex:0 0 4.5rem;color:var(--muted)}\
.facts dd{margin:0;font-weight:600;overflow-wrap:anywhere}\
.btn{display:block;text-align:center;background:var(--brand);color:#fff;text-decoration:none;\
font-weight:600;padding:.85rem 1rem;border-radius:10px;min-height:48px}\
.btn:hover,.btn:focus{background:var(--brand-dark)}\
.btn:focus-visible,.link:focus-visible,summary:focus-visible{outline:3px solid #f2b705;outline-offset:2px}\
.btn small{display:block;font-weight:400;opacity:.9}\
button.btn{width:100%;border:0;font:inherit;font-weight:600;cursor:pointer;margin:.5rem 0}\
button.link{border:0;background:none;font:inherit;font-weight:600;cursor:pointer}\
.code{font-size:2.4rem;font-weight:700;letter-spacing:.3em;text-align:center;margin:.5rem 0}\
.meds{list-style:none;margin:0;padding:0}\
.med p{margin:.35rem 0 0;overflow-wrap:anywhere}\
.label{display:block;font-size:.75rem;font-weight:600;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}\
.qty{font-weight:600;font-size:1.05rem}\
.drug{color:var(--muted);font-size:.9rem}\
.badge{display:inline-block;background:var(--soft);color:var(--brand-dark);font-size:.75rem;font-weight:600;\
border-radius:999px;padding:.1rem .6rem;margin:0 0 .4rem}\
.campaign.default{border:2px solid var(--brand)}\
.campaign p{margin:.25rem 0;overflow-wrap:anywhere}\
.campaign .btn{margin-top:.75rem}\
.link{display:inline-block;margin-top:.6rem;color:var(--brand-dark);font-weight:600;padding:.35rem 0}\
details{margin-top:.75rem;border-top:1px solid var(--line);padding-top:.5rem}\
summary{cursor:pointer;font-weight:600;color:var(--brand-dark);padding:.35rem 0}\
.branches{list-style:none;margin:.25rem 0 0;padding:0}\
.branches li{padding:.5rem 0;border-bottom:1px solid var(--line)}\
.branches li:last-child{border-bottom:0}\
.branches .meta{display:block;color:var(--muted);font-size:.9rem}\
.note{color:var(--muted);font-size:.9rem}\
footer{margin-top:2rem;color:var(--muted);font-size:.85rem}\
";

/// Up to this many branches are listed open; more are behind a `<details>` toggle.
const OPEN_BRANCHES: usize = 3;

/// `Content-Security-Policy` of every page: nothing but this page's own style sheet (by hash), images
/// from the service itself, forms posted only to the service itself (the counter code's), no
/// framing, no `<base>`.
pub fn content_security_policy() -> String {
    let hash = BASE64.encode(Sha256::digest(CSS.as_bytes()));
    format!(
        "default-src 'none'; style-src 'sha256-{hash}'; img-src 'self' data:; form-action 'self'; \
         frame-ancestors 'none'; base-uri 'none'"
    )
}

/// `2026-11-22T…` → `22 de noviembre de 2026` (the date printed on the PDF: the UTC day of issue).
pub fn spanish_date(timestamp: &str) -> String {
    let date = timestamp.get(..10).unwrap_or(timestamp);
    match common::time::Date::parse(date) {
        Some(d) => d.spanish_long(),
        None => date.to_string(),
    }
}

/// A byte count as a Spanish size: `812 bytes`, `45 KB`, `1,2 MB`.
pub fn size_label(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else if bytes < 1024 * 1024 {
        format!("{} KB", bytes.div_ceil(1024))
    } else {
        let tenths = (bytes * 10).div_ceil(1024 * 1024);
        format!("{},{} MB", tenths / 10, tenths % 10)
    }
}

/// The file name the PDF downloads as: `receta-<first 8 of the signature>.pdf`.
pub fn pdf_filename(signature: &str) -> String {
    let short: String = signature
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect();
    format!("receta-{short}.pdf")
}

fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"es-MX\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"robots\" content=\"noindex, nofollow\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <meta name=\"format-detection\" content=\"telephone=no\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n",
        escape(title)
    )
}

const FOOTER: &str = "<footer>\n<p>Este enlace es personal: quien lo tenga puede ver y descargar tu receta. \
    No lo publiques ni lo compartas.</p>\n<p>Receta electrónica emitida con Receta.</p>\n</footer>\n";

/// What the patient should know about the prescription's state, in Spanish; `None` while nothing
/// has happened to it.
fn state_note(state: RxState, reason: &str) -> Option<String> {
    let with_reason = |text: &str| {
        if reason.trim().is_empty() {
            text.to_string()
        } else {
            format!("{text} Motivo: {reason}")
        }
    };
    match state {
        RxState::Available => None,
        RxState::PartiallyDispensed => Some(
            "Una farmacia ya surtió parte de esta receta; puedes surtir lo que falta.".to_string(),
        ),
        RxState::Dispensed => Some("Esta receta ya fue surtida por completo.".to_string()),
        RxState::Rejected => Some(with_reason(
            "Una farmacia rechazó esta receta; ya no puede surtirse.",
        )),
        // The reason already reads as the medic's ("Cancelada por el médico: …").
        RxState::Cancelled => Some(if reason.trim().is_empty() {
            "Tu médico canceló esta receta; ya no puede surtirse.".to_string()
        } else {
            format!("Tu médico canceló esta receta; ya no puede surtirse. {reason}")
        }),
        RxState::Expired => Some(
            "Esta receta venció: ya no puede surtirse. Pide a tu médico una nueva.".to_string(),
        ),
    }
}

/// The landing page of a prescription: the medic, the date, the medications, the PDF download, and
/// the pharmacy campaigns (`default` first and marked as recommended).
pub fn page(rx: &LandingRx, campaigns: &[Campaign], whatsapp: bool) -> String {
    let mut html = head("Tu receta médica");
    html.push_str(
        "<body>\n<main>\n<header class=\"top\">\n<p class=\"brand\">Receta electrónica</p>\n",
    );
    if rx.patient_first_name.is_empty() {
        html.push_str("<h1>Tu receta médica</h1>\n");
    } else {
        html.push_str(&format!(
            "<h1>Hola, {}</h1>\n",
            escape(&rx.patient_first_name)
        ));
    }
    html.push_str(
        "<p class=\"lead\">Aquí está tu receta. Muéstrala en la farmacia o descárgala en PDF.</p>\n</header>\n",
    );

    // The prescription: who, where, when, and the download.
    let date = rx.created_at.get(..10).unwrap_or(&rx.created_at);
    html.push_str("<section class=\"card\" aria-labelledby=\"receta\">\n<h2 id=\"receta\">Tu receta</h2>\n<dl class=\"facts\">\n");
    html.push_str(&format!(
        "<div><dt>Médico</dt><dd>{}</dd></div>\n",
        escape(&rx.medic_name)
    ));
    if !rx.hospital_name.is_empty() {
        html.push_str(&format!(
            "<div><dt>Lugar</dt><dd>{}</dd></div>\n",
            escape(&rx.hospital_name)
        ));
    }
    html.push_str(&format!(
        "<div><dt>Fecha</dt><dd><time datetime=\"{}\">{}</time></dd></div>\n",
        escape(date),
        escape(&spanish_date(&rx.created_at))
    ));
    if let Some(until) = &rx.valid_until {
        html.push_str(&format!(
            "<div><dt>Válida hasta</dt><dd id=\"vigencia\"><time datetime=\"{}\">{}</time></dd></div>\n",
            escape(until),
            escape(&spanish_date(until))
        ));
    }
    if rx.fills > 1 {
        html.push_str(&format!(
            "<div><dt>Surtir</dt><dd>{} veces</dd></div>\n",
            rx.fills
        ));
    }
    let draft = super::rx_json::is_draft(rx.efirma.as_ref());
    let (_, state) = super::rx_json::public_status(rx.rx_status, rx.efirma.as_ref());
    html.push_str(&format!(
        "<div><dt>Estado</dt><dd id=\"estado\">{}</dd></div>\n</dl>\n",
        escape(state)
    ));
    if let Some(line) = constancia_line(&rx.constancia) {
        html.push_str(&format!(
            "<p class=\"note\" id=\"constancia\">{}</p>\n",
            escape(&line)
        ));
    }
    if let Some(line) = rx.efirma.as_ref().map(|e| efirma_html(e, &rx.medic_name)) {
        html.push_str(&format!("<p class=\"note\" id=\"efirma\">{line}</p>\n"));
    }
    if let Some(note) = state_note(rx.rx_status, &rx.reason_of_rejected) {
        html.push_str(&format!(
            "<p class=\"note\" id=\"aviso\">{}</p>\n",
            escape(&note)
        ));
    }
    // What the pharmacy last said (docs/lifecycle.md, "The pharmacy's status").
    if let Some(latest) = rx.status_updates.last() {
        html.push_str(&format!(
            "<p class=\"note\" id=\"farmacia-estado\">{} (<time datetime=\"{}\">{}</time>)</p>\n",
            escape(&super::status_json::sentence(latest)),
            escape(&latest.created_at),
            escape(&spanish_date(&latest.created_at)),
        ));
    }
    let signature = escape(&rx.signature);
    // A draft's PDF is not served (409) until its medic signs it.
    if !draft {
        html.push_str(&format!(
            "<a class=\"btn\" id=\"descargar\" href=\"/rx/{signature}/pdf\" download=\"{}\">Descargar receta\
             <small>PDF, {}</small></a>\n",
            escape(&pdf_filename(&rx.signature)),
            escape(&size_label(rx.raw_size))
        ));
    }
    html.push_str("</section>\n");

    // The medications: none for a draft, which is not a prescription yet.
    if draft {
        html.push_str(
            "<section aria-labelledby=\"medicamentos\">\n<h2 id=\"medicamentos\">Medicamentos</h2>\n\
             <p class=\"note\" id=\"sin-medicamentos\">Tus medicamentos aparecerán aquí cuando tu médico \
             firme la receta con su e.firma.</p>\n</section>\n",
        );
    } else {
        medications_section(&mut html, rx);
    }
    html.push_str(&sales_section(rx));

    // Where to buy them.
    html.push_str(
        "<section aria-labelledby=\"farmacias\">\n<h2 id=\"farmacias\">Dónde surtir tu receta</h2>\n",
    );
    if campaigns.is_empty() {
        html.push_str(
            "<p class=\"note\">Puedes surtir tu receta en la farmacia de tu preferencia: muestra esta \
             página o el PDF.</p>\n",
        );
    }
    for c in campaigns {
        html.push_str(&campaign_card(c));
    }
    html.push_str("</section>\n");
    if !draft {
        html.push_str(&counter_section(&signature));
    }
    if whatsapp {
        html.push_str(&whatsapp_section(&signature));
    }
    html.push_str(&access_section(rx));
    html.push_str(FOOTER);
    html.push_str("</main>\n</body>\n</html>\n");
    html
}

/// The WhatsApp opt-out, while the patient's opt-in is recorded (`signature` already escaped).
fn whatsapp_section(signature: &str) -> String {
    format!(
        "<section class=\"card\" aria-labelledby=\"whatsapp\">\n<h2 id=\"whatsapp\">Mensajes por \
         WhatsApp</h2>\n<p class=\"note\">Aceptaste recibir avisos de tus recetas por WhatsApp. Puedes \
         dejar de recibirlos cuando quieras.</p>\n<form method=\"post\" action=\"/rx/{signature}/whatsapp-opt-out\">\
         <button class=\"btn\" type=\"submit\" id=\"whatsapp-baja\">Dejar de recibir mensajes por WhatsApp</button>\
         </form>\n</section>\n"
    )
}

/// The counter code's form: the patient's prescriptions at any pharmacy with their CURP, no QR
/// (`signature` already escaped).
fn counter_section(signature: &str) -> String {
    format!(
        "<section class=\"card\" aria-labelledby=\"mostrador\">\n<h2 id=\"mostrador\">Surtir sin el \
         código QR</h2>\n<p class=\"note\">En cualquier farmacia pueden buscar tus recetas con tu CURP \
         y un código de 6 dígitos. El código dura 10 minutos y sirve una sola vez; pídelo cuando estés \
         en el mostrador.</p>\n<form method=\"post\" action=\"/rx/{signature}/counter-code\">\
         <button class=\"btn\" id=\"pedir-codigo\" type=\"submit\">Obtener código para la farmacia\
         </button></form>\n<a class=\"link\" id=\"permisos\" href=\"/rx/{signature}/consents\">Quién puede ver \
         tus recetas de otros médicos</a>\n<a class=\"link\" id=\"expedientes\" href=\"/rx/{signature}/records\">Unir \
         tus recetas de otros médicos</a>\n</section>\n"
    )
}

/// The page of the person's consents: what each one lets whom see, since when, with a button to
/// withdraw a standing one; and the two a patient can give from here (this prescription's medic,
/// and every medic of its hospital).
pub fn consents_page(signature: &str, c: &PersonConsents) -> String {
    let sig = escape(signature);
    let mut body = String::from(
        "<p>Si das permiso, el médico (o los médicos del hospital) que elijas podrá ver las recetas \
         que te hicieron otros médicos en los últimos 12 meses, con sus medicamentos y si ya se \
         surtieron, y recibirá un aviso si te receta algo con el mismo principio activo que una \
         receta vigente. Cada consulta aparece en el registro de accesos de tus recetas. Puedes \
         retirar el permiso cuando quieras.</p>\n",
    );
    let offers = [
        (
            "medic",
            c.issuing_medic,
            format!("Permitir a {}", c.issuing_medic_name),
        ),
        (
            "hospital",
            c.issuing_hospital,
            format!("Permitir a los médicos de {}", c.issuing_hospital_name),
        ),
    ];
    for (field, id, label) in offers {
        body.push_str(&format!(
            "<form method=\"post\" action=\"/rx/{sig}/consents\"><input type=\"hidden\" \
             name=\"{field}\" value=\"{id}\"><button class=\"btn\" type=\"submit\">{}</button></form>\n",
            escape(&label)
        ));
    }
    body.push_str("<h2 id=\"permisos\">Tus permisos</h2>\n");
    if c.consents.is_empty() {
        body.push_str("<p class=\"note\" id=\"sin-permisos\">No has dado ningún permiso.</p>\n");
    }
    body.push_str("<ul class=\"branches\">\n");
    for consent in &c.consents {
        let whom = match consent.grantee {
            Grantee::Medic(_) => format!("El médico {}", consent.grantee_name),
            Grantee::Hospital(_) => format!("Los médicos de {}", consent.grantee_name),
        };
        let state = match &consent.withdrawn_at {
            Some(at) => format!("Retirado el {}", spanish_date(at)),
            None => format!("Desde el {}", spanish_date(&consent.given_at)),
        };
        let state = match consent.given_here {
            true => format!("{state}, dado en esta receta"),
            false => format!(
                "{state}, dado en otra de tus recetas (folio {})",
                consent.given_on
            ),
        };
        body.push_str(&format!(
            "<li id=\"permiso-{}\">{}<span class=\"meta\">{}</span>",
            consent.id,
            escape(&whom),
            escape(&state)
        ));
        if consent.withdrawn_at.is_none() {
            body.push_str(&format!(
                "<form method=\"post\" action=\"/rx/{sig}/consents/{}/withdraw\"><button class=\"link\" \
                 type=\"submit\">Retirar permiso</button></form>",
                consent.id
            ));
        }
        body.push_str("</li>\n");
    }
    body.push_str("</ul>\n");
    counter_page("Quién puede ver tus recetas", &body, signature)
}

/// The page that shows a counter code: the code, until when (Mexico City time), and the way back.
pub fn counter_code_page(signature: &str, code: &str, expires_at: &str) -> String {
    let local = common::time::shift(expires_at, common::time::MEXICO_CITY_OFFSET_SECS)
        .and_then(|t| t.get(11..16).map(str::to_string))
        .unwrap_or_default();
    counter_page(
        "Tu código para la farmacia",
        &format!(
            "<p>Di este código y tu CURP en el mostrador de la farmacia:</p>\n\
             <p class=\"code\" id=\"codigo\">{}</p>\n<p class=\"note\" id=\"vence\">Vale hasta las \
             <time datetime=\"{}\">{}</time> (hora del centro de México) y sirve una sola vez. Si \
             pides otro, este deja de servir.</p>\n",
            escape(code),
            escape(expires_at),
            escape(&local)
        ),
        signature,
    )
}

/// The page that says why no counter code was given (`message` in Spanish or the API's words).
pub fn counter_refused_page(signature: &str, message: &str) -> String {
    counter_page(
        "No pudimos darte un código",
        &format!("<p id=\"aviso\">{}</p>\n", escape(message)),
        signature,
    )
}

pub fn counter_page(title: &str, body: &str, signature: &str) -> String {
    let mut html = head(title);
    html.push_str(&format!(
        "<body>\n<main>\n<header class=\"top\">\n<p class=\"brand\">Receta electrónica</p>\n\
         <h1>{}</h1>\n</header>\n<section class=\"card\">\n{body}\
         <a class=\"link\" href=\"/rx/{}\">Volver a tu receta</a>\n</section>\n",
        escape(title),
        escape(signature)
    ));
    html.push_str(FOOTER);
    html.push_str("</main>\n</body>\n</html>\n");
    html
}

/// "Constancia NOM-151: <TSA>, <time>" once stamped, a note while pending, nothing when disabled.
fn constancia_line(c: &Constancia) -> Option<String> {
    match (c.status, &c.tsa, &c.gen_time) {
        (ConstanciaStatus::Stamped, Some(tsa), Some(time)) => {
            Some(format!("Constancia NOM-151: {tsa}, {time}"))
        }
        (ConstanciaStatus::Disabled, ..) => None,
        _ => Some("Constancia NOM-151: en trámite con la autoridad de sellado de tiempo.".into()),
    }
}

/// The medications of an issued prescription, each a card.
fn medications_section(html: &mut String, rx: &LandingRx) {
    html.push_str(&format!(
        "<section aria-labelledby=\"medicamentos\">\n<h2 id=\"medicamentos\">Medicamentos ({})</h2>\n<ol class=\"meds\">\n",
        rx.medications.len()
    ));
    for m in &rx.medications {
        html.push_str("<li class=\"card med\">\n");
        html.push_str(&format!("<h3>{}</h3>\n", escape(&m.presentation)));
        if !m.drug.is_empty() && m.drug != m.presentation {
            html.push_str(&format!("<p class=\"drug\">{}</p>\n", escape(&m.drug)));
        }
        html.push_str(&format!(
            "<p class=\"qty\"><span class=\"label\">Cantidad</span>{}</p>\n",
            escape(&m.qty_label)
        ));
        if m.antibiotic == Some(true) {
            html.push_str("<p class=\"drug\">Antibiótico</p>\n");
        }
        if !m.substitution_allowed {
            html.push_str(
                "<p class=\"drug\" id=\"no-sustituible\">No sustituible: surte exactamente este \
                 medicamento</p>\n",
            );
        }
        if m.bought_qty > 0 {
            html.push_str(&format!(
                "<p class=\"qty\"><span class=\"label\">Surtido</span>{} de {}</p>\n",
                m.bought_qty, m.qty_total
            ));
        }
        html.push_str(&format!(
            "<p class=\"how\"><span class=\"label\">Indicaciones</span>{}</p>\n</li>\n",
            escape(&m.instructions)
        ));
    }
    html.push_str("</ol>\n</section>\n");
}

/// The prescriber's e.firma, as HTML: who signed, or that the prescription awaits the signature (a
/// draft cannot be dispensed) or never got it (fixed text, its apostrophe kept as is).
fn efirma_html(e: &RxEfirma, medic: &str) -> String {
    match (e.status, &e.signed_at) {
        (EfirmaStatus::Signed, Some(at)) => escape(&format!(
            "Firmada con e.firma de {medic}, RFC {}, certificado {}, el {at}.",
            e.rfc, e.serial
        )),
        (EfirmaStatus::Expired, _) => {
            "Esta receta nunca fue firmada con la e.firma de su médico y \
            venció sin emitirse: no puede surtirse (the draft expired awaiting the prescriber's \
            e.firma)."
                .into()
        }
        _ => "Esta receta espera la e.firma de su médico: todavía no puede surtirse (awaiting the \
              prescriber's e.firma)."
            .into(),
    }
}

/// The seal of each sale: when, which pharmacy (name and license), what it sold.
fn sales_section(rx: &LandingRx) -> String {
    if rx.sales.is_empty() {
        return String::new();
    }
    let mut html = String::from(
        "<section aria-labelledby=\"surtidos\">\n<h2 id=\"surtidos\">Surtidos</h2>\n<ol class=\"meds\" id=\"sellos\">\n",
    );
    for sale in &rx.sales {
        let license = if sale.pharmacy_license.is_empty() {
            String::new()
        } else {
            format!(" · Licencia {}", escape(&sale.pharmacy_license))
        };
        html.push_str(&format!(
            "<li class=\"card med\">\n<h3>{}{license}</h3>\n<p class=\"qty\"><span class=\"label\">Fecha</span>\
             <time datetime=\"{}\">{}</time></p>\n",
            escape(&sale.pharmacy_name),
            escape(&sale.sold_at),
            escape(
                &common::time::mexico_city_date(&sale.sold_at)
                    .map(|d| d.spanish_long())
                    .unwrap_or_default()
            ),
        ));
        for line in &sale.lines {
            html.push_str(&format!(
                "<p class=\"how\"><span class=\"label\">{}</span>{}</p>\n",
                escape(&line.presentation),
                if line.qty == 1 {
                    "1 caja".to_string()
                } else {
                    format!("{} cajas", line.qty)
                }
            ));
        }
        html.push_str("</li>\n");
    }
    html.push_str("</ol>\n</section>\n");
    html
}

/// Who looked at or changed the prescription, newest first (the access log; this page's own views
/// are not in it).
fn access_section(rx: &LandingRx) -> String {
    let mut html = String::from(
        "<section aria-labelledby=\"accesos\">\n<h2 id=\"accesos\">Quién ha usado tu receta</h2>\n",
    );
    if rx.access_log.is_empty() {
        html.push_str(
            "<p class=\"note\">Nadie la ha consultado todavía: ni farmacias, ni tu médico, ni el \
             administrador del servicio.</p>\n</section>\n",
        );
        return html;
    }
    html.push_str("<ol class=\"branches\" id=\"bitacora\">\n");
    for entry in &rx.access_log {
        html.push_str(&format!(
            "<li><time datetime=\"{}\">{}</time></li>\n",
            escape(&entry.at),
            escape(&entry.text)
        ));
    }
    html.push_str("</ol>\n</section>\n");
    html
}

fn campaign_card(c: &Campaign) -> String {
    let name = escape(&c.display_name);
    let mut html = String::new();
    if c.is_default {
        html.push_str(
            "<article class=\"card campaign default\">\n<p class=\"badge\">Recomendada</p>\n",
        );
    } else {
        html.push_str("<article class=\"card campaign\">\n");
    }
    html.push_str(&format!("<h3>{name}</h3>\n"));
    if !c.display_phone.is_empty() {
        html.push_str(&format!("<p>Tel. {}</p>\n", escape(&c.display_phone)));
    }
    if !c.display_contact.is_empty() {
        html.push_str(&format!("<p>{}</p>\n", escape(&c.display_contact)));
    }
    // Only http(s) URLs become links (`landing_view` means: stay here).
    if is_http_url(&c.cta_link) {
        html.push_str(&format!(
            "<a class=\"btn\" href=\"{}\" rel=\"noopener noreferrer\" target=\"_blank\">Surtir con {name}</a>\n",
            escape(&c.cta_link)
        ));
    }
    if is_http_url(&c.main_site_redirect) {
        html.push_str(&format!(
            "<a class=\"link\" href=\"{}\" rel=\"noopener noreferrer\" target=\"_blank\">Sitio web de {name}</a>\n",
            escape(&c.main_site_redirect)
        ));
    }
    if !c.branches.is_empty() {
        let label = if c.branches.len() == 1 {
            "Sucursal"
        } else {
            "Sucursales"
        };
        // A short list is open; a long one is a tap away.
        let open = if c.branches.len() <= OPEN_BRANCHES {
            " open"
        } else {
            ""
        };
        html.push_str(&format!(
            "<details{open}>\n<summary>{label} ({})</summary>\n<ul class=\"branches\">\n",
            c.branches.len()
        ));
        for b in &c.branches {
            html.push_str(&format!("<li><strong>{}</strong>", escape(&b.name)));
            let meta: Vec<String> = [&b.address, &b.estado, &b.formato]
                .into_iter()
                .filter(|s| !s.is_empty())
                .map(|s| escape(s))
                .collect();
            if !meta.is_empty() {
                html.push_str(&format!("<span class=\"meta\">{}</span>", meta.join(" · ")));
            }
            html.push_str(&format!(
                "<span class=\"meta\">Sucursal núm. {}</span></li>\n",
                b.determinante
            ));
        }
        html.push_str("</ul>\n</details>\n");
    }
    html.push_str("</article>\n");
    html
}

/// The friendly page for a link that names no prescription (404).
pub fn not_found_page() -> String {
    let mut html = head("Receta no encontrada");
    html.push_str(
        "<body>\n<main>\n<header class=\"top\">\n<p class=\"brand\">Receta electrónica</p>\n\
         <h1>No encontramos esta receta</h1>\n\
         <p class=\"lead\">El enlace no corresponde a ninguna receta.</p>\n</header>\n\
         <section class=\"card\">\n<p>Revisa que hayas abierto el enlace completo, tal como lo recibiste \
         por correo o mensaje: a veces se corta al copiarlo.</p>\n\
         <p>Si sigue sin abrir, pide a tu médico que te envíe la receta de nuevo.</p>\n</section>\n",
    );
    html.push_str(FOOTER);
    html.push_str("</main>\n</body>\n</html>\n");
    html
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::campaigns::Branch;
    use crate::bindings::prescriptions::Medication;

    fn medication(presentation: &str, instructions: &str) -> Medication {
        Medication {
            id: 1,
            presentation: presentation.into(),
            instructions: instructions.into(),
            qty: 2,
            drug_upc: String::new(),
            category: common::codes::DrugCategory::StandardDrug,
            drug: String::new(),
            cost: 0.0,
            bought: false,
            bought_qty: 0,
            order_id: 0,
            qty_label: "2 cajas".into(),
            fraccion: None,
            antibiotic: None,
            qty_total: 2,
            substitution_allowed: true,
        }
    }

    fn rx() -> LandingRx {
        LandingRx {
            signature: "ab".repeat(32),
            raw_size: 46_100,
            created_at: "2026-11-22T03:30:00.123456Z".into(),
            medic_name: "Dr. José Núñez".into(),
            hospital_name: "Clínica Roma".into(),
            patient_first_name: "Juan".into(),
            medications: vec![medication("Paracetamol 500 mg", "1 cada 8 horas")],
            rx_status: RxState::Available,
            reason_of_rejected: String::new(),
            seal: None,
            valid_until: None,
            fills: 1,
            sales: Vec::new(),
            status_updates: Vec::new(),
            access_log: Vec::new(),
            constancia: Constancia {
                status: ConstanciaStatus::Disabled,
                gen_time: None,
                tsa: None,
                digest: "ab".repeat(32),
            },
            efirma: None,
        }
    }

    #[test]
    fn the_page_says_whether_the_medic_signed_with_the_efirma() {
        let mut r = rx();
        assert!(!page(&r, &[], false).contains("e.firma"));
        assert!(page(&r, &[], false).contains("id=\"descargar\""));
        r.efirma = Some(RxEfirma {
            status: EfirmaStatus::AwaitingSignature,
            rfc: "HEGT7610034S2".into(),
            serial: "30001000000500000001".into(),
            signed_at: None,
            to_sign: None,
        });
        let html = page(&r, &[], false);
        assert!(html.contains("awaiting the prescriber's e.firma"), "{html}");
        assert!(!html.contains("id=\"descargar\""), "no PDF for a draft");
        // Not "Disponible", and no medication named until it is issued.
        assert!(
            html.contains("<dd id=\"estado\">Pendiente de la e.firma del médico</dd>"),
            "{html}"
        );
        assert!(!html.contains("Disponible"), "{html}");
        assert!(html.contains("id=\"sin-medicamentos\""), "{html}");
        for m in &r.medications {
            assert!(!html.contains(&escape(&m.presentation)), "{html}");
        }
        r.efirma = Some(RxEfirma {
            status: EfirmaStatus::Signed,
            signed_at: Some("2026-11-28T03:00:00Z".into()),
            ..r.efirma.unwrap()
        });
        let html = page(&r, &[], false);
        assert!(
            html.contains("Firmada con e.firma de Dr. José Núñez, RFC HEGT7610034S2, certificado 30001000000500000001"),
            "{html}"
        );
        assert!(html.contains("<dd id=\"estado\">Disponible</dd>"), "{html}");
        assert!(!html.contains("id=\"sin-medicamentos\""), "{html}");
    }

    #[test]
    fn the_page_shows_the_constancia_once_stamped() {
        let mut r = rx();
        assert!(!page(&r, &[], false).contains("Constancia NOM-151"));
        r.constancia.status = ConstanciaStatus::Pending;
        assert!(page(&r, &[], false).contains("Constancia NOM-151: en trámite"));
        r.constancia = Constancia {
            status: ConstanciaStatus::Stamped,
            gen_time: Some("2026-11-27T23:05:01Z".into()),
            tsa: Some("PSC <Ejemplo>".into()),
            digest: "ab".repeat(32),
        };
        let html = page(&r, &[], false);
        assert!(
            html.contains("Constancia NOM-151: PSC &lt;Ejemplo&gt;, 2026-11-27T23:05:01Z"),
            "{html}"
        );
    }

    #[test]
    fn the_page_lists_who_used_the_prescription() {
        let mut r = rx();
        assert!(page(&r, &[], false).contains("Nadie la ha consultado todavía"));
        r.access_log = vec![crate::bindings::prescriptions::AccessEntry {
            action: "lookup".into(),
            actor: "pharmacy".into(),
            name: "Farmacia <X>".into(),
            license: "L-1".into(),
            at: "2026-11-24T19:05:00.000000Z".into(),
            text: "Consultada por Farmacia <X> (licencia L-1) el 24/11/2026 13:05".into(),
        }];
        let html = page(&r, &[], false);
        assert!(
            html.contains(
                "<li><time datetime=\"2026-11-24T19:05:00.000000Z\">Consultada por Farmacia &lt;X&gt; \
                 (licencia L-1) el 24/11/2026 13:05</time></li>"
            ),
            "{html}"
        );
    }

    #[test]
    fn the_page_shows_the_state() {
        let html = page(&rx(), &[], false);
        assert!(html.contains("<dd id=\"estado\">Disponible</dd>"), "{html}");
        assert!(!html.contains("id=\"aviso\""));
        let mut r = rx();
        r.rx_status = RxState::Cancelled;
        r.reason_of_rejected = "Cancelada por el médico: dosis <equivocada>".into();
        r.medications[0].bought_qty = 0;
        let html = page(&r, &[], false);
        assert!(html.contains("<dd id=\"estado\">Cancelada</dd>"), "{html}");
        assert!(html.contains("Tu médico canceló esta receta"), "{html}");
        assert!(html.contains("dosis &lt;equivocada&gt;"), "{html}");
        let mut r = rx();
        r.rx_status = RxState::PartiallyDispensed;
        r.medications[0].qty = 3;
        r.medications[0].qty_total = 3;
        r.medications[0].bought_qty = 1;
        let html = page(&r, &[], false);
        assert!(html.contains("Surtido</span>1 de 3"), "{html}");
    }

    #[test]
    fn the_page_shows_what_the_pharmacy_last_said() {
        let mut r = rx();
        assert!(!page(&r, &[], false).contains("farmacia-estado"));
        r.status_updates = vec![crate::bindings::prescriptions::StatusUpdate {
            id: 1,
            status: common::codes::PharmacyStatus::ReadyToCollect,
            pharmacy: crate::bindings::prescriptions::PharmacyRef {
                id: 2,
                name: "Farmacia <Roma>".into(),
                license: String::new(),
            },
            pickup_code: Some("A7".into()),
            reason: None,
            created_at: "2026-11-28T20:00:00Z".into(),
        }];
        let html = page(&r, &[], false);
        assert!(
            html.contains(
                "id=\"farmacia-estado\">Lista para recoger en Farmacia &lt;Roma&gt;, código A7"
            ),
            "{html}"
        );
    }

    fn campaign(cta: &str, site: &str) -> Campaign {
        Campaign {
            id: 1,
            short_name: "ahorro".into(),
            branches: vec![Branch {
                determinante: 101,
                name: "Centro".into(),
                formato: "Farmacia".into(),
                estado: "CDMX".into(),
                address: "Madero 1".into(),
            }],
            callback_redirect: "landing_view".into(),
            main_site_redirect: site.into(),
            display_name: "Farmacias del Ahorro".into(),
            display_phone: "55 1234 5678".into(),
            display_contact: "Lunes a domingo".into(),
            cta_link: cta.into(),
            is_default: true,
            is_active: true,
            created_at: String::new(),
        }
    }

    #[test]
    fn every_dynamic_value_is_escaped() {
        let evil = "<script>alert(1)</script>\"'&";
        let mut r = rx();
        r.medic_name = evil.into();
        r.hospital_name = evil.into();
        r.patient_first_name = evil.into();
        r.medications = vec![Medication {
            drug: evil.into(),
            qty_label: evil.into(),
            ..medication(evil, evil)
        }];
        let mut c = campaign("https://x.mx/?a=1&b=\"", "landing_view");
        c.display_name = evil.into();
        c.display_phone = evil.into();
        c.display_contact = evil.into();
        c.branches[0].name = evil.into();
        c.branches[0].address = evil.into();
        c.branches[0].estado = evil.into();
        c.branches[0].formato = evil.into();
        let html = page(&r, &[c], false);
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("</script>"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"));
    }

    #[test]
    fn only_http_urls_become_links() {
        let html = page(
            &rx(),
            &[campaign("javascript:alert(1)", "landing_view")],
            false,
        );
        assert!(!html.contains("javascript:"), "{html}");
        assert!(!html.contains("landing_view"), "{html}");
        assert!(!html.contains("Surtir con"), "{html}");
        let html = page(
            &rx(),
            &[campaign(
                "https://ahorro.example/surtir?rx=1&x=2",
                "https://ahorro.example/",
            )],
            false,
        );
        assert!(html.contains(
            "href=\"https://ahorro.example/surtir?rx=1&amp;x=2\" rel=\"noopener noreferrer\""
        ));
        assert!(html.contains("Sitio web de Farmacias del Ahorro"));
    }

    #[test]
    fn the_page_shows_what_the_patient_needs() {
        let html = page(
            &rx(),
            &[campaign("https://ahorro.example/", "landing_view")],
            false,
        );
        for expected in [
            "<html lang=\"es-MX\">",
            "<meta name=\"robots\" content=\"noindex, nofollow\">",
            "Hola, Juan",
            "Dr. José Núñez",
            "Clínica Roma",
            "22 de noviembre de 2026",
            "Paracetamol 500 mg",
            "2 cajas",
            "1 cada 8 horas",
            "PDF, 46 KB",
            &format!("href=\"/rx/{}/pdf\"", "ab".repeat(32)),
            "download=\"receta-abababab.pdf\"",
            "Recomendada",
            "<details open>\n<summary>Sucursal (1)</summary>",
            "Madero 1 · CDMX · Farmacia",
            "Sucursal núm. 101",
        ] {
            assert!(html.contains(expected), "missing {expected:?} in {html}");
        }
        assert!(
            !html.contains("style=\""),
            "no style attributes: the CSP allows none"
        );
        assert!(!html.contains("<script"), "no script at all");
        assert!(page(&rx(), &[], false).contains("la farmacia de tu preferencia"));
    }

    #[test]
    fn a_long_branch_list_is_folded() {
        let mut c = campaign("https://ahorro.example/", "landing_view");
        c.branches = vec![c.branches[0].clone(); OPEN_BRANCHES + 1];
        let html = page(&rx(), &[c], false);
        assert!(
            html.contains("<details>\n<summary>Sucursales (4)</summary>"),
            "{html}"
        );
    }

    #[test]
    fn the_csp_hash_is_the_style_sheets() {
        let csp = content_security_policy();
        let hash = BASE64.encode(Sha256::digest(CSS.as_bytes()));
        assert!(csp.contains(&format!("style-src 'sha256-{hash}'")), "{csp}");
        assert!(csp.starts_with("default-src 'none'"));
        // The hashed text is exactly what sits between the tags.
        assert!(page(&rx(), &[], false).contains(&format!("<style>{CSS}</style>")));
        assert!(not_found_page().contains(&format!("<style>{CSS}</style>")));
        assert!(!CSS.contains("</"));
    }

    #[test]
    fn dates_sizes_and_names() {
        assert_eq!(spanish_date("2026-01-05T00:00:00Z"), "5 de enero de 2026");
        assert_eq!(spanish_date("2026-12-31"), "31 de diciembre de 2026");
        assert_eq!(spanish_date("garbage"), "garbage");
        assert_eq!(size_label(812), "812 bytes");
        assert_eq!(size_label(1024), "1 KB");
        assert_eq!(size_label(46_100), "46 KB");
        assert_eq!(size_label(1_258_291), "1,2 MB");
        assert_eq!(
            pdf_filename(&"0123456789abcdef".repeat(4)),
            "receta-01234567.pdf"
        );
    }
}
