//! Where a delivery goes: an absolute `http`/`https` URL split the way `wasi:http` wants it.

/// The longest URL accepted.
pub const MAX_URL: usize = 2000;

/// A parsed delivery URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// True for `https`.
    pub https: bool,
    /// `host[:port]`, lowercase host.
    pub authority: String,
    /// The path (at least `/`) and the query; the fragment is dropped.
    pub path_with_query: String,
}

impl Target {
    /// Parses `http(s)://host[:port][/path][?query][#fragment]`. No credentials, no spaces.
    pub fn parse(url: &str) -> Result<Target, String> {
        let url = url.trim();
        if url.len() > MAX_URL {
            return Err(format!("Ensure this URL has at most {MAX_URL} characters."));
        }
        if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("Enter a valid URL (no spaces).".into());
        }
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| "Enter a valid URL: http:// or https:// and a host.".to_string())?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "https" => true,
            "http" => false,
            _ => return Err("Only http:// and https:// URLs are supported.".into()),
        };
        let rest = rest.split('#').next().unwrap_or_default();
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if authority.contains('@') {
            return Err("The URL must not contain credentials.".into());
        }
        let (host, port) = split_port(authority);
        let host_ok = !host.is_empty()
            && (host.starts_with('[') && host.ends_with(']')
                || host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')));
        if !host_ok {
            return Err("Enter a valid URL: the host is missing or invalid.".into());
        }
        if let Some(port) = port
            && port.parse::<u16>().map_or(true, |p| p == 0)
        {
            return Err("Enter a valid URL: the port is invalid.".into());
        }
        let path_with_query = match tail.chars().next() {
            None => "/".to_string(),
            Some('?') => format!("/{tail}"),
            _ => tail.to_string(),
        };
        Ok(Target {
            https,
            authority: authority.to_ascii_lowercase(),
            path_with_query,
        })
    }

    /// `scheme://authority`, for messages.
    pub fn origin(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.authority)
    }
}

fn split_port(authority: &str) -> (&str, Option<&str>) {
    if authority.starts_with('[') {
        return match authority.find(']') {
            Some(i) => {
                let (host, rest) = authority.split_at(i + 1);
                (host, rest.strip_prefix(':'))
            }
            None => (authority, None),
        };
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_urls() {
        let t = Target::parse("https://Hooks.Example.com/rx/in?x=1#frag").unwrap();
        assert!(t.https);
        assert_eq!(t.authority, "hooks.example.com");
        assert_eq!(t.path_with_query, "/rx/in?x=1");
        assert_eq!(t.origin(), "https://hooks.example.com");
        let t = Target::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!((t.https, t.authority.as_str()), (false, "127.0.0.1:8080"));
        assert_eq!(t.path_with_query, "/");
        assert_eq!(Target::parse("http://h?q").unwrap().path_with_query, "/?q");
        assert_eq!(
            Target::parse("http://[::1]:9/x").unwrap().authority,
            "[::1]:9"
        );
    }

    #[test]
    fn refuses_what_is_not_a_delivery_url() {
        for bad in [
            "",
            "hooks.example.com/x",
            "ftp://h/x",
            "http://",
            "http:///x",
            "http://user:pw@h/x",
            "http://h:0/",
            "http://h:99999/",
            "http://h:x/",
            "http://a b/",
            "http://h/a b",
            "http://h*/",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
        assert!(Target::parse(&format!("http://h/{}", "x".repeat(MAX_URL))).is_err());
    }
}
