-- 0008: a prescription's life after issue: pharmacies (a third kind of caller), what they dispense
-- and reject, what medics cancel, the pharmacies' call log, and which events a webhook subscription
-- receives. See docs/lifecycle.md.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.
-- No column is added to an existing table (SQLite has no `ADD COLUMN IF NOT EXISTS`): what is new
-- lives in new tables, and the state columns `prescriptions.rx_status`, `rejected`,
-- `reason_of_rejected`, `bought` and `medications.bought`, `bought_qty` (0003) start being written.
--
-- Owners: the pharmacies component owns `pharmacies` and `pharmacy_calls`; the prescriptions
-- component owns `prescription_events` and `dispensed_medications` and writes the state columns;
-- the notifications component owns `webhook_events`. The auth component reads
-- `pharmacies.token_hash` to authenticate.

-- A pharmacy, registered by the API admin. Its token is shown once, at creation; only its SHA-256
-- is kept. `is_active` = 0 revokes the token at once.
CREATE TABLE IF NOT EXISTS pharmacies (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT    NOT NULL,
    legal_name TEXT    NOT NULL DEFAULT '',  -- razón social
    license    TEXT    NOT NULL DEFAULT '',  -- licencia sanitaria
    address    TEXT    NOT NULL DEFAULT '',
    zip_code   TEXT    NOT NULL DEFAULT '',
    state      TEXT    NOT NULL DEFAULT '',
    contact    TEXT    NOT NULL DEFAULT '',
    token_hash TEXT    NOT NULL UNIQUE,      -- SHA-256 of the token, lowercase hex
    is_active  INTEGER NOT NULL DEFAULT 1,
    created_at TEXT    NOT NULL,             -- ISO 8601 UTC
    updated_at TEXT    NOT NULL
);

-- What happened to a prescription after issue, in order: a pharmacy's dispense (a sale, with its
-- quantities in `dispensed_medications`), a pharmacy's rejection, or its medic's cancellation.
-- Written in the same transaction as the state columns it changes; never updated or deleted.
CREATE TABLE IF NOT EXISTS prescription_events (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    prescription_id INTEGER NOT NULL REFERENCES prescriptions (id),
    kind            TEXT    NOT NULL CHECK (kind IN ('dispense', 'rejection', 'cancellation')),
    pharmacy_id     INTEGER REFERENCES pharmacies (id),  -- dispenses and rejections
    pharmacy_name   TEXT    NOT NULL DEFAULT '',         -- as it was at the time
    medic_id        INTEGER REFERENCES medics (id),      -- cancellations
    sales_code      TEXT    NOT NULL DEFAULT '',         -- dispenses: the pharmacy's sale ticket
    reason          TEXT    NOT NULL DEFAULT '',         -- rejections and cancellations
    created_at      TEXT    NOT NULL                     -- ISO 8601 UTC
);
CREATE INDEX IF NOT EXISTS prescription_events_by_prescription
    ON prescription_events (prescription_id, id);

-- The units of each medication one dispense sold. The running total is `medications.bought_qty`,
-- which a dispense raises with a conditional UPDATE (never past `qty`) in the same transaction.
CREATE TABLE IF NOT EXISTS dispensed_medications (
    event_id      INTEGER NOT NULL REFERENCES prescription_events (id),
    medication_id INTEGER NOT NULL REFERENCES medications (id),
    qty           INTEGER NOT NULL CHECK (qty > 0),
    PRIMARY KEY (event_id, medication_id)
);

-- Every pharmacy call, answered or refused: who, which signature, what, the HTTP status, when.
-- A pharmacy scanning signatures shows up as a run of 404s, which also feeds its rate limit.
CREATE TABLE IF NOT EXISTS pharmacy_calls (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    pharmacy_id INTEGER NOT NULL REFERENCES pharmacies (id),
    signature   TEXT    NOT NULL,  -- as sent (cut to 128 characters)
    action      TEXT    NOT NULL CHECK (action IN ('lookup', 'dispense', 'reject')),
    status      INTEGER NOT NULL,  -- the HTTP status answered
    created_at  TEXT    NOT NULL   -- ISO 8601 UTC
);
CREATE INDEX IF NOT EXISTS pharmacy_calls_by_pharmacy ON pharmacy_calls (pharmacy_id, id);
CREATE INDEX IF NOT EXISTS pharmacy_calls_misses
    ON pharmacy_calls (pharmacy_id, status, created_at);

-- The events a webhook subscription receives. A subscription with no row here (every one registered
-- before this migration) receives `prescription.created` only, as it always did.
CREATE TABLE IF NOT EXISTS webhook_events (
    webhook_id INTEGER NOT NULL REFERENCES webhooks (id),
    event      TEXT    NOT NULL CHECK (event IN ('prescription.created', 'prescription.dispensed',
                                                  'prescription.rejected', 'prescription.cancelled')),
    PRIMARY KEY (webhook_id, event)
);
