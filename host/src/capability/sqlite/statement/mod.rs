//! A guest's statement as this host reads it: parsed once, at the door (`SqliteState::execute`),
//! into what both backends ask of it (does it write, take the write lock, give rows, open or end
//! a transaction, set a connection's lock wait, hold a second statement). After the door nothing
//! reads the text again to classify it; the backends read [`Statement`]'s answers.
//!
//! This is a reading of the statement's first words, not SQLite's parser: it sees what the host
//! must decide before SQLite runs the statement, and SQLite's own errors still apply to the rest.

mod pragma;
mod text;

use text::{Words, more_than_one_statement};

/// The comment that ends a write the guest marks as batched (`common::db::Db::execute_batched`):
/// one whose failure it does not handle on its own, which a replica may hold back (`libsql`'s
/// `deferred`).
pub const BATCHED: &str = "/* receta:batched */";

/// One statement and what it is.
#[derive(Debug, Clone)]
pub struct Statement {
    text: String,
    kind: Kind,
    batched: bool,
    multiple: bool,
}

/// What a statement is, by its verb (for a `WITH …` clause, the verb of the statement the clause
/// belongs to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `SELECT`, `VALUES`, or a `WITH …` clause before one: reads only.
    Query,
    /// `INSERT`, `UPDATE`, `DELETE` or `REPLACE`; `returning` when it gives rows back.
    Write { returning: bool },
    /// Changes the schema or the file: `CREATE`, `DROP`, `ALTER`, `VACUUM`, `REINDEX`, `ANALYZE`.
    Schema,
    /// A `PRAGMA`; `busy_timeout` when it sets `busy_timeout` (`= n` or `(n)`); `libsql` when a
    /// libSQL server runs it (see `pragma::libsql_runs_pragma`).
    Pragma { busy_timeout: bool, libsql: bool },
    /// `EXPLAIN …`.
    Explain,
    /// `BEGIN`: the mode of a plain one (`DEFERRED`, `IMMEDIATE` or neither, with or without
    /// `TRANSACTION`), `None` for `BEGIN EXCLUSIVE` and anything else.
    Begin(Option<BeginMode>),
    /// `SAVEPOINT …`.
    Savepoint,
    /// `COMMIT` or `END`; `plain` when it is only that (with or without `TRANSACTION`).
    Commit { plain: bool },
    /// `ROLLBACK`; `plain` when it is the transaction's (not `ROLLBACK TO` a savepoint).
    Rollback { plain: bool },
    /// `RELEASE …` (a savepoint, which may be the outermost).
    Release,
    /// Anything else (left to SQLite).
    Other,
}

/// The mode a plain `BEGIN` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeginMode {
    Default,
    Deferred,
    Immediate,
}

impl Statement {
    /// Reads `text`.
    pub fn parse(text: impl Into<String>) -> Self {
        let text = text.into();
        let mut words = Words::new(&text);
        let first = words.next().unwrap_or("");
        let mut key = [0u8; 9];
        let key = match key.get_mut(..first.len()) {
            Some(key) => {
                key.copy_from_slice(first.as_bytes());
                key.make_ascii_uppercase();
                &*key
            }
            None => b"",
        };
        let kind = match key {
            b"SELECT" | b"VALUES" => Kind::Query,
            b"WITH" => {
                const MAIN: [&str; 6] =
                    ["SELECT", "VALUES", "INSERT", "UPDATE", "DELETE", "REPLACE"];
                let verb = words.find(|w| MAIN.iter().any(|m| w.eq_ignore_ascii_case(m)));
                match verb {
                    Some(verb) if !is_query(verb) => write(&text),
                    _ => Kind::Query,
                }
            }
            b"INSERT" | b"UPDATE" | b"DELETE" | b"REPLACE" => write(&text),
            b"CREATE" | b"DROP" | b"ALTER" | b"VACUUM" | b"REINDEX" | b"ANALYZE" => Kind::Schema,
            b"PRAGMA" => {
                let pragma = pragma::read(&text);
                Kind::Pragma {
                    busy_timeout: pragma.busy_timeout,
                    libsql: pragma.libsql,
                }
            }
            b"EXPLAIN" => Kind::Explain,
            b"BEGIN" => Kind::Begin(begin_mode(&short_words(&text))),
            b"SAVEPOINT" => Kind::Savepoint,
            b"COMMIT" | b"END" => Kind::Commit {
                plain: matches!(short_words(&text).as_slice(), [_] | [_, "TRANSACTION"]),
            },
            b"ROLLBACK" => Kind::Rollback {
                plain: matches!(short_words(&text).as_slice(), [_] | [_, "TRANSACTION"]),
            },
            b"RELEASE" => Kind::Release,
            _ => Kind::Other,
        };
        let batched = text.trim_end().ends_with(BATCHED);
        let multiple = more_than_one_statement(&text);
        Self {
            text,
            kind,
            batched,
            multiple,
        }
    }

