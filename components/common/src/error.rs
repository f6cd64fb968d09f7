//! Constructors for the one error type every domain call returns (`receta:common/types.error`).

use crate::types::{Error, FieldError};

/// The message of every 404 except the PDF and resend endpoints.
pub const NOT_FOUND: &str = "Not found.";

impl Error {
    /// A 400 on one field.
    pub fn field(field: &str, message: impl Into<String>) -> Self {
        Error::Invalid(vec![FieldError {
            field: field.to_string(),
            messages: vec![message.into()],
        }])
    }

    /// The standard 404.
    pub fn not_found() -> Self {
        Error::NotFound(NOT_FOUND.to_string())
    }

    /// A 403 with a message saying what right is missing.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Error::Forbidden(message.into())
    }
}

impl From<anyhow::Error> for Error {
    /// Infrastructure failures become 500s; the full chain of context goes to the log.
    fn from(e: anyhow::Error) -> Self {
        Error::Internal(format!("{e:#}"))
    }
}
