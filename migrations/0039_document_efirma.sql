-- 0039: the prescriber's e.firma signature of a prescription is columns of its
-- `prescription_documents` row (issue 88), beside the document it signs, folded from the
-- one-to-one table 0022 (`prescription_efirma`) added when a file could not alter a table
-- (migrations/README.md). Owned by the prescriptions component.
--
-- `efirma_cms`: the CMS SignedData (DER, detached, over `canonical`) exactly as received, NULL for a
-- prescription not signed with the e.firma; `efirma_rfc`, `efirma_curp`, `efirma_serial`: what the
-- signer's certificate was checked to say; `efirma_signed_at` (ISO 8601 UTC: signingTime, else
-- the activation's time) and `efirma_activated_at`. Immutable once written, as 0022's table was:
-- the two triggers below refuse changing or deleting a signed document (and every document row
-- was already written once and never changed).
-- Runs once (the ledger), in one transaction: the data moved, the old table dropped.

ALTER TABLE prescription_documents ADD COLUMN efirma_cms BLOB;
ALTER TABLE prescription_documents ADD COLUMN efirma_rfc TEXT;
ALTER TABLE prescription_documents ADD COLUMN efirma_curp TEXT;
ALTER TABLE prescription_documents ADD COLUMN efirma_serial TEXT;
ALTER TABLE prescription_documents ADD COLUMN efirma_signed_at TEXT;
ALTER TABLE prescription_documents ADD COLUMN efirma_activated_at TEXT;

UPDATE prescription_documents SET
    (efirma_cms, efirma_rfc, efirma_curp, efirma_serial, efirma_signed_at, efirma_activated_at) =
    (SELECT e.cms, e.rfc, e.curp, e.serial, e.signed_at, e.activated_at
     FROM prescription_efirma e WHERE e.prescription_id = prescription_documents.prescription_id)
WHERE prescription_id IN (SELECT prescription_id FROM prescription_efirma);

DROP TRIGGER prescription_efirma_never_changes;
DROP TRIGGER prescription_efirma_never_goes;
DROP TABLE prescription_efirma;

CREATE TRIGGER prescription_documents_signed_never_change BEFORE UPDATE ON prescription_documents
WHEN OLD.efirma_cms IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'e.firma signatures are immutable');
END;
CREATE TRIGGER prescription_documents_signed_never_go BEFORE DELETE ON prescription_documents
WHEN OLD.efirma_cms IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'e.firma signatures are immutable');
END;