    /// The statement as the guest wrote it.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text to run: a plain `BEGIN` or `BEGIN DEFERRED` runs as `BEGIN IMMEDIATE`, so that a
    /// transaction takes the write lock up front and waits for it instead of failing with
    /// "database is locked" when two requests write concurrently. (Guests meant to also run on
    /// Spin write `BEGIN IMMEDIATE` themselves.)
    pub fn to_run(&self) -> &str {
        match self.kind {
            Kind::Begin(Some(BeginMode::Default | BeginMode::Deferred)) => "BEGIN IMMEDIATE",
            _ => &self.text,
        }
    }

    /// What it is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Whether it writes: a row write, or a change of the schema or the file. A `PRAGMA` is not:
    /// a connection's own setting (a log-grade `synchronous = NORMAL`) must not wait for writers.
    pub fn writes(&self) -> bool {
        matches!(self.kind, Kind::Write { .. } | Kind::Schema)
    }

    /// Whether, run outside a transaction, it takes the database's write lock: a write, or a
    /// `BEGIN` (always run as `BEGIN IMMEDIATE`) or `SAVEPOINT` that opens a transaction.
    pub fn takes_write_lock(&self) -> bool {
        self.writes() || matches!(self.kind, Kind::Begin(_) | Kind::Savepoint)
    }

    /// Whether it only reads (a query): what a replica's file answers outside a transaction.
    pub fn reads(&self) -> bool {
        self.kind == Kind::Query
    }

    /// Whether it gives rows back: a query, a `PRAGMA`, an `EXPLAIN`, a write with `RETURNING`.
    pub fn returns_rows(&self) -> bool {
        matches!(
            self.kind,
            Kind::Query | Kind::Pragma { .. } | Kind::Explain | Kind::Write { returning: true }
        )
    }

    /// Whether it opens a plain transaction (not `BEGIN EXCLUSIVE`).
    pub fn opens_plain_transaction(&self) -> bool {
        matches!(self.kind, Kind::Begin(Some(_)))
    }

    /// Whether it may end a transaction (and so flush it): `COMMIT`, `END`, or the `RELEASE` of
    /// what may be the outermost savepoint.
    pub fn ends_transaction(&self) -> bool {
        matches!(self.kind, Kind::Commit { .. } | Kind::Release)
    }

    /// Whether it may wait for a database's write lock or flush: a write, a transaction's start or
    /// end, or anything inside a transaction (`in_transaction`).
    pub fn waits_for_writer(&self, in_transaction: bool) -> bool {
        in_transaction
            || self.writes()
            || matches!(
                self.kind,
                Kind::Begin(_)
                    | Kind::Commit { .. }
                    | Kind::Rollback { .. }
                    | Kind::Savepoint
                    | Kind::Release
            )
    }

    /// Whether the guest marked it as a batched write ([`BATCHED`]).
    pub fn batched(&self) -> bool {
        self.batched
    }

    /// Whether it holds a second statement after its first `;` (anything but whitespace and
    /// comments), which `execute` refuses as Spin's rusqlite does ("Multiple statements
    /// provided") instead of running only the first. A `CREATE TRIGGER`, whose body holds `;`s,
    /// is left to SQLite.
    pub fn multiple(&self) -> bool {
        self.multiple
    }
}

fn is_query(verb: &str) -> bool {
    verb.eq_ignore_ascii_case("SELECT") || verb.eq_ignore_ascii_case("VALUES")
}

/// A row write, `returning` when `RETURNING` is one of its words.
fn write(text: &str) -> Kind {
    Kind::Write {
        returning: text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| w.eq_ignore_ascii_case("RETURNING")),
    }
}

/// The words of a short statement (`BEGIN …`, `COMMIT`, …) in upper case, without a trailing `;`.
fn short_words(text: &str) -> Vec<&'static str> {
    const KNOWN: [&str; 7] = [
        "BEGIN",
        "DEFERRED",
        "IMMEDIATE",
        "TRANSACTION",
        "COMMIT",
        "END",
        "ROLLBACK",
    ];
    text.trim()
        .trim_end_matches(';')
        .split_whitespace()
        .map(|w| {
            KNOWN
                .iter()
                .find(|k| w.eq_ignore_ascii_case(k))
                .copied()
                .unwrap_or("?")
        })
        .collect()
}

