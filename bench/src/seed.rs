//! Realistic data, created through the API (the only way a real deployment gets it), in parallel.
//!
//! `seed-catalog --url U --admin-token T --out DIR [--hospitals 10] [--medics 100]
//! [--patients 10000] [--threads 4]`: hospitals (API admin), verified medics each a MEMBER of one
//! hospital (`hospital` in the create body), and each medic's patients. Writes `DIR/medics.tsv`
//! (`index id token hospital`) and `DIR/patients.tsv` (`medic_index uid name`).
//!
//! `seed-rx --url U --out DIR --total N [--medics M] [--threads 4]`: prescriptions (each with an
//! `Idempotency-Key`, sent again after a 5xx: `Client::create`) until
//! `DIR/signatures.tsv` (`medic_index signature`, appended) holds N. Prescription k belongs to medic
//! `k % M` (M: every medic unless given, so the others keep what they have) and to that medic's
//! patient `(k / M) % patients_per_medic`, and has 1 to 5 medications (drugs of
//! the seed catalog with their UPC, or free text). The patients have email addresses, so every
//! prescription also queues an outbox row.
//!
//! `seed-pharmacy --url U --admin-token T --out DIR [--prescriptions 200]`: registers a pharmacy and
//! issues prescriptions of one medication of 9,999 units each, to be dispensed a unit at a time.
//! Writes `DIR/pharmacy.tsv`: the pharmacy's token, then `signature medication_id` lines.
//!
//! One file (over 500 lines): the three seeding commands share one HTTP client, the names and the output files.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::args::Flags;
use crate::client::Client;

/// A medic as seeded.
struct Medic {
    token: String,
    hospital: i64,
}

const FIRST_NAMES: &[&str] = &[
    "José",
    "María",
    "Juan",
    "Guadalupe",
    "Luis",
    "Ana",
    "Carlos",
    "Sofía",
    "Jorge",
    "Fernanda",
    "Miguel",
    "Valeria",
    "Alejandro",
    "Ximena",
    "Ricardo",
    "Camila",
    "Fernando",
    "Daniela",
    "Eduardo",
    "Mariana",
    "Héctor",
    "Paola",
    "Raúl",
    "Andrea",
    "Arturo",
    "Lucía",
    "Sergio",
    "Regina",
];
const SURNAMES: &[&str] = &[
    "Hernández",
    "García",
    "Martínez",
    "López",
    "González",
    "Pérez",
    "Rodríguez",
    "Sánchez",
    "Ramírez",
    "Cruz",
    "Flores",
    "Gómez",
    "Morales",
    "Vázquez",
    "Reyes",
    "Jiménez",
    "Torres",
    "Díaz",
    "Gutiérrez",
    "Ruiz",
    "Mendoza",
    "Aguilar",
    "Ortiz",
    "Moreno",
    "Castillo",
    "Romero",
    "Álvarez",
    "Méndez",
    "Chávez",
    "Rivera",
    "Juárez",
    "Ramos",
    "Domínguez",
    "Herrera",
    "Medina",
];
const STATES: &[&str] = &[
    "Ciudad de México",
    "Jalisco",
    "Nuevo León",
    "Puebla",
    "Estado de México",
    "Veracruz",
    "Yucatán",
    "Querétaro",
    "Guanajuato",
    "Oaxaca",
];
const SPECIALTIES: &[&str] = &[
    "Medicina Interna",
    "Pediatría",
    "Medicina Familiar",
    "Ginecología y Obstetricia",
    "Cardiología",
    "Dermatología",
    "Otorrinolaringología",
    "Neumología",
];
const DIAGNOSES: &[&str] = &[
    "Faringoamigdalitis bacteriana aguda",
    "Infección de vías urinarias no complicada",
    "Hipertensión arterial sistémica en control",
    "Diabetes mellitus tipo 2 descompensada",
    "Gastroenteritis aguda con deshidratación leve",
    "Rinitis alérgica estacional",
    "Lumbalgia mecánica aguda",
    "Otitis media aguda",
    "Bronquitis aguda",
    "Dermatitis atópica",
    "Enfermedad por reflujo gastroesofágico",
    "Migraña sin aura",
    "Anemia ferropénica",
    "Hipotiroidismo primario",
    "Trastorno de ansiedad generalizada",
];
/// Drugs of the seed catalog (migration 0004): UPC and a presentation.
const CATALOG: &[(&str, &str)] = &[
    ("2000000000015", "Paracetamol 500 mg, 10 tabletas"),
    ("2000000000039", "Ibuprofeno 400 mg, 10 tabletas"),
    ("2000000000053", "Naproxeno 250 mg, 30 tabletas"),
    ("2000000000107", "Amoxicilina 500 mg, 12 cápsulas"),
    (
        "2000000000121",
        "Amoxicilina con ácido clavulánico 875 mg/125 mg, 10 tabletas",
    ),
    ("2000000000145", "Azitromicina 500 mg, 3 tabletas"),
    ("2000000000152", "Ciprofloxacino 500 mg, 14 tabletas"),
    ("2000000000244", "Loratadina 10 mg, 20 tabletas"),
    ("2000000000282", "Omeprazol 20 mg, 14 cápsulas"),
    ("2000000000343", "Metformina 850 mg, 30 tabletas"),
    ("2000000000367", "Losartán potásico 50 mg, 30 tabletas"),
    ("2000000000381", "Amlodipino 5 mg, 30 tabletas"),
    ("2000000000411", "Atorvastatina 20 mg, 30 tabletas"),
    ("2000000000428", "Levotiroxina sódica 100 mcg, 50 tabletas"),
    ("2000000000442", "Sulfato ferroso 200 mg, 30 tabletas"),
    ("2000000000466", "Sertralina 50 mg, 14 tabletas"),
];
/// Free-text medications (no UPC).
const FREE_TEXT: &[&str] = &[
    "Bencidamina 0.15 % solución para gárgaras, frasco de 120 ml",
    "Electrolitos orales, sobres",
    "Crema hidratante sin fragancia, 200 ml",
    "Lágrimas artificiales, gotas oftálmicas 15 ml",
    "Vitamina D3 4000 UI, cápsulas",
];
const INSTRUCTIONS: &[&str] = &[
    "Tomar 1 tableta cada 8 horas durante 5 días, con alimentos.",
    "Tomar 1 cápsula cada 12 horas durante 7 días. No suspender aunque mejoren los síntomas.",
    "Tomar 1 tableta cada 24 horas por la mañana. Tratamiento continuo.",
    "Tomar 1 tableta cada 8 horas en caso de fiebre mayor a 38 °C o dolor. Máximo 3 g al día.",
    "Aplicar 2 veces al día sobre la zona afectada durante 10 días.",
];

