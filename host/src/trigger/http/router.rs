//! HTTP route matching with Spin's rules.
//!
//! Routes are `/exact/path`, `/prefix/...` (trailing wildcard; also `/prefix/*`), and may contain
//! `:name` segments. The application `base` is prepended. The most specific route wins: segment by
//! segment a literal beats a `:name` beats the trailing wildcard, and an exact route beats a
//! wildcard one (`/api/...` loses to `/api/users` for `/api/users`). A duplicate route replaces
//! the earlier one, with a warning, as in Spin.

use std::collections::HashMap;

use anyhow::{Result, bail};

/// A route's pattern.
#[derive(Debug, Clone)]
struct Pattern {
    segments: Vec<Segment>,
    wildcard: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Param(String),
}

/// One routable trigger.
#[derive(Debug, Clone)]
pub struct Route {
    /// The route as written in the manifest (`raw`) ...
    pub raw: String,
    /// ... and with the base applied.
    pub based: String,
    /// The component it runs.
    pub component: String,
    pattern: Pattern,
}

/// A successful match.
#[derive(Debug)]
pub struct RouteMatch<'a> {
    /// The matched route.
    pub route: &'a Route,
    /// The path after the wildcard prefix (Spin's `spin-path-info`), `""` for exact routes.
    pub path_info: String,
    /// `:name` captures.
    pub params: HashMap<String, String>,
}

/// The application's routes.
#[derive(Debug, Default)]
pub struct Router {
    routes: Vec<Route>,
}

fn sanitize(s: &str) -> &str {
    s.strip_suffix('/').unwrap_or(s)
}

impl Router {
    /// Builds a router from `(route, component id)` pairs in manifest order.
    pub fn build<'a>(
        base: &str,
        routes: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self> {
        let mut out: Vec<Route> = Vec::new();
        for (raw, component) in routes {
            let absolute = if raw.starts_with('/') {
                raw.to_string()
            } else {
                format!("/{raw}")
            };
            let based = format!("{}{}", sanitize(base), sanitize(&absolute));
            let pattern = parse(&based)?;
            if let Some(existing) = out.iter_mut().find(|r| r.raw == raw) {
                eprintln!(
                    "receta: warning: route {raw:?} of component {:?} is replaced by component {component:?}",
                    existing.component
                );
                *existing = Route {
                    raw: raw.to_string(),
                    based,
                    component: component.to_string(),
                    pattern,
                };
                continue;
            }
            out.push(Route {
                raw: raw.to_string(),
                based,
                component: component.to_string(),
                pattern,
            });
        }
        Ok(Self { routes: out })
    }

    /// All routes, in manifest order.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The best route for a request path.
    pub fn route(&self, path: &str) -> Option<RouteMatch<'_>> {
        let path_segments: Vec<&str> = path.strip_prefix('/').unwrap_or(path).split('/').collect();
        let mut best: Option<(Vec<u8>, RouteMatch<'_>)> = None;
        for route in &self.routes {
            let Some((score, m)) = try_match(route, &path_segments) else {
                continue;
            };
            if best.as_ref().is_none_or(|(s, _)| score > *s) {
                best = Some((score, m));
            }
        }
        best.map(|(_, m)| m)
    }
}

fn parse(based: &str) -> Result<Pattern> {
    let (body, wildcard) = if let Some(prefix) = based.strip_suffix("/...") {
        (prefix, true)
    } else if let Some(prefix) = based.strip_suffix("/*") {
        (prefix, true)
    } else if based == "..." || based == "*" {
        ("", true)
    } else {
        (based, false)
    };
    let mut segments = Vec::new();
    for seg in body
        .trim_start_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
    {
        if seg == "..." || seg == "*" {
            bail!("route {based:?}: a wildcard may only end a route");
        }
        match seg.strip_prefix(':') {
            Some(name) if !name.is_empty() => segments.push(Segment::Param(name.to_string())),
            Some(_) => bail!("route {based:?}: empty parameter name"),
            None => segments.push(Segment::Literal(seg.to_string())),
        }
    }
    Ok(Pattern { segments, wildcard })
}