fn begin_mode(words: &[&str]) -> Option<BeginMode> {
    match words {
        ["BEGIN"] | ["BEGIN", "TRANSACTION"] => Some(BeginMode::Default),
        ["BEGIN", "DEFERRED"] | ["BEGIN", "DEFERRED", "TRANSACTION"] => Some(BeginMode::Deferred),
        ["BEGIN", "IMMEDIATE"] | ["BEGIN", "IMMEDIATE", "TRANSACTION"] => {
            Some(BeginMode::Immediate)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Kind {
        Statement::parse(text).kind()
    }

    #[test]
    fn writes_are_told_from_reads_by_their_verb() {
        let writes = |t: &str| Statement::parse(t).writes();
        assert!(!writes("SELECT x FROM t WHERE x = ?"));
        assert!(!writes(" values (1)"));
        assert!(writes("INSERT INTO t VALUES (1)"));
        assert!(writes("update t SET a = 1"));
        assert!(writes("REPLACE INTO t VALUES (1)"));
        assert!(writes("CREATE TABLE t (x)"));
        assert!(!writes("PRAGMA synchronous = NORMAL"));
        assert!(
            !writes("BEGIN IMMEDIATE"),
            "a transaction's start, not a write"
        );
        assert!(
            writes("/* a SELECT */ DELETE FROM t"),
            "comments are skipped"
        );
        assert!(writes("-- select\nDELETE FROM t"));
    }

    #[test]
    fn a_with_clause_is_read_to_the_statement_it_belongs_to() {
        assert_eq!(kind("WITH x AS (SELECT 1) SELECT * FROM x"), Kind::Query);
        assert_eq!(
            kind(
                "WITH due AS (SELECT id FROM outbox WHERE a < ?) INSERT INTO done SELECT id FROM due"
            ),
            Kind::Write { returning: false }
        );
        assert!(
            Statement::parse(
                "with recursive n(i) as (select 1 union all select i + 1 from n where i < 3) \
                 delete from t where x in n"
            )
            .writes()
        );
        // Keywords inside the clause's parentheses or quotes are not the verb.
        assert_eq!(
            kind("WITH \"insert\" AS (SELECT 'delete' AS d) SELECT d FROM \"insert\""),
            Kind::Query
        );
        assert!(Statement::parse("WITH a(x) AS (VALUES ('(')) UPDATE t SET y = 1").writes());
    }

    #[test]
    fn transactions_and_writes_take_the_turn() {
        let takes = |t: &str| Statement::parse(t).takes_write_lock();
        assert!(takes("BEGIN"));
        assert!(takes(" begin immediate"));
        assert!(takes("BEGIN EXCLUSIVE"));
        assert!(takes("SAVEPOINT s"));
        assert!(takes("DELETE FROM t"));
        assert!(takes("WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x"));
        assert!(!takes("SELECT 1"));
        assert!(!takes("COMMIT"));
    }

    #[test]
    fn rows_come_from_queries_and_returning_writes() {
        let rows = |t: &str| Statement::parse(t).returns_rows();
        assert!(rows(" select 1"));
        assert!(rows("WITH x AS (SELECT 1) SELECT * FROM x"));
        assert!(rows("UPDATE outbox SET a = 1 WHERE b RETURNING id"));
        assert!(!rows("INSERT INTO t (returning_x) VALUES (1)"));
        assert!(!rows("BEGIN IMMEDIATE"));
        assert!(!rows("CREATE TABLE t (x)"));
        assert!(!rows("WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x"));
        assert!(rows(
            "WITH x AS (SELECT 1) DELETE FROM t WHERE a IN x RETURNING a"
        ));
        assert!(rows("PRAGMA synchronous"));
        assert!(rows("EXPLAIN QUERY PLAN SELECT 1"));
    }

    #[test]
    fn only_queries_are_reads() {
        let reads = |t: &str| Statement::parse(t).reads();
        assert!(reads("SELECT 1"));
        assert!(reads(" with x AS (SELECT 1) SELECT * FROM x"));
        assert!(!reads("WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x"));
        assert!(!reads("INSERT INTO t VALUES (1)"));
        assert!(!reads("PRAGMA synchronous = NORMAL"));
        assert!(!reads("BEGIN IMMEDIATE"));
    }

    #[test]
    fn writes_and_transactions_wait_for_the_writer() {
        let waits = |t: &str, tx| Statement::parse(t).waits_for_writer(tx);
        assert!(waits("BEGIN IMMEDIATE", false));
        assert!(waits("commit", false));
        assert!(waits("INSERT INTO t VALUES (1)", false));
        assert!(waits("SELECT 1", true));
        assert!(!waits("SELECT 1", false));
        assert!(!waits("WITH x AS (SELECT 1) SELECT * FROM x", false));
        assert!(waits(
            "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x",
            false
        ));
    }

    #[test]
    fn busy_timeout_pragmas_are_told_apart() {
        let sets = |t: &str| {
            matches!(
                kind(t),
                Kind::Pragma {
                    busy_timeout: true,
                    ..
                }
            )
        };
        assert!(sets("PRAGMA busy_timeout = 0"));
        assert!(sets("pragma BUSY_TIMEOUT=5000;"));
        assert!(sets("PRAGMA busy_timeout(100)"));
        assert!(sets("PRAGMA main.busy_timeout = 1"));
        assert!(!sets("PRAGMA busy_timeout"));
        assert!(!sets("PRAGMA synchronous = NORMAL"));
        assert!(!sets("SELECT 'PRAGMA busy_timeout'"));
        assert!(!sets("PRAGMA busy_timeouts = 1"));
    }

    #[test]
    fn a_libsql_server_runs_only_pragmas_that_read_or_touch_no_setting() {
        let runs = |t: &str| matches!(kind(t), Kind::Pragma { libsql: true, .. });
        // Refused by sqld 0.24 (checked against it: "unsupported statement").
        assert!(!runs("PRAGMA busy_timeout = 0"));
        assert!(!runs("PRAGMA synchronous = NORMAL"));
        assert!(!runs("pragma main.synchronous=FULL;"));
        assert!(!runs("PRAGMA journal_mode(WAL)"));
        assert!(!runs("PRAGMA optimize"));
        assert!(!runs("PRAGMA wal_checkpoint(TRUNCATE)"));
        // Run by it.
        assert!(runs("PRAGMA foreign_keys = ON"));
        assert!(runs("PRAGMA table_info(x)"));
        assert!(runs("PRAGMA synchronous"));
        assert!(runs("PRAGMA busy_timeout;"));
        assert!(runs("PRAGMA user_version = 3"));
    }

    #[test]
    fn begin_runs_immediate() {
        let run = |t: &str| Statement::parse(t).to_run().to_string();
        assert_eq!(run(" begin ;"), "BEGIN IMMEDIATE");
        assert_eq!(run("BEGIN TRANSACTION"), "BEGIN IMMEDIATE");
        assert_eq!(run("begin deferred"), "BEGIN IMMEDIATE");
        assert_eq!(run("BEGIN EXCLUSIVE"), "BEGIN EXCLUSIVE");
        assert_eq!(run("BEGIN IMMEDIATE"), "BEGIN IMMEDIATE");
        assert_eq!(run("beginning"), "beginning");
        assert_eq!(run("é"), "é");
    }

    #[test]
    fn transactions_open_and_end_in_plain_words() {
        assert!(Statement::parse("BEGIN").opens_plain_transaction());
        assert!(Statement::parse("begin immediate;").opens_plain_transaction());
        assert!(Statement::parse("BEGIN DEFERRED TRANSACTION").opens_plain_transaction());
        assert!(!Statement::parse("BEGIN EXCLUSIVE").opens_plain_transaction());
        assert!(!Statement::parse("SAVEPOINT s").opens_plain_transaction());
        assert_eq!(kind("commit;"), Kind::Commit { plain: true });
        assert_eq!(kind("END TRANSACTION"), Kind::Commit { plain: true });
        assert_eq!(kind("ROLLBACK"), Kind::Rollback { plain: true });
        assert_eq!(
            kind("rollback transaction;"),
            Kind::Rollback { plain: true }
        );
        assert_eq!(kind("ROLLBACK TO s"), Kind::Rollback { plain: false });
        for end in [
            "COMMIT",
            " commit;",
            "END TRANSACTION",
            "release sp1",
            "COMMIT\n",
        ] {
            assert!(Statement::parse(end).ends_transaction(), "{end:?}");
        }
        for other in ["INSERT INTO t VALUES (1)", "SELECT 1", "ROLLBACK", "ENDX"] {
            assert!(!Statement::parse(other).ends_transaction(), "{other:?}");
        }
    }

    #[test]
    fn a_batched_write_is_marked_at_its_end() {
        assert!(Statement::parse(format!("INSERT INTO t VALUES (1) {BATCHED}\n")).batched());
        assert!(!Statement::parse(format!("{BATCHED} INSERT INTO t VALUES (1)")).batched());
    }
}
