//! The peer stage: the Django + DRF implementation of the hot calls (`../shared/peers/drf/` beside
//! the repository, or `RECETA_PEER_DIR`), run in the same bench as the app. Its own virtualenv lives
//! under the target directory (`bench/peer-venv`, kept between runs); its database is seeded with
//! the app's sizes (10 hospitals, 100 medics, 10,000 patients, the same number of prescriptions,
//! five medications each) by its own `seed.py`; and its three rows are loaded with scripts made by
//! the same generator as the app's (`scripts::write`: pre-formatted requests rotated, each with
//! its own medic's token), so the app's detail, search and create rows can print "× peer".

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::harness::{ADMIN_HEADER, ADMIN_TOKEN, MEDICS, Measure, READY_PATH, load_rows, rx_body};
use super::procs::{Banner, Server};
use super::report::Row;
use super::scripts::{self, Req, encode};
use super::settings::Settings;
use crate::project::{Result, root, target_dir};

/// What the peer's README was measured with (PyPI is reachable from the bench machine).
const PACKAGES: &[&str] = &[
    "django==5.2.19",
    "djangorestframework==3.18.3",
    "gunicorn==27.0.1",
    "reportlab==5.1.0",
];

/// Signatures and patients the seeder prints per medic (the detail row rotates 2,000 signatures,
/// as the app's does).
const SAMPLE: usize = 20;

/// The peer's rates by the app scenario's key they compare with, and its memory.
#[derive(Default)]
pub struct Peer {
    pub rates: HashMap<&'static str, Vec<(u32, f64)>>,
    /// The summed RSS of gunicorn's master and workers after the peer's rows, MiB.
    pub rss_mib: Option<f64>,
}

/// The peer's sources: `RECETA_PEER_DIR`, else `../shared/peers/drf` beside the repository.
fn peer_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("RECETA_PEER_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/peers/drf"));
    dir.join("manage.py")
        .is_file()
        .then(|| std::fs::canonicalize(&dir).unwrap_or(dir))
}

/// Measures the peer's rows; without its sources, a note says so and the ratios stay empty.
pub fn rows(
    settings: &Settings,
    dir: &Path,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) -> Result<Peer> {
    let Some(src) = peer_dir() else {
        notes.push(
            "The Django peer was not found (`RECETA_PEER_DIR` or `../shared/peers/drf`): no \
             peer rows, no × peer column."
                .into(),
        );
        return Ok(Peer::default());
    };
    let python = venv()?;
    let work = dir.join("peer");
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let env = |cmd: &mut Command| {
        cmd.current_dir(&src)
            .env("PEER_DB", work.join("db.sqlite3"))
            .env("PYTHONPYCACHEPREFIX", work.join("pycache"))
            .env("PEER_FAST_HASH", "1")
            .env("ADMIN_TOKEN", ADMIN_TOKEN);
    };
    eprintln!("xtask bench: seeding the Django peer");
    let started = std::time::Instant::now();
    let mut migrate = Command::new(&python);
    migrate.args(["manage.py", "migrate", "-v0"]);
    env(&mut migrate);
    checked(&mut migrate)?;
    let mut seed = Command::new(&python);
    seed.arg("seed.py").args([
        "--hospitals",
        "10",
        "--medics",
        &MEDICS.to_string(),
        "--patients",
        "10000",
        "--prescriptions",
        &settings.prescriptions.to_string(),
        "--meds",
        "5",
        "--sample",
        &SAMPLE.to_string(),
    ]);
    env(&mut seed);
    let json = checked(&mut seed)?;
    std::fs::write(work.join("seed.json"), &json).map_err(|e| e.to_string())?;
    let seeded = PeerSeed::parse(&python, &work.join("seed.json"))?;
    notes.push(format!(
        "Django peer: `{}` with {} in a virtualenv under the target directory; seeded by its \
         `seed.py` (100 medics, 10,000 patients, {} prescriptions of 5 medications, one PDF per \
         medic reused, MD5 password hashing) in {:.0} s; gunicorn as its README runs it (gthread, \
         2 × cores + 1 workers of 2 threads, SQLite WAL with `synchronous=NORMAL`). Its rows run \
         before the app's, with scripts from the same generator (the same request kinds and \
         bodies, its own tokens, signatures, patients and surnames).",
        src.display(),
        PACKAGES.join(", "),
        settings.prescriptions,
        started.elapsed().as_secs_f64(),
    ));

    let mut gunicorn = Command::new(python.with_file_name("gunicorn"));
    gunicorn.args([
        "-c",
        "gunicorn.conf.py",
        "--bind",
        "127.0.0.1:0",
        "--log-level",
        "info",
        "peer.wsgi:application",
    ]);
    env(&mut gunicorn);
    let server = Server::start(
        gunicorn,
        Banner::Stderr,
        &dir.join("peer.log"),
        READY_PATH,
        &[ADMIN_HEADER],
    )?;
    rows.push(Row::section(
        "The Django peer (DRF + gunicorn + SQLite, same sizes, same kinds of request)",
    ));
    let scripts_dir = work.join("scripts");
    std::fs::create_dir_all(&scripts_dir).map_err(|e| e.to_string())?;
    let mut peer = Peer::default();
    for (key, name, reqs) in [
        (
            "rx-detail",
            "peer: GET /api/v2/rx-endpoint/&lt;signature&gt;/ (2,000 signatures rotated)",
            seeded.details(2000),
        ),
        (
            "rx-search",
            "peer: GET /api/v2/rx-endpoint/?search=&lt;surname&gt;",
            seeded.searches(),
        ),
        (
            "rx-create",
            "peer: POST /api/v2/rx-endpoint/ (5 medications, PDF stored, outbox row)",
            seeded.creates(),
        ),
    ] {
        let script = scripts::write(&scripts_dir, key, &reqs)?;
        let rates = load_rows(
            settings,
            &server,
            &Measure {
                name,
                path: "/",
                headers: &[],
                script: Some(&script),
            },
            &settings.conns,
            |_, _, row| row.peak_rss_mib = Some(server.tree_rss_mib()),
            rows,
        )?;
        peer.rates.insert(key, rates);
    }
    peer.rss_mib = Some(server.tree_rss_mib());
    server.stop();
    Ok(peer)
}

