//! The prescription PDF read back with the tools a pharmacy's system would use: poppler's
//! pdftotext, pdfinfo, pdfimages and pdftoppm, and zbar's zbarimg for the QR code.
//! These tools are required (Debian: poppler-utils, zbar-tools); a missing one fails the test.

use rxpdf::{MedicationLine, RxDocument, render};
use rxpdf_sample::*;

fn half_letter(mut doc: RxDocument) -> RxDocument {
    doc.hospital.page_size = 1;
    doc
}

fn with_info(mut doc: RxDocument) -> RxDocument {
    doc.hospital.info = true;
    doc
}

/// Thirty medications, each with a distinct presentation and instructions long enough to wrap.
fn thirty_medications() -> RxDocument {
    let mut doc = sample();
    doc.medications = (1..=30)
        .map(|i| MedicationLine {
            presentation: format!("Medicamento número {i} de prueba, tabletas de {i}0 mg"),
            drug: if i % 3 == 0 { format!("Sustancia activa {i}") } else { String::new() },
            qty: i,
            qty_label: "cajas".into(),
            instructions: format!(
                "Indicación {i}: tomar una tableta cada ocho horas durante {i} días, con abundante agua \
                 y después de los alimentos; suspender y consultar si aparece sarpullido. Fin {i}."
            ),
            antibiotic: i % 5 == 0,
            not_substitutable: i % 7 == 0,
        })
        .collect();
    doc
}

#[test]
fn every_field_is_in_the_text() {
    let dir = scratch("every_field");
    let doc = sample();
    let pdf = write_pdf(&dir, "sample", &doc);
    let text = squash(&raw_text(&pdf));
    let h = &doc.hospital;
    let m = &doc.medic;
    let p = &doc.patient;
    let mut expected = vec![
        h.name.clone(),
        h.patron.clone(),
        h.headline.clone(),
        h.location.clone(),
        format!("C.P. {}", h.zip_code),
        format!("Contacto: {}", h.contact),
        m.name.clone(),
        format!("Cédula profesional: {}", m.cedula_prof),
        format!("Especialidad: {}", m.specialty),
        format!("Cédula de especialidad: {}", m.specialty_no),
        format!("Universidad: {}", m.alma_mater),
        p.name.clone(),
        "Edad: 38 años".into(),
        "Sexo: Masculino".into(),
        "Fecha de nacimiento: 14/03/1988".into(),
        format!("CURP: {}", p.curp),
        "Fecha de emisión: 22 de noviembre de 2026".into(),
        format!("DIAGNÓSTICO {}", doc.diagnosis),
        format!("OBSERVACIONES {}", doc.extras),
        "RECETA MÉDICA".into(),
        "FOLIO DIGITAL (SHA-256 DEL DOCUMENTO)".into(),
        format!("SELLO DIGITAL, CLAVE {}", doc.seal_kid),
        "Página 1 de 1".into(),
    ];
    for (i, med) in doc.medications.iter().enumerate() {
        expected.push(format!("{}. {}", i + 1, med.presentation));
        expected.push(format!("Indicaciones: {}", med.instructions));
    }
    expected.push("Medicamento: Amoxicilina con ácido clavulánico".into());
    expected.push("Cantidad: 2 cajas con 14 tabletas".into());
    expected.push("Cantidad: 6 sobres".into());
    for want in &expected {
        assert!(text.contains(want.as_str()), "missing {want:?} in:\n{text}");
    }
    // A drug name equal to nothing printed is not invented.
    assert_eq!(text.matches("Medicamento:").count(), 3, "{text}");

    // The signature comes out whole, on one line, for a pharmacy's system to copy.
    let layout = text_of(&pdf);
    assert!(
        layout.lines().any(|l| l.contains(SIGNATURE)),
        "signature not on one line:\n{layout}"
    );
    // The link is printed too.
    assert!(
        layout.lines().any(|l| l.contains(CTA_LINK)),
        "link not on one line:\n{layout}"
    );
}

fn text_of(pdf: &std::path::Path) -> String {
    text(pdf, None)
}

#[test]
fn spanish_text_round_trips() {
    let dir = scratch("spanish");
    let mut doc = sample();
    let line =
        "áéíóú ÁÉÍÓÚ ñÑ üÜ ¿Cuándo? ¡Ya! Precio: $1,250.00 MXN — «Pingüino» “cita” 38 °C €5 ½";
    doc.extras = line.into();
    doc.patient.name = "María Fernanda Agüero Muñoz".into();
    let pdf = write_pdf(&dir, "spanish", &doc);
    let text = squash(&raw_text(&pdf));
    assert!(text.contains(line), "{text}");
    assert!(text.contains("María Fernanda Agüero Muñoz"), "{text}");
    assert!(!text.contains('\u{FFFD}'));
    // The document title in the metadata is Spanish too.
    let info = tool("pdfinfo", &[pdf.to_str().unwrap()]);
    assert!(info.contains("Receta médica"), "{info}");
}

