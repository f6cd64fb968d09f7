//! `allowed_outbound_hosts` (Spin's syntax): its entries parsed, and whether a URL matches one.

use std::net::IpAddr;

use anyhow::{Context, Result, bail, ensure};

/// One parsed `allowed_outbound_hosts` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHost {
    original: String,
    scheme: Option<String>,
    host: HostPattern,
    port: PortPattern,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    Any,
    /// `*.example.com` stored as `.example.com`.
    Suffix(String),
    Name(String),
    Ip(IpAddr),
    Cidr(IpAddr, u8),
    /// `self`: requests to the app itself by relative URL (not supported: matches nothing).
    ToSelf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PortPattern {
    Any,
    Port(u16),
    /// Half-open, as in Spin: `8000..8010` allows 8000 to 8009.
    Range(u16, u16),
}

fn well_known_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        "postgres" => Some(5432),
        "mysql" => Some(3306),
        "redis" => Some(6379),
        "mqtt" => Some(1883),
        _ => None,
    }
}

impl AllowedHost {
    /// Parses one (already rendered) entry.
    pub fn parse(entry: &str) -> Result<Self> {
        let original = entry.to_string();
        let entry = entry.trim();
        let Some((scheme, rest)) = entry.split_once("://") else {
            bail!(
                "{entry:?} is not of the form <scheme>://<host>[:<port>] ('*' wildcards allowed; \
                 '*://*:*' allows everything)"
            );
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        ensure!(
            !rest.contains('/') || is_cidr_like(rest),
            "{entry:?} must not have a path"
        );
        let (host, port) = split_host_port(rest);
        let port = match port {
            None => PortPattern::Port(well_known_port(scheme).with_context(|| {
                format!("{entry:?}: no port, and scheme {scheme:?} has no default port")
            })?),
            Some("*") => PortPattern::Any,
            Some(p) => match p.split_once("..") {
                Some((a, b)) => PortPattern::Range(
                    a.parse()
                        .with_context(|| format!("{entry:?}: bad port range"))?,
                    b.parse()
                        .with_context(|| format!("{entry:?}: bad port range"))?,
                ),
                None => PortPattern::Port(
                    p.parse()
                        .with_context(|| format!("{entry:?}: bad port {p:?}"))?,
                ),
            },
        };
        let scheme = match scheme {
            "*" => None,
            s if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphabetic()) => {
                Some(s.to_ascii_lowercase())
            }
            s => bail!("{entry:?}: invalid scheme {s:?}"),
        };
        let host = parse_host(host).with_context(|| format!("{entry:?}: invalid host"))?;
        Ok(Self {
            original,
            scheme,
            host,
            port,
        })
    }

    fn allows(&self, scheme: &str, host: &str, port: Option<u16>) -> bool {
        if let Some(s) = &self.scheme
            && s != scheme
        {
            return false;
        }
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let ip: Option<IpAddr> = host.parse().ok();
        let host_ok = match (&self.host, ip) {
            (HostPattern::Any, _) => true,
            (HostPattern::Suffix(suffix), None) => host.ends_with(suffix.as_str()),
            (HostPattern::Name(name), None) => *name == host,
            (HostPattern::Ip(allowed), Some(ip)) => *allowed == ip,
            (HostPattern::Cidr(net, bits), Some(ip)) => in_cidr(ip, *net, *bits),
            _ => false,
        };
        if !host_ok {
            return false;
        }
        let Some(port) = port.or_else(|| well_known_port(scheme)) else {
            return false;
        };
        match self.port {
            PortPattern::Any => true,
            PortPattern::Port(p) => p == port,
            PortPattern::Range(a, b) => (a..b).contains(&port),
        }
    }
}

impl std::fmt::Display for AllowedHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.original)
    }
}

fn is_cidr_like(s: &str) -> bool {
    let host = split_host_port(s).0;
    host.split_once('/').is_some_and(|(ip, bits)| {
        ip.trim_matches(['[', ']']).parse::<IpAddr>().is_ok() && bits.parse::<u8>().is_ok()
    })
}

/// `host:port`, `[v6]:port`, `host`, `[v6]`, `10.0.0.0/8:*`.
fn split_host_port(s: &str) -> (&str, Option<&str>) {
    if let Some(end) = s.find(']') {
        let (host, rest) = s.split_at(end + 1);
        // A CIDR suffix may follow the bracket: `[::1]/128:80`.
        let (host_extra, port) = match rest.rsplit_once(':') {
            Some((extra, port)) => (extra, Some(port)),
            None => (rest, None),
        };
        let host_len = host.len() + host_extra.len();
        return (&s[..host_len], port);
    }
    match s.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (s, None),
    }
}

