//! Shared by rxpdf's integration tests and examples, and the benches: JPEG logos drawn in code, a realistic
//! prescription, the Debian tools (poppler-utils, zbar-tools) that read the PDF back, and the
//! render-timing loop of the benches (the example, `receta-bench pdf-native`, `pdfbench`).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;

use rxpdf::{HospitalInfo, MedicInfo, MedicationLine, PatientInfo, RxDocument};

/// A JPEG of `w`×`h` pixels whose RGB color at each pixel is `paint(x, y)`.
pub fn jpeg(w: u16, h: u16, paint: impl Fn(f32, f32) -> [u8; 3]) -> Vec<u8> {
    let mut pixels = Vec::with_capacity(w as usize * h as usize * 3);
    for y in 0..h {
        for x in 0..w {
            let (u, v) = (x as f32 / w as f32, y as f32 / h as f32);
            pixels.extend(paint(u, v));
        }
    }
    let mut out = Vec::new();
    let encoder = jpeg_encoder::Encoder::new(&mut out, 88);
    encoder
        .encode(&pixels, w, h, jpeg_encoder::ColorType::Rgb)
        .expect("encode JPEG");
    out
}

/// The hospital's picture: a white cross on a teal disc.
pub fn hospital_logo() -> Vec<u8> {
    jpeg(180, 180, |u, v| {
        let (dx, dy) = (u - 0.5, v - 0.5);
        let in_disc = dx * dx + dy * dy < 0.22;
        let in_cross = (dx.abs() < 0.09 && dy.abs() < 0.3) || (dy.abs() < 0.09 && dx.abs() < 0.3);
        match (in_disc, in_cross) {
            (true, true) => [255, 255, 255],
            (true, false) => [0, 110, 120],
            _ => [255, 255, 255],
        }
    })
}

/// The university logo: a gold book on a navy shield, wider than tall.
pub fn university_logo() -> Vec<u8> {
    jpeg(220, 160, |u, v| {
        let shield = (u - 0.5).abs() < 0.32 - (v - 0.2).max(0.0) * 0.3 && v > 0.06 && v < 0.94;
        let book = (u - 0.5).abs() < 0.18 && (v - 0.45).abs() < 0.14 && (u - 0.5).abs() > 0.012;
        match (shield, book) {
            (true, true) => [212, 175, 55],
            (true, false) => [20, 40, 100],
            _ => [255, 255, 255],
        }
    })
}

pub const SIGNATURE: &str = "3f9a1c0e7b5d2a8f4c6e1b3d5f7a9c0e2b4d6f8a1c3e5b7d9f0a2c4e6b8d0f1a";
pub const CTA_LINK: &str =
    "https://receta.example.mx/rx/3f9a1c0e7b5d2a8f4c6e1b3d5f7a9c0e2b4d6f8a1c3e5b7d9f0a2c4e6b8d0f1a";

fn med(
    presentation: &str,
    drug: &str,
    qty: i64,
    qty_label: &str,
    instructions: &str,
) -> MedicationLine {
    MedicationLine {
        presentation: presentation.into(),
        drug: drug.into(),
        qty,
        qty_label: qty_label.into(),
        instructions: instructions.into(),
        antibiotic: presentation.starts_with("Amoxicilina"),
        not_substitutable: false,
    }
}

