//! URLs the service writes into its answers and pages: which ones it accepts, and its media links.

/// Whether `s` is an absolute `http://` or `https://` URL with a host, and nothing a browser or an
/// HTML attribute could misread: no whitespace, control characters, quotes, angle brackets or
/// backslashes, and no user-info (`user@host` is a phishing classic).
pub fn is_http_url(s: &str) -> bool {
    let lower = s.get(..8).map(str::to_ascii_lowercase).unwrap_or_default();
    let rest = if lower.starts_with("http://") {
        &s[7..]
    } else if lower.starts_with("https://") {
        &s[8..]
    } else {
        return false;
    };
    if s.chars()
        .any(|c| c.is_whitespace() || c.is_control() || "\"'<>\\`{}|^".contains(c))
    {
        return false;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return false;
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        match v6.split_once(']') {
            Some((addr, after))
                if !addr.is_empty()
                    && addr
                        .chars()
                        .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.') =>
            {
                (addr, after.strip_prefix(':'))
            }
            _ => return false,
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let host_ok = !host.is_empty()
        && (authority.starts_with('[')
            || host.split('.').all(|label| {
                !label.is_empty()
                    && !label.starts_with('-')
                    && !label.ends_with('-')
                    && label.chars().all(|c| c.is_alphanumeric() || c == '-')
            }));
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    host_ok && port_ok
}

/// The absolute URL of a media path returned by a domain component.
pub fn media_url(base_url: &str, path: &str) -> String {
    format!("{base_url}/media/{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_urls() {
        for ok in [
            "https://farmacia.example.mx",
            "http://farmacia.example.mx/",
            "HTTPS://Farmacia.Example.mx/surtir?rx=1&x=y#top",
            "https://localhost:8080/a",
            "http://127.0.0.1:3000/rx/abc",
            "https://[::1]:443/",
            "https://farmacía.mx/",
        ] {
            assert!(is_http_url(ok), "{ok}");
        }
        for bad in [
            "",
            "landing_view",
            "javascript:alert(1)",
            "data:text/html,x",
            "ftp://x.mx",
            "https://",
            "https:///path",
            "https://a b.mx",
            "https://x.mx/\"onmouseover=",
            "https://x.mx/<script>",
            "https://user@x.mx",
            "https://x.mx:port",
            "https://x.mx:123456",
            "https://-x.mx",
            "https://x..mx",
            "//x.mx",
            "https://x.mx\n",
        ] {
            assert!(!is_http_url(bad), "{bad:?}");
        }
    }
}
