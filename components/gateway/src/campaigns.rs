//! `/api/v2/campaigns/` (API admin): the pharmacy campaigns shown on the patient landing (openapi/receta.json,
//! decisions "Campaigns"). Create (201), list (paginated), get, PATCH (200), DELETE (204).
//!
//! Body: the Campaign fields of openapi/receta.json without `id`, plus `is_default` (at most one default: a new
//! default clears the old one) and `is_active` (default true; the landing lists active ones).
//! `callback_redirect`/`main_site_redirect`: an absolute http(s) URL or the literal `landing_view`.

use serde_json::{Map, Value, json};

use common::fields::{self, Fields};
use common::types::{Error, FieldError};

use crate::bindings::campaigns::{self, Branch, Campaign, CampaignPatch, NewCampaign};
use crate::http::{Request, Response, path_id};
use crate::roles::Admin;
use crate::views::campaign_json::landing_json;
use crate::views::links::is_http_url;

/// The literal a redirect may hold instead of a URL: stay on the landing view.
pub const LANDING_VIEW: &str = "landing_view";

/// Length limits, strictly under (characters).
const SHORT_NAME: Option<usize> = Some(64);
const DISPLAY_NAME: Option<usize> = Some(128);
const PHONE: Option<usize> = Some(64);
const CONTACT: Option<usize> = Some(256);
const URL: Option<usize> = Some(2048);
const BRANCH_NAME: Option<usize> = Some(256);
const BRANCH_TEXT: Option<usize> = Some(128);
const BRANCH_ADDRESS: Option<usize> = Some(512);
/// Branches per campaign, at most.
const MAX_BRANCHES: usize = 1000;

const BAD_URL: &str = "Enter a valid URL.";
const BAD_REDIRECT: &str = "Enter a valid URL (http or https) or \"landing_view\".";

/// A campaign as the admin API shows it: openapi/receta.json plus `is_default`, `is_active`, `created_at`.
fn to_json(c: &Campaign) -> Value {
    let mut v = landing_json(c);
    v["is_default"] = json!(c.is_default);
    v["is_active"] = json!(c.is_active);
    v["created_at"] = json!(c.created_at);
    v
}

/// `POST /api/v2/campaigns/` → 201 Campaign.
pub fn create(req: &Request, _: Admin) -> Result<Response, Error> {
    let mut f = req.json_fields()?;
    let short_name = f.required_str("short_name", SHORT_NAME);
    let branches = branches(&mut f).unwrap_or_default();
    let callback_redirect =
        redirect(&mut f, "callback_redirect", false).unwrap_or_else(|| LANDING_VIEW.into());
    let main_site_redirect =
        redirect(&mut f, "main_site_redirect", false).unwrap_or_else(|| LANDING_VIEW.into());
    let display_name = f.required_str("display_name", DISPLAY_NAME);
    let display_phone = f.optional_str("display_phone", PHONE).unwrap_or_default();
    let display_contact = f
        .optional_str("display_contact", CONTACT)
        .unwrap_or_default();
    let cta_link = cta_link(&mut f, false).unwrap_or_default();
    let is_default = f.optional_bool("is_default").unwrap_or(false);
    let is_active = f.optional_bool("is_active").unwrap_or(true);
    let input = f.finish_then(|| {
        Some(NewCampaign {
            short_name: short_name?,
            branches,
            callback_redirect,
            main_site_redirect,
            display_name: display_name?,
            display_phone,
            display_contact,
            cta_link,
            is_default,
            is_active,
        })
    })?;
    let created = campaigns::create_campaign(&input)?;
    Ok(Response::json(201, &to_json(&created)))
}

/// `GET /api/v2/campaigns/?limit&offset` → 200 paginated Campaign list, oldest first.
pub fn list(req: &Request, _: Admin) -> Result<Response, Error> {
    let page = req.page()?;
    let found = campaigns::list_campaigns(page)?;
    let results: Vec<Value> = found.results.iter().map(to_json).collect();
    Ok(Response::page(req, &page, found.count, &results))
}

