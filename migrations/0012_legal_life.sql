-- 0012: a prescription's legal life in Mexico (docs/mexican-rules.md): the class of each drug (LGS
-- art. 226 fracción, antibiotic), validity and repeats of a prescription, and the seal of each sale.
--
-- Safe to run more than once (`IF NOT EXISTS`, `INSERT OR IGNORE`): real Spin runs every
-- `--sqlite @file` on each start. New attributes of existing rows live in new tables keyed by the
-- owner's id (migrations/README.md). Owned by the prescriptions component.

-- The class of a product of the service's drug catalog. `fraccion` NULL: not declared; `antibiotic`
-- NULL: not declared. A product without a row here has neither declared.
CREATE TABLE IF NOT EXISTS drug_classes (
    upc        TEXT PRIMARY KEY REFERENCES drugs (upc),
    fraccion   TEXT    CHECK (fraccion IN ('I', 'II', 'III', 'IV', 'V', 'VI')),
    antibiotic INTEGER CHECK (antibiotic IN (0, 1))
);

-- The class of a prescribed medication, as signed at issue (the catalog's, or what the medic
-- declared for a product outside it). Medications issued before this migration have no row: "not
-- declared".
CREATE TABLE IF NOT EXISTS medication_classes (
    medication_id INTEGER PRIMARY KEY REFERENCES medications (id),
    fraccion      TEXT    CHECK (fraccion IN ('IV', 'V', 'VI')),  -- I-III are never issued
    antibiotic    INTEGER CHECK (antibiotic IN (0, 1))
);

-- Validity and repeats of a prescription, as signed at issue. Prescriptions issued before this
-- migration have no row: valid without limit, filled once (`fills` 1).
CREATE TABLE IF NOT EXISTS prescription_terms (
    prescription_id          INTEGER PRIMARY KEY REFERENCES prescriptions (id),
    valid_until              TEXT    NOT NULL,  -- YYYY-MM-DD, the last day (Mexico City time)
    expires_at               TEXT    NOT NULL,  -- ISO 8601 UTC: the end of that day
    fills                    INTEGER NOT NULL CHECK (fills BETWEEN 1 AND 12),
    fill_interval_days       INTEGER NOT NULL DEFAULT 0 CHECK (fill_interval_days BETWEEN 0 AND 90),
    antibiotic_repeat_reason TEXT    NOT NULL DEFAULT ''
);

-- What a dispense event adds for its seal: the pharmacy's license at the time and the fill the sale
-- belongs to (the highest fill any medication reached with it: medication units 1..qty are fill 1,
-- qty+1..2·qty fill 2, …). Dispenses recorded before this migration have no row (fill 1, no license).
CREATE TABLE IF NOT EXISTS dispense_details (
    event_id         INTEGER PRIMARY KEY REFERENCES prescription_events (id),
    pharmacy_license TEXT    NOT NULL DEFAULT '',
    fill             INTEGER NOT NULL CHECK (fill >= 1)
);

-- The antibiotic register reads a pharmacy's dispenses by time.
CREATE INDEX IF NOT EXISTS prescription_events_by_pharmacy
    ON prescription_events (pharmacy_id, created_at) WHERE kind = 'dispense';

