//! Pharmacy campaigns (openapi/receta.json, decisions "Campaigns"): create, list, get, PATCH, DELETE for the API
//! admin, and the active ones for the patient landing. At most one campaign is the default: making a
//! new default clears the old one in the same transaction (a partial unique index backs it).

use common::db::{Db, Param, Row, boolean, int, is_unique_violation, placeholders, text};
use common::types::{Error, PageRequest};

use crate::bindings::exports::receta::catalog::campaigns::{
    Branch, Campaign, CampaignPage, CampaignPatch, NewCampaign,
};

const CAMPAIGN_COLUMNS: &str = "id, created_at, short_name, callback_redirect, main_site_redirect, \
    display_name, display_phone, display_contact, cta_link, is_default, is_active";

const INSERT_CAMPAIGN: &str = "INSERT INTO campaigns \
    (created_at, short_name, callback_redirect, main_site_redirect, display_name, display_phone, \
     display_contact, cta_link, is_default, is_active) \
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id";

/// A PATCH: every `?` after the id is NULL when the field is left as it is.
const UPDATE_CAMPAIGN: &str = "UPDATE campaigns SET \
    short_name = COALESCE(?2, short_name), callback_redirect = COALESCE(?3, callback_redirect), \
    main_site_redirect = COALESCE(?4, main_site_redirect), display_name = COALESCE(?5, display_name), \
    display_phone = COALESCE(?6, display_phone), display_contact = COALESCE(?7, display_contact), \
    cta_link = COALESCE(?8, cta_link), is_default = COALESCE(?9, is_default), \
    is_active = COALESCE(?10, is_active) \
    WHERE id = ?1";

/// Run before a campaign becomes the default (`?` = that campaign, or NULL for a new one).
const CLEAR_DEFAULT: &str =
    "UPDATE campaigns SET is_default = 0 WHERE is_default = 1 AND id IS NOT ?";

const CAMPAIGN_EXISTS: &str = "SELECT EXISTS (SELECT 1 FROM campaigns WHERE id = ?)";

const COUNT_ALL: &str = "SELECT COUNT(*) FROM campaigns";

fn select_one() -> String {
    format!("SELECT {CAMPAIGN_COLUMNS} FROM campaigns WHERE id = ?")
}

fn select_page() -> String {
    format!("SELECT {CAMPAIGN_COLUMNS} FROM campaigns ORDER BY id LIMIT ? OFFSET ?")
}

/// Campaigns the patient's landing shows at most, and branches of each: a catalog of any size
/// never breaks the page (docs/api-notes.md, "Patient landing and campaigns").
pub const LANDING_CAMPAIGNS: u32 = 20;
pub const LANDING_BRANCHES: u32 = 50;

/// The landing's list: the active ones, the default first, at most `LANDING_CAMPAIGNS`.
fn select_active() -> String {
    format!(
        "SELECT {CAMPAIGN_COLUMNS} FROM campaigns WHERE is_active = 1 ORDER BY is_default DESC, id \
         LIMIT {LANDING_CAMPAIGNS}"
    )
}

/// The first `LANDING_BRANCHES` branches of each of some campaigns.
fn landing_branches_sql(count: usize) -> String {
    let placeholders = placeholders(count);
    format!(
        "SELECT campaign_id, determinante, name, formato, estado, address FROM ( \
           SELECT *, ROW_NUMBER() OVER (PARTITION BY campaign_id ORDER BY position) AS n \
           FROM campaign_branches WHERE campaign_id IN ({placeholders})) \
         WHERE n <= {LANDING_BRANCHES} ORDER BY campaign_id, n"
    )
}

const INSERT_BRANCH: &str = "INSERT INTO campaign_branches \
    (campaign_id, position, determinante, name, formato, estado, address) VALUES (?, ?, ?, ?, ?, ?, ?)";

const DELETE_BRANCHES: &str = "DELETE FROM campaign_branches WHERE campaign_id = ?";

const DELETE_CAMPAIGN: &str = "DELETE FROM campaigns WHERE id = ?";

pub const SHORT_NAME_TAKEN: &str = "campaign with this short name already exists.";

/// The branches of some campaigns, in order.
fn branches_sql(count: usize) -> String {
    let placeholders = placeholders(count);
    format!(
        "SELECT campaign_id, determinante, name, formato, estado, address FROM campaign_branches \
         WHERE campaign_id IN ({placeholders}) ORDER BY campaign_id, position"
    )
}

fn from_row(r: &Row) -> anyhow::Result<Campaign> {
    Ok(Campaign {
        id: r.i64("id")?,
        short_name: r.string("short_name")?,
        branches: Vec::new(),
        callback_redirect: r.string("callback_redirect")?,
        main_site_redirect: r.string("main_site_redirect")?,
        display_name: r.string("display_name")?,
        display_phone: r.string("display_phone")?,
        display_contact: r.string("display_contact")?,
        cta_link: r.string("cta_link")?,
        is_default: r.bool("is_default")?,
        is_active: r.bool("is_active")?,
        created_at: r.string("created_at")?,
    })
}

fn branch_from_row(r: &Row) -> anyhow::Result<(i64, Branch)> {
    Ok((
        r.i64("campaign_id")?,
        Branch {
            determinante: r.i64("determinante")?,
            name: r.string("name")?,
            formato: r.string("formato")?,
            estado: r.string("estado")?,
            address: r.string("address")?,
        },
    ))
}

/// Fills in the branches of `campaigns` with one query.
fn with_branches(db: &Db, campaigns: Vec<Campaign>) -> anyhow::Result<Vec<Campaign>> {
    fill_branches(db, campaigns, branches_sql)
}

