-- 0031: a prescription issued in one statement (docs/scale-out.md, "Round trips"). Owned by the
-- prescriptions component.
--
-- Issuing writes up to eleven tables: the prescription, its medications with their classes and the
-- ones that may not be substituted, its terms, its signed document with the PDF, and either its
-- seal, outbox rows, SMS and WhatsApp messages and constancia queue row, or (a create awaiting the
-- medic's e.firma) its draft.
-- On a libSQL server every statement is an HTTP round trip, and a `BEGIN IMMEDIATE … COMMIT`
-- around ten inserts held the write lock across twelve of them. `prescription_issues` is a view
-- with nothing in it: one `INSERT INTO prescription_issues` carries everything the component
-- prepared (the lists as JSON), and its `INSTEAD OF` trigger writes every table. A statement and
-- its triggers are atomic in SQLite, so the prescription is there whole or not at all, with no
-- transaction around it; its ids are read back by its signature.
--
-- `medications`: a JSON array, in order, of objects `{position, presentation, instructions, qty,
-- drug_upc, category, drug, qty_label, fraccion, antibiotic, fixed}` (`fraccion` and `antibiotic`
-- null when undeclared, `fixed` 1 when it may not be substituted). `outbox`: a JSON array of
-- `{kind, target, payload}` (payload the row's JSON text), queued due at `created_at`. `draft_rfc`
-- set: a draft (`draft_serial`, `draft_email`, `draft_expires_at`), whose seal waits in
-- `prescription_drafts`; NULL: issued (the seal, the outbox rows, the constancia queued, and, with
-- `send_rx`, one message per phone channel the patient is reached on, `patient_reach` of 0030).
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

CREATE VIEW IF NOT EXISTS prescription_issues AS SELECT
    NULL AS signature, NULL AS medic_id, NULL AS medic_email, NULL AS hospital_id,
    NULL AS hospital_patron, NULL AS hospital_location, NULL AS clinic, NULL AS patient_id,
    NULL AS patient_uid, NULL AS patient_name, NULL AS patient_email, NULL AS patient_phone,
    NULL AS patient_date_of_birth, NULL AS patient_gender, NULL AS diagnosis, NULL AS extras,
    NULL AS show_diagnosis, NULL AS send_rx, NULL AS created_at, NULL AS rx_status,
    NULL AS sent_status, NULL AS medications, NULL AS valid_until, NULL AS expires_at,
    NULL AS fills, NULL AS fill_interval_days, NULL AS antibiotic_repeat_reason,
    NULL AS canonical, NULL AS pdf, NULL AS seal_kid, NULL AS seal_sig, NULL AS outbox,
    NULL AS draft_rfc, NULL AS draft_serial, NULL AS draft_email, NULL AS draft_expires_at
WHERE 0;

CREATE TRIGGER IF NOT EXISTS prescription_issues_write INSTEAD OF INSERT ON prescription_issues
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
         qty_label)
    SELECT p.id, json_extract(m.value, '$.position'), json_extract(m.value, '$.presentation'),
        json_extract(m.value, '$.instructions'), json_extract(m.value, '$.qty'),
        json_extract(m.value, '$.drug_upc'), json_extract(m.value, '$.category'),
        json_extract(m.value, '$.drug'), json_extract(m.value, '$.qty_label')
    FROM prescriptions p, json_each(NEW.medications) m
    WHERE p.signature = NEW.signature ORDER BY m.key;
    INSERT INTO medication_classes (medication_id, fraccion, antibiotic)
    SELECT md.id, json_extract(m.value, '$.fraccion'), json_extract(m.value, '$.antibiotic')
    FROM prescriptions p JOIN medications md ON md.prescription_id = p.id
    JOIN json_each(NEW.medications) m ON json_extract(m.value, '$.position') = md.position
    WHERE p.signature = NEW.signature;
    INSERT INTO medication_no_substitution (medication_id)
    SELECT md.id
    FROM prescriptions p JOIN medications md ON md.prescription_id = p.id
    JOIN json_each(NEW.medications) m ON json_extract(m.value, '$.position') = md.position
    WHERE p.signature = NEW.signature AND json_extract(m.value, '$.fixed') = 1;
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
