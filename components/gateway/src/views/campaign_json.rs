//! A pharmacy campaign as the patient landing shows it (the admin API adds its own fields).

use serde_json::{Value, json};

use crate::bindings::campaigns::{Branch, Campaign};

/// One branch as openapi/receta.json spells it.
fn branch_json(b: &Branch) -> Value {
    json!({
        "Determinante": b.determinante,
        "name": b.name,
        "Formato": b.formato,
        "Estado": b.estado,
        "address": b.address,
    })
}

/// A campaign as the landing shows it: exactly the fields of openapi/receta.json.
pub fn landing_json(c: &Campaign) -> Value {
    json!({
        "id": c.id,
        "short_name": c.short_name,
        "branches": c.branches.iter().map(branch_json).collect::<Vec<_>>(),
        "callback_redirect": c.callback_redirect,
        "main_site_redirect": c.main_site_redirect,
        "display_name": c.display_name,
        "display_phone": c.display_phone,
        "display_contact": c.display_contact,
        "cta_link": c.cta_link,
    })
}
