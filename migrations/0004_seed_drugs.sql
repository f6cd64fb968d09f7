-- 0004: a seed drug catalog, so a new installation can prescribe from the service catalog at once.
--
-- Common Mexican generic drugs (medicamentos genéricos). Their codes are EAN-13 numbers in GS1's
-- restricted-circulation range (prefix 2, "in-store" codes), with a valid check digit: they can
-- never collide with a real product's barcode. Replace or extend the catalog with real codes
-- through `POST /api/v2/drugs/` (API admin).
--
-- `INSERT OR IGNORE`: running this again (real Spin runs it on every start) never overwrites a
-- drug the admin has changed since.
INSERT OR IGNORE INTO drugs (upc, name, category, updated_at) VALUES
    ('2000000000015', 'Paracetamol 500 mg, 10 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000022', 'Paracetamol 100 mg/ml, solución oral gotas 15 ml', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000039', 'Ibuprofeno 400 mg, 10 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000046', 'Ibuprofeno 100 mg/5 ml, suspensión oral 120 ml', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000053', 'Naproxeno 250 mg, 30 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000060', 'Diclofenaco sódico 100 mg, 20 grageas de liberación prolongada', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000077', 'Metamizol sódico 500 mg, 10 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000084', 'Ketorolaco trometamina 10 mg, 10 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000091', 'Ácido acetilsalicílico 100 mg, 30 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000107', 'Amoxicilina 500 mg, 12 cápsulas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000114', 'Amoxicilina 250 mg/5 ml, suspensión oral 75 ml', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000121', 'Amoxicilina con ácido clavulánico 875 mg/125 mg, 10 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000138', 'Ampicilina 500 mg, 20 cápsulas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000145', 'Azitromicina 500 mg, 3 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000152', 'Ciprofloxacino 500 mg, 14 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000169', 'Trimetoprima con sulfametoxazol 80 mg/400 mg, 20 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000176', 'Cefalexina 500 mg, 20 cápsulas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000183', 'Nitrofurantoína 100 mg, 40 cápsulas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000190', 'Metronidazol 500 mg, 30 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000206', 'Albendazol 200 mg, 2 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000213', 'Fluconazol 150 mg, 1 cápsula', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000220', 'Clotrimazol 1 %, crema 20 g', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000237', 'Aciclovir 400 mg, 35 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000244', 'Loratadina 10 mg, 20 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000251', 'Clorfenamina 4 mg, 20 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000268', 'Ambroxol 30 mg/5 ml, jarabe 120 ml', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000275', 'Salbutamol 100 mcg/dosis, suspensión en aerosol 200 dosis', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000282', 'Omeprazol 20 mg, 14 cápsulas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000299', 'Pantoprazol 40 mg, 14 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000305', 'Butilhioscina 10 mg, 20 grageas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000312', 'Loperamida 2 mg, 12 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000329', 'Metoclopramida 10 mg, 20 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000336', 'Sales de rehidratación oral, sobre 27.9 g', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000343', 'Metformina 850 mg, 30 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000350', 'Glibenclamida 5 mg, 50 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000367', 'Losartán potásico 50 mg, 30 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000374', 'Enalapril 10 mg, 30 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000381', 'Amlodipino 5 mg, 30 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000398', 'Captopril 25 mg, 30 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000404', 'Hidroclorotiazida 25 mg, 20 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000411', 'Atorvastatina 20 mg, 30 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000428', 'Levotiroxina sódica 100 mcg, 50 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000435', 'Prednisona 5 mg, 20 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000442', 'Sulfato ferroso 200 mg, 30 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000459', 'Ácido fólico 5 mg, 20 tabletas', 'standard_drug', '2026-11-22T00:00:00Z'),
    ('2000000000466', 'Sertralina 50 mg, 14 tabletas', 'standard_drug', '2026-11-22T00:00:00Z');