fn parse_host(host: &str) -> Result<HostPattern> {
    let host = host.trim();
    ensure!(!host.is_empty(), "empty host");
    if host == "*" {
        return Ok(HostPattern::Any);
    }
    if host == "self" || host == "self.alt" {
        return Ok(HostPattern::ToSelf);
    }
    if let Some((ip, bits)) = host.split_once('/') {
        let ip: IpAddr = ip
            .trim_matches(['[', ']'])
            .parse()
            .context("bad CIDR address")?;
        let bits: u8 = bits.parse().context("bad CIDR prefix length")?;
        ensure!(
            bits <= if ip.is_ipv4() { 32 } else { 128 },
            "CIDR prefix too long"
        );
        return Ok(HostPattern::Cidr(ip, bits));
    }
    if let Ok(ip) = host.trim_matches(['[', ']']).parse::<IpAddr>() {
        return Ok(HostPattern::Ip(ip));
    }
    if let Some(domain) = host.strip_prefix("*.") {
        ensure!(
            !domain.contains('*'),
            "wildcards are allowed only as a `*.` prefix"
        );
        return Ok(HostPattern::Suffix(format!(
            ".{}",
            domain.to_ascii_lowercase()
        )));
    }
    ensure!(
        !host.contains('*'),
        "wildcards are allowed only as a `*.` prefix"
    );
    ensure!(
        host.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_'),
        "{host:?} is not a host name"
    );
    Ok(HostPattern::Name(host.to_ascii_lowercase()))
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

/// A component's rendered `allowed_outbound_hosts`.
#[derive(Debug, Clone, Default)]
pub struct AllowedHosts {
    entries: Vec<AllowedHost>,
}

impl AllowedHosts {
    /// Parses rendered entries.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self> {
        let entries = entries
            .iter()
            .map(|e| AllowedHost::parse(e.as_ref()))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { entries })
    }

    /// Whether a request to this URI may go out.
    pub fn allows(&self, uri: &http::Uri) -> bool {
        let (Some(scheme), Some(host)) = (uri.scheme_str(), uri.host()) else {
            return false;
        };
        let scheme = scheme.to_ascii_lowercase();
        self.entries
            .iter()
            .any(|e| e.allows(&scheme, host, uri.port_u16()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(entries: &[&str], url: &str) -> bool {
        AllowedHosts::parse(entries)
            .unwrap()
            .allows(&url.parse().unwrap())
    }

    #[test]
    fn matching() {
        assert!(allows(
            &["http://127.0.0.1:8080"],
            "http://127.0.0.1:8080/x"
        ));
        assert!(!allows(
            &["http://127.0.0.1:8080"],
            "http://127.0.0.1:8081/x"
        ));
        assert!(!allows(
            &["http://127.0.0.1:8080"],
            "https://127.0.0.1:8080/x"
        ));
        assert!(!allows(
            &["http://127.0.0.1:8080"],
            "http://localhost:8080/x"
        ));
        assert!(allows(
            &["https://api.example.com"],
            "https://API.example.com/v1"
        ));
        assert!(!allows(
            &["https://api.example.com"],
            "https://api.example.com:8443/v1"
        ));
        assert!(allows(
            &["https://*.example.com"],
            "https://a.b.example.com/"
        ));
        assert!(!allows(&["https://*.example.com"], "https://example.com/"));
        assert!(allows(&["*://*:*"], "http://anything:1/"));
        assert!(allows(&["http://localhost:*"], "http://localhost:5/"));
        assert!(allows(&["http://10.0.0.0/8:80"], "http://10.1.2.3/"));
        assert!(!allows(&["http://10.0.0.0/8:80"], "http://11.1.2.3/"));
        assert!(allows(
            &["http://localhost:8000..8002"],
            "http://localhost:8001/"
        ));
        assert!(!allows(
            &["http://localhost:8000..8002"],
            "http://localhost:8002/"
        ));
        assert!(allows(&["http://[::1]:80"], "http://[::1]/"));
        assert!(!allows(&[], "http://127.0.0.1/"));
        assert!(!allows(
            &["self"].map(|_| "http://self"),
            "http://127.0.0.1/"
        ));
    }

    #[test]
    fn bad_entries() {
        for bad in [
            "*",
            "example.com",
            "http://a.*.com",
            "http://h/path",
            "ftp://h",
            "http://h:x",
        ] {
            assert!(AllowedHost::parse(bad).is_err(), "{bad}");
        }
    }
}
