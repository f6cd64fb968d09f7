-- 0035: a prescription's terms and seal are columns of `prescriptions`, a sale's license and fill
-- columns of `prescription_events`, a product's legal class columns of `drugs` (issue 88), folded
-- from the one-to-one tables 0009 (`prescription_seals`) and 0012 (`prescription_terms`,
-- `dispense_details`, `drug_classes`) added when a file could not alter a table
-- (migrations/README.md). Owned by the prescriptions component.
--
-- `prescriptions`: `valid_until` (YYYY-MM-DD, the last day, Mexico City time) and `expires_at` (ISO
-- 8601 UTC, the end of that day) NULL when issued before 0012 (valid without limit); `fills`,
-- `fill_interval_days` and `antibiotic_repeat_reason` as signed at issue (before 0012: 1, 0, '');
-- `seal_kid`, `seal_sig` the service's seal (NULL before 0009, and while a draft awaits its e.firma).
-- `prescription_events`: a dispense's `pharmacy_license` at the time and the `fill` it belongs to
-- (before 0012: '' and 1). `drugs`: `fraccion` and `antibiotic` NULL when not declared.
-- The triggers of 0034 (issuing) and 0032 (a sale) are recreated to write the columns.
-- Runs once (the ledger), in one transaction: the data moved, the old tables dropped.

ALTER TABLE prescriptions ADD COLUMN valid_until TEXT;
ALTER TABLE prescriptions ADD COLUMN expires_at TEXT;
ALTER TABLE prescriptions ADD COLUMN fills INTEGER NOT NULL DEFAULT 1
    CHECK (fills BETWEEN 1 AND 12);
ALTER TABLE prescriptions ADD COLUMN fill_interval_days INTEGER NOT NULL DEFAULT 0
    CHECK (fill_interval_days BETWEEN 0 AND 90);
ALTER TABLE prescriptions ADD COLUMN antibiotic_repeat_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE prescriptions ADD COLUMN seal_kid TEXT;
ALTER TABLE prescriptions ADD COLUMN seal_sig TEXT;

UPDATE prescriptions SET
    (valid_until, expires_at, fills, fill_interval_days, antibiotic_repeat_reason) =
    (SELECT t.valid_until, t.expires_at, t.fills, t.fill_interval_days, t.antibiotic_repeat_reason
     FROM prescription_terms t WHERE t.prescription_id = prescriptions.id)
WHERE id IN (SELECT prescription_id FROM prescription_terms);
UPDATE prescriptions SET
    (seal_kid, seal_sig) =
    (SELECT s.kid, s.sig FROM prescription_seals s WHERE s.prescription_id = prescriptions.id)
WHERE id IN (SELECT prescription_id FROM prescription_seals);

ALTER TABLE prescription_events ADD COLUMN pharmacy_license TEXT NOT NULL DEFAULT '';
ALTER TABLE prescription_events ADD COLUMN fill INTEGER NOT NULL DEFAULT 1 CHECK (fill >= 1);

UPDATE prescription_events SET
    (pharmacy_license, fill) =
    (SELECT x.pharmacy_license, x.fill FROM dispense_details x
     WHERE x.event_id = prescription_events.id)
WHERE id IN (SELECT event_id FROM dispense_details);

ALTER TABLE drugs ADD COLUMN fraccion TEXT
    CHECK (fraccion IN ('I', 'II', 'III', 'IV', 'V', 'VI'));
ALTER TABLE drugs ADD COLUMN antibiotic INTEGER CHECK (antibiotic IN (0, 1));

UPDATE drugs SET
    (fraccion, antibiotic) =
    (SELECT c.fraccion, c.antibiotic FROM drug_classes c WHERE c.upc = drugs.upc)
WHERE upc IN (SELECT upc FROM drug_classes);

-- The issuing trigger of 0034, writing the terms and the seal with the prescription's row.
DROP TRIGGER prescription_issues_write;
CREATE TRIGGER prescription_issues_write INSTEAD OF INSERT ON prescription_issues
BEGIN
    INSERT INTO prescriptions
        (signature, medic_id, medic_email, hospital_id, hospital_patron, hospital_location, clinic,
         patient_id, patient_uid, patient_name, patient_email, patient_phone, patient_date_of_birth,
         patient_gender, diagnosis, extras, show_diagnosis, send_rx, created_at, sent, rx_status,
         sent_status, valid_until, expires_at, fills, fill_interval_days, antibiotic_repeat_reason,
         seal_kid, seal_sig)
    VALUES (NEW.signature, NEW.medic_id, NEW.medic_email, NEW.hospital_id, NEW.hospital_patron,
        NEW.hospital_location, NEW.clinic, NEW.patient_id, NEW.patient_uid, NEW.patient_name,
        NEW.patient_email, NEW.patient_phone, NEW.patient_date_of_birth, NEW.patient_gender,
        NEW.diagnosis, NEW.extras, NEW.show_diagnosis, NEW.send_rx, NEW.created_at, NULL,
        NEW.rx_status, NEW.sent_status, NEW.valid_until, NEW.expires_at, NEW.fills,
        NEW.fill_interval_days, NEW.antibiotic_repeat_reason,
        CASE WHEN NEW.draft_rfc IS NULL THEN NEW.seal_kid END,
        CASE WHEN NEW.draft_rfc IS NULL THEN NEW.seal_sig END);
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
    INSERT INTO prescription_documents (prescription_id, canonical, pdf)
    SELECT id, NEW.canonical, NEW.pdf FROM prescriptions WHERE signature = NEW.signature;
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