/// splitmix64: a fixed, well-spread sequence from an index (the data is the same on every run).
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn pick<'a>(list: &[&'a str], seed: u64) -> &'a str {
    list[(seed % list.len() as u64) as usize]
}

fn ascii(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'á' | 'Á' => 'a',
            'é' | 'É' => 'e',
            'í' | 'Í' => 'i',
            'ó' | 'Ó' => 'o',
            'ú' | 'Ú' | 'ü' => 'u',
            'ñ' => 'n',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// Patient `n`'s name: a first name and two surnames, as in Mexico.
pub fn patient_name(n: u64) -> String {
    let r = mix(n);
    format!(
        "{} {} {}",
        pick(FIRST_NAMES, r),
        pick(SURNAMES, r >> 16),
        pick(SURNAMES, r >> 32)
    )
}

pub(crate) fn patient_body(n: u64) -> Value {
    let r = mix(n ^ 0xABCD);
    let name = patient_name(n);
    let mut words = name.split(' ');
    let (first, surname) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    json!({
        "name": name,
        "email": format!("{}.{}{}@correo.mx", ascii(first), ascii(surname), n),
        "date_of_birth": format!("{}-{:02}-{:02}", 1940 + r % 80, 1 + (r >> 8) % 12, 1 + (r >> 16) % 28),
        "gender": if r & 1 == 0 { "M" } else { "F" },
        "phone": format!("55{:08}", (r >> 20) % 100_000_000),
        "address": format!("Calle {} {}, Col. Centro", pick(SURNAMES, r >> 24), 1 + (r >> 32) % 900),
        "state": pick(STATES, r >> 40),
        "zip_code": format!("{:05}", 1000 + (r >> 44) % 98_000),
        "external_patient_file": format!("EXP-{n:06}"),
    })
}

pub(crate) fn prescription_body(k: u64, hospital: i64, uid: &str) -> Value {
    let r = mix(k ^ 0x5EED);
    let count = 1 + (r % 5) as usize;
    let medications: Vec<Value> = (0..count)
        .map(|i| {
            let m = mix(r.wrapping_add(i as u64));
            let instructions = pick(INSTRUCTIONS, m >> 8);
            if m.is_multiple_of(3) {
                json!({"presentation": pick(FREE_TEXT, m >> 16), "instructions": instructions, "qty": 1})
            } else {
                let (upc, presentation) = CATALOG[((m >> 16) % CATALOG.len() as u64) as usize];
                json!({"presentation": presentation, "instructions": instructions,
                       "qty": 1 + (m >> 24) % 3, "drug_upc": upc})
            }
        })
        .collect();
    json!({
        "hospital": hospital,
        "patient": {"uid": uid},
        "diagnosis": pick(DIAGNOSES, r >> 32),
        "extras": "Reposo relativo. Abundantes líquidos. Acudir a urgencias si hay fiebre persistente.",
        "show_diagnosis": true,
        "send_rx": true,
        "medications": medications,
    })
}

/// Runs `count` jobs on `threads` threads, each with its own keep-alive connection.
pub(crate) fn parallel<T: Send>(
    url: &str,
    threads: usize,
    count: usize,
    what: &str,
    job: impl Fn(&mut Client, usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..count).map(|_| None).collect());
    let started = Instant::now();
    std::thread::scope(|scope| -> Result<()> {
        let workers: Vec<_> = (0..threads.max(1))
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    let mut client = Client::new(url)?;
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= count {
                            return Ok(());
                        }
                        let value = job(&mut client, i)?;
                        results.lock().expect("results")[i] = Some(value);
                        if (i + 1).is_multiple_of(5000) {
                            eprintln!(
                                "receta-bench: {what}: {} of {count} ({:.0}/s)",
                                i + 1,
                                (i + 1) as f64 / started.elapsed().as_secs_f64()
                            );
                        }
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().expect("seed thread")?;
        }
        Ok(())
    })?;
    eprintln!(
        "receta-bench: {what}: {count} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(results
        .into_inner()
        .expect("results")
        .into_iter()
        .map(|v| v.expect("every job ran"))
        .collect())
}

