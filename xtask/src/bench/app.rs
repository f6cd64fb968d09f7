//! The app stage: `spin.toml` on a fresh state dir, seeded through the API (10 hospitals, 100
//! medics, 10,000 patients, then 1,000 and 50,000 prescriptions), and its rows as two tables of
//! scenarios (at 1,000 prescriptions, then at the full size). A new row is one entry in a table.

use std::ops::Range;
use std::path::Path;

use super::harness::{
    ADMIN_HEADER, ADMIN_TOKEN, FLOOR_PATH, MEDICS, READY_PATH, Seed, app_command, helper,
    helper_text, seed_catalog, seed_rx, value,
};
use super::procs::{Banner, Server};
use super::report::{Row, target, thousands};
use super::scenarios::{Baselines, Load, Measured, Scenario, measure};
use super::scripts::{Req, encode};
use super::settings::Settings;
use crate::project::Result;

/// Medics that keep the 10 prescriptions of the first stage (the last ones): their lists measure
/// the table's growth alone, while the others' lists also grow with their own history.
const LIGHT: usize = 10;

/// Searches of the scenarios: surnames, rotated over the medics.
const SURNAMES: &[&str] = &[
    "García",
    "Hernández",
    "López",
    "Martínez",
    "Pérez",
    "Sánchez",
];

/// Flat means at least this share of the same request on the smaller history.
const FLAT: Option<f64> = Some(0.8);

/// Detail, search and create: at least this many times the Django peer's rate (issue 34).
const PEER_TIMES: Option<f64> = Some(10.0);

/// A pharmacy lookup and a public verify (reads that write an audit or rate-limit row): at least
/// this share of the detail's rate (issue 34).
const READS_THAT_WRITE: Option<f64> = Some(0.6);
const OF_DETAIL: &str = "of the detail by signature";
/// The FHIR bundle of a prescription runs at least at half the JSON detail's rate (issue 62).
const FHIR_OF_DETAIL: Option<f64> = Some(0.5);

/// What the app rows' peak RSS counts.
const RSS_NOTE: &str = "Server peak RSS of the app's rows is the process's `VmHWM`: it counts the \
    pages of the database file that the host has mapped (`mmap_size`, host/README.md) and that a \
    row read, which are the kernel's page cache shared by every connection and dropped under \
    memory pressure, not the host's heap: the rows that read PDFs or walk many prescriptions \
    (detail, PDF, searches) show much of the database file there, and the column falls again when \
    the kernel reclaims those pages or SQLite maps the file anew. The host's own footprint is the \
    idle RSS row.";

/// The pharmacy of the pharmacy rows and its dispensable prescriptions (`seed-pharmacy`).
pub struct Dispensable {
    token: String,
    /// (signature, the medication's id, its fills).
    prescriptions: Vec<(String, i64, u32)>,
}

impl Dispensable {
    pub fn read(dir: &Path) -> Result<Dispensable> {
        let text = std::fs::read_to_string(dir.join("pharmacy.tsv"))
            .map_err(|e| format!("pharmacy.tsv: {e}"))?;
        let mut lines = text.lines();
        let token = lines.next().unwrap_or_default().to_string();
        let prescriptions = lines
            .filter_map(|l| {
                let mut cells = l.split('\t');
                let (s, m) = (cells.next()?, cells.next()?);
                let fills = cells.next().and_then(|f| f.parse().ok()).unwrap_or(1);
                Some((s.to_string(), m.parse().ok()?, fills))
            })
            .collect();
        Ok(Dispensable {
            token,
            prescriptions,
        })
    }
}

