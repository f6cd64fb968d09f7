-- 0026: the patient as one person at the pharmacy counter (docs/patients.md). Owned by the
-- patients component.
--
-- `patients_by_curp`: a patient's stored `curp` normalised as a CURP is compared (upper case, no
-- `-`, `_` or spaces): the records of every medic with one valid CURP, found through the index.
-- The expression is `curp::NORMALISED` in the patients component, character for character (SQLite
-- uses an index on an expression only for the same expression).
--
-- `counter_codes`: the short-lived codes a patient shows at a pharmacy counter with their CURP.
-- Only the SHA-256 of `<curp>:<code>` is kept. One use (`used_at`, `used_by` the pharmacy), ten
-- minutes (`expires_at`); a new code for the same CURP ends the earlier live ones (`used_at` set,
-- `used_by` NULL). `prescription_id`: the page it was asked from.
--
-- `counter_misses`: each code a pharmacy got wrong for a CURP (known or not), counted per CURP over
-- the last hour for the limit; rows older than a day are deleted by the next miss.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

CREATE INDEX IF NOT EXISTS patients_by_curp
    ON patients (upper(replace(replace(replace(trim(curp), '-', ''), '_', ''), ' ', '')));

CREATE TABLE IF NOT EXISTS counter_codes (
    id              INTEGER PRIMARY KEY,
    curp            TEXT    NOT NULL,
    code_hash       TEXT    NOT NULL,   -- hex SHA-256 of '<curp>:<code>'
    prescription_id INTEGER NOT NULL REFERENCES prescriptions (id),
    created_at      TEXT    NOT NULL,
    expires_at      TEXT    NOT NULL,
    used_at         TEXT,
    used_by         INTEGER REFERENCES pharmacies (id)
);
CREATE INDEX IF NOT EXISTS counter_codes_by_curp ON counter_codes (curp, created_at);

CREATE TABLE IF NOT EXISTS counter_misses (
    id         INTEGER PRIMARY KEY,
    curp       TEXT    NOT NULL,
    pharmacy   INTEGER NOT NULL,
    created_at TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS counter_misses_by_curp ON counter_misses (curp, created_at);