pub fn catalog(flags: &Flags) -> Result<()> {
    let url = flags.str("url")?;
    let admin = flags.str("admin-token")?;
    let out = Path::new(flags.str("out")?);
    let hospitals: usize = flags.num("hospitals", 10)?;
    let medics: usize = flags.num("medics", 100)?;
    let patients: usize = flags.num("patients", 10_000)?;
    let threads: usize = flags.num("threads", 4)?;

    let hospital_ids = parallel(url, threads, hospitals, "hospitals", |c, i| {
        let body = json!({
            "name": format!("Hospital {} {}", pick(SURNAMES, i as u64), i + 1),
            "patron": format!("Dr. {} {}", pick(FIRST_NAMES, i as u64 * 7), pick(SURNAMES, i as u64 * 3)),
            "location": format!("Av. Insurgentes Sur {}, Col. Del Valle, 03100 {}", 100 + i, pick(STATES, i as u64)),
            "contact": format!("citas{i}@hospital.mx · 55 5555 {:04}", i),
            "headline": "Atención médica con calidez y compromiso",
            "zip_code": "03100",
        });
        let reply = c
            .send(
                "POST",
                "/api/v2/hospital/",
                Some(admin),
                Some(body.to_string().as_bytes()),
            )?
            .expect(201, "creating a hospital")?;
        id_of(&reply.json()?)
    })?;

    let seeded = parallel(url, threads, medics, "medics", |c, i| {
        let r = mix(i as u64 ^ 0x3ED1C);
        let hospital = hospital_ids[i % hospital_ids.len()];
        let body = json!({
            "name": format!("Dr. {} {} {}", pick(FIRST_NAMES, r), pick(SURNAMES, r >> 8), pick(SURNAMES, r >> 16)),
            "password": format!("contraseña segura {r:x}"),
            "email": format!("medico{i}@receta-bench.mx"),
            "date_of_birth": format!("{}-{:02}-{:02}", 1955 + r % 40, 1 + (r >> 8) % 12, 1 + (r >> 16) % 28),
            "cedula_prof": format!("{:08}", r % 100_000_000),
            "specialty_no": format!("{:06}", (r >> 27) % 1_000_000),
            "specialty": pick(SPECIALTIES, r >> 32),
            "alma_mater": "Universidad Nacional Autónoma de México",
            "female": r & 1 == 1,
            "specialty_verified": true,
            "hospital": hospital,
        });
        let reply = c
            .send(
                "POST",
                "/api/v2/medics/",
                Some(admin),
                Some(body.to_string().as_bytes()),
            )?
            .expect(201, "creating a medic")?;
        let json = reply.json()?;
        let token = json["token"]
            .as_str()
            .context("no token in the medic")?
            .to_string();
        Ok((id_of(&json)?, Medic { token, hospital }))
    })?;

    let per_medic = patients / medics.max(1);
    let uids = parallel(url, threads, per_medic * medics, "patients", |c, n| {
        let medic = &seeded[n % medics].1;
        let body = patient_body(n as u64);
        let reply = c
            .send(
                "POST",
                "/api/v2/patient/",
                Some(&medic.token),
                Some(body.to_string().as_bytes()),
            )?
            .expect(201, "creating a patient")?;
        let json = reply.json()?;
        Ok((
            n % medics,
            json["uid"].as_str().context("no uid")?.to_string(),
            body["name"].as_str().unwrap_or_default().to_string(),
        ))
    })?;

    let mut text = String::new();
    for (i, (id, medic)) in seeded.iter().enumerate() {
        writeln!(text, "{i}\t{id}\t{}\t{}", medic.token, medic.hospital)?;
    }
    std::fs::write(out.join("medics.tsv"), text)?;
    let mut text = String::new();
    for (medic, uid, name) in &uids {
        writeln!(text, "{medic}\t{uid}\t{name}")?;
    }
    std::fs::write(out.join("patients.tsv"), text)?;
    println!(
        "hospitals={} medics={} patients={}",
        hospital_ids.len(),
        seeded.len(),
        uids.len()
    );
    Ok(())
}

