//! `receta:prescriptions/prescriptions`: issuing (the Mexican rules, the formulary, the seal, the
//! outbox rows) and the lifecycle's state machine after issue.
//!
//! One file (over 500 lines): one component's exports tested against one harness and its fixtures, as the other components' files are.

use anyhow::Result;
use receta_harness::Harness;
use receta_harness::worlds::prescriptions::PrescriptionsComponent;
use receta_harness::worlds::prescriptions::exports::receta::prescriptions::prescriptions::{
    DispenseRequest, DispensedItem, Drug, HospitalSnapshot, IssueRequest, MedicSnapshot,
    NewMedication, PatientSnapshot, PharmacyRef, Prescription, Reader, StateChange,
};
use receta_harness::worlds::prescriptions::receta::common::codes::{
    Channel, DrugCategory, Gender, PageSize, RxState, SentState,
};
use receta_harness::worlds::prescriptions::receta::common::types::{Error, PageRequest, Principal};

use crate::helpers::{Parties, parties, sha256_hex};

/// The component, with its parties seeded.
pub struct Rx {
    pub harness: Harness<PrescriptionsComponent>,
    pub parties: Parties,
}

impl Rx {
    pub fn new() -> Result<Self> {
        Self::with_variables(&[])
    }

    pub fn with_variables(variables: &[(&str, &str)]) -> Result<Self> {
        let harness = Harness::with_variables(variables)?;
        let parties = parties(&harness.db()?)?;
        Ok(Self { harness, parties })
    }
}

impl std::ops::Deref for Rx {
    type Target = Harness<PrescriptionsComponent>;
    fn deref(&self) -> &Self::Target {
        &self.harness
    }
}

/// A medication outside the catalog, `qty` boxes.
pub fn medication(presentation: &str, qty: u32) -> NewMedication {
    NewMedication {
        presentation: presentation.into(),
        instructions: "1 cada 8 horas por 5 días".into(),
        qty,
        drug_upc: String::new(),
        category: None,
        fraccion: None,
        antibiotic: None,
        substitution_allowed: true,
    }
}

/// A request from the seeded medic at the seeded hospital for the seeded patient, emails on.
pub fn request(rx: &Rx, medications: Vec<NewMedication>) -> IssueRequest {
    IssueRequest {
        medic: MedicSnapshot {
            id: rx.parties.medic,
            name: "Dra. Ana Ruiz".into(),
            email: "ana@example.com".into(),
            cedula_prof: "1234567".into(),
            specialty: "Pediatría".into(),
            specialty_no: String::new(),
            alma_mater: "UNAM".into(),
        },
        hospital: HospitalSnapshot {
            id: rx.parties.hospital,
            name: "Clínica Roma".into(),
            patron: "Clínica Roma".into(),
            location: "Av. Álvaro Obregón 10, CDMX".into(),
            contact: "55 1234 5678".into(),
            headline: String::new(),
            zip_code: "06700".into(),
            page_size: PageSize::Letter,
            info: false,
            send_emails: true,
            picture: None,
            university_logo: None,
        },
        patient: PatientSnapshot {
            id: rx.parties.patient,
            uid: "p-1".into(),
            name: "Luis Pérez".into(),
            email: "luis@example.com".into(),
            phone: String::new(),
            date_of_birth: "1990-05-01".into(),
            gender: Gender::M,
            curp: String::new(),
            channels: vec![Channel::Email],
        },
        clinic: None,
        diagnosis: "Faringitis".into(),
        extras: String::new(),
        show_diagnosis: true,
        send_rx: true,
        medications,
        valid_days: None,
        fills: 1,
        fill_interval_days: 0,
        antibiotic_repeat_reason: String::new(),
        base_url: "https://receta.example".into(),
        webhooks: Vec::new(),
        efirma: None,
        formulary: None,
    }
}

pub fn issue(rx: &Rx, request: &IssueRequest) -> Result<Result<Prescription, Error>> {
    rx.call(async |c, s| {
        let db = receta_harness::lend(s).await?;
        c.receta_prescriptions_prescriptions()
            .call_issue(&mut *s, Some(db), request)
            .await
    })
}

