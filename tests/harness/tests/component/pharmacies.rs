//! `receta:pharmacies/pharmacies`: the register, the throttle on unknown signatures, the call log.

use anyhow::Result;
use receta_harness::Harness;
use receta_harness::worlds::pharmacies::PharmaciesComponent;
use receta_harness::worlds::pharmacies::exports::receta::pharmacies::pharmacies::{
    Call, CallAction, NewPharmacy, Pharmacy, PharmacyKey, PharmacyPatch,
};
use receta_harness::worlds::pharmacies::receta::common::types::{Error, PageRequest};

use crate::helpers::sha256_hex;

type Pharmacies = Harness<PharmaciesComponent>;

fn register(p: &Pharmacies) -> Result<i64> {
    let input = NewPharmacy {
        name: "Farmacia Centro".into(),
        legal_name: "Farmacia Centro SA de CV".into(),
        license: "LS-0001".into(),
        address: "Madero 1, CDMX".into(),
        zip_code: "06000".into(),
        state: "CDMX".into(),
        contact: "55 0000 0000".into(),
        token_hash: sha256_hex("pharmacy-token"),
    };
    let created = p.call(async |c, s| {
        c.receta_pharmacies_pharmacies()
            .call_create_pharmacy(s, &input)
            .await
    })??;
    assert!(created.is_active);
    Ok(created.id)
}

fn call(pharmacy: i64, signature: &str, action: CallAction, status: u16) -> Call {
    Call {
        pharmacy,
        signature: signature.into(),
        action,
        status,
        created_at: String::new(),
    }
}

fn record(p: &Pharmacies, call: &Call) -> Result<()> {
    Ok(p.call(async |c, s| {
        c.receta_pharmacies_pharmacies()
            .call_record_call(s, call, false)
            .await
    })??)
}

fn admit(p: &Pharmacies, id: i64, limit: u32) -> Result<Result<Pharmacy, Error>> {
    admit_by(p, PharmacyKey::Id(id), limit)
}

fn admit_by(p: &Pharmacies, key: PharmacyKey, limit: u32) -> Result<Result<Pharmacy, Error>> {
    p.call(async move |c, s| {
        let db = receta_harness::lend(s).await?;
        c.receta_pharmacies_pharmacies()
            .call_admit(&mut *s, Some(db), &key, limit)
            .await
    })
}

#[test]
fn a_deactivated_pharmacy_is_not_admitted() -> Result<()> {
    let p = Pharmacies::new()?;
    let id = register(&p)?;
    let admit = || admit(&p, id, 10);
    assert_eq!(admit()??.id, id);
    // By its token's hash too (over HTTP, the gateway's first request); nobody's token is not.
    let by_token = |token: &str| admit_by(&p, PharmacyKey::Token(sha256_hex(token)), 10);
    assert_eq!(by_token("pharmacy-token")??.id, id);
    assert!(matches!(by_token("nobody's")?, Err(Error::Unauthorized)));
    let patch = PharmacyPatch {
        name: None,
        legal_name: None,
        license: None,
        address: None,
        zip_code: None,
        state: None,
        contact: None,
        is_active: Some(false),
    };
    p.call(async |c, s| {
        c.receta_pharmacies_pharmacies()
            .call_update_pharmacy(s, id, &patch)
            .await
    })??;
    assert!(admit()?.is_err());
    assert!(matches!(
        by_token("pharmacy-token")?,
        Err(Error::Unauthorized)
    ));
    Ok(())
}

#[test]
fn too_many_unknown_signatures_in_a_minute_throttle_the_pharmacy() -> Result<()> {
    let p = Pharmacies::new()?;
    let id = register(&p)?;
    for n in 0..3 {
        record(
            &p,
            &call(id, &format!("unknown-{n}"), CallAction::Lookup, 404),
        )?;
    }
    let admit = |limit| admit(&p, id, limit);
    assert!(admit(3)?.is_ok(), "three 404s are within a limit of three");
    assert!(matches!(admit(2)?, Err(Error::TooManyRequests(secs)) if (1..=60).contains(&secs)));
    Ok(())
}

#[test]
fn queued_calls_reach_the_log_when_drained_and_the_log_is_newest_first() -> Result<()> {
    let p = Pharmacies::new()?;
    let id = register(&p)?;
    record(&p, &call(id, "first", CallAction::Lookup, 200))?;
    record(&p, &call(id, "second", CallAction::Dispense, 409))?;
    let drained =
        p.call(async |c, s| c.receta_pharmacies_pharmacies().call_drain_calls(s).await)??;
    assert_eq!(
        drained, 2,
        "every call but a 404 is queued, a dispense's too"
    );
    let page = PageRequest {
        limit: 10,
        offset: 0,
    };
    let log = p.call(async |c, s| {
        c.receta_pharmacies_pharmacies()
            .call_list_calls(s, id, page)
            .await
    })??;
    assert_eq!(log.count, 2);
    let signatures: Vec<&str> = log.results.iter().map(|c| c.signature.as_str()).collect();
    assert!(signatures.contains(&"first") && signatures.contains(&"second"));
    Ok(())
}
