//! Statements sent together (issue 87): over HTTP a request's statements that do not wait on one
//! another's answers travel in one request to the database instead of one each, which at the edge
//! is a round trip saved per statement.

use anyhow::{Context, Result, anyhow};
use spin_sdk::sqlite3::{QueryResult, Value};

use super::{Db, Link, Retry, describe, first_line, hrana};

impl Db {
    /// Runs `steps` one after another, each only if the one before it succeeded, and answers each
    /// one's result. Over HTTP they are one request; on Spin's SQLite one statement after another.
    /// Outside a transaction each step commits on its own, so a later step's failure does not undo
    /// an earlier write: send together only writes that stand alone (an atomic `INSERT` and the
    /// read of what it wrote, a read and its log row written to be harmless when the read found
    /// nothing). The first failure is the error, naming its statement. A first step the database
    /// found locked or interrupted did nothing, and is asked again as [`Db::execute`] asks
    /// ([`Db::again`]).
    pub fn together(&self, steps: &[(&str, &[Value])]) -> Result<Vec<QueryResult>> {
        if !self.conn.is_remote() {
            return steps
                .iter()
                .map(|(sql, params)| self.execute(sql, params))
                .collect();
        }
        let mut retry = Retry::new();
        'asked: loop {
            let statements = steps
                .iter()
                .map(|(sql, params)| hrana::Statement::new(sql, params))
                .collect();
            let sent = match &mut **self.conn.conn.borrow_mut() {
                Link::Remote(stream) => stream.together(statements),
                Link::Local(_) => unreachable!("checked above"),
            };
            let first = steps.first().map_or("", |(sql, _)| first_line(sql));
            let results = sent
                .map_err(|e| anyhow!("{}", describe(&e)))
                .with_context(|| format!("running `{first}` and what follows it"))?;
            let mut answers = Vec::with_capacity(results.len());
            for (i, result) in results.into_iter().enumerate() {
                let e = match result {
                    Ok(answer) => {
                        answers.push(answer);
                        continue;
                    }
                    Err(e) => e,
                };
                // A step after the first ran after writes that stay: only the first is asked
                // again.
                if self.again(&e, &mut retry, i == 0) {
                    continue 'asked;
                }
                return Err(anyhow!("{}", describe(&e)))
                    .with_context(|| format!("running `{}`", first_line(steps[i].0)));
            }
            return Ok(answers);
        }
    }
}
