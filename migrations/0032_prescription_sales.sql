-- 0032: what a sale writes after its event, in one statement (docs/scale-out.md, "Round trips"),
-- as 0031 does for issuing. Owned by the prescriptions component.
--
-- A sale (docs/lifecycle.md) runs in `BEGIN IMMEDIATE … COMMIT`: one read of the prescription's
-- state, live claim and medications; the component's checks; its event (`INSERT … RETURNING id`,
-- whose id the receipt's signed document states); then this view's one `INSERT`, whose `INSTEAD
-- OF` trigger raises each medication's total, records the units sold and what was handed over,
-- the sale's details, the prescription's new state, closes the claim, stores the sealed receipt,
-- queues its constancia, writes the patient's access-log entry and the webhook rows. On a libSQL
-- server every statement is an HTTP round trip under the write lock: eleven and more became one.
--
-- `items`: a JSON array, in the sale's order, of `{medication, qty, says, gtin, lot, expiry,
-- serial, substituted, substitution_reason}` (`says` 1 when it said what was handed over: a
-- `dispensed_products` row). `outbox`: a JSON array of `{kind, target, payload}`, due at
-- `sold_at`. `partial` and `done`: the codes of the states the prescription may be left in.
--
-- A medication's total never passes `qty × fills`, nor rises by more than `qty` in one sale: the
-- component checked that under the write lock, and the trigger refuses the whole statement
-- (nothing written) if it would not hold, naming it "the prescription changed".
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

CREATE VIEW IF NOT EXISTS prescription_sales AS SELECT
    NULL AS event_id, NULL AS prescription_id, NULL AS fills, NULL AS items, NULL AS fill,
    NULL AS pharmacy_id, NULL AS pharmacy_name, NULL AS pharmacy_license, NULL AS partial,
    NULL AS done, NULL AS receipt_digest, NULL AS receipt_document, NULL AS receipt_kid,
    NULL AS receipt_sig, NULL AS sold_at, NULL AS outbox
WHERE 0;

CREATE TRIGGER IF NOT EXISTS prescription_sales_write INSTEAD OF INSERT ON prescription_sales
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
    INSERT INTO dispense_details (event_id, pharmacy_license, fill)
    VALUES (NEW.event_id, NEW.pharmacy_license, NEW.fill);
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