fn pharmacy(rx: &Rx) -> PharmacyRef {
    PharmacyRef {
        id: rx.parties.pharmacy,
        name: "Farmacia Centro".into(),
        license: "LS-0001".into(),
    }
}

fn dispense(rx: &Rx, signature: &str, items: &[(i64, u32)]) -> Result<Result<RxState, Error>> {
    let request = DispenseRequest {
        pharmacy: pharmacy(rx),
        signature: signature.into(),
        sales_code: "T-1".into(),
        items: items
            .iter()
            .map(|&(medication, qty)| DispensedItem {
                medication,
                qty,
                gtin: None,
                lot: None,
                expiry: None,
                serial: None,
                substituted: false,
                substitution_reason: None,
            })
            .collect(),
        webhooks: Vec::new(),
        claim_secret: None,
    };
    let done = rx.call(async |c, s| {
        let db = receta_harness::lend(s).await?;
        c.receta_prescriptions_prescriptions()
            .call_dispense(&mut *s, Some(db), &request)
            .await
    })?;
    Ok(done.map(|d| d.prescription.prescription.status.rx_status))
}

fn change(signature: &str) -> StateChange {
    StateChange {
        signature: signature.into(),
        reason: "Dosis equivocada".into(),
        webhooks: Vec::new(),
    }
}

fn cancel(rx: &Rx, medic: i64, signature: &str) -> Result<Result<Prescription, Error>> {
    let change = change(signature);
    rx.call(async |c, s| {
        let db = receta_harness::lend(s).await?;
        c.receta_prescriptions_prescriptions()
            .call_cancel(&mut *s, Some(db), medic, &change)
            .await
    })
}

fn reject(rx: &Rx, signature: &str) -> Result<Result<Prescription, Error>> {
    let change = change(signature);
    rx.call(async |c, s| {
        let db = receta_harness::lend(s).await?;
        c.receta_prescriptions_prescriptions()
            .call_reject(&mut *s, Some(db), &pharmacy(rx), &change)
            .await
    })
}

fn is_conflict<T>(result: &Result<T, Error>) -> bool {
    matches!(result, Err(Error::Conflict(_)))
}

#[test]
fn an_issued_prescription_is_signed_by_its_stored_document_and_sealed() -> Result<()> {
    let rx = Rx::new()?;
    let issued = issue(
        &rx,
        &request(&rx, vec![medication("Paracetamol 500 mg", 1)]),
    )?
    .unwrap();
    let document: String = rx.db()?.query_row(
        "SELECT canonical FROM prescription_documents WHERE prescription_id = ?1",
        [issued.id],
        |r| r.get(0),
    )?;
    assert_eq!(issued.signature, sha256_hex(&document));
    assert_eq!(issued.status.rx_status, RxState::Available);
    assert_eq!(issued.status.sent_status, SentState::Pending);
    let verdict = rx.call(async |c, s| {
        c.receta_prescriptions_prescriptions()
            .call_verify(s, &issued.signature, "198.51.100.7")
            .await
    })??;
    assert!(verdict.valid);
    assert_eq!(Some(verdict.kid), issued.seal.map(|seal| seal.kid));
    Ok(())
}

#[test]
fn a_tampered_document_no_longer_verifies() -> Result<()> {
    let rx = Rx::new()?;
    let issued = issue(
        &rx,
        &request(&rx, vec![medication("Paracetamol 500 mg", 1)]),
    )?
    .unwrap();
    rx.db()?.execute(
        "UPDATE prescription_documents SET canonical = replace(canonical, 'Paracetamol', \
         'Oxicodona') WHERE prescription_id = ?1",
        [issued.id],
    )?;
    let verdict = rx.call(async |c, s| {
        c.receta_prescriptions_prescriptions()
            .call_verify(s, &issued.signature, "198.51.100.7")
            .await
    })??;
    assert!(!verdict.valid);
    Ok(())
}