#[test]
fn other_scripts_are_replaced_visibly() {
    let dir = scratch("scripts");
    let mut doc = sample();
    doc.patient.name = "李小龙 Bruce Lee".into();
    doc.diagnosis = "Грипп (influenza) ✓".into();
    doc.medications[0].instructions = "Tomar 💊 con agua 🥛 cada 8 h".into();
    doc.hospital.headline = "مستشفى Hospital".into();
    let pdf = write_pdf(&dir, "scripts", &doc);
    assert_eq!(page_count(&pdf), 1);
    let text = squash(&raw_text(&pdf));
    for want in [
        "??? Bruce Lee",
        "????? (influenza) ?",
        "Tomar ? con agua ? cada 8 h",
        "?????? Hospital",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    // Everything else is intact.
    assert!(text.contains(&doc.medications[1].instructions), "{text}");
    assert!(text_of(&pdf).contains(SIGNATURE));
}

#[test]
fn media_box_of_both_page_sizes() {
    let dir = scratch("media_box");
    let letter = write_pdf(&dir, "letter", &sample());
    assert_eq!(media_boxes(&letter), vec![[0.0, 0.0, 612.0, 792.0]]);
    let half = write_pdf(&dir, "half", &half_letter(sample()));
    let boxes = media_boxes(&half);
    assert!(!boxes.is_empty());
    for b in &boxes {
        assert_eq!(*b, [0.0, 0.0, 396.0, 612.0]);
    }
    // An unknown page size is Letter.
    let mut doc = sample();
    doc.hospital.page_size = 7;
    assert_eq!(
        media_boxes(&write_pdf(&dir, "other", &doc)),
        vec![[0.0, 0.0, 612.0, 792.0]]
    );
    // Half Letter holds everything too, over as many pages as it takes.
    let text = squash(&raw_text(&half));
    for med in &sample().medications {
        assert!(
            text.contains(&med.instructions),
            "missing {:?}",
            med.instructions
        );
    }
    assert!(text_of(&half).lines().any(|l| l.contains(SIGNATURE)));
}

#[test]
fn info_page_only_when_asked() {
    let dir = scratch("info_page");
    const TITLE: &str = "INFORMACIÓN PARA EL PACIENTE";

    let without = write_pdf(&dir, "without", &sample());
    assert_eq!(page_count(&without), 1);
    assert!(!raw_text(&without).contains(TITLE));

    let with = write_pdf(&dir, "with", &with_info(sample()));
    assert_eq!(page_count(&with), 2);
    assert!(!text(&with, Some(1)).contains(TITLE));
    let last = squash(&text(&with, Some(2)));
    for want in [
        TITLE,
        "CÓMO USAR EL ENLACE DE SU RECETA",
        "CÓMO OBTENER SUS MEDICAMENTOS",
        "Escanee el código QR",
        "No necesita crear una cuenta",
        "Presente esta receta en la farmacia",
        "Página 2 de 2",
    ] {
        assert!(
            last.contains(want),
            "missing {want:?} in the info page:\n{last}"
        );
    }
    // The link, in the information page as well (it may wrap there: compare without spaces).
    assert!(last.replace(' ', "").contains(CTA_LINK), "{last}");
    // The header is on the info page too.
    assert!(last.contains(&sample().hospital.name));

    // Half Letter: the info page may take more than one page, all after the prescription.
    let half = write_pdf(&dir, "half", &half_letter(with_info(sample())));
    let pages = page_count(&half);
    let first_info_page = (1..=pages)
        .find(|&p| text(&half, Some(p)).contains(TITLE))
        .expect("info page");
    assert!(first_info_page > 1);
    assert!(squash(&text(&half, Some(pages))).contains(&format!("Página {pages} de {pages}")));
}

#[test]
fn thirty_medications_flow_onto_several_pages() {
    let dir = scratch("thirty");
    for (name, doc) in [
        ("letter", thirty_medications()),
        ("half", half_letter(thirty_medications())),
    ] {
        let pdf = write_pdf(&dir, name, &doc);
        let pages = page_count(&pdf);
        assert!(pages >= 3, "{name}: 30 medications on only {pages} pages");
        let mut all = String::new();
        for p in 1..=pages {
            let page = squash(&text(&pdf, Some(p)));
            assert!(
                page.contains(&doc.hospital.name),
                "{name}: no header on page {p}:\n{page}"
            );
            assert!(
                page.contains(&doc.hospital.patron),
                "{name}: no patron on page {p}"
            );
            assert!(
                page.contains("RECETA MÉDICA"),
                "{name}: no title on page {p}"
            );
            assert!(
                page.contains(&format!("Página {p} de {pages}")),
                "{name}: no page number on page {p}"
            );
            assert!(
                page.contains(&format!("C.P. {}", doc.hospital.zip_code)),
                "{name}: no footer on page {p}"
            );
            if p > 1 {
                assert!(
                    page.contains("(continuación)"),
                    "{name}: page {p} is not marked as a continuation"
                );
            }
            all.push_str(&page);
            all.push(' ');
        }
        let raw = squash(&raw_text(&pdf));
        let mut last = 0;
        for (i, med) in doc.medications.iter().enumerate() {
            let pres = format!("{}. {}", i + 1, med.presentation);
            let at = raw
                .find(&pres)
                .unwrap_or_else(|| panic!("{name}: missing {pres:?}"));
            assert!(at >= last, "{name}: medication {} out of order", i + 1);
            last = at;
            let instructions = format!("Indicaciones: {}", med.instructions);
            assert!(
                raw.contains(&instructions),
                "{name}: instructions of {} cut:\n{raw}",
                i + 1
            );
            assert!(raw.contains(&format!("Cantidad: {} cajas", med.qty)));
        }
        // The signature and the QR code are on the first page, where a pharmacy looks for them.
        let first_page = text(&pdf, Some(1));
        assert!(
            first_page.lines().any(|l| l.contains(SIGNATURE)),
            "{name}: no signature on page 1"
        );
        assert_eq!(scan_qr(&pdf, 1, 150), doc.qr_text, "{name}");
        let unwrapped: String = first_page.split_whitespace().collect();
        assert!(unwrapped.contains(SEAL_SIG), "{name}: no seal on page 1");
        let (w, h) = rxpdf::page_dimensions(doc.hospital.page_size);
        for b in media_boxes(&pdf) {
            assert_eq!(b, [0.0, 0.0, f64::from(w), f64::from(h)]);
        }
    }
}

#[test]
fn long_words_and_lines_wrap_without_losing_text() {
    let dir = scratch("long_words");
    let mut doc = sample();
    let word: String = "Supercalifragilisticoespialidoso".repeat(6);
    doc.medications[0].instructions = format!("Tomar {word} cada 8 horas.");
    doc.extras = "Muy largo. ".repeat(120);
    let pdf = write_pdf(&dir, "long", &doc);
    let raw = raw_text(&pdf);
    // The long word is broken across lines, but every character is there, in order.
    let joined: String = raw.split_whitespace().collect();
    assert!(joined.contains(&format!("Tomar{word}cada8horas.")), "{raw}");
    assert_eq!(squash(&raw).matches("Muy largo.").count(), 120);
    // And no word goes past the right margin (40 pt on Letter).
    for (word, x_max) in word_right_edges(&pdf) {
        assert!(x_max <= 612.0 - 40.0 + 0.5, "{word:?} ends at {x_max}");
    }
}

#[test]
fn both_logos_are_embedded() {
    let dir = scratch("logos");
    let pdf = write_pdf(&dir, "both", &sample());
    let list = images(&pdf);
    assert_eq!(list.len(), 2, "{list:?}");
    // page num type width height color comp bpc enc: picture 180×180, university logo 220×160.
    let fields: Vec<Vec<&str>> = list
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        &fields[0][3..9],
        ["180", "180", "rgb", "3", "8", "jpeg"],
        "{list:?}"
    );
    assert_eq!(
        &fields[1][3..9],
        ["220", "160", "rgb", "3", "8", "jpeg"],
        "{list:?}"
    );

    // The JPEG bytes are embedded as they are.
    let bytes = render(&sample());
    let logo = hospital_logo();
    assert!(bytes.windows(logo.len()).any(|w| w == logo.as_slice()));

    // Every page of a long prescription shows both logos (the same two objects).
    let long = write_pdf(&dir, "long", &thirty_medications());
    let pages = page_count(&long) as usize;
    assert_eq!(images(&long).len(), 2 * pages);

    // A logo that is not a JPEG is left out; the document is still fine.
    let mut doc = sample();
    doc.hospital.university_logo = Some(b"GIF89a not a jpeg".to_vec());
    doc.hospital.picture = Some(hospital_logo()[..100].to_vec());
    let broken = write_pdf(&dir, "broken", &doc);
    assert_eq!(images(&broken).len(), 0);
    assert!(squash(&raw_text(&broken)).contains(&doc.hospital.name));
    doc.hospital.picture = None;
    doc.hospital.university_logo = Some(university_logo());
    assert_eq!(images(&write_pdf(&dir, "one", &doc)).len(), 1);
}