/// `GET /api/v2/campaigns/<id>/` → 200 Campaign; 404 `{message}`.
pub fn get(id: &str, _: Admin) -> Result<Response, Error> {
    let id = path_id(id)?;
    Ok(Response::json(200, &to_json(&campaigns::get_campaign(id)?)))
}

/// `PATCH /api/v2/campaigns/<id>/` with any Campaign field → 200 Campaign; 404 before the body is read.
pub fn update(req: &Request, id: &str, _: Admin) -> Result<Response, Error> {
    let id = path_id(id)?;
    campaigns::get_campaign(id)?;
    let mut f = req.json_fields()?;
    let patch = CampaignPatch {
        short_name: f.patch_str("short_name", SHORT_NAME, false),
        branches: if f.raw("branches") == Some(&Value::Null) {
            f.error("branches", fields::NULL);
            None
        } else {
            branches(&mut f)
        },
        callback_redirect: redirect(&mut f, "callback_redirect", true),
        main_site_redirect: redirect(&mut f, "main_site_redirect", true),
        display_name: f.patch_str("display_name", DISPLAY_NAME, false),
        display_phone: f.patch_str("display_phone", PHONE, true),
        display_contact: f.patch_str("display_contact", CONTACT, true),
        cta_link: cta_link(&mut f, true),
        is_default: f.patch_bool("is_default"),
        is_active: f.patch_bool("is_active"),
    };
    f.finish()?;
    let updated = campaigns::update_campaign(id, &patch)?;
    Ok(Response::json(200, &to_json(&updated)))
}

/// `DELETE /api/v2/campaigns/<id>/` → 204, empty.
pub fn delete(id: &str, _: Admin) -> Result<Response, Error> {
    let id = path_id(id)?;
    campaigns::delete_campaign(id)?;
    Ok(Response::no_content())
}

/// `callback_redirect` / `main_site_redirect`: an absolute http(s) URL or `landing_view`. `None` when
/// absent (and, on create, when null). On a PATCH null is an error.
fn redirect(f: &mut Fields, field: &str, patch: bool) -> Option<String> {
    let value = if patch {
        f.patch_str(field, URL, false)
    } else {
        f.optional_str(field, URL)
    }?;
    let value = value.trim().to_string();
    if value == LANDING_VIEW || is_http_url(&value) {
        Some(value)
    } else {
        f.error(field, BAD_REDIRECT);
        None
    }
}

/// `cta_link`: an absolute http(s) URL, or empty. `None` when absent.
fn cta_link(f: &mut Fields, patch: bool) -> Option<String> {
    let value = if patch {
        f.patch_str("cta_link", URL, true)
    } else {
        f.optional_str("cta_link", URL)
    }?;
    let value = value.trim().to_string();
    if value.is_empty() || is_http_url(&value) {
        Some(value)
    } else {
        f.error("cta_link", BAD_URL);
        None
    }
}

/// `branches`: a list (at most `MAX_BRANCHES`) of `{Determinante (integer, required), name (required),
/// Formato, Estado, address}`. `None` when absent or null. Every problem is a message on `branches`,
/// `Item N, <field>: …`.
fn branches(f: &mut Fields) -> Option<Vec<Branch>> {
    let items = match f.raw("branches")? {
        Value::Null => return None,
        Value::Array(items) => items.clone(),
        _ => {
            f.error("branches", "Expected a list of items.");
            return None;
        }
    };
    if items.len() > MAX_BRANCHES {
        f.error(
            "branches",
            format!("Ensure this field has no more than {MAX_BRANCHES} elements."),
        );
        return None;
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let n = i + 1;
        let Value::Object(map) = item else {
            f.error(
                "branches",
                format!("Item {n}: Invalid data. Expected a dictionary."),
            );
            continue;
        };
        match branch(map) {
            Ok(b) => out.push(b),
            Err(errors) => {
                for e in errors {
                    for message in e.messages {
                        f.error("branches", format!("Item {n}, {}: {message}", e.field));
                    }
                }
            }
        }
    }
    Some(out)
}

