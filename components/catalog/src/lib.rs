//! The catalog component: wires `receta:catalog/catalog` and `receta:catalog/campaigns` (the pharmacy
//! partners shown on the patient landing) to the modules that implement them.

mod access;
mod campaigns;
mod efirma;
mod hospitals;
mod locations;
mod medics;
mod memberships;
mod profiles;

use common::db::lent;
use common::types::{Error, MedicKey, PageRequest, Principal};
use spin_sdk::sqlite3::{Connection, QueryResult, Value};

mod bindings;

use bindings::exports::receta::catalog::campaigns::{
    Campaign, CampaignPage, CampaignPatch, Guest as CampaignsGuest, NewCampaign,
};
use bindings::exports::receta::catalog::catalog::{
    Efirma, EfirmaSignature, Guest, Hospital, HospitalPage, HospitalPatch, ImageKind,
    LocationEntry, Medic, MedicPatch, MedicProfile, MedicSummaryPage, MedicView, MedicViewPage,
    Membership, MembershipPage, MembershipPatch, NewHospital, NewMedic, NewMembership, Prescriber,
};

struct Catalog;

impl Guest for Catalog {
    fn create_hospital(caller: Principal, input: NewHospital) -> Result<Hospital, Error> {
        hospitals::create(caller, input)
    }

    fn list_hospitals(caller: Principal, page: PageRequest) -> Result<HospitalPage, Error> {
        hospitals::list(caller, page)
    }

    fn get_hospital(caller: Principal, id: i64) -> Result<Hospital, Error> {
        hospitals::get(caller, id)
    }

    fn get_hospital_image(db: Option<&Connection>, id: i64, kind: ImageKind) -> Option<Vec<u8>> {
        lent(db, || hospitals::image(id, kind))
    }

    fn hospital_sends_emails(db: Option<&Connection>, id: i64) -> Result<bool, Error> {
        lent(db, || hospitals::sends_emails(id))
    }

    fn authorize_hospital_admin(caller: Principal, id: i64) -> Result<(), Error> {
        hospitals::authorize_admin(caller, id)
    }

    fn update_hospital(
        caller: Principal,
        id: i64,
        patch: HospitalPatch,
    ) -> Result<Hospital, Error> {
        hospitals::update(caller, id, patch)
    }

    fn prescriber_read(medic: MedicKey, hospital_id: Option<i64>) -> (String, Vec<Value>) {
        hospitals::prescriber_read(&medic, hospital_id)
    }

    fn prescriber_of(read: QueryResult) -> Result<Option<Prescriber>, Error> {
        hospitals::prescriber_of(&read)
    }

    fn authorize_manager(caller: Principal) -> Result<(), Error> {
        access::require_any_manager(&common::db::Db::open()?, &caller)
    }

    fn create_medic(input: NewMedic) -> Result<Medic, Error> {
        medics::create(input)
    }

    fn search_medics(
        caller: Principal,
        query: String,
        page: PageRequest,
    ) -> Result<MedicSummaryPage, Error> {
        medics::search(caller, query, page)
    }

    fn get_medic(db: Option<&Connection>, id: i64) -> Option<MedicProfile> {
        lent(db, || medics::get(id))
    }

    fn medic_identifiers(id: i64) -> (Option<String>, Option<String>) {
        profiles::identifiers(id)
    }

    fn list_medics(caller: Principal, page: PageRequest) -> Result<MedicViewPage, Error> {
        profiles::list(caller, page)
    }

    fn view_medic(caller: Principal, id: i64) -> Result<MedicView, Error> {
        profiles::get(caller, id)
    }

    fn update_medic(caller: Principal, id: i64, patch: MedicPatch) -> Result<MedicView, Error> {
        profiles::update(caller, id, patch)
    }

    fn authorize_efirma(caller: Principal, medic: i64) -> Result<(), Error> {
        efirma::authorize(caller, medic)
    }

    fn set_efirma(caller: Principal, medic: i64, certificate: Vec<u8>) -> Result<Efirma, Error> {
        efirma::authorize(caller, medic)?;
        efirma::set(medic, &certificate)
    }

    fn get_efirma(caller: Principal, medic: i64) -> Result<Efirma, Error> {
        efirma::authorize(caller, medic)?;
        efirma::get(medic)
    }

    fn delete_efirma(caller: Principal, medic: i64) -> Result<(), Error> {
        efirma::authorize(caller, medic)?;
        efirma::delete(medic)
    }

    fn check_efirma_signature(
        medic: i64,
        cms: Vec<u8>,
        content: Vec<u8>,
        earliest: String,
    ) -> Result<EfirmaSignature, Error> {
        efirma::check_signature(medic, &cms, &content, &earliest)
    }

    fn get_membership(caller: Principal, id: i64) -> Result<Membership, Error> {
        memberships::get(caller, id)
    }

    fn create_membership(caller: Principal, input: NewMembership) -> Result<Membership, Error> {
        memberships::create(caller, input)
    }

    fn list_memberships(caller: Principal, page: PageRequest) -> Result<MembershipPage, Error> {
        memberships::list(caller, page)
    }

    fn hospital_memberships(caller: Principal, hospital_id: i64) -> Result<Vec<Membership>, Error> {
        memberships::of_hospital(caller, hospital_id)
    }

    fn authorize_membership(caller: Principal, id: i64) -> Result<(), Error> {
        memberships::authorize(caller, id)
    }

    fn update_membership(
        caller: Principal,
        id: i64,
        patch: MembershipPatch,
    ) -> Result<Membership, Error> {
        memberships::update(caller, id, patch)
    }

    fn delete_membership(caller: Principal, id: i64) -> Result<(), Error> {
        memberships::delete(caller, id)
    }

    fn list_locations(medic: i64) -> Result<Vec<LocationEntry>, Error> {
        locations::list(medic)
    }

    fn set_active_hospital(medic: i64, hospital_id: i64) -> Result<(), Error> {
        locations::set_active(medic, hospital_id)
    }
}

impl CampaignsGuest for Catalog {
    fn create_campaign(input: NewCampaign) -> Result<Campaign, Error> {
        campaigns::create(input)
    }

    fn list_campaigns(page: PageRequest) -> Result<CampaignPage, Error> {
        campaigns::list(page)
    }

    fn get_campaign(id: i64) -> Result<Campaign, Error> {
        campaigns::get(id)
    }

    fn update_campaign(id: i64, patch: CampaignPatch) -> Result<Campaign, Error> {
        campaigns::update(id, patch)
    }

    fn delete_campaign(id: i64) -> Result<(), Error> {
        campaigns::delete(id)
    }

    fn active_campaigns(db: Option<&Connection>) -> Result<Vec<Campaign>, Error> {
        lent(db, campaigns::active)
    }
}

// Exported only when built as a component: a native build (unit tests, clippy) has no component ABI.
#[cfg(target_arch = "wasm32")]
bindings::export!(Catalog with_types_in bindings);
