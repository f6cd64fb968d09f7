//! The optional information page for the patient: what the prescription is and how to use it.

use crate::metrics::wrap;
use crate::winansi::encode;

use super::flow::Layout;
use super::paint::{ACCENT, Row, Span, Style};

impl Layout<'_> {
    pub(super) fn info_page(&mut self) {
        let g = self.g;
        let d = self.doc;
        let body = g.body();
        let (x, width) = (g.left(), g.content_width());
        let bullet_indent = 12.0 * g.k;

        let hospital = d.hospital.name.trim();
        let medic = d.medic.name.trim();
        let mut intro = String::from("Esta receta fue emitida electrónicamente");
        if !medic.is_empty() {
            intro.push_str(&format!(" por {medic}"));
        }
        if !hospital.is_empty() {
            intro.push_str(&format!(" en {hospital}"));
        }
        intro.push_str(
            ". Su folio digital la identifica de forma única y su sello digital permite a la farmacia \
             comprobar que es auténtica.",
        );
        let mut rows = self.heading_rows("SU RECETA ELECTRÓNICA");
        rows.extend(self.paragraph_rows(&intro, x, width, body));
        rows.push(Row::gap(10.0 * g.k));
        self.place_keeping(rows, 3);

        let link = d.cta_link.trim();
        let mut use_link: Vec<String> = Vec::new();
        if link.is_empty() {
            use_link.push(
                "Su médico le indicará cómo consultar esta receta en línea. Mientras tanto, conserve \
                 este documento: es su receta."
                    .into(),
            );
        } else {
            use_link.push(format!(
                "Escanee el código QR de la receta con la cámara de su teléfono, o abra este enlace en su navegador: {link}"
            ));
            use_link.push(
                "En esa página puede ver su receta, descargarla y encontrar farmacias o servicios donde \
                 obtener sus medicamentos."
                    .into(),
            );
            use_link.push("No necesita crear una cuenta ni escribir una contraseña.".into());
            use_link.push(
                "El enlace es personal: compártalo solo con quien le ayude a surtir su receta."
                    .into(),
            );
        }
        self.bullets(
            "CÓMO USAR EL ENLACE DE SU RECETA",
            &use_link,
            x,
            width,
            bullet_indent,
        );

        let get_meds = [
            "Presente esta receta en la farmacia, impresa o en la pantalla de su teléfono.".to_string(),
            "La farmacia puede verificar la receta con el código QR o con el folio y el sello digital \
             impresos en ella."
                .into(),
            "Si su receta incluye antibióticos, la farmacia la retendrá o la sellará al surtirla; \
             conserve una copia si la necesita."
                .into(),
            "Surta las cantidades indicadas y siga las indicaciones de su médico. Si tiene dudas sobre \
             un medicamento, pregunte a su médico o a su farmacéutico."
                .into(),
            "Ante cualquier reacción inesperada, consulte de inmediato a su médico.".into(),
        ];
        self.bullets(
            "CÓMO OBTENER SUS MEDICAMENTOS",
            &get_meds,
            x,
            width,
            bullet_indent,
        );

        let mut contact = Vec::new();
        if !hospital.is_empty() {
            contact.push(hospital.to_string());
        }
        for part in [d.hospital.location.trim(), d.hospital.contact.trim()] {
            if !part.is_empty() {
                contact.push(part.to_string());
            }
        }
        if !contact.is_empty() {
            let mut rows = self.heading_rows("¿DUDAS? COMUNÍQUESE CON SU MÉDICO");
            rows.extend(self.paragraph_rows(&contact.join("\n"), x, width, body));
            self.place_keeping(rows, 3);
        }
    }

    pub(super) fn bullets(
        &mut self,
        heading: &str,
        items: &[String],
        x: f32,
        width: f32,
        indent: f32,
    ) {
        let g = self.g;
        let body = g.body();
        let mut rows = self.heading_rows(heading);
        let keep = rows.len() + 1;
        for item in items {
            let lines = wrap(
                &encode(item),
                body.font,
                body.size,
                width - indent,
                width - indent,
            );
            for (i, line) in lines.into_iter().enumerate() {
                let mut row = Row::text(x + indent, body, line);
                if i == 0 {
                    let bullet = Style {
                        color: ACCENT,
                        ..body
                    };
                    row.spans.insert(
                        0,
                        Span {
                            dy: 0.0,
                            x: x + 2.0 * g.k,
                            style: bullet,
                            text: vec![0x95],
                        },
                    );
                }
                rows.push(row);
            }
            rows.push(Row::gap(3.0 * g.k));
        }
        rows.push(Row::gap(8.0 * g.k));
        self.place_keeping(rows, keep);
    }
}
