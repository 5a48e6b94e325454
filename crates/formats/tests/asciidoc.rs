//! AsciiDoc: a page's structure reaches the chunker as Markdown it packs well (headings, boxes,
//! code, tables, option lists), with the text the rendered page shows, includes are never
//! read, and hostile input converts or is refused without a panic (its speed: the `parse`
//! bench).

mod support;
use support::between;

use rag_formats::{Format, FormatError, convert};

#[path = "../benches/inputs/hostile_adoc.rs"]
mod hostile_adoc;
use hostile_adoc::hostile_adoc;

const PAGE: &str = include_str!("fixtures/handbook.adoc");

fn markdown(src: &str) -> String {
    convert(Format::Asciidoc, src.as_bytes()).unwrap().markdown
}

#[test]
fn the_title_and_sections_become_headings_and_attributes_and_xrefs_read_as_shown() {
    assert_eq!(
        Format::from_path("docs/handbook.adoc"),
        Some(Format::Asciidoc)
    );
    assert_eq!(Format::from_path("guide.ASCIIDOC"), Some(Format::Asciidoc));
    let c = convert(Format::Asciidoc, PAGE.as_bytes()).unwrap();
    assert_eq!(c.title.as_deref(), Some("Relay Operator Handbook"));
    assert_eq!(c.metadata["format"], "asciidoc");
    let headings: Vec<&str> = c.markdown.lines().filter(|l| l.starts_with('#')).collect();
    assert_eq!(
        headings,
        [
            "# Relay Operator Handbook",
            "## Installing",
            "## Options",
            "## Limits"
        ]
    );
    assert!(c.markdown.contains(
        "The Relay daemon forwards queued jobs between sites. See Limits before raising any limit."
    ));
    assert!(c.markdown.contains("Listens on port 7443 by default."));
}

#[test]
fn admonitions_and_titled_blocks_are_boxes_that_keep_their_subject() {
    let md = markdown(PAGE);
    assert_eq!(
        between(&md, "::: Note", ":::"),
        [
            "::: Note",
            "The daemon refuses to start when its spool folder is writable by other users.",
            ":::"
        ]
    );
    assert_eq!(
        between(&md, "::: Warning: Upgrades from 1.x", ":::"),
        [
            "::: Warning: Upgrades from 1.x",
            "Stop every worker before you replace the binary.",
            "",
            "Workers left running keep the old queue format.",
            ":::"
        ]
    );
    assert_eq!(
        between(&md, "::: Minimal config", ":::"),
        [
            "::: Minimal config",
            "```toml",
            "[relay]",
            "listen = \"0.0.0.0:7443\"",
            "spool = \"/var/spool/relay\"",
            "```",
            ":::"
        ]
    );
}

#[test]
fn an_option_stays_with_what_it_does_and_tables_and_lists_keep_their_shape() {
    let md = markdown(PAGE);
    assert!(
        md.contains("- -q, --quiet: Print nothing but errors.\n"),
        "{md}"
    );
    assert_eq!(
        between(
            &md,
            "- --spool=<dir>: Where queued jobs wait. The folder must exist.",
            "  It is never created for you."
        )
        .len(),
        3
    );
    assert_eq!(
        between(
            &md,
            "**Queue limits**",
            "| max_bytes | 64 MiB | Bytes held before new jobs are refused |"
        ),
        [
            "**Queue limits**",
            "",
            "| Setting | Default | Meaning |",
            "| --- | --- | --- |",
            "| max_jobs | 500 | Jobs held before new ones are refused |",
            "| max_bytes | 64 MiB | Bytes held before new jobs are refused |"
        ]
    );
    assert_eq!(
        between(
            &md,
            "1. Drain the queue.",
            "3. Restart with relay --reload."
        ),
        [
            "1. Drain the queue.",
            "2. Raise the limit.",
            "3. Restart with relay --reload."
        ]
    );
    assert!(
        md.contains("- [x] spool on a local disk\n- [ ] spool on NFS"),
        "{md}"
    );
    // `[start=4]` keeps the page's numbering.
    assert!(md.contains("\n4. Check the spool disk.\n"), "{md}");
}

