-- 0029: how a patient is reached (docs/patients.md, "How the patient is reached"): the phone in
-- E.164, the channels chosen and the WhatsApp opt-in. Owned by the patients component.
--
-- One row per patient created or given a phone, channels or an opt-in since this file (an older
-- patient without a row reads as its phone parsed then, and the default channels).
-- `phone_e164` is the patient's `phone` parsed when it was written ('' when it does not parse),
-- so no read pays for libphonenumber's metadata. `channels` the chosen codes joined by commas
-- (`email`, `sms`, `whatsapp`; NULL: the default, `email` when the email on file is an address).
-- The opt-in: when and by whom it was recorded (`medic:<id>`); a withdrawal sets
-- `whatsapp_withdrawn_at` and `whatsapp_withdrawn_by` (`patient` from their page, or
-- `medic:<id>`), and the opt-in counts only while it is later than any withdrawal. Written in the
-- same transaction as the patient's row.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

CREATE TABLE IF NOT EXISTS patient_contact (
    patient_id            INTEGER PRIMARY KEY REFERENCES patients (id) ON DELETE CASCADE,
    phone_e164            TEXT,
    channels              TEXT,
    whatsapp_opt_in_at    TEXT,
    whatsapp_opt_in_by    TEXT,
    whatsapp_withdrawn_at TEXT,
    whatsapp_withdrawn_by TEXT
);
