//! `docs/bench.md`: the table (one row per measurement, grouped in sections, as markdown), the
//! run's notes, and a pointer to the findings kept by hand (docs/bench-findings.md).

use std::fmt::Write as _;
use std::process::Command;
use std::time::Duration;

use super::settings::Settings;
use crate::project::root;

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
    /// This row's rate over the Django peer's same row, same connections.
    pub vs_peer: Option<f64>,
    /// HTTP round trips to the libSQL server per request (the libSQL rows).
    pub round_trips: Option<f64>,
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
        "| scenario | conns | result | p50 | p99 | server CPU/req | server peak RSS | × peer | libSQL round trips/req | ratio to ceiling | target |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
    for row in rows {
        if let Some(title) = &row.section {
            let _ = writeln!(out, "| **{title}** | | | | | | | | | | |");
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
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {ratios} | {targets} |",
            row.name,
            row.conns.map(|c| c.to_string()).unwrap_or_default(),
            row.result,
            opt(row.p50_ms, &ms),
            opt(row.p99_ms, &ms),
            opt(row.cpu_us, &|us| format!("{us:.0} µs")),
            opt(row.peak_rss_mib, &|m| format!("{m:.0} MiB")),
            opt(row.vs_peer, &|r| format!("{r:.1}×")),
            opt(row.round_trips, &|n| format!("{n:.1}")),
        );
    }
    out
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("model name")?
                    .split_once(':')
                    .map(|(_, v)| v.trim().to_string())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cores} × {cpu}")
}

fn git_revision() -> String {
    Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

pub fn document(
    settings: &Settings,
    rows: &[Row],
    notes: &[String],
    load_before: &str,
    load_after: &str,
    took: Duration,
) -> String {
    let mut doc = String::new();
    let _ = writeln!(doc, "# Benchmarks\n");
    let _ = writeln!(
        doc,
        "Made by `cargo xtask bench` (see `xtask/src/bench.rs`) at commit `{}`; the whole run \
         took {:.0} min. Every load is `wrk` on loopback from a separate process: a {} s warm-up, \
         then {} runs of {} s at a fixed number of connections; the median run is shown, ± is half \
         the spread of the runs. Machine: {}; load average {} before, {} after (other builds were \
         running: compare ratios, not absolute numbers).\n",
        git_revision(),
        took.as_secs_f64() / 60.0,
        settings.warmup_seconds,
        settings.runs,
        settings.seconds,
        machine(),
        load_before,
        load_after,
    );
    doc.push_str(&markdown(rows));
    doc.push_str("\n## Notes on this run\n\n");
    for note in notes {
        let _ = writeln!(doc, "- {note}\n");
    }
    doc.push('\n');
    doc.push_str(FINDINGS);
    doc
}

/// Where what profiling found is kept by hand (docs/bench-findings.md), beside this table.
const FINDINGS: &str = "## What the benchmark found\n\nWhat profiling found, and what changed \
because of it, is kept by hand in\n[bench-findings.md](bench-findings.md).\n";

/// A target and whether the row met it.
pub fn target(text: impl Into<String>, met: bool) -> Target {
    Target {
        text: text.into(),
        met,
    }
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
