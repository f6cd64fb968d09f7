-- 0010: `Idempotency-Key` on the creates (docs/api-notes.md, "Idempotent creates"): the first
-- response to a key is kept, per principal, for at least 24 hours, and answered again to a retry.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.
-- Owned by the gateway (`components/gateway/src/idempotency.rs`): an HTTP concern, not a domain's.

CREATE TABLE IF NOT EXISTS idempotency_keys (
    principal   TEXT    NOT NULL,  -- `medic:<id>`, `pharmacy:<id>` or `admin`
    key         TEXT    NOT NULL,  -- the `Idempotency-Key` header, as sent
    fingerprint TEXT    NOT NULL,  -- SHA-256 of the method, the path and the body
    status      INTEGER NOT NULL,  -- 0 while the first request runs, then its HTTP status
    body        BLOB,              -- the first response's body (JSON)
    created_at  TEXT    NOT NULL,  -- ISO 8601 UTC
    PRIMARY KEY (principal, key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_by_age ON idempotency_keys (created_at);