/// A realistic prescription: Mexican hospital with both logos, five medications.
pub fn sample() -> RxDocument {
    RxDocument {
        hospital: HospitalInfo {
            name: "Hospital Ángeles del Pedregal".into(),
            patron: "Clínica de Medicina Interna Dra. Sofía Ramírez Núñez".into(),
            headline: "Atención médica con calidez y compromiso".into(),
            location: "Camino a Santa Teresa 1055, Col. Héroes de Padierna, Magdalena Contreras, Ciudad de México"
                .into(),
            zip_code: "10700".into(),
            contact: "citas@hospitalpedregal.mx · 55 5449 5500".into(),
            page_size: 0,
            info: false,
            picture: Some(hospital_logo()),
            university_logo: Some(university_logo()),
        },
        medic: MedicInfo {
            name: "Dra. Sofía Ramírez Núñez".into(),
            cedula_prof: "8765432".into(),
            specialty: "Medicina Interna".into(),
            specialty_no: "11223344".into(),
            alma_mater: "Universidad Nacional Autónoma de México".into(),
        },
        patient: PatientInfo {
            name: "José Luis Peña Ibáñez".into(),
            date_of_birth: "1988-03-14".into(),
            gender: "M".into(),
            curp: "PEIJ880314HDFXBS09".into(),
        },
        issued_on: "2026-11-22".into(),
        diagnosis: "Faringoamigdalitis bacteriana aguda; hipertensión arterial sistémica en control.".into(),
        show_diagnosis: true,
        medications: vec![
            med(
                "Amoxicilina / ácido clavulánico 875 mg/125 mg, tabletas",
                "Amoxicilina con ácido clavulánico",
                2,
                "cajas con 14 tabletas",
                "Tomar 1 tableta cada 12 horas durante 7 días, con alimentos. No suspender aunque mejoren los síntomas.",
            ),
            med(
                "Paracetamol 500 mg, tabletas",
                "Paracetamol",
                1,
                "caja con 20 tabletas",
                "Tomar 1 tableta cada 8 horas en caso de fiebre mayor a 38 °C o dolor. Máximo 3 g al día.",
            ),
            med(
                "Losartán 50 mg, tabletas",
                "",
                1,
                "caja con 30 tabletas",
                "Tomar 1 tableta cada 24 horas por la mañana. Tratamiento continuo.",
            ),
            med(
                "Bencidamina 0.15 % solución para gárgaras, frasco de 120 ml",
                "Bencidamina",
                1,
                "frasco",
                "Hacer gárgaras con 15 ml sin diluir 3 veces al día, después de los alimentos. No ingerir.",
            ),
            med(
                "Electrolitos orales, sobres",
                "",
                6,
                "sobres",
                "Disolver 1 sobre en 1 litro de agua hervida fría y beber a sorbos durante el día.",
            ),
        ],
        extras: "Reposo relativo 3 días. Dieta blanda y abundantes líquidos. ¿Fiebre persistente? ¡Acuda a urgencias! Costo de la consulta: $850.00 MXN."
            .into(),
        signature: SIGNATURE.into(),
        cta_link: CTA_LINK.into(),
        qr_text: format!("{CTA_LINK}#{SEAL_KID}.{SEAL_SIG}"),
        seal_kid: SEAL_KID.into(),
        seal_sig: SEAL_SIG.into(),
        valid_until: "2026-12-22".into(),
        fills: 1,
        fill_interval_days: 0,
        antibiotic_repeat_reason: String::new(),
        constancia: String::new(),
        efirma: String::new(),
    }
}

/// A seal as the service prints it: a key id and 86 base64url characters.
pub const SEAL_KID: &str = "3f2a9c01b7d4e856";
pub const SEAL_SIG: &str =
    "jQ8m3vXf2Yt7LzP0aR5sW9bN1cE6uJ4hG8oD2iT7lM3nV5xZ0qA9wB4yC6tF1eH3gU8jS2pR7dL5mW0vN9cX1Q";

/// A per-test scratch directory under the system's temporary directory.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("rxpdf-tests-{}", std::process::id()))
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Runs a tool and returns its stdout; fails the test with a clear message when the tool is
/// missing or fails. The tools are part of the test suite's requirements, never skipped.
pub fn tool(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap_or_else(|e| {
        panic!(
            "`{program}` could not be run ({e}). The rxpdf tests need Debian's poppler-utils and \
             zbar-tools: apt-get update && apt-get install -y poppler-utils zbar-tools"
        )
    });
    assert!(
        out.status.success(),
        "`{program} {}` failed ({}): {}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // Poppler reports a malformed file on stderr ("Syntax Error", "Syntax Warning") and goes on.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !program.starts_with("pdf") || !stderr.contains("Error") && !stderr.contains("Warning"),
        "`{program} {}` complained about the PDF: {stderr}",
        args.join(" ")
    );
    String::from_utf8(out.stdout).expect("tool output is UTF-8")
}

/// Writes the PDF of `doc` to `dir/name.pdf` and returns its path.
pub fn write_pdf(dir: &Path, name: &str, doc: &RxDocument) -> PathBuf {
    let path = dir.join(format!("{name}.pdf"));
    std::fs::write(&path, rxpdf::render(doc)).expect("write PDF");
    path
}

