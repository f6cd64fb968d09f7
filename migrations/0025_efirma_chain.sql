-- 0025: the intermediate authorities a medic's e.firma upload carried (docs/verification.md, "The
-- prescriber's e.firma"). Owned by the catalog component.
--
-- `medic_efirma_chain`: the certificates that came after the medic's own in the uploaded PEM (SAT
-- issues FIEL certificates under intermediate authorities), as a PEM bundle, kept only because they
-- lead from the registered certificate to `efirma_ca`: at upload and again when a draft's
-- signature is checked (a CMS need not carry them). At most one row per medic, written with
-- `medic_efirma` (a PUT replaces it, or deletes it when the upload carried none).
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

CREATE TABLE IF NOT EXISTS medic_efirma_chain (
    medic_id      INTEGER PRIMARY KEY REFERENCES medic_efirma (medic_id) ON DELETE CASCADE,
    intermediates TEXT    NOT NULL   -- PEM, one or more CERTIFICATE blocks
);