/// The top-level `id` of a created object.
pub(crate) fn id_of(json: &Value) -> Result<i64> {
    json["id"]
        .as_i64()
        .with_context(|| format!("no id in {json}"))
}

/// `medics.tsv`: `(token, hospital)` by medic index.
pub fn read_medics(dir: &Path) -> Result<Vec<(String, i64)>> {
    let text = std::fs::read_to_string(dir.join("medics.tsv")).context("medics.tsv")?;
    text.lines()
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            match cols.as_slice() {
                [_, _, token, hospital] => Ok((token.to_string(), hospital.parse()?)),
                _ => bail!("bad medics.tsv line {line:?}"),
            }
        })
        .collect()
}

/// `patients.tsv`: every medic's patient uids, in order.
pub fn read_patients(dir: &Path, medics: usize) -> Result<Vec<Vec<String>>> {
    let text = std::fs::read_to_string(dir.join("patients.tsv")).context("patients.tsv")?;
    let mut by_medic = vec![Vec::new(); medics];
    for line in text.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        let [medic, uid, _] = cols.as_slice() else {
            bail!("bad patients.tsv line {line:?}");
        };
        by_medic[medic.parse::<usize>()?].push(uid.to_string());
    }
    Ok(by_medic)
}

/// Times a seeded create is sent at most (the first and the resends after a 5xx).
const CREATE_TRIES: u32 = 5;

