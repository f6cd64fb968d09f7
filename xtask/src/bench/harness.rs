//! What every stage of the bench shares: the app under load (its command, its seeding through
//! `receta-bench`), and one measured row per connection count (`load_rows`).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::procs::Server;
use super::report::{Row, thousands};
use super::scripts::Req;
use super::settings::Settings;
use super::wrk::{self, Load};
use crate::project::{Result, WASM_TARGET, host_binary, root, target_dir};

/// The admin token of the benchmarked app.
pub const ADMIN_TOKEN: &str = "bench-admin-token-0123456789abcdef";

pub const ADMIN_HEADER: (&str, &str) =
    ("Authorization", "Token bench-admin-token-0123456789abcdef");

pub const READY_PATH: &str = "/api/v2/hospital/";

/// Medics seeded, and how many of them keep the 10 prescriptions of the first stage.
pub const MEDICS: usize = 100;

/// A path no route serves: the app's cheapest request (the gateway's 404).
pub const FLOOR_PATH: &str = "/nothing";

pub fn bench_binary() -> PathBuf {
    target_dir().join("release").join("receta-bench")
}

/// Runs a `receta-bench` command and parses its `key=value` output line.
pub fn helper(args: &[&str]) -> Result<Vec<(String, String)>> {
    let out = Command::new(bench_binary())
        .args(args)
        .output()
        .map_err(|e| format!("receta-bench {}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "receta-bench {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(key_values(&String::from_utf8_lossy(&out.stdout)))
}

pub fn helper_text(args: &[&str]) -> Result<String> {
    let out = Command::new(bench_binary())
        .args(args)
        .output()
        .map_err(|e| format!("receta-bench: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "receta-bench {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn key_values(text: &str) -> Vec<(String, String)> {
    text.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub fn value(kvs: &[(String, String)], key: &str) -> Result<f64> {
    kvs.iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| v.parse().ok())
        .ok_or_else(|| format!("no {key} in {kvs:?}"))
}

/// What one row measures: its name, and its load (a path, headers, or a wrk script that writes
/// the requests).
#[derive(Clone, Copy)]
pub struct Measure<'a> {
    pub name: &'a str,
    pub path: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub script: Option<&'a Path>,
}

impl<'a> Measure<'a> {
    /// A plain GET of `path`, no headers.
    pub fn get(name: &'a str, path: &'a str) -> Self {
        Self {
            name,
            path,
            headers: &[],
            script: None,
        }
    }
}

/// Runs `load` at every connection count against `server`; one row per count, which `finish`
/// completes (ratios, targets).
pub fn load_rows(
    settings: &Settings,
    server: &Server,
    load: &Measure,
    conns: &[u32],
    mut finish: impl FnMut(u32, &wrk::Run, &mut Row),
    rows: &mut Vec<Row>,
) -> Result<Vec<(u32, f64)>> {
    let Measure {
        name,
        path,
        headers,
        script,
    } = *load;
    let mut measured = Vec::new();
    for &c in conns {
        eprintln!("xtask bench: {name}, {c} connections");
        let url = format!("{}{path}", server.url);
        server.reset_peak();
        let (median, all) = wrk::measure(
            &Load {
                url: &url,
                headers,
                script,
                conns: c,
                pid: Some(server.pid()),
                // The floor row's path has no route: the gateway answers 404.
                expect_4xx: path == FLOOR_PATH,
            },
            settings,
        )
        .map_err(|e| format!("{name}: {e}; server log: {}", server.log.display()))?;
        let mut row = Row {
            name: name.to_string(),
            conns: Some(c),
            result: format!("{} req/s{}", thousands(median.rps), spread(&all)),
            p50_ms: Some(median.p50_ms),
            p99_ms: Some(median.p99_ms),
            cpu_us: median.cpu_us,
            peak_rss_mib: Some(server.peak_mib()),
            ..Row::default()
        };
        finish(c, &median, &mut row);
        rows.push(row);
        measured.push((c, median.rps));
    }
    Ok(measured)
}

/// The spread of the measured runs, when there are several: ` (±x%)` of the median.
pub fn spread(all: &[f64]) -> String {
    if all.len() < 2 {
        return String::new();
    }
    let median = all[all.len() / 2];
    let (lo, hi) = (all[0], all[all.len() - 1]);
    format!(" (±{:.0}%)", (hi - lo) / 2.0 / median * 100.0)
}

pub fn app_command(dir: &Path, state: &Path, cache: &Path, listen: &str) -> Command {
    app_command_on(&root().join("spin.toml"), dir, state, cache, listen)
}

/// [`app_command`] on another manifest (`spin.cloud.toml`).
pub fn app_command_on(
    manifest: &Path,
    dir: &Path,
    state: &Path,
    cache: &Path,
    listen: &str,
) -> Command {
    let mut cmd = Command::new(host_binary());
    cmd.arg("up")
        .args(["--listen", listen, "--state-dir"])
        .arg(state)
        .arg("--from")
        .arg(manifest)
        .env("SPIN_VARIABLE_ADMIN_TOKEN", ADMIN_TOKEN)
        // The verify row's load comes from one address: lift its per-address limit.
        .env("SPIN_VARIABLE_VERIFY_CALLS_PER_MINUTE", "100000000")
        .env("RECETA_CACHE_DIR", cache)
        .current_dir(dir);
    cmd
}

/// Seeded data, read back from the seeder's files.
pub struct Seed {
    /// (token, hospital) by medic index.
    pub medics: Vec<(String, i64)>,
    /// Patient uids by medic index.
    pub patients: Vec<Vec<String>>,
    /// (medic index, signature).
    pub signatures: Vec<(usize, String)>,
}

impl Seed {
    pub fn read(dir: &Path) -> Result<Seed> {
        let read = |name: &str| {
            std::fs::read_to_string(dir.join(name)).map_err(|e| format!("{name}: {e}"))
        };
        let medics = read("medics.tsv")?
            .lines()
            .map(|l| {
                let c: Vec<&str> = l.split('\t').collect();
                (c[2].to_string(), c[3].parse().unwrap_or(0))
            })
            .collect::<Vec<_>>();
        let mut patients = vec![Vec::new(); medics.len()];
        for l in read("patients.tsv")?.lines() {
            let c: Vec<&str> = l.split('\t').collect();
            if let Ok(m) = c[0].parse::<usize>() {
                patients[m].push(c[1].to_string());
            }
        }
        let signatures = read("signatures.tsv")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let (m, s) = l.split_once('\t')?;
                Some((m.parse().ok()?, s.to_string()))
            })
            .collect();
        Ok(Seed {
            medics,
            patients,
            signatures,
        })
    }

    /// One GET per medic of `medics`, `path(i)` for medic i.
    pub fn per_medic(
        &self,
        medics: std::ops::Range<usize>,
        path: impl Fn(usize) -> String,
    ) -> Vec<Req> {
        medics
            .map(|i| Req {
                method: "GET",
                path: path(i),
                token: self.medics[i].0.clone(),
                body: None,
            })
            .collect()
    }

    /// One prescription create per medic (five medications, one of the medic's patients).
    pub fn rx_creates(&self) -> Vec<Req> {
        (0..self.medics.len())
            .map(|i| Req {
                method: "POST",
                path: "/api/v2/rx-endpoint/".into(),
                token: self.medics[i].0.clone(),
                body: Some(rx_body(
                    self.medics[i].1,
                    &self.patients[i][i % self.patients[i].len()],
                )),
            })
            .collect()
    }

    /// GETs of `n` signatures spread over all of them (and so over every medic: signature k is
    /// medic k % 100's, and the stride is prime).
    pub fn per_signature(&self, n: usize, path: impl Fn(&str) -> String) -> Vec<Req> {
        let len = self.signatures.len().max(1);
        (0..n.min(len))
            .map(|i| &self.signatures[(i * 7919 + 13) % len])
            .map(|(m, s)| Req {
                method: "GET",
                path: path(s),
                token: self.medics[*m].0.clone(),
                body: None,
            })
            .collect()
    }
}

/// 10 hospitals, `MEDICS` medics (each a MEMBER of one hospital) and `patients` patients, through
/// the API; the note saying so.
pub fn seed_catalog(url: &str, seed_dir: &Path, patients: usize) -> Result<String> {
    eprintln!("xtask bench: seeding hospitals, medics and patients");
    let started = std::time::Instant::now();
    let kv = helper(&[
        "seed-catalog",
        "--url",
        url,
        "--admin-token",
        ADMIN_TOKEN,
        "--out",
        &seed_dir.to_string_lossy(),
        "--hospitals",
        "10",
        "--medics",
        &MEDICS.to_string(),
        "--patients",
        &patients.to_string(),
        "--threads",
        "4",
    ])?;
    Ok(format!(
        "Seeding: {} hospitals, {} medics (each a MEMBER of one hospital; Argon2id password \
         hashing), {} patients through the API in {:.0} s.",
        value(&kv, "hospitals")?,
        value(&kv, "medics")?,
        thousands(value(&kv, "patients")?),
        started.elapsed().as_secs_f64()
    ))
}

/// Prescriptions up to `total`, the new ones spread over the first `active` medics.
pub fn seed_rx(
    url: &str,
    dir: &Path,
    total: usize,
    active: usize,
    notes: &mut Vec<String>,
) -> Result {
    eprintln!("xtask bench: seeding prescriptions up to {total}");
    let kv = helper(&[
        "seed-rx",
        "--url",
        url,
        "--out",
        &dir.to_string_lossy(),
        "--total",
        &total.to_string(),
        "--medics",
        &active.to_string(),
        "--threads",
        "4",
    ])?;
    notes.push(format!(
        "Seeding: {} prescriptions (for {active} medics) created through the API (4 connections) \
         in {:.0} s, {:.0}/s; each create carries an `Idempotency-Key` and is sent again after a \
         5xx: {} resent.",
        thousands(value(&kv, "created")?),
        value(&kv, "seconds")?,
        value(&kv, "rate")?,
        value(&kv, "resent")?
    ));
    Ok(())
}

/// A create body with five medications (three from the seed catalog, two free text).
pub fn rx_body(hospital: i64, uid: &str) -> String {
    format!(
        r#"{{"hospital":{hospital},"patient":{{"uid":"{uid}"}},"diagnosis":"Faringoamigdalitis bacteriana aguda","extras":"Reposo relativo 3 días. Abundantes líquidos.","show_diagnosis":true,"send_rx":true,"medications":[{{"presentation":"Amoxicilina con ácido clavulánico 875 mg/125 mg, 10 tabletas","instructions":"Tomar 1 tableta cada 12 horas durante 7 días, con alimentos.","qty":2,"drug_upc":"2000000000121"}},{{"presentation":"Paracetamol 500 mg, 10 tabletas","instructions":"Tomar 1 tableta cada 8 horas en caso de fiebre o dolor.","qty":1,"drug_upc":"2000000000015"}},{{"presentation":"Loratadina 10 mg, 20 tabletas","instructions":"Tomar 1 tableta cada 24 horas por la noche.","qty":1,"drug_upc":"2000000000244"}},{{"presentation":"Bencidamina 0.15 % solución para gárgaras, frasco de 120 ml","instructions":"Hacer gárgaras con 15 ml 3 veces al día. No ingerir."}},{{"presentation":"Electrolitos orales, sobres","instructions":"Disolver 1 sobre en 1 litro de agua y beber a sorbos.","qty":6}}]}}"#
    )
}

/// A component built for the bench (`target/wasm32-wasip2/release/<name>.wasm`).
pub fn wasm(name: &str) -> PathBuf {
    root()
        .join("target")
        .join(WASM_TARGET)
        .join("release")
        .join(format!("{name}.wasm"))
}
