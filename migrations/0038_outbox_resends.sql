-- 0038: a resend is columns of its `outbox` row (issue 88), folded from the one-to-one table 0013
-- (`resends`) added when a file could not alter a table (migrations/README.md). Owned by the
-- notifications component.
--
-- `resent_by`: who asked for the resend ('admin', or 'medic:<id>'), NULL for every email and
-- webhook that is not one; `resent_to`: how many recipients it went to (to + cc). The resend's time
-- is the row's `created_at` (0013's `at` was written from the same instant) and its prescription
-- the row's. The two resend limits count over the last hour through the partial indexes below.
-- Runs once (the ledger), in one transaction: the data moved, the old table dropped.

ALTER TABLE outbox ADD COLUMN resent_by TEXT;
ALTER TABLE outbox ADD COLUMN resent_to INTEGER CHECK (resent_to >= 1);

UPDATE outbox SET
    (resent_by, resent_to) =
    (SELECT r.sender, r.recipients FROM resends r WHERE r.outbox_id = outbox.id)
WHERE id IN (SELECT outbox_id FROM resends);

CREATE INDEX outbox_resends_by_prescription ON outbox (prescription_id, created_at)
    WHERE resent_by IS NOT NULL;
CREATE INDEX outbox_resends_by_sender ON outbox (resent_by, created_at)
    WHERE resent_by IS NOT NULL;

DROP TABLE resends;
