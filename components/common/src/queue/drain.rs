//! One run of a leased queue, written once: lease the due rows, prepare each row's request, send
//! them all at once, judge each answer, end each row. The outbox (emails and webhooks), the
//! messages (SMS, WhatsApp) and the stamp queue (constancias) each give only their own steps
//! ([`Drain`]); how a run goes, what it counts and how it reports a row it could not record is
//! here.

use std::future::Future;
use std::time::SystemTime;

use super::{Leased, Outcome};
use crate::db::Db;
use crate::types::{DeliveryRun, Error};

/// A queue's own steps.
pub trait Drain {
    /// What a lease reads of a row.
    type Row;
    /// A row's request, ready to go.
    type Request;
    /// What sending a request got back.
    type Answer;
    /// What a judged answer adds to the row's end (an attempt's record, a provider's id, an
    /// accepted reply).
    type Record;

    /// Who speaks in the log (`notifications`, `constancias`).
    const COMPONENT: &'static str;

    /// The row as the log names it (`outbox row 7`).
    fn describe(&self, row: &Self::Row) -> String;
    /// Whether any row is due (a read: an idle worker never takes the write lock).
    fn any_due(&self, db: &Db, now: SystemTime) -> Result<bool, Error>;
    /// Leases up to `limit` due rows.
    fn lease(&self, db: &Db, now: SystemTime, limit: u32) -> Result<Vec<Leased<Self::Row>>, Error>;
    /// The row's request, or how the row ends without being sent.
    fn prepare(&self, db: &Db, row: &Leased<Self::Row>) -> Result<Self::Request, Outcome>;
    /// Sends one request (all of a run's go at once).
    fn send(&self, request: &Self::Request) -> impl Future<Output = Self::Answer>;
    /// What the answer means for the row; `started_at` is when the run's sending began.
    fn judge(
        &self,
        row: &Leased<Self::Row>,
        request: &Self::Request,
        answer: Self::Answer,
        started_at: SystemTime,
    ) -> (Outcome, Self::Record);
    /// Ends or reschedules the row in its own transaction (`common::queue`'s commit policy), with
    /// the judged answer's record when it was sent.
    fn finish(
        &self,
        db: &Db,
        row: &Leased<Self::Row>,
        outcome: &Outcome,
        record: Option<&Self::Record>,
    ) -> Result<(), Error>;
}

/// Leases up to `limit` due rows of `queue` and sends them. Each row is recorded on its own; a row
/// that could not be recorded is logged and the run goes on, answering the first such failure at
/// the end (its lease then runs out and the row comes back).
pub fn run<D: Drain>(queue: &D, limit: u32) -> Result<DeliveryRun, Error> {
    let mut summary = DeliveryRun {
        attempted: 0,
        delivered: 0,
        failed: 0,
    };
    if limit == 0 {
        return Ok(summary);
    }
    let db = Db::open()?;
    let now = SystemTime::now();
    if !queue.any_due(&db, now)? {
        return Ok(summary);
    }
    let mut trouble = None;
    let mut recorded = |row: &D::Row, result: Result<(), Error>| {
        if let Err(e) = result {
            eprintln!("{}: recording {}: {e:?}", D::COMPONENT, queue.describe(row));
            trouble.get_or_insert(e);
        }
    };
    let mut ready = Vec::new();
    for row in queue.lease(&db, now, limit)? {
        match queue.prepare(&db, &row) {
            Ok(request) => ready.push((row, request)),
            Err(outcome) => recorded(&row.row, queue.finish(&db, &row, &outcome, None)),
        }
    }
    let started_at = SystemTime::now();
    let answers = spin_sdk::http::run(futures::future::join_all(
        ready.iter().map(|(_, request)| queue.send(request)),
    ));
    for ((row, request), answer) in ready.iter().zip(answers) {
        summary.attempted += 1;
        let (outcome, record) = queue.judge(row, request, answer, started_at);
        if outcome == Outcome::Done {
            summary.delivered += 1;
        } else {
            summary.failed += 1;
        }
        recorded(&row.row, queue.finish(&db, row, &outcome, Some(&record)));
    }
    match trouble {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}
