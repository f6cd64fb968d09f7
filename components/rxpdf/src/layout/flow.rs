//! The page engine: rows flowing down the page and onto new pages, each page with its (already
//! laid out) header on top, the footer added once the page count is known; and the text blocks
//! every section is made of (headings, paragraphs, labeled values).

use crate::content::Content;
use crate::document::RxDocument;
use crate::metrics::wrap;
use crate::winansi::encode;

use super::paint::{
    Geometry, HAIRLINE, IMAGE_NAMES, Lines, Logo, Row, Span, Style, draw_qr, draw_row,
};

/// What kind of page: the title under the header depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PageKind {
    First,
    Continuation,
    Info,
}

pub(super) struct Layout<'a> {
    pub(super) doc: &'a RxDocument,
    pub(super) g: Geometry,
    pub(super) logos: Vec<Logo>,
    pub(super) pages: Vec<Content>,
    /// Top of the free space on the current page.
    pub(super) y: f32,
    /// Where the body starts on the current page (below the header).
    pub(super) body_top: f32,
    /// Where the body ends on every page (above the footer).
    pub(super) bottom: f32,
    pub(super) footer: Vec<Row>,
    /// The headers of the first page, of continuation pages and of the information page, laid
    /// out once (by `letterhead`) before the first page opens.
    pub(super) first_header: Vec<Row>,
    pub(super) continuation_header: Vec<Row>,
    pub(super) info_header: Vec<Row>,
    /// The QR code drawn (`paint::draw_qr`): its width in modules and its dark modules.
    pub(super) qr: Option<(usize, Vec<bool>)>,
}

impl Layout<'_> {
    pub(super) fn content(&mut self) -> &mut Content {
        self.pages.last_mut().expect("a page is open")
    }

    /// Draws the QR code `qr` (`paint::draw_qr`) in a square of `size` at (`x`, `y`) and keeps it
    /// for the PDF writer, which stores its image mask once.
    pub(super) fn place_qr(&mut self, x: f32, y: f32, size: f32, qr: (usize, Vec<bool>)) {
        draw_qr(self.content(), x, y, size, qr.0);
        self.qr = Some(qr);
    }

    pub(super) fn new_page(&mut self, kind: PageKind) {
        // The first page holds the most (the QR code, the parties); later ones mostly text.
        let capacity = if self.pages.is_empty() {
            16 * 1024
        } else {
            4 * 1024
        };
        self.pages.push(Content::with_capacity(capacity));
        let top = self.g.height - self.g.margin;
        let rows = match kind {
            PageKind::First => std::mem::take(&mut self.first_header),
            PageKind::Continuation => self.continuation_header.clone(),
            PageKind::Info => std::mem::take(&mut self.info_header),
        };
        self.y = top;
        self.draw_logos(top);
        for row in rows {
            self.draw(&row);
        }
        self.body_top = self.y;
    }

    /// Places rows, moving to a new page first when they do not fit and would fit on a new one.
    pub(super) fn place(&mut self, rows: Vec<Row>) {
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
    pub(super) fn place_keeping(&mut self, mut rows: Vec<Row>, keep: usize) {
        let rest = rows.split_off(keep.min(rows.len()));
        self.place(rows);
        for row in rest {
            self.place(vec![row]);
        }
    }

    pub(super) fn at_page_top(&self) -> bool {
        self.y >= self.body_top - 0.01
    }

    pub(super) fn body_top_of_continuation(&self) -> f32 {
        let header: f32 = self.continuation_header.iter().map(|r| r.height).sum();
        self.g.height - self.g.margin - header
    }

    /// Draws a row at the current position and moves below it.
    pub(super) fn draw(&mut self, row: &Row) {
        let top = self.y;
        draw_row(self.content(), top, row);
        self.y = top - row.height;
    }

    /// Adds the footers, now that the number of pages is known, and returns the content streams.
    pub(super) fn finish(mut self) -> Vec<Vec<u8>> {
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

    /// Width kept at each side of the header for the logos.
    pub(super) fn logo_box(&self) -> f32 {
        62.0 * self.g.k
    }

    pub(super) fn draw_logos(&mut self, top: f32) {
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

    pub(super) fn heading_line(&self, lines: &mut Lines, text: &str) {
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
    pub(super) fn labeled(&self, lines: &mut Lines, label: &str, value: &str, width: f32) {
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
    pub(super) fn heading_rows(&self, text: &str) -> Vec<Row> {
        let g = self.g;
        let mut row = Row::text(g.left(), g.heading(), encode(text));
        row.height += 2.0 * g.k;
        row.rules.push((g.left(), g.content_width(), HAIRLINE, 0.6));
        vec![row, Row::gap(5.0 * g.k)]
    }

    /// Paragraphs of body text (line breaks in the input start new paragraphs).
    pub(super) fn paragraph_rows(&self, text: &str, x: f32, width: f32, style: Style) -> Vec<Row> {
        text.trim()
            .lines()
            .flat_map(|p| wrap(&encode(p), style.font, style.size, width, width))
            .map(|line| Row::text(x, style, line))
            .collect()
    }
}

/// Lines of plain text, wrapped to `width`, for a column.
pub(super) fn text_lines(lines: &mut Lines, style: Style, text: &str, width: f32) {
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
/// `lines` as rows, each span moved right by `x`.
pub(super) fn rows_at(lines: Lines, x: f32) -> Vec<Row> {
    lines
        .into_iter()
        .map(|(height, spans)| Row {
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
        })
        .collect()
}

pub(super) fn max_size(spans: &[Span]) -> f32 {
    spans.iter().map(|s| s.style.size).fold(0.0, f32::max)
}

/// An em dash for a missing value, so that a blank is visibly blank.
pub(super) fn dash(value: &str) -> String {
    let v = value.trim();
    if v.is_empty() { "—".into() } else { v.into() }
}

/// Keeps at most `max` lines, ending the last kept one with an ellipsis when some were dropped.
pub(super) fn shorten(lines: &mut Vec<Vec<u8>>, max: usize, style: Style, width: f32) {
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
