//! Font metrics of the standard fonts this crate uses, and line wrapping.
//!
//! The widths are the Adobe Font Metrics of Helvetica and Helvetica-Bold (URW's Nimbus Sans, which
//! is metric-compatible, gives the same numbers), in thousandths of the font size, for the
//! WinAnsiEncoding bytes 32..=255. Courier is monospaced: every glyph is 600.

/// The fonts of the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Font {
    Regular,
    Bold,
    Mono,
}

impl Font {
    /// Width of one WinAnsi byte, in thousandths of the font size.
    pub fn glyph_width(self, byte: u8) -> u16 {
        match self {
            Font::Regular => HELVETICA_WIDTHS[usize::from(byte)],
            Font::Bold => HELVETICA_BOLD_WIDTHS[usize::from(byte)],
            Font::Mono => 600,
        }
    }

    /// Width of WinAnsi text, in thousandths of the font size.
    pub fn units(self, text: &[u8]) -> u32 {
        let table = match self {
            Font::Regular => &HELVETICA_WIDTHS,
            Font::Bold => &HELVETICA_BOLD_WIDTHS,
            Font::Mono => return 600 * text.len() as u32,
        };
        text.iter().map(|&b| u32::from(table[usize::from(b)])).sum()
    }

    /// Width of WinAnsi text at `size` points.
    pub fn width(self, text: &[u8], size: f32) -> f32 {
        self.units(text) as f32 * size / 1000.0
    }
}

/// A table of widths for every byte: 0 below 32, and undefined codes, which never get written
/// (the encoder does not produce them), as wide as `?`.
const fn widths(table: &[u16; 224]) -> [u16; 256] {
    let mut all = [0u16; 256];
    let mut b = 32;
    while b < 256 {
        all[b] = match table[b - 32] {
            0 => table[(b'?' - 32) as usize],
            w => w,
        };
        b += 1;
    }
    all
}

static HELVETICA_WIDTHS: [u16; 256] = widths(&HELVETICA);
static HELVETICA_BOLD_WIDTHS: [u16; 256] = widths(&HELVETICA_BOLD);

