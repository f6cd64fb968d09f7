-- 0033: only the person speaks for the person (issue 86; docs/patients.md, "Who speaks for whom").
-- Owned by the patients component.
--
-- `patients_by_curp_key` replaces 0026's `patients_by_curp`: a stored `curp` is normalised with every
-- character `common::curp::IGNORED` lists removed (ASCII and Unicode spaces, zero-width characters,
-- `_`, `-` and Unicode's dashes), then upper-cased, exactly as the Rust side does (`curp::normalised_sql`, character
-- for character: SQLite uses an index on an expression only for the same expression). 0026's
-- expression removed ASCII spaces only, so a CURP written with a no-break space was valid to Rust
-- and linked to nobody in SQL.
--
-- `record_links`: the records of the same person that a record's page proved its own. A row says:
-- on the page of a prescription of `patient_id` (`prescription_id`, the link used), the person
-- entered the code sent to the `channel` that `linked_id`'s own medic recorded on it
-- (`linked_id`'s email), at `confirmed_at`. Directed: it lets `patient_id`'s page speak for
-- `linked_id`, never the other way. Only while both records still carry the same valid CURP.
--
-- `link_codes`: the codes sent to confirm such a link, one per record and request. Only the
-- SHA-256 of `<patient_id>:<code>` is kept; thirty minutes, one use (`used_at`).
--
-- `link_misses`: each wrong code entered on a record's page, for the limit (5 an hour).
--
-- `counter_codes_by_prescription` and `counter_misses_by_pharmacy`: counter codes are now per
-- record (found through their prescription) and a pharmacy's misses are bounded across CURPs.
--
-- Safe to run more than once (`IF EXISTS`, `IF NOT EXISTS`).

DROP INDEX IF EXISTS patients_by_curp;

CREATE INDEX IF NOT EXISTS patients_by_curp_key ON patients (
    upper(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(curp, char(32), ''), char(9), ''), char(10), ''), char(13), ''), char(45), ''), char(95), ''), char(160), ''), char(8194), ''), char(8195), ''), char(8199), ''), char(8201), ''), char(8202), ''), char(8203), ''), char(8239), ''), char(12288), ''), char(65279), ''), char(8208), ''), char(8209), ''), char(8210), ''), char(8211), ''), char(8212), ''), char(8722), ''), char(65293), ''))
);

CREATE TABLE IF NOT EXISTS record_links (
    id              INTEGER PRIMARY KEY,
    patient_id      INTEGER NOT NULL REFERENCES patients (id),
    linked_id       INTEGER NOT NULL REFERENCES patients (id),
    channel         TEXT    NOT NULL CHECK (channel IN ('email')),
    prescription_id INTEGER NOT NULL REFERENCES prescriptions (id),
    confirmed_at    TEXT    NOT NULL,
    UNIQUE (patient_id, linked_id)
);

CREATE TABLE IF NOT EXISTS link_codes (
    id              INTEGER PRIMARY KEY,
    patient_id      INTEGER NOT NULL REFERENCES patients (id),
    linked_id       INTEGER NOT NULL REFERENCES patients (id),
    code_hash       TEXT    NOT NULL,   -- hex SHA-256 of '<patient_id>:<code>'
    channel         TEXT    NOT NULL CHECK (channel IN ('email')),
    prescription_id INTEGER NOT NULL REFERENCES prescriptions (id),
    created_at      TEXT    NOT NULL,
    expires_at      TEXT    NOT NULL,
    used_at         TEXT
);
CREATE INDEX IF NOT EXISTS link_codes_by_record ON link_codes (patient_id, created_at);

CREATE TABLE IF NOT EXISTS link_misses (
    id         INTEGER PRIMARY KEY,
    patient_id INTEGER NOT NULL,
    created_at TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS link_misses_by_record ON link_misses (patient_id, created_at);

CREATE INDEX IF NOT EXISTS counter_codes_by_prescription ON counter_codes (prescription_id, created_at);
CREATE INDEX IF NOT EXISTS counter_misses_by_pharmacy ON counter_misses (pharmacy, created_at);
