//! Schema migrations: the `.sql` files of a directory applied to the `default` database at
//! start-up, in file-name order, each exactly once, each in its own transaction, and recorded in
//! `_receta_migrations`. A migration whose file changed after it was applied is reported (not
//! re-run). Also Spin's `--sqlite` statements, run on every start without bookkeeping.
//!
//! Safe with several hosts starting at once against one shared (libSQL) database: each migration
//! takes the write lock (`BEGIN IMMEDIATE`) before it looks whether it was applied, so exactly
//! one host applies it and the others, waiting for the lock, then find it recorded.

use std::path::Path;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use crate::capability::sqlite::Connection;
use crate::capability::sqlite::bindings::{self, QueryResult, Value};
use crate::capability::sqlite::statement::Statement;

/// Tries of one migration before start-up fails, and the wait between them.
const ATTEMPTS: u32 = 10;
const RETRY_AFTER: std::time::Duration = std::time::Duration::from_millis(300);

/// The bookkeeping table.
pub const TABLE: &str = "_receta_migrations";
const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS _receta_migrations (
    name TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL,
    applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
)";

/// What [`apply`] did.
#[derive(Debug, Default)]
pub struct Report {
    /// Files applied now.
    pub applied: Vec<String>,
    /// Files already applied before (by this host or another).
    pub skipped: usize,
}

/// Applies the pending `.sql` files of `dir` over `conn`.
pub async fn apply(conn: &mut Connection, dir: &Path) -> Result<Report> {
    let mut report = Report::default();
    if !dir.is_dir() {
        return Ok(report);
    }
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list migrations in {}", dir.display()))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("cannot list migrations in {}", dir.display()))?;
    files.retain(|p| p.is_file() && p.extension().is_some_and(|e| e == "sql"));
    files.sort();

    for path in files {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .with_context(|| format!("migration file name is not UTF-8: {}", path.display()))?
            .to_string();
        let sql = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read migration {}", path.display()))?;
        let digest: String = Sha256::digest(sql.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut attempt = 1;
        let outcome = loop {
            let outcome = apply_one(conn, &name, &sql, &digest).await;
            if outcome.is_err() {
                let _ = run(conn, "ROLLBACK", vec![]).await;
            }
            match outcome {
                // A libSQL server that another node is migrating at the same moment (or a replica
                // still catching up with its primary) can fail a step; each try is all or
                // nothing, so trying again is safe. A wrong migration fails every time.
                Err(e) if attempt < ATTEMPTS => {
                    eprintln!(
                        "receta: migration {name}: {e:#}; trying again ({attempt}/{ATTEMPTS})"
                    );
                    attempt += 1;
                    tokio::time::sleep(RETRY_AFTER).await;
                }
                outcome => break outcome,
            }
        };
        match outcome.with_context(|| format!("migration {} failed", path.display()))? {
            Applied::Now => report.applied.push(name),
            Applied::Before { sha256 } => {
                if sha256 != digest {
                    eprintln!(
                        "receta: warning: migration {name} changed since it was applied (it is not re-run; add a new migration instead)"
                    );
                }
                report.skipped += 1;
            }
        }
    }
    Ok(report)
}

/// One statement on `conn`.
async fn run(
    conn: &mut Connection,
    sql: &str,
    parameters: Vec<Value>,
) -> Result<QueryResult, bindings::Error> {
    conn.execute(&Statement::parse(sql), parameters).await
}

enum Applied {
    Now,
    Before { sha256: String },
}

/// One migration under the write lock: looked up, then applied and recorded, or left alone.
async fn apply_one(conn: &mut Connection, name: &str, sql: &str, digest: &str) -> Result<Applied> {
    let io = |e: bindings::Error| anyhow::anyhow!("{e:?}");
    run(conn, "BEGIN IMMEDIATE", vec![]).await.map_err(io)?;
    // Inside the transaction: on a libSQL replica, a transaction runs on the primary, which may
    // not have replicated to this replica yet what another statement just created.
    run(conn, CREATE_TABLE, vec![])
        .await
        .map_err(io)
        .with_context(|| format!("cannot create {TABLE}"))?;
    let recorded = run(
        conn,
        &format!("SELECT sha256 FROM {TABLE} WHERE name = ?1"),
        vec![Value::Text(name.to_string())],
    )
    .await
    .map_err(io)
    .with_context(|| format!("cannot read {TABLE}"))?;
    if let Some(row) = recorded.rows.first() {
        run(conn, "ROLLBACK", vec![]).await.map_err(io)?;
        let sha256 = match row.values.first() {
            Some(Value::Text(s)) => s.clone(),
            _ => String::new(),
        };
        return Ok(Applied::Before { sha256 });
    }
    conn.execute_batch(sql).await?;
    run(
        conn,
        &format!("INSERT INTO {TABLE} (name, sha256) VALUES (?1, ?2)"),
        vec![Value::Text(name.into()), Value::Text(digest.into())],
    )
    .await
    .map_err(io)
    .with_context(|| format!("cannot record migration {name}"))?;
    run(conn, "COMMIT", vec![])
        .await
        .map_err(io)
        .with_context(|| format!("cannot commit migration {name}"))?;
    Ok(Applied::Now)
}

/// Spin's `--sqlite` option: `@file.sql` runs a file, anything else is a statement.
pub async fn run_sqlite_option(conn: &mut Connection, option: &str) -> Result<()> {
    let sql = match option.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --sqlite file {path}"))?,
        None => option.to_string(),
    };
    if sql.trim().is_empty() {
        return Ok(());
    }
    conn.execute_batch(&sql)
        .await
        .with_context(|| format!("--sqlite {option:?} failed"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::sqlite::Databases;
    use crate::capability::sqlite::config::Location;

    async fn count(conn: &mut Connection) -> i64 {
        let result = run(conn, "SELECT count(*) FROM t", vec![]).await.unwrap();
        match result.rows[0].values[0] {
            Value::Integer(n) => n,
            _ => panic!("not a count"),
        }
    }

    #[tokio::test]
    async fn applies_once_in_order_and_fails_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("migrations");
        std::fs::create_dir(&m).unwrap();
        std::fs::write(m.join("0002_b.sql"), "INSERT INTO t VALUES (2);").unwrap();
        std::fs::write(
            m.join("0001_a.sql"),
            "CREATE TABLE t (x); INSERT INTO t VALUES (1);",
        )
        .unwrap();
        std::fs::write(m.join("notes.txt"), "ignored").unwrap();
        let location = Location::File(dir.path().join("db"));
        let dbs = Databases::open([("default".to_string(), location)].into())
            .await
            .unwrap();
        let mut conn = dbs.get("default").unwrap().connect().unwrap();
        let r = apply(&mut conn, &m).await.unwrap();
        assert_eq!(r.applied, ["0001_a.sql", "0002_b.sql"]);
        let r = apply(&mut conn, &m).await.unwrap();
        assert!(r.applied.is_empty());
        assert_eq!(r.skipped, 2);
        assert_eq!(count(&mut conn).await, 2);

        std::fs::write(
            m.join("0003_bad.sql"),
            "INSERT INTO t VALUES (3); INSERT INTO nope VALUES (1);",
        )
        .unwrap();
        let err = format!("{:#}", apply(&mut conn, &m).await.unwrap_err());
        assert!(
            err.contains("0003_bad.sql") && err.contains("nope"),
            "{err}"
        );
        // The failed migration left nothing behind.
        assert_eq!(count(&mut conn).await, 2);
    }
}
