//! Schema migrations: the `.sql` files of a directory applied to the `default` database at
//! start-up, in file-name order, each exactly once, each in its own transaction, and recorded in
//! `_receta_migrations`. A migration whose file changed after it was applied is reported (not
//! re-run). Also Spin's `--sqlite` statements, run on every start without bookkeeping.

use std::path::Path;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

/// The bookkeeping table.
pub const TABLE: &str = "_receta_migrations";

/// What [`apply`] did.
#[derive(Debug, Default)]
pub struct Report {
    /// Files applied now.
    pub applied: Vec<String>,
    /// Files already applied before.
    pub skipped: usize,
}

/// Applies the pending `.sql` files of `dir` to the database at `db`.
pub fn apply(conn: &mut rusqlite::Connection, dir: &Path) -> Result<Report> {
    let mut report = Report::default();
    if !dir.is_dir() {
        return Ok(report);
    }
    conn.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {TABLE} (
            name TEXT PRIMARY KEY,
            sha256 TEXT NOT NULL,
            applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
        )"
    ))
    .with_context(|| format!("cannot create {TABLE}"))?;

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
        let recorded: Option<String> = conn
            .query_row(
                &format!("SELECT sha256 FROM {TABLE} WHERE name = ?1"),
                [&name],
                |row| row.get(0),
            )
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })
            .with_context(|| format!("cannot read {TABLE}"))?;
        if let Some(recorded) = recorded {
            if recorded != digest {
                eprintln!(
                    "receta: warning: migration {name} changed since it was applied (it is not re-run; add a new migration instead)"
                );
            }
            report.skipped += 1;
            continue;
        }
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .context("cannot begin a migration transaction")?;
        if let Err(e) = tx.execute_batch(&sql) {
            bail!("migration {} failed: {e}", path.display());
        }
        tx.execute(
            &format!("INSERT INTO {TABLE} (name, sha256) VALUES (?1, ?2)"),
            [&name, &digest],
        )
        .with_context(|| format!("cannot record migration {name}"))?;
        tx.commit()
            .with_context(|| format!("cannot commit migration {name}"))?;
        report.applied.push(name);
    }
    Ok(report)
}

/// Spin's `--sqlite` option: `@file.sql` runs a file, anything else is a statement.
pub fn run_sqlite_option(conn: &rusqlite::Connection, option: &str) -> Result<()> {
    let sql = match option.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --sqlite file {path}"))?,
        None => option.to_string(),
    };
    conn.execute_batch(&sql)
        .with_context(|| format!("--sqlite {option:?} failed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_once_in_order_and_fails_clearly() {
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
        let mut conn = rusqlite::Connection::open(dir.path().join("db")).unwrap();
        let r = apply(&mut conn, &m).unwrap();
        assert_eq!(r.applied, ["0001_a.sql", "0002_b.sql"]);
        let r = apply(&mut conn, &m).unwrap();
        assert!(r.applied.is_empty());
        assert_eq!(r.skipped, 2);
        let n: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);

        std::fs::write(
            m.join("0003_bad.sql"),
            "INSERT INTO t VALUES (3); INSERT INTO nope VALUES (1);",
        )
        .unwrap();
        let err = format!("{:#}", apply(&mut conn, &m).unwrap_err());
        assert!(
            err.contains("0003_bad.sql") && err.contains("nope"),
            "{err}"
        );
        // The failed migration left nothing behind.
        let n: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);
    }
}
