//! Who may call a route, as proofs (realworld's `AuthUser`): each wrapper of the route table
//! (`lib.rs`) checks the request's token before its handler runs (401 without a valid one, 403 with
//! the role's one text) and hands the handler a value only that check makes: [`Admin`] for the API
//! admin, a [`MedicId`], a [`PharmacyId`], a [`ReceiptReader`], a [`Scheduler`], or the domain's `Principal` for a
//! route open to the admin and medics. So an admin's handler cannot be routed under [`public`],
//! and a pharmacy's id cannot stand where a medic's is expected.
//!
//! Over HTTP, [`reader`], [`medic_key`] and [`pharmacy_call`] let the domain check a medic's or a
//! pharmacy's token in its own first request (one round trip to the database fewer) and settle
//! here, as the others do, whatever that request does not answer (`token_first`).
//!
//! Roles are checked here and nowhere else; what a caller owns (a medic's patients, a hospital's
//! members, the pharmacy that sold) is checked in the domain components, which take the principal
//! (docs/architecture.md, "Who checks what").

use common::types::{Error, MedicKey, Principal};

use crate::bindings::auth::{self, Caller, Claim};
use crate::bindings::pharmacies::PharmacyKey;
use crate::bindings::prescriptions::Reader;
use crate::http::{Request, Response};

/// The one text of each role refusal (403), whatever the route.
const PHARMACY_TOKEN_ELSEWHERE: &str = "A pharmacy token is good only on the pharmacy calls (/api/v2/pharmacy/rx/, /api/v2/pharmacy/register/, /api/v1/prescriptions/).";
const PHARMACY_CALL_ONLY: &str = "Only a pharmacy's token may make the pharmacy calls.";
const ADMIN_ONLY: &str = "This endpoint requires the API admin's token.";
const MEDIC_ONLY: &str = "This endpoint requires a medic token.";
const PHARMACY_OR_ADMIN_ONLY: &str =
    "This endpoint requires a pharmacy's or the API admin's token.";
const JOBS_TOKEN_ELSEWHERE: &str =
    "The jobs token is good only on the jobs door (POST /api/v2/jobs/run/).";
const SCHEDULER_ONLY: &str = "This endpoint requires the jobs token or the API admin's token.";

/// What a handler answers.
pub type Outcome = Result<Response, Error>;

/// A route's handler, matched but not yet run.
pub type Handler<'a> = Box<dyn FnOnce() -> Outcome + 'a>;

/// Proof that the API admin's token came with the request.
#[derive(Clone, Copy, Debug)]
pub struct Admin(());

impl Admin {
    /// The admin as the domain components' principal (they restrict nothing for it).
    pub fn principal(self) -> Principal {
        Principal::Admin
    }
}

/// The id of the medic whose token came with the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MedicId(i64);

impl MedicId {
    /// The medic's id, for the domain components' calls.
    pub fn get(self) -> i64 {
        self.0
    }
}

/// The id of the pharmacy whose token came with the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PharmacyId(i64);

impl PharmacyId {
    /// The pharmacy's id, for the domain components' calls.
    pub fn get(self) -> i64 {
        self.0
    }
}

/// Proof that the jobs token (`jobs_token`) or the API admin's came with the request: who may run
/// the background jobs.
#[derive(Clone, Copy, Debug)]
pub struct Scheduler(());

/// Who may read a sealed receipt: the pharmacy that sold (the domain checks it is), or the admin.
#[derive(Clone, Copy, Debug)]
pub enum ReceiptReader {
    Pharmacy(PharmacyId),
    Admin(Admin),
}

impl ReceiptReader {
    /// The pharmacy, or `None` for the admin (the domain's `option<s64>`).
    pub fn pharmacy(self) -> Option<i64> {
        match self {
            ReceiptReader::Pharmacy(id) => Some(id.get()),
            ReceiptReader::Admin(_) => None,
        }
    }
}

/// The API admin only.
pub fn admin<'a>(req: &'a Request, h: impl FnOnce(Admin) -> Outcome + 'a) -> Option<Handler<'a>> {
    Some(Box::new(move || match principal(req)? {
        Principal::Admin => h(Admin(())),
        Principal::Medic(_) => Err(Error::forbidden(ADMIN_ONLY)),
    }))
}

/// A medic only.
pub fn medic<'a>(req: &'a Request, h: impl FnOnce(MedicId) -> Outcome + 'a) -> Option<Handler<'a>> {
    Some(Box::new(move || h(medic_id(req)?)))
}

/// The API admin or a medic; the handler gets the principal (the domain filters by ownership).
pub fn caller<'a>(
    req: &'a Request,
    h: impl FnOnce(Principal) -> Outcome + 'a,
) -> Option<Handler<'a>> {
    Some(Box::new(move || h(principal(req)?)))
}

/// The API admin or a medic reading a prescription by its signature (`prescriptions.reader`).
/// Over HTTP a medic's token is not looked up on its own: the handler gets its hash and the read
/// checks it in its own request (`token_first`).
pub fn reader<'a>(req: &'a Request, h: impl Fn(Reader) -> Outcome + 'a) -> Option<Handler<'a>> {
    Some(Box::new(move || {
        token_first(
            req,
            |hash| h(Reader::MedicToken(hash)),
            || h(Reader::Caller(principal(req)?)),
        )
    }))
}

/// A medic listing or creating its own prescriptions (`medic-key`): as [`medic`], but over HTTP
/// the list, or the create's reads, check the token in their own request (`token_first`).
pub fn medic_key<'a>(
    req: &'a Request,
    h: impl Fn(MedicKey) -> Outcome + 'a,
) -> Option<Handler<'a>> {
    Some(Box::new(move || {
        token_first(
            req,
            |hash| h(MedicKey::Token(hash)),
            || h(MedicKey::Id(medic_id(req)?.get())),
        )
    }))
}

