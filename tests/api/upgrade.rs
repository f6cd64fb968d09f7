//! An upgrade keeps every answer (issue 88): a database the previous release made (its own
//! migrations, run by its own ledger), filled through its own API with prescriptions in every
//! state, then migrated by this build, answers every read exactly as the previous release answered
//! it: the medic's detail, list, PDF, canonical document, FHIR, dispenses, messages, constancia
//! and e.firma, the patient's page and landing (with the access log), the public verify, the
//! pharmacy's lookup, receipts and call log.
//!
//! The previous release is built from git by `cargo xtask test` (`xtask/src/previous.rs`) and
//! named by `RECETA_PREVIOUS_MANIFEST`; it runs on this build's host, as an operator upgrading the
//! app on the same Spin would. Both sides answer from the same bytes: the previous release's state
//! dir is copied, the previous release reads the copy, this build migrates and reads the original.

use std::path::{Path, PathBuf};
use std::time::Duration;

use receta_test_tsa::Server as Tsa;
use serde_json::{Value, json};

use crate::fixtures::{
    Fiel, Holder, Practice, TestPharmacy, burn, cancel, claimed, efirma_activate, efirma_draft,
    enrol, eventually, med_ids, prescribe, register, reject, signature,
};
use crate::helpers::{ADMIN_TOKEN, AppConfig, JOBS_TOKEN, TestApp, on_libsql, spin, start};

const DAY: i64 = 86_400;
/// How long the stamps of the filled database may take.
const WAIT: Duration = Duration::from_secs(60);
const TSA_TOKEN: &str = "tsa-token-0123456789";
const RFC: &str = "HEGT7610034S2";
const CURP: &str = "SABC560626MDFLRN01";

/// What both releases are started with: the manifest, the same authorities and clock.
struct Setup {
    tsa: Tsa,
    fiel: Fiel,
    /// An empty migrations directory: `receta up` then leaves the migrations to the app.
    no_migrations: tempfile::TempDir,
}

impl Setup {
    fn config(&self, manifest: &Path, clock_offset: i64) -> AppConfig {
        let (url, ca, efirma_ca) = (
            self.tsa.url("/tsr"),
            self.tsa.authority().ca_pem(),
            self.fiel.ca_pem(),
        );
        let mut config = AppConfig {
            manifest: manifest.to_path_buf(),
            scheduled: false,
            ..AppConfig::default()
        }
        .and_variables(&[
            ("timestamp_url", &url),
            ("timestamp_token", TSA_TOKEN),
            ("timestamp_ca", &ca),
            ("efirma_ca", &efirma_ca),
            ("outbox_retry_scale", "0.001"),
        ])
        .with_env("RECETA_CLOCK_OFFSET_SECONDS", &clock_offset.to_string());
        config.flags = vec![
            "--migrations".into(),
            self.no_migrations.path().display().to_string(),
        ];
        config
    }
}

