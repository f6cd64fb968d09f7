-- 0034: a medication's legal class and whether it may be substituted are columns of
-- `medications` (issue 88), folded from the one-to-one tables 0012 (`medication_classes`) and 0023
-- (`medication_no_substitution`) added when a file could not alter a table (migrations/README.md).
-- Owned by the prescriptions component.
--
-- `fraccion`, `antibiotic`: as 0012 declared them, NULL when undeclared (every medication issued
-- before 0012). `substitution_allowed`: 0 when the prescriber marked it "No sustituible" (a row of
-- 0023's table), else 1. The issuing trigger of 0031 writes them with the medication's row.
-- Runs once (the ledger), in one transaction: the data moved, the old tables dropped.

ALTER TABLE medications ADD COLUMN fraccion TEXT CHECK (fraccion IN ('IV', 'V', 'VI'));
ALTER TABLE medications ADD COLUMN antibiotic INTEGER CHECK (antibiotic IN (0, 1));
ALTER TABLE medications ADD COLUMN substitution_allowed INTEGER NOT NULL DEFAULT 1
    CHECK (substitution_allowed IN (0, 1));

UPDATE medications SET
    fraccion = (SELECT c.fraccion FROM medication_classes c WHERE c.medication_id = medications.id),
    antibiotic = (SELECT c.antibiotic FROM medication_classes c
                  WHERE c.medication_id = medications.id)
WHERE id IN (SELECT medication_id FROM medication_classes);
UPDATE medications SET substitution_allowed = 0
WHERE id IN (SELECT medication_id FROM medication_no_substitution);

-- The issuing trigger of 0031, writing the medications' new columns instead of the two tables.
DROP TRIGGER prescription_issues_write;
CREATE TRIGGER prescription_issues_write INSTEAD OF INSERT ON prescription_issues
BEGIN
    INSERT INTO prescriptions
        (signature, medic_id, medic_email, hospital_id, hospital_patron, hospital_location, clinic,
         patient_id, patient_uid, patient_name, patient_email, patient_phone, patient_date_of_birth,
         patient_gender, diagnosis, extras, show_diagnosis, send_rx, created_at, sent, rx_status,
         sent_status)
    VALUES (NEW.signature, NEW.medic_id, NEW.medic_email, NEW.hospital_id, NEW.hospital_patron,
        NEW.hospital_location, NEW.clinic, NEW.patient_id, NEW.patient_uid, NEW.patient_name,
        NEW.patient_email, NEW.patient_phone, NEW.patient_date_of_birth, NEW.patient_gender,
        NEW.diagnosis, NEW.extras, NEW.show_diagnosis, NEW.send_rx, NEW.created_at, NULL,
        NEW.rx_status, NEW.sent_status);
    INSERT INTO medications
        (prescription_id, position, presentation, instructions, qty, drug_upc, category, drug,
         qty_label, fraccion, antibiotic, substitution_allowed)
    SELECT p.id, json_extract(m.value, '$.position'), json_extract(m.value, '$.presentation'),
        json_extract(m.value, '$.instructions'), json_extract(m.value, '$.qty'),
        json_extract(m.value, '$.drug_upc'), json_extract(m.value, '$.category'),
        json_extract(m.value, '$.drug'), json_extract(m.value, '$.qty_label'),
        json_extract(m.value, '$.fraccion'), json_extract(m.value, '$.antibiotic'),
        json_extract(m.value, '$.fixed') IS NOT 1
    FROM prescriptions p, json_each(NEW.medications) m
    WHERE p.signature = NEW.signature ORDER BY m.key;
    INSERT INTO prescription_terms
        (prescription_id, valid_until, expires_at, fills, fill_interval_days,
         antibiotic_repeat_reason)
    SELECT id, NEW.valid_until, NEW.expires_at, NEW.fills, NEW.fill_interval_days,
        NEW.antibiotic_repeat_reason
    FROM prescriptions WHERE signature = NEW.signature;
    INSERT INTO prescription_documents (prescription_id, canonical, pdf)
    SELECT id, NEW.canonical, NEW.pdf FROM prescriptions WHERE signature = NEW.signature;
    INSERT INTO prescription_seals (prescription_id, kid, sig)
    SELECT id, NEW.seal_kid, NEW.seal_sig FROM prescriptions
    WHERE signature = NEW.signature AND NEW.draft_rfc IS NULL;
    INSERT INTO prescription_drafts
        (prescription_id, rfc, serial, kid, sig, email, created_at, expires_at)
    SELECT id, NEW.draft_rfc, NEW.draft_serial, NEW.seal_kid, NEW.seal_sig, NEW.draft_email,
        NEW.created_at, NEW.draft_expires_at
    FROM prescriptions WHERE signature = NEW.signature AND NEW.draft_rfc IS NOT NULL;
    INSERT INTO outbox
        (kind, prescription_id, target, payload, status, attempts, next_attempt_at, created_at,
         updated_at)
    SELECT json_extract(o.value, '$.kind'), p.id, json_extract(o.value, '$.target'),
        json_extract(o.value, '$.payload'), 'pending', 0, NEW.created_at, NEW.created_at,
        NEW.created_at
    FROM prescriptions p, json_each(NEW.outbox) o
    WHERE p.signature = NEW.signature AND NEW.draft_rfc IS NULL ORDER BY o.key;
    INSERT INTO messages
        (channel, prescription_id, target, payload, status, attempts, next_attempt_at, created_at,
         updated_at)
    SELECT r.channel, p.id, r.target, json_object('signature', NEW.signature), 'pending', 0,
        NEW.created_at, NEW.created_at, NEW.created_at
    FROM prescriptions p JOIN patient_reach r ON r.patient_id = p.patient_id
    WHERE p.signature = NEW.signature AND NEW.draft_rfc IS NULL AND NEW.send_rx
      AND r.channel IN ('sms', 'whatsapp') ORDER BY r.channel;
    INSERT OR IGNORE INTO stamp_queue
        (digest, subject, prescription_id, status, attempts, next_attempt_at, created_at,
         updated_at)
    SELECT signature, 'prescription', id, 'pending', 0, NEW.created_at, NEW.created_at,
        NEW.created_at
    FROM prescriptions WHERE signature = NEW.signature AND NEW.draft_rfc IS NULL;
END;

DROP TABLE medication_classes;
DROP TABLE medication_no_substitution;
