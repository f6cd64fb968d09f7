//! The letterhead: the hospital's header on top of every page (logos, name, medic, the page's
//! title) and the footer at the bottom (address, contact, folio, page number).

use crate::es;
use crate::metrics::{Font, wrap};
use crate::winansi::encode;

use super::flow::{Layout, PageKind, shorten};
use super::paint::{ACCENT, HAIRLINE, INK, MUTED, Row, Span};

/// Lines a header field may take before it is shortened (the header repeats on every page).
pub(super) const HEADER_FIELD_LINES: usize = 3;

/// Lines the address in the footer may take.
pub(super) const FOOTER_ADDRESS_LINES: usize = 4;

/// Lines the contact in the footer may take.
pub(super) const FOOTER_CONTACT_LINES: usize = 2;

impl Layout<'_> {
    pub(super) fn header_rows(&self, kind: PageKind) -> Vec<Row> {
        let g = self.g;
        let h = &self.doc.hospital;
        let side = if self.logos.is_empty() {
            0.0
        } else {
            self.logo_box() + 10.0 * g.k
        };
        let (left, width) = (g.left() + side, g.content_width() - 2.0 * side);
        let center = left + width / 2.0;
        let mut rows = Vec::new();
        let fields = [
            (h.name.as_str(), g.style(Font::Bold, 15.0, ACCENT)),
            (h.patron.as_str(), g.style(Font::Bold, 10.5, INK)),
            (h.headline.as_str(), g.style(Font::Regular, 8.5, MUTED)),
        ];
        for (text, style) in fields {
            if text.trim().is_empty() {
                continue;
            }
            let mut lines = wrap(&encode(text.trim()), style.font, style.size, width, width);
            shorten(&mut lines, HEADER_FIELD_LINES, style, width);
            for line in lines {
                let x = center - style.width(&line) / 2.0;
                rows.push(Row::text(x, style, line));
            }
        }
        let text_height: f32 = rows.iter().map(|r| r.height).sum();
        let logos_height = if self.logos.is_empty() {
            0.0
        } else {
            self.logo_box()
        };
        if logos_height > text_height {
            // Center the text block beside the logos.
            let pad = (logos_height - text_height) / 2.0;
            rows.insert(0, Row::gap(pad));
            rows.push(Row::gap(pad));
        }
        // The accent rule under the header, then the title line.
        let mut rule = Row::gap(7.0 * g.k);
        rule.rules
            .push((g.left(), g.content_width(), ACCENT, 1.4 * g.k));
        rows.push(rule);
        rows.push(Row::gap(8.0 * g.k));

        let title_style = g.style(Font::Bold, 12.5, ACCENT);
        let title = match kind {
            PageKind::First => "RECETA MÉDICA",
            PageKind::Continuation => "RECETA MÉDICA (continuación)",
            PageKind::Info => "INFORMACIÓN PARA EL PACIENTE",
        };
        let mut title_row = Row::text(g.left(), title_style, encode(title));
        let date_style = g.style(Font::Regular, 9.0, INK);
        let mut date = format!("Fecha de emisión: {}", es::long_date(&self.doc.issued_on));
        if !self.doc.valid_until.trim().is_empty() {
            date.push_str(&format!(
                " · Válida hasta: {}",
                es::long_date(&self.doc.valid_until)
            ));
        }
        let date = encode(&date);
        let date_x = g.right() - date_style.width(&date);
        if date_x > g.left() + title_style.width(&title_row.spans[0].text) + 12.0 {
            title_row.spans.push(Span {
                dy: 0.0,
                x: date_x,
                style: date_style,
                text: date,
            });
            rows.push(title_row);
        } else {
            rows.push(title_row);
            let width = g.content_width();
            let mut lines = wrap(&date, date_style.font, date_style.size, width, width);
            shorten(&mut lines, 2, date_style, width);
            for line in lines {
                rows.push(Row::text(g.left(), date_style, line));
            }
        }
        if kind != PageKind::First {
            // Which prescription a loose page belongs to.
            let style = g.small();
            let sig = short_signature(&self.doc.signature);
            let text = encode(&format!(
                "Paciente: {}  ·  Folio: {}",
                self.doc.patient.name.trim(),
                sig
            ));
            let mut lines = wrap(
                &text,
                style.font,
                style.size,
                g.content_width(),
                g.content_width(),
            );
            shorten(&mut lines, 2, style, g.content_width());
            for line in lines {
                rows.push(Row::text(g.left(), style, line));
            }
        }
        rows.push(Row::gap(8.0 * g.k));
        rows
    }

    /// The footer rows, without the page number (added by `finish`), top to bottom.
    pub(super) fn footer_rows(&self) -> Vec<Row> {
        let g = self.g;
        let h = &self.doc.hospital;
        let style = g.style(Font::Regular, 7.5, MUTED);
        let width = g.content_width();
        let mut rows = Vec::new();
        let mut rule = Row::gap(0.6);
        rule.rules.push((g.left(), width, HAIRLINE, 0.6));
        rows.push(rule);
        rows.push(Row::gap(4.0 * g.k));

        let mut address = h.location.trim().to_string();
        if !h.zip_code.trim().is_empty() {
            if !address.is_empty() {
                address.push_str("  ·  ");
            }
            address.push_str(&format!("C.P. {}", h.zip_code.trim()));
        }
        let mut lines = Vec::new();
        if !address.is_empty() {
            let mut address_lines = wrap(&encode(&address), style.font, style.size, width, width);
            shorten(&mut address_lines, FOOTER_ADDRESS_LINES, style, width);
            lines.extend(address_lines);
        }
        if !h.contact.trim().is_empty() {
            let contact = encode(&format!("Contacto: {}", h.contact.trim()));
            let mut contact_lines = wrap(&contact, style.font, style.size, width, width);
            shorten(&mut contact_lines, FOOTER_CONTACT_LINES, style, width);
            lines.extend(contact_lines);
        }
        for line in lines {
            let x = g.left() + (width - style.width(&line)) / 2.0;
            rows.push(Row::text(x, style, line));
        }
        // The last row: the folio at the left; `finish` adds "Página N de M" at the right.
        let small = g.small();
        let folio = match short_signature(&self.doc.signature) {
            s if s.is_empty() => s,
            s => format!("Folio: {s}"),
        };
        rows.push(Row::text(g.left(), small, encode(&folio)));
        rows
    }
}

/// The first 16 characters of the signature, for page headers and footers.
pub(super) fn short_signature(signature: &str) -> String {
    let signature = signature.trim();
    let mut short: String = signature.chars().take(16).collect();
    if signature.chars().count() > 16 {
        short.push('…');
    }
    short
}
