//! Page layout: rows of text flowing down the page, onto more pages as needed, each page with the
//! hospital header on top and the footer at the bottom.
//!
//! Everything is laid out as [`Row`]s: a band of the page's width with a height, some text spans,
//! background fills and rules. A row is never split; a block of rows that should stay together (a
//! medication, a heading with its first line) moves to the next page whole when it fits on one.

use pdf_writer::Name;

use crate::content::{Content, Num};
use crate::jpeg::{self, JpegInfo};
use crate::metrics::{Font, wrap};
use crate::winansi::encode;
use crate::{RxDocument, es, page_dimensions};

pub type Rgb = (f32, f32, f32);

const ACCENT: Rgb = (0.0, 0.38, 0.42);
const INK: Rgb = (0.12, 0.12, 0.14);
const MUTED: Rgb = (0.36, 0.38, 0.42);
const PANEL: Rgb = (0.945, 0.96, 0.965);
const HAIRLINE: Rgb = (0.80, 0.83, 0.85);
const LINK: Rgb = (0.05, 0.30, 0.60);
const BLACK: Rgb = (0.0, 0.0, 0.0);

/// Lines a header field may take before it is shortened (the header repeats on every page).
const HEADER_FIELD_LINES: usize = 3;
/// Lines the address in the footer may take.
const FOOTER_ADDRESS_LINES: usize = 4;
/// Lines the contact in the footer may take.
const FOOTER_CONTACT_LINES: usize = 2;

/// Resource names of the fonts and images, shared by the PDF writer.
pub const FONT_REGULAR: Name<'static> = Name(b"F1");
pub const FONT_BOLD: Name<'static> = Name(b"F2");
pub const FONT_MONO: Name<'static> = Name(b"F3");
pub const IMAGE_NAMES: [Name<'static>; 2] = [Name(b"Im1"), Name(b"Im2")];

fn font_name(font: Font) -> Name<'static> {
    match font {
        Font::Regular => FONT_REGULAR,
        Font::Bold => FONT_BOLD,
        Font::Mono => FONT_MONO,
    }
}

/// A font, size and color.
#[derive(Debug, Clone, Copy)]
struct Style {
    font: Font,
    size: f32,
    color: Rgb,
}

impl Style {
    fn width(&self, text: &[u8]) -> f32 {
        self.font.width(text, self.size)
    }
    fn line_height(&self) -> f32 {
        self.size * 1.28
    }
}

/// Text at `x` (absolute), on the row's baseline, or `dy` below it.
#[derive(Debug, Clone)]
struct Span {
    dy: f32,
    x: f32,
    style: Style,
    text: Vec<u8>,
}

/// One band of the page.
#[derive(Debug, Clone, Default)]
struct Row {
    height: f32,
    /// Distance from the row's top to the text baseline.
    baseline: f32,
    spans: Vec<Span>,
    /// Background rectangles `(x, width, color)` over the row's full height.
    fills: Vec<(f32, f32, Rgb)>,
    /// Horizontal rules `(x, width, color, thickness)` along the row's bottom.
    rules: Vec<(f32, f32, Rgb, f32)>,
}

impl Row {
    fn gap(height: f32) -> Row {
        Row {
            height,
            ..Row::default()
        }
    }
    /// One line of text in `style`, starting at `x`.
    fn text(x: f32, style: Style, text: Vec<u8>) -> Row {
        Row {
            height: style.line_height(),
            baseline: style.size * 1.0,
            spans: vec![Span {
                dy: 0.0,
                x,
                style,
                text,
            }],
            ..Row::default()
        }
    }
}

/// A column's lines, before they are merged into rows: spans relative to the column's left.
type Lines = Vec<(f32, Vec<Span>)>;

/// Sizes and positions that depend on the page size.
#[derive(Debug, Clone, Copy)]
struct Geometry {
    width: f32,
    height: f32,
    margin: f32,
    /// Scale of type and spacing: 1 on Letter, smaller on Half Letter.
    k: f32,
}