/// Seeds the app and measures its rows.
pub fn rows(
    settings: &Settings,
    dir: &Path,
    baselines: &Baselines,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) -> Result<Measured> {
    let state = dir.join("app-state");
    let seed_dir = dir.join("seed");
    let scripts_dir = dir.join("scripts");
    for d in [&seed_dir, &scripts_dir] {
        std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
    }
    let server = Server::start(
        app_command(dir, &state, &dir.join("cache"), "127.0.0.1:0"),
        Banner::Stdout,
        &dir.join("app-host.log"),
        READY_PATH,
        &[ADMIN_HEADER],
    )?;
    notes.push(seed_catalog(&server.url, &seed_dir, 10_000)?);
    let light = MEDICS - LIGHT..MEDICS;
    let heavy = 0..MEDICS - LIGHT;
    let mut measured = Measured::default();

    // Stage 1: 10 prescriptions per medic.
    let first = 1000.min(settings.prescriptions);
    seed_rx(&server.url, &seed_dir, first, MEDICS, notes)?;
    let seed = Seed::read(&seed_dir)?;
    let at_first = format!("at {} prescriptions", thousands(first as f64));
    rows.push(Row::section(&format!(
        "The app {at_first} (10 hospitals, 100 medics, 10,000 patients)"
    )));
    let stage1 = vec![
        Scenario::new(
            "rx-list-10",
            format!("GET /api/v2/rx-endpoint/?limit=10, medics with 10 prescriptions, {at_first}"),
            Load::Rotated(seed.per_medic(light.clone(), |_| LIST_10.into())),
        ),
        Scenario::new(
            "rx-search-all-10",
            format!(
                "GET /api/v2/rx-endpoint/?search=correo.mx&limit=10 (matches all 10), medics with 10 prescriptions, {at_first}"
            ),
            Load::Rotated(seed.per_medic(light.clone(), |_| SEARCH_ALL_10.into())),
        ),
    ];
    measure(
        settings,
        &server,
        &scripts_dir,
        baselines,
        stage1,
        &mut measured,
        rows,
    )?;

    // Stage 2: everything at the full size; the heavy medics get the new prescriptions.
    seed_rx(
        &server.url,
        &seed_dir,
        settings.prescriptions,
        heavy.len(),
        notes,
    )?;
    let seed = Seed::read(&seed_dir)?;
    let dispensable = seed_pharmacy(&server, &seed_dir, notes)?;
    let full = thousands(seed.signatures.len() as f64);
    let per_heavy = (seed.signatures.len() - first) / heavy.len() + first / MEDICS;
    rows.push(Row::section(&format!(
        "The app at {full} prescriptions (ratios: to the `hello` component through `receta`, same connections)"
    )));
    let stage2 = full_size(&seed, &dispensable, light, heavy, &full, per_heavy);
    measure(
        settings,
        &server,
        &scripts_dir,
        baselines,
        stage2,
        &mut measured,
        rows,
    )?;
    rows.push(Row::section("Memory beside the peer"));
    let right_after = server.rss_anon_mib();
    // Past Spin's default `--idle-instance-timeout` (1 s), which `receta` keeps: the instances the
    // load needed are gone, as they would be between bursts.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let settled = server.rss_anon_mib();
    let fifth = |mib: f64| {
        baselines
            .peer_rss_mib
            .map(|peer| target("≤ 1/5 of the peer's", mib <= peer / 5.0))
    };
    rows.push(Row {
        name:
            "receta: anonymous RSS (`RssAnon`, no mapped database pages) right after the app's rows"
                .into(),
        result: format!("{right_after:.0} MiB"),
        targets: fifth(right_after).into_iter().collect(),
        ..Row::default()
    });
    rows.push(Row {
        name: "receta: the same 3 s later (the idle instances dropped, Spin's default reuse)"
            .into(),
        result: format!("{settled:.0} MiB"),
        targets: fifth(settled).into_iter().collect(),
        ..Row::default()
    });
    if let Some(mib) = baselines.peer_rss_mib {
        rows.push(Row {
            name: "Django peer: gunicorn's RSS summed over its master and workers after its rows"
                .into(),
            result: format!("{mib:.0} MiB"),
            ..Row::default()
        });
    }
    server.stop();
    notes.push(RSS_NOTE.to_string());

    let plans = helper_text(&[
        "explain",
        "--db",
        &state.join("sqlite_db.db").to_string_lossy(),
    ])?;
    notes.push(format!(
        "EXPLAIN QUERY PLAN of the statements behind these rows, on the seeded database \
         (`receta-bench explain`):\n\n```text\n{plans}```"
    ));
    Ok(measured)
}

