//! How the service writes what it answers, shared by the route modules (so no route module
//! imports another). Each module here imports only `http`, `bindings`, `common` and its siblings.
//!
//! - `rx_json`: a prescription as the API writes it (the create, list, detail and pharmacy shapes)
//! - `campaign_json`: a pharmacy campaign as the patient landing shows it
//! - `fhir_json`: a prescription as a FHIR R4 `Bundle` (the medic's and the pharmacy's views)
//! - `status_json`: a pharmacy's status (the detail, the landing, the patient's page, FHIR)
//! - `landing_html`: the patient's page and its forms' pages (HTML)
//! - `records_html`: the patient's page of their other records (HTML)
//! - `history`: a person's medication history as a medic reads it (JSON, FHIR, the create's warnings)
//! - `register`: the antibiotic register's answer (a pharmacy's own, or any pharmacy's for the admin)
//! - `links`: which URLs the service accepts and writes, and its media links

pub mod campaign_json;
pub mod fhir_json;
pub mod history;
pub mod landing_html;
pub mod links;
pub mod records_html;
pub mod register;
pub mod rx_json;
pub mod status_json;
