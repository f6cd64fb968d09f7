-- 0022: the prescriber's e.firma on a prescription (docs/verification.md, "The prescriber's
-- e.firma"). Owned by the prescriptions component.
--
-- `prescription_drafts`: a prescription created with `"efirma": true`, stored but not issued. Its
-- rows in `prescriptions`, `medications`, `prescription_terms` and `prescription_documents` (the
-- PDF included, which prints the certificate below) are written as for any prescription; what
-- issuing adds (the seal in `prescription_seals`, the email, webhook and constancia rows) waits here
-- or is written at activation. While a row is here the prescription is a draft: pharmacies cannot
-- look it up, claim, dispense or reject it (409), and its medic cannot cancel it. Past `expires_at`
-- it is an expired draft, forever. Activation deletes the row, in the transaction that issues.
--
-- `prescription_efirma`: the medic's signature of an activated prescription: the CMS (DER, detached,
-- over the canonical document) exactly as received, and what it was checked to say. Immutable.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.
-- (So does 0020, whose backfill queues every prescription's constancia, drafts included, on each
-- start: a draft may be stamped early. The activation queues it with `INSERT OR IGNORE`.)

CREATE TABLE IF NOT EXISTS prescription_drafts (
    prescription_id INTEGER PRIMARY KEY REFERENCES prescriptions (id) ON DELETE CASCADE,
    rfc             TEXT    NOT NULL,  -- the registered certificate's RFC at creation (on the PDF)
    serial          TEXT    NOT NULL,  -- its number: the signer's must be this one
    kid             TEXT    NOT NULL,  -- the service's seal, moved to prescription_seals at
    sig             TEXT    NOT NULL,  --   activation (it is printed on the PDF already)
    email           TEXT,              -- the patient's email to queue at activation, or NULL
    created_at      TEXT    NOT NULL,  -- ISO 8601 UTC
    expires_at      TEXT    NOT NULL   -- created_at + efirma_draft_hours
);

CREATE TABLE IF NOT EXISTS prescription_efirma (
    prescription_id INTEGER PRIMARY KEY REFERENCES prescriptions (id),
    cms             BLOB    NOT NULL,  -- CMS SignedData (DER), as received
    rfc             TEXT    NOT NULL,
    curp            TEXT,
    serial          TEXT    NOT NULL,  -- the signer's certificate number
    signed_at       TEXT    NOT NULL,  -- ISO 8601 UTC: signingTime, else the activation's time
    activated_at    TEXT    NOT NULL
);

CREATE TRIGGER IF NOT EXISTS prescription_efirma_never_changes BEFORE UPDATE ON prescription_efirma
BEGIN
    SELECT RAISE(ABORT, 'e.firma signatures are immutable');
END;
CREATE TRIGGER IF NOT EXISTS prescription_efirma_never_goes BEFORE DELETE ON prescription_efirma
BEGIN
    SELECT RAISE(ABORT, 'e.firma signatures are immutable');
END;