#[test]
fn comments_show_nothing_and_includes_are_never_read() {
    let md = markdown(PAGE);
    assert!(!md.contains("comment"), "{md}");
    // The secure mode shows an include as a link to its target; the file is never opened.
    assert!(!md.contains("root:"), "{md}");
    let dir = std::env::temp_dir().join(format!("adoc-include-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("secret.adoc"), "SECRET-TOKEN-42\n").unwrap();
    let page = format!(
        "= Page\n\ninclude::{}[]\n\nText.\n",
        dir.join("secret.adoc").display()
    );
    let md = markdown(&page);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!md.contains("SECRET-TOKEN-42"), "{md}");
    assert!(md.contains("Text."), "{md}");
}

#[test]
fn provenance_points_into_the_adoc_file() {
    let c = convert(Format::Asciidoc, PAGE.as_bytes()).unwrap();
    for needle in [
        "Stop every worker before you replace the binary.",
        "spool = \"/var/spool/relay\"",
        "Where queued jobs wait.",
    ] {
        let at = c.markdown.find(needle).unwrap();
        let source = c.provenance(at..at + needle.len()).source.unwrap();
        assert!(PAGE[source].contains(needle), "{needle}");
    }
}

#[test]
fn a_long_paragraph_is_split_and_its_text_kept_with_provenance() {
    let sentence = "Every queued job is checked against the limits before it is accepted. ";
    let page = format!("= Long\n\n{}\n\nAfter.\n", sentence.repeat(400));
    let c = convert(Format::Asciidoc, page.as_bytes()).unwrap();
    // Split between words: the text reads the same with its whitespace collapsed.
    let words: Vec<&str> = c.markdown.split_whitespace().collect();
    assert_eq!(
        words
            .join(" ")
            .matches("checked against the limits")
            .count(),
        400
    );
    assert!(c.markdown.contains("After."));
    let at = c.markdown.rfind("After.").unwrap();
    let source = c.provenance(at..at + 6).source.unwrap();
    assert_eq!(&page[source], "After.");
}

#[test]
fn utf16_with_a_byte_order_mark_reads_like_its_utf8_twin() {
    let mut utf16 = vec![0xFF, 0xFE];
    for unit in PAGE.encode_utf16() {
        utf16.extend(unit.to_le_bytes());
    }
    let twin = convert(Format::Asciidoc, &utf16).unwrap();
    assert_eq!(twin.markdown, markdown(PAGE));
    let line = "Stop every worker before you replace the binary.";
    let at = twin.markdown.find(line).unwrap();
    let source = twin.provenance(at..at + line.len()).source.unwrap();
    let units: Vec<u16> = utf16[source]
        .chunks(2)
        .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
        .collect();
    assert_eq!(
        String::from_utf16(&units).unwrap(),
        line,
        "the file's UTF-16 bytes"
    );
}

/// Hostile inputs: each converts to Markdown no bigger than a bound, or is refused by a bound
/// that names what was too large; never a panic or a stack overflow. Their speed is measured
/// in `cargo bench -p rag-formats --bench parse`.
#[test]
fn hostile_input_converts_or_is_refused_without_a_panic() {
    let mut refused = Vec::new();
    for (name, src) in hostile_adoc() {
        match convert(Format::Asciidoc, src.as_bytes()) {
            Ok(c) => assert!(c.markdown.len() <= src.len() * 2 + 1024, "{name}"),
            Err(FormatError::TooLarge { what, .. }) => refused.push((name, what)),
            Err(e) => panic!("{name}: {e}"),
        }
    }
    assert_eq!(
        refused,
        [
            ("nested examples", "AsciiDoc nesting depth"),
            ("nested bullets", "AsciiDoc nesting depth"),
            ("nested terms", "AsciiDoc nesting depth"),
            ("document cells", "AsciiDoc table cells read as documents"),
            ("plain cells", "AsciiDoc table cells"),
        ]
    );
    let e = convert(Format::Asciidoc, b"a\0b").unwrap_err();
    assert!(e.to_string().contains("not"), "{e}");
}