const LIST_10: &str = "/api/v2/rx-endpoint/?limit=10";
const SEARCH_ALL_10: &str = "/api/v2/rx-endpoint/?search=correo.mx&limit=10";

/// The detail row's load: 2,000 signatures, each with its medic's token.
pub fn details(seed: &Seed) -> Load {
    Load::Rotated(seed.per_signature(2000, |s| format!("/api/v2/rx-endpoint/{s}/")))
}

/// The pharmacy lookup row's load: the detail's 2,000 signatures, with the pharmacy's token.
pub fn lookups(seed: &Seed, pharmacy: &Dispensable) -> Load {
    Load::Rotated(
        seed.per_signature(2000, |s| format!("/api/v2/pharmacy/rx/{s}"))
            .into_iter()
            .map(|r| Req {
                token: pharmacy.token.clone(),
                ..r
            })
            .collect(),
    )
}

/// The search row's load: a surname, rotated over the medics with a long history.
pub fn searches(seed: &Seed) -> Load {
    Load::Rotated(seed.per_medic(0..MEDICS - LIGHT, |i| {
        format!(
            "/api/v2/rx-endpoint/?search={}",
            encode(SURNAMES[i % SURNAMES.len()])
        )
    }))
}

/// The rows at the full size, reads first (writes add rows).
fn full_size(
    seed: &Seed,
    pharmacy: &Dispensable,
    light: Range<usize>,
    heavy: Range<usize>,
    full: &str,
    per_heavy: usize,
) -> Vec<Scenario> {
    let by_signature = |path: &dyn Fn(&str) -> String| seed.per_signature(2000, path);
    let surname = |i: usize| encode(SURNAMES[i % SURNAMES.len()]);
    let as_pharmacy = |reqs: Vec<Req>| -> Vec<Req> {
        reqs.into_iter()
            .map(|r| Req {
                token: pharmacy.token.clone(),
                ..r
            })
            .collect()
    };
    const SAME_AT_1K: &str = "of the same at 1,000";
    vec![
        Scenario::new(
            "floor",
            "GET /nothing: the gateway's 404 (the floor: the gateway alone, no dependency called, no SQL)",
            Load::Path(FLOOR_PATH, &[]),
        )
        .vs_hello(None),
        Scenario::new(
            "hospital-list",
            "GET /api/v2/hospital/ (API admin, paginated: 10 of 10)",
            Load::Path("/api/v2/hospital/", &[ADMIN_HEADER]),
        )
        .vs_hello(None),
        Scenario::new(
            "rx-list",
            "GET /api/v2/rx-endpoint/ (a medic's newest 20, with medications)",
            Load::Rotated(seed.per_medic(heavy.clone(), |_| "/api/v2/rx-endpoint/".into())),
        )
        .vs_hello(None),
        Scenario::new(
            "rx-detail",
            "GET /api/v2/rx-endpoint/&lt;signature&gt;/ (2,000 signatures rotated)",
            details(seed),
        )
        .vs_hello(None)
        .vs_peer(PEER_TIMES),
        Scenario::new(
            "rx-fhir",
            "GET /api/v2/rx-endpoint/&lt;signature&gt;/fhir/ (the FHIR R4 Bundle, 2,000 signatures rotated)",
            Load::Rotated(by_signature(&|s| format!("/api/v2/rx-endpoint/{s}/fhir/"))),
        )
        .vs_row("rx-detail", OF_DETAIL, FHIR_OF_DETAIL),
        Scenario::new(
            "rx-pdf",
            "GET /api/v2/rx/pdf/&lt;signature&gt;/ (stored PDF, base64 in JSON)",
            Load::Rotated(by_signature(&|s| format!("/api/v2/rx/pdf/{s}/"))),
        )
        .vs_hello(None),
        Scenario::new(
            "pharmacy-lookup",
            "GET /api/v2/pharmacy/rx/&lt;signature&gt; (pharmacy token, 2,000 signatures rotated, call-log row and access-log entry queued in the key-value store)",
            Load::Rotated(as_pharmacy(by_signature(&|s| format!("/api/v2/pharmacy/rx/{s}")))),
        )
        .vs_row("rx-detail", OF_DETAIL, READS_THAT_WRITE),
        Scenario::new(
            "verify",
            "GET /api/v2/verify/&lt;signature&gt; (no token: digest + Ed25519 check, rate-limit counters in the key-value store)",
            Load::Rotated(by_signature(&|s| format!("/api/v2/verify/{s}"))),
        )
        .vs_row("rx-detail", OF_DETAIL, READS_THAT_WRITE),
        Scenario::new(
            "rx-search",
            format!("GET /api/v2/rx-endpoint/?search=&lt;surname&gt; over the {full}"),
            searches(seed),
        )
        .vs_hello(None)
        .vs_peer(PEER_TIMES),
        Scenario::new(
            "patient-search",
            "GET /api/v2/patient/?search=&lt;surname&gt; (100 patients per medic)",
            Load::Rotated(seed.per_medic(0..MEDICS, |i| {
                format!("/api/v2/patient/?search={}", surname(i))
            })),
        )
        .vs_hello(None),
        // Flatness: the same list and search as at 1,000, for the same medics.
        Scenario::new(
            "rx-list-10-full",
            format!("GET /api/v2/rx-endpoint/?limit=10, the same medics (10 prescriptions each), at {full}"),
            Load::Rotated(seed.per_medic(light.clone(), |_| LIST_10.into())),
        )
        .vs_row("rx-list-10", SAME_AT_1K, FLAT),
        Scenario::new(
            "rx-search-all-10-full",
            format!("GET /api/v2/rx-endpoint/?search=correo.mx&limit=10 (matches all 10), the same medics, at {full}"),
            Load::Rotated(seed.per_medic(light, |_| SEARCH_ALL_10.into())),
        )
        .vs_row("rx-search-all-10", SAME_AT_1K, FLAT),
        // A search tests every one of the medic's own prescriptions (`LIKE '%…%'` plus the total
        // count), reading them from `prescriptions_search_by_medic` (0011), never the whole table.
        Scenario::new(
            "rx-search-all-10-heavy",
            format!("GET /api/v2/rx-endpoint/?search=correo.mx&limit=10 (matches all), medics with ~{per_heavy} prescriptions, at {full}"),
            Load::Rotated(seed.per_medic(heavy, |_| SEARCH_ALL_10.into())),
        )
        .vs_row("rx-search-all-10-full", "of the same for medics with 10, same table", FLAT),
        // Reads while writes commit, as in production (every pharmacy lookup and verify writes
        // too): SQLite drops a connection's mapped file and page cache after another connection's
        // commit, which no read-only row shows (docs/bench-findings.md, "The mapped file under writes").
        Scenario::new(
            "mixed",
            "GET /api/v2/rx-endpoint/&lt;signature&gt;/ and POST /api/v2/rx-endpoint/ (5 medications), 4 to 1",
            Load::Rotated(mixed(
                by_signature(&|s| format!("/api/v2/rx-endpoint/{s}/")),
                seed.rx_creates(),
            )),
        )
        .vs_row("rx-detail", "of the read-only detail", None),
        Scenario::new(
            "patient-create",
            "POST /api/v2/patient/",
            Load::Rotated(patient_creates(seed)),
        )
        .vs_sqlite(None),
        Scenario::new(
            "rx-create",
            "POST /api/v2/rx-endpoint/ (5 medications, PDF stored, outbox row, one commit)",
            Load::Rotated(seed.rx_creates()),
        )
        .vs_sqlite(None)
        .vs_peer(PEER_TIMES),
        Scenario::new(
            "pharmacy-burn",
            "POST /api/v1/prescriptions/burn/&lt;signature&gt; (1 unit: event, conditional UPDATE, one commit; call logged)",
            Load::Rotated(burns(pharmacy, false)),
        )
        .vs_sqlite(None),
        Scenario::new(
            "pharmacy-burn-repeat",
            "POST /api/v1/prescriptions/burn/&lt;signature&gt; on a repeat prescription (fills 12: the fill's limits and its seal details in the same commit)",
            Load::Rotated(burns(pharmacy, true)),
        )
        .vs_sqlite(None),
        Scenario::new(
            "pharmacy-claim-burn",
            "POST /api/v2/pharmacy/rx/&lt;signature&gt;/claim/ then its burn by the holder, as one pair (two commits: the claim; the sale with its sealed receipt and access-log rows): req/s counts each call, pairs/s are half",
            Load::Rotated(claims_then_burns(pharmacy)),
        )
        .vs_row("pharmacy-burn", "of the burn alone, per call", None),
    ]
}

