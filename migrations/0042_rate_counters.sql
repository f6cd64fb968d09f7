-- 0042: per-minute rate-limit counters in the database, for a deployment whose database is reached
-- over HTTP (issue 87: `database_url`; components/common/src/counters.rs). There the key-value
-- store is the scarcer resource (Akamai Functions allows an app 50 key-value writes a second),
-- and a counter's increment is one statement in the request's own round trip. On Spin's SQLite
-- the counters stay in the key-value store (0017) and this table stays empty. Owned by `common`'s
-- counters (the public verify's and the receipt check's calls; the jobs forget old minutes).
--
-- Safe to run more than once (`IF NOT EXISTS`).

CREATE TABLE IF NOT EXISTS rate_counters (
    key    TEXT    PRIMARY KEY,              -- `<prefix><minute>/<client>` (counters::key)
    minute INTEGER NOT NULL,                 -- Unix time / 60, from the key
    count  INTEGER NOT NULL
) WITHOUT ROWID;

-- The minutes that no longer count are forgotten by the jobs: found by this index.
CREATE INDEX IF NOT EXISTS rate_counters_by_minute ON rate_counters (minute);
