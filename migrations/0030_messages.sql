-- 0030: the patient's SMS and WhatsApp messages (docs/notifications.md, "SMS and WhatsApp").
-- `messages` is owned by the notifications component (it sends them and records the providers'
-- receipts); the prescriptions component inserts rows in the transactions that owe them (the
-- transactional outbox, as `outbox`): an issued prescription (migration 0031's trigger, or a
-- draft's activation) and a pharmacy's `ready_to_collect` or `not_dispensed` status.
-- `patient_reach` is owned by the patients component: the channels a patient can be reached on now.
--
-- A message row is a third use of the leased queue (`common::queue`: `status`, `attempts`,
-- `next_attempt_at`, `lease_until`, `last_error`). `channel` 'sms' or 'whatsapp'; `target` the
-- patient's phone in E.164; `payload` JSON `{"signature"}` (the prescription was issued) or
-- `{"signature", "status": {"status", "pharmacy": {"id", "name"}, "pickup_code", "reason"}}` (what
-- a pharmacy said). `sending` is the attempt number while its request is in flight: a row leased
-- again with it set was cut off by a crash mid-request and is not sent again (it may have gone
-- out). `provider_id` the provider's id for it (WhatsApp's `wamid…`, Twilio's `SM…`);
-- `receipt` the provider's last word on it (`sent`, `delivered`, `read`, `failed`), at
-- `receipt_at`, with `receipt_error` for a failure.
--
-- `patient_reach`: one row per channel a patient is reached on: `email` while the chosen channels
-- (`patient_contact.channels`, NULL: the default) include it; `sms` while chosen and the phone
-- parses; `whatsapp` while chosen, the phone parses and the opt-in is recorded and not withdrawn.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

CREATE TABLE IF NOT EXISTS messages (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    channel         TEXT    NOT NULL CHECK (channel IN ('sms', 'whatsapp')),
    prescription_id INTEGER NOT NULL REFERENCES prescriptions (id),
    target          TEXT    NOT NULL,
    payload         TEXT    NOT NULL,
    status          TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT    NOT NULL,
    lease_until     TEXT,
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL,
    last_error      TEXT,
    sending         INTEGER,
    provider_id     TEXT,
    receipt         TEXT    CHECK (receipt IN ('sent', 'delivered', 'read', 'failed')),
    receipt_at      TEXT,
    receipt_error   TEXT
);
CREATE INDEX IF NOT EXISTS messages_due ON messages (status, next_attempt_at);
CREATE INDEX IF NOT EXISTS messages_by_prescription ON messages (prescription_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS messages_by_provider_id ON messages (channel, provider_id);

CREATE VIEW IF NOT EXISTS patient_reach AS
SELECT pa.id AS patient_id, 'email' AS channel, pa.email AS target
FROM patients pa LEFT JOIN patient_contact c ON c.patient_id = pa.id
WHERE c.channels IS NULL OR instr(',' || c.channels || ',', ',email,') > 0
UNION ALL
SELECT patient_id, 'sms', phone_e164 FROM patient_contact
WHERE instr(',' || channels || ',', ',sms,') > 0 AND phone_e164 <> ''
UNION ALL
SELECT patient_id, 'whatsapp', phone_e164 FROM patient_contact
WHERE instr(',' || channels || ',', ',whatsapp,') > 0 AND phone_e164 <> ''
  AND whatsapp_opt_in_at IS NOT NULL
  AND (whatsapp_withdrawn_at IS NULL OR whatsapp_withdrawn_at < whatsapp_opt_in_at);
