//! The catalog component: wires `receta:erx/catalog` to the modules that implement it.

mod hospitals;

use common::types::{Error, PageRequest, Principal};

mod bindings {
    wit_bindgen::generate!({
        world: "catalog-component",
        path: "../../wit",
        with: { "receta:erx/types@0.1.0": common::types },
    });
}

use bindings::exports::receta::erx::catalog::{
    Guest, Hospital, HospitalPage, ImageKind, NewHospital,
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

    fn get_hospital_image(id: i64, kind: ImageKind) -> Option<Vec<u8>> {
        hospitals::image(id, kind)
    }
}

// Exported only when built as a component: a native build (unit tests, clippy) has no component ABI.
#[cfg(target_arch = "wasm32")]
bindings::export!(Catalog with_types_in bindings);
