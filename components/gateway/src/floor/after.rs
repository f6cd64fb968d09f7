//! Work a request does after its response: delivering a prescription's new outbox rows.

use crate::bindings::notifications;

/// Rows one request delivers after its response: a prescription's email and its webhooks.
pub const DELIVER_NOW: u32 = 20;

/// Delivers prescription `id`'s due rows: to run after the response (`Response::then`).
pub fn deliver_after(prescription: i64) -> impl FnOnce() {
    move || {
        if let Err(e) = notifications::deliver_due(DELIVER_NOW, Some(prescription)) {
            eprintln!("delivering the outbox of prescription {prescription}: {e:?}");
        }
    }
}
