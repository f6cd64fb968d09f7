//! Query strings and `limit`/`offset` pagination (`{count, next, previous, results}`).

use crate::fields::Fields;
use crate::types::{Error, PageRequest};

/// Results per page when `limit` is not given.
pub const DEFAULT_LIMIT: u32 = 20;
/// The largest `limit` honoured; larger values are clamped.
pub const MAX_LIMIT: u32 = 100;

/// A decoded query string, in order.
#[derive(Debug, Default, Clone)]
pub struct Query(Vec<(String, String)>);

impl Query {
    /// Decodes `a=1&b=x+y` (percent and `+` decoding).
    pub fn parse(query: &str) -> Query {
        Query(
            form_urlencoded::parse(query.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value `key` names in `table` (API name, value): `None` when absent or empty, and an
    /// error on `errors` naming the allowed values when it is none of them.
    pub fn choice<T: Copy>(
        &self,
        errors: &mut Fields,
        key: &str,
        table: &[(&str, T)],
    ) -> Option<T> {
        let value = self.get(key).filter(|v| !v.is_empty())?;
        let found = table
            .iter()
            .find(|(name, _)| *name == value)
            .map(|(_, v)| *v);
        if found.is_none() {
            let allowed: Vec<&str> = table.iter().map(|(name, _)| *name).collect();
            errors.error(
                key,
                format!(
                    "\"{value}\" is not a valid choice. Allowed values: {}.",
                    allowed.join(", ")
                ),
            );
        }
        found
    }

    /// `limit` and `offset`: non-numeric or negative values are a 400, `limit` 0 too.
    pub fn page(&self) -> Result<PageRequest, Error> {
        let mut errors = crate::fields::Fields::default();
        let mut read = |key: &str, default: u32, min: u32| -> u32 {
            match self.get(key) {
                None | Some("") => default,
                Some(raw) => match raw.trim().parse::<i64>() {
                    Ok(n) if n >= min as i64 => n.min(u32::MAX as i64) as u32,
                    Ok(_) => {
                        errors.error(
                            key,
                            format!("Ensure this value is greater than or equal to {min}."),
                        );
                        default
                    }
                    Err(_) => {
                        errors.error(key, crate::fields::NOT_AN_INTEGER);
                        default
                    }
                },
            }
        };
        let limit = read("limit", DEFAULT_LIMIT, 1).min(MAX_LIMIT);
        let offset = read("offset", 0, 0);
        errors.finish()?;
        Ok(PageRequest { limit, offset })
    }

    /// This query with `limit` and `offset` replaced, encoded again.
    fn with_page(&self, limit: u32, offset: u32) -> String {
        let mut out = form_urlencoded::Serializer::new(String::new());
        for (k, v) in self.0.iter().filter(|(k, _)| k != "limit" && k != "offset") {
            out.append_pair(k, v);
        }
        out.append_pair("limit", &limit.to_string());
        if offset > 0 {
            out.append_pair("offset", &offset.to_string());
        }
        out.finish()
    }

    /// The absolute `next` and `previous` links for a page of `count` results at `base` (scheme, host
    /// and path of this request).
    pub fn links(
        &self,
        base: &str,
        page: &PageRequest,
        count: u64,
    ) -> (Option<String>, Option<String>) {
        let (limit, offset) = (page.limit, page.offset);
        let next = ((offset as u64) + (limit as u64) < count)
            .then(|| format!("{base}?{}", self.with_page(limit, offset + limit)));
        let previous = (offset > 0).then(|| {
            let prev = offset.saturating_sub(limit);
            format!("{base}?{}", self.with_page(limit, prev))
        });
        (next, previous)
    }
}

impl PageRequest {
    /// The total number of results when the page holding `len` of them shows it, so no count is
    /// needed: a page with results that is not full is the last one (`offset + len`), and an
    /// empty first page means none. `None` for a full page, or an empty one past the first: count.
    pub fn total_shown(&self, len: usize) -> Option<u64> {
        let len = len as u64;
        if self.limit == 0 || len >= u64::from(self.limit) || (len == 0 && self.offset > 0) {
            return None;
        }
        Some(u64::from(self.offset) + len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_that_is_not_full_shows_the_total() {
        let page = |limit, offset| PageRequest { limit, offset };
        assert_eq!(page(20, 0).total_shown(0), Some(0));
        assert_eq!(page(20, 0).total_shown(7), Some(7));
        assert_eq!(page(20, 40).total_shown(3), Some(43));
        assert_eq!(page(20, 0).total_shown(20), None, "full: more may follow");
        assert_eq!(page(20, 40).total_shown(0), None, "past the end: how far?");
        assert_eq!(page(0, 0).total_shown(0), None);
    }

    #[test]
    fn defaults_and_clamping() {
        let p = Query::parse("").page().unwrap();
        assert_eq!((p.limit, p.offset), (DEFAULT_LIMIT, 0));
        let p = Query::parse("limit=1000&offset=5").page().unwrap();
        assert_eq!((p.limit, p.offset), (MAX_LIMIT, 5));
    }

    #[test]
    fn rejects_negative_and_non_numeric() {
        for q in [
            "limit=-1",
            "offset=-3",
            "limit=abc",
            "offset=1.5",
            "limit=0",
        ] {
            assert!(Query::parse(q).page().is_err(), "{q}");
        }
    }

    #[test]
    fn links_keep_other_parameters() {
        let q = Query::parse("search=Ana%20M&limit=2&offset=2");
        let page = q.page().unwrap();
        let (next, prev) = q.links("http://h/api/v2/x/", &page, 5);
        assert_eq!(
            next.unwrap(),
            "http://h/api/v2/x/?search=Ana+M&limit=2&offset=4"
        );
        assert_eq!(prev.unwrap(), "http://h/api/v2/x/?search=Ana+M&limit=2");
        let (next, _) = q.links("http://h/x/", &page, 4);
        assert!(next.is_none());
    }

    #[test]
    fn decodes_percent_and_plus() {
        let q = Query::parse("search=a%25b_c+d");
        assert_eq!(q.get("search"), Some("a%b_c d"));
    }
}
