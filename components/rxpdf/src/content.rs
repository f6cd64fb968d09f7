//! Page content streams, written straight into bytes.
//!
//! `pdf_writer::Content` formats every number with the shortest representation that round-trips
//! an `f32` (`ryu`), which was the largest cost of a render after the QR code. A page uses a dozen
//! operators, so they are written here: numbers with at most three decimals (a thousandth of a
//! point, far below what any device shows), and the fill color and font only when they change
//! (both are graphics state, which text objects keep).

/// A fill color, RGB in 0..=1.
pub type Rgb = (f32, f32, f32);

/// A number ready to write, followed by a space: at most three decimals, no exponent, no
/// trailing zeros. Kept left-aligned in a fixed buffer, so that writing it is one copy of 16 bytes
/// (then the vector is cut back to its length).
#[derive(Clone, Copy)]
pub struct Num {
    buf: [u8; 16],
    len: u8,
}

impl Num {
    pub fn new(v: f32) -> Num {
        let scaled = f64::from(v) * 1000.0;
        // Rounded half away from zero; `as` saturates and takes NaN to 0. Beyond a billion points
        // it is no page coordinate: clamped so that it fits.
        let scaled = if scaled >= 0.0 {
            (scaled + 0.5) as i64
        } else {
            (scaled - 0.5) as i64
        };
        let scaled = scaled.clamp(-999_999_999_999, 999_999_999_999);
        let mut digits = [0u8; 16];
        let mut i = digits.len();
        let abs = scaled.unsigned_abs();
        let (mut int, mut frac) = (abs / 1000, (abs % 1000) as u32);
        if frac != 0 {
            let mut places = 3;
            while frac % 10 == 0 {
                frac /= 10;
                places -= 1;
            }
            for _ in 0..places {
                i -= 1;
                digits[i] = b'0' + (frac % 10) as u8;
                frac /= 10;
            }
            i -= 1;
            digits[i] = b'.';
        }
        loop {
            i -= 1;
            digits[i] = b'0' + (int % 10) as u8;
            int /= 10;
            if int == 0 {
                break;
            }
        }
        if scaled < 0 {
            i -= 1;
            digits[i] = b'-';
        }
        let len = digits.len() - i;
        let mut buf = [b' '; 16];
        buf[..len].copy_from_slice(&digits[i..]);
        Num {
            buf,
            len: len as u8 + 1,
        }
    }

    /// The number and the space after it.
    #[cfg(test)]
    fn as_bytes(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }

    fn write(&self, out: &mut Vec<u8>) {
        let end = out.len() + usize::from(self.len);
        out.extend_from_slice(&self.buf);
        out.truncate(end);
    }
}

/// One page's content stream.
pub struct Content {
    buf: Vec<u8>,
    /// The current fill color, when known.
    fill: Option<Rgb>,
    /// The current font resource and size, when known.
    font: Option<(&'static [u8], f32)>,
}

impl Content {
    pub fn with_capacity(capacity: usize) -> Content {
        Content {
            buf: Vec::with_capacity(capacity),
            fill: None,
            font: None,
        }
    }

    /// Numbers separated by spaces, then ` op` and a line break.
    fn op(&mut self, operands: &[f32], op: &[u8]) {
        for &v in operands {
            Num::new(v).write(&mut self.buf);
        }
        self.buf.extend_from_slice(op);
        self.buf.push(b'\n');
    }

    /// `rg`, unless the color is already the fill color.
    pub fn fill_rgb(&mut self, color: Rgb) {
        if self.fill != Some(color) {
            self.fill = Some(color);
            self.op(&[color.0, color.1, color.2], b"rg");
        }
    }

    /// A rectangle added to the current path.
    pub fn rect(&mut self, x: f32, y: f32, w: f32, h: f32) {
        self.op(&[x, y, w, h], b"re");
    }

    /// Fills the current path (nonzero winding) and ends it.
    pub fn fill(&mut self) {
        self.buf.extend_from_slice(b"f\n");
    }