fn branch(map: Map<String, Value>) -> Result<Branch, Vec<FieldError>> {
    let mut b = Fields::from_map(map);
    // An integer: a JSON integer, or integer text as forms send it.
    let determinante = b.required_i64("Determinante");
    let name = b.required_str("name", BRANCH_NAME);
    let formato = b.optional_str("Formato", BRANCH_TEXT).unwrap_or_default();
    let estado = b.optional_str("Estado", BRANCH_TEXT).unwrap_or_default();
    let address = b
        .optional_str("address", BRANCH_ADDRESS)
        .unwrap_or_default();
    b.finish_item_then(|| {
        Some(Branch {
            determinante: determinante?,
            name: name?,
            formato,
            estado,
            address,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(v: Value) -> Fields {
        Fields::from_json(v.to_string().as_bytes()).unwrap()
    }

    fn messages(f: Fields) -> Map<String, Value> {
        match f.finish() {
            Err(Error::Invalid(errors)) => errors
                .into_iter()
                .map(|e| (e.field, json!(e.messages)))
                .collect(),
            other => panic!("expected field errors, got {other:?}"),
        }
    }

    #[test]
    fn redirects_are_urls_or_landing_view() {
        let mut f = fields(
            json!({"a": "landing_view", "b": "https://x.mx/cb", "c": "/relative", "d": "Landing_View"}),
        );
        assert_eq!(
            redirect(&mut f, "a", false).as_deref(),
            Some("landing_view")
        );
        assert_eq!(
            redirect(&mut f, "b", false).as_deref(),
            Some("https://x.mx/cb")
        );
        assert_eq!(redirect(&mut f, "c", false), None);
        assert_eq!(redirect(&mut f, "d", false), None);
        assert_eq!(redirect(&mut f, "absent", false), None);
        let m = messages(f);
        assert_eq!(m["c"], json!([BAD_REDIRECT]));
        assert_eq!(m["d"], json!([BAD_REDIRECT]));
        assert!(!m.contains_key("a") && !m.contains_key("b"));
    }

    #[test]
    fn branches_are_checked_item_by_item() {
        let mut f = fields(json!({"branches": [
            {"Determinante": 101, "name": "Centro", "Formato": "Farmacia", "Estado": "CDMX", "address": "Madero 1"},
            {"Determinante": "102", "name": "Roma"},
            {"Determinante": "x", "name": ""},
            {"name": "Sin número", "Estado": 5},
            "text",
        ]}));
        let found = branches(&mut f).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].determinante, 102);
        assert_eq!(found[1].formato, "");
        let m = messages(f);
        let list: Vec<&str> = m["branches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(
            list.contains(&"Item 3, Determinante: A valid integer is required."),
            "{list:?}"
        );
        assert!(
            list.contains(&"Item 3, name: This field may not be blank."),
            "{list:?}"
        );
        assert!(
            list.contains(&"Item 4, Determinante: This field is required."),
            "{list:?}"
        );
        assert!(
            list.contains(&"Item 5: Invalid data. Expected a dictionary."),
            "{list:?}"
        );
        // A number where text is expected is read as text, as everywhere else in the API.
        assert!(
            !list.iter().any(|m| m.starts_with("Item 4, Estado")),
            "{list:?}"
        );
    }

    #[test]
    fn branches_must_be_a_list() {
        let mut f = fields(json!({"branches": {"Determinante": 1}}));
        assert!(branches(&mut f).is_none());
        assert_eq!(
            messages(f)["branches"],
            json!(["Expected a list of items."])
        );
    }
}
