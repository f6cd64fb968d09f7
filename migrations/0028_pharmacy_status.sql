-- 0028: the pharmacy's status (docs/lifecycle.md, "The pharmacy's status"): what a pharmacy says it
-- is doing with a prescription, after the NHS Prescription Status Update codes, and the webhook
-- event that announces it.
--
-- Owners: the prescriptions component owns `pharmacy_statuses` (written in the same transaction
-- as the event's webhook rows and the patient's message); the notifications component owns
-- `webhook_later_events`.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

-- One row per status a pharmacy posted, never updated or deleted: the code (`with_pharmacy`,
-- `preparing`, `ready_to_collect`, `ready_to_dispatch`, `dispatched`, `collected`,
-- `not_dispensed`; no CHECK, so a later code needs no table rebuild: the component checks them),
-- the pharmacy and its name at the time, the pickup code (`ready_to_collect`) or the reason
-- (`not_dispensed`), when.
CREATE TABLE IF NOT EXISTS pharmacy_statuses (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    prescription_id INTEGER NOT NULL REFERENCES prescriptions (id),
    pharmacy_id     INTEGER NOT NULL REFERENCES pharmacies (id),
    pharmacy_name   TEXT    NOT NULL,
    code            TEXT    NOT NULL,
    pickup_code     TEXT,
    reason          TEXT,
    created_at      TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS pharmacy_statuses_by_prescription
    ON pharmacy_statuses (prescription_id, id);

-- Events a subscription chose that `webhook_events`' CHECK (0008) cannot hold
-- (`prescription.status_changed`, and later ones): read together with `webhook_events`.
CREATE TABLE IF NOT EXISTS webhook_later_events (
    webhook_id INTEGER NOT NULL REFERENCES webhooks (id),
    event      TEXT    NOT NULL,
    PRIMARY KEY (webhook_id, event)
);
