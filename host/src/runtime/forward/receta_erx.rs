//! The app's own interfaces (`receta:auth/auth`, `receta:catalog/…`, …, generated from `wit/` at
//! build time), so the gateway's calls into its dependencies are forwarded typed
//! (`super::calls::typed`). A function missing here (a new one in `wit/` not yet listed) still
//! works, forwarded dynamically; the start-up log counts both ways, and a host test checks the app
//! links every call typed.

use super::calls::{Forwarder, typed};

wasmtime::component::bindgen!({
    path: "../wit",
    world: "receta:erx/gateway",
});

use receta::auth::auth;
use receta::catalog::{campaigns, catalog};
use receta::notifications::notifications;
use receta::patients::patients;
use receta::pharmacies::pharmacies;
use receta::prescriptions::prescriptions;

/// `interface` (as the component imports it) and `func`'s signature, as a typed forwarder.
macro_rules! signatures {
    ($( $interface:literal { $( $func:literal : ($($param:ty),*) -> $result:ty; )* } )*) => {
        /// The typed forwarder of `interface#func`, if the host was built with its signature.
        pub(super) fn forwarder(interface: &str, func: &str) -> Option<Forwarder> {
            match (interface, func) {
                $($( ($interface, $func) => Some(typed::<($($param,)*), ($result,)>), )*)*
                _ => None,
            }
        }
    };
}

