-- 0020: NOM-151 constancias (docs/verification.md, "Constancias NOM-151"): an RFC 3161 timestamp,
-- by the timestamp authority (TSA/PSC) the operator configures, over the SHA-256 of each
-- prescription's canonical document (its `signature`) and of each dispense receipt (its `digest`).
--
-- `stamp_queue`: what is still to be stamped. A row is written in the transaction that wrote the
-- document (issue, sale), so nothing accepted is lost to a crash; the outbox worker (notifications
-- component) leases due rows, asks the TSA, and retries on the outbox's schedule until its last
-- attempt (`dead`). Its own table, not `outbox`, because `outbox.kind`'s CHECK (0003) cannot be
-- widened by a migration that real Spin re-runs at every start.
--
-- `constancias`: the TSA's reply (`TimeStampResp`, DER) exactly as received, after the service
-- checked it (granted, imprint = digest, the nonce it sent, the TSA's signature, and the chain to
-- `timestamp_ca` when set). Stored once, in the transaction that ends its queue row; immutable like
-- `receipts` (the triggers refuse any UPDATE or DELETE).
--
-- Both owned by the notifications component (it queues nothing: the prescriptions component writes
-- the queue rows with the documents, as it writes the outbox's); the prescriptions component reads
-- `constancias` for the `constancia` objects and the replies it serves.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

CREATE TABLE IF NOT EXISTS stamp_queue (
    digest          TEXT    PRIMARY KEY,  -- 64 lowercase hex: SHA-256 of the stamped bytes
    subject         TEXT    NOT NULL CHECK (subject IN ('prescription', 'receipt')),
    prescription_id INTEGER NOT NULL REFERENCES prescriptions (id),
    status          TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT    NOT NULL,     -- ISO 8601 UTC
    lease_until     TEXT,                 -- ISO 8601 UTC while a worker holds the row
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL,
    last_error      TEXT                  -- why the last attempt failed (refused replies included)
);
CREATE INDEX IF NOT EXISTS stamp_queue_due ON stamp_queue (status, next_attempt_at);

CREATE TABLE IF NOT EXISTS constancias (
    digest          TEXT    PRIMARY KEY,  -- the stamped SHA-256, as in `stamp_queue`
    subject         TEXT    NOT NULL CHECK (subject IN ('prescription', 'receipt')),
    prescription_id INTEGER NOT NULL REFERENCES prescriptions (id),
    reply           BLOB    NOT NULL,     -- the TimeStampResp (DER) as the TSA answered it
    gen_time        TEXT    NOT NULL,     -- the TSA's time (genTime), ISO 8601 UTC
    tsa             TEXT    NOT NULL,     -- the TSA, as its certificate names it
    serial          TEXT    NOT NULL,     -- the token's serial number (hex)
    created_at      TEXT    NOT NULL      -- when the service stored it
);
CREATE INDEX IF NOT EXISTS constancias_by_prescription ON constancias (prescription_id);

CREATE TRIGGER IF NOT EXISTS constancias_never_change BEFORE UPDATE ON constancias
BEGIN
    SELECT RAISE(ABORT, 'constancias are immutable');
END;

CREATE TRIGGER IF NOT EXISTS constancias_never_go BEFORE DELETE ON constancias
BEGIN
    SELECT RAISE(ABORT, 'constancias are immutable');
END;

-- Documents written before this file are queued too: every prescription and every receipt gets its
-- constancia once a timestamp authority is configured. (`INSERT OR IGNORE`: a second run adds
-- nothing, and a stamped or dead row stays as it is.)
INSERT OR IGNORE INTO stamp_queue
    (digest, subject, prescription_id, status, attempts, next_attempt_at, created_at, updated_at)
SELECT signature, 'prescription', id, 'pending', 0, created_at, created_at, created_at
FROM prescriptions;

INSERT OR IGNORE INTO stamp_queue
    (digest, subject, prescription_id, status, attempts, next_attempt_at, created_at, updated_at)
SELECT digest, 'receipt', prescription_id, 'pending', 0, created_at, created_at, created_at
FROM receipts;
