//! Statements sent together (issue 87): over HTTP a request's statements that do not wait on one
//! another's answers travel in one request to the database instead of one each, which at the edge
//! is a round trip saved per statement.

use anyhow::{Context, Result, anyhow};
use spin_sdk::sqlite3::{QueryResult, Value};

use super::{
    Db, INTERRUPTED_PAUSE, INTERRUPTED_TRIES, LOCK_RETRY, LOCK_WAIT, Link, describe, first_line,
    hrana, is_busy, is_interrupt,
};

impl Db {
    /// Runs `steps` one after another, each only if the one before it succeeded, and answers each
    /// one's result. Over HTTP they are one request; on Spin's SQLite one statement after another.
    /// Outside a transaction each step commits on its own, so a later step's failure does not undo
    /// an earlier write: send together only writes that stand alone (an atomic `INSERT` and the
    /// read of what it wrote, a read and its log row written to be harmless when the read found
    /// nothing). The first failure is the error, naming its statement. A first step the database
    /// found locked or interrupted did nothing, and is asked again as [`Db::execute`] asks.
    pub fn together(&self, steps: &[(&str, &[Value])]) -> Result<Vec<QueryResult>> {
        if !self.conn.is_remote() {
            return steps
                .iter()
                .map(|(sql, params)| self.execute(sql, params))
                .collect();
        }
        let outside = !self.conn.in_transaction.get();
        let started = std::time::Instant::now();
        let mut pause = LOCK_RETRY;
        let mut tries = 1;
        loop {
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
            let mut failed = None;
            for (i, result) in results.into_iter().enumerate() {
                match result {
                    Ok(answer) => answers.push(answer),
                    Err(e) => {
                        failed = Some((i, e));
                        break;
                    }
                }
            }
            let Some((i, e)) = failed else {
                return Ok(answers);
            };
            if i == 0 && outside {
                if is_busy(&e) && started.elapsed() < LOCK_WAIT {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(LOCK_RETRY * 16);
                    continue;
                }
                if is_interrupt(&e) && tries < INTERRUPTED_TRIES {
                    std::thread::sleep(INTERRUPTED_PAUSE * tries);
                    tries += 1;
                    continue;
                }
            }
            // In a transaction a lock met at its deferred `BEGIN`, or an interruption, reruns the
            // transaction ([`Db::transaction`]), as for a statement on its own.
            if !outside && (is_interrupt(&e) || is_busy(&e)) {
                self.conn.interrupted.set(true);
            }
            return Err(anyhow!("{}", describe(&e)))
                .with_context(|| format!("running `{}`", first_line(steps[i].0)));
        }
    }
}