impl Geometry {
    fn left(&self) -> f32 {
        self.margin
    }
    fn right(&self) -> f32 {
        self.width - self.margin
    }
    fn content_width(&self) -> f32 {
        self.width - 2.0 * self.margin
    }
    fn style(&self, font: Font, size: f32, color: Rgb) -> Style {
        Style {
            font,
            size: size * self.k,
            color,
        }
    }
    fn body(&self) -> Style {
        self.style(Font::Regular, 9.5, INK)
    }
    fn label(&self) -> Style {
        self.style(Font::Bold, 9.5, INK)
    }
    fn small(&self) -> Style {
        self.style(Font::Regular, 8.0, MUTED)
    }
    fn heading(&self) -> Style {
        self.style(Font::Bold, 8.5, ACCENT)
    }
}

/// A logo ready to draw: which image slot, and its pixel size for the aspect ratio.
#[derive(Debug, Clone, Copy)]
pub struct Logo {
    pub slot: usize,
    pub info: JpegInfo,
}

/// What kind of page: the title under the header depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PageKind {
    First,
    Continuation,
    Info,
}

/// The laid-out document: page size, one content stream per page, the usable logos.
pub struct LaidOut {
    pub size: (f32, f32),
    pub pages: Vec<Vec<u8>>,
    /// For each slot (0 = picture, 1 = university logo), the JPEG's header when it is usable.
    pub logos: [Option<JpegInfo>; 2],
}

struct Layout<'a> {
    doc: &'a RxDocument,
    g: Geometry,
    logos: Vec<Logo>,
    pages: Vec<Content>,
    /// Top of the free space on the current page.
    y: f32,
    /// Where the body starts on the current page (below the header).
    body_top: f32,
    /// Where the body ends on every page (above the footer).
    bottom: f32,
    footer: Vec<Row>,
    /// The header of continuation pages, laid out once.
    continuation_header: Vec<Row>,
}

pub fn lay_out(doc: &RxDocument) -> LaidOut {
    let (width, height) = page_dimensions(doc.hospital.page_size);
    let half = doc.hospital.page_size == 1;
    let g = Geometry {
        width,
        height,
        margin: if half { 26.0 } else { 40.0 },
        k: if half { 0.8 } else { 1.0 },
    };
    let parsed = [
        doc.hospital.picture.as_deref().and_then(jpeg::parse),
        doc.hospital
            .university_logo
            .as_deref()
            .and_then(jpeg::parse),
    ];
    let logos = parsed
        .iter()
        .enumerate()
        .filter_map(|(slot, info)| info.map(|info| Logo { slot, info }))
        .collect();
    let mut l = Layout {
        doc,
        g,
        logos,
        pages: Vec::new(),
        y: 0.0,
        body_top: 0.0,
        bottom: 0.0,
        footer: Vec::new(),
        continuation_header: Vec::new(),
    };
    l.footer = l.footer_rows();
    l.continuation_header = l.header_rows(PageKind::Continuation);
    l.bottom = g.margin + l.footer.iter().map(|r| r.height).sum::<f32>() + 8.0 * g.k;

    l.new_page(PageKind::First);
    l.parties();
    l.diagnosis();
    l.medications();
    l.observations();
    if doc.hospital.info {
        l.new_page(PageKind::Info);
        l.info_page();
    }
    let pages = l.finish();
    LaidOut {
        size: (width, height),
        pages,
        logos: parsed,
    }
}

