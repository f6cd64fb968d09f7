//! The PDF rendered once at issue and stored with the prescription (decisions: the PDF endpoint, the
//! email and `raw_size` always use those same bytes).
//!
//! HOOK: the renderer (`components/rxpdf`, `rxpdf::render(&RxDocument) -> Vec<u8>`) is being written
//! on another branch. Until it is merged, `render` returns `None` and the prescription is stored
//! without a PDF (`prescription_documents.pdf` is NULL). Merging it means filling `render` below from
//! the same data the signed document holds; nothing else in `issue` changes.

use crate::bindings::exports::receta::erx::prescriptions::IssueRequest;
use crate::medications::Resolved;

/// The PDF of a prescription about to be issued, if a renderer is available.
pub fn render(
    _req: &IssueRequest,
    _meds: &[Resolved],
    _signature: &str,
    _issued_on: &str,
) -> Option<Vec<u8>> {
    None
}
