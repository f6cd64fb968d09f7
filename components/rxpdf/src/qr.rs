//! The QR code of the patient link, with the `qrcode` crate.
//!
//! `qrcode::QrCode` picks the mask with the lowest penalty score, as the standard asks, but its
//! scoring allocates for every position and takes about a millisecond: most of the time of a
//! whole render. This module builds the code with the crate's own pieces and scores the eight
//! masks with the same rules (the crate's, quirks included), on plain booleans, so that the
//! chosen mask, and so every module, is the same as `QrCode::with_error_correction_level`'s.

use qrcode::canvas::{Canvas, MaskPattern};
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
    let mut best: Option<(i32, Vec<bool>)> = None;
    for mask in MASKS {
        let mut masked = canvas.clone();
        masked.apply_mask(mask);
        let dark: Vec<bool> = masked
            .into_colors()
            .into_iter()
            .map(|c| c == Color::Dark)
            .collect();
        let score = penalty(&dark, n);
        // The first of equal scores wins, as with `Iterator::min_by_key`.
        if best.as_ref().is_none_or(|(s, _)| score < *s) {
            best = Some((score, dark));
        }
    }
    best.map(|(_, dark)| (n, dark))
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
        for input in inputs {
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

    #[test]
    fn too_long_is_none() {
        assert!(encode(&[b'x'; 4000]).is_none());
    }
}
