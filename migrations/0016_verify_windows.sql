-- 0016: the public verify's rate limit as one counter per client address and minute, instead of one
-- row per call (0009's `verify_calls`). Counting a client's calls in the last minute walked every
-- row of that minute (up to the limit at best, every call at a high limit), and every call added a
-- row and deleted one; now a call reads two counters and adds one to its own (`verify.rs`,
-- docs/verification.md, "Rate limit"). Owned by the prescriptions component.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start
-- (and so re-creates 0009's empty `verify_calls` before this file drops it again).

CREATE TABLE IF NOT EXISTS verify_windows (
    client TEXT    NOT NULL,                 -- the caller's address
    minute INTEGER NOT NULL,                 -- Unix time / 60
    calls  INTEGER NOT NULL CHECK (calls >= 1),
    PRIMARY KEY (client, minute)
) WITHOUT ROWID;

-- Minutes older than the previous one are forgotten by every call: found by this index.
CREATE INDEX IF NOT EXISTS verify_windows_by_minute ON verify_windows (minute);

DROP TABLE IF EXISTS verify_calls;