impl Layout<'_> {
    // ---------------------------------------------------------------- pages

    fn content(&mut self) -> &mut Content {
        self.pages.last_mut().expect("a page is open")
    }

    fn new_page(&mut self, kind: PageKind) {
        // The first page holds the most (the QR code, the parties); later ones mostly text.
        let capacity = if self.pages.is_empty() {
            16 * 1024
        } else {
            4 * 1024
        };
        self.pages.push(Content::with_capacity(capacity));
        let top = self.g.height - self.g.margin;
        let rows = match kind {
            PageKind::Continuation => self.continuation_header.clone(),
            _ => self.header_rows(kind),
        };
        self.y = top;
        self.draw_logos(top);
        for row in rows {
            self.draw(&row);
        }
        self.body_top = self.y;
    }

    /// Places rows, moving to a new page first when they do not fit and would fit on a new one.
    fn place(&mut self, rows: Vec<Row>) {
        let total: f32 = rows.iter().map(|r| r.height).sum();
        let room_on_new_page = self.body_top_of_continuation() - self.bottom;
        if self.y - total < self.bottom && total <= room_on_new_page && !self.at_page_top() {
            self.new_page(PageKind::Continuation);
        }
        for row in rows {
            if self.y - row.height < self.bottom && !self.at_page_top() {
                self.new_page(PageKind::Continuation);
            }
            self.draw(&row);
        }
    }

    /// Places a block whose first `keep` rows stay together (a heading and its first line), then
    /// the rest row by row.
    fn place_keeping(&mut self, mut rows: Vec<Row>, keep: usize) {
        let rest = rows.split_off(keep.min(rows.len()));
        self.place(rows);
        for row in rest {
            self.place(vec![row]);
        }
    }

    fn at_page_top(&self) -> bool {
        self.y >= self.body_top - 0.01
    }

    fn body_top_of_continuation(&self) -> f32 {
        let header: f32 = self.continuation_header.iter().map(|r| r.height).sum();
        self.g.height - self.g.margin - header
    }

    /// Draws a row at the current position and moves below it.
    fn draw(&mut self, row: &Row) {
        let top = self.y;
        draw_row(self.content(), top, row);
        self.y = top - row.height;
    }

    /// Adds the footers, now that the number of pages is known, and returns the content streams.
    fn finish(mut self) -> Vec<Vec<u8>> {
        let total = self.pages.len();
        let footer = std::mem::take(&mut self.footer);
        let mut out = Vec::with_capacity(total);
        for (i, mut content) in std::mem::take(&mut self.pages).into_iter().enumerate() {
            let mut rows = footer.clone();
            if let Some(last) = rows.last_mut() {
                let style = self.g.small();
                let text = encode(&format!("Página {} de {}", i + 1, total));
                let x = self.g.right() - style.width(&text);
                last.spans.push(Span {
                    dy: 0.0,
                    x,
                    style,
                    text,
                });
            }
            let mut y = self.g.margin + rows.iter().map(|r| r.height).sum::<f32>();
            for row in &rows {
                draw_row(&mut content, y, row);
                y -= row.height;
            }
            out.push(content.finish());
        }
        out
    }

    // ---------------------------------------------------------------- header and footer

    /// Width kept at each side of the header for the logos.
    fn logo_box(&self) -> f32 {
        62.0 * self.g.k
    }

    fn draw_logos(&mut self, top: f32) {
        let b = self.logo_box();
        let g = self.g;
        let logos = self.logos.clone();
        let c = self.content();
        for logo in logos {
            let (pw, ph) = (f32::from(logo.info.width), f32::from(logo.info.height));
            let scale = (b / pw).min(b / ph);
            let (w, h) = (pw * scale, ph * scale);
            // Picture at the left edge, university logo at the right edge, both top-aligned.
            let x = if logo.slot == 0 {
                g.left()
            } else {
                g.right() - w
            };
            c.image(IMAGE_NAMES[logo.slot].0, [w, 0.0, 0.0, h, x, top - h]);
        }
    }

    fn header_rows(&self, kind: PageKind) -> Vec<Row> {
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
        let date = encode(&format!(
            "Fecha de emisión: {}",
            es::long_date(&self.doc.issued_on)
        ));
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
    fn footer_rows(&self) -> Vec<Row> {
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

    // ---------------------------------------------------------------- body

    /// Prescriber and patient side by side in two panels, and the signature with the QR code of
    /// the patient link: on a wide page the QR code is a third panel and the signature a line
    /// under the panels; on a narrow page the signature block follows the panels. Either way they
    /// are on the first page, where a pharmacy looks for them.
    fn parties(&mut self) {
        let g = self.g;
        let gap = 10.0 * g.k;
        let pad = 8.0 * g.k;
        let qr_text = if self.doc.qr_text.trim().is_empty() {
            &self.doc.cta_link
        } else {
            &self.doc.qr_text
        };
        let qr = qr_modules(qr_text);
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
            if let (true, Some((n, modules))) = (qr_panel, &qr) {
                let top = self.y + height;
                draw_qr(
                    self.content(),
                    qx + pad,
                    top - pad - qr_size,
                    qr_size,
                    *n,
                    modules,
                );
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

    /// The signature (the document's SHA-256: its digital folio) in full, in Courier, on one line
    /// after `label` when it fits at 5 pt or more.
    fn signature_rows(&self, x: f32, width: f32, label: Option<&str>) -> Vec<Row> {
        self.mono_rows(self.doc.signature.trim(), x, width, label)
    }

    /// The digital seal in Courier, after its label (`SELLO DIGITAL, CLAVE <kid>:`) on the
    /// same line when it reads there at 6.5 pt or more; else the label, then the seal on a line of
    /// its own, or in two halves on a narrow page. None when the prescription has no seal.
    fn seal_rows(&self, x: f32, width: f32) -> Vec<Row> {
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

    /// `text` in Courier, on one line after `label` when it fits at 5 pt or more, else wrapped.
    fn mono_rows(&self, text: &str, x: f32, width: f32, label: Option<&str>) -> Vec<Row> {
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
    fn link_rows(&self, x: f32, width: f32, intro: Option<&str>) -> Vec<Row> {
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

    /// Under the panels of a wide page: the signature, then the link.
    fn signature_lines(&mut self) {
        let g = self.g;
        let mut rows = vec![Row::gap(7.0 * g.k)];
        rows.extend(self.signature_rows(
            g.left(),
            g.content_width(),
            Some("FOLIO DIGITAL (SHA-256 DEL DOCUMENTO):"),
        ));
        rows.extend(self.seal_rows(g.left(), g.content_width()));
        rows.extend(self.link_rows(
            g.left(),
            g.content_width(),
            Some("Consulte su receta en línea:"),
        ));
        self.place(rows);
    }

    fn heading_line(&self, lines: &mut Lines, text: &str) {
        let style = self.g.heading();
        lines.push((
            style.line_height() + 2.0 * self.g.k,
            vec![Span {
                dy: 0.0,
                x: 0.0,
                style,
                text: encode(text),
            }],
        ));
    }

    /// `Label: value`, the value wrapped under the label's line.
    fn labeled(&self, lines: &mut Lines, label: &str, value: &str, width: f32) {
        let (ls, vs) = (self.g.label(), self.g.body());
        let label = encode(&format!("{label}: "));
        let lw = ls.width(&label);
        let value_lines = wrap(&encode(value), vs.font, vs.size, width - lw, width);
        for (i, line) in value_lines.into_iter().enumerate() {
            let mut spans = Vec::new();
            let x = if i == 0 {
                spans.push(Span {
                    dy: 0.0,
                    x: 0.0,
                    style: ls,
                    text: label.clone(),
                });
                lw
            } else {
                0.0
            };
            spans.push(Span {
                dy: 0.0,
                x,
                style: vs,
                text: line,
            });
            lines.push((vs.line_height(), spans));
        }
    }

    /// A section heading with a hairline under it.
    fn heading_rows(&self, text: &str) -> Vec<Row> {
        let g = self.g;
        let mut row = Row::text(g.left(), g.heading(), encode(text));
        row.height += 2.0 * g.k;
        row.rules.push((g.left(), g.content_width(), HAIRLINE, 0.6));
        vec![row, Row::gap(5.0 * g.k)]
    }

    /// Paragraphs of body text (line breaks in the input start new paragraphs).
    fn paragraph_rows(&self, text: &str, x: f32, width: f32, style: Style) -> Vec<Row> {
        text.trim()
            .lines()
            .flat_map(|p| wrap(&encode(p), style.font, style.size, width, width))
            .map(|line| Row::text(x, style, line))
            .collect()
    }

    fn diagnosis(&mut self) {
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

    fn medications(&mut self) {
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
            self.labeled(
                &mut lines,
                "Cantidad",
                &es::quantity(med.qty, &med.qty_label),
                width,
            );
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
            for (height, spans) in lines {
                rows.push(Row {
                    height,
                    baseline: max_size(&spans),
                    spans: spans
                        .into_iter()
                        .map(|s| Span {
                            dy: 0.0,
                            x: x + s.x,
                            ..s
                        })
                        .collect(),
                    ..Row::default()
                });
            }
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

    fn observations(&mut self) {
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

    /// The signature block of a narrow page: the QR code at the left, the signature and the link
    /// at its right, kept together.
    fn signature_block(&mut self, qr: Option<(usize, Vec<bool>)>) {
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
        if let Some((n, modules)) = qr {
            draw_qr(
                self.content(),
                g.left() + pad,
                top - pad - qr_size,
                qr_size,
                n,
                &modules,
            );
        }
    }

    // ---------------------------------------------------------------- information page

    fn info_page(&mut self) {
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

    fn bullets(&mut self, heading: &str, items: &[String], x: f32, width: f32, indent: f32) {
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

/// The first 16 characters of the signature, for page headers and footers.
fn short_signature(signature: &str) -> String {
    let signature = signature.trim();
    let mut short: String = signature.chars().take(16).collect();
    if signature.chars().count() > 16 {
        short.push('…');
    }
    short
}

/// Lines of plain text, wrapped to `width`, for a column.
fn text_lines(lines: &mut Lines, style: Style, text: &str, width: f32) {
    for line in wrap(&encode(text.trim()), style.font, style.size, width, width) {
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

/// The largest font size on a line: its baseline sits that far below the line's top.
fn max_size(spans: &[Span]) -> f32 {
    spans.iter().map(|s| s.style.size).fold(0.0, f32::max)
}

/// An em dash for a missing value, so that a blank is visibly blank.
fn dash(value: &str) -> String {
    let v = value.trim();
    if v.is_empty() { "—".into() } else { v.into() }
}

/// Keeps at most `max` lines, ending the last kept one with an ellipsis when some were dropped.
fn shorten(lines: &mut Vec<Vec<u8>>, max: usize, style: Style, width: f32) {
    if lines.len() <= max {
        return;
    }
    lines.truncate(max);
    let last = lines.last_mut().expect("max > 0");
    let ellipsis = 0x85;
    while !last.is_empty() && style.width(last) + style.width(&[ellipsis]) > width {
        last.pop();
    }
    last.push(ellipsis);
}

/// Draws a row whose top is at `top`: fills, then rules, then text.
fn draw_row(c: &mut Content, top: f32, row: &Row) {
    for &(x, w, color) in &row.fills {
        c.fill_rgb(color);
        c.rect(x, top - row.height, w, row.height);
        c.fill();
    }
    for &(x, w, color, thickness) in &row.rules {
        c.fill_rgb(color);
        c.rect(x, top - row.height, w, thickness);
        c.fill();
    }
    for span in &row.spans {
        draw_text(
            c,
            span.x,
            top - row.baseline - span.dy,
            span.style,
            &span.text,
        );
    }
}

fn draw_text(c: &mut Content, x: f32, y: f32, style: Style, text: &[u8]) {
    if text.is_empty() {
        return;
    }
    c.fill_rgb(style.color);
    c.text(font_name(style.font).0, style.size, x, y, text);
}

/// A text span at `x` on the row's baseline.
fn span(x: f32, style: Style, text: Vec<u8>) -> Span {
    Span {
        dy: 0.0,
        x,
        style,
        text,
    }
}

/// Draws a QR code of `n`×`n` modules in a white square of `size` at (`x`, `y`), with a quiet zone
/// of 4 modules each side. Runs of dark modules in a row are one rectangle.
fn draw_qr(c: &mut Content, x: f32, y: f32, size: f32, n: usize, modules: &[bool]) {
    let module = size / (n + 8) as f32;
    c.fill_rgb((1.0, 1.0, 1.0));
    c.rect(x, y, size, size);
    c.fill();
    c.fill_rgb(BLACK);
    // Every rectangle starts at one of n columns, lies on one of n rows and spans 1 to n modules:
    // those numbers are formatted once.
    let starts: Vec<Num> = (0..n)
        .map(|col| Num::new(x + (col + 4) as f32 * module))
        .collect();
    // A hair wider and taller, so that adjacent modules leave no seam.
    let widths: Vec<Num> = (1..=n)
        .map(|len| Num::new(len as f32 * module + 0.02))
        .collect();
    let height = Num::new(module + 0.04);
    for (r, row) in modules.chunks_exact(n).enumerate() {
        let y0 = Num::new(y + size - (r + 5) as f32 * module - 0.02);
        let mut col = 0;
        while col < n {
            if !row[col] {
                col += 1;
                continue;
            }
            let start = col;
            while col < n && row[col] {
                col += 1;
            }
            c.rect_nums([&starts[start], &y0, &widths[col - start - 1], &height]);
        }
    }
    c.fill();
}

/// The QR code of the link (error correction M): its width in modules and the dark modules, row
/// by row. `None` for no link, or one too long for a QR code.
fn qr_modules(link: &str) -> Option<(usize, Vec<bool>)> {
    let link = link.trim();
    if link.is_empty() {
        return None;
    }
    crate::qr::encode(link.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorten_adds_an_ellipsis_that_fits() {
        let style = Style {
            font: Font::Regular,
            size: 10.0,
            color: INK,
        };
        let mut lines = vec![b"aaaa".to_vec(), b"bbbb".to_vec(), b"cccc".to_vec()];
        shorten(&mut lines, 2, style, style.width(b"bbbb"));
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].last(), Some(&0x85));
        assert!(style.width(&lines[1]) <= style.width(b"bbbb"));
    }

    #[test]
    fn pathological_input_renders_on_finite_pages() {
        let long = "palabra ".repeat(2000);
        let word = "x".repeat(20_000);
        let mut doc = RxDocument::default();
        doc.hospital.name = long.clone();
        doc.hospital.patron = word.clone();
        doc.hospital.headline = "\n\n\n".into();
        doc.hospital.location = long.clone();
        doc.hospital.contact = word.clone();
        doc.hospital.page_size = 1;
        doc.hospital.info = true;
        doc.hospital.picture = Some(vec![0xFF, 0xD8, 0xFF]);
        doc.hospital.university_logo = Some(vec![]);
        doc.medic.name = word.clone();
        doc.patient.name = long.clone();
        doc.patient.date_of_birth = "9999-99-99".into();
        doc.issued_on = word.clone();
        doc.diagnosis = "\u{0}\u{1F600}\r\n".repeat(500);
        doc.show_diagnosis = true;
        doc.extras = word.clone();
        doc.signature = word.clone();
        doc.cta_link = word.clone();
        doc.medications = (0..300)
            .map(|i| crate::MedicationLine {
                presentation: if i % 2 == 0 {
                    word.clone()
                } else {
                    String::new()
                },
                qty: if i % 2 == 0 { i64::MIN } else { i64::MAX },
                instructions: "\n".repeat(i),
                ..Default::default()
            })
            .collect();
        let laid = lay_out(&doc);
        assert!(
            laid.pages.len() > 10 && laid.pages.len() < 5000,
            "{}",
            laid.pages.len()
        );
        let pdf = crate::render(&doc);
        assert!(pdf.starts_with(b"%PDF-1.7") && pdf.ends_with(b"%%EOF"));
    }

    #[test]
    fn qr_for_links_only() {
        assert!(qr_modules("").is_none());
        let (n, modules) = qr_modules("https://receta.example/rx/abc").unwrap();
        assert_eq!(modules.len(), n * n);
        assert!(qr_modules(&"x".repeat(5000)).is_none());
        assert!(qr_modules("  ").is_none());
    }
}
