-- 0024: what exactly a pharmacy handed over in a sale (docs/lifecycle.md, "What was handed over"):
-- the product's GTIN, its lot, expiry and serial, and whether it was a substitute (RIS art. 31),
-- as the burn's item said or as its scanned GS1 element string (`gs1`) read. Owned by the
-- prescriptions component, written in the sale's transaction.
--
-- `dispensed_products`: one row per sold item that said any of it (a burn that says nothing adds
-- no row, as every sale before this file), keyed as `dispensed_medications` (0008). `gtin` is 14
-- digits (check digit verified), `expiry` `YYYY-MM-DD`. The sealed receipt (version 2) states the
-- same, so the row is not the only record.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

CREATE TABLE IF NOT EXISTS dispensed_products (
    event_id            INTEGER NOT NULL REFERENCES prescription_events (id),
    medication_id       INTEGER NOT NULL REFERENCES medications (id),
    gtin                TEXT,
    lot                 TEXT,
    expiry              TEXT,
    serial              TEXT,
    substituted         INTEGER NOT NULL DEFAULT 0 CHECK (substituted IN (0, 1)),
    substitution_reason TEXT,
    PRIMARY KEY (event_id, medication_id)
);
