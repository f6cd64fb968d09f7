//! The QR code of the patient link, with the `qrcode` crate.
//!
//! `qrcode::QrCode` picks the mask with the lowest penalty score, as the standard asks, but its
//! scoring allocates for every position and takes about a millisecond: most of the time of a
//! whole render. This module builds the code with the crate's own pieces and scores the eight
//! masks with the same rules (the crate's, quirks included), so that the chosen mask, and so every
//! module, is the same as `QrCode::with_error_correction_level`'s.
//!
//! Symbols up to 64 modules wide (version 11, some 250 bytes of link at level M: every link the
//! service prints) are masked and scored on rows of bits, one `u64` per row and per column, with
//! shifts and population counts. Wider symbols take the plain path: the crate masks, the rules are
//! counted module by module.

use qrcode::canvas::{Canvas, MaskPattern, Module};
use qrcode::{Color, EcLevel, Version, bits, ec};

const MASKS: [MaskPattern; 8] = [
    MaskPattern::Checkerboard,
    MaskPattern::HorizontalLines,
    MaskPattern::VerticalLines,
    MaskPattern::DiagonalLines,
    MaskPattern::LargeCheckerboard,
    MaskPattern::Fields,
    MaskPattern::Diamonds,
    MaskPattern::Meadow,
];

/// The QR code of `data` at error correction level M: width in modules and the dark modules, row
/// by row. `None` when the data does not fit in a QR code.
pub fn encode(data: &[u8]) -> Option<(usize, Vec<bool>)> {
    let bits = bits::encode_auto(data, EcLevel::M).ok()?;
    let version = bits.version();
    if !matches!(version, Version::Normal(_)) {
        return None;
    }
    let n = version.width() as usize;
    let bytes = bits.into_bytes();
    let (data_codewords, ec_codewords) =
        ec::construct_codewords(&bytes, version, EcLevel::M).ok()?;
    let mut canvas = Canvas::new(version, EcLevel::M);
    canvas.draw_all_functional_patterns();
    canvas.draw_data(&data_codewords, &ec_codewords);
    if n <= 64 {
        return Some((n, encode_narrow(&canvas, n)));
    }
    let mut best: Option<(i32, Vec<bool>)> = None;
    for mask in MASKS {
        let dark = masked_by_the_crate(&canvas, mask);
        let score = penalty(&dark, n);
        // The first of equal scores wins, as with `Iterator::min_by_key`.
        if best.as_ref().is_none_or(|(s, _)| score < *s) {
            best = Some((score, dark));
        }
    }
    best.map(|(_, dark)| (n, dark))
}

/// The symbol with `mask` applied by the crate, dark modules row by row.
fn masked_by_the_crate(canvas: &Canvas, mask: MaskPattern) -> Vec<bool> {
    let mut masked = canvas.clone();
    masked.apply_mask(mask);
    masked
        .into_colors()
        .into_iter()
        .map(|c| c == Color::Dark)
        .collect()
}

/// The format information of level M with each mask, 15 bits (the crate's `FORMAT_INFOS_QR`:
/// level M is entries 0 to 7).
const FORMAT_INFO_M: [u32; 8] = [
    0x5412, 0x5125, 0x5e7c, 0x5b4b, 0x45f9, 0x40ce, 0x4f97, 0x4aa0,
];
/// Where the format information goes, most significant bit first; negative counts from the far
/// edge (the crate's `FORMAT_INFO_COORDS_QR_MAIN` and `_SIDE`).
const FORMAT_MAIN: [(i32, i32); 15] = [
    (0, 8),
    (1, 8),
    (2, 8),
    (3, 8),
    (4, 8),
    (5, 8),
    (7, 8),
    (8, 8),
    (8, 7),
    (8, 5),
    (8, 4),
    (8, 3),
    (8, 2),
    (8, 1),
    (8, 0),
];
const FORMAT_SIDE: [(i32, i32); 15] = [
    (8, -1),
    (8, -2),
    (8, -3),
    (8, -4),
    (8, -5),
    (8, -6),
    (8, -7),
    (-8, 8),
    (-7, 8),
    (-6, 8),
    (-5, 8),
    (-4, 8),
    (-3, 8),
    (-2, 8),
    (-1, 8),
];