/// A claim of each single-fill prescription followed by the holder's one-unit burn of it (the
/// holder's token closes its claim; the secret header would add one SHA-256).
pub fn claims_then_burns(pharmacy: &Dispensable) -> Vec<Req> {
    burns(pharmacy, false)
        .into_iter()
        .flat_map(|burn| {
            let claim = Req {
                method: "POST",
                path: burn
                    .path
                    .replace("/api/v1/prescriptions/burn/", "/api/v2/pharmacy/rx/")
                    + "/claim/",
                token: burn.token.clone(),
                body: None,
            };
            [claim, burn]
        })
        .collect()
}

/// `reads` with one of `writes` after every fourth read (the writes rotated).
fn mixed(reads: Vec<Req>, writes: Vec<Req>) -> Vec<Req> {
    let mut writes = writes.iter().cycle();
    let mut out = Vec::new();
    for (i, read) in reads.into_iter().enumerate() {
        out.push(read);
        if i % 4 == 3 {
            out.extend(writes.next().cloned());
        }
    }
    out
}

fn patient_creates(seed: &Seed) -> Vec<Req> {
    (0..seed.medics.len())
        .map(|i| Req {
            method: "POST",
            path: "/api/v2/patient/".into(),
            token: seed.medics[i].0.clone(),
            body: Some(format!(
                r#"{{"name":"Paciente Nuevo {i} Ramírez","email":"nuevo{i}@correo.mx","date_of_birth":"1985-04-12","gender":"F","phone":"5512345678","state":"Jalisco","zip_code":"44100"}}"#
            )),
        })
        .collect()
}

