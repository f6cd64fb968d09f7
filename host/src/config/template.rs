//! Spin's `{{ name }}` templates (in `allowed_outbound_hosts` and component variables) and its rule
//! for variable names.

use anyhow::{Context, Result, bail};

/// A string with `{{ variable }}` expressions, as in Spin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Lit(String),
    Var(String),
}

impl Template {
    /// Parses `text`; `{{` must be closed by `}}`, and the names inside are trimmed.
    pub fn parse(text: &str) -> Result<Self> {
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            if let Some(expr) = rest.strip_prefix("{{") {
                let Some((name, after)) = expr.split_once("}}") else {
                    bail!("unmatched '{{{{' in template");
                };
                let name = name.trim();
                validate_variable_name(name)?;
                parts.push(Part::Var(name.to_string()));
                rest = after;
            } else {
                let end = rest.find("{{").unwrap_or(rest.len());
                parts.push(Part::Lit(rest[..end].to_string()));
                rest = &rest[end..];
            }
        }
        Ok(Self { parts })
    }

    /// The variable names the template refers to.
    pub fn references(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(name) => Some(name.as_str()),
            Part::Lit(_) => None,
        })
    }

    /// Substitutes variables, looked up by name with `value`.
    pub fn render<'a>(&self, value: impl Fn(&str) -> Option<&'a str>) -> Result<String> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Lit(lit) => out.push_str(lit),
                Part::Var(name) => {
                    out.push_str(value(name).with_context(|| format!("unknown variable {name:?}"))?)
                }
            }
        }
        Ok(out)
    }
}

/// Spin's rule for variable names: lower-case ASCII letters, digits and single underscores,
/// starting with a letter and ending with a letter or digit.
pub fn validate_variable_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "must not be empty"
    } else if name
        .chars()
        .any(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
    {
        "may contain only lower-case letters, numbers, and underscores"
    } else if !name.as_bytes()[0].is_ascii_lowercase() {
        "must start with a lowercase ASCII letter"
    } else if !name.as_bytes()[name.len() - 1].is_ascii_alphanumeric() {
        "must end with a lowercase ASCII letter or digit"
    } else if name.contains("__") {
        "must not contain multiple consecutive underscores"
    } else {
        return Ok(());
    };
    bail!("{name:?}: {reason}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates() {
        let t = Template::parse("{{ origin }}/x{{b}}").unwrap();
        assert_eq!(t.references().collect::<Vec<_>>(), ["origin", "b"]);
        let value = |name: &str| match name {
            "origin" => Some("http://h"),
            "b" => Some("!"),
            _ => None,
        };
        assert_eq!(t.render(value).unwrap(), "http://h/x!");
        assert!(Template::parse("{{ open").is_err());
        assert!(Template::parse("{{ Bad }}").is_err());
        assert_eq!(
            Template::parse("plain").unwrap().render(value).unwrap(),
            "plain"
        );
        assert!(
            Template::parse("{{ nope }}")
                .unwrap()
                .render(value)
                .is_err()
        );
    }

    #[test]
    fn names() {
        assert!(validate_variable_name("admin_token").is_ok());
        for bad in ["", "Admin", "_a", "a_", "a__b", "a-b", "1a"] {
            assert!(validate_variable_name(bad).is_err(), "{bad}");
        }
    }
}
