//! `receta:catalog/catalog`: hospitals, medics and the memberships that let a medic prescribe.

use anyhow::Result;
use receta_harness::Harness;
use receta_harness::worlds::catalog::CatalogComponent;
use receta_harness::worlds::catalog::exports::receta::catalog::catalog::{
    Hospital, MembershipType, NewHospital, NewMedic, NewMembership,
};
use receta_harness::worlds::catalog::receta::common::codes::PageSize;
use receta_harness::worlds::catalog::receta::common::types::{Error, MedicKey, Principal};

use crate::helpers::{medic, sha256_hex};

type Catalog = Harness<CatalogComponent>;

fn new_hospital(name: &str) -> NewHospital {
    NewHospital {
        name: name.into(),
        patron: name.into(),
        location: "Av. Álvaro Obregón 10, CDMX".into(),
        contact: "55 1234 5678".into(),
        headline: String::new(),
        page_size: PageSize::HalfLetter,
        info: false,
        is_admin: false,
        send_emails: true,
        is_active: true,
        zip_code: "06700".into(),
        location_lat: String::new(),
        location_lon: String::new(),
        google_place_id: String::new(),
        picture: None,
        university_logo: None,
    }
}

fn create_hospital(c: &Catalog, caller: Principal, name: &str) -> Result<Result<Hospital, Error>> {
    let input = new_hospital(name);
    c.call(async |w, s| {
        w.receta_catalog_catalog()
            .call_create_hospital(s, caller, &input)
            .await
    })
}

fn new_medic(email: &str, hospital: Option<i64>) -> NewMedic {
    NewMedic {
        name: "Dr. Beto Sosa".into(),
        email: email.into(),
        password_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into(),
        token_hash: sha256_hex(email),
        date_of_birth: "1975-03-02".into(),
        cedula_prof: "7654321".into(),
        specialty_no: String::new(),
        specialty: "Medicina general".into(),
        alma_mater: "IPN".into(),
        female: false,
        specialty_verified: true,
        is_active: true,
        hospital,
        is_admin_membership: false,
        // Checked by the gateway; the component stores them (migration 0021).
        rfc: Some("HEGT7610034S2".into()),
        curp: None,
    }
}

#[test]
fn a_medic_is_created_with_its_membership_and_an_email_is_taken_once_whatever_its_case()
-> Result<()> {
    // Who may create a medic (the API admin) is the gateway's check (`roles::admin`), tested
    // black-box; the component creates what it is given.
    let c = Catalog::new()?;
    let hospital = create_hospital(&c, Principal::Admin, "Clínica Roma")??.id;
    let input = new_medic("beto@example.com", Some(hospital));
    let create = |input: NewMedic| {
        c.call(async move |w, s| {
            w.receta_catalog_catalog()
                .call_create_medic(s, &input)
                .await
        })
    };
    let created = create(input)??;
    assert_eq!(created.hospital, Some(hospital));
    let mut shouting = new_medic("BETO@example.com", None);
    shouting.token_hash = sha256_hex("another");
    let taken = create(shouting)?;
    assert!(
        matches!(&taken, Err(Error::Invalid(f)) if f[0].field == "email"),
        "{taken:?}"
    );
    Ok(())
}

#[test]
fn a_medic_creating_a_hospital_joins_it_and_others_do_not_see_it() -> Result<()> {
    let c = Catalog::new()?;
    let db = c.db()?;
    let (ana, beto) = (
        medic(&db, "ana@example.com", "t1")?,
        medic(&db, "beto@example.com", "t2")?,
    );
    let hospital = create_hospital(&c, Principal::Medic(ana), "Consultorio Ana")??;
    assert_eq!(hospital.page_size, PageSize::HalfLetter);
    let get = |caller| {
        c.call(async move |w, s| {
            w.receta_catalog_catalog()
                .call_get_hospital(s, caller, hospital.id)
                .await
        })
    };
    assert!(get(Principal::Medic(ana))?.is_ok());
    assert!(get(Principal::Admin)?.is_ok());
    assert!(matches!(
        get(Principal::Medic(beto))?,
        Err(Error::NotFound(_))
    ));
    Ok(())
}

#[test]
fn a_medic_prescribes_only_from_a_hospital_of_a_live_membership() -> Result<()> {
    let c = Catalog::new()?;
    let ana = medic(&c.db()?, "ana@example.com", "t1")?;
    let roma = create_hospital(&c, Principal::Admin, "Clínica Roma")??.id;
    // The hospital half of the prescriber (the medic exists, so the answer is `some`).
    let prescribing = |hospital| -> Result<Result<_, Error>> {
        let prescriber = c.call(async move |w, s| {
            let catalog = w.receta_catalog_catalog();
            let read = catalog
                .call_prescriber_read(&mut *s, &MedicKey::Id(ana), hospital)
                .await?;
            let read = receta_harness::run(s, read).await?;
            catalog.call_prescriber_of(&mut *s, &read).await
        })?;
        Ok(prescriber.and_then(|p| p.expect("the medic exists").hospital))
    };
    assert!(matches!(prescribing(Some(roma))?, Err(Error::Invalid(f)) if f[0].field == "hospital"));
    let membership = NewMembership {
        hospital: roma,
        medic: ana,
        type_membership: MembershipType::Member,
    };
    let joined = c.call(async |w, s| {
        w.receta_catalog_catalog()
            .call_create_membership(s, Principal::Admin, membership)
            .await
    })??;
    assert_eq!(prescribing(Some(roma))??.id, roma);
    c.call(async |w, s| {
        w.receta_catalog_catalog()
            .call_delete_membership(s, Principal::Admin, joined.id)
            .await
    })??;
    assert!(
        prescribing(Some(roma))?.is_err(),
        "a deleted membership no longer counts"
    );
    Ok(())
}

#[test]
fn a_hospital_that_sends_no_emails_says_so() -> Result<()> {
    let c = Catalog::new()?;
    let mut quiet = new_hospital("Clínica Callada");
    quiet.send_emails = false;
    let id = c
        .call(async |w, s| {
            w.receta_catalog_catalog()
                .call_create_hospital(s, Principal::Admin, &quiet)
                .await
        })??
        .id;
    let sends = c.call(async |w, s| {
        let db = receta_harness::lend(s).await?;
        w.receta_catalog_catalog()
            .call_hospital_sends_emails(&mut *s, Some(db), id)
            .await
    })??;
    assert!(!sends);
    let missing = c.call(async |w, s| {
        let db = receta_harness::lend(s).await?;
        w.receta_catalog_catalog()
            .call_hospital_sends_emails(&mut *s, Some(db), id + 100)
            .await
    })?;
    assert!(matches!(missing, Err(Error::NotFound(_))));
    Ok(())
}
