//! DOCX: a handmade document, the bash manual, and broken or hostile archives.

use std::io::{Cursor, Write};

use rag_formats::{Format, FormatError, convert};
use zip::write::SimpleFileOptions;

const BASH_DOCX: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/corpora/bash/docs/bashref.docx"
);

fn docx(parts: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in parts {
        w.start_file(*name, opts).unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap().into_inner()
}

const STYLES: &str = r#"<w:styles xmlns:w="w">
<w:style w:styleId="T1"><w:name w:val="heading 1"/></w:style>
<w:style w:styleId="Sub"><w:name w:val="My sub"/><w:basedOn w:val="T2"/></w:style>
<w:style w:styleId="T2"><w:name w:val="heading 2"/></w:style>
<w:style w:styleId="SourceCode"><w:name w:val="Source Code"/></w:style>
</w:styles>"#;

const NUMBERING: &str = r#"<w:numbering xmlns:w="w">
<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:numFmt w:val="decimal"/></w:lvl>
<w:lvl w:ilvl="1"><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum>
<w:num w:numId="5"><w:abstractNumId w:val="0"/></w:num></w:numbering>"#;

fn p(style: &str, num: Option<(u8, u8)>, text: &str) -> String {
    let num = num.map_or(String::new(), |(id, l)| {
        format!(r#"<w:numPr><w:ilvl w:val="{l}"/><w:numId w:val="{id}"/></w:numPr>"#)
    });
    format!(
        r#"<w:p><w:pPr><w:pStyle w:val="{style}"/>{num}</w:pPr><w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>"#
    )
}

#[test]
fn handmade_document() {
    let body = [
        p("T1", None, "Intro"),
        p("Normal", None, "Some &amp; text."),
        p("Sub", None, "Deeper"),
        p("Normal", Some((5, 0)), "first"),
        p("Normal", Some((5, 1)), "bullet"),
        p("Normal", Some((5, 0)), "second"),
        r#"<w:p><w:pPr><w:pStyle w:val="SourceCode"/></w:pPr><w:r><w:t>a = 1</w:t><w:br/><w:t>b = ```</w:t></w:r></w:p>"#.into(),
        r#"<w:tbl><w:tr><w:tc><w:p><w:r><w:t>K</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>V</w:t></w:r></w:p></w:tc></w:tr>
           <w:tr><w:tc><w:p><w:r><w:t>a|b</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>2</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"#.into(),
    ]
    .concat();
    let doc = format!(r#"<w:document xmlns:w="w"><w:body>{body}</w:body></w:document>"#);
    let core = r#"<cp:coreProperties xmlns:cp="c" xmlns:dc="d"><dc:title>My Doc</dc:title></cp:coreProperties>"#;
    let bytes = docx(&[
        ("word/document.xml", doc.as_bytes()),
        ("word/styles.xml", STYLES.as_bytes()),
        ("word/numbering.xml", NUMBERING.as_bytes()),
        ("docProps/core.xml", core.as_bytes()),
    ]);
    let c = convert(Format::Docx, &bytes).unwrap();
    assert_eq!(c.title.as_deref(), Some("My Doc"));
    insta::assert_snapshot!(c.markdown);
}

#[test]
fn bash_manual_prefix_snapshot() {
    let c = convert(Format::Docx, &std::fs::read(BASH_DOCX).unwrap()).unwrap();
    assert_eq!(c.title.as_deref(), Some("Bash Reference Manual"));
    let start = c.markdown.find("### 3.1 Shell Syntax").unwrap();
    let end = c.markdown[start..].find("#### 3.1.2.1").unwrap() + start;
    insta::assert_snapshot!(&c.markdown[start..end]);
}

#[test]
fn broken_archives_are_invalid() {
    let real = std::fs::read(BASH_DOCX).unwrap();
    for bytes in [
        &real[..real.len() / 2],
        &real[..100],
        b"PK\x03\x04garbage",
        b"",
    ] {
        let e = convert(Format::Docx, bytes).unwrap_err();
        assert!(matches!(e, FormatError::Invalid { .. }), "{e}");
    }
    let not_docx = docx(&[("hello.txt", b"hi")]);
    let e = convert(Format::Docx, &not_docx).unwrap_err();
    assert!(e.to_string().contains("word/document.xml"), "{e}");
    let bad_xml = docx(&[("word/document.xml", b"<w:document><w:p></w:document>")]);
    assert!(matches!(
        convert(Format::Docx, &bad_xml),
        Err(FormatError::Invalid { .. })
    ));
}

#[test]
fn zip_bomb_is_too_large() {
    // 80 MiB of one repeated tag compresses to ~80 KiB.
    let big = b"<w:p/>".repeat(14 << 20);
    let bomb = docx(&[("word/document.xml", &big)]);
    assert!(bomb.len() < 1 << 20);
    let e = convert(Format::Docx, &bomb).unwrap_err();
    assert!(matches!(e, FormatError::TooLarge { .. }), "{e}");
}
