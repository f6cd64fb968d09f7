-- 0021: the prescriber's identity and e.firma (docs/verification.md, "The prescriber's e.firma").
-- Owned by the catalog component.
--
-- `medic_identity`: a medic's RFC (a person's: 13 characters, check digit verified) and CURP (18,
-- check digit verified), both optional; one row per medic that has either, written with the medic
-- (create, PATCH). A new attribute of `medics`, in its own table (migrations/README.md).
--
-- `medic_efirma`: the medic's registered e.firma certificate (SAT's FIEL: X.509, the holder's RFC in
-- x500UniqueIdentifier, CURP in serialNumber), at most one per medic: a PUT replaces it, a DELETE
-- withdraws it. `certificate` is its DER; the other columns are read from it at upload, after the
-- checks (validity, chain to `efirma_ca`, key usage, RFC and CURP the medic's).
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

CREATE TABLE IF NOT EXISTS medic_identity (
    medic_id INTEGER PRIMARY KEY REFERENCES medics (id) ON DELETE CASCADE,
    rfc      TEXT,                 -- upper case, or NULL
    curp     TEXT                  -- upper case, or NULL
);

CREATE TABLE IF NOT EXISTS medic_efirma (
    medic_id      INTEGER PRIMARY KEY REFERENCES medics (id) ON DELETE CASCADE,
    certificate   BLOB    NOT NULL,  -- DER
    serial        TEXT    NOT NULL,  -- SAT's certificate number (the serial's digits), else hex
    issuer        TEXT    NOT NULL,  -- the issuing authority's common name
    rfc           TEXT,
    curp          TEXT,
    not_before    TEXT    NOT NULL,  -- ISO 8601 UTC
    not_after     TEXT    NOT NULL,
    registered_at TEXT    NOT NULL
);
