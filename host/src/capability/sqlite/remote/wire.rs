//! How this host's values and errors cross to a libSQL server and back (`remote`): the values in
//! the client's type, and SQLite's own text out of the client's errors. A result column's name is
//! the server's, as Spin's backend gives it: the server runs a statement re-rendered from its
//! parse, so a column written `action` (a keyword) comes back `ACTION` and `COUNT(*)` `COUNT (*)`
//! (guests read names without regard to case: `common::db`).

use crate::capability::sqlite::bindings::Value;

/// How an `io` error says the server could not be reached (down, refusing connections, not
/// answering in time), as against an error of the statement itself. `common::db` recognises it.
pub const UNAVAILABLE: &str = "database unavailable: ";

pub fn to_libsql(value: Value) -> libsql::Value {
    match value {
        Value::Integer(i) => libsql::Value::Integer(i),
        Value::Real(r) => libsql::Value::Real(r),
        Value::Text(t) => libsql::Value::Text(t),
        Value::Blob(b) => libsql::Value::Blob(b),
        Value::Null => libsql::Value::Null,
    }
}

pub fn from_libsql(value: libsql::Value) -> Value {
    match value {
        libsql::Value::Null => Value::Null,
        libsql::Value::Integer(i) => Value::Integer(i),
        libsql::Value::Real(r) => Value::Real(r),
        libsql::Value::Text(t) => Value::Text(t),
        libsql::Value::Blob(b) => Value::Blob(b),
    }
}

/// SQLite's own text out of the client's error: `Hrana: `stream error: `Error { message: "SQLite
/// error: UNIQUE constraint failed: t.name", code: … }``` (remote) or `Remote SQlite failure:
/// `3:2067:UNIQUE constraint failed: t.name`` (a replica's delegated write) → `UNIQUE constraint
/// failed: t.name`, so guests match constraint violations as they do locally. A server that cannot
/// be reached gives [`UNAVAILABLE`] and the client's text; other failures (the token refused) keep
/// their full text, prefixed with `libSQL: `.
pub fn server_message(text: &str) -> String {
    if let Some((_, rest)) = text.split_once("Remote SQlite failure: `") {
        let message = rest.trim_end_matches('`');
        // `<extended code>:<code>:<message>` in this client; the message alone if not.
        let mut parts = message.splitn(3, ':');
        return match (parts.next(), parts.next(), parts.next()) {
            (Some(a), Some(b), Some(m)) if [a, b].iter().all(|n| n.parse::<i64>().is_ok()) => {
                m.to_string()
            }
            _ => message.to_string(),
        };
    }
    if is_unreachable(text) {
        return format!("{UNAVAILABLE}libSQL: {text}");
    }
    let inner = if let Some((_, rest)) = text.split_once("message: \"") {
        rest.split_once("\", code:").map(|(m, _)| m)
    } else if let Some((_, rest)) = text.split_once("api error: `") {
        Some(rest.trim_end_matches('`'))
    } else {
        None
    };
    match inner {
        Some(message) => message
            .strip_prefix("SQLite error: ")
            .unwrap_or(message)
            .replace("\\\"", "\""),
        None => format!("libSQL: {text}"),
    }
}

/// Whether the client's error says the server was not reached (or not in time), rather than that
/// it refused the statement.
fn is_unreachable(text: &str) -> bool {
    [
        "status: Unavailable",
        "status: DeadlineExceeded",
        "tcp connect error",
        "error trying to connect",
        "connection closed before message completed",
        "Connection reset",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_read_like_sqlite_errors() {
        assert_eq!(
            server_message(
                "Hrana: `stream error: `Error { message: \"SQLite error: UNIQUE constraint failed: t.name\", code: \"SQLITE_CONSTRAINT\" }``"
            ),
            "UNIQUE constraint failed: t.name"
        );
        assert_eq!(
            server_message("Hrana: `api error: `SQLite error: no such table: nope``"),
            "no such table: nope"
        );
        assert_eq!(
            server_message("Hrana: `http error: `tcp connect error: Connection refused``"),
            "database unavailable: libSQL: Hrana: `http error: `tcp connect error: Connection refused``"
        );
        assert_eq!(
            server_message("Remote SQlite failure: `3:2067:UNIQUE constraint failed: u.v`"),
            "UNIQUE constraint failed: u.v"
        );
        let down = "Write delegation: `status: Unavailable, message: \"error trying to connect: \
                    tcp connect error: Connection refused (os error 111)\", details: []`";
        assert!(server_message(down).starts_with(UNAVAILABLE));
    }
}
