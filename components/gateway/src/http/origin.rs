//! The service's public origin (`base_url`) and the request's `Host`: which hosts are well formed,
//! and which the service answers for (so a forged `Host` never makes it write links elsewhere).

/// The public origin (`base_url` variable), without a trailing slash.
pub fn base_url() -> String {
    spin_sdk::variables::get("base_url")
        .unwrap_or_else(|_| "http://127.0.0.1:3000".into())
        .trim_end_matches('/')
        .to_string()
}

/// Whether a state-changing call may have come from the service's own pages: not when the browser
/// says the page that sent it is of another site (`Sec-Fetch-Site: cross-site` or `same-site`), nor
/// when its `Origin` is `null` or neither `base_url`'s origin nor the request's own `Host`. A call
/// with neither header (an integration, a command-line client: nothing a browser sent from
/// another page) passes. The request's `Sec-Fetch-Site`, `Origin` and `Host` headers.
pub fn from_own_pages(fetch_site: Option<&str>, origin: Option<&str>, host: Option<&str>) -> bool {
    own_origin(fetch_site, origin, host, &base_url())
}

fn own_origin(
    fetch_site: Option<&str>,
    origin: Option<&str>,
    host: Option<&str>,
    base_url: &str,
) -> bool {
    if let Some(site) = fetch_site
        && !matches!(site.trim(), "same-origin" | "none")
    {
        return false;
    }
    let Some(origin) = origin.map(str::trim) else {
        return true;
    };
    let authority = |url: &str| {
        url.split_once("://").map(|(_, rest)| {
            rest.split('/')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase()
        })
    };
    let Some(from) = authority(origin) else {
        return false;
    };
    authority(base_url).is_some_and(|own| own == from)
        || host.is_some_and(|h| h.trim().to_ascii_lowercase() == from)
}

/// Whether `authority` is `host[:port]`: a DNS name, an IPv4 address or a bracketed IPv6 address,
/// and a port of at most 65535.
pub fn is_host_and_port(authority: &str) -> bool {
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((v6, after)) => {
                if v6.parse::<std::net::Ipv6Addr>().is_err() {
                    return false;
                }
                ("v6", after.strip_prefix(':'))
            }
            None => return false,
        },
        None => match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.parse::<u16>().is_ok());
    let host_ok = host == "v6"
        || (!host.is_empty()
            && host.len() <= 253
            && host.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            }));
    port_ok && host_ok
}

/// Whether the service answers for `authority`'s host: `base_url`'s host, or a loopback name.
pub fn answers_for(authority: &str, base_url: &str) -> bool {
    let host = |a: &str| -> String {
        let a = a.rsplit_once('@').map_or(a, |(_, h)| h);
        match a.strip_prefix('[') {
            Some(rest) => rest.split(']').next().unwrap_or_default().to_string(),
            None => a.split(':').next().unwrap_or_default().to_ascii_lowercase(),
        }
    };
    let requested = host(authority);
    let base_authority = base_url
        .split_once("://")
        .map_or(base_url, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    requested == host(base_authority)
        || requested == "localhost"
        || requested == "::1"
        || requested
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_service_own_pages_change_a_patient_page() {
        let base = "https://receta.example.mx";
        let own = |site, origin, host| own_origin(site, origin, host, base);
        // No browser headers: an integration or curl.
        assert!(own(None, None, None));
        assert!(own(Some("same-origin"), Some(base), None));
        assert!(own(
            None,
            Some("http://127.0.0.1:3000"),
            Some("127.0.0.1:3000")
        ));
        assert!(!own(Some("cross-site"), None, None));
        assert!(!own(Some("same-site"), Some(base), None));
        assert!(!own(
            None,
            Some("https://evil.example"),
            Some("receta.example.mx")
        ));
        assert!(!own(None, Some("null"), Some("receta.example.mx")));
    }

    #[test]
    fn hosts_and_ports() {
        for good in [
            "127.0.0.1:3000",
            "localhost",
            "receta.example.mx",
            "api-1.receta.mx:443",
            "[::1]:8080",
            "[2001:db8::1]",
        ] {
            assert!(is_host_and_port(good), "{good}");
        }
        for bad in [
            "",
            "evil.com/path",
            "a b",
            "host:99999",
            "host:",
            "[::1",
            "[nope]:80",
            "-x.mx",
            "x..mx",
            "<script>",
            "user@host",
        ] {
            assert!(!is_host_and_port(bad), "{bad}");
        }
    }

    #[test]
    fn links_use_the_request_host_only_when_the_service_answers_for_it() {
        let base = "https://receta.example.mx";
        assert!(answers_for("receta.example.mx", base));
        assert!(answers_for("RECETA.example.mx:443", base));
        assert!(answers_for("127.0.0.1:41000", base));
        assert!(answers_for("localhost:3000", base));
        assert!(answers_for("[::1]:3000", base));
        assert!(!answers_for("evil.example.com", base));
        assert!(!answers_for("receta.example.mx.evil.com", base));
    }
}