/// Rows of at most 64 modules: bit `x` of `rows[y]` is the module at column `x`, row `y`. The
/// same for columns: bit `y` of `cols[x]`.
type Rows = [u64; 64];

/// A symbol of at most 64 modules both ways: by rows and by columns, so that the vertical rules
/// are counted like the horizontal ones.
#[derive(Clone, Copy)]
struct Bits {
    rows: Rows,
    cols: Rows,
}

impl Bits {
    fn set(&mut self, x: usize, y: usize, on: bool) {
        if on {
            self.rows[y] |= 1 << x;
            self.cols[x] |= 1 << y;
        } else {
            self.rows[y] &= !(1 << x);
            self.cols[x] &= !(1 << y);
        }
    }
}

/// Whether mask pattern `mask` (an index into [`MASKS`]) inverts the module at (`x`, `y`): the
/// crate's mask functions.
const fn inverts(mask: usize, x: usize, y: usize) -> bool {
    match mask {
        0 => (x + y).is_multiple_of(2),
        1 => y.is_multiple_of(2),
        2 => x.is_multiple_of(3),
        3 => (x + y).is_multiple_of(3),
        4 => (y / 2 + x / 3).is_multiple_of(2),
        5 => (x * y) % 2 + (x * y) % 3 == 0,
        6 => ((x * y) % 2 + (x * y) % 3).is_multiple_of(2),
        _ => ((x + y) % 2 + (x * y) % 3).is_multiple_of(2),
    }
}

/// Every mask pattern repeats every 12 modules both ways: `MASK_ROWS[mask][y % 12]` is row `y`
/// of a mask, `MASK_COLS[mask][x % 12]` column `x`.
const MASK_ROWS: [[u64; 12]; 8] = mask_lines(true);
const MASK_COLS: [[u64; 12]; 8] = mask_lines(false);

const fn mask_lines(rows: bool) -> [[u64; 12]; 8] {
    let mut table = [[0u64; 12]; 8];
    let mut mask = 0;
    while mask < 8 {
        let mut line = 0;
        while line < 12 {
            let mut k = 0;
            while k < 64 {
                let (x, y) = if rows { (k, line) } else { (line, k) };
                if inverts(mask, x, y) {
                    table[mask][line] |= 1 << k;
                }
                k += 1;
            }
            line += 1;
        }
        mask += 1;
    }
    table
}

/// The unmasked symbol as bits: the dark modules, and the modules a mask inverts (data and error
/// correction, and any module left empty, as `Module::mask` treats them).
fn unmasked_bits(canvas: &Canvas, n: usize) -> (Bits, Bits) {
    let empty = Bits {
        rows: [0; 64],
        cols: [0; 64],
    };
    let (mut dark, mut maskable) = (empty, empty);
    for y in 0..n {
        for x in 0..n {
            let (d, m) = match canvas.get(x as i16, y as i16) {
                Module::Empty => (false, true),
                Module::Unmasked(c) => (c == Color::Dark, true),
                Module::Masked(c) => (c == Color::Dark, false),
            };
            dark.set(x, y, d);
            maskable.set(x, y, m);
        }
    }
    (dark, maskable)
}

/// The symbol with mask `mask` applied and its format information drawn, as
/// `Canvas::apply_mask` leaves it.
fn masked_bits(dark: &Bits, maskable: &Bits, mask: usize, n: usize) -> Bits {
    let mut bits = *dark;
    for i in 0..n {
        bits.rows[i] ^= maskable.rows[i] & MASK_ROWS[mask][i % 12];
        bits.cols[i] ^= maskable.cols[i] & MASK_COLS[mask][i % 12];
    }
    let at = |v: i32| if v < 0 { v + n as i32 } else { v } as usize;
    for (i, (&(x1, y1), &(x2, y2))) in FORMAT_MAIN.iter().zip(&FORMAT_SIDE).enumerate() {
        let on = (FORMAT_INFO_M[mask] >> (14 - i)) & 1 == 1;
        bits.set(at(x1), at(y1), on);
        bits.set(at(x2), at(y2), on);
    }
    // The dark module next to the bottom-left finder was drawn with the functional patterns and
    // is not maskable: it is already dark.
    bits
}

