//! libSQL's remote protocol spoken by the component itself (issue 87): Hrana over HTTP v3, each call
//! one `POST <database_url>/v3/pipeline` through the component's outbound HTTP, so the app reaches
//! libSQL/Turso from any Spin host, one that has no SQLite too (docs/deploying.md), and a request's
//! statements travel together instead of one TCP connection each (Spin's libSQL backend).
//!
//! A [`Stream`] answers what [`super::Db`] asks of a connection, with these rules:
//! - outside a transaction a statement is one request: a batch of one step, and `close`;
//! - `BEGIN IMMEDIATE` is answered at once and sent with the first statement that needs the server;
//! - inside a transaction a *kept* write (`Db::execute_batched`, which returns no rows) is answered
//!   at once and sent with the next statement, or with `COMMIT`;
//! - what is sent together is one batch whose every step runs only if the one before it succeeded,
//!   so a transaction whose request fails anywhere has committed nothing; `COMMIT` is the last step
//!   of its batch, and a `ROLLBACK` step runs only if the `COMMIT` step did not succeed.
//!
//! The server's errors keep their text (`UNIQUE constraint failed: …`, `database is locked`), so
//! [`super::Db`] tells them apart as it does Spin's. The token is sent as `Authorization: Bearer`
//! and never written into an error or a log line.

use std::rc::Rc;
use std::time::Duration;

use spin_sdk::sqlite3::{Error, QueryResult, Value};

mod wire;

use wire::{
    Arg, Batch, Condition, PipelineRequest, PipelineResponse, ServerError, Step, Stmt,
    StreamRequest, StreamResponse, StreamResult,
};

use crate::error::DATABASE_UNAVAILABLE;

/// How long one request to the database may take, answer included: past it the request fails (a
/// 503 to the client) instead of hanging. Longer than sqld's 5 s write-lock timeout, so a write
/// waiting its turn is not cut short.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The most a pipeline's answer may be: the largest reads are pages of prescriptions and their
/// stored PDFs, well under this.
const ANSWER_MAX: usize = 32 * 1024 * 1024;

/// Where the database is and how to prove the right to it: the `database_url` and
/// `database_token` variables.
#[derive(Clone)]
pub struct Remote {
    /// The pipeline endpoint, `<database_url>/v3/pipeline`.
    pipeline: outbound::target::Target,
    /// Sent as `Authorization: Bearer <token>` when not empty (Turso's JWT; a local `sqld` needs
    /// none).
    token: String,
}

impl Remote {
    /// The database at `url` (`http://` or `https://`, no path of its own needed), or why not.
    pub fn parse(url: &str, token: &str) -> Result<Remote, String> {
        let url = url.trim().trim_end_matches('/');
        let url = match url.strip_prefix("libsql://") {
            // Turso hands out `libsql://<db>.turso.io`; over HTTP it is the same host.
            Some(host) => format!("https://{host}"),
            None => url.to_string(),
        };
        let pipeline = outbound::target::Target::parse(&format!("{url}/v3/pipeline"))
            .map_err(|e| format!("database_url: {e}"))?;
        Ok(Remote {
            pipeline,
            token: token.trim().to_string(),
        })
    }
}

/// One Hrana stream: open on the server only while a transaction is (its `baton`).
pub struct Stream {
    remote: Rc<Remote>,
    /// The server's handle on the open stream, sent with the stream's next request.
    baton: Option<String>,
    /// Where the stream's next request goes when the server said (`base_url`).
    base: Option<outbound::target::Target>,
    /// Whether a transaction is open (`BEGIN IMMEDIATE` answered).
    in_transaction: bool,
    /// Whether its `BEGIN IMMEDIATE` has reached the server.
    begun: bool,
    /// Writes answered but not sent yet.
    kept: Vec<Statement>,
}

impl Stream {
    pub fn new(remote: Rc<Remote>) -> Stream {
        Stream {
            remote,
            baton: None,
            base: None,
            in_transaction: false,
            begun: false,
            kept: Vec::new(),
        }
    }

    /// Runs `sql` as [`super::Db`] asks a connection to (see the module's rules); `keep` for a
    /// write whose answer may wait (no rows).
    pub fn execute(
        &mut self,
        sql: &str,
        params: &[Value],
        keep: bool,
    ) -> Result<QueryResult, Error> {
        match sql {
            "BEGIN IMMEDIATE" if !self.in_transaction => {
                self.in_transaction = true;
                self.begun = false;
                Ok(empty())
            }
            "COMMIT" if self.in_transaction => self.end(true),
            "ROLLBACK" if self.in_transaction => self.end(false),
            // Every request outside a transaction closes its stream: nothing is open to roll back
            // (a failed `COMMIT` batch ran its own guarded `ROLLBACK` step).
            "ROLLBACK" => Ok(empty()),
            _ if keep && self.in_transaction => {
                self.kept.push(Statement::new(sql, params));
                Ok(empty())
            }
            _ if self.in_transaction => {
                let mut steps = self.pending();
                steps.push(Statement::new(sql, params));
                self.begun = true;
                let mut results = self.request(steps, None, false)?;
                results.pop().expect("one result per step")
            }
            _ => {
                let mut results = self.request(vec![Statement::new(sql, params)], None, true)?;
                results.pop().expect("one result per step")
            }
        }
    }

