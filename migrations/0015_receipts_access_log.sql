-- 0015: dispense receipts and the patient's access log (docs/lifecycle.md, "Receipts" and "Who
-- looked"). Both owned by the prescriptions component, both written in the transaction of the change
-- they record (a read's log row in its own statement).
--
-- `receipts`: one per dispense (`prescription_events` row of kind `dispense`). `document` is the
-- canonical JSON exactly as it was sealed; `digest` its SHA-256 (hex); `sig` the Ed25519 signature
-- (base64url) of `receta:dispense:v1:<digest>` by the key `kid`. Immutable: the triggers refuse any
-- UPDATE or DELETE, so a change can only happen outside the service, and then the stored document
-- no longer hashes to its digest (tamper evidence, as for prescriptions).
--
-- `access_log`: who looked at or changed a prescription (NOM-024-SSA3: a log of who read or changed
-- a health record), shown to the patient on `/rx/<signature>`. `actor` is `pharmacy` (with its name
-- and licencia sanitaria at the time), `medic` (the issuing medic: the only medic who can act on a
-- prescription, named from its signed document) or `admin` (the API admin). Append-only.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

CREATE TABLE IF NOT EXISTS receipts (
    digest          TEXT    PRIMARY KEY,  -- 64 lowercase hex: SHA-256 of `document`
    event_id        INTEGER NOT NULL UNIQUE REFERENCES prescription_events (id),
    prescription_id INTEGER NOT NULL REFERENCES prescriptions (id),
    pharmacy_id     INTEGER NOT NULL REFERENCES pharmacies (id),
    document        TEXT    NOT NULL,     -- the canonical JSON (JCS), as sealed
    kid             TEXT    NOT NULL,
    sig             TEXT    NOT NULL,     -- base64url, no padding
    created_at      TEXT    NOT NULL      -- ISO 8601 UTC: the sale's time
);

CREATE TRIGGER IF NOT EXISTS receipts_never_change BEFORE UPDATE ON receipts
BEGIN
    SELECT RAISE(ABORT, 'receipts are immutable');
END;

CREATE TRIGGER IF NOT EXISTS receipts_never_go BEFORE DELETE ON receipts
BEGIN
    SELECT RAISE(ABORT, 'receipts are immutable');
END;

CREATE TABLE IF NOT EXISTS access_log (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    prescription_id INTEGER NOT NULL REFERENCES prescriptions (id),
    action          TEXT    NOT NULL
        CHECK (action IN ('lookup', 'claim', 'release', 'dispense', 'reject', 'cancel', 'read')),
    actor           TEXT    NOT NULL CHECK (actor IN ('pharmacy', 'medic', 'admin')),
    pharmacy_id     INTEGER REFERENCES pharmacies (id),  -- pharmacies only
    actor_name      TEXT    NOT NULL DEFAULT '',         -- pharmacies: the name at the time
    actor_license   TEXT    NOT NULL DEFAULT '',         -- pharmacies: the licencia sanitaria
    created_at      TEXT    NOT NULL                     -- ISO 8601 UTC
);

CREATE INDEX IF NOT EXISTS access_log_by_prescription ON access_log (prescription_id, id);
