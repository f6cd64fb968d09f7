-- 0023: whether the prescriber allows substitution, per medication (RIS art. 31: a pharmacy may
-- hand over another brand or a generic only as the prescriber allows; docs/lifecycle.md). Owned by
-- the prescriptions component.
--
-- `medication_no_substitution`: one row per medication the prescriber marked "No sustituible"
-- (`substitution_allowed: false` on the create), written in the issuing transaction. No row:
-- substitution allowed, the default, and every medication issued before this file. A new attribute
-- of `medications`, in its own table (migrations/README.md); only the exceptions are rows, so an
-- ordinary create writes nothing more.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

CREATE TABLE IF NOT EXISTS medication_no_substitution (
    medication_id INTEGER PRIMARY KEY REFERENCES medications (id) ON DELETE CASCADE
);
