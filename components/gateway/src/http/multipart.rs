//! A small `multipart/form-data` reader (RFC 7578): enough for hospital forms with two JPEG files.

/// One part of a form.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub name: String,
    /// Set for file parts.
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub data: Vec<u8>,
}

/// The `boundary` parameter of a `multipart/form-data` content type.
pub fn boundary(content_type: &str) -> Option<String> {
    let mut params = content_type.split(';');
    let kind = params.next()?.trim();
    if !kind.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    params.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| v.trim().trim_matches('"').to_string())
    })
}

/// Splits a body into its parts; `None` when it is not a well-formed multipart body.
pub fn parse(body: &[u8], boundary: &str) -> Option<Vec<Part>> {
    let delimiter = format!("--{boundary}").into_bytes();
    let mut rest = &body[find(body, &delimiter)? + delimiter.len()..];
    let mut parts = Vec::new();
    loop {
        if rest.starts_with(b"--") {
            return Some(parts);
        }
        rest = rest.strip_prefix(b"\r\n")?;
        let header_end = find(rest, b"\r\n\r\n")?;
        let headers = std::str::from_utf8(&rest[..header_end]).ok()?;
        rest = &rest[header_end + 4..];
        let mut closing = b"\r\n".to_vec();
        closing.extend_from_slice(&delimiter);
        let end = find(rest, &closing)?;
        let data = rest[..end].to_vec();
        rest = &rest[end + closing.len()..];

        let mut part = Part {
            name: String::new(),
            filename: None,
            content_type: None,
            data,
        };
        for line in headers.split("\r\n") {
            let (key, value) = line.split_once(':')?;
            if key.trim().eq_ignore_ascii_case("content-disposition") {
                for param in value.split(';').skip(1) {
                    let Some((k, v)) = param.split_once('=') else {
                        continue;
                    };
                    let v = v.trim().trim_matches('"').to_string();
                    match k.trim().to_ascii_lowercase().as_str() {
                        "name" => part.name = v,
                        "filename" => part.filename = Some(v),
                        _ => {}
                    }
                }
            } else if key.trim().eq_ignore_ascii_case("content-type") {
                part.content_type = Some(value.trim().to_string());
            }
        }
        if part.name.is_empty() {
            return None;
        }
        parts.push(part);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_and_files() {
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nCl\xc3\xadnica\r\n--XyZ\r\nContent-Disposition: form-data; name=\"picture\"; filename=\"a.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n\xff\xd8\xff\r\n\r\n--XyZ--\r\n";
        let ct = "multipart/form-data; boundary=XyZ";
        let parts = parse(body, &boundary(ct).unwrap()).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, "name");
        assert_eq!(String::from_utf8(parts[0].data.clone()).unwrap(), "Clínica");
        assert_eq!(parts[1].filename.as_deref(), Some("a.jpg"));
        assert_eq!(parts[1].data, b"\xff\xd8\xff\r\n");
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse(b"not multipart", "XyZ").is_none());
        assert!(parse(b"--XyZ\r\nno headers end", "XyZ").is_none());
        assert_eq!(boundary("application/json"), None);
        assert_eq!(
            boundary("multipart/form-data; boundary=\"a b\"").as_deref(),
            Some("a b")
        );
    }
}
