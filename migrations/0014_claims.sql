-- 0014: claims (docs/lifecycle.md, "Claims"): a pharmacy holds a prescription while it dispenses, so
-- another pharmacy's claim or burn is refused (409) until the holder burns with the secret, releases
-- it, or the claim expires. At most one row per prescription: a new claim replaces an expired or
-- released one (`ON CONFLICT … DO UPDATE`), a burn or a release deletes it. Whether a claim is live
-- is decided by time (`expires_at` > now) inside each transaction: no worker expires rows. Owned by
-- the prescriptions component (the burn's transaction checks and closes the claim).
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

CREATE TABLE IF NOT EXISTS claims (
    prescription_id INTEGER PRIMARY KEY REFERENCES prescriptions (id),
    id              TEXT    NOT NULL,  -- 32 lowercase hex, shown to the pharmacy
    pharmacy_id     INTEGER NOT NULL REFERENCES pharmacies (id),
    pharmacy_name   TEXT    NOT NULL,  -- as it was when claimed
    secret_hash     TEXT    NOT NULL,  -- SHA-256 (hex) of the secret; the secret is shown once
    started_at      TEXT    NOT NULL,  -- ISO 8601 UTC
    expires_at      TEXT    NOT NULL   -- ISO 8601 UTC: live while after now
);
