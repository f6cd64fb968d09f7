-- 0003: patients, prescriptions (with their medications, signed documents and PDFs), the service's
-- drug catalog, and the outbox the notification worker delivers from.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.
--
-- Ownership: every patient and prescription row carries the `medic_id` of its owner, and every query
-- of the patients and prescriptions components filters on it.

-- A patient, owned by the medic who created it. `uid` is the service-assigned public id
-- (32 lowercase hex characters, 128 random bits, never all digits).
CREATE TABLE IF NOT EXISTS patients (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    uid                   TEXT    NOT NULL UNIQUE,
    medic_id              INTEGER NOT NULL REFERENCES medics (id),
    created_at            TEXT    NOT NULL,
    updated_at            TEXT    NOT NULL,
    name                  TEXT    NOT NULL,
    email                 TEXT    NOT NULL DEFAULT '', -- an address or another identifier (> 4 chars)
    date_of_birth         TEXT    NOT NULL,            -- YYYY-MM-DD
    external_patient_file TEXT    NOT NULL DEFAULT '',
    gender                TEXT    NOT NULL DEFAULT 'M' CHECK (gender IN ('M', 'F', 'O', 'H')),
    curp                  TEXT    NOT NULL DEFAULT '',
    phone                 TEXT    NOT NULL DEFAULT '',
    address               TEXT    NOT NULL DEFAULT '',
    state                 TEXT    NOT NULL DEFAULT '',
    zip_code              TEXT    NOT NULL DEFAULT '',
    location              TEXT    NOT NULL DEFAULT ''
);
-- A medic's patient list, in order, without a scan of everyone's patients.
CREATE INDEX IF NOT EXISTS patients_by_medic ON patients (medic_id, id);

-- The service's drug catalog, loaded by the API admin (`POST /api/v2/drugs/`) and seeded by 0004.
-- A prescription's medication with a UPC from here gets its `name` (as `drug`) and `category`.
CREATE TABLE IF NOT EXISTS drugs (
    upc        TEXT PRIMARY KEY CHECK (length(upc) BETWEEN 8 AND 14 AND upc NOT GLOB '*[^0-9]*'),
    name       TEXT NOT NULL,
    category   TEXT NOT NULL DEFAULT 'standard_drug' CHECK (category IN ('standard_drug', 'basic_drug')),
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS drugs_by_name ON drugs (name COLLATE NOCASE);

-- An issued prescription. Immutable once written except for its delivery and pharmacy state
-- (`sent`, `sent_status`, `rx_status`, `rejected`, `reason_of_rejected`, `bought`). The medic,
-- hospital and patient columns are snapshots taken at issue, the same data the signed document and
-- the PDF hold, so a later change to the patient does not change an issued prescription.
CREATE TABLE IF NOT EXISTS prescriptions (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    signature             TEXT    NOT NULL UNIQUE,     -- 64 lowercase hex: SHA-256 of the document
    medic_id              INTEGER NOT NULL REFERENCES medics (id),
    medic_email           TEXT    NOT NULL,
    hospital_id           INTEGER NOT NULL REFERENCES hospitals (id),
    hospital_patron       TEXT    NOT NULL,
    hospital_location     TEXT    NOT NULL,
    clinic                TEXT,                        -- the JSON value sent, NULL when absent
    patient_id            INTEGER NOT NULL REFERENCES patients (id),
    patient_uid           TEXT    NOT NULL,
    patient_name          TEXT    NOT NULL,
    patient_email         TEXT    NOT NULL,
    patient_phone         TEXT    NOT NULL,
    patient_date_of_birth TEXT    NOT NULL,
    patient_gender        TEXT    NOT NULL,
    diagnosis             TEXT    NOT NULL DEFAULT '',
    extras                TEXT    NOT NULL DEFAULT '',
    show_diagnosis        INTEGER NOT NULL,
    send_rx               INTEGER NOT NULL,
    created_at            TEXT    NOT NULL,            -- ISO 8601 UTC
    sent                  INTEGER,                     -- NULL until the email is sent, then 1
    -- State codes without CHECKs, so later issues can add values without rebuilding the table:
    -- rx_status 'available'; sent_status 'pending', 'not_sent', 'sent_email'.
    rx_status             TEXT    NOT NULL DEFAULT 'available',
    sent_status           TEXT    NOT NULL,
    rejected              INTEGER NOT NULL DEFAULT 0,
    reason_of_rejected    TEXT    NOT NULL DEFAULT '',
    bought                INTEGER NOT NULL DEFAULT 0
);
-- A medic's list, newest first, and a patient's prescriptions.
CREATE INDEX IF NOT EXISTS prescriptions_by_medic ON prescriptions (medic_id, id);
CREATE INDEX IF NOT EXISTS prescriptions_by_patient ON prescriptions (patient_id);

-- The medications of a prescription, in the order they were sent (`position` from 0).
CREATE TABLE IF NOT EXISTS medications (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    prescription_id INTEGER NOT NULL REFERENCES prescriptions (id),
    position        INTEGER NOT NULL,
    presentation    TEXT    NOT NULL,
    instructions    TEXT    NOT NULL,
    qty             INTEGER NOT NULL CHECK (qty > 0),
    drug_upc        TEXT    NOT NULL DEFAULT '',
    category        TEXT    NOT NULL CHECK (category IN ('standard_drug', 'basic_drug', 'unstructured_drug')),
    drug            TEXT    NOT NULL DEFAULT '',
    cost            REAL    NOT NULL DEFAULT 0,
    bought          INTEGER NOT NULL DEFAULT 0,
    bought_qty      INTEGER NOT NULL DEFAULT 0,
    order_id        INTEGER NOT NULL DEFAULT 0,
    qty_label       TEXT    NOT NULL,
    UNIQUE (prescription_id, position)
);

-- What was signed and what was rendered, kept apart from `prescriptions` so lists never read them.
-- `canonical` is the canonical JSON document whose SHA-256 is the signature; `pdf` the bytes rendered
-- once at issue (the PDF endpoint, the email attachment and `raw_size` all use these bytes).
CREATE TABLE IF NOT EXISTS prescription_documents (
    prescription_id INTEGER PRIMARY KEY REFERENCES prescriptions (id),
    canonical       TEXT NOT NULL,
    pdf             BLOB NOT NULL
);

-- Durable delivery queue, written in the same transaction as the prescription it is about.
-- A worker claims due `pending` rows (sets `lease_until`), delivers, then marks them `done`, or
-- reschedules them (`attempts` + 1, `next_attempt_at` with backoff, `last_error`), or gives up (`dead`).
--   kind 'email':   target = the patient's address; payload = {"signature", "to": [..], "cc": [..]}
--   kind 'webhook': target = the subscriber's URL;   payload = {"signature"}
CREATE TABLE IF NOT EXISTS outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    kind            TEXT    NOT NULL CHECK (kind IN ('email', 'webhook')),
    prescription_id INTEGER NOT NULL REFERENCES prescriptions (id),
    target          TEXT    NOT NULL,
    payload         TEXT    NOT NULL,                  -- JSON
    status          TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT    NOT NULL,                  -- ISO 8601 UTC
    lease_until     TEXT,                              -- ISO 8601 UTC while a worker holds the row
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL,
    last_error      TEXT                               -- NULL until a delivery fails
);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (status, next_attempt_at);
CREATE INDEX IF NOT EXISTS outbox_by_prescription ON outbox (prescription_id);