/// Fills in `campaigns`' branches with the statement `sql` makes for that many ids.
fn fill_branches(
    db: &Db,
    mut campaigns: Vec<Campaign>,
    sql: fn(usize) -> String,
) -> anyhow::Result<Vec<Campaign>> {
    if campaigns.is_empty() {
        return Ok(campaigns);
    }
    let ids: Vec<Param> = campaigns.iter().map(|c| int(c.id)).collect();
    for (id, branch) in db.query(&sql(ids.len()), &ids, branch_from_row)? {
        if let Some(c) = campaigns.iter_mut().find(|c| c.id == id) {
            c.branches.push(branch);
        }
    }
    Ok(campaigns)
}

fn store_branches(db: &Db, id: i64, branches: &[Branch]) -> anyhow::Result<()> {
    db.execute(DELETE_BRANCHES, &[int(id)])?;
    for (position, b) in branches.iter().enumerate() {
        db.execute(
            INSERT_BRANCH,
            &[
                int(id),
                int(position as i64),
                int(b.determinante),
                text(&b.name),
                text(&b.formato),
                text(&b.estado),
                text(&b.address),
            ],
        )?;
    }
    Ok(())
}

/// A taken short name is a 400 on `short_name`; anything else stays a 500.
fn unique_short_name(e: anyhow::Error) -> Error {
    if is_unique_violation(&e) && e.chain().any(|c| c.to_string().contains("short_name")) {
        Error::field("short_name", SHORT_NAME_TAKEN)
    } else {
        e.into()
    }
}

fn find(db: &Db, id: i64) -> Result<Campaign, Error> {
    let found = db.query_opt(&select_one(), &[int(id)], from_row)?;
    let found = found.ok_or_else(Error::not_found)?;
    Ok(with_branches(db, vec![found])?.remove(0))
}

pub fn create(input: NewCampaign) -> Result<Campaign, Error> {
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    let id = db.transaction(|db| -> Result<i64, Error> {
        if input.is_default {
            db.execute(CLEAR_DEFAULT, &[Param::Null])?;
        }
        let id = db
            .query_opt(
                INSERT_CAMPAIGN,
                &[
                    text(&now),
                    text(&input.short_name),
                    text(&input.callback_redirect),
                    text(&input.main_site_redirect),
                    text(&input.display_name),
                    text(&input.display_phone),
                    text(&input.display_contact),
                    text(&input.cta_link),
                    boolean(input.is_default),
                    boolean(input.is_active),
                ],
                |r| r.i64("id"),
            )
            .map_err(unique_short_name)?
            .ok_or_else(|| anyhow::anyhow!("INSERT … RETURNING returned no row"))?;
        store_branches(db, id, &input.branches)?;
        Ok(id)
    })?;
    find(&db, id)
}

pub fn list(page: PageRequest) -> Result<CampaignPage, Error> {
    let db = Db::open()?;
    let count = db.scalar_i64(COUNT_ALL, &[])? as u64;
    let rows = db.query(
        &select_page(),
        &[int(page.limit.into()), int(page.offset.into())],
        from_row,
    )?;
    Ok(CampaignPage {
        count,
        results: with_branches(&db, rows)?,
    })
}

pub fn get(id: i64) -> Result<Campaign, Error> {
    find(&Db::open()?, id)
}

pub fn update(id: i64, patch: CampaignPatch) -> Result<Campaign, Error> {
    let db = Db::open()?;
    db.transaction(|db| -> Result<(), Error> {
        if db.scalar_i64(CAMPAIGN_EXISTS, &[int(id)])? == 0 {
            return Err(Error::not_found());
        }
        if patch.is_default == Some(true) {
            db.execute(CLEAR_DEFAULT, &[int(id)])?;
        }
        let opt_text = |s: &Option<String>| s.as_deref().map_or(Param::Null, text);
        let opt_bool = |b: Option<bool>| b.map_or(Param::Null, boolean);
        db.execute(
            UPDATE_CAMPAIGN,
            &[
                int(id),
                opt_text(&patch.short_name),
                opt_text(&patch.callback_redirect),
                opt_text(&patch.main_site_redirect),
                opt_text(&patch.display_name),
                opt_text(&patch.display_phone),
                opt_text(&patch.display_contact),
                opt_text(&patch.cta_link),
                opt_bool(patch.is_default),
                opt_bool(patch.is_active),
            ],
        )
        .map_err(unique_short_name)?;
        if let Some(branches) = &patch.branches {
            store_branches(db, id, branches)?;
        }
        Ok(())
    })?;
    find(&db, id)
}

pub fn delete(id: i64) -> Result<(), Error> {
    let db = Db::open()?;
    db.transaction(|db| -> Result<(), Error> {
        if db.scalar_i64(CAMPAIGN_EXISTS, &[int(id)])? == 0 {
            return Err(Error::not_found());
        }
        db.execute(DELETE_BRANCHES, &[int(id)])?;
        db.execute(DELETE_CAMPAIGN, &[int(id)])?;
        Ok(())
    })
}

pub fn active() -> Result<Vec<Campaign>, Error> {
    let db = Db::open()?;
    let rows = db.query(&select_active(), &[], from_row)?;
    Ok(fill_branches(&db, rows, landing_branches_sql)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries() {
        assert!(select_active().contains("WHERE is_active = 1"));
        assert!(select_active().ends_with("LIMIT 20"));
        assert!(landing_branches_sql(2).contains("IN (?, ?)"));
        assert!(landing_branches_sql(1).contains("n <= 50"));
        assert!(branches_sql(2).contains("IN (?, ?)"));
    }
}
