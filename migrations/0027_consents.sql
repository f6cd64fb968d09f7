-- 0027: the patient's consents to share their medication history (docs/patients.md, "A medication
-- history, only with consent"). Owned by the patients component.
--
-- One row per consent a person gave: `curp` the person (a normalised valid CURP), and whom it
-- names, a medic (`medic_id`) or every medic of a hospital (`hospital_id`), exactly one of them.
-- The proof of how it was given is kept with it: when (`given_at`), through which prescription's
-- page (`prescription_id`, the link used) and how (`given_via`: the page's form, or a JSON call
-- on the page's URL). A withdrawal sets `withdrawn_at`; the row stays, as the record that the
-- consent existed and until when. Never deleted.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

CREATE TABLE IF NOT EXISTS consents (
    id              INTEGER PRIMARY KEY,
    curp            TEXT    NOT NULL,
    medic_id        INTEGER REFERENCES medics (id),
    hospital_id     INTEGER REFERENCES hospitals (id),
    given_at        TEXT    NOT NULL,
    given_via       TEXT    NOT NULL CHECK (given_via IN ('page_form', 'page_json')),
    prescription_id INTEGER NOT NULL REFERENCES prescriptions (id),
    withdrawn_at    TEXT,
    CHECK ((medic_id IS NULL) <> (hospital_id IS NULL))
);
CREATE INDEX IF NOT EXISTS consents_by_curp ON consents (curp, id);
