//! The antibiotic register of a pharmacy (Acuerdo DOF 27-05-2010; docs/mexican-rules.md), in JSON
//! (paginated) or CSV (the whole period, for a spreadsheet or an inspector):
//!
//! - `GET /api/v2/pharmacy/register/` (the pharmacy's own token: its own sales only)
//! - `GET /api/v2/pharmacies/<id>/register/` (the API admin: any pharmacy's)
//!
//! `from` and `to` are `YYYY-MM-DD` days in Mexico City time, both included (default: the 30 days
//! up to today); at most `MAX_DAYS` days. `format=csv` answers `text/csv` with a header row; a cell
//! that begins with `=`, `+`, `-`, `@`, a tab or a carriage return is prefixed with `'` so that no
//! spreadsheet reads it as a formula (OWASP, "CSV Injection").

use common::db::Db;
use common::time::{Date, mexico_city_date, now_iso8601};
use common::types::Error;

use crate::bindings::prescriptions::{self, RegisterRow};
use crate::http::{Request, Response};

/// The longest period one call may ask for, in days.
const MAX_DAYS: i64 = 366;
/// The period when `from` is not given: this many days up to `to`.
const DEFAULT_DAYS: i64 = 30;

/// The CSV columns, in order: the JSON rows' field names.
const COLUMNS: [&str; 14] = [
    "sold_at",
    "drug_name",
    "drug_upc",
    "presentation",
    "qty",
    "medic_name",
    "medic_cedula_prof",
    "hospital_address",
    "signature",
    "sales_code",
    "gtin",
    "lot",
    "expiry",
    "substituted",
];

/// Answers the register of `pharmacy` for the request's period and format.
pub fn respond(req: &Request, pharmacy: i64) -> Result<Response, Error> {
    let (from, to) = period(req.query().get("from"), req.query().get("to"))?;
    match req.query().get("format") {
        None | Some("" | "json") => {
            let page = req.page()?;
            let found = prescriptions::antibiotic_register(
                Db::open()?.lend().as_deref(),
                pharmacy,
                &from.to_string(),
                &to.to_string(),
                Some(page),
            )?;
            Ok(Response::page(req, &page, found.count, &found.results))
        }
        Some("csv") => {
            let found = prescriptions::antibiotic_register(
                Db::open()?.lend().as_deref(),
                pharmacy,
                &from.to_string(),
                &to.to_string(),
                None,
            )?;
            Ok(Response::bytes(
                200,
                "text/csv; charset=utf-8",
                csv(&found.results).into_bytes(),
            )
            .with_header(
                "content-disposition",
                format!("attachment; filename=\"registro-antibioticos-{from}-{to}.csv\""),
            ))
        }
        Some(_) => Err(Error::field("format", "\"format\" must be json or csv.")),
    }
}

/// The days asked for: `from` and `to` as `YYYY-MM-DD`, `from` not after `to`, at most `MAX_DAYS`.
fn period(from: Option<&str>, to: Option<&str>) -> Result<(Date, Date), Error> {
    let day = |field: &str, value: &str| {
        Date::parse(value.trim()).ok_or_else(|| Error::field(field, "Enter a date as YYYY-MM-DD."))
    };
    let to = match to.filter(|s| !s.trim().is_empty()) {
        Some(s) => day("to", s)?,
        None => mexico_city_date(&now_iso8601())
            .ok_or_else(|| anyhow::anyhow!("the clock is out of range"))?,
    };
    let from = match from.filter(|s| !s.trim().is_empty()) {
        Some(s) => day("from", s)?,
        None => to.plus_days(1 - DEFAULT_DAYS).unwrap_or(to),
    };
    if from > to {
        return Err(Error::field("from", "Must not be after `to`."));
    }
    if to.days() - from.days() >= MAX_DAYS {
        return Err(Error::field(
            "from",
            format!("Ask for at most {MAX_DAYS} days at a time."),
        ));
    }
    Ok((from, to))
}

/// The rows as CSV (RFC 4180, CRLF line ends) with a header row.
fn csv(rows: &[RegisterRow]) -> String {
    let mut out = COLUMNS.join(",");
    out.push_str("\r\n");
    for r in rows {
        let qty = r.qty.to_string();
        let substituted = r.substituted.to_string();
        let none = String::new();
        let cells = [
            &r.sold_at,
            &r.drug_name,
            &r.drug_upc,
            &r.presentation,
            &qty,
            &r.medic_name,
            &r.medic_cedula_prof,
            &r.hospital_address,
            &r.signature,
            &r.sales_code,
            r.gtin.as_ref().unwrap_or(&none),
            r.lot.as_ref().unwrap_or(&none),
            r.expiry.as_ref().unwrap_or(&none),
            &substituted,
        ];
        let line: Vec<String> = cells.iter().map(|c| cell(c)).collect();
        out.push_str(&line.join(","));
        out.push_str("\r\n");
    }
    out
}

/// One CSV cell: neutralised when a spreadsheet would read it as a formula, quoted when needed.
fn cell(value: &str) -> String {
    let neutral = if value.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{value}")
    } else {
        value.to_string()
    };
    if neutral.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", neutral.replace('"', "\"\""))
    } else {
        neutral
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_neutralised_and_separators_quoted() {
        assert_eq!(cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        for f in ["+1", "-1", "@SUM(A1)", "\tx", "\rx"] {
            assert!(cell(f).trim_start_matches('"').starts_with('\''), "{f}");
        }
        assert_eq!(
            cell("Amoxicilina 500 mg, 12 cápsulas"),
            "\"Amoxicilina 500 mg, 12 cápsulas\""
        );
        assert_eq!(cell("plain"), "plain");
    }

    #[test]
    fn periods() {
        let (f, t) = period(Some("2026-11-01"), Some("2026-11-30")).unwrap();
        assert_eq!(
            (f.to_string(), t.to_string()),
            ("2026-11-01".into(), "2026-11-30".into())
        );
        assert!(period(Some("2026-12-01"), Some("2026-11-30")).is_err());
        assert!(period(Some("2026-11-31"), Some("2026-12-01")).is_err());
        assert!(period(Some("2025-01-01"), Some("2026-11-30")).is_err());
        let (f, t) = period(None, Some("2026-11-30")).unwrap();
        assert_eq!(t.days() - f.days(), DEFAULT_DAYS - 1);
    }
}
