//! The signature block: the medic's signature line, the digital folio and seal, and the link to
//! the prescription's page.

use crate::metrics::{Font, wrap};
use crate::winansi::encode;

use super::flow::{Layout, PageKind};
use super::paint::{INK, LINK, MUTED, PANEL, Row, Style, span};

impl Layout<'_> {
    /// Under the panels of a wide page: the signature, then the link.
    pub(super) fn signature_lines(&mut self) {
        let g = self.g;
        let mut rows = vec![Row::gap(7.0 * g.k)];
        rows.extend(self.signature_rows(
            g.left(),
            g.content_width(),
            Some("FOLIO DIGITAL (SHA-256 DEL DOCUMENTO):"),
        ));
        rows.extend(self.seal_rows(g.left(), g.content_width()));
        rows.extend(self.efirma_rows(g.left(), g.content_width()));
        rows.extend(self.link_rows(
            g.left(),
            g.content_width(),
            Some("Consulte su receta en línea:"),
        ));
        self.place(rows);
    }

    /// The signature (the document's SHA-256: its digital folio) in full, in Courier, on one line
    /// after `label` when it fits at 5 pt or more.
    pub(super) fn signature_rows(&self, x: f32, width: f32, label: Option<&str>) -> Vec<Row> {
        self.mono_rows(self.doc.signature.trim(), x, width, label)
    }

    /// The digital seal in Courier, after its label (`SELLO DIGITAL, CLAVE <kid>:`) on the
    /// same line when it reads there at 6.5 pt or more; else the label, then the seal on a line of
    /// its own, or in two halves on a narrow page. None when the prescription has no seal.
    pub(super) fn seal_rows(&self, x: f32, width: f32) -> Vec<Row> {
        let g = self.g;
        let sig = self.doc.seal_sig.trim();
        if sig.is_empty() {
            return Vec::new();
        }
        let label = format!("SELLO DIGITAL, CLAVE {}:", self.doc.seal_kid.trim());
        let sig_width = Font::Mono.width(&encode(sig), 1.0);
        let room = width - g.heading().width(&encode(&label)) - 4.0 * g.k;
        if room / sig_width >= 6.5 * g.k {
            return self.mono_rows(sig, x, width, Some(&label));
        }
        let mut heading = Row::text(x, g.heading(), encode(label.trim_end_matches(':')));
        heading.height += 2.0 * g.k;
        let mut rows = vec![heading];
        if width / sig_width >= 7.0 * g.k || !sig.is_ascii() {
            rows.extend(self.mono_rows(sig, x, width, None));
        } else {
            let (first, second) = sig.split_at(sig.len().div_ceil(2));
            rows.extend(self.mono_rows(first, x, width, None));
            rows.extend(self.mono_rows(second, x, width, None));
        }
        rows
    }

    /// The prescriber's e.firma line, when the prescription carries one.
    pub(super) fn efirma_rows(&self, x: f32, width: f32) -> Vec<Row> {
        let efirma = self.doc.efirma.trim();
        if efirma.is_empty() {
            return Vec::new();
        }
        let style = self.g.style(Font::Bold, 8.0, INK);
        self.paragraph_rows(efirma, x, width, style)
    }

    /// `text` in Courier, on one line after `label` when it fits at 5 pt or more, else wrapped.
    pub(super) fn mono_rows(
        &self,
        text: &str,
        x: f32,
        width: f32,
        label: Option<&str>,
    ) -> Vec<Row> {
        let g = self.g;
        let heading = g.heading();
        let label = label.map(encode).unwrap_or_default();
        let label_width = if label.is_empty() {
            0.0
        } else {
            heading.width(&label) + 4.0 * g.k
        };
        let sig = encode(text);
        let room = width - label_width;
        let size = if sig.is_empty() {
            9.0
        } else {
            room / Font::Mono.width(&sig, 1.0)
        };
        let mono = Style {
            font: Font::Mono,
            size: size.clamp(5.0, 9.0 * g.k),
            color: INK,
        };
        let mut rows = Vec::new();
        for (i, line) in wrap(&sig, mono.font, mono.size, room, width)
            .into_iter()
            .enumerate()
        {
            let mut row = Row::text(if i == 0 { x + label_width } else { x }, mono, line);
            row.height += 2.0 * g.k;
            if i == 0 && !label.is_empty() {
                row.spans.insert(0, span(x, heading, label.clone()));
                row.baseline = row.baseline.max(heading.size);
            }
            rows.push(row);
        }
        rows
    }

    /// The link to the patient view, after `intro` on the same line when both fit with the link
    /// at 6 pt or more; otherwise the intro, then the link on as few lines as it takes.
    pub(super) fn link_rows(&self, x: f32, width: f32, intro: Option<&str>) -> Vec<Row> {
        let g = self.g;
        let small = g.style(Font::Regular, 8.0, INK);
        let link = encode(self.doc.cta_link.trim());
        if link.is_empty() {
            return Vec::new();
        }
        let link_style = |room: f32| {
            let fit = room / Font::Regular.width(&link, 1.0);
            Style {
                color: LINK,
                size: fit.clamp(6.0 * g.k, small.size),
                ..small
            }
        };
        let intro_text = intro.unwrap_or("");
        let intro = encode(intro_text);
        if !intro.is_empty() {
            let intro_width = small.width(&intro) + 3.0 * g.k;
            let style = link_style(width - intro_width);
            if style.width(&link) <= width - intro_width {
                let mut row = Row::text(x, small, intro);
                row.spans.push(span(x + intro_width, style, link));
                return vec![row];
            }
        }
        let mut rows = Vec::new();
        if !intro.is_empty() {
            rows = self.paragraph_rows(intro_text, x, width, small);
        }
        let style = link_style(width);
        for line in wrap(&link, style.font, style.size, width, width) {
            rows.push(Row::text(x, style, line));
        }
        rows
    }

    /// The signature block of a narrow page: the QR code at the left, the signature and the link
    /// at its right, kept together.
    pub(super) fn signature_block(&mut self, qr: Option<(usize, Vec<bool>)>) {
        let g = self.g;
        let pad = 8.0 * g.k;
        let qr_size = if qr.is_some() { 96.0 * g.k } else { 0.0 };
        let x = g.left()
            + pad
            + if qr.is_some() {
                qr_size + 10.0 * g.k
            } else {
                0.0
            };
        let width = g.right() - pad - x;

        let mut rows = vec![Row::gap(pad)];
        let mut heading = Row::text(
            x,
            g.heading(),
            encode("FOLIO DIGITAL (SHA-256 DEL DOCUMENTO)"),
        );
        heading.height += 2.0 * g.k;
        rows.push(heading);
        rows.extend(self.signature_rows(x, width, None));
        rows.extend(self.seal_rows(x, width));
        rows.extend(self.efirma_rows(x, width));
        rows.push(Row::gap(4.0 * g.k));
        if !self.doc.cta_link.trim().is_empty() {
            let intro = "Escanee el código QR o abra este enlace para consultar su receta y encontrar \
                         dónde surtirla:";
            rows.extend(self.paragraph_rows(intro, x, width, g.style(Font::Regular, 8.0, INK)));
            rows.extend(self.link_rows(x, width, None));
        }
        let note = "El folio identifica el documento; el sello digital del servicio lo autentica. \
                    Cualquier farmacia puede verificarlo con el código QR y la clave pública del servicio.";
        rows.extend(self.paragraph_rows(note, x, width, g.style(Font::Regular, 7.5, MUTED)));
        let constancia = self.doc.constancia.trim();
        if !constancia.is_empty() {
            let line = format!("Constancia NOM-151: {constancia}");
            rows.extend(self.paragraph_rows(&line, x, width, g.style(Font::Regular, 7.5, MUTED)));
        }
        let used: f32 = rows.iter().map(|r| r.height).sum();
        rows.push(Row::gap((qr_size + 2.0 * pad - used).max(pad)));
        for row in &mut rows {
            row.fills.push((g.left(), g.content_width(), PANEL));
        }

        // Keep the block together; draw the QR code once its place is known.
        let total: f32 = rows.iter().map(|r| r.height).sum();
        let room_on_new_page = self.body_top_of_continuation() - self.bottom;
        if self.y - total < self.bottom && total <= room_on_new_page && !self.at_page_top() {
            self.new_page(PageKind::Continuation);
        }
        let top = self.y;
        for row in rows {
            self.place(vec![row]);
        }
        if let Some(code) = qr {
            self.place_qr(g.left() + pad, top - pad - qr_size, qr_size, code);
        }
    }
}
