//! The drawable vocabulary and how it is painted: styles, spans and rows (a band of the page with
//! text, fills and rules), the page geometry, the colors and the PDF resource names, and the
//! painters for rows, text and the QR code. Knows nothing of prescriptions.

use pdf_writer::Name;

use crate::content::{Content, Rgb};
use crate::jpeg::JpegInfo;
use crate::metrics::Font;

pub(super) const ACCENT: Rgb = (0.0, 0.38, 0.42);

pub(super) const INK: Rgb = (0.12, 0.12, 0.14);

pub(super) const MUTED: Rgb = (0.36, 0.38, 0.42);

pub(super) const PANEL: Rgb = (0.945, 0.96, 0.965);

pub(super) const HAIRLINE: Rgb = (0.80, 0.83, 0.85);

pub(super) const LINK: Rgb = (0.05, 0.30, 0.60);

pub(super) const BLACK: Rgb = (0.0, 0.0, 0.0);

/// Resource names of the fonts and images, shared by the PDF writer.
pub const FONT_REGULAR: Name<'static> = Name(b"F1");

pub const FONT_BOLD: Name<'static> = Name(b"F2");

pub const FONT_MONO: Name<'static> = Name(b"F3");

pub const IMAGE_NAMES: [Name<'static>; 2] = [Name(b"Im1"), Name(b"Im2")];

/// The QR code's image mask (`draw_qr`).
pub const QR_NAME: Name<'static> = Name(b"Qr");

pub(super) fn font_name(font: Font) -> Name<'static> {
    match font {
        Font::Regular => FONT_REGULAR,
        Font::Bold => FONT_BOLD,
        Font::Mono => FONT_MONO,
    }
}

/// A font, size and color.
#[derive(Debug, Clone, Copy)]
pub(super) struct Style {
    pub(super) font: Font,
    pub(super) size: f32,
    pub(super) color: Rgb,
}

impl Style {
    pub(super) fn width(&self, text: &[u8]) -> f32 {
        self.font.width(text, self.size)
    }
    pub(super) fn line_height(&self) -> f32 {
        self.size * 1.28
    }
}

/// Text at `x` (absolute), on the row's baseline, or `dy` below it.
#[derive(Debug, Clone)]
pub(super) struct Span {
    pub(super) dy: f32,
    pub(super) x: f32,
    pub(super) style: Style,
    pub(super) text: Vec<u8>,
}

/// One band of the page.
#[derive(Debug, Clone, Default)]
pub(super) struct Row {
    pub(super) height: f32,
    /// Distance from the row's top to the text baseline.
    pub(super) baseline: f32,
    pub(super) spans: Vec<Span>,
    /// Background rectangles `(x, width, color)` over the row's full height.
    pub(super) fills: Vec<(f32, f32, Rgb)>,
    /// Horizontal rules `(x, width, color, thickness)` along the row's bottom.
    pub(super) rules: Vec<(f32, f32, Rgb, f32)>,
}

impl Row {
    pub(super) fn gap(height: f32) -> Row {
        Row {
            height,
            ..Row::default()
        }
    }
    /// One line of text in `style`, starting at `x`.
    pub(super) fn text(x: f32, style: Style, text: Vec<u8>) -> Row {
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
pub(super) type Lines = Vec<(f32, Vec<Span>)>;

/// Sizes and positions that depend on the page size.
#[derive(Debug, Clone, Copy)]
pub(super) struct Geometry {
    pub(super) width: f32,
    pub(super) height: f32,
    pub(super) margin: f32,
    /// Scale of type and spacing: 1 on Letter, smaller on Half Letter.
    pub(super) k: f32,
}

impl Geometry {
    pub(super) fn left(&self) -> f32 {
        self.margin
    }
    pub(super) fn right(&self) -> f32 {
        self.width - self.margin
    }
    pub(super) fn content_width(&self) -> f32 {
        self.width - 2.0 * self.margin
    }
    pub(super) fn style(&self, font: Font, size: f32, color: Rgb) -> Style {
        Style {
            font,
            size: size * self.k,
            color,
        }
    }
    pub(super) fn body(&self) -> Style {
        self.style(Font::Regular, 9.5, INK)
    }
    pub(super) fn label(&self) -> Style {
        self.style(Font::Bold, 9.5, INK)
    }
    pub(super) fn small(&self) -> Style {
        self.style(Font::Regular, 8.0, MUTED)
    }
    pub(super) fn heading(&self) -> Style {
        self.style(Font::Bold, 8.5, ACCENT)
    }
}

/// A logo ready to draw: which image slot, and its pixel size for the aspect ratio.
#[derive(Debug, Clone, Copy)]
pub struct Logo {
    pub slot: usize,
    pub info: JpegInfo,
}

/// A text span at `x` on the row's baseline.
pub(super) fn span(x: f32, style: Style, text: Vec<u8>) -> Span {
    Span {
        dy: 0.0,
        x,
        style,
        text,
    }
}

/// Draws a row whose top is at `top`: fills, then rules, then text.
pub(super) fn draw_row(c: &mut Content, top: f32, row: &Row) {
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

pub(super) fn draw_text(c: &mut Content, x: f32, y: f32, style: Style, text: &[u8]) {
    if text.is_empty() {
        return;
    }
    c.fill_rgb(style.color);
    c.text(font_name(style.font).0, style.size, x, y, text);
}

/// Draws the document's QR code of `n`×`n` modules (the image mask [`QR_NAME`], `qr_mask`) in a
/// white square of `size` at (`x`, `y`), with a quiet zone of 4 modules each side. One image of a
/// bit per module instead of a rectangle per run of dark modules: ~0.5 KB in the PDF instead of
/// ~27 KB, so every create writes (and every email carries) six fewer 4 KB pages.
pub(super) fn draw_qr(c: &mut Content, x: f32, y: f32, size: f32, n: usize) {
    let module = size / (n + 8) as f32;
    c.fill_rgb((1.0, 1.0, 1.0));
    c.rect(x, y, size, size);
    c.fill();
    c.fill_rgb(BLACK);
    let side = n as f32 * module;
    c.image(
        QR_NAME.0,
        [side, 0.0, 0.0, side, x + 4.0 * module, y + 4.0 * module],
    );
}

/// The image mask of a QR code of `n`×`n` `modules` (dark ones true, row by row from the top):
/// one bit per module, a dark one 1, each row padded to a whole byte (PDF 32000-1, 8.9.6.2).
pub fn qr_mask(n: usize, modules: &[bool]) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * n.div_ceil(8));
    for row in modules.chunks_exact(n) {
        for byte in row.chunks(8) {
            out.push(
                byte.iter()
                    .enumerate()
                    .fold(0u8, |b, (i, &dark)| b | (u8::from(dark) << (7 - i))),
            );
        }
    }
    out
}

/// The QR code of the link (error correction M): its width in modules and the dark modules, row
/// by row. `None` for no link, or one too long for a QR code.
pub(super) fn qr_modules(link: &str) -> Option<(usize, Vec<bool>)> {
    let link = link.trim();
    if link.is_empty() {
        return None;
    }
    crate::qr::encode(link.as_bytes())
}
