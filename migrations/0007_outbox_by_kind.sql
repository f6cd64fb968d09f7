-- 0007: the cron worker's due-rows check when no email relay is configured looks at webhook rows
-- only; without this index it walked every pending email row (they stay pending until a relay is
-- configured), so its cost grew with the backlog. See `DUE_WEBHOOKS` in
-- components/notifications/src/outbox.rs.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

CREATE INDEX IF NOT EXISTS outbox_due_by_kind ON outbox (kind, status, next_attempt_at);