/// The previous release's prescriptions, by the state each was left in.
struct Filled {
    practice: Practice,
    pharmacy: TestPharmacy,
    /// `(state, signature)`.
    prescriptions: Vec<(&'static str, String)>,
    /// The digests of the sales' receipts.
    receipts: Vec<String>,
}

#[test]
fn a_database_of_the_previous_release_answers_the_same_after_the_upgrade() {
    if on_libsql() || spin().is_some() {
        return; // The previous release's state dir is copied as files, on this project's host.
    }
    let Some(previous) = std::env::var_os("RECETA_PREVIOUS_MANIFEST").map(PathBuf::from) else {
        eprintln!(
            "RECETA_PREVIOUS_MANIFEST is not set: `cargo xtask test` builds the previous release"
        );
        return;
    };
    let setup = Setup {
        tsa: Tsa::start(),
        fiel: Fiel::new("AC de pruebas Receta"),
        no_migrations: tempfile::tempdir().unwrap(),
    };

    // The previous release fills its database, three days before the reads (so a prescription
    // valid for one day has expired by then).
    let old = start(setup.config(&previous, 0), tempfile::tempdir().unwrap());
    let mut filled = fill(&old, &setup);
    let old = start(setup.config(&previous, 3 * DAY), old.crash());
    // A claim lasts minutes and a draft a day: made at the reads' time.
    let sig = issued(&old, &filled.practice);
    claimed(&old, &filled.pharmacy, &sig);
    filled.prescriptions.push(("claimed", sig));
    let (draft, _) = efirma_draft(&old, &filled.practice);
    filled
        .prescriptions
        .push(("draft awaiting the e.firma", draft));
    settle(&old, &filled);
    let state = old.crash();

    let copy = tempfile::tempdir().unwrap();
    copy_dir(state.path(), copy.path());
    let before = answers(&start(setup.config(&previous, 3 * DAY), copy), &filled);
    let current = crate::helpers::repo_root().join("spin.cloud.toml");
    let after = answers(&start(setup.config(&current, 3 * DAY), state), &filled);

    assert_eq!(before.len(), after.len());
    let found = before
        .iter()
        .filter(|(_, a)| a.starts_with(b"200 "))
        .count();
    assert!(
        found * 4 > before.len() * 3,
        "{found} of {} reads answered 200",
        before.len()
    );
    for ((what, old), (_, new)) in before.iter().zip(&after) {
        if old != new {
            let at = old.iter().zip(new).take_while(|(a, b)| a == b).count();
            let around = |bytes: &[u8]| {
                String::from_utf8_lossy(&bytes[at.saturating_sub(200)..(at + 200).min(bytes.len())])
                    .into_owned()
            };
            panic!(
                "{what} changed with the upgrade, at byte {at}:\nbefore: …{}…\nafter:  …{}…",
                around(old),
                around(new)
            );
        }
    }
}

/// Prescriptions in every state the previous release can leave one in: issued, partly and fully
/// sold, cancelled, rejected, valid for one day (expired at the reads), a repeat prescription with
/// a fill used, a draft left to expire awaiting the medic's e.firma and one signed with it; every
/// issued one stamped (NOM-151), and each patient page seen once. (The claimed one and a live
/// draft are made on the reads' day.)
fn fill(app: &TestApp, setup: &Setup) -> Filled {
    let practice = Practice::new(app, "mejora@example.mx", "Clínica Mejora");
    let pharmacy = register(app, "Farmacia Mejora");
    let mut prescriptions = Vec::new();
    let mut receipts = Vec::new();
    let mut sell = |sig: &str, items: &[(i64, i64)]| {
        let resp = burn(app, &pharmacy, sig, items);
        assert_eq!(resp.status, 200, "{}", resp.text());
        receipts.push(
            resp.json()["receipt"]["digest"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    };

    prescriptions.push(("issued", issued(app, &practice)));

    let rx = prescribe(app, &practice);
    let (first, _) = med_ids(&rx);
    let sig = signature(&rx);
    assert_eq!(
        app.get(&format!("/api/v2/pharmacy/rx/{sig}"), pharmacy.token())
            .status,
        200
    );
    sell(&sig, &[(first, 1)]);
    prescriptions.push(("partly sold", sig));

    let rx = prescribe(app, &practice);
    let (first, second) = med_ids(&rx);
    let sig = signature(&rx);
    sell(&sig, &[(first, 2), (second, 1)]);
    prescriptions.push(("fully sold", sig));

    let sig = issued(app, &practice);
    assert_eq!(cancel(app, practice.medic.token(), &sig).status, 200);
    prescriptions.push(("cancelled", sig));

    let sig = issued(app, &practice);
    assert_eq!(reject(app, &pharmacy, &sig).status, 200);
    prescriptions.push(("rejected", sig));

    let sig = created(app, &practice, json!({"valid_days": 1}));
    prescriptions.push(("expired at the reads", sig));

    let sig = created(app, &practice, json!({"fills": 3, "fill_interval_days": 1}));
    let rx = app
        .get(
            &format!("/api/v2/rx-endpoint/{sig}/"),
            practice.medic.token(),
        )
        .json();
    let med = rx["medications"][0]["id"].as_i64().unwrap();
    sell(&sig, &[(med, 1)]);
    prescriptions.push(("repeat, one fill used", sig));

    let signer = with_efirma(app, setup, &practice);
    let (draft, _) = efirma_draft(app, &practice);
    prescriptions.push(("draft expired awaiting the e.firma", draft));
    let (sig, to_sign) = efirma_draft(app, &practice);
    let resp = efirma_activate(app, practice.medic.token(), &sig, &signer.sign(&to_sign));
    assert_eq!(resp.status, 200, "{}", resp.text());
    prescriptions.push(("signed with the e.firma", sig));

    let filled = Filled {
        practice,
        pharmacy,
        prescriptions,
        receipts,
    };
    settle(app, &filled);
    filled
}

/// The jobs run until every issued prescription and sale is stamped; each patient page seen.
fn settle(app: &TestApp, filled: &Filled) {
    for (_, sig) in &filled.prescriptions {
        assert_eq!(app.get(&format!("/rx/{sig}"), None).status, 200);
    }
    eventually("every constancia stamped", WAIT, || {
        let run = app.post("/api/v2/jobs/run/", Some(JOBS_TOKEN), &json!({}));
        assert_eq!(run.status, 200, "{}", run.text());
        let (pending, stamped): (i64, i64) = crate::fixtures::db(app)
            .query_row(
                "SELECT (SELECT COUNT(*) FROM stamp_queue WHERE status <> 'done'), \
                        (SELECT COUNT(*) FROM constancias)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        (pending == 0 && stamped > 0).then_some(())
    });
}

/// A prescription of two medications, issued: its signature.
fn issued(app: &TestApp, practice: &Practice) -> String {
    signature(&prescribe(app, practice))
}

/// A prescription of one medication with `extra` fields in its create body: its signature.
fn created(app: &TestApp, p: &Practice, extra: Value) -> String {
    let mut body = json!({
        "hospital": p.hospital,
        "patient": {"uid": p.patient["uid"]},
        "diagnosis": "Hipertensión arterial",
        "medications": [{"presentation": "Losartán 50 mg, 30 tabletas", "instructions": "1 diaria", "qty": 1}],
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let resp = app.post("/api/v2/rx-endpoint/", p.medic.token(), &body);
    assert_eq!(resp.status, 200, "{}", resp.text());
    signature(&resp.json())
}

/// The practice's medic with an RFC, a CURP and an e.firma certificate: its holder.
fn with_efirma(app: &TestApp, setup: &Setup, p: &Practice) -> Holder {
    let holder = setup.fiel.issue(
        "medic",
        RFC,
        CURP,
        "20250101000000Z",
        "20300101000000Z",
        "digitalSignature, nonRepudiation",
    );
    enrol(app, p, RFC, CURP, &holder);
    holder
}

/// Every read of the filled prescriptions, in one order: `(what, status and body)`. The reads
/// that are logged come after those that show the log, so both sides see the same log.
fn answers(app: &TestApp, filled: &Filled) -> Vec<(String, Vec<u8>)> {
    let medic = filled.practice.medic.token();
    let pharmacy = filled.pharmacy.token();
    let mut reads: Vec<(String, Option<&str>)> = vec![
        (
            format!("/api/v2/pharmacies/{}/calls/", filled.pharmacy.id),
            Some(ADMIN_TOKEN),
        ),
        ("/api/v2/rx-endpoint/?limit=50".into(), medic),
        ("/api/v2/messages/".into(), Some(ADMIN_TOKEN)),
    ];
    for (_, sig) in &filled.prescriptions {
        reads.push((format!("/rx/{sig}"), None));
        // The patient's view (a medic's read of it would be logged, and shown in it).
        reads.push((format!("/api/v2/rx/patient-landing/{sig}/"), None));
        for tail in [
            "",
            "document/",
            "fhir/",
            "dispenses/",
            "messages/",
            "constancia/",
            "efirma.p7s",
        ] {
            reads.push((format!("/api/v2/rx-endpoint/{sig}/{tail}"), medic));
        }
        reads.push((format!("/api/v2/rx/pdf/{sig}/"), medic));
        reads.push((format!("/api/v2/verify/{sig}"), None));
        reads.push((format!("/api/v2/pharmacy/rx/{sig}"), pharmacy));
    }
    for digest in &filled.receipts {
        reads.push((format!("/api/v2/pharmacy/receipts/{digest}/"), pharmacy));
        reads.push((
            format!("/api/v2/pharmacy/receipts/{digest}/constancia/"),
            pharmacy,
        ));
        reads.push((format!("/api/v2/verify/receipt/{digest}"), None));
    }
    reads
        .into_iter()
        .map(|(path, token)| {
            let resp = app.get(&path, token);
            let mut answer = format!("{} ", resp.status).into_bytes();
            answer.extend_from_slice(&undated(&path, &resp.body));
            (path, answer)
        })
        .collect()
}

/// A body without what is dated at the read: a FHIR Bundle's `timestamp` and `meta.lastUpdated`
/// (when the Bundle was assembled, FHIR R4 §Bundle).
fn undated(path: &str, body: &[u8]) -> Vec<u8> {
    if !path.ends_with("/fhir/") {
        return body.to_vec();
    }
    let Ok(mut bundle) = serde_json::from_slice::<Value>(body) else {
        return body.to_vec();
    };
    if let Some(bundle) = bundle.as_object_mut() {
        bundle.remove("timestamp");
        bundle.remove("meta");
    }
    serde_json::to_vec(&bundle).unwrap()
}

/// A copy of a stopped host's state dir (the database, its WAL, the key-value store).
fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