#[test]
fn qr_decodes_to_the_sealed_patient_link() {
    let dir = scratch("qr");
    let sealed = format!("{CTA_LINK}#{SEAL_KID}.{SEAL_SIG}");
    let letter = write_pdf(&dir, "letter", &sample());
    assert_eq!(scan_qr(&letter, 1, 150), sealed);
    // One image mask of a bit per module (page num type width height color comp bpc), drawn once.
    let masks = stencils(&letter);
    assert_eq!(masks.len(), 1, "{masks:?}");
    let mask: Vec<&str> = masks[0].split_whitespace().collect();
    assert_eq!(mask[3], mask[4], "{masks:?}");
    assert_eq!(&mask[5..8], ["-", "1", "1"], "{masks:?}");
    let half = write_pdf(&dir, "half", &half_letter(sample()));
    assert_eq!(scan_qr(&half, 1, 150), sealed);
    // Without a seal, the QR code is the link itself.
    let mut doc = sample();
    doc.qr_text = String::new();
    let plain = write_pdf(&dir, "plain", &doc);
    assert_eq!(scan_qr(&plain, 1, 150), CTA_LINK);
    // No link, no QR code, and the document is still whole.
    doc.cta_link = String::new();
    let none = write_pdf(&dir, "none", &doc);
    assert!(text_of(&none).contains(SIGNATURE));
}

