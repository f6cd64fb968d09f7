//! Just enough JPEG parsing to embed a file as is (DCTDecode): the frame header (SOF) gives the
//! width, height and number of components; an Adobe APP14 segment tells whether CMYK is inverted.

/// What the PDF image dictionary needs to know about a JPEG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JpegInfo {
    pub width: u16,
    pub height: u16,
    /// 1 (gray), 3 (YCbCr/RGB) or 4 (CMYK/YCCK).
    pub components: u8,
    /// An Adobe APP14 segment is present: Adobe writes CMYK JPEGs inverted.
    pub adobe: bool,
}

/// Reads the frame header of a JPEG and checks the file's structure up to the scan. `None` for
/// anything a PDF reader could not show: not a JPEG, truncated (segments cut, or no EOI at the
/// end), arithmetic-coded or lossless, not 8 bits per sample, a zero dimension, 2 components.
pub fn parse(data: &[u8]) -> Option<JpegInfo> {
    if data.get(..2)? != [0xFF, 0xD8] {
        return None;
    }
    let mut adobe = false;
    let mut frame: Option<JpegInfo> = None;
    let mut i = 2;
    loop {
        // Markers may be preceded by any number of 0xFF fill bytes.
        if *data.get(i)? != 0xFF {
            return None;
        }
        while *data.get(i)? == 0xFF {
            i += 1;
        }
        let marker = data[i];
        i += 1;
        match marker {
            // Markers without a length: TEM, RSTn, SOI.
            0x01 | 0xD0..=0xD8 => continue,
            // EOI before the scan: no image.
            0xD9 => return None,
            _ => {}
        }
        let len = usize::from(u16::from_be_bytes([*data.get(i)?, *data.get(i + 1)?]));
        if len < 2 {
            return None;
        }
        let segment = data.get(i + 2..i + len)?;
        match marker {
            // Start of scan: the entropy-coded data follows, and the file must end (give or take
            // some padding) with EOI, or it was cut short.
            0xDA => {
                let info = frame?;
                let scan = &data[i + len..];
                let tail = &scan[scan.len().saturating_sub(64)..];
                let ends = tail.windows(2).any(|w| w == [0xFF, 0xD9]);
                let info = JpegInfo { adobe, ..info };
                return ends.then_some(info);
            }
            // Baseline, extended sequential and progressive Huffman: what DCTDecode reads.
            0xC0..=0xC2 => {
                let [precision, h1, h0, w1, w0, components, ..] = *segment else {
                    return None;
                };
                let (height, width) = (u16::from_be_bytes([h1, h0]), u16::from_be_bytes([w1, w0]));
                let ok =
                    precision == 8 && height > 0 && width > 0 && matches!(components, 1 | 3 | 4);
                if !ok || frame.is_some() {
                    return None;
                }
                frame = Some(JpegInfo {
                    width,
                    height,
                    components,
                    adobe,
                });
            }
            // Lossless, hierarchical and arithmetic-coded frames.
            0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF => return None,
            0xEE if segment.starts_with(b"Adobe") => adobe = true,
            _ => {}
        }
        i += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SOI, an APP0 segment, a SOF0 frame of 300×120 with `components`, SOS, EOI.
    fn jpeg(sof: u8, components: u8) -> Vec<u8> {
        let mut v = vec![0xFF, 0xD8];
        v.extend([0xFF, 0xE0, 0x00, 0x10]);
        v.extend(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
        let len = 8 + 3 * components as u16;
        v.extend([0xFF, sof]);
        v.extend(len.to_be_bytes());
        v.extend([8, 0, 120, 0x01, 0x2C, components]);
        for c in 0..components {
            v.extend([c + 1, 0x11, 0]);
        }
        v.extend([0xFF, 0xDA, 0x00, 0x02, 0xFF, 0xD9]);
        v
    }

    #[test]
    fn reads_the_frame_header() {
        let info = parse(&jpeg(0xC0, 3)).unwrap();
        assert_eq!(
            (info.width, info.height, info.components, info.adobe),
            (300, 120, 3, false)
        );
        assert_eq!(parse(&jpeg(0xC2, 1)).unwrap().components, 1);
        assert_eq!(parse(&jpeg(0xC1, 4)).unwrap().components, 4);
    }

    #[test]
    fn notices_adobe_segments_and_fill_bytes() {
        let mut v = jpeg(0xC0, 4);
        let app14 = [
            0xFF, 0xFF, 0xEE, 0x00, 0x0E, b'A', b'd', b'o', b'b', b'e', 0, 100, 0, 0, 0, 0, 2,
        ];
        v.splice(2..2, app14);
        let info = parse(&v).unwrap();
        assert!(info.adobe);
        assert_eq!(info.components, 4);
    }

    #[test]
    fn rejects_what_a_reader_could_not_show() {
        assert_eq!(parse(b""), None);
        assert_eq!(parse(b"\x89PNG\r\n\x1a\n"), None);
        assert_eq!(parse(&[0xFF, 0xD8]), None);
        assert_eq!(parse(&[0xFF, 0xD8, 0xFF, 0xD9]), None);
        assert_eq!(parse(&jpeg(0xC3, 3)), None); // lossless
        assert_eq!(parse(&jpeg(0xC9, 3)), None); // arithmetic
        assert_eq!(parse(&jpeg(0xC0, 2)), None);
        let full = jpeg(0xC0, 3);
        for cut in 0..full.len() {
            assert_eq!(parse(&full[..cut]), None, "truncated at {cut}");
        }
        let mut zero = jpeg(0xC0, 3);
        zero[25] = 0; // height high byte is already 0; clear the low byte too
        zero[26] = 0;
        assert_eq!(parse(&zero), None);
        let mut twelve_bit = jpeg(0xC0, 3);
        twelve_bit[24] = 12;
        assert_eq!(parse(&twelve_bit), None);
    }
}