/// Score: per pattern segment 2 (literal) or 1 (param), then 1 for exact / 0 for wildcard.
fn try_match<'a>(route: &'a Route, path_segments: &[&str]) -> Option<(Vec<u8>, RouteMatch<'a>)> {
    let pattern = &route.pattern;
    // A trailing slash on an exact route's path is tolerated only as an empty last segment.
    let trimmed: Vec<&str> = match path_segments.split_last() {
        Some((last, rest)) if last.is_empty() && !pattern.wildcard => rest.to_vec(),
        _ => path_segments.to_vec(),
    };
    if trimmed.len() < pattern.segments.len()
        || (!pattern.wildcard && trimmed.len() != pattern.segments.len())
    {
        return None;
    }
    let mut params = HashMap::new();
    let mut score = Vec::with_capacity(pattern.segments.len() + 1);
    for (seg, actual) in pattern.segments.iter().zip(&trimmed) {
        match seg {
            Segment::Literal(lit) if lit == actual => score.push(2),
            Segment::Param(name) if !actual.is_empty() => {
                params.insert(name.clone(), (*actual).to_string());
                score.push(1);
            }
            _ => return None,
        }
    }
    let path_info = if pattern.wildcard {
        score.push(0);
        // Everything after the matched prefix, keeping a trailing slash as Spin does.
        let consumed: usize = pattern.segments.len();
        let rest = &path_segments[consumed.min(path_segments.len())..];
        if rest.is_empty() {
            String::new()
        } else {
            format!("/{}", rest.join("/"))
        }
    } else {
        score.push(1);
        String::new()
    };
    Some((
        score,
        RouteMatch {
            route,
            path_info,
            params,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router() -> Router {
        Router::build(
            "/",
            [
                ("/...", "catchall"),
                ("/api/...", "api"),
                ("/api/users", "users"),
                ("/api/users/:id", "user"),
                ("/health", "health"),
            ],
        )
        .unwrap()
    }

    #[test]
    fn most_specific_wins() {
        let r = router();
        let m = |p: &str| r.route(p).map(|m| (m.route.component.clone(), m.path_info));
        assert_eq!(m("/health"), Some(("health".into(), "".into())));
        assert_eq!(m("/health/"), Some(("health".into(), "".into())));
        assert_eq!(m("/api/users"), Some(("users".into(), "".into())));
        assert_eq!(m("/api/users/7"), Some(("user".into(), "".into())));
        assert_eq!(
            m("/api/users/7/x"),
            Some(("api".into(), "/users/7/x".into()))
        );
        assert_eq!(m("/api"), Some(("api".into(), "".into())));
        assert_eq!(m("/api/"), Some(("api".into(), "/".into())));
        assert_eq!(m("/api/v2/x/"), Some(("api".into(), "/v2/x/".into())));
        assert_eq!(m("/other"), Some(("catchall".into(), "/other".into())));
        assert_eq!(m("/"), Some(("catchall".into(), "/".into())));
        let p = r.route("/api/users/42").unwrap();
        assert_eq!(p.params["id"], "42");
    }

    #[test]
    fn no_catch_all_means_404() {
        let r = Router::build("/", [("/probe/...", "p"), ("/exact", "e")]).unwrap();
        assert!(r.route("/nothing").is_none());
        assert!(r.route("/exact/more").is_none());
        assert!(r.route("/probex").is_none());
        assert_eq!(r.route("/probe/hello").unwrap().path_info, "/hello");
    }

    #[test]
    fn base_is_prepended() {
        let r = Router::build("/base/", [("/x/...", "x")]).unwrap();
        assert!(r.route("/x/1").is_none());
        assert_eq!(r.route("/base/x/1").unwrap().path_info, "/1");
    }
}
