//! The load generator: `wrk` (Debian), a separate process on loopback, fixed connections, a
//! warm-up run, then measured runs of which the median (by requests/s) is reported.

use std::path::Path;
use std::process::Command;

use super::procs::children;
use super::settings::Settings;
use crate::project::Result;

/// One wrk run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Run {
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub requests: u64,
    /// Socket errors (connect, read, write, timeout).
    pub errors: u64,
    /// Non-2xx/3xx responses.
    pub non_2xx: u64,
    /// CPU time (user + system) the server process spent per request, microseconds.
    pub cpu_us: Option<f64>,
}

/// What to send: a URL, optional headers, optional Lua script.
pub struct Load<'a> {
    pub url: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub script: Option<&'a Path>,
    pub conns: u32,
    /// The server's process id, for its CPU time.
    pub pid: Option<u32>,
    /// Whether the answers are expected to be 4xx (the floor row's 404).
    pub expect_4xx: bool,
}

fn wrk(load: &Load, seconds: u32) -> Result<Run> {
    let threads = load.conns.clamp(1, 2);
    let mut cmd = Command::new("wrk");
    cmd.args([
        "-t",
        &threads.to_string(),
        "-c",
        &load.conns.to_string(),
        "-d",
        &format!("{seconds}s"),
        "--timeout",
        "10s",
        "--latency",
    ]);
    for (name, value) in load.headers {
        cmd.args(["-H", &format!("{name}: {value}")]);
    }
    if let Some(script) = load.script {
        cmd.arg("-s").arg(script);
    }
    cmd.arg(load.url);
    let cpu_before = load.pid.and_then(cpu_ticks);
    let out = cmd.output().map_err(|e| format!("cannot run wrk: {e}"))?;
    let cpu_after = load.pid.and_then(cpu_ticks);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "wrk failed ({}): {text}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut run = parse(&text).ok_or_else(|| format!("cannot read wrk's output:\n{text}"))?;
    if let (Some(a), Some(b)) = (cpu_before, cpu_after)
        && run.requests > 0
    {
        run.cpu_us = Some((b - a) as f64 * 1e6 / clock_ticks_per_second() / run.requests as f64);
    }
    Ok(run)
}

/// utime + stime of a process (all its threads) and of its direct children (gunicorn's workers),
/// in clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let own = process_ticks(pid)?;
    Some(
        own + children(pid)
            .into_iter()
            .filter_map(process_ticks)
            .sum::<u64>(),
    )
}

pub fn process_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces) in parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// `getconf CLK_TCK` (100 on Linux everywhere in practice).
pub fn clock_ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// Parses `wrk --latency` output.
pub fn parse(text: &str) -> Option<Run> {
    let mut run = Run::default();
    let mut in_distribution = false;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Latency", "Distribution", ..] => in_distribution = true,
            ["50%", v] if in_distribution => run.p50_ms = duration_ms(v)?,
            ["99%", v] if in_distribution => run.p99_ms = duration_ms(v)?,
            ["Requests/sec:", v] => run.rps = v.parse().ok()?,
            [n, "requests", "in", ..] => run.requests = n.parse().ok()?,
            ["Non-2xx", "or", "3xx", "responses:", n] => run.non_2xx = n.parse().ok()?,
            ["Socket", "errors:", rest @ ..] => {
                // connect 0, read 0, write 0, timeout 0
                for pair in rest.chunks(2) {
                    if let [_, n] = pair {
                        run.errors += n.trim_end_matches(',').parse::<u64>().ok()?;
                    }
                }
            }
            _ => {}
        }
    }
    (run.rps > 0.0).then_some(run)
}

fn duration_ms(v: &str) -> Option<f64> {
    let split = v.find(|c: char| c.is_ascii_alphabetic())?;
    let (n, unit) = v.split_at(split);
    let n: f64 = n.parse().ok()?;
    Some(match unit {
        "us" => n / 1000.0,
        "ms" => n,
        "s" => n * 1000.0,
        "m" => n * 60_000.0,
        _ => return None,
    })
}

/// A warm-up run, then `settings.runs` measured runs; returns the median run (by requests/s) and
/// every measured run's requests/s.
pub fn measure(load: &Load, settings: &Settings) -> Result<(Run, Vec<f64>)> {
    let check = |run: &Run, when: &str| {
        let wrong = if load.expect_4xx {
            run.requests - run.non_2xx
        } else {
            run.non_2xx
        };
        if run.errors > 0 || wrong > 0 {
            return Err(format!(
                "{}: {} socket errors and {wrong} unexpected statuses {when}",
                load.url, run.errors
            ));
        }
        Ok(())
    };
    check(&wrk(load, settings.warmup_seconds)?, "during the warm-up")?;
    let mut runs = Vec::new();
    for _ in 0..settings.runs {
        let run = wrk(load, settings.seconds)?;
        check(&run, "in a measured run")?;
        runs.push(run);
    }
    runs.sort_by(|a, b| a.rps.total_cmp(&b.rps));
    let all = runs.iter().map(|r| r.rps).collect();
    Ok((runs[runs.len() / 2], all))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_wrk_latency_output() {
        let text = "Running 5s test @ http://127.0.0.1:3000/
  2 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   312.50us  100.20us   4.10ms   90.00%
    Req/Sec    12.50k     1.00k   14.00k    70.00%
  Latency Distribution
     50%  290.00us
     75%  350.00us
     90%  420.00us
     99%    1.20ms
  124000 requests in 5.00s, 10.00MB read
  Socket errors: connect 0, read 1, write 0, timeout 2
  Non-2xx or 3xx responses: 4
Requests/sec:  24800.12
Transfer/sec:      2.00MB
";
        let run = parse(text).unwrap();
        assert_eq!(run.rps, 24800.12);
        assert!((run.p50_ms - 0.29).abs() < 1e-9);
        assert!((run.p99_ms - 1.2).abs() < 1e-9);
        assert_eq!(run.requests, 124000);
        assert_eq!(run.errors, 3);
        assert_eq!(run.non_2xx, 4);
    }

    #[test]
    fn reads_our_own_cpu_time() {
        assert!(cpu_ticks(std::process::id()).is_some());
    }
}