/// The eight masks scored on bits; the rows of the best one as booleans.
fn encode_narrow(canvas: &Canvas, n: usize) -> Vec<bool> {
    let (dark, maskable) = unmasked_bits(canvas, n);
    let mut best: Option<(i32, Bits)> = None;
    for mask in 0..MASKS.len() {
        let bits = masked_bits(&dark, &maskable, mask, n);
        let score = penalty_bits(&bits, n);
        // The first of equal scores wins, as with `Iterator::min_by_key`.
        if best.as_ref().is_none_or(|(s, _)| score < *s) {
            best = Some((score, bits));
        }
    }
    let (_, bits) = best.expect("eight masks");
    let mut out = Vec::with_capacity(n * n);
    for row in &bits.rows[..n] {
        out.extend((0..n).map(|x| row >> x & 1 == 1));
    }
    out
}

/// The `k` lowest bits.
fn low(k: usize) -> u64 {
    if k >= 64 { !0 } else { (1u64 << k) - 1 }
}

/// [`penalty`] on bits (`n` ≤ 64).
fn penalty_bits(bits: &Bits, n: usize) -> i32 {
    let (rows, cols) = (&bits.rows, &bits.cols);
    let pairs = low(n - 1);
    let mut score = 0i32;
    for lines in [&rows[..n], &cols[..n]] {
        for &line in lines {
            // N1: bit k of `same` when modules k and k + 1 match; a run of r ≥ 5 modules has
            // r - 4 starts of four matching pairs in a row, one of them its first: r - 2 points.
            let same = !(line ^ (line >> 1)) & pairs;
            let fives = same & (same >> 1) & (same >> 2) & (same >> 3);
            let firsts = fives & !(same << 1);
            score += (fives.count_ones() + 2 * firsts.count_ones()) as i32;
            // N3: dark-light-dark-dark-dark-light-dark starting at bit j.
            let mut finders = line
                & !(line >> 1)
                & (line >> 2)
                & (line >> 3)
                & (line >> 4)
                & !(line >> 5)
                & (line >> 6)
                & low(n - 6);
            while finders != 0 {
                let j = finders.trailing_zeros() as usize;
                finders &= finders - 1;
                let before = low(j) & !low(j.saturating_sub(4));
                let after = low((j + 11).min(n)) & !low(j + 7);
                if line & before == 0 || line & after == 0 {
                    score += 40;
                }
            }
        }
        // The three real finder patterns match 9 times in each direction.
        score -= 360;
    }
    // N2: 2×2 blocks of one color.
    for pair in rows[..n].windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let blocks = !(a ^ (a >> 1)) & !(b ^ (b >> 1)) & !(a ^ b) & pairs;
        score += 3 * blocks.count_ones() as i32;
    }
    // N4: deviation from half dark.
    let dark: usize = rows[..n].iter().map(|r| r.count_ones() as usize).sum();
    let ratio = (dark * 200 / (n * n)) as i32;
    score + (ratio - 100).abs()
}

