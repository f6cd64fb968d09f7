//! The table: one row per measurement, grouped in sections, written as markdown.

use std::fmt::Write as _;

/// A target and whether this run met it.
pub struct Target {
    pub text: String,
    pub met: bool,
}

/// One line of the table.
#[derive(Default)]
pub struct Row {
    /// A section heading: printed in bold across the row, other fields unused.
    pub section: Option<String>,
    pub name: String,
    pub conns: Option<u32>,
    /// The result with its unit ("24,800 req/s", "1.23 ms", "512 KiB").
    pub result: String,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// The server's CPU time per request (user + system, all threads), microseconds.
    pub cpu_us: Option<f64>,
    pub peak_rss_mib: Option<f64>,
    /// Ratios to the row's ceilings: (ratio, "of native hyper").
    pub ratios: Vec<(f64, String)>,
    pub targets: Vec<Target>,
}

impl Row {
    pub fn section(title: &str) -> Row {
        Row {
            section: Some(title.to_string()),
            ..Row::default()
        }
    }
}

/// `12345.6` → `12,346`.
pub fn thousands(n: f64) -> String {
    let s = format!("{:.0}", n.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Milliseconds with sensible precision.
pub fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0} ms")
    } else if v >= 10.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.2} ms")
    }
}

/// A ratio as a percentage below 2×, as a factor above.
pub fn ratio(r: f64) -> String {
    if r >= 2.0 {
        format!("{r:.1}×")
    } else {
        format!("{:.0}%", r * 100.0)
    }
}

pub fn markdown(rows: &[Row]) -> String {
    let mut out = String::new();
    out.push_str(
        "| scenario | conns | result | p50 | p99 | server CPU/req | server peak RSS | ratio to ceiling | target |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---|---|\n");
    for row in rows {
        if let Some(title) = &row.section {
            let _ = writeln!(out, "| **{title}** | | | | | | | | |");
            continue;
        }
        let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map(f).unwrap_or_default();
        let ratios = row
            .ratios
            .iter()
            .map(|(r, of)| format!("{} {of}", ratio(*r)))
            .collect::<Vec<_>>()
            .join("; ");
        let targets = row
            .targets
            .iter()
            .map(|t| format!("{} {}", if t.met { "✅" } else { "❌" }, t.text))
            .collect::<Vec<_>>()
            .join("; ");
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {ratios} | {targets} |",
            row.name,
            row.conns.map(|c| c.to_string()).unwrap_or_default(),
            row.result,
            opt(row.p50_ms, &ms),
            opt(row.p99_ms, &ms),
            opt(row.cpu_us, &|us| format!("{us:.0} µs")),
            opt(row.peak_rss_mib, &|m| format!("{m:.0} MiB")),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(ratio(0.354), "35%");
        assert_eq!(ratio(2.5), "2.5×");
        assert_eq!(ms(0.123), "0.12 ms");
        assert_eq!(ms(123.4), "123 ms");
    }
}
