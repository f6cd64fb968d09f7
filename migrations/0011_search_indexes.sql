-- 0011: searches that do not grow with a medic's history (docs/bench.md, "Searches").
--
-- `?search=` on a medic's prescriptions (patient name, patient email, diagnosis) and patients (name,
-- email) is a `LIKE '%…%'` over that medic's rows, and the prescription list counts every match. Read
-- through `prescriptions_by_medic` / `patients_by_medic`, every candidate row is fetched from the
-- table, where one medic's rows lie scattered among everyone's: one page read per row (554 rows took
-- ~1 ms more than 10). These indexes carry the searched columns next to `(medic_id, id)`, so the
-- count and the filter read one medic's contiguous index entries only (a few pages) and fetch just the
-- rows of the page they answer. Matching is unchanged: the same `LIKE`, so results and counts are
-- exactly what they were. (FTS5 trigram was measured and not taken: docs/bench.md, "Searches".)
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.
-- Owned by the components that own the tables: prescriptions, patients.

CREATE INDEX IF NOT EXISTS prescriptions_search_by_medic
    ON prescriptions (medic_id, id, patient_name, patient_email, diagnosis);
CREATE INDEX IF NOT EXISTS patients_search_by_medic
    ON patients (medic_id, id, name, email);

-- The `(medic_id, id)` indexes of 0003 stay: real Spin re-runs 0003 at every start, which would
-- rebuild them each time if a later file dropped them.
