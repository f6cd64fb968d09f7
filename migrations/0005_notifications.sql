-- 0005: notifications: webhook subscriptions and the record of every delivery attempt of the outbox
-- (the `outbox` table itself is in 0003, written by the prescriptions component at issue).
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.
--
-- Owned by the notifications component, which also works the `outbox` rows and, when the relay has
-- accepted an email, sets `prescriptions.sent` = 1 and `prescriptions.sent_status` = 'sent_email' in
-- the same transaction that marks the email row done.
--
-- Outbox payloads (JSON) by kind:
--   'email':   {"signature", "to": [..], "cc": [..]}
--   'webhook': {"signature", "webhook_id": "msg_…", "subscription": <webhooks.id>}
--              (`webhook_id` is the Standard Webhooks `webhook-id`, the same on every attempt)

-- A webhook subscription, registered by the API admin (`POST /api/v2/webhooks/`). Deliveries are signed
-- with `secret` (`whsec_<base64>`, shown once), so it is kept as given, not hashed.
CREATE TABLE IF NOT EXISTS webhooks (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    url         TEXT    NOT NULL,
    secret      TEXT    NOT NULL,  -- '' once deleted
    created_at  TEXT    NOT NULL,  -- ISO 8601 UTC
    disabled_at TEXT,              -- a receiver answered 410 Gone: nothing more is sent
    deleted_at  TEXT               -- DELETE /api/v2/webhooks/<id>/: hidden, kept for the delivery history
);

-- The hospitals a subscription listens to, in the order registered.
CREATE TABLE IF NOT EXISTS webhook_hospitals (
    webhook_id  INTEGER NOT NULL REFERENCES webhooks (id),
    position    INTEGER NOT NULL,
    hospital_id INTEGER NOT NULL REFERENCES hospitals (id),
    PRIMARY KEY (webhook_id, position)
);
CREATE INDEX IF NOT EXISTS webhook_hospitals_by_hospital ON webhook_hospitals (hospital_id);

-- The medics a subscription listens to, in the order registered; `given` is what the admin sent (the
-- id or the email, as JSON text), `medic_id` what it resolved to.
CREATE TABLE IF NOT EXISTS webhook_medics (
    webhook_id INTEGER NOT NULL REFERENCES webhooks (id),
    position   INTEGER NOT NULL,
    medic_id   INTEGER NOT NULL REFERENCES medics (id),
    given      TEXT    NOT NULL,
    PRIMARY KEY (webhook_id, position)
);
CREATE INDEX IF NOT EXISTS webhook_medics_by_medic ON webhook_medics (medic_id);

-- Every delivery attempt of an outbox row: when, how long, and what came back.
CREATE TABLE IF NOT EXISTS outbox_attempts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    outbox_id   INTEGER NOT NULL REFERENCES outbox (id),
    number      INTEGER NOT NULL,  -- 1 for the first attempt (since the row was queued or replayed)
    started_at  TEXT    NOT NULL,  -- ISO 8601 UTC
    duration_ms INTEGER NOT NULL,
    status_code INTEGER,           -- the receiver's HTTP status; NULL when none came back
    error       TEXT               -- NULL on success
);
CREATE INDEX IF NOT EXISTS outbox_attempts_by_row ON outbox_attempts (outbox_id, id);