-- Three controlled medicines, so the refusal of fracciones I-III can be seen with the seed catalog
-- (their codes are GS1 in-store codes like 0004's).
INSERT OR IGNORE INTO drugs (upc, name, category, updated_at) VALUES
    ('2000000000473', 'Morfina 10 mg/ml, solución inyectable 5 ampolletas', 'standard_drug', '2026-11-25T00:00:00Z'),
    ('2000000000480', 'Metilfenidato 10 mg, 30 tabletas', 'standard_drug', '2026-11-25T00:00:00Z'),
    ('2000000000497', 'Diazepam 10 mg, 20 tabletas', 'standard_drug', '2026-11-25T00:00:00Z');

-- The classes of the seed catalog (0004 and the three above). Where each came from:
-- - fracción IV + antibiotic: the antibacterials of the COFEPRIS antibiotic agreement (Acuerdo DOF
--   27-05-2010), whose sale needs a prescription and a register entry: the amoxicillins, ampicillin,
--   azithromycin, ciprofloxacin, trimethoprim-sulfamethoxazole, cephalexin, nitrofurantoin,
--   metronidazole.
-- - fracción IV: medicines sold only against a prescription that may be refilled as the medic says
--   (LGS art. 226 fr. IV): antihypertensives, antidiabetics, statins, thyroid hormone, corticoids,
--   antidepressants, antivirals and systemic antifungals (COFEPRIS places antivirals here too),
--   injectable-strength or long-acting analgesics (ketorolac, metamizole, diclofenac 100 mg LP),
--   salbutamol, pantoprazole, metoclopramide.
-- - fracción V (without prescription, pharmacies only) and VI (without prescription, any shop): the
--   over-the-counter presentations: paracetamol, ibuprofen, naproxen 250 mg, acetylsalicylic acid,
--   antihistamines, ambroxol, omeprazole 20 mg x 14, butylhyoscine, loperamide, albendazole,
--   topical clotrimazole, oral rehydration salts, iron and folic acid.
-- - fracción I: morphine, an estupefaciente (LGS art. 234). Fracción II: methylphenidate (LGS art. 245
--   fr. II). Fracción III: diazepam (LGS art. 245 fr. III).
-- This is the project's reading of the public classification for a demonstration catalog: an
-- operator loading real products sets each one's class from its registro sanitario
-- (`POST /api/v2/drugs/`), which replaces these rows.
INSERT OR IGNORE INTO drug_classes (upc, fraccion, antibiotic) VALUES
    ('2000000000015', 'VI', 0), -- Paracetamol 500 mg
    ('2000000000022', 'V', 0),  -- Paracetamol gotas
    ('2000000000039', 'V', 0),  -- Ibuprofeno 400 mg
    ('2000000000046', 'V', 0),  -- Ibuprofeno suspensión
    ('2000000000053', 'V', 0),  -- Naproxeno 250 mg
    ('2000000000060', 'IV', 0), -- Diclofenaco 100 mg LP
    ('2000000000077', 'IV', 0), -- Metamizol
    ('2000000000084', 'IV', 0), -- Ketorolaco
    ('2000000000091', 'VI', 0), -- Ácido acetilsalicílico 100 mg
    ('2000000000107', 'IV', 1), -- Amoxicilina 500 mg
    ('2000000000114', 'IV', 1), -- Amoxicilina suspensión
    ('2000000000121', 'IV', 1), -- Amoxicilina con ácido clavulánico
    ('2000000000138', 'IV', 1), -- Ampicilina
    ('2000000000145', 'IV', 1), -- Azitromicina
    ('2000000000152', 'IV', 1), -- Ciprofloxacino
    ('2000000000169', 'IV', 1), -- Trimetoprima con sulfametoxazol
    ('2000000000176', 'IV', 1), -- Cefalexina
    ('2000000000183', 'IV', 1), -- Nitrofurantoína
    ('2000000000190', 'IV', 1), -- Metronidazol
    ('2000000000206', 'V', 0),  -- Albendazol
    ('2000000000213', 'IV', 0), -- Fluconazol
    ('2000000000220', 'V', 0),  -- Clotrimazol crema
    ('2000000000237', 'IV', 0), -- Aciclovir
    ('2000000000244', 'V', 0),  -- Loratadina
    ('2000000000251', 'VI', 0), -- Clorfenamina
    ('2000000000268', 'V', 0),  -- Ambroxol
    ('2000000000275', 'IV', 0), -- Salbutamol
    ('2000000000282', 'V', 0),  -- Omeprazol 20 mg x 14
    ('2000000000299', 'IV', 0), -- Pantoprazol
    ('2000000000305', 'V', 0),  -- Butilhioscina
    ('2000000000312', 'V', 0),  -- Loperamida
    ('2000000000329', 'IV', 0), -- Metoclopramida
    ('2000000000336', 'VI', 0), -- Sales de rehidratación oral
    ('2000000000343', 'IV', 0), -- Metformina
    ('2000000000350', 'IV', 0), -- Glibenclamida
    ('2000000000367', 'IV', 0), -- Losartán
    ('2000000000374', 'IV', 0), -- Enalapril
    ('2000000000381', 'IV', 0), -- Amlodipino
    ('2000000000398', 'IV', 0), -- Captopril
    ('2000000000404', 'IV', 0), -- Hidroclorotiazida
    ('2000000000411', 'IV', 0), -- Atorvastatina
    ('2000000000428', 'IV', 0), -- Levotiroxina
    ('2000000000435', 'IV', 0), -- Prednisona
    ('2000000000442', 'VI', 0), -- Sulfato ferroso
    ('2000000000459', 'VI', 0), -- Ácido fólico
    ('2000000000466', 'IV', 0), -- Sertralina
    ('2000000000473', 'I', 0),  -- Morfina
    ('2000000000480', 'II', 0), -- Metilfenidato
    ('2000000000497', 'III', 0); -- Diazepam
