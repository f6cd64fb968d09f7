//! `efirma --url U --admin-token T --cert FILE --key FILE --rfc RFC --curp CURP --count N
//! --conns C`: the prescriber's e.firma activation against a running app whose `efirma_ca` issued
//! `--cert`. Through the API: a hospital, a medic with that RFC and CURP and the certificate
//! registered, a patient; `N` drafts (`"efirma": true`), each signed by `openssl cms -sign` (the
//! medic's tool, not timed); then the `N` activations on `C` connections, and `N` plain creates the
//! same way, each timed. Prints `activations=N activate_rps= activate_p50_ms= create_rps=
//! create_p50_ms=`.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

use crate::args::{Flags, median_p99};
use crate::client::Client;
use crate::seed::{id_of, parallel, patient_body, prescription_body};

pub fn run(flags: &Flags) -> Result<()> {
    let url = flags.str("url")?;
    let admin = flags.str("admin-token")?;
    let cert = Path::new(flags.str("cert")?);
    let key = Path::new(flags.str("key")?);
    let count: usize = flags.num("count", 2000)?;
    let conns: usize = flags.num("conns", 2)?;
    let (token, body) = practice(url, admin, flags.str("rfc")?, flags.str("curp")?, cert)?;

    let mut draft = body.clone();
    draft["efirma"] = json!(true);
    let draft = draft.to_string();
    let drafts = parallel(url, 4, count, "drafts", |c, _| {
        let reply = c
            .send(
                "POST",
                "/api/v2/rx-endpoint/",
                Some(&token),
                Some(draft.as_bytes()),
            )?
            .expect(200, "creating a draft")?;
        let json = reply.json()?;
        let to_sign = BASE64.decode(json["efirma"]["to_sign"].as_str().context("to_sign")?)?;
        Ok((
            json["signature"].as_str().context("signature")?.to_string(),
            to_sign,
        ))
    })?;
    let dir = std::env::temp_dir().join(format!("receta-bench-efirma-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let signed = parallel(url, 4, count, "signatures", |_, i| {
        let (signature, to_sign) = &drafts[i];
        let cms = sign(&dir, i, to_sign, cert, key)?;
        Ok((
            signature.clone(),
            json!({"cms": BASE64.encode(cms)}).to_string(),
        ))
    })?;
    let _ = std::fs::remove_dir_all(&dir);

    let (activate_rps, mut activate) = timed(url, conns, count, "activations", |c, i| {
        let (signature, body) = &signed[i];
        let path = format!("/api/v2/rx-endpoint/{signature}/efirma/");
        c.send("POST", &path, Some(&token), Some(body.as_bytes()))?
            .expect(200, "activating a draft")?;
        Ok(())
    })?;
    let plain = body.to_string();
    let (create_rps, mut create) = timed(url, conns, count, "plain creates", |c, _| {
        c.send(
            "POST",
            "/api/v2/rx-endpoint/",
            Some(&token),
            Some(plain.as_bytes()),
        )?
        .expect(200, "creating a prescription")?;
        Ok(())
    })?;
    let (activate_p50, _) = median_p99(&mut activate);
    let (create_p50, _) = median_p99(&mut create);
    println!(
        "activations={count} activate_rps={activate_rps:.1} activate_p50_ms={:.2} \
         create_rps={create_rps:.1} create_p50_ms={:.2}",
        activate_p50 as f64 / 1000.0,
        create_p50 as f64 / 1000.0
    );
    Ok(())
}

/// Runs the jobs on `conns` connections: requests per second over the whole run, and each job's
/// microseconds.
fn timed(
    url: &str,
    conns: usize,
    count: usize,
    what: &str,
    job: impl Fn(&mut Client, usize) -> Result<()> + Sync,
) -> Result<(f64, Vec<u64>)> {
    let started = Instant::now();
    let micros = parallel(url, conns, count, what, |c, i| {
        let at = Instant::now();
        job(c, i)?;
        Ok(at.elapsed().as_micros() as u64)
    })?;
    Ok((count as f64 / started.elapsed().as_secs_f64(), micros))
}

/// A hospital, a verified medic (a member of it) with `rfc`, `curp` and `cert` registered as its
/// e.firma, and a patient: the medic's token and a create body for that patient.
fn practice(url: &str, admin: &str, rfc: &str, curp: &str, cert: &Path) -> Result<(String, Value)> {
    let mut c = Client::new(url)?;
    let hospital = json!({"name": "Hospital e.firma", "patron": "Dra. Ana Pérez",
        "location": "Av. Insurgentes Sur 1, 03100 CDMX", "zip_code": "03100",
        "contact": "citas@hospital-efirma.mx", "headline": "Recetas firmadas con e.firma"});
    let reply = c
        .send(
            "POST",
            "/api/v2/hospital/",
            Some(admin),
            Some(hospital.to_string().as_bytes()),
        )?
        .expect(201, "creating a hospital")?;
    let hospital = id_of(&reply.json()?)?;
    let medic = json!({
        "name": "Dr. José Núñez", "password": "contraseña segura efirma",
        "email": format!("efirma{}@receta-bench.mx", std::process::id()),
        "date_of_birth": "1976-10-03",
        "cedula_prof": "12345678", "specialty_no": "123456", "specialty": "Medicina general",
        "alma_mater": "UNAM", "female": false, "specialty_verified": true,
        "hospital": hospital, "rfc": rfc, "curp": curp,
    });
    let reply = c
        .send(
            "POST",
            "/api/v2/medics/",
            Some(admin),
            Some(medic.to_string().as_bytes()),
        )?
        .expect(201, "creating the medic")?;
    let json = reply.json()?;
    let id = id_of(&json)?;
    let token = json["token"]
        .as_str()
        .context("the medic's token")?
        .to_string();
    let pem = std::fs::read_to_string(cert).context("the medic's certificate")?;
    c.send(
        "PUT",
        &format!("/api/v2/medics/{id}/efirma/"),
        Some(&token),
        Some(json!({"certificate": pem}).to_string().as_bytes()),
    )?
    .expect(200, "registering the e.firma")?;
    let reply = c
        .send(
            "POST",
            "/api/v2/patient/",
            Some(&token),
            Some(patient_body(1).to_string().as_bytes()),
        )?
        .expect(201, "creating a patient")?;
    let uid = reply.json()?["uid"]
        .as_str()
        .context("the patient's uid")?
        .to_string();
    Ok((token, prescription_body(7, hospital, &uid)))
}

/// `openssl cms -sign -binary -md sha256 -outform DER` over `content`: the detached CMS.
fn sign(dir: &Path, i: usize, content: &[u8], cert: &Path, key: &Path) -> Result<Vec<u8>> {
    let (doc, out) = (dir.join(format!("{i}.json")), dir.join(format!("{i}.p7s")));
    std::fs::write(&doc, content)?;
    let status = Command::new("openssl")
        .args([
            "cms", "-sign", "-binary", "-md", "sha256", "-outform", "DER", "-in",
        ])
        .arg(&doc)
        .arg("-signer")
        .arg(cert)
        .arg("-inkey")
        .arg(key)
        .arg("-out")
        .arg(&out)
        .status()
        .context("running openssl")?;
    if !status.success() {
        bail!("openssl cms -sign failed");
    }
    let cms = std::fs::read(&out)?;
    let _ = (std::fs::remove_file(doc), std::fs::remove_file(out));
    Ok(cms)
}
