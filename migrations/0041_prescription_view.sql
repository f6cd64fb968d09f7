-- 0041: `prescription_view`, a prescription as its reads see it, in one plain view (issue 88):
-- every column of `prescriptions`, its draft (`draft_…`, NULL when not a draft), its stored
-- document (`canonical`, the PDF's size `raw_size`) and the prescriber's e.firma (`efirma_…`), its
-- NOM-151 constancia (`constancia_time`, `constancia_tsa`), and what its events add: the fills
-- used (`fills_used`), the pharmacy statuses (`status_updates`) and the sales (`sales`), each a
-- JSON array in order. Owned by the prescriptions component, which reads through it instead of
-- assembling each read from fragments.
--
-- A view costs nothing SQLite need not do: it is flattened into each statement, a column a
-- statement does not name is never computed, and a `LEFT JOIN` on a key none of whose columns is
-- named is left out. `sales` is per prescription: a statement that returns one row per medication
-- reads it once through an uncorrelated `(SELECT sales FROM prescription_view WHERE …)`.
-- Runs once (the ledger).

CREATE VIEW prescription_view AS
SELECT p.*,
    dr.rfc AS draft_rfc, dr.serial AS draft_serial, dr.kid AS draft_kid, dr.sig AS draft_sig,
    dr.email AS draft_email, dr.expires_at AS draft_expires_at,
    d.canonical, length(d.pdf) AS raw_size,
    d.efirma_rfc, d.efirma_serial, d.efirma_signed_at,
    nc.gen_time AS constancia_time, nc.tsa AS constancia_tsa,
    (SELECT COUNT(*) FROM prescription_events e
     WHERE e.prescription_id = p.id AND e.kind = 'dispense') AS fills_used,
    (SELECT json_group_array(json_object('id', u.id, 'code', u.code, 'pharmacy_id', u.pharmacy_id,
        'pharmacy_name', u.pharmacy_name, 'pickup_code', u.pickup_code, 'reason', u.reason,
        'created_at', u.created_at))
     FROM (SELECT * FROM pharmacy_statuses u WHERE u.prescription_id = p.id ORDER BY u.id) u)
        AS status_updates,
    (SELECT json_group_array(json_object('event', s.event_id, 'sold_at', s.created_at,
        'pharmacy_name', s.pharmacy_name, 'pharmacy_license', s.pharmacy_license, 'fill', s.fill,
        'medication', s.medication_id, 'qty', s.qty, 'presentation', s.presentation))
     FROM (SELECT e.id AS event_id, e.created_at, e.pharmacy_name, e.pharmacy_license, e.fill,
            i.medication_id, i.qty, m.presentation
           FROM prescription_events e
           JOIN dispensed_medications i ON i.event_id = e.id
           JOIN medications m ON m.id = i.medication_id
           WHERE e.prescription_id = p.id AND e.kind = 'dispense' ORDER BY e.id, m.position) s)
        AS sales
FROM prescriptions p
LEFT JOIN prescription_drafts dr ON dr.prescription_id = p.id
LEFT JOIN prescription_documents d ON d.prescription_id = p.id
LEFT JOIN constancias nc ON nc.digest = p.signature;
