//! The formulary: the service's list of drugs by UPC (the API's "drug catalog", `/api/v2/drugs/`;
//! "catalog" in this codebase is the hospitals-and-medics component). Loaded by the API admin (all of
//! a load or none of it), searched by anyone with a token, and read by `issue` for the category and
//! name of a medication's UPC.

use common::codes::Coded;
use common::db::{Db, Param, Row, int, like_contains, opt_text, text};
use common::types::{Error, PageRequest};

use crate::bindings::exports::receta::prescriptions::prescriptions::{Drug, DrugLoad, DrugPage};

const EXISTS: &str = "SELECT COUNT(*) FROM drugs WHERE upc = ?";

/// `?1` upc, `?2` name, `?3` category, `?4` now, `?5` fracción or NULL, `?6` antibiotic or NULL:
/// a NULL class keeps what is stored (a load that does not mention the class leaves it as it was).
const UPSERT: &str = "INSERT INTO drugs (upc, name, category, updated_at, fraccion, antibiotic) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
    ON CONFLICT (upc) DO UPDATE SET name = excluded.name, category = excluded.category, \
    updated_at = excluded.updated_at, fraccion = COALESCE(excluded.fraccion, fraccion), \
    antibiotic = COALESCE(excluded.antibiotic, antibiotic)";

/// `?1` a name pattern or NULL, `?2` a UPC-prefix pattern or NULL.
const MATCHES: &str = "(?1 IS NULL OR d.name LIKE ?1 ESCAPE '\\' OR d.upc LIKE ?2 ESCAPE '\\')";

fn count_sql() -> String {
    format!("SELECT COUNT(*) FROM drugs d WHERE {MATCHES}")
}

fn page_sql() -> String {
    format!(
        "SELECT d.upc, d.name, d.category, d.fraccion, d.antibiotic FROM drugs d WHERE {MATCHES} \
         ORDER BY d.name COLLATE NOCASE, d.upc LIMIT ?3 OFFSET ?4"
    )
}

/// A catalog row with `upc`, `name`, `category`, `fraccion` and `antibiotic` columns.
pub fn from_row(r: &Row) -> anyhow::Result<Drug> {
    Ok(Drug {
        upc: r.string("upc")?,
        name: r.string("name")?,
        category: r.code("category")?,
        fraccion: r.opt_string("fraccion")?,
        antibiotic: r.opt_i64("antibiotic")?.map(|n| n != 0),
    })
}

pub fn load(drugs: Vec<Drug>) -> Result<DrugLoad, Error> {
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    db.transaction(|db| -> Result<DrugLoad, Error> {
        let mut result = DrugLoad {
            created: 0,
            updated: 0,
        };
        for d in &drugs {
            if db.scalar_i64(EXISTS, &[text(&d.upc)])? > 0 {
                result.updated += 1;
            } else {
                result.created += 1;
            }
            let antibiotic = d.antibiotic.map_or(Param::Null, |b| int(b.into()));
            db.execute(
                UPSERT,
                &[
                    text(&d.upc),
                    text(&d.name),
                    text(d.category.code()),
                    text(&now),
                    opt_text(d.fraccion.as_deref()),
                    antibiotic,
                ],
            )?;
        }
        Ok(result)
    })
}

pub fn search(search: Option<&str>, page: PageRequest) -> Result<DrugPage, Error> {
    let db = Db::open()?;
    let search = search.map(str::trim).filter(|s| !s.is_empty());
    let name = search.map(like_contains);
    // `like_contains` is `%…%`: drop the leading `%` for "UPC starts with".
    let prefix = name.as_deref().map(|p| p[1..].to_string());
    let filter = [opt_text(name.as_deref()), opt_text(prefix.as_deref())];
    let count = db.scalar_i64(&count_sql(), &filter)? as u64;
    let params = [
        filter[0].clone(),
        filter[1].clone(),
        int(page.limit.into()),
        int(page.offset.into()),
    ];
    let results = db.query(&page_sql(), &params, from_row)?;
    Ok(DrugPage { count, results })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = include_str!("../../../migrations/0004_seed_drugs.sql");

    /// The `(upc, name, category)` rows of the seed migration.
    fn seed_rows() -> Vec<(String, String, String)> {
        SEED.lines()
            .filter_map(|l| l.trim().strip_prefix("('"))
            .map(|l| {
                let parts: Vec<&str> = l.split("', '").collect();
                (
                    parts[0].to_string(),
                    parts[1].to_string(),
                    parts[2].to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn seed_codes_are_valid_in_store_gtins_and_distinct() {
        let rows = seed_rows();
        assert!(rows.len() >= 30, "a few dozen drugs, got {}", rows.len());
        let mut seen = std::collections::HashSet::new();
        for (upc, name, category) in &rows {
            assert!(common::gtin::is_in_store(upc), "{upc}");
            assert!(seen.insert(upc.clone()), "duplicate {upc}");
            assert!(!name.trim().is_empty());
            assert_eq!(category, "standard_drug");
        }
    }

    #[test]
    fn seed_is_idempotent() {
        assert!(SEED.contains("INSERT OR IGNORE INTO drugs"));
    }

    #[test]
    fn search_matches_names_anywhere_and_codes_by_prefix() {
        assert!(count_sql().contains("d.name LIKE ?1") && count_sql().contains("d.upc LIKE ?2"));
        let name = like_contains("750_");
        assert_eq!(&name[1..], "750\\_%");
    }
}