/// Over HTTP, with a token that is not a configured one (`auth.identify`), `by_token` first with
/// the token's hash, for the domain to check in the statements that need its answer: one round
/// trip to the database instead of two (issue 87, docs/scale-out.md). Its answer stands when it is
/// one (`Ok`): the domain answers only when it found the token's holder. Anything else (a token
/// nobody holds, another's prescription, a bad parameter, the database down), and every request on
/// Spin's SQLite: `settled`, which authenticates as every other wrapper does (401, or 403 for a
/// pharmacy's or the jobs token) before its handler runs again, so refusals are unchanged.
fn token_first(
    req: &Request,
    by_token: impl FnOnce(String) -> Outcome,
    settled: impl FnOnce() -> Outcome,
) -> Outcome {
    if common::db::over_http()?
        && let Claim::TokenHash(hash) = auth::identify(req.header("authorization"))?
        && let Ok(answer) = by_token(hash)
    {
        return Ok(answer);
    }
    settled()
}

/// A pharmacy only.
pub fn pharmacy<'a>(
    req: &'a Request,
    h: impl FnOnce(PharmacyId) -> Outcome + 'a,
) -> Option<Handler<'a>> {
    Some(Box::new(move || h(pharmacy_id(req)?)))
}

/// A pharmacy's call that its admission lets through (`pharmacies.admit`): as [`pharmacy`], but
/// over HTTP the admission finds the pharmacy by its token's hash in its own request
/// (`token_first`), one round trip to the database fewer.
pub fn pharmacy_call<'a>(
    req: &'a Request,
    h: impl Fn(PharmacyKey) -> Outcome + 'a,
) -> Option<Handler<'a>> {
    Some(Box::new(move || {
        token_first(
            req,
            |hash| h(PharmacyKey::Token(hash)),
            || h(PharmacyKey::Id(pharmacy_id(req)?.get())),
        )
    }))
}

/// A pharmacy or the API admin.
pub fn pharmacy_or_admin<'a>(
    req: &'a Request,
    h: impl FnOnce(ReceiptReader) -> Outcome + 'a,
) -> Option<Handler<'a>> {
    Some(Box::new(move || match req.authenticate()? {
        Caller::Pharmacy(id) => h(ReceiptReader::Pharmacy(PharmacyId(id))),
        Caller::Admin => h(ReceiptReader::Admin(Admin(()))),
        Caller::Scheduler => Err(Error::forbidden(JOBS_TOKEN_ELSEWHERE)),
        Caller::Medic(_) => Err(Error::forbidden(PHARMACY_OR_ADMIN_ONLY)),
    }))
}

/// The scheduler (the jobs token) or the API admin.
pub fn scheduler<'a>(
    req: &'a Request,
    h: impl FnOnce(Scheduler) -> Outcome + 'a,
) -> Option<Handler<'a>> {
    Some(Box::new(move || match req.authenticate()? {
        Caller::Scheduler | Caller::Admin => h(Scheduler(())),
        Caller::Medic(_) | Caller::Pharmacy(_) => Err(Error::forbidden(SCHEDULER_ONLY)),
    }))
}

/// No token: the contract, verification, and the patient's page (the signature is the capability).
pub fn public<'a>(h: impl FnOnce() -> Outcome + 'a) -> Option<Handler<'a>> {
    Some(Box::new(h))
}

/// No token, but a change made through the patient's page (counter codes, consents, links, the
/// WhatsApp opt-out): refused with 403 when a browser says it comes from another site's page
/// (`Sec-Fetch-Site`, `Origin`), so a page elsewhere cannot make the patient's browser post it
/// (docs/patients.md, "Forms only from the service's own pages").
pub fn page_change<'a>(req: &'a Request, h: impl FnOnce() -> Outcome + 'a) -> Option<Handler<'a>> {
    Some(Box::new(move || {
        let header = |name| req.header(name);
        if !crate::http::from_own_pages(header("sec-fetch-site"), header("origin"), header("host"))
        {
            return Err(Error::Forbidden(
                "A change to a patient's page is accepted only from the service's own pages."
                    .into(),
            ));
        }
        h()
    }))
}

/// The medic calling: as `principal`, and 403 for the API admin.
fn medic_id(req: &Request) -> Result<MedicId, Error> {
    match principal(req)? {
        Principal::Medic(id) => Ok(MedicId(id)),
        Principal::Admin => Err(Error::forbidden(MEDIC_ONLY)),
    }
}

/// The pharmacy calling: 401 without a valid token, 403 for anyone else's.
fn pharmacy_id(req: &Request) -> Result<PharmacyId, Error> {
    match req.authenticate()? {
        Caller::Pharmacy(id) => Ok(PharmacyId(id)),
        Caller::Scheduler => Err(Error::forbidden(JOBS_TOKEN_ELSEWHERE)),
        Caller::Admin | Caller::Medic(_) => Err(Error::forbidden(PHARMACY_CALL_ONLY)),
    }
}

/// The caller of an admin or medic call: 401 without a valid token, 403 for a pharmacy's token
/// (good only on the pharmacy calls).
fn principal(req: &Request) -> Result<Principal, Error> {
    match req.authenticate()? {
        Caller::Admin => Ok(Principal::Admin),
        Caller::Medic(id) => Ok(Principal::Medic(id)),
        Caller::Pharmacy(_) => Err(Error::forbidden(PHARMACY_TOKEN_ELSEWHERE)),
        Caller::Scheduler => Err(Error::forbidden(JOBS_TOKEN_ELSEWHERE)),
    }
}