    /// Runs `steps` in one request, each only if the one before it succeeded
    /// ([`super::Db::together`]); in a transaction after what it has kept. Each step's result.
    pub fn together(
        &mut self,
        steps: Vec<Statement>,
    ) -> Result<Vec<Result<QueryResult, Error>>, Error> {
        if !self.in_transaction {
            return self.request(steps, None, true);
        }
        let mut sent = self.pending();
        let ahead = sent.len();
        sent.extend(steps);
        self.begun = true;
        let mut results = self.request(sent, None, false)?;
        Ok(results.split_off(ahead))
    }

    /// `BEGIN IMMEDIATE` if it has not been sent, then the kept writes.
    fn pending(&mut self) -> Vec<Statement> {
        let mut steps = Vec::with_capacity(self.kept.len() + 2);
        if !self.begun {
            steps.push(Statement::new("BEGIN IMMEDIATE", &[]));
        }
        steps.append(&mut self.kept);
        steps
    }

    /// Ends the transaction: `COMMIT` with what is kept (and `BEGIN` if never sent), or `ROLLBACK`
    /// (nothing at all when the server never saw the transaction), and closes the stream.
    fn end(&mut self, commit: bool) -> Result<QueryResult, Error> {
        let outcome = if commit {
            let mut steps = self.pending();
            steps.push(Statement::new("COMMIT", &[]));
            self.send_commit(steps)
        } else if self.begun {
            self.kept.clear();
            self.request(vec![Statement::new("ROLLBACK", &[])], None, true)
                .map(|_| empty())
        } else {
            self.kept.clear();
            Ok(empty())
        };
        self.in_transaction = false;
        self.begun = false;
        self.baton = None;
        self.base = None;
        outcome
    }

    /// Sends `steps` (each only if the one before succeeded), then `COMMIT`'s guard: `ROLLBACK`
    /// unless the last step, `COMMIT`, succeeded; and closes the stream. The first failed step's
    /// error, or the `COMMIT`'s result.
    fn send_commit(&mut self, mut steps: Vec<Statement>) -> Result<QueryResult, Error> {
        let commit = steps.len() - 1;
        steps.push(Statement::new("ROLLBACK", &[]));
        let mut results = self.request(steps, Some(commit as u32), true)?;
        results.truncate(commit + 1);
        results.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(empty())
    }

    /// Sends `steps`, each only if the one before succeeded (the step after `guarded_commit`
    /// instead only if that one did not); `close` ends the stream. Each step's result; a step
    /// after a failed one is the failed step's error too.
    fn request(
        &mut self,
        steps: Vec<Statement>,
        guarded_commit: Option<u32>,
        close: bool,
    ) -> Result<Vec<Result<QueryResult, Error>>, Error> {
        let count = steps.len();
        let body = PipelineRequest {
            baton: self.baton.as_deref(),
            requests: batch(&steps, guarded_commit, close),
        };
        let body =
            serde_json::to_vec(&body).map_err(|e| io(format!("encoding a pipeline: {e}")))?;
        let target = self.base.as_ref().unwrap_or(&self.remote.pipeline).clone();
        let answer = exchange(&target, &self.remote.token, body)?;
        if !close {
            self.baton = answer.baton;
            if let Some(base) = answer.base_url {
                let base = base.trim_end_matches('/');
                self.base = outbound::target::Target::parse(&format!("{base}/v3/pipeline")).ok();
            }
        }
        let result = match answer.results.into_iter().next() {
            Some(StreamResult::Ok {
                response: StreamResponse::Batch { result },
            }) => result,
            Some(StreamResult::Error { error }) => return Err(error.into()),
            _ => {
                return Err(io(
                    "the database answered a pipeline without its batch".into()
                ));
            }
        };
        let mut errors = result.step_errors.into_iter();
        let mut failed: Option<ServerError> = None;
        let results = result
            .step_results
            .into_iter()
            .take(count)
            .map(|stepped| {
                let error = errors.next().flatten();
                match (stepped, error) {
                    (_, Some(error)) => {
                        failed.get_or_insert(error.clone());
                        Err(error.into())
                    }
                    (Some(result), None) => Ok(result.into()),
                    (None, None) => Err(failed.clone().map_or_else(
                        || io("the database skipped a statement".into()),
                        Error::from,
                    )),
                }
            })
            .collect::<Vec<_>>();
        if results.len() != count {
            return Err(io("the database answered fewer steps than were sent".into()));
        }
        Ok(results)
    }
}

