//! `receta:patients/patients`: a patient belongs to the medic who created it.

use anyhow::Result;
use receta_harness::Harness;
use receta_harness::worlds::patients::PatientsComponent;
use receta_harness::worlds::patients::exports::receta::patients::patients::{
    NewPatient, Patient, PatientKey, PatientPatch,
};
use receta_harness::worlds::patients::receta::common::codes::{Channel, Gender};
use receta_harness::worlds::patients::receta::common::types::{Error, PageRequest};

use crate::helpers::medic;

type Patients = Harness<PatientsComponent>;

fn new_patient(name: &str) -> NewPatient {
    NewPatient {
        name: name.into(),
        email: "luis@example.com".into(),
        date_of_birth: "1990-05-01".into(),
        external_patient_file: String::new(),
        gender: Gender::M,
        curp: String::new(),
        phone: String::new(),
        address: String::new(),
        state: String::new(),
        zip_code: String::new(),
        location: String::new(),
        channels: None,
        whatsapp_opt_in: false,
    }
}

fn create(p: &Patients, medic: i64, name: &str) -> Result<Patient> {
    let input = new_patient(name);
    Ok(p.call(async |c, s| {
        let db = receta_harness::lend(s).await?;
        c.receta_patients_patients()
            .call_create_patient(&mut *s, Some(db), medic, &input)
            .await
    })??)
}

fn get(p: &Patients, medic: i64, key: &PatientKey) -> Result<Result<Patient, Error>> {
    p.call(async |c, s| {
        let db = receta_harness::lend(s).await?;
        c.receta_patients_patients()
            .call_get_owned(&mut *s, Some(db), medic, key)
            .await
    })
}

#[test]
fn a_patient_gets_a_uid_that_is_never_all_digits() -> Result<()> {
    let p = Patients::new()?;
    let ana = medic(&p.db()?, "ana@example.com", "t1")?;
    for n in 0..20 {
        let patient = create(&p, ana, &format!("Paciente {n}"))?;
        assert_eq!(patient.uid.len(), 32);
        assert!(
            patient
                .uid
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert!(
            !patient.uid.chars().all(|c| c.is_ascii_digit()),
            "{}",
            patient.uid
        );
    }
    Ok(())
}

#[test]
fn another_medic_neither_sees_nor_changes_the_patient() -> Result<()> {
    let p = Patients::new()?;
    let db = p.db()?;
    let (ana, beto) = (
        medic(&db, "ana@example.com", "t1")?,
        medic(&db, "beto@example.com", "t2")?,
    );
    let patient = create(&p, ana, "Luis Pérez")?;
    for key in [
        PatientKey::Id(patient.id),
        PatientKey::Uid(patient.uid.clone()),
    ] {
        assert_eq!(get(&p, ana, &key)?.unwrap().id, patient.id);
        assert!(matches!(get(&p, beto, &key)?, Err(Error::NotFound(_))));
    }
    let patch = PatientPatch {
        name: Some("Otro".into()),
        email: None,
        date_of_birth: None,
        external_patient_file: None,
        gender: None,
        curp: None,
        phone: None,
        address: None,
        state: None,
        zip_code: None,
        location: None,
        channels: None,
        whatsapp_opt_in: None,
    };
    let key = PatientKey::Id(patient.id);
    let changed = p.call(async |c, s| {
        let db = receta_harness::lend(s).await?;
        c.receta_patients_patients()
            .call_update_patient(&mut *s, Some(db), beto, &key, &patch)
            .await
    })?;
    assert!(matches!(changed, Err(Error::NotFound(_))));
    let renamed = p.call(async |c, s| {
        let db = receta_harness::lend(s).await?;
        c.receta_patients_patients()
            .call_update_patient(&mut *s, Some(db), ana, &key, &patch)
            .await
    })??;
    assert_eq!(
        (renamed.name.as_str(), renamed.email.as_str()),
        ("Otro", "luis@example.com")
    );
    assert_eq!(
        renamed.channels,
        vec![Channel::Email],
        "the default: the email on file"
    );

    // A phone channel needs a phone that parses; the phone is stored parsed.
    let sms = PatientPatch {
        channels: Some(vec![Channel::Sms]),
        ..patch.clone()
    };
    let refused = p.call(async |c, s| {
        let db = receta_harness::lend(s).await?;
        c.receta_patients_patients()
            .call_update_patient(&mut *s, Some(db), ana, &key, &sms)
            .await
    })?;
    assert!(matches!(refused, Err(Error::Invalid(_))), "{refused:?}");
    let with_phone = PatientPatch {
        phone: Some("33 1234 5678".into()),
        whatsapp_opt_in: Some(true),
        ..sms
    };
    let reachable = p.call(async |c, s| {
        let db = receta_harness::lend(s).await?;
        c.receta_patients_patients()
            .call_update_patient(&mut *s, Some(db), ana, &key, &with_phone)
            .await
    })??;
    assert_eq!(reachable.phone_e164.as_deref(), Some("+523312345678"));
    assert_eq!(reachable.channels, vec![Channel::Sms]);
    assert_eq!(
        reachable.whatsapp_opt_in.map(|o| o.by),
        Some(format!("medic:{ana}"))
    );
    Ok(())
}

#[test]
fn a_medic_lists_and_searches_only_their_own_patients() -> Result<()> {
    let p = Patients::new()?;
    let db = p.db()?;
    let (ana, beto) = (
        medic(&db, "ana@example.com", "t1")?,
        medic(&db, "beto@example.com", "t2")?,
    );
    create(&p, ana, "Luis Pérez")?;
    create(&p, ana, "María López")?;
    create(&p, beto, "Luisa Gómez")?;
    let page = PageRequest {
        limit: 20,
        offset: 0,
    };
    let list = |medic: i64, search: Option<&'static str>| {
        p.call(async move |c, s| {
            let db = receta_harness::lend(s).await?;
            c.receta_patients_patients()
                .call_list_patients(&mut *s, Some(db), medic, search, page)
                .await
        })
    };
    assert_eq!(list(ana, None)??.len(), 2);
    let found = list(ana, Some("Pérez"))??;
    assert_eq!(
        found.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["Luis Pérez"]
    );
    assert_eq!(list(beto, None)??.len(), 1);
    Ok(())
}
