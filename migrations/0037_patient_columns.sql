-- 0037: how a patient is reached is columns of `patients` (issue 88), folded from the one-to-one
-- table 0029 (`patient_contact`) added when a file could not alter a table (migrations/README.md).
-- Owned by the patients component.
--
-- `phone_e164`: the phone in E.164 as parsed when written ('' when it does not parse; NULL for a
-- patient written before 0029, parsed when read). `channels`: the chosen channel codes, comma
-- separated (NULL: the default). `whatsapp_opt_in_at`/`_by`, `whatsapp_withdrawn_at`/`_by`: the
-- WhatsApp opt-in and its withdrawal, when and by whom (NULL: never). 0030's view `patient_reach`
-- is recreated over the columns, with the same rows.
-- Runs once (the ledger), in one transaction: the data moved, the old table dropped.

ALTER TABLE patients ADD COLUMN phone_e164 TEXT;
ALTER TABLE patients ADD COLUMN channels TEXT;
ALTER TABLE patients ADD COLUMN whatsapp_opt_in_at TEXT;
ALTER TABLE patients ADD COLUMN whatsapp_opt_in_by TEXT;
ALTER TABLE patients ADD COLUMN whatsapp_withdrawn_at TEXT;
ALTER TABLE patients ADD COLUMN whatsapp_withdrawn_by TEXT;

UPDATE patients SET
    (phone_e164, channels, whatsapp_opt_in_at, whatsapp_opt_in_by, whatsapp_withdrawn_at,
     whatsapp_withdrawn_by) =
    (SELECT c.phone_e164, c.channels, c.whatsapp_opt_in_at, c.whatsapp_opt_in_by,
        c.whatsapp_withdrawn_at, c.whatsapp_withdrawn_by
     FROM patient_contact c WHERE c.patient_id = patients.id)
WHERE id IN (SELECT patient_id FROM patient_contact);

-- The channels a patient is reached on now (0030's view, over the columns).
DROP VIEW patient_reach;
CREATE VIEW patient_reach AS
SELECT id AS patient_id, 'email' AS channel, email AS target FROM patients
WHERE channels IS NULL OR instr(',' || channels || ',', ',email,') > 0
UNION ALL
SELECT id, 'sms', phone_e164 FROM patients
WHERE instr(',' || channels || ',', ',sms,') > 0 AND phone_e164 <> ''
UNION ALL
SELECT id, 'whatsapp', phone_e164 FROM patients
WHERE instr(',' || channels || ',', ',whatsapp,') > 0 AND phone_e164 <> ''
  AND whatsapp_opt_in_at IS NOT NULL
  AND (whatsapp_withdrawn_at IS NULL OR whatsapp_withdrawn_at < whatsapp_opt_in_at);

DROP TABLE patient_contact;