    /// Paints the image XObject `name` in the unit square mapped by `matrix`.
    pub fn image(&mut self, name: &[u8], matrix: [f32; 6]) {
        self.buf.extend_from_slice(b"q\n");
        self.op(&matrix, b"cm");
        self.buf.push(b'/');
        self.buf.extend_from_slice(name);
        self.buf.extend_from_slice(b" Do\nQ\n");
    }

    /// A text object showing `text` (font encoding bytes) at (`x`, `y`).
    pub fn text(&mut self, font: &'static [u8], size: f32, x: f32, y: f32, text: &[u8]) {
        self.buf.extend_from_slice(b"BT\n");
        if self.font != Some((font, size)) {
            self.font = Some((font, size));
            self.buf.push(b'/');
            self.buf.extend_from_slice(font);
            self.buf.push(b' ');
            self.op(&[size], b"Tf");
        }
        self.op(&[x, y], b"Td");
        self.buf.reserve(text.len() + 12);
        self.buf.push(b'(');
        for &b in text {
            match b {
                b'(' | b')' | b'\\' => self.buf.extend_from_slice(&[b'\\', b]),
                // Line ends inside a literal string would be read back as `\n`; no control
                // character is ever shown, but whatever comes is kept as it is.
                0..=0x1F => self.buf.extend_from_slice(&[
                    b'\\',
                    b'0' + (b >> 6),
                    b'0' + (b >> 3 & 7),
                    b'0' + (b & 7),
                ]),
                _ => self.buf.push(b),
            }
        }
        self.buf.extend_from_slice(b") Tj\nET\n");
    }

    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(v: f32) -> String {
        let bytes = Num::new(v).as_bytes().to_vec();
        assert_eq!(bytes.last(), Some(&b' '));
        String::from_utf8(bytes).unwrap().trim_end().to_string()
    }

    #[test]
    fn numbers_have_at_most_three_decimals() {
        assert_eq!(num(0.0), "0");
        assert_eq!(num(-0.0), "0");
        assert_eq!(num(612.0), "612");
        assert_eq!(num(0.38), "0.38");
        assert_eq!(num(0.945), "0.945");
        assert_eq!(num(173.25375), "173.254");
        assert_eq!(num(45.090908), "45.091");
        assert_eq!(num(-0.02), "-0.02");
        assert_eq!(num(0.005), "0.005");
        assert_eq!(num(0.0004), "0");
        assert_eq!(num(-0.0004), "0");
        assert_eq!(num(1.0006), "1.001");
        assert_eq!(num(99.9999), "100");
        assert_eq!(num(1e20), "999999999.999");
        assert_eq!(num(-1e20), "-999999999.999");
        assert_eq!(num(-123.4567), "-123.457");
        assert_eq!(num(f32::NAN), "0");
        assert_eq!(num(f32::INFINITY), "999999999.999");
    }

    #[test]
    fn state_is_written_only_when_it_changes() {
        let mut c = Content::with_capacity(0);
        c.fill_rgb((0.0, 0.5, 1.0));
        c.text(b"F1", 9.5, 40.0, 700.0, b"a(b)c\\");
        c.fill_rgb((0.0, 0.5, 1.0));
        c.text(b"F1", 9.5, 40.0, 688.5, b"\xF1and\xFA");
        c.text(b"F2", 9.5, 40.0, 677.0, b"x");
        c.rect(1.0, 2.0, 3.25, 4.0);
        c.fill();
        c.image(b"Im1", [62.0, 0.0, 0.0, 45.5, 510.0, 706.9091]);
        let out = c.finish();
        let expected: &[u8] = b"0 0.5 1 rg\nBT\n/F1 9.5 Tf\n40 700 Td\n(a\\(b\\)c\\\\) Tj\nET\n\
            BT\n40 688.5 Td\n(\xF1and\xFA) Tj\nET\n\
            BT\n/F2 9.5 Tf\n40 677 Td\n(x) Tj\nET\n\
            1 2 3.25 4 re\nf\n\
            q\n62 0 0 45.5 510 706.909 cm\n/Im1 Do\nQ\n";
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(expected)
        );
    }
}