#[test]
fn validity_defaults_to_the_variable_and_is_set_per_prescription() -> Result<()> {
    let rx = Rx::with_variables(&[("rx_valid_days", "90")])?;
    let default = issue(&rx, &request(&rx, vec![medication("A", 1)]))?.unwrap();
    let mut one_day = request(&rx, vec![medication("A", 1)]);
    one_day.valid_days = Some(1);
    let short = issue(&rx, &one_day)?.unwrap();
    let (default, short) = (default.valid_until.unwrap(), short.valid_until.unwrap());
    assert!(
        default > short,
        "90 days ({default}) ends after 1 day ({short})"
    );
    Ok(())
}

#[test]
fn fracciones_i_to_iii_are_never_issued_electronically() -> Result<()> {
    let rx = Rx::new()?;
    for fraccion in ["I", "II", "III"] {
        let mut item = medication("Clonazepam 2 mg", 1);
        item.fraccion = Some(fraccion.into());
        let refused = issue(&rx, &request(&rx, vec![item]))?;
        assert!(
            matches!(&refused, Err(Error::Invalid(fields)) if fields[0].field == "medications"),
            "fracción {fraccion}: {refused:?}"
        );
    }
    let stored: i64 = rx
        .db()?
        .query_row("SELECT count(*) FROM prescriptions", [], |r| r.get(0))?;
    assert_eq!(stored, 0, "nothing stored");
    Ok(())
}

#[test]
fn a_repeated_antibiotic_needs_a_reason_and_over_the_counter_never_repeats() -> Result<()> {
    let rx = Rx::new()?;
    let mut antibiotic = medication("Amoxicilina 500 mg", 1);
    antibiotic.antibiotic = Some(true);
    let mut repeated = request(&rx, vec![antibiotic]);
    repeated.fills = 2;
    assert!(matches!(issue(&rx, &repeated)?, Err(Error::Invalid(_))));
    repeated.antibiotic_repeat_reason = "Tratamiento de 20 días".into();
    assert_eq!(issue(&rx, &repeated)?.unwrap().fills, 2);

    let mut otc = medication("Loratadina 10 mg", 1);
    otc.fraccion = Some("VI".into());
    let mut repeated = request(&rx, vec![otc]);
    repeated.fills = 3;
    assert!(matches!(issue(&rx, &repeated)?, Err(Error::Invalid(f)) if f[0].field == "fills"));
    Ok(())
}

#[test]
fn the_formulary_names_its_products_and_refuses_unknown_barcodes() -> Result<()> {
    let rx = Rx::new()?;
    let drug = Drug {
        upc: "7501000000017".into(),
        name: "Amoxil 500 mg".into(),
        category: DrugCategory::StandardDrug,
        fraccion: Some("IV".into()),
        antibiotic: Some(true),
    };
    let load = rx.call(async |c, s| {
        c.receta_prescriptions_prescriptions()
            .call_load_drugs(s, std::slice::from_ref(&drug))
            .await
    })??;
    assert_eq!((load.created, load.updated), (1, 0));
    let page = PageRequest {
        limit: 5,
        offset: 0,
    };
    let found = rx.call(async |c, s| {
        c.receta_prescriptions_prescriptions()
            .call_search_drugs(s, Some("amoxil"), page)
            .await
    })??;
    assert_eq!(found.results[0].upc, drug.upc);

    let mut item = medication("Amoxicilina", 1);
    item.drug_upc = drug.upc.clone();
    let issued = issue(&rx, &request(&rx, vec![item]))?.unwrap();
    let medication = &issued.medications[0];
    assert_eq!(medication.drug, "Amoxil 500 mg");
    assert!(matches!(medication.category, DrugCategory::StandardDrug));
    assert_eq!(
        medication.antibiotic,
        Some(true),
        "the catalog's class wins"
    );

    let mut unknown = self::medication("Otro", 1);
    unknown.drug_upc = "7509999999999".into();
    assert!(matches!(
        issue(&rx, &request(&rx, vec![unknown]))?,
        Err(Error::Invalid(_))
    ));
    Ok(())
}

