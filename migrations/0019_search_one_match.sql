-- 0019: a prescription search tests one stored string per row instead of three columns.
--
-- `?search=` on a medic's prescriptions matches the patient's name, the patient's email or the
-- diagnosis (`LIKE '%…%'`, ASCII case folding). This index keeps, next to `(medic_id, id)`, the
-- three joined by the unit separator (U+001F): SQLite reads the joined string from the index and
-- runs one `LIKE` on it per row, not up to three. A term matches the joined string exactly when it
-- matches one of the three, since a match cannot span a separator the term does not hold, and no
-- term holds one (the gateway refuses control characters in `search`). Results and counts are
-- unchanged (components/prescriptions/src/read.rs). Measured natively (SQLite 3.54, the bench's
-- 50,000, a medic's ~928 rows, µs per statement): the count 143 → 103, the page's walk 168 → 109
-- (docs/bench.md, findings).
--
-- `prescriptions_search_by_medic` (0011) stays: real Spin re-runs 0011 at every start, which would
-- rebuild it each time if this file dropped it.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.
-- Owned by the prescriptions component.

CREATE INDEX IF NOT EXISTS prescriptions_match_by_medic
    ON prescriptions (medic_id, id, (patient_name || char(31) || patient_email || char(31) || diagnosis));
