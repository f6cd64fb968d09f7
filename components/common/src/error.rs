//! Constructors for the one error type every domain call returns (`receta:common/types.error`).

use crate::types::{Error, FieldError};

/// The message of every 404 except the PDF and resend endpoints.
pub const NOT_FOUND: &str = "Not found.";

/// How the host says a database could not be reached (`io` errors that start so: a libSQL server
/// down, refusing connections, or not answering in time; host/src/capability/sqlite/remote/).
pub const DATABASE_UNAVAILABLE: &str = "database unavailable: ";

/// The `Retry-After` of a 503 for an unreachable database: about what a libSQL primary takes to
/// come back from a restart.
pub const UNAVAILABLE_RETRY_SECONDS: u32 = 5;

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
    /// Infrastructure failures become 500s, the full chain of context in the log; a database that
    /// could not be reached becomes a 503 (the caller may try again), its cause in the log.
    fn from(e: anyhow::Error) -> Self {
        if e.chain()
            .any(|c| c.to_string().contains(DATABASE_UNAVAILABLE))
        {
            eprintln!("receta: answering 503: {e:#}");
            return Error::Unavailable(UNAVAILABLE_RETRY_SECONDS);
        }
        Error::Internal(format!("{e:#}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn an_unreachable_database_is_a_503_other_failures_500s() {
        let down: anyhow::Result<()> = Err(anyhow::anyhow!(
            "database unavailable: libSQL: Write delegation: `status: Unavailable`"
        ));
        let e = Error::from(down.context("cannot insert the prescription").unwrap_err());
        assert!(
            matches!(e, Error::Unavailable(UNAVAILABLE_RETRY_SECONDS)),
            "{e:?}"
        );
        let broken = anyhow::anyhow!("no such table: nope");
        assert!(matches!(Error::from(broken), Error::Internal(_)));
    }
}