#[test]
fn the_email_and_each_planned_webhook_become_outbox_rows_in_the_issuing_transaction() -> Result<()>
{
    let rx = Rx::new()?;
    let issued = issue(&rx, &request(&rx, vec![medication("A", 1)]))?.unwrap();
    let kinds: Vec<String> = rx
        .db()?
        .prepare("SELECT kind FROM outbox WHERE prescription_id = ?1 ORDER BY kind")?
        .query_map([issued.id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    assert_eq!(kinds, ["email"]);

    let mut quiet = request(&rx, vec![medication("A", 1)]);
    quiet.hospital.send_emails = false;
    let quiet = issue(&rx, &quiet)?.unwrap();
    assert_eq!(quiet.status.sent_status, SentState::NotSent);
    let rows: i64 = rx.db()?.query_row(
        "SELECT count(*) FROM outbox WHERE prescription_id = ?1",
        [quiet.id],
        |r| r.get(0),
    )?;
    assert_eq!(rows, 0, "a hospital that sends no emails queues none");
    Ok(())
}

#[test]
fn a_partial_sale_then_the_rest_dispenses_it_and_nothing_more_sells() -> Result<()> {
    let rx = Rx::new()?;
    let issued = issue(
        &rx,
        &request(&rx, vec![medication("A", 2), medication("B", 1)]),
    )?
    .unwrap();
    let (a, b) = (issued.medications[0].id, issued.medications[1].id);
    assert_eq!(
        dispense(&rx, &issued.signature, &[(a, 1)])?.unwrap(),
        RxState::PartiallyDispensed
    );
    let past = dispense(&rx, &issued.signature, &[(a, 2)])?;
    assert!(matches!(past, Err(Error::Invalid(_))), "past qty: {past:?}");
    assert_eq!(
        dispense(&rx, &issued.signature, &[(a, 1), (b, 1)])?.unwrap(),
        RxState::Dispensed
    );
    assert!(is_conflict(&dispense(&rx, &issued.signature, &[(b, 1)])?));
    assert!(
        is_conflict(&cancel(&rx, rx.parties.medic, &issued.signature)?),
        "a dispensed one stays"
    );
    assert!(is_conflict(&reject(&rx, &issued.signature)?));
    Ok(())
}

#[test]
fn cancelled_and_rejected_are_final() -> Result<()> {
    let rx = Rx::new()?;
    let first = issue(&rx, &request(&rx, vec![medication("A", 1)]))?.unwrap();
    let cancelled = cancel(&rx, rx.parties.medic, &first.signature)?.unwrap();
    assert_eq!(cancelled.status.rx_status, RxState::Cancelled);
    let item = first.medications[0].id;
    assert!(is_conflict(&dispense(&rx, &first.signature, &[(item, 1)])?));
    assert!(is_conflict(&reject(&rx, &first.signature)?));
    assert!(is_conflict(&cancel(
        &rx,
        rx.parties.medic,
        &first.signature
    )?));

    let second = issue(&rx, &request(&rx, vec![medication("A", 1)]))?.unwrap();
    let rejected = reject(&rx, &second.signature)?.unwrap();
    assert!(rejected.rejected);
    assert_eq!(rejected.status.rx_status, RxState::Rejected);
    assert_eq!(rejected.reason_of_rejected, "Dosis equivocada");
    let item = second.medications[0].id;
    assert!(is_conflict(&dispense(
        &rx,
        &second.signature,
        &[(item, 1)]
    )?));
    assert!(is_conflict(&cancel(
        &rx,
        rx.parties.medic,
        &second.signature
    )?));
    Ok(())
}

#[test]
fn only_the_issuing_medic_cancels() -> Result<()> {
    let rx = Rx::new()?;
    let issued = issue(&rx, &request(&rx, vec![medication("A", 1)]))?.unwrap();
    assert!(matches!(
        cancel(&rx, rx.parties.medic + 1, &issued.signature)?,
        Err(Error::NotFound(_))
    ));
    assert_eq!(
        cancel(&rx, rx.parties.medic, &issued.signature)?
            .unwrap()
            .status
            .rx_status,
        RxState::Cancelled
    );
    Ok(())
}

#[test]
fn a_refill_waits_for_its_interval() -> Result<()> {
    let rx = Rx::new()?;
    let mut refills = request(&rx, vec![medication("A", 1)]);
    refills.fills = 2;
    refills.fill_interval_days = 20;
    let issued = issue(&rx, &refills)?.unwrap();
    let a = issued.medications[0].id;
    assert_eq!(
        dispense(&rx, &issued.signature, &[(a, 1)])?.unwrap(),
        RxState::PartiallyDispensed
    );
    let early = dispense(&rx, &issued.signature, &[(a, 1)])?;
    assert!(
        matches!(&early, Err(Error::Conflict(m)) if m.contains("20")),
        "{early:?}"
    );
    // Twenty-one days later (the sale's time moved back), the second fill sells.
    rx.db()?.execute(
        "UPDATE prescription_events SET created_at = '2020-01-01T00:00:00Z'",
        [],
    )?;
    assert_eq!(
        dispense(&rx, &issued.signature, &[(a, 1)])?.unwrap(),
        RxState::Dispensed
    );
    Ok(())
}

#[test]
fn an_expired_prescription_reads_expired_and_does_not_sell() -> Result<()> {
    let rx = Rx::new()?;
    let issued = issue(&rx, &request(&rx, vec![medication("A", 1)]))?.unwrap();
    rx.db()?.execute(
        "UPDATE prescriptions SET valid_until = '2020-01-31', \
         expires_at = '2020-02-01T06:00:00Z' WHERE id = ?1",
        [issued.id],
    )?;
    let item = issued.medications[0].id;
    let refused = dispense(&rx, &issued.signature, &[(item, 1)])?;
    assert!(
        matches!(&refused, Err(Error::Conflict(m)) if m.contains("expired")),
        "{refused:?}"
    );
    let read = rx.call(async |c, s| {
        let db = receta_harness::lend(s).await?;
        c.receta_prescriptions_prescriptions()
            .call_get_for_pharmacy(&mut *s, Some(db), &issued.signature)
            .await
    })??;
    assert_eq!(read.prescription.status.rx_status, RxState::Expired);
    Ok(())
}

/// A medic's or the admin's reads by signature queue one access-log entry per actor and minute in
/// the key-value store; `drain-reads` writes the queue into `access_log` once, however often it runs.
#[test]
fn reads_are_queued_once_per_actor_and_minute_and_drained_once() -> Result<()> {
    let rx = Rx::new()?;
    let issued = issue(
        &rx,
        &request(&rx, vec![medication("Paracetamol 500 mg", 1)]),
    )?
    .unwrap();
    let read = |who: &Principal| {
        rx.call(async |c, s| {
            let db = receta_harness::lend(s).await?;
            c.receta_prescriptions_prescriptions()
                .call_get_by_signature(&mut *s, Some(db), &Reader::Caller(*who), &issued.signature)
                .await
        })
    };
    for _ in 0..3 {
        assert_eq!(read(&Principal::Medic(rx.parties.medic))??.id, issued.id);
    }
    read(&Principal::Admin)??;
    let logged = |actor: &str| -> Result<i64> {
        Ok(rx.db()?.query_row(
            "SELECT COUNT(*) FROM access_log WHERE action = 'read' AND actor = ?1",
            [actor],
            |r| r.get(0),
        )?)
    };
    assert_eq!(logged("medic")?, 0, "queued, not committed");
    let drain = || {
        rx.call(async |c, s| {
            c.receta_prescriptions_prescriptions()
                .call_drain_reads(s)
                .await
        })
    };
    // Two entries (the medic's, the admin's), or three if a minute started between the reads.
    let drained = drain()??;
    assert!((2..=3).contains(&drained), "{drained}");
    assert_eq!(logged("medic")? + logged("admin")?, i64::from(drained));
    assert_eq!(logged("admin")?, 1);
    assert_eq!(drain()??, 0, "the queue is empty once drained");
    Ok(())
}
