//! `receta:auth/auth`: who a token belongs to.

use anyhow::Result;
use receta_harness::Harness;
use receta_harness::worlds::auth::AuthComponent;
use receta_harness::worlds::auth::exports::receta::auth::auth::Caller;
use receta_harness::worlds::auth::receta::common::types::Error;

use crate::helpers::{medic, sha256_hex};

type Auth = Harness<AuthComponent>;

fn authenticate(auth: &Auth, header: Option<&str>) -> Result<Result<Caller, Error>> {
    let header = header.map(str::to_string);
    auth.call(async |c, s| {
        let db = receta_harness::lend(s).await?;
        c.receta_auth_auth()
            .call_authenticate(&mut *s, Some(db), header.as_deref())
            .await
    })
}

#[test]
fn the_admin_token_is_the_admin() -> Result<()> {
    let auth = Auth::with_variables(&[("admin_token", "s3cret-admin")])?;
    assert!(matches!(
        authenticate(&auth, Some("Token s3cret-admin"))?,
        Ok(Caller::Admin)
    ));
    assert!(matches!(
        authenticate(&auth, Some("Token s3cret-admiN"))?,
        Err(Error::Unauthorized)
    ));
    Ok(())
}

#[test]
fn an_empty_admin_token_admits_nobody() -> Result<()> {
    let auth = Auth::new()?;
    assert!(matches!(
        authenticate(&auth, Some("Token "))?,
        Err(Error::Unauthorized)
    ));
    assert!(matches!(
        authenticate(&auth, None)?,
        Err(Error::Unauthorized)
    ));
    Ok(())
}

#[test]
fn a_medic_token_is_found_by_its_hash_and_only_while_active() -> Result<()> {
    let auth = Auth::new()?;
    let id = medic(&auth.db()?, "ana@example.com", "medic-token-1")?;
    assert!(
        matches!(authenticate(&auth, Some("Token medic-token-1"))?, Ok(Caller::Medic(m)) if m == id)
    );
    // Another scheme, or the hash itself, is not the token.
    assert!(matches!(
        authenticate(&auth, Some("Bearer medic-token-1"))?,
        Err(Error::Unauthorized)
    ));
    let hash = sha256_hex("medic-token-1");
    assert!(matches!(
        authenticate(&auth, Some(&format!("Token {hash}")))?,
        Err(Error::Unauthorized)
    ));
    auth.db()?
        .execute("UPDATE medics SET is_active = 0 WHERE id = ?1", [id])?;
    assert!(matches!(
        authenticate(&auth, Some("Token medic-token-1"))?,
        Err(Error::Unauthorized)
    ));
    Ok(())
}

#[test]
fn a_minted_token_is_random_and_stored_only_as_its_hash() -> Result<()> {
    let auth = Auth::new()?;
    let a = auth.call(async |c, s| c.receta_auth_auth().call_mint_token(s).await)?;
    let b = auth.call(async |c, s| c.receta_auth_auth().call_mint_token(s).await)?;
    assert_ne!(a.token, b.token);
    assert!(a.token.len() >= 32, "160 bits at least: {}", a.token);
    assert_eq!(a.token_hash, sha256_hex(&a.token));
    Ok(())
}

#[test]
fn passwords_are_hashed_with_argon2id_and_a_salt() -> Result<()> {
    let auth = Auth::new()?;
    let hash = |p: &'static str| {
        auth.call(async move |c, s| c.receta_auth_auth().call_hash_password(s, p).await)
    };
    let (a, b) = (hash("correct horse")?, hash("correct horse")?);
    assert!(a.starts_with("$argon2id$v=19$"), "{a}");
    assert_ne!(a, b, "a random salt per hash");
    Ok(())
}
