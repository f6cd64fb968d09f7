-- 0018: a pharmacy lookup's call-log row (and its access-log entry) goes through Spin's key-value
-- store (`default`) and is written into the logs in batches by `pharmacies.drain-calls`
-- (components/pharmacies/src/queue.rs): the lookup commits nothing to the database.
--
-- `pharmacy_calls_drained`: one claim per queued row written, so two drains at once (the outbox
-- worker and a reader) write it once; a claim outlives its key by ten minutes.
-- `pharmacy_calls_by_time`: the call list is newest first by time, since a queued row is written
-- after rows of later calls (a 404, a dispense).
--
-- Safe to run more than once: real Spin runs every `--sqlite @file` on each start.

CREATE TABLE IF NOT EXISTS pharmacy_calls_drained (
    queue_key  TEXT NOT NULL PRIMARY KEY,  -- `calls/<ISO 8601 time>/<16 hex digits>`
    drained_at TEXT NOT NULL               -- ISO 8601 UTC
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS pharmacy_calls_by_time ON pharmacy_calls (pharmacy_id, created_at, id);
