-- 0009: the digital seal (docs/verification.md). Every prescription issued from now on is sealed
-- at issue with the service's Ed25519 key: the signed message is `receta:rx:v1:<signature>`.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.
-- New tables only (SQLite has no `ADD COLUMN IF NOT EXISTS`). Owned by the prescriptions component;
-- the notifications component reads `prescription_seals` to put the seal in the email's link.

-- The seal of a prescription, written in its issuing transaction and never changed. Prescriptions
-- issued before this migration have none (`seal` is null in the API).
CREATE TABLE IF NOT EXISTS prescription_seals (
    prescription_id INTEGER PRIMARY KEY REFERENCES prescriptions (id),
    kid             TEXT    NOT NULL,  -- the key's id: first 16 hex of SHA-256 of its public key
    sig             TEXT    NOT NULL   -- Ed25519 signature, base64url without padding
);

-- The development signing key: used only while the `signing_key` variable is empty, generated at
-- first use (one row at most) and published, as `retired`, once a configured key takes over.
CREATE TABLE IF NOT EXISTS signing_keys (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    seed       TEXT    NOT NULL,  -- base64 of the 32-byte Ed25519 seed
    kid        TEXT    NOT NULL,
    created_at TEXT    NOT NULL
);

-- The public verify call's rate limit: one row per call and client address; every call deletes the
-- rows older than a minute, so the table holds the last minute only.
CREATE TABLE IF NOT EXISTS verify_calls (
    client     TEXT NOT NULL,  -- the client's IP address
    created_at TEXT NOT NULL   -- ISO 8601 UTC
);
CREATE INDEX IF NOT EXISTS verify_calls_by_client ON verify_calls (client, created_at);
CREATE INDEX IF NOT EXISTS verify_calls_by_time ON verify_calls (created_at);
