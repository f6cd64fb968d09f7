//! The parties: who prescribes (the medic) and for whom (the patient), beside the QR code.

use crate::es;
use crate::metrics::Font;
use crate::winansi::encode;

use super::flow::{Layout, dash, max_size, text_lines};
use super::paint::{INK, Lines, MUTED, PANEL, Row, Span, qr_modules, span};

impl Layout<'_> {
    /// Prescriber and patient side by side in two panels, and the signature with the QR code of
    /// the patient link: on a wide page the QR code is a third panel and the signature a line
    /// under the panels; on a narrow page the signature block follows the panels. Either way they
    /// are on the first page, where a pharmacy looks for them.
    pub(super) fn parties(&mut self) {
        let g = self.g;
        let gap = 10.0 * g.k;
        let pad = 8.0 * g.k;
        let qr_text = if self.doc.qr_text.trim().is_empty() {
            &self.doc.cta_link
        } else {
            &self.doc.qr_text
        };
        let mut qr = qr_modules(qr_text);
        let qr_size = 84.0 * g.k;
        let qr_panel = qr.is_some() && g.content_width() >= 450.0;
        let qr_width = if qr_panel { qr_size + 2.0 * pad } else { 0.0 };
        let panels = if qr_panel { 3.0 } else { 2.0 };
        let col = (g.content_width() - qr_width - (panels - 1.0) * gap) / 2.0;
        let inner = col - 2.0 * pad;
        let name_style = g.style(Font::Bold, 10.5, INK);
        let m = &self.doc.medic;
        let p = &self.doc.patient;

        let mut left: Lines = Vec::new();
        self.heading_line(&mut left, "MÉDICO");
        text_lines(&mut left, name_style, &dash(&m.name), inner);
        self.labeled(
            &mut left,
            "Cédula profesional",
            &dash(&m.cedula_prof),
            inner,
        );
        self.labeled(&mut left, "Especialidad", &dash(&m.specialty), inner);
        self.labeled(
            &mut left,
            "Cédula de especialidad",
            &dash(&m.specialty_no),
            inner,
        );
        self.labeled(&mut left, "Universidad", &dash(&m.alma_mater), inner);

        let mut right: Lines = Vec::new();
        self.heading_line(&mut right, "PACIENTE");
        text_lines(&mut right, name_style, &dash(&p.name), inner);
        let age = es::age(&p.date_of_birth, &self.doc.issued_on).unwrap_or_else(|| "—".into());
        self.labeled(&mut right, "Edad", &age, inner);
        self.labeled(&mut right, "Sexo", &dash(&es::sex(&p.gender)), inner);
        let born = dash(&es::short_date(&p.date_of_birth));
        self.labeled(&mut right, "Fecha de nacimiento", &born, inner);
        if !p.curp.trim().is_empty() {
            self.labeled(&mut right, "CURP", p.curp.trim(), inner);
        }

        // The QR panel: the code, and a caption under it.
        let mut qr_lines: Lines = vec![(qr_size + 3.0 * g.k, Vec::new())];
        if qr_panel {
            let caption = g.style(Font::Regular, 7.0, MUTED);
            for text in ["Escanee para consultar", "y verificar su receta"] {
                let text = encode(text);
                let x = (qr_size - caption.width(&text)) / 2.0;
                qr_lines.push((caption.line_height(), vec![span(x, caption, text)]));
            }
        }

        let (lx, rx) = (g.left(), g.left() + col + gap);
        let qx = g.right() - qr_width;
        let mut fills = vec![(lx, col, PANEL), (rx, col, PANEL)];
        if qr_panel {
            fills.push((qx, qr_width, PANEL));
        }
        let column_height = |lines: &Lines| lines.iter().map(|l| l.0).sum::<f32>();
        let mut height = column_height(&left).max(column_height(&right));
        if qr_panel {
            height = height.max(column_height(&qr_lines));
        }
        height += 2.0 * pad;
        if height <= self.body_top_of_continuation() - self.bottom {
            // One band with each column written whole, so that text is extracted column by column.
            let mut row = Row {
                height,
                fills,
                ..Row::default()
            };
            let mut columns = vec![(&left, lx + pad), (&right, rx + pad)];
            if qr_panel {
                columns.push((&qr_lines, qx + pad));
            }
            for (lines, x) in columns {
                let mut top = pad;
                for (h, spans) in lines {
                    let baseline = top + max_size(spans);
                    row.spans.extend(spans.iter().map(|s| Span {
                        dy: baseline,
                        x: x + s.x,
                        ..s.clone()
                    }));
                    top += h;
                }
            }
            self.place(vec![row]);
            if qr_panel && let Some(code) = qr.take() {
                let top = self.y + height;
                self.place_qr(qx + pad, top - pad - qr_size, qr_size, code);
            }
        } else {
            // Too long for one page (absurdly long values): line by line, both columns per line.
            let fills = vec![(lx, col, PANEL), (rx, col, PANEL)];
            let mut rows = vec![Row {
                height: pad,
                fills: fills.clone(),
                ..Row::default()
            }];
            for i in 0..left.len().max(right.len()) {
                let mut row = Row {
                    fills: fills.clone(),
                    ..Row::default()
                };
                for (lines, x) in [(&left, lx + pad), (&right, rx + pad)] {
                    if let Some((h, spans)) = lines.get(i) {
                        row.height = row.height.max(*h);
                        row.baseline = row.baseline.max(max_size(spans));
                        row.spans.extend(spans.iter().map(|s| Span {
                            x: x + s.x,
                            ..s.clone()
                        }));
                    }
                }
                rows.push(row);
            }
            rows.push(Row {
                height: pad,
                fills,
                ..Row::default()
            });
            self.place(rows);
        }
        if qr_panel && height <= self.body_top_of_continuation() - self.bottom {
            self.signature_lines();
        } else {
            self.place(vec![Row::gap(gap)]);
            self.signature_block(qr);
        }
        self.place(vec![Row::gap(9.0 * g.k)]);
    }
}
