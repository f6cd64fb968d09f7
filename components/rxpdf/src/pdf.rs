//! The PDF objects: catalog, page tree, fonts, logos, one page and content stream per laid-out page.
//! Object numbers are fixed and nothing depends on the clock, so equal input gives equal bytes.

use pdf_writer::{Filter, Finish, Name, Pdf, Rect, Ref, TextStr};

use crate::document::RxDocument;
use crate::layout::{FONT_BOLD, FONT_MONO, FONT_REGULAR, IMAGE_NAMES, LaidOut, QR_NAME, qr_mask};

const CATALOG: Ref = Ref::new(1);
const PAGE_TREE: Ref = Ref::new(2);
const INFO: Ref = Ref::new(3);
const FONTS: [(Ref, Name<'static>, Name<'static>); 3] = [
    (Ref::new(4), FONT_REGULAR, Name(b"Helvetica")),
    (Ref::new(5), FONT_BOLD, Name(b"Helvetica-Bold")),
    (Ref::new(6), FONT_MONO, Name(b"Courier")),
];
const IMAGES: [Ref; 2] = [Ref::new(7), Ref::new(8)];
const QR: Ref = Ref::new(9);
/// Page `i` is object `FIRST_PAGE + 2i`, its content stream the next one.
const FIRST_PAGE: i32 = 10;

pub fn write(doc: &RxDocument, laid: LaidOut) -> Vec<u8> {
    let logo_bytes = [
        doc.hospital.picture.as_deref(),
        doc.hospital.university_logo.as_deref(),
    ];
    let capacity = 4096
        + laid.pages.iter().map(|p| p.len() + 256).sum::<usize>()
        + logo_bytes.iter().flatten().map(|b| b.len()).sum::<usize>()
        + laid.qr.as_ref().map_or(0, |(n, _)| n * n / 8 + 256);
    let mut pdf = Pdf::with_capacity(capacity);
    // A fixed file identifier from the signature: the same document, the same bytes.
    let id = file_id(&doc.signature);
    pdf.set_file_id((id.clone(), id));

    let mut catalog = pdf.catalog(CATALOG);
    catalog.pages(PAGE_TREE).lang(TextStr("es-MX"));
    catalog.viewer_preferences().display_doc_title(true);
    catalog.finish();

    let mut info = pdf.document_info(INFO);
    info.title(TextStr("Receta médica"));
    if !doc.medic.name.trim().is_empty() {
        info.author(TextStr(doc.medic.name.trim()));
    }
    info.creator(TextStr("Receta")).producer(TextStr("rxpdf"));
    info.finish();

    let page_ids: Vec<Ref> = (0..laid.pages.len() as i32)
        .map(|i| Ref::new(FIRST_PAGE + 2 * i))
        .collect();
    pdf.pages(PAGE_TREE)
        .kids(page_ids.iter().copied())
        .count(page_ids.len() as i32);

    for (id, _, base) in FONTS {
        pdf.type1_font(id)
            .base_font(base)
            .encoding_predefined(Name(b"WinAnsiEncoding"));
    }

    for (slot, info) in laid.logos.iter().enumerate() {
        let (Some(info), Some(bytes)) = (info, logo_bytes[slot]) else {
            continue;
        };
        let mut image = pdf.image_xobject(IMAGES[slot], bytes);
        image.filter(Filter::DctDecode);
        image
            .width(i32::from(info.width))
            .height(i32::from(info.height));
        image.bits_per_component(8);
        image.color_space_name(Name(match info.components {
            1 => b"DeviceGray".as_slice(),
            4 => b"DeviceCMYK".as_slice(),
            _ => b"DeviceRGB".as_slice(),
        }));
        if info.components == 4 && info.adobe {
            // Adobe writes CMYK JPEGs inverted.
            image.decode([1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]);
        }
        image.finish();
    }

    if let Some((n, modules)) = &laid.qr {
        let mask = qr_mask(*n, modules);
        let mut image = pdf.image_xobject(QR, &mask);
        image.width(*n as i32).height(*n as i32);
        image.image_mask(true).bits_per_component(1);
        // A 1 bit (a dark module) is painted in the fill color.
        image.decode([1.0, 0.0]);
        image.finish();
    }

    let (width, height) = laid.size;
    for (i, content) in laid.pages.iter().enumerate() {
        let page_id = page_ids[i];
        let content_id = Ref::new(page_id.get() + 1);
        let mut page = pdf.page(page_id);
        page.parent(PAGE_TREE)
            .media_box(Rect::new(0.0, 0.0, width, height))
            .contents(content_id);
        let mut resources = page.resources();
        let mut fonts = resources.fonts();
        for (id, name, _) in FONTS {
            fonts.pair(name, id);
        }
        fonts.finish();
        if laid.logos.iter().any(Option::is_some) || laid.qr.is_some() {
            let mut objects = resources.x_objects();
            for (slot, info) in laid.logos.iter().enumerate() {
                if info.is_some() {
                    objects.pair(IMAGE_NAMES[slot], IMAGES[slot]);
                }
            }
            if laid.qr.is_some() {
                objects.pair(QR_NAME, QR);
            }
            objects.finish();
        }
        resources.finish();
        page.finish();
        pdf.stream(content_id, content);
    }
    pdf.finish()
}

/// 16 bytes from the signature's hex digits (zeros for whatever is not hex).
fn file_id(signature: &str) -> Vec<u8> {
    let hex: Vec<u8> = signature
        .bytes()
        .filter_map(|b| (b as char).to_digit(16).map(|d| d as u8))
        .collect();
    let mut id = vec![0u8; 16];
    for (i, pair) in hex.chunks(2).take(16).enumerate() {
        id[i] = pair[0] << 4 | pair.get(1).copied().unwrap_or(0);
    }
    id
}
