-- 0036: a medic's RFC and CURP are columns of `medics`, and the intermediate authorities an e.firma
-- upload carried a column of `medic_efirma` (issue 88), folded from the one-to-one tables 0021
-- (`medic_identity`) and 0025 (`medic_efirma_chain`) added when a file could not alter a table
-- (migrations/README.md). Owned by the catalog component.
--
-- `medics.rfc`, `medics.curp`: upper case, NULL when the medic has none. `medic_efirma.intermediates`:
-- PEM, one or more CERTIFICATE blocks, NULL when the upload carried none. `medic_efirma` stays a
-- table of its own: a certificate comes (an upload), is replaced and goes (a DELETE), and its row
-- with it (docs/architecture.md, "Tables and their owners").
-- Runs once (the ledger), in one transaction: the data moved, the old tables dropped.

ALTER TABLE medics ADD COLUMN rfc TEXT;
ALTER TABLE medics ADD COLUMN curp TEXT;

UPDATE medics SET
    (rfc, curp) = (SELECT i.rfc, i.curp FROM medic_identity i WHERE i.medic_id = medics.id)
WHERE id IN (SELECT medic_id FROM medic_identity);

ALTER TABLE medic_efirma ADD COLUMN intermediates TEXT;

UPDATE medic_efirma SET
    intermediates = (SELECT c.intermediates FROM medic_efirma_chain c
                     WHERE c.medic_id = medic_efirma.medic_id)
WHERE medic_id IN (SELECT medic_id FROM medic_efirma_chain);

DROP TABLE medic_efirma_chain;
DROP TABLE medic_identity;