-- The sale trigger of 0032, writing the license and the fill on the sale's event.
DROP TRIGGER prescription_sales_write;
CREATE TRIGGER prescription_sales_write INSTEAD OF INSERT ON prescription_sales
BEGIN
    SELECT RAISE(ABORT, 'receta: the prescription changed while this sale was recorded')
    WHERE (SELECT COUNT(*) FROM json_each(NEW.items) j JOIN medications m
        ON m.id = json_extract(j.value, '$.medication') AND m.prescription_id = NEW.prescription_id
        WHERE json_extract(j.value, '$.qty') <= m.qty
          AND m.bought_qty + json_extract(j.value, '$.qty') <= m.qty * NEW.fills)
        != json_array_length(NEW.items);
    UPDATE medications SET
        bought_qty = bought_qty + (SELECT json_extract(j.value, '$.qty') FROM json_each(NEW.items) j
            WHERE json_extract(j.value, '$.medication') = medications.id),
        bought = (bought_qty + (SELECT json_extract(j.value, '$.qty') FROM json_each(NEW.items) j
            WHERE json_extract(j.value, '$.medication') = medications.id) = qty * NEW.fills)
    WHERE prescription_id = NEW.prescription_id
      AND id IN (SELECT json_extract(value, '$.medication') FROM json_each(NEW.items));
    INSERT INTO dispensed_medications (event_id, medication_id, qty)
    SELECT NEW.event_id, json_extract(value, '$.medication'), json_extract(value, '$.qty')
    FROM json_each(NEW.items) ORDER BY key;
    INSERT INTO dispensed_products
        (event_id, medication_id, gtin, lot, expiry, serial, substituted, substitution_reason)
    SELECT NEW.event_id, json_extract(value, '$.medication'), json_extract(value, '$.gtin'),
        json_extract(value, '$.lot'), json_extract(value, '$.expiry'),
        json_extract(value, '$.serial'), json_extract(value, '$.substituted'),
        json_extract(value, '$.substitution_reason')
    FROM json_each(NEW.items) WHERE json_extract(value, '$.says') = 1 ORDER BY key;
    UPDATE prescription_events SET pharmacy_license = NEW.pharmacy_license, fill = NEW.fill
    WHERE id = NEW.event_id;
    UPDATE prescriptions SET
        bought = NOT EXISTS (SELECT 1 FROM medications
            WHERE prescription_id = NEW.prescription_id AND bought_qty < qty * NEW.fills),
        rx_status = CASE WHEN EXISTS (SELECT 1 FROM medications
            WHERE prescription_id = NEW.prescription_id AND bought_qty < qty * NEW.fills)
            THEN NEW.partial ELSE NEW.done END
    WHERE id = NEW.prescription_id;
    DELETE FROM claims WHERE prescription_id = NEW.prescription_id;
    INSERT INTO receipts
        (digest, event_id, prescription_id, pharmacy_id, document, kid, sig, created_at)
    VALUES (NEW.receipt_digest, NEW.event_id, NEW.prescription_id, NEW.pharmacy_id,
        NEW.receipt_document, NEW.receipt_kid, NEW.receipt_sig, NEW.sold_at);
    INSERT OR IGNORE INTO stamp_queue
        (digest, subject, prescription_id, status, attempts, next_attempt_at, created_at,
         updated_at)
    VALUES (NEW.receipt_digest, 'receipt', NEW.prescription_id, 'pending', 0, NEW.sold_at,
        NEW.sold_at, NEW.sold_at);
    INSERT INTO access_log
        (prescription_id, action, actor, pharmacy_id, actor_name, actor_license, created_at)
    VALUES (NEW.prescription_id, 'dispense', 'pharmacy', NEW.pharmacy_id, NEW.pharmacy_name,
        NEW.pharmacy_license, NEW.sold_at);
    INSERT INTO outbox
        (kind, prescription_id, target, payload, status, attempts, next_attempt_at, created_at,
         updated_at)
    SELECT json_extract(value, '$.kind'), NEW.prescription_id, json_extract(value, '$.target'),
        json_extract(value, '$.payload'), 'pending', 0, NEW.sold_at, NEW.sold_at, NEW.sold_at
    FROM json_each(NEW.outbox) ORDER BY key;
END;

DROP TABLE prescription_terms;
DROP TABLE prescription_seals;
DROP TABLE dispense_details;
DROP TABLE drug_classes;