/// Breaks WinAnsi text into lines no wider than `width` points (the first line no wider than
/// `first_width`, for text that follows a label on the same line). Lines break between words;
/// a word longer than a whole line is broken between characters, so nothing is ever cut off.
/// Runs of spaces collapse to one. Empty text gives one empty line.
pub fn wrap(text: &[u8], font: Font, size: f32, first_width: f32, width: f32) -> Vec<Vec<u8>> {
    let space = font.width(b" ", size);
    let mut lines: Vec<Vec<u8>> = Vec::new();
    // Room for a whole line up front: lines are seldom longer than this.
    let capacity = text.len().min(160);
    let mut line: Vec<u8> = Vec::with_capacity(capacity);
    let mut line_w = 0.0f32;
    let avail = |lines: &Vec<Vec<u8>>| if lines.is_empty() { first_width } else { width };
    for word in text.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
        let word_w = font.width(word, size);
        if !line.is_empty() && line_w + space + word_w <= avail(&lines) {
            line.push(b' ');
            line.extend_from_slice(word);
            line_w += space + word_w;
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::replace(&mut line, Vec::with_capacity(capacity)));
            line_w = 0.0;
        }
        if word_w <= avail(&lines) {
            line.extend_from_slice(word);
            line_w = word_w;
            continue;
        }
        // A word longer than the line: as many characters as fit on each line, at least one.
        for &b in word {
            let w = f32::from(font.glyph_width(b)) * size / 1000.0;
            if !line.is_empty() && line_w + w > avail(&lines) {
                lines.push(std::mem::replace(&mut line, Vec::with_capacity(capacity)));
                line_w = 0.0;
            }
            line.push(b);
            line_w += w;
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

pub(crate) const HELVETICA: [u16; 224] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556,
    556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667,
    611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667,
    667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500,
    222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
    0, 556, 0, 222, 556, 333, 1000, 556, 556, 333, 1000, 667, 333, 1000, 0, 611, 0, 0, 222, 222,
    333, 333, 350, 556, 1000, 333, 1000, 500, 333, 944, 0, 500, 667, 278, 333, 556, 556, 556, 556,
    260, 556, 333, 737, 370, 556, 584, 333, 737, 333, 400, 584, 333, 333, 333, 556, 537, 278, 333,
    333, 365, 556, 834, 834, 834, 611, 667, 667, 667, 667, 667, 667, 1000, 722, 667, 667, 667, 667,
    278, 278, 278, 278, 722, 722, 778, 778, 778, 778, 778, 584, 778, 722, 722, 722, 722, 667, 667,
    611, 556, 556, 556, 556, 556, 556, 889, 500, 556, 556, 556, 556, 278, 278, 278, 278, 556, 556,
    556, 556, 556, 556, 556, 584, 611, 556, 556, 556, 556, 500, 556, 500,
];
pub(crate) const HELVETICA_BOLD: [u16; 224] = [
    278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556,
    556, 556, 556, 556, 556, 556, 556, 333, 333, 584, 584, 584, 611, 975, 722, 722, 722, 722, 667,
    611, 778, 722, 278, 556, 722, 611, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667,
    667, 611, 333, 278, 333, 584, 556, 333, 556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556,
    278, 889, 611, 611, 611, 611, 389, 556, 333, 611, 556, 778, 556, 556, 500, 389, 280, 389, 584,
    0, 556, 0, 278, 556, 500, 1000, 556, 556, 333, 1000, 667, 333, 1000, 0, 611, 0, 0, 278, 278,
    500, 500, 350, 556, 1000, 333, 1000, 556, 333, 944, 0, 500, 667, 278, 333, 556, 556, 556, 556,
    280, 556, 333, 737, 370, 556, 584, 333, 737, 333, 400, 584, 333, 333, 333, 611, 556, 278, 333,
    333, 365, 556, 834, 834, 834, 611, 722, 722, 722, 722, 722, 722, 1000, 722, 667, 667, 667, 667,
    278, 278, 278, 278, 722, 722, 778, 778, 778, 778, 778, 584, 778, 722, 722, 722, 722, 667, 667,
    611, 556, 556, 556, 556, 556, 556, 889, 556, 556, 556, 556, 556, 278, 278, 278, 278, 611, 611,
    611, 611, 611, 611, 611, 584, 611, 611, 611, 611, 611, 556, 611, 556,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_are_helvetica() {
        assert_eq!(Font::Regular.glyph_width(b' '), 278);
        assert_eq!(Font::Regular.glyph_width(b'@'), 1015);
        assert_eq!(Font::Regular.glyph_width(b'i'), 222);
        assert_eq!(Font::Bold.glyph_width(b'@'), 975);
        assert_eq!(Font::Bold.glyph_width(b'i'), 278);
        assert_eq!(Font::Regular.glyph_width(0xF1), 556); // ñ
        assert_eq!(Font::Regular.glyph_width(0xBF), 611); // ¿
        assert_eq!(Font::Regular.glyph_width(0x80), 556); // €
        assert_eq!(Font::Mono.glyph_width(b'f'), 600);
        assert_eq!(Font::Regular.glyph_width(0x81), 556); // undefined: as wide as `?`
        assert_eq!(Font::Regular.glyph_width(b'\n'), 0);
        assert_eq!(Font::Mono.units(b"abc"), 1800);
        // "Hola" = 722 + 556 + 222 + 556 at 10 pt.
        assert!((Font::Regular.width(b"Hola", 10.0) - 20.56).abs() < 1e-4);
    }

    #[test]
    fn wraps_between_words() {
        let text = b"uno dos tres cuatro cinco seis siete";
        let lines = wrap(text, Font::Regular, 10.0, 60.0, 60.0);
        assert!(lines.len() > 1);
        for line in &lines {
            assert!(Font::Regular.width(line, 10.0) <= 60.0, "{line:?}");
            assert!(!line.starts_with(b" ") && !line.ends_with(b" "));
        }
        assert_eq!(lines.join(&b' '), text.to_vec());
    }

    #[test]
    fn first_line_can_be_shorter() {
        let lines = wrap(b"aaa bbb ccc", Font::Regular, 10.0, 20.0, 1000.0);
        assert_eq!(lines, vec![b"aaa".to_vec(), b"bbb ccc".to_vec()]);
        // A first line too short for even the first word still gets it, broken.
        let lines = wrap(b"abcdef", Font::Regular, 10.0, 12.0, 1000.0);
        assert_eq!(lines.concat(), b"abcdef".to_vec());
        assert!(lines.len() == 2);
    }

    #[test]
    fn long_words_break_between_characters() {
        let word = [b'x'; 200];
        let lines = wrap(&word, Font::Regular, 10.0, 100.0, 100.0);
        assert!(lines.len() >= 10);
        assert_eq!(lines.concat(), word.to_vec());
        for line in &lines {
            assert!(Font::Regular.width(line, 10.0) <= 100.0);
        }
        // Even a width narrower than one character makes progress.
        let lines = wrap(b"WW", Font::Bold, 10.0, 1.0, 1.0);
        assert_eq!(lines, vec![b"W".to_vec(), b"W".to_vec()]);
    }

    #[test]
    fn empty_and_spaces() {
        assert_eq!(
            wrap(b"", Font::Regular, 10.0, 50.0, 50.0),
            vec![Vec::<u8>::new()]
        );
        assert_eq!(
            wrap(b"  a   b  ", Font::Regular, 10.0, 500.0, 500.0),
            vec![b"a b".to_vec()]
        );
    }
}