/// The peer's virtualenv's python, created and filled once.
fn venv() -> Result<PathBuf> {
    let venv = target_dir().join("bench").join("peer-venv");
    let python = venv.join("bin").join("python");
    let stamp = venv.join("receta-packages");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(&PACKAGES.join(" ")) {
        return Ok(python);
    }
    eprintln!("xtask bench: installing the Django peer's packages");
    checked(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    checked(
        Command::new(&python)
            .args(["-m", "pip", "install", "-q"])
            .args(PACKAGES),
    )?;
    std::fs::write(&stamp, PACKAGES.join(" ")).map_err(|e| e.to_string())?;
    Ok(python)
}

/// Runs `cmd`, returning its stdout, or its stderr as the error.
fn checked(cmd: &mut Command) -> Result<String> {
    let shown = format!("{cmd:?}");
    let out = cmd.output().map_err(|e| format!("{shown}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{shown} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What the peer's seeder printed: per medic its token, hospital, signatures and patients; the
/// surnames used in patient names.
struct PeerSeed {
    medics: Vec<(String, i64, Vec<String>, Vec<String>)>,
    terms: Vec<String>,
}

/// Flattens the seeder's JSON into lines (xtask has no JSON parser; the venv's python does it).
const FLATTEN: &str = r#"import json, sys
s = json.load(open(sys.argv[1]))
print("\t".join(s["search_terms"]))
for m in s["medics"]:
    print("\t".join([m["token"], str(m["hospital"]), ",".join(m["signatures"]), ",".join(m["patients"])]))
"#;

impl PeerSeed {
    fn parse(python: &Path, json: &Path) -> Result<PeerSeed> {
        let text = checked(Command::new(python).args(["-c", FLATTEN]).arg(json))?;
        let mut lines = text.lines();
        let terms: Vec<String> = lines
            .next()
            .unwrap_or_default()
            .split('\t')
            .map(str::to_string)
            .collect();
        let list = |s: &str| -> Vec<String> {
            s.split(',')
                .filter(|x| !x.is_empty())
                .map(str::to_string)
                .collect()
        };
        let medics = lines
            .filter_map(|l| {
                let c: Vec<&str> = l.split('\t').collect();
                let (sigs, patients) = (list(c.get(2)?), list(c.get(3)?));
                (!sigs.is_empty() && !patients.is_empty())
                    .then(|| Some((c[0].to_string(), c[1].parse().ok()?, sigs, patients)))?
            })
            .collect::<Vec<_>>();
        if medics.is_empty() || terms.is_empty() {
            return Err(format!("{}: no medic with prescriptions", json.display()));
        }
        Ok(PeerSeed { medics, terms })
    }

    fn get(&self, medic: usize, path: String) -> Req {
        Req {
            method: "GET",
            path,
            token: self.medics[medic].0.clone(),
            body: None,
        }
    }

    /// `n` details, each by its own medic, spread over every medic.
    fn details(&self, n: usize) -> Vec<Req> {
        let m = self.medics.len();
        (0..n)
            .map(|i| {
                let sigs = &self.medics[i % m].2;
                self.get(
                    i % m,
                    format!("/api/v2/rx-endpoint/{}/", sigs[(i / m) % sigs.len()]),
                )
            })
            .collect()
    }

    /// One search per medic, the surnames rotated.
    fn searches(&self) -> Vec<Req> {
        (0..self.medics.len())
            .map(|i| {
                let term = encode(&self.terms[i % self.terms.len().max(1)]);
                self.get(i, format!("/api/v2/rx-endpoint/?search={term}"))
            })
            .collect()
    }

    /// One create per medic, the app's own body (five medications) for one of its patients.
    fn creates(&self) -> Vec<Req> {
        self.medics
            .iter()
            .enumerate()
            .map(|(i, (token, hospital, _, patients))| Req {
                method: "POST",
                path: "/api/v2/rx-endpoint/".into(),
                token: token.clone(),
                body: Some(rx_body(*hospital, &patients[i % patients.len()])),
            })
            .collect()
    }
}