/// The penalty score of a masked symbol (rules N1 to N4), as `qrcode` computes it.
fn penalty(m: &[bool], n: usize) -> i32 {
    let at = |horizontal: bool, line: usize, k: usize| {
        if horizontal {
            m[line * n + k]
        } else {
            m[k * n + line]
        }
    };
    let mut score = 0i32;
    for horizontal in [true, false] {
        for line in 0..n {
            // N1: runs of five or more modules of one color: 3 + (run - 5) each.
            let mut run = 1;
            for k in 1..=n {
                if k < n && at(horizontal, line, k) == at(horizontal, line, k - 1) {
                    run += 1;
                } else {
                    if run >= 5 {
                        score += run - 2;
                    }
                    run = 1;
                }
            }
            // N3: 1:1:3:1:1 finder-like patterns not flanked by four light modules on both sides.
            const PATTERN: [bool; 7] = [true, false, true, true, true, false, true];
            for j in 0..n.saturating_sub(6) {
                if (0..7).any(|p| at(horizontal, line, j + p) != PATTERN[p]) {
                    continue;
                }
                let dark_before = (j.saturating_sub(4)..j).any(|k| at(horizontal, line, k));
                let dark_after = (j + 7..(j + 11).min(n)).any(|k| at(horizontal, line, k));
                if !dark_before || !dark_after {
                    score += 40;
                }
            }
        }
        // The three real finder patterns match 9 times in each direction.
        score -= 360;
    }
    // N2: 2×2 blocks of one color.
    for y in 0..n - 1 {
        for x in 0..n - 1 {
            let c = m[y * n + x];
            if m[y * n + x + 1] == c && m[(y + 1) * n + x] == c && m[(y + 1) * n + x + 1] == c {
                score += 3;
            }
        }
    }
    // N4: deviation from half dark.
    let dark = m.iter().filter(|&&d| d).count();
    let ratio = (dark * 200 / m.len()) as i32;
    score + (ratio - 100).abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_symbol_as_the_qrcode_crate() {
        let long = format!(
            "https://receta.example.mx/rx/{}",
            "0123456789abcdef".repeat(4)
        );
        let inputs = [
            "https://receta.example.mx/rx/3f9a1c0e7b5d2a8f4c6e1b3d5f7a9c0e2b4d6f8a1c3e5b7d9f0a2c4e6b8d0f1a",
            "http://127.0.0.1:3000/rx/0000000000000000000000000000000000000000000000000000000000000000",
            "HELLO WORLD",
            "12345678901234567890",
            "a",
            long.as_str(),
            "ñandú ü ¿?",
        ];
        let more = many_inputs();
        for input in inputs
            .iter()
            .copied()
            .chain(more.iter().map(String::as_str))
        {
            let reference = qrcode::QrCode::with_error_correction_level(input, EcLevel::M).unwrap();
            let (n, dark) = encode(input.as_bytes()).unwrap();
            assert_eq!(n, reference.width(), "{input}");
            let expected: Vec<bool> = reference
                .to_colors()
                .into_iter()
                .map(|c| c == Color::Dark)
                .collect();
            assert_eq!(dark, expected, "{input}");
        }
    }

    /// Links of many lengths and kinds (byte, alphanumeric, numeric segments).
    fn many_inputs() -> Vec<String> {
        let mut inputs = Vec::new();
        for len in (1..=260).step_by(7) {
            let hex: String = (0..len)
                .map(|i| char::from(b"0123456789abcdef"[(i * 7 + len) % 16]))
                .collect();
            inputs.push(format!("https://receta.example.mx/rx/{hex}"));
            inputs.push(format!(
                "HTTP://RECETA.MX/RX/{}",
                "A1B2C3".repeat(len / 6 + 1)
            ));
            inputs.push("9".repeat(len * 3));
        }
        inputs
    }

    fn canvas_of(input: &str) -> (Canvas, usize) {
        let bits = bits::encode_auto(input.as_bytes(), EcLevel::M).unwrap();
        let version = bits.version();
        let bytes = bits.into_bytes();
        let (data, ec) = ec::construct_codewords(&bytes, version, EcLevel::M).unwrap();
        let mut canvas = Canvas::new(version, EcLevel::M);
        canvas.draw_all_functional_patterns();
        canvas.draw_data(&data, &ec);
        (canvas, version.width() as usize)
    }

    #[test]
    fn bits_mask_and_score_as_the_crate() {
        let mut narrow = 0;
        for input in many_inputs() {
            let (canvas, n) = canvas_of(&input);
            if n > 64 {
                continue;
            }
            narrow += 1;
            let (dark, maskable) = unmasked_bits(&canvas, n);
            for (i, &mask) in MASKS.iter().enumerate() {
                let expected = masked_by_the_crate(&canvas, mask);
                let bits = masked_bits(&dark, &maskable, i, n);
                let by_rows: Vec<bool> = bits.rows[..n]
                    .iter()
                    .flat_map(|r| (0..n).map(move |x| r >> x & 1 == 1))
                    .collect();
                assert_eq!(by_rows, expected, "{input} mask {i}");
                let by_cols: Vec<bool> = (0..n)
                    .flat_map(|y| (0..n).map(move |x| bits.cols[x] >> y & 1 == 1))
                    .collect();
                assert_eq!(by_cols, expected, "{input} mask {i}");
                let score = penalty_bits(&bits, n);
                assert_eq!(score, penalty(&expected, n), "{input} mask {i}");
            }
        }
        assert!(narrow > 50, "{narrow}");
    }

    #[test]
    fn too_long_is_none() {
        assert!(encode(&[b'x'; 4000]).is_none());
    }
}