/// The pipeline's requests: one batch of `steps`, each after the one before succeeded (the step
/// after `guarded_commit` instead only if that one did not), and `close` when asked.
fn batch(steps: &[Statement], guarded_commit: Option<u32>, close: bool) -> Vec<StreamRequest<'_>> {
    let steps = steps
        .iter()
        .enumerate()
        .map(|(i, stmt)| {
            let i = i as u32;
            let condition = match (i, guarded_commit) {
                (0, _) => None,
                (i, Some(commit)) if i == commit + 1 => Some(Condition::Not {
                    cond: Box::new(Condition::Ok { step: commit }),
                }),
                (i, _) => Some(Condition::Ok { step: i - 1 }),
            };
            Step {
                condition,
                stmt: Stmt {
                    sql: &stmt.sql,
                    args: stmt.args.iter().map(Arg).collect(),
                    want_rows: true,
                },
            }
        })
        .collect();
    let mut requests = vec![StreamRequest::Batch {
        batch: Batch { steps },
    }];
    if close {
        requests.push(StreamRequest::Close);
    }
    requests
}

/// One POST and its decoded answer. An unreachable server, one that did not answer in time or
/// refused (a wrong token: 401) is "database unavailable" (a 503 to the client,
/// `common::error`), with the server's status and the start of its answer, never the token.
fn exchange(
    target: &outbound::target::Target,
    token: &str,
    body: Vec<u8>,
) -> Result<PipelineResponse, Error> {
    let mut headers = vec![("content-type".to_string(), b"application/json".to_vec())];
    if !token.is_empty() {
        headers.push((
            "authorization".to_string(),
            format!("Bearer {token}").into_bytes(),
        ));
    }
    let unavailable = |why: String| {
        io(format!(
            "{DATABASE_UNAVAILABLE}libSQL over HTTP at {}: {why}",
            target.origin()
        ))
    };
    let sent = outbound::send::post_up_to(target, &headers, body, TIMEOUT, ANSWER_MAX);
    let answer = spin_sdk::http::run(sent).map_err(|e| unavailable(format!("unreachable: {e}")))?;
    if let Some(refusal) = answer.refusal() {
        return Err(unavailable(format!("refused: {refusal}")));
    }
    serde_json::from_slice(&answer.body).map_err(|e| io(format!("the database's answer: {e}")))
}

fn empty() -> QueryResult {
    QueryResult {
        columns: Vec::new(),
        rows: Vec::new(),
    }
}

fn io(message: String) -> Error {
    Error::Io(message)
}

/// A statement to send, owning its text and parameters.
pub struct Statement {
    sql: String,
    args: Vec<Value>,
}

impl Statement {
    pub fn new(sql: &str, params: &[Value]) -> Statement {
        Statement {
            sql: sql.to_string(),
            args: params.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statements(sqls: &[&str]) -> Vec<Statement> {
        sqls.iter().map(|s| Statement::new(s, &[])).collect()
    }

    #[test]
    fn a_transaction_commits_only_if_every_step_did_and_rolls_back_otherwise() {
        let steps = statements(&["BEGIN IMMEDIATE", "INSERT 1", "COMMIT", "ROLLBACK"]);
        let json = serde_json::to_value(PipelineRequest {
            baton: None,
            requests: batch(&steps, Some(2), true),
        })
        .unwrap();
        let steps = &json["requests"][0]["batch"]["steps"];
        assert!(steps[0].get("condition").is_none());
        assert_eq!(
            steps[1]["condition"],
            serde_json::json!({"type": "ok", "step": 0})
        );
        assert_eq!(
            steps[2]["condition"],
            serde_json::json!({"type": "ok", "step": 1})
        );
        assert_eq!(
            steps[3]["condition"],
            serde_json::json!({"type": "not", "cond": {"type": "ok", "step": 2}})
        );
        assert_eq!(json["requests"][1], serde_json::json!({"type": "close"}));
    }

    #[test]
    fn a_turso_url_is_reached_over_https_and_the_token_stays_out_of_errors() {
        let remote = Remote::parse("libsql://db-org.turso.io/", "secret-jwt").unwrap();
        assert_eq!(remote.pipeline.origin(), "https://db-org.turso.io");
        assert_eq!(remote.pipeline.path_with_query, "/v3/pipeline");
        let e: Error = ServerError {
            message: "UNIQUE constraint failed: t.v".into(),
            code: Some("SQLITE_CONSTRAINT".into()),
        }
        .into();
        assert!(!format!("{e:?}").contains("secret-jwt"));
        assert!(Remote::parse("ftp://x", "").is_err());
    }
}