#[test]
fn diagnosis_hidden_unless_show_diagnosis() {
    let dir = scratch("diagnosis");
    let mut doc = sample();
    doc.show_diagnosis = false;
    let hidden = squash(&raw_text(&write_pdf(&dir, "hidden", &doc)));
    assert!(!hidden.contains("DIAGNÓSTICO"), "{hidden}");
    assert!(!hidden.contains("Faringoamigdalitis"), "{hidden}");
    doc.show_diagnosis = true;
    let shown = squash(&raw_text(&write_pdf(&dir, "shown", &doc)));
    assert!(
        shown.contains(&format!("DIAGNÓSTICO {}", doc.diagnosis)),
        "{shown}"
    );
}

#[test]
fn rendering_is_deterministic() {
    let doc = with_info(sample());
    assert_eq!(render(&doc), render(&doc));
    let other = RxDocument {
        signature: "0".repeat(64),
        ..doc.clone()
    };
    assert_ne!(render(&doc), render(&other));
}

#[test]
fn an_empty_document_is_still_a_valid_pdf() {
    let dir = scratch("empty");
    let pdf = write_pdf(&dir, "empty", &RxDocument::default());
    assert_eq!(page_count(&pdf), 1);
    assert_eq!(media_boxes(&pdf), vec![[0.0, 0.0, 612.0, 792.0]]);
    let text = squash(&raw_text(&pdf));
    assert!(
        text.contains("RECETA MÉDICA") && text.contains("Sin medicamentos."),
        "{text}"
    );
}

#[test]
fn pages_render_to_png() {
    let dir = scratch("png");
    let pdf = write_pdf(&dir, "sample", &with_info(sample()));
    let prefix = dir.join("page");
    tool(
        "pdftoppm",
        &[
            "-r",
            "50",
            "-png",
            pdf.to_str().unwrap(),
            prefix.to_str().unwrap(),
        ],
    );
    let pngs = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "png")
        })
        .count();
    assert_eq!(pngs, 2);
}

#[test]
fn absurd_input_is_still_a_valid_pdf() {
    let dir = scratch("absurd");
    let word = "x".repeat(3000);
    let mut doc = half_letter(with_info(sample()));
    doc.hospital.name = "Hospital ".repeat(100);
    doc.hospital.location = word.clone();
    doc.hospital.contact = word.clone();
    doc.patient.name = "Nombre ".repeat(400);
    doc.issued_on = "no es una fecha".into();
    doc.patient.date_of_birth = "1990-02-30".into();
    doc.medications[0].instructions = "k".repeat(3000);
    doc.hospital.picture = Some(vec![0xFF, 0xD8, 0xFF, 0xC0, 0x00]);
    let pdf = write_pdf(&dir, "absurd", &doc);
    let pages = page_count(&pdf);
    assert!((2..100).contains(&pages), "{pages} pages");
    let raw = raw_text(&pdf);
    // The patient's name and the long instructions are there in full, over several pages (the
    // name beside the prescriber's lines, so counted word by word).
    assert!(raw.matches("Nombre").count() >= 400);
    assert_eq!(
        raw.matches('k').count(),
        3000,
        "a long word lost characters"
    );
    assert!(raw.contains("Fecha de emisión: no es una fecha"));
    assert!(squash(&raw).contains("Edad: —"));
    assert_eq!(images(&pdf).len(), pages as usize); // only the university logo
    for (word, x_max) in word_right_edges(&pdf) {
        assert!(x_max <= 396.0 - 26.0 + 0.5, "{word:?} ends at {x_max}");
    }
}
