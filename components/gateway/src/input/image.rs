//! Checking uploaded hospital images: `.jpg` files whose bytes are a JPEG, strictly under 2 MB.

/// Uploaded images must be strictly smaller than this many bytes (2 MB, decimal).
pub const MAX_IMAGE_BYTES: usize = 2_000_000;

pub const NOT_A_JPEG: &str = "Upload a valid image: only .jpg (JPEG) files are accepted.";
pub const TOO_LARGE: &str = "The file must be smaller than 2 MB.";
pub const EMPTY: &str = "The submitted file is empty.";

/// Whether `bytes` look like a JPEG file: the SOI marker (`FF D8`) followed by another marker
/// (`FF ..`), and an EOI marker (`FF D9`) somewhere after it. A renamed PNG, PDF or text file fails.
pub fn is_jpeg(bytes: &[u8]) -> bool {
    bytes.len() >= 6
        && bytes.starts_with(&[0xFF, 0xD8, 0xFF])
        && bytes[4..].windows(2).any(|w| w == [0xFF, 0xD9])
}

/// Checks one upload: the name must end in `.jpg` (any case), the content must be a JPEG, and it must
/// be strictly under `MAX_IMAGE_BYTES`. The error is the message for the field.
pub fn check_jpeg(filename: &str, bytes: &[u8]) -> Result<(), &'static str> {
    if bytes.is_empty() {
        return Err(EMPTY);
    }
    if !filename.to_lowercase().ends_with(".jpg") || !is_jpeg(bytes) {
        return Err(NOT_A_JPEG);
    }
    if bytes.len() >= MAX_IMAGE_BYTES {
        return Err(TOO_LARGE);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest shape `is_jpeg` accepts: SOI, an APP0 marker, and EOI.
    fn jpeg(len: usize) -> Vec<u8> {
        let mut b = vec![0xFF, 0xD8, 0xFF, 0xE0];
        b.resize(len - 2, 0);
        b.extend_from_slice(&[0xFF, 0xD9]);
        b
    }

    #[test]
    fn accepts_jpegs_named_jpg() {
        assert_eq!(check_jpeg("logo.jpg", &jpeg(100)), Ok(()));
        assert_eq!(check_jpeg("LOGO.JPG", &jpeg(100)), Ok(()));
        assert_eq!(check_jpeg("a.jpg", &jpeg(MAX_IMAGE_BYTES - 1)), Ok(()));
    }

    #[test]
    fn size_limit_is_strict() {
        assert_eq!(check_jpeg("a.jpg", &jpeg(MAX_IMAGE_BYTES)), Err(TOO_LARGE));
    }

    #[test]
    fn rejects_other_names_and_contents() {
        assert_eq!(check_jpeg("a.png", &jpeg(100)), Err(NOT_A_JPEG));
        assert_eq!(check_jpeg("a.jpeg", &jpeg(100)), Err(NOT_A_JPEG));
        assert_eq!(check_jpeg("a.jpg.exe", &jpeg(100)), Err(NOT_A_JPEG));
        assert_eq!(
            check_jpeg("a.jpg", b"\x89PNG\r\n\x1a\n0000"),
            Err(NOT_A_JPEG)
        );
        assert_eq!(check_jpeg("a.jpg", b"just text, honestly"), Err(NOT_A_JPEG));
        assert_eq!(
            check_jpeg("a.jpg", &[0xFF, 0xD8, 0xFF, 0xE0, 0, 0]),
            Err(NOT_A_JPEG),
            "no EOI"
        );
        assert_eq!(check_jpeg("a.jpg", b""), Err(EMPTY));
    }
}
