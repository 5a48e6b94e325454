//! PDF: the bash manual (pages, headings, running headers), an image-only PDF, broken files.

use lopdf::{Document, Object, Stream, dictionary};
use rag_formats::{Format, FormatError, convert};

const BASH_PDF: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/corpora/bash/docs/bashref.pdf"
);

#[test]
fn bash_manual_pages_and_headings() {
    let c = convert(Format::Pdf, &std::fs::read(BASH_PDF).unwrap()).unwrap();
    assert_eq!(c.metadata["pages"], 196);
    assert!(
        c.spans
            .iter()
            .all(|s| s.page.is_some_and(|p| (1..=196).contains(&p)))
    );
    // Running headers are gone, headings are reconstructed.
    assert!(!c.markdown.contains("Chapter 4: Shell Builtin Commands 4"));
    assert!(c.markdown.contains("\n## 4 Shell Builtin Commands\n"));
    // The table of contents lists chapters in their headings' size: its entries stay text.
    let headings: Vec<&str> = (c.markdown.lines())
        .filter(|l| l.starts_with('#'))
        .collect();
    assert!(
        headings.iter().all(|h| !h.contains(". . .")),
        "{:?}",
        headings.iter().find(|h| h.contains(". . ."))
    );
    assert!(c.markdown.contains("1 Introduction . . ."));
    let start = c.markdown.rfind("\n## 4 Shell Builtin Commands\n").unwrap() + 1;
    let at = c.markdown[start..].find("break").unwrap() + start;
    let p = c.provenance(at..at + 5);
    assert!(p.page_start.is_some_and(|p| p > 40), "{p:?}");
    let end = c.markdown[start..]
        .char_indices()
        .nth(2500)
        .map_or(c.markdown.len(), |(i, _)| i);
    insta::assert_snapshot!(&c.markdown[start..start + end]);
}

/// One page whose content draws nothing (a scan without OCR has only an image).
fn textless_pdf() -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let content = doc.add_object(Stream::new(dictionary! {}, b"0 0 m 10 10 l S".to_vec()));
    let page = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages_id, "Contents" => content,
        "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(
            dictionary! { "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1 },
        ),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

#[test]
fn no_text_layer() {
    let e = convert(Format::Pdf, &textless_pdf()).unwrap_err();
    assert!(matches!(e, FormatError::NoTextLayer), "{e}");
}

#[test]
fn broken_pdfs_are_typed_errors() {
    let real = std::fs::read(BASH_PDF).unwrap();
    let garbage = b"%PDF-1.5\n garbage garbage".to_vec();
    for bytes in [
        &real[..real.len() / 3],
        &real[..2000],
        &garbage[..],
        b"",
        b"not a pdf",
    ] {
        match convert(Format::Pdf, bytes) {
            Err(FormatError::Invalid { .. } | FormatError::ParserPanic { .. }) => {}
            other => panic!("{:?}", other.map(|c| c.markdown.len())),
        }
    }
}
