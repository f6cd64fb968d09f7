-- 0013: who resent a prescription's email, and to how many recipients, so resends stay under their
-- limits across nodes (docs/notifications.md, "Resend limits"). One row per resent email: a new
-- attribute of its `outbox` row, keyed by the row's id (migrations/README.md). The create's own
-- email has no row: it is not a resend. Owned by the notifications component.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

CREATE TABLE IF NOT EXISTS resends (
    outbox_id       INTEGER PRIMARY KEY REFERENCES outbox (id) ON DELETE CASCADE,
    prescription_id INTEGER NOT NULL REFERENCES prescriptions (id),
    sender          TEXT    NOT NULL,                          -- 'admin', or 'medic:<id>'
    recipients      INTEGER NOT NULL CHECK (recipients >= 1),  -- to + cc
    at              TEXT    NOT NULL                           -- ISO 8601 UTC
);

-- The two limits each count the last hour: of one prescription, and of one sender.
CREATE INDEX IF NOT EXISTS resends_by_prescription ON resends (prescription_id, at);
CREATE INDEX IF NOT EXISTS resends_by_sender ON resends (sender, at);
