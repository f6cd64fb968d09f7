-- 0040: a medic's e.firma certificate is columns of `medics` (issue 88), folded from the
-- one-to-one table 0021 (`medic_efirma`, with 0036's `intermediates`) added when a file could not
-- alter a table (migrations/README.md). Owned by the catalog component.
--
-- `efirma_certificate`: the registered certificate (DER), NULL while the medic has none (never
-- registered, or withdrawn: a withdrawal clears every `efirma_…` column); `efirma_serial` (SAT's
-- certificate number, else hex), `efirma_issuer` (the issuing authority's common name),
-- `efirma_rfc`, `efirma_curp`, `efirma_not_before`, `efirma_not_after` (ISO 8601 UTC) and
-- `efirma_registered_at` as read at the upload; `efirma_intermediates` the authorities it carried
-- (PEM), NULL when none.
-- Runs once (the ledger), in one transaction: the data moved, the old table dropped.

ALTER TABLE medics ADD COLUMN efirma_certificate BLOB;
ALTER TABLE medics ADD COLUMN efirma_serial TEXT;
ALTER TABLE medics ADD COLUMN efirma_issuer TEXT;
ALTER TABLE medics ADD COLUMN efirma_rfc TEXT;
ALTER TABLE medics ADD COLUMN efirma_curp TEXT;
ALTER TABLE medics ADD COLUMN efirma_not_before TEXT;
ALTER TABLE medics ADD COLUMN efirma_not_after TEXT;
ALTER TABLE medics ADD COLUMN efirma_registered_at TEXT;
ALTER TABLE medics ADD COLUMN efirma_intermediates TEXT;

UPDATE medics SET
    (efirma_certificate, efirma_serial, efirma_issuer, efirma_rfc, efirma_curp, efirma_not_before,
     efirma_not_after, efirma_registered_at, efirma_intermediates) =
    (SELECT e.certificate, e.serial, e.issuer, e.rfc, e.curp, e.not_before, e.not_after,
        e.registered_at, e.intermediates
     FROM medic_efirma e WHERE e.medic_id = medics.id)
WHERE id IN (SELECT medic_id FROM medic_efirma);

DROP TABLE medic_efirma;
