//! A buffered result, the same on both backends: Spin's cap on its size, and the result of a
//! statement that gives no rows.

use crate::capability::sqlite::bindings::{Error, QueryResult, Value};

/// Spin's cap on a buffered query result.
pub const MAX_RESULT_BYTES: usize = 128 * 1024 * 1024;

/// The result of a statement that returns no rows.
pub fn no_rows() -> QueryResult {
    QueryResult {
        columns: Vec::new(),
        rows: Vec::new(),
    }
}

/// A buffered result's size, counted row by row against [`MAX_RESULT_BYTES`] (16 bytes a value,
/// plus a text's or blob's length), the same way on both backends.
#[derive(Default)]
pub struct ResultBudget {
    bytes: usize,
}

impl ResultBudget {
    /// Counts one row; `io` once the result is over the cap.
    pub fn add(&mut self, values: &[Value]) -> Result<(), Error> {
        self.bytes += values
            .iter()
            .map(|value| {
                16 + match value {
                    Value::Text(t) => t.len(),
                    Value::Blob(b) => b.len(),
                    _ => 0,
                }
            })
            .sum::<usize>();
        if self.bytes > MAX_RESULT_BYTES {
            return Err(Error::Io(format!(
                "query result exceeds limit of {MAX_RESULT_BYTES} bytes"
            )));
        }
        Ok(())
    }
}