/// `pdftotext -layout`, all pages, or one page with `page`.
pub fn text(pdf: &Path, page: Option<u32>) -> String {
    let mut args = vec!["-layout", "-enc", "UTF-8"];
    let p = page.map(|p| p.to_string());
    if let Some(p) = &p {
        args.extend(["-f", p, "-l", p]);
    }
    let pdf = pdf.to_str().unwrap();
    args.extend([pdf, "-"]);
    tool("pdftotext", &args)
}

/// `pdftotext -raw` (content-stream order, no layout): words joined as written.
pub fn raw_text(pdf: &Path) -> String {
    tool(
        "pdftotext",
        &["-raw", "-enc", "UTF-8", pdf.to_str().unwrap(), "-"],
    )
}

/// Number of pages, from `pdfinfo`.
pub fn page_count(pdf: &Path) -> u32 {
    let info = tool("pdfinfo", &[pdf.to_str().unwrap()]);
    info.lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no page count in pdfinfo output:\n{info}"))
}

/// Whitespace runs collapsed to one space: text that wrapped onto several lines reads as one.
pub fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The MediaBox of every page, from `pdfinfo -box`.
pub fn media_boxes(pdf: &Path) -> Vec<[f64; 4]> {
    let pages = page_count(pdf).to_string();
    let info = tool(
        "pdfinfo",
        &["-box", "-f", "1", "-l", &pages, pdf.to_str().unwrap()],
    );
    info.lines()
        .filter_map(|l| l.split_once("MediaBox:"))
        .map(|(_, nums)| {
            let v: Vec<f64> = nums
                .split_whitespace()
                .map(|n| n.parse().unwrap())
                .collect();
            [v[0], v[1], v[2], v[3]]
        })
        .collect()
}

/// The rows of `pdfimages -list` (after its two header lines) of the raster images (the logos).
pub fn images(pdf: &Path) -> Vec<String> {
    listed(pdf, "image")
}

/// The rows of `pdfimages -list` of the stencil masks (the QR code).
pub fn stencils(pdf: &Path) -> Vec<String> {
    listed(pdf, "stencil")
}

fn listed(pdf: &Path, kind: &str) -> Vec<String> {
    tool("pdfimages", &["-list", pdf.to_str().unwrap()])
        .lines()
        .skip(2)
        .filter(|l| l.split_whitespace().nth(2) == Some(kind))
        .map(str::to_string)
        .collect()
}

/// Renders `page` to PNG at `dpi` and returns what `zbarimg` decodes from it.
pub fn scan_qr(pdf: &Path, page: u32, dpi: u32) -> String {
    let dir = pdf.parent().unwrap();
    let stem = pdf.file_stem().unwrap().to_str().unwrap();
    let prefix = dir.join(format!("{stem}-page"));
    let (p, r) = (page.to_string(), dpi.to_string());
    tool(
        "pdftoppm",
        &[
            "-r",
            &r,
            "-png",
            "-singlefile",
            "-f",
            &p,
            "-l",
            &p,
            pdf.to_str().unwrap(),
            prefix.to_str().unwrap(),
        ],
    );
    let png = dir.join(format!("{stem}-page.png"));
    tool("zbarimg", &["--raw", "-q", png.to_str().unwrap()])
        .trim_end()
        .to_string()
}

/// Each word of the document and the x of its right edge, from `pdftotext -bbox`.
pub fn word_right_edges(pdf: &Path) -> Vec<(String, f64)> {
    let html = tool("pdftotext", &["-bbox", pdf.to_str().unwrap(), "-"]);
    html.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix("<word ")?;
            let x_max = rest
                .split("xMax=\"")
                .nth(1)?
                .split('"')
                .next()?
                .parse()
                .ok()?;
            let word = rest.split('>').nth(1)?.split('<').next()?.to_string();
            Some((word, x_max))
        })
        .collect()
}

/// Renders `doc` `renders / 10` times unmeasured, then `renders` times timed: the PDF's size and
/// the times in nanoseconds, sorted.
pub fn render_times(doc: &RxDocument, renders: usize) -> (usize, Vec<u128>) {
    let bytes = rxpdf::render(doc).len();
    for _ in 0..renders / 10 {
        black_box(rxpdf::render(black_box(doc)));
    }
    let mut times: Vec<u128> = (0..renders)
        .map(|_| {
            let start = std::time::Instant::now();
            black_box(rxpdf::render(black_box(doc)));
            start.elapsed().as_nanos()
        })
        .collect();
    times.sort_unstable();
    (bytes, times)
}
