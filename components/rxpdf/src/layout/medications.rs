//! The prescription's body: the diagnosis, the medications (one block each) and the observations.

use crate::es;
use crate::metrics::{Font, wrap};
use crate::winansi::encode;

use super::flow::{Layout, dash, rows_at};
use super::paint::{ACCENT, HAIRLINE, INK, Lines, Row, Span};

impl Layout<'_> {
    pub(super) fn diagnosis(&mut self) {
        let d = &self.doc;
        if !d.show_diagnosis || d.diagnosis.trim().is_empty() {
            return;
        }
        let g = self.g;
        let mut rows = self.heading_rows("DIAGNÓSTICO");
        rows.extend(self.paragraph_rows(&d.diagnosis, g.left(), g.content_width(), g.body()));
        rows.push(Row::gap(8.0 * g.k));
        self.place_keeping(rows, 3);
    }

    pub(super) fn medications(&mut self) {
        let g = self.g;
        let heading = self.heading_rows("MEDICAMENTOS E INDICACIONES");
        let indent = 18.0 * g.k;
        let (x, width) = (g.left() + indent, g.content_width() - indent);
        let count = self.doc.medications.len();
        let mut first = true;
        for (i, med) in self.doc.medications.iter().enumerate() {
            let mut rows = if first { heading.clone() } else { Vec::new() };
            first = false;
            // Number and presentation.
            let number_style = g.style(Font::Bold, 10.5, ACCENT);
            let pres_style = g.style(Font::Bold, 10.5, INK);
            let pres = wrap(
                &encode(&dash(&med.presentation)),
                pres_style.font,
                pres_style.size,
                width,
                width,
            );
            for (j, line) in pres.into_iter().enumerate() {
                let mut row = Row::text(x, pres_style, line);
                if j == 0 {
                    row.spans.insert(
                        0,
                        Span {
                            dy: 0.0,
                            x: g.left(),
                            style: number_style,
                            text: encode(&format!("{}.", i + 1)),
                        },
                    );
                }
                rows.push(row);
            }
            let mut lines: Lines = Vec::new();
            let drug = med.drug.trim();
            if !drug.is_empty() && !drug.eq_ignore_ascii_case(med.presentation.trim()) {
                self.labeled(&mut lines, "Medicamento", drug, width);
            }
            let mut quantity = es::quantity(med.qty, &med.qty_label);
            if med.antibiotic {
                quantity.push_str(" · ANTIBIÓTICO");
            }
            if med.not_substitutable {
                quantity.push_str(" · No sustituible");
            }
            self.labeled(&mut lines, "Cantidad", &quantity, width);
            let mut paragraphs = med.instructions.trim().lines();
            self.labeled(
                &mut lines,
                "Indicaciones",
                &dash(paragraphs.next().unwrap_or("")),
                width,
            );
            for p in paragraphs {
                let style = g.body();
                for line in wrap(&encode(p), style.font, style.size, width, width) {
                    lines.push((
                        style.line_height(),
                        vec![Span {
                            dy: 0.0,
                            x: 0.0,
                            style,
                            text: line,
                        }],
                    ));
                }
            }
            rows.extend(rows_at(lines, x));
            let mut sep = Row::gap(6.0 * g.k);
            if i + 1 < count {
                sep.rules.push((x, width, HAIRLINE, 0.4));
            }
            rows.push(sep);
            rows.push(Row::gap(4.0 * g.k));
            let keep = rows.len();
            self.place_keeping(rows, keep);
        }
        if count == 0 {
            let mut rows = heading;
            rows.push(Row::text(g.left(), g.small(), encode("Sin medicamentos.")));
            self.place(rows);
        }
        self.place(vec![Row::gap(4.0 * g.k)]);
    }

    /// The repeats, when there are any (the last valid day is printed in the title line).
    pub(super) fn validity(&mut self) {
        let d = &self.doc;
        if d.fills <= 1 {
            return;
        }
        let g = self.g;
        let width = g.content_width();
        let mut lines: Lines = Vec::new();
        let fills = format!("{} veces", d.fills);
        self.labeled(&mut lines, "Surtir", &fills, width);
        if d.fill_interval_days > 0 {
            let days = format!("al menos {} días entre surtidos", d.fill_interval_days);
            self.labeled(&mut lines, "Intervalo", &days, width);
        }
        if !d.antibiotic_repeat_reason.trim().is_empty() {
            let reason = d.antibiotic_repeat_reason.trim().to_string();
            self.labeled(
                &mut lines,
                "Motivo de repetir el antibiótico",
                &reason,
                width,
            );
        }
        let mut rows = rows_at(lines, g.left());
        rows.push(Row::gap(8.0 * g.k));
        let keep = rows.len();
        self.place_keeping(rows, keep);
    }

    pub(super) fn observations(&mut self) {
        let d = &self.doc;
        if d.extras.trim().is_empty() {
            return;
        }
        let g = self.g;
        let mut rows = self.heading_rows("OBSERVACIONES");
        rows.extend(self.paragraph_rows(&d.extras, g.left(), g.content_width(), g.body()));
        rows.push(Row::gap(8.0 * g.k));
        self.place_keeping(rows, 3);
    }
}