pub fn prescriptions(flags: &Flags) -> Result<()> {
    let url = flags.str("url")?;
    let out = Path::new(flags.str("out")?);
    let total: usize = flags.num("total", 1000)?;
    let active: usize = flags.num("medics", usize::MAX)?;
    let threads: usize = flags.num("threads", 4)?;
    let medics = read_medics(out)?;
    let patients = read_patients(out, medics.len())?;
    let active = active.clamp(1, medics.len());
    let path = out.join("signatures.tsv");
    let existing = std::fs::read_to_string(&path)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    if existing >= total {
        println!("created=0 total={existing} seconds=0 rate=0 resent=0");
        return Ok(());
    }
    let started = Instant::now();
    let resent = std::sync::atomic::AtomicUsize::new(0);
    let signatures = parallel(url, threads, total - existing, "prescriptions", |c, i| {
        let k = existing + i;
        let medic = k % active;
        let own = &patients[medic];
        let uid = &own[(k / active) % own.len()];
        let (token, hospital) = &medics[medic];
        let body = prescription_body(k as u64, *hospital, uid);
        let key = format!("seed-rx-{k}");
        let (reply, again) = c.create(
            "/api/v2/rx-endpoint/",
            token,
            body.to_string().as_bytes(),
            &key,
            CREATE_TRIES,
        )?;
        resent.fetch_add(again as usize, std::sync::atomic::Ordering::Relaxed);
        let reply = reply.expect(200, "creating a prescription")?;
        let json = reply.json()?;
        Ok((
            medic,
            json["signature"]
                .as_str()
                .context("no signature")?
                .to_string(),
        ))
    })?;
    let seconds = started.elapsed().as_secs_f64();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?;
    for (medic, signature) in &signatures {
        writeln!(file, "{medic}\t{signature}")?;
    }
    println!(
        "created={} total={} seconds={seconds:.1} rate={:.1} resent={}",
        signatures.len(),
        existing + signatures.len(),
        signatures.len() as f64 / seconds,
        resent.into_inner()
    );
    Ok(())
}

/// Units of the medication a dispensable prescription holds: enough for every burn of a bench run.
const DISPENSABLE_UNITS: u32 = 9999;

pub fn pharmacy(flags: &Flags) -> Result<()> {
    let url = flags.str("url")?;
    let admin = flags.str("admin-token")?;
    let out = Path::new(flags.str("out")?);
    let count: usize = flags.num("prescriptions", 200)?;
    let body = json!({
        "name": "Farmacia Benchmark Centro", "legal_name": "Farmacias Benchmark S.A. de C.V.",
        "license": "LS-09-2026-0001", "address": "Av. Juárez 10, Centro", "zip_code": "06000",
        "state": "CDMX", "contact": "55 5555 0000",
    });
    let reply = Client::new(url)?
        .send(
            "POST",
            "/api/v2/pharmacies/",
            Some(admin),
            Some(body.to_string().as_bytes()),
        )?
        .expect(201, "registering a pharmacy")?;
    let token = reply.json()?["token"]
        .as_str()
        .context("no token in the pharmacy")?
        .to_string();
    let medics = read_medics(out)?;
    let patients = read_patients(out, medics.len())?;
    let issued = parallel(url, 4, count, "dispensable prescriptions", |c, i| {
        let medic = i % medics.len();
        let (medic_token, hospital) = &medics[medic];
        let own = &patients[medic];
        let body = json!({
            "hospital": hospital,
            "patient": {"uid": own[i % own.len()]},
            "diagnosis": "Diabetes mellitus tipo 1",
            "send_rx": false,
            // Every other one a repeat prescription (the bench's repeat-dispense row).
            "fills": if i % 2 == 1 { 12 } else { 1 },
            "medications": [{
                "presentation": "Insulina glargina 100 UI/ml, pluma de 3 ml",
                "instructions": "Aplicar 10 UI por vía subcutánea cada noche.",
                "qty": DISPENSABLE_UNITS,
            }],
        });
        let reply = c
            .send(
                "POST",
                "/api/v2/rx-endpoint/",
                Some(medic_token),
                Some(body.to_string().as_bytes()),
            )?
            .expect(200, "creating a dispensable prescription")?;
        let json = reply.json()?;
        Ok((
            json["signature"]
                .as_str()
                .context("no signature")?
                .to_string(),
            json["medications"][0]["id"]
                .as_i64()
                .context("no medication id")?,
            i % 2 == 1,
        ))
    })?;
    let mut text = format!("{token}\n");
    for (signature, medication, repeat) in &issued {
        let fills = if *repeat { 12 } else { 1 };
        writeln!(text, "{signature}\t{medication}\t{fills}")?;
    }
    std::fs::write(out.join("pharmacy.tsv"), text)?;
    println!("prescriptions={}", issued.len());
    Ok(())
}