/// One-unit burns of the single-fill prescriptions, or of the repeat ones.
pub fn burns(pharmacy: &Dispensable, repeats: bool) -> Vec<Req> {
    pharmacy
        .prescriptions
        .iter()
        .filter(|(_, _, fills)| (*fills > 1) == repeats)
        .enumerate()
        .map(|(i, (signature, medication, _))| Req {
            method: "POST",
            path: format!("/api/v1/prescriptions/burn/{signature}"),
            token: pharmacy.token.clone(),
            body: Some(format!(
                r#"{{"sales_code":"TICKET-{i}","medications":[{{"id":{medication},"bought_qty":1}}]}}"#
            )),
        })
        .collect()
}

/// The pharmacy calls: a lookup of any prescription by signature, and a one-unit dispense. Each
/// call also checks the pharmacy's rate limit and is logged (one commit).
pub fn seed_pharmacy(
    server: &Server,
    seed_dir: &Path,
    notes: &mut Vec<String>,
) -> Result<Dispensable> {
    let kv = helper(&[
        "seed-pharmacy",
        "--url",
        &server.url,
        "--admin-token",
        ADMIN_TOKEN,
        "--out",
        &seed_dir.to_string_lossy(),
        "--prescriptions",
        "200",
    ])?;
    notes.push(format!(
        "Pharmacy rows: one pharmacy registered through the API, and {} prescriptions of one \
         9,999-unit medication for the dispense rows (each burn sells 1 unit); every other one a \
         repeat prescription (fills 12).",
        value(&kv, "prescriptions")?
    ));
    Dispensable::read(seed_dir)
}