signatures! {
    "receta:auth/auth@0.1.0" {
        "authenticate": (Option<String>) -> Result<auth::Caller, auth::Error>;
        "mint-token": () -> auth::MintedToken;
        "hash-password": (String) -> String;
    }
    "receta:catalog/catalog@0.1.0" {
        "create-hospital": (catalog::Principal, catalog::NewHospital) -> Result<catalog::Hospital, catalog::Error>;
        "list-hospitals": (catalog::Principal, catalog::PageRequest) -> Result<catalog::HospitalPage, catalog::Error>;
        "get-hospital": (catalog::Principal, i64) -> Result<catalog::Hospital, catalog::Error>;
        "get-hospital-image": (i64, catalog::ImageKind) -> Option<Vec<u8>>;
        "hospital-sends-emails": (i64) -> Result<bool, catalog::Error>;
        "authorize-hospital-admin": (catalog::Principal, i64) -> Result<(), catalog::Error>;
        "update-hospital": (catalog::Principal, i64, catalog::HospitalPatch) -> Result<catalog::Hospital, catalog::Error>;
        "prescribing-hospital": (i64, Option<i64>) -> Result<catalog::Hospital, catalog::Error>;
        "authorize-manager": (catalog::Principal) -> Result<(), catalog::Error>;
        "create-medic": (catalog::Principal, catalog::NewMedic) -> Result<catalog::Medic, catalog::Error>;
        "search-medics": (catalog::Principal, String, catalog::PageRequest) -> Result<catalog::MedicSummaryPage, catalog::Error>;
        "get-medic": (i64) -> Option<catalog::MedicProfile>;
        "list-medics": (catalog::Principal, catalog::PageRequest) -> Result<catalog::MedicViewPage, catalog::Error>;
        "view-medic": (catalog::Principal, i64) -> Result<catalog::MedicView, catalog::Error>;
        "update-medic": (catalog::Principal, i64, catalog::MedicPatch) -> Result<catalog::MedicView, catalog::Error>;
        "create-membership": (catalog::Principal, catalog::NewMembership) -> Result<catalog::Membership, catalog::Error>;
        "list-memberships": (catalog::Principal, catalog::PageRequest) -> Result<catalog::MembershipPage, catalog::Error>;
        "get-membership": (catalog::Principal, i64) -> Result<catalog::Membership, catalog::Error>;
        "hospital-memberships": (catalog::Principal, i64) -> Result<Vec<catalog::Membership>, catalog::Error>;
        "authorize-membership": (catalog::Principal, i64) -> Result<(), catalog::Error>;
        "update-membership": (catalog::Principal, i64, catalog::MembershipPatch) -> Result<catalog::Membership, catalog::Error>;
        "delete-membership": (catalog::Principal, i64) -> Result<(), catalog::Error>;
        "list-locations": (catalog::Principal) -> Result<Vec<catalog::LocationEntry>, catalog::Error>;
        "set-active-hospital": (catalog::Principal, i64) -> Result<(), catalog::Error>;
    }
    "receta:catalog/campaigns@0.1.0" {
        "create-campaign": (campaigns::Principal, campaigns::NewCampaign) -> Result<campaigns::Campaign, campaigns::Error>;
        "list-campaigns": (campaigns::Principal, campaigns::PageRequest) -> Result<campaigns::CampaignPage, campaigns::Error>;
        "get-campaign": (campaigns::Principal, i64) -> Result<campaigns::Campaign, campaigns::Error>;
        "update-campaign": (campaigns::Principal, i64, campaigns::CampaignPatch) -> Result<campaigns::Campaign, campaigns::Error>;
        "delete-campaign": (campaigns::Principal, i64) -> Result<(), campaigns::Error>;
        "active-campaigns": () -> Result<Vec<campaigns::Campaign>, campaigns::Error>;
    }
    "receta:patients/patients@0.1.0" {
        "create-patient": (i64, patients::NewPatient) -> Result<patients::Patient, patients::Error>;
        "list-patients": (i64, Option<String>, patients::PageRequest) -> Result<Vec<patients::Patient>, patients::Error>;
        "get-owned": (i64, patients::PatientKey) -> Result<patients::Patient, patients::Error>;
        "update-patient": (i64, patients::PatientKey, patients::PatientPatch) -> Result<patients::Patient, patients::Error>;
    }
    "receta:prescriptions/prescriptions@0.1.0" {
        "issue": (prescriptions::IssueRequest) -> Result<prescriptions::Prescription, prescriptions::Error>;
        "list-prescriptions": (i64, Option<String>, prescriptions::PageRequest) -> Result<prescriptions::PrescriptionPage, prescriptions::Error>;
        "list-medications": (i64, prescriptions::PageRequest) -> Result<prescriptions::MedicationPage, prescriptions::Error>;
        "get-by-id": (i64, i64) -> Result<prescriptions::Prescription, prescriptions::Error>;
        "get-by-signature": (prescriptions::Principal, String) -> Result<prescriptions::Prescription, prescriptions::Error>;
        "get-pdf": (prescriptions::Principal, String) -> Result<Vec<u8>, prescriptions::Error>;
        "get-for-pharmacy": (String) -> Result<prescriptions::Prescription, prescriptions::Error>;
        "dispense": (prescriptions::DispenseRequest) -> Result<prescriptions::Dispensed, prescriptions::Error>;
        "get-receipt": (Option<i64>, String) -> Result<prescriptions::Receipt, prescriptions::Error>;
        "verify-receipt": (String, String) -> Result<prescriptions::ReceiptCheck, prescriptions::Error>;
        "reject": (prescriptions::PharmacyRef, prescriptions::StateChange) -> Result<prescriptions::Prescription, prescriptions::Error>;
        "claim": (prescriptions::PharmacyRef, String, u32) -> Result<prescriptions::ClaimGrant, prescriptions::Error>;
        "release": (prescriptions::PharmacyRef, String, String) -> Result<(), prescriptions::Error>;
        "cancel": (i64, prescriptions::StateChange) -> Result<prescriptions::Prescription, prescriptions::Error>;
        "list-events": (prescriptions::Principal, String) -> Result<Vec<prescriptions::LifecycleEvent>, prescriptions::Error>;
        "published-keys": () -> Result<Vec<prescriptions::PublishedKey>, prescriptions::Error>;
        "verify": (String, String) -> Result<prescriptions::Verification, prescriptions::Error>;
        "get-document": (prescriptions::Principal, String) -> Result<String, prescriptions::Error>;
        "load-drugs": (Vec<prescriptions::Drug>) -> Result<prescriptions::DrugLoad, prescriptions::Error>;
        "search-drugs": (Option<String>, prescriptions::PageRequest) -> Result<prescriptions::DrugPage, prescriptions::Error>;
        "sales": (String) -> Result<Vec<prescriptions::Sale>, prescriptions::Error>;
        "antibiotic-register": (i64, String, String, Option<prescriptions::PageRequest>) -> Result<prescriptions::RegisterPage, prescriptions::Error>;
        "get-landing": (Option<prescriptions::Principal>, String) -> Result<prescriptions::LandingRx, prescriptions::Error>;
        "get-landing-pdf": (String) -> Result<Vec<u8>, prescriptions::Error>;
    }
    "receta:notifications/notifications@0.1.0" {
        "create-webhook": (notifications::NewWebhook) -> Result<notifications::Webhook, notifications::Error>;
        "list-webhooks": (notifications::PageRequest) -> Result<notifications::WebhookPage, notifications::Error>;
        "get-webhook": (i64) -> Result<notifications::Webhook, notifications::Error>;
        "delete-webhook": (i64) -> Result<(), notifications::Error>;
        "plan": (i64, i64, notifications::RxEvent) -> Result<Vec<notifications::WebhookDelivery>, notifications::Error>;
        "resend-email": (notifications::Principal, i64, Vec<String>, Vec<String>) -> Result<i64, notifications::Error>;
        "deliver-due": (u32, Option<i64>) -> Result<notifications::DeliveryRun, notifications::Error>;
        "list-deliveries": (notifications::DeliveryFilter, notifications::PageRequest) -> Result<notifications::DeliveryPage, notifications::Error>;
        "get-delivery": (i64) -> Result<notifications::Delivery, notifications::Error>;
        "replay-delivery": (i64) -> Result<notifications::Delivery, notifications::Error>;
    }
    "receta:pharmacies/pharmacies@0.1.0" {
        "create-pharmacy": (pharmacies::NewPharmacy) -> Result<pharmacies::Pharmacy, pharmacies::Error>;
        "list-pharmacies": (pharmacies::PageRequest) -> Result<pharmacies::PharmacyPage, pharmacies::Error>;
        "get-pharmacy": (i64) -> Result<pharmacies::Pharmacy, pharmacies::Error>;
        "update-pharmacy": (i64, pharmacies::PharmacyPatch) -> Result<pharmacies::Pharmacy, pharmacies::Error>;
        "admit": (i64, u32) -> Result<pharmacies::Pharmacy, pharmacies::Error>;
        "record-call": (pharmacies::Call, bool) -> Result<(), pharmacies::Error>;
        "list-calls": (i64, pharmacies::PageRequest) -> Result<pharmacies::CallPage, pharmacies::Error>;
        "drain-calls": () -> Result<u32, pharmacies::Error>;
    }
}

#[cfg(test)]
mod tests {
    use super::forwarder;

    /// Every function of every interface the gateway imports has its typed forwarder, so the app
    /// never falls back to the dynamic way (`super::calls::dynamic`).
    #[test]
    fn every_gateway_import_is_typed() {
        let wit = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
        let mut resolve = wit_parser::Resolve::default();
        let (package, _) = resolve.push_dir(&wit).expect("wit/ parses");
        let world = resolve
            .select_world(&[package], Some("gateway"))
            .expect("world gateway");
        let mut checked = 0;
        for (key, item) in &resolve.worlds[world].imports {
            let wit_parser::WorldItem::Interface { id, .. } = item else {
                continue;
            };
            let name = resolve.name_world_key(key);
            for func in resolve.interfaces[*id].functions.keys() {
                assert!(
                    forwarder(&name, func).is_some(),
                    "{name}#{func} has no typed forwarder in receta_erx.rs"
                );
                checked += 1;
            }
        }
        assert!(checked >= 72, "only {checked} functions found in wit/");
    }
}
