//! Formats other than Markdown through the same lifecycle, with the real binary and model on
//! real files from `../shared/corpora`: HTML, PDF pages, source code breadcrumbs, corrupt files
//! named with their previous chunks kept, `--ext`, and edits that re-embed only what changed.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

fn shared(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpora")
        .join(rel)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn chunks_of(file: &Path) -> Vec<Value> {
    json_lines(&run_expect(&["chunks", "--json", s(file)], 0))
}

#[test]
fn pdf_chunks_carry_the_right_pages() {
    let chunks = chunks_of(&shared("bash/docs/bashref.pdf"));
    assert!(chunks.len() > 300, "{} chunks", chunks.len());
    let mut last_start = 0;
    for c in &chunks {
        let (a, b) = (&c["metadata"]["page_start"], &c["metadata"]["page_end"]);
        let (a, b) = (
            a.as_u64().expect("page_start"),
            b.as_u64().expect("page_end"),
        );
        assert!(1 <= a && a <= b && b <= 196, "pages {a}..{b}");
        assert!(a >= last_start, "pages go forward: {a} after {last_start}");
        last_start = a;
        assert!(c["tokens"].as_u64().unwrap() <= 256);
    }
    // Passages whose page `pdftotext -f N -l N` shows.
    for (passage, page) in [
        (
            "When a program is invoked it is given an array of strings called the environment",
            50,
        ),
        (
            "The shell learns immediately whenever a job changes state",
            120,
        ),
    ] {
        let c = chunks
            .iter()
            .find(|c| collapse(c["text"].as_str().unwrap()).contains(passage))
            .unwrap_or_else(|| panic!("no chunk holds {passage:?}"));
        let (a, b) = (
            c["metadata"]["page_start"].as_u64().unwrap(),
            c["metadata"]["page_end"].as_u64().unwrap(),
        );
        assert!(
            a <= page && page <= b,
            "{passage:?} on pages {a}..{b}, expected {page}"
        );
    }
}

#[test]
fn code_chunks_start_at_items_with_the_path_in_the_breadcrumb() {
    let file = shared("code/docs/python/json/decoder.py");
    let chunks = chunks_of(&file);
    let source = std::fs::read_to_string(&file).unwrap();
    for c in &chunks {
        let text = c["text"].as_str().unwrap();
        let crumb = text.lines().next().unwrap();
        assert!(crumb.starts_with(s(&file)), "breadcrumb {crumb:?}");
        let range = c["byte_range"].as_array().unwrap();
        let (a, b) = (
            range[0].as_u64().unwrap() as usize,
            range[1].as_u64().unwrap() as usize,
        );
        assert!(a < b && b <= source.len());
    }
    // A function starts its own chunk, at its `def` line.
    let scanstring = chunks
        .iter()
        .find(|c| c["text"].as_str().unwrap().contains("def py_scanstring("))
        .expect("py_scanstring chunk");
    let text = scanstring["text"].as_str().unwrap();
    let first_code = text.lines().skip_while(|l| !l.starts_with("```")).nth(1);
    assert_eq!(
        first_code,
        Some("def py_scanstring(s, end, strict=True,"),
        "{text}"
    );
}

#[test]
fn a_group_heading_names_an_item_its_chunk_holds() {
    // Small items (functions, consts) share a section headed by their names. A chunk carrying
    // such a heading must hold at least one of the items it names: a group longer than a chunk
    // used to head every later chunk with the names of its first members only.
    let mut files: Vec<PathBuf> = Vec::new();
    let mut dirs = vec![shared("code/docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            match path.extension().and_then(|e| e.to_str()) {
                _ if path.is_dir() => dirs.push(path),
                Some("rs" | "py") => files.push(path),
                _ => {}
            }
        }
    }
    assert!(files.len() >= 10, "{} code files", files.len());
    let mut groups = 0;
    for file in &files {
        for c in chunks_of(file) {
            let heading = c["heading_path"].as_array().unwrap();
            let last = heading.last().unwrap().as_str().unwrap();
            if heading.len() < 2 || !last.contains(", ") {
                continue;
            }
            groups += 1;
            let text = c["text"].as_str().unwrap();
            let mut fenced = false;
            let code: Vec<&str> = text
                .lines()
                .filter(|l| {
                    let fence = l.starts_with("```");
                    fenced ^= fence;
                    fenced && !fence
                })
                .collect();
            let code = collapse(&code.join("\n"));
            let named: Vec<&str> = last.split(", ").filter(|l| *l != "…").collect();
            assert!(
                named.iter().any(|l| code.contains(&collapse(l))),
                "{}: a chunk headed {last:?} holds none of those items:\n{text}",
                file.display()
            );
        }
    }
    assert!(groups >= 50, "only {groups} group-headed chunks");
}

#[test]
fn html_tables_read_as_the_page_shows_them() {
    // Python's logging HOWTO: the level table, as its visible text reads ("Level Numeric
    // value", "ERROR 40 WARNING 30 INFO 20"), not as the converter's pipe table.
    let file = shared("python-docs/docs/howto/logging.html");
    let chunks = chunks_of(&file);
    let texts: Vec<String> = chunks
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_string())
        .collect();
    let table = texts
        .iter()
        .find(|t| collapse(t).contains("Level Numeric value"))
        .expect("a chunk reads the header as the page does");
    assert!(
        collapse(table).contains("ERROR 40 WARNING 30 INFO 20"),
        "{table}"
    );
    assert!(
        table.contains("Level\tNumeric value\n"),
        "cells stay apart: {table}"
    );
    for t in &texts {
        assert!(
            !t.contains("|---") && !t.contains("| ERROR |"),
            "no pipe table: {t}"
        );
    }
    // Keyed rows still get their records, in the same form.
    let record = chunks
        .iter()
        .find(|c| {
            c["metadata"]["row_key"] == "WARNING"
                && c["text"].as_str().unwrap().contains("Numeric value")
        })
        .expect("a record for the level table's WARNING row");
    assert!(
        record["text"]
            .as_str()
            .unwrap()
            .ends_with("Level\tNumeric value\nWARNING\t30")
    );
    // Markdown files keep their tables as written.
    let md = chunks_of(&shared(
        "traefik/docs/reference/routing-configuration/http/middlewares/ratelimit.md",
    ));
    assert!(
        md.iter()
            .any(|c| c["text"].as_str().unwrap().contains("|---"))
    );

    // Through sync and a real query: the question's table chunk comes back first or close.
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::copy(&file, docs.join("logging.html")).unwrap();
    let index = work.path().join("idx");
    sync(&docs, &index, 0);
    let out = run_expect(
        &[
            "query",
            "What numeric value does the WARNING logging level have?",
            "--index",
            s(&index),
            "-k",
            "3",
            "--json",
        ],
        0,
    );
    let hits: Value = serde_json::from_str(&out).unwrap();
    let answered = hits["hits"].as_array().unwrap().iter().any(|h| {
        let t = collapse(h["text"].as_str().unwrap());
        t.contains("Level Numeric value") && t.contains("WARNING 30")
    });
    assert!(answered, "{out}");
}

#[test]
fn pieces_of_a_long_real_function_keep_its_definition_line() {
    // CPython's json.detect_encoding is split into pieces; the one that decides utf-16-le vs
    // utf-32-le must still say which function it is (code corpus question code-012).
    let chunks = chunks_of(&shared("code/docs/python/json/__init__.py"));
    let pieces: Vec<&str> = chunks
        .iter()
        .map(|c| c["text"].as_str().unwrap())
        .filter(|t| t.contains("def detect_encoding(b):"))
        .collect();
    assert!(pieces.len() > 1, "the function is split: {pieces:?}");
    let decider = pieces
        .iter()
        .find(|t| t.contains("return 'utf-16-le' if b[2] or b[3] else 'utf-32-le'"))
        .expect("the deciding piece names its function");
    assert!(
        decider.contains("```python\ndef detect_encoding(b):\n"),
        "{decider}"
    );
}

#[test]
fn converted_files_sync_like_markdown_and_corrupt_ones_are_named() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    std::fs::create_dir_all(docs.join("src")).unwrap();
    std::fs::copy(
        shared("python-docs/docs/tutorial/errors.html"),
        docs.join("errors.html"),
    )
    .unwrap();
    std::fs::copy(
        shared("code/docs/python/json/decoder.py"),
        docs.join("src/decoder.py"),
    )
    .unwrap();
    let pdf = std::fs::read(shared("bash/docs/bashref.pdf")).unwrap();
    std::fs::write(docs.join("truncated.pdf"), &pdf[..pdf.len() / 50]).unwrap();
    std::fs::write(docs.join("not-a-docx.docx"), b"PK\x03\x04 this is no zip").unwrap();
    std::fs::write(
        docs.join("notes.md"),
        "# Notes\n\nPlain Markdown still works.\n",
    )
    .unwrap();
    let index = work.path().join("idx");

    let report = sync(&docs, &index, 1);
    let errors = report["errors"].to_string();
    assert!(
        errors.contains("truncated.pdf") && errors.contains("not-a-docx.docx"),
        "{report}"
    );
    assert_eq!(report["files"]["added"], 3, "{report}");
    let chunks = dump(&index);
    let by_path = |p: &str| chunks.iter().filter(|c| c["path"] == p).count();
    assert!(
        by_path("errors.html") > 5 && by_path("src/decoder.py") > 3 && by_path("notes.md") == 1
    );
    let html = chunks.iter().find(|c| c["path"] == "errors.html").unwrap();
    assert!(
        html["text"]
            .as_str()
            .unwrap()
            .starts_with("8. Errors and Exceptions"),
        "{html}"
    );
    assert_eq!(html["metadata"]["format"], "html");

    // An exception question finds its HTML chunk.
    let out = run_expect(
        &[
            "query",
            "--index",
            s(&index),
            "--json",
            "how do I raise an exception?",
        ],
        0,
    );
    let hits = &json_lines(&out)[0]["hits"];
    assert!(
        hits.as_array()
            .unwrap()
            .iter()
            .any(|h| h["path"] == "errors.html"),
        "{hits}"
    );

    // A corrupt file of a known format that was indexed before keeps its chunks.
    std::fs::copy(docs.join("errors.html"), docs.join("copy.html")).unwrap();
    sync(&docs, &index, 1);
    let before = by_path_count(&index, "copy.html");
    std::fs::write(docs.join("copy.html"), b"\x00\x01\x02 binary, not HTML").unwrap();
    let report = sync(&docs, &index, 1);
    assert!(
        report["errors"].to_string().contains("copy.html"),
        "{report}"
    );
    assert_eq!(by_path_count(&index, "copy.html"), before);

    // Editing one function re-embeds only that function's chunks.
    let function_chunks = dump(&index)
        .iter()
        .filter(|c| c["path"] == "src/decoder.py")
        .filter(|c| c["heading_path"].to_string().contains("def py_scanstring"))
        .count() as u64;
    assert!(function_chunks >= 1);
    let code = std::fs::read_to_string(docs.join("src/decoder.py")).unwrap();
    let edited = code.replacen(
        "def py_scanstring(",
        "def py_scanstring(  # edited: the rest of the file is unchanged\n        ",
        1,
    );
    assert_ne!(code, edited);
    std::fs::write(docs.join("src/decoder.py"), edited).unwrap();
    let report = sync(&docs, &index, 1);
    assert_eq!(report["files"]["modified"], 1, "{report}");
    let embedded = report["chunks"]["embedded"].as_u64().unwrap();
    assert!(
        (1..=function_chunks).contains(&embedded),
        "one function ({function_chunks} chunks) edited, {embedded} chunks embedded: {report}"
    );
    assert!(
        report["chunks"]["reused"].as_u64().unwrap() >= 10,
        "{report}"
    );

    // --ext narrows what is indexed: the others leave the index.
    let out = run_expect(
        &[
            "sync",
            s(&docs),
            "--index",
            s(&index),
            "--ext",
            "md",
            "--json",
        ],
        0,
    );
    let report = &json_lines(&out)[0];
    assert!(
        report["files"]["removed"].as_u64().unwrap() >= 3,
        "{report}"
    );
    assert!(dump(&index).iter().all(|c| c["path"] == "notes.md"));
    run_expect(&["verify", "--index", s(&index)], 0);
}

fn by_path_count(index: &Path, path: &str) -> usize {
    dump(index).iter().filter(|c| c["path"] == path).count()
}

/// A chunk's `byte_range` as a range.
fn byte_range(chunk: &Value) -> std::ops::Range<usize> {
    let r = &chunk["byte_range"];
    r[0].as_u64().unwrap() as usize..r[1].as_u64().unwrap() as usize
}

/// UTF-16 code units of `text` with a byte order mark, little- or big-endian.
fn utf16_file(text: &str, big_endian: bool) -> Vec<u8> {
    let mut bytes = if big_endian {
        vec![0xFE, 0xFF]
    } else {
        vec![0xFF, 0xFE]
    };
    for unit in text.encode_utf16() {
        if big_endian {
            bytes.extend_from_slice(&unit.to_be_bytes());
        } else {
            bytes.extend_from_slice(&unit.to_le_bytes());
        }
    }
    bytes
}

fn decode_utf16(bytes: &[u8], big_endian: bool) -> String {
    let units = bytes.chunks_exact(2).map(|p| {
        if big_endian {
            u16::from_be_bytes([p[0], p[1]])
        } else {
            u16::from_le_bytes([p[0], p[1]])
        }
    });
    char::decode_utf16(units).map(Result::unwrap).collect()
}

#[test]
fn utf16_with_a_byte_order_mark_reads_like_its_utf8_twin() {
    let work = tempfile::tempdir().unwrap();
    // A real page with non-ASCII text (dashes, arrows), so offsets differ by more than a factor.
    let original = std::fs::read_to_string(corpus_dir().join("expose/docker/advanced.md")).unwrap();
    assert!(!original.is_ascii());
    let utf8_path = work.path().join("advanced.md");
    std::fs::write(&utf8_path, &original).unwrap();
    let utf8_chunks = chunks_of(&utf8_path);
    assert!(utf8_chunks.len() > 3, "{}", utf8_chunks.len());
    for big_endian in [false, true] {
        let path = work.path().join(format!("advanced-{big_endian}.md"));
        let bytes = utf16_file(&original, big_endian);
        std::fs::write(&path, &bytes).unwrap();
        let chunks = chunks_of(&path);
        assert_eq!(chunks.len(), utf8_chunks.len());
        for (wide, narrow) in chunks.iter().zip(&utf8_chunks) {
            assert_eq!(wide["text"], narrow["text"]);
            // Byte ranges point into the UTF-16 file, at the same source text.
            assert_eq!(
                decode_utf16(&bytes[byte_range(wide)], big_endian),
                original[byte_range(narrow)]
            );
        }
    }

    // Without a mark the encoding would be a guess: refused, and said to be UTF-16.
    let unmarked = work.path().join("unmarked.md");
    std::fs::write(&unmarked, &utf16_file(&original, false)[2..]).unwrap();
    let out = run(&["chunks", "--json", s(&unmarked)]);
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unmarked.md: UTF-16 text without a byte order mark"),
        "{stderr}"
    );
}

#[test]
fn html_in_a_declared_legacy_encoding_reads_like_its_utf8_original() {
    let work = tempfile::tempdir().unwrap();
    let original_path = shared("python-docs/docs/tutorial/errors.html");
    let original = std::fs::read_to_string(&original_path).unwrap();
    // Curly quotes, dashes and an ellipsis: all in windows-1252, each 3 bytes in UTF-8 and 1 there.
    assert!(original.chars().filter(|c| !c.is_ascii()).count() > 20);
    let utf8_chunks = chunks_of(&original_path);
    assert!(utf8_chunks.len() > 5);

    // The same page saved as Latin-1 by an older generator: the declaration is the only hint.
    // `latin1 ` is as long as `"utf-8"`, so the decoded text lines up with the original's.
    let declared = original.replacen("charset=\"utf-8\"", "charset=latin1 ", 1);
    assert_eq!(declared.len(), original.len());
    let (latin1, _, unmappable) = encoding_rs::WINDOWS_1252.encode(&declared);
    assert!(!unmappable);
    let latin1_path = work.path().join("errors-latin1.html");
    std::fs::write(&latin1_path, &latin1).unwrap();

    // And as UTF-16 with a byte order mark, which outranks the page's own declaration.
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend(original.encode_utf16().flat_map(u16::to_le_bytes));
    let utf16_path = work.path().join("errors-utf16.html");
    std::fs::write(&utf16_path, &utf16).unwrap();

    for (path, bytes, encoding) in [
        (&latin1_path, &latin1[..], encoding_rs::WINDOWS_1252),
        (&utf16_path, &utf16[..], encoding_rs::UTF_16LE),
    ] {
        let out = run(&["chunks", "--json", s(path)]);
        assert_eq!(out.status.code(), Some(0));
        // Exact offsets: no "approximate" warning.
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let chunks = json_lines(&String::from_utf8_lossy(&out.stdout));
        assert_eq!(chunks.len(), utf8_chunks.len(), "{}", path.display());
        for (decoded, plain) in chunks.iter().zip(&utf8_chunks) {
            assert_eq!(decoded["text"], plain["text"]);
            // Byte ranges point into this file, at the original's source text.
            let body = if encoding == encoding_rs::UTF_16LE {
                &bytes[2..]
            } else {
                bytes
            };
            let shift = bytes.len() - body.len();
            let r = byte_range(decoded);
            let (slice, _) =
                encoding.decode_without_bom_handling(&body[r.start - shift..r.end - shift]);
            assert_eq!(slice, original[byte_range(plain)]);
        }
    }
}

/// Writes `original` in UTF-8 and in UTF-16 (with a mark) under same-length paths in `work` (a
/// breadcrumb that is the path counts in a chunk's tokens), and checks the UTF-16 file gives
/// the UTF-8 file's chunks, with byte ranges that decode to the same source. Returns how many
/// chunks had byte ranges in the file (not in the converted Markdown).
fn assert_utf16_reads_like_utf8(
    work: &Path,
    name: &str,
    original: &str,
    big_endian: bool,
) -> usize {
    let utf8_path = work.join("u").join(name);
    let wide_path = work.join(["l", "b"][usize::from(big_endian)]).join(name);
    let wide = utf16_file(original, big_endian);
    for (path, bytes) in [(&utf8_path, original.as_bytes()), (&wide_path, &wide[..])] {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    let utf8_chunks = chunks_of(&utf8_path);
    assert!(utf8_chunks.len() > 1, "{name}");
    let out = run(&["chunks", "--json", s(&wide_path)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "exact offsets, no warning: {stderr}");
    let chunks = json_lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(chunks.len(), utf8_chunks.len(), "{name}");
    let mut mapped = 0;
    for (decoded, plain) in chunks.iter().zip(&utf8_chunks) {
        // Code and config breadcrumbs start with the path, which differs.
        let text = decoded["text"].as_str().unwrap();
        assert_eq!(
            text.replace(s(&wide_path), s(&utf8_path)),
            plain["text"].as_str().unwrap()
        );
        if decoded["metadata"]["byte_range_of"] == "converted_markdown" {
            // Not mapped to the file in either encoding (TOML tables are regrouped).
            assert_eq!(byte_range(decoded), byte_range(plain));
            continue;
        }
        mapped += 1;
        let r = byte_range(decoded);
        assert_eq!(
            decode_utf16(&wide[r.start..r.end], big_endian),
            original[byte_range(plain)],
            "{name}"
        );
    }
    mapped
}

#[test]
fn config_in_utf16_with_a_byte_order_mark_reads_like_its_utf8_twin() {
    let work = tempfile::tempdir().unwrap();
    // This workspace's own manifest, and the Traefik questions as one pretty JSON document
    // (PowerShell 5's `ConvertTo-Json > x.json` writes such files in UTF-16 with a mark).
    let toml =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let json = serde_json::to_string_pretty(&questions()).unwrap();
    let mapped: usize = [("manifest.toml", toml), ("questions.json", json)]
        .iter()
        .map(|(name, original)| assert_utf16_reads_like_utf8(work.path(), name, original, false))
        .sum();
    assert!(mapped > 10, "JSON members map to the file: {mapped}");
}

#[test]
fn source_code_in_utf16_with_a_byte_order_mark_reads_like_its_utf8_twin() {
    let work = tempfile::tempdir().unwrap();
    let mut mapped = 0;
    for (source, name) in [
        ("code/docs/python/json/decoder.py", "decoder.py"),
        ("code/docs/rust/ignore/src/pathutil.rs", "pathutil.rs"),
    ] {
        let original = std::fs::read_to_string(shared(source)).unwrap();
        for big_endian in [false, true] {
            mapped += assert_utf16_reads_like_utf8(work.path(), name, &original, big_endian);
        }
    }
    assert!(mapped > 10, "code sections map to the file: {mapped}");
}

#[test]
fn rst_and_asciidoc_in_utf16_with_a_byte_order_mark_read_like_their_utf8_twins() {
    let work = tempfile::tempdir().unwrap();
    for (fixture, name) in [(rst_fixture(), "page.rst"), (adoc_fixture(), "page.adoc")] {
        let original = std::fs::read_to_string(fixture).unwrap();
        let mut mapped = 0;
        for big_endian in [false, true] {
            mapped += assert_utf16_reads_like_utf8(work.path(), name, &original, big_endian);
        }
        assert!(mapped > 4, "{name}: sections map to the file: {mapped}");
    }
}

/// The handwritten page of `rag-formats`' AsciiDoc tests.
fn adoc_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/formats/tests/fixtures/handbook.adoc")
}

/// The handwritten Sphinx page of `rag-formats`' reStructuredText tests.
fn rst_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/formats/tests/fixtures/sphinx_page.rst")
}

/// UTF-16 without a byte order mark and UTF-32, in every text format: refused by name with the
/// reason (ASCII in UTF-16 is valid UTF-8, and UTF-32 LE's mark starts like UTF-16 LE's, so a
/// parser would otherwise read NULs between the characters), while the folder's UTF-8 file is
/// indexed and the refused ones leave no chunk.
#[test]
fn utf16_without_a_mark_and_utf32_are_refused_by_name_in_every_text_format() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    let readme = std::fs::read(corpus_dir().join("expose/docker/advanced.md")).unwrap();
    std::fs::write(docs.join("readme.md"), &readme).unwrap();
    let sources = [
        (shared("code/docs/python/json/decoder.py"), "py"),
        (shared("code/docs/rust/ignore/src/pathutil.rs"), "rs"),
        (
            Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"),
            "toml",
        ),
        (questions_file(), "jsonl"),
        (shared("python-docs/docs/howto/argparse.html"), "html"),
        (corpus_dir().join("expose/docker/basic.md"), "md"),
        (rst_fixture(), "rst"),
        (adoc_fixture(), "adoc"),
    ];
    let mut refused = Vec::new();
    for (source, ext) in &sources {
        let text = std::fs::read_to_string(source).unwrap();
        // A JSON document, not JSON lines.
        let (text, ext) = if *ext == "jsonl" {
            (serde_json::to_string_pretty(&questions()).unwrap(), "json")
        } else {
            (text, *ext)
        };
        for big_endian in [false, true] {
            let name = format!("wide-{}.{ext}", if big_endian { "be" } else { "le" });
            let marked = utf16_file(&text, big_endian);
            std::fs::write(docs.join(&name), &marked[2..]).unwrap();
            refused.push((name, "UTF-16 text without a byte order mark"));
            // UTF-32 with its mark, which starts like UTF-16 LE's.
            let name = format!("wider-{}.{ext}", if big_endian { "be" } else { "le" });
            let mut utf32: Vec<u8> = Vec::new();
            for c in std::iter::once('\u{feff}').chain(text.chars()) {
                let c = c as u32;
                utf32.extend(if big_endian {
                    c.to_be_bytes()
                } else {
                    c.to_le_bytes()
                });
            }
            std::fs::write(docs.join(&name), &utf32).unwrap();
            refused.push((name, "UTF-32 text"));
        }
    }
    let index = work.path().join("index");
    let out = run(&["sync", s(&docs), "--index", s(&index)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for (name, reason) in &refused {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains(name.as_str()) && l.contains(reason)),
            "{name} is not refused as {reason}:\n{stderr}"
        );
    }
    let chunks = dump(&index);
    assert!(!chunks.is_empty());
    for chunk in &chunks {
        assert_eq!(chunk["path"], "readme.md", "{chunk}");
        assert!(!chunk["text"].as_str().unwrap().contains('\0'));
    }
}

#[test]
fn rst_pages_are_indexed_by_default_with_boxes_whole_and_ranges_in_the_file() {
    let page = rst_fixture();
    let source = std::fs::read_to_string(&page).unwrap();
    let chunks = chunks_of(&page);
    let texts: Vec<&str> = chunks.iter().map(|c| c["text"].as_str().unwrap()).collect();
    // The note's opening line and both of its paragraphs are in one chunk.
    let note = texts
        .iter()
        .find(|t| t.contains("::: note"))
        .expect("a chunk holds the note");
    assert!(
        note.contains("writable by other users") && note.contains("Fix the permissions first."),
        "{note}"
    );
    // A method's text stays with its signature; a table row reads as the page shows it.
    assert!(
        texts
            .iter()
            .any(|t| t.contains(":::: method reload(config)")
                && t.contains("Reads config again without dropping connections."))
    );
    let table = chunks
        .iter()
        .find(|c| c["text"].as_str().unwrap().contains("max_widgets"))
        .unwrap();
    assert_eq!(
        table["heading_path"].as_array().unwrap().last().unwrap(),
        "Limits"
    );
    assert!(
        table["text"]
            .as_str()
            .unwrap()
            .contains("max_widgets\t512\tWidgets one worker holds at once.")
    );
    for c in &chunks {
        assert_eq!(c["metadata"]["format"], "rst", "{c}");
        let range = byte_range(c);
        assert!(range.end <= source.len() && range.start < range.end, "{c}");
    }
    let note_chunk = chunks
        .iter()
        .find(|c| c["text"].as_str().unwrap().contains("::: note"))
        .unwrap();
    assert!(source[byte_range(note_chunk)].contains("Fix the permissions first."));

    // A folder sync picks `.rst` up without `--ext`, and a question finds the note.
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::copy(&page, docs.join("deploy.rst")).unwrap();
    // Django names its reStructuredText pages `.txt`; plain text stays plain.
    std::fs::write(
        docs.join("middleware.txt"),
        "Middleware\n==========\n\n.. note::\n   Order matters: see :doc:`/topics/http`.\n",
    )
    .unwrap();
    std::fs::write(
        docs.join("plain.txt"),
        "Notes\n=====\n\nNothing marked up here.\n",
    )
    .unwrap();
    let index = work.path().join("idx");
    let report = sync(&docs, &index, 0);
    assert_eq!(report["files"]["added"], 3, "{report}");
    let chunks = dump(&index);
    let format_of = |path: &str| {
        let c = chunks.iter().find(|c| c["path"] == path).unwrap();
        c["metadata"]["format"].clone()
    };
    assert_eq!(format_of("middleware.txt"), "rst");
    assert_eq!(format_of("plain.txt"), Value::Null);
    let note = chunks
        .iter()
        .find(|c| c["path"] == "middleware.txt")
        .unwrap();
    assert!(
        note["text"]
            .as_str()
            .unwrap()
            .contains("::: note\nOrder matters: see /topics/http."),
        "{note}"
    );
    let top = top_hit(
        &index,
        "why does the daemon refuse to start because of folder permissions",
    );
    assert_eq!(top["path"], "deploy.rst", "{top}");
    assert!(
        top["text"].as_str().unwrap().contains("WIDGET_HOME"),
        "{top}"
    );
}

/// Flask 3.1.3's `docs/` folder from its PyPI source distribution.
fn flask_docs() -> PathBuf {
    pypi_sdist("flask", "3.1.3").join("docs")
}

#[test]
fn flask_sphinx_docs_index_every_page_with_each_answer_whole_in_one_chunk() {
    let docs = flask_docs();
    let pages = count_files(&docs, "rst");
    assert_eq!(pages, 76, "the flask 3.1.3 docs have 76 .rst pages");
    let work = tempfile::tempdir().unwrap();
    let chunks = sync_every_page(&docs, &work.path().join("idx"), "rst", pages);
    // Every question of benches/questions/flask-docs.jsonl (evidence as the rendered page
    // words it, several inside a note or a `py:data` description) is answered whole by one
    // chunk of its page: read as Markdown, only 6 of the 16 were.
    assert_every_answer_whole_in_one_chunk(&chunks, "benches/questions/flask-docs.jsonl");
}

/// JPype 1.7.1's sources (its PyPI sdist): Java (the JVM side), C++ and C headers (the native
/// bridge). Every file is indexed, and the sections follow the types and functions.
#[test]
fn java_c_and_cpp_sources_index_with_types_and_functions_as_sections() {
    let native = pypi_sdist("jpype1", "1.7.1").join("native");
    let java = count_files(&native, "java");
    let cpp = count_files(&native, "cpp");
    let headers = count_files(&native, "h");
    assert!(
        java >= 30 && cpp >= 30 && headers >= 30,
        "{java} {cpp} {headers}"
    );
    let work = tempfile::tempdir().unwrap();
    let index = work.path().join("idx");
    let report = sync(&native, &index, 0);
    assert_eq!(report["files"]["failed"], 0, "{report}");
    let chunks = dump(&index);
    for (language, files) in [("java", java), ("cpp", cpp), ("c", headers)] {
        let of: Vec<&Value> = chunks
            .iter()
            .filter(|c| c["metadata"]["language"] == language)
            .collect();
        let paths: std::collections::BTreeSet<&str> =
            of.iter().map(|c| c["path"].as_str().unwrap()).collect();
        assert_eq!(paths.len(), files, "{language} files indexed");
    }
    // A method of a big Java class is its own section under the class.
    let method = chunks
        .iter()
        .find(|c| {
            c["path"]
                .as_str()
                .unwrap()
                .ends_with("org/jpype/manager/TypeManager.java")
                && c["heading_path"].as_array().unwrap().len() == 3
        })
        .expect("a section of a TypeManager method");
    assert_eq!(method["heading_path"][1], "class TypeManager", "{method}");
    // C++ method definitions are labelled by their qualified names.
    assert!(
        chunks.iter().any(|c| c["path"] == "common/jp_javaframe.cpp"
            && c["heading_path"]
                .as_array()
                .unwrap()
                .iter()
                .any(|h| h.as_str().unwrap().starts_with("JPJavaFrame::"))),
        "no JPJavaFrame:: section"
    );
    // Where the C++ grammar cannot pair braces (`extern "C" {` opened under `#ifdef
    // __cplusplus` among other conditionals), it wraps the rest of the file in an error; the
    // functions it read inside are still sections, not one run of "module items".
    let module: Vec<&Value> = chunks
        .iter()
        .filter(|c| c["path"] == "python/pyjp_module.cpp")
        .collect();
    let sections: std::collections::BTreeSet<&str> = module
        .iter()
        .filter_map(|c| c["heading_path"].as_array().unwrap().last()?.as_str())
        .collect();
    for function in ["PyJP_GetAttrDescriptor()", "PyJPModule_startup()"] {
        assert!(sections.contains(function), "{function}: {sections:?}");
    }
    let unnamed = module
        .iter()
        .filter(|c| c["heading_path"].as_array().unwrap().last().unwrap() == "module items")
        .count();
    assert!(
        unnamed * 10 <= module.len(),
        "{unnamed} of {}",
        module.len()
    );
}

/// Every chunk of the files with extension `ext` under `dir` (at least `at_least` of them),
/// from `rag-index chunks` (no embedding), checking that each file has chunks, all of
/// `language`.
fn chunks_of_sources(dir: &Path, ext: &str, language: &str, at_least: usize) -> Vec<Value> {
    let files = files_with_extension(dir, ext);
    assert!(files.len() >= at_least, "{} .{ext} files", files.len());
    let mut args = vec!["chunks".to_string(), "--json".to_string()];
    args.extend(files.iter().map(|f| f.to_str().unwrap().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let chunks = json_lines(&run_expect(&args, 0));
    let paths: std::collections::BTreeSet<&str> =
        chunks.iter().map(|c| c["path"].as_str().unwrap()).collect();
    assert_eq!(paths.len(), files.len(), "every .{ext} file has chunks");
    assert!(chunks.iter().all(|c| c["metadata"]["language"] == language));
    chunks
}

/// Asserts that a chunk of the file ending in `path_end` is the section of `member` under
/// `type_heading`: `path > type_heading > member`.
fn assert_member_section(chunks: &[Value], path_end: &str, type_heading: &str, member: &str) {
    let section = chunks
        .iter()
        .find(|c| {
            c["path"].as_str().unwrap().ends_with(path_end)
                && c["heading_path"].as_array().unwrap().len() == 3
                && c["heading_path"][2] == member
        })
        .unwrap_or_else(|| panic!("no section of {member} in {path_end}"));
    assert_eq!(section["heading_path"][1], type_heading, "{section}");
}

/// pythonnet 3.0.5's C# runtime (its PyPI sdist), chunked without embedding: every file
/// converts, and a big class's methods are sections under it.
#[test]
fn csharp_sources_chunk_with_classes_and_members_as_sections() {
    let runtime = pypi_sdist("pythonnet", "3.0.5").join("src/runtime");
    let chunks = chunks_of_sources(&runtime, "cs", "csharp", 100);
    assert_member_section(&chunks, "Runtime.cs", "class Runtime", "Initialize()");
}

/// Rack 2.2's Ruby sources (Debian's `ruby-rack`), chunked without embedding: every file
/// converts, and the classes inside `module Rack` have their methods as sections.
#[test]
fn ruby_sources_chunk_with_classes_and_methods_as_sections() {
    let lib = debian_package("ruby-rack").join("usr/share/rubygems-integration/all/gems");
    let chunks = chunks_of_sources(&lib, "rb", "ruby", 50);
    assert_member_section(
        &chunks,
        "lib/rack/response.rb",
        "class Response",
        "def finish",
    );
}

/// Symfony Console 5.4's PHP sources (Debian's `php-symfony-console`), chunked without
/// embedding: every file converts, and a class's methods are sections under it.
#[test]
fn php_sources_chunk_with_classes_and_methods_as_sections() {
    let console =
        debian_package("php-symfony-console").join("usr/share/php/Symfony/Component/Console");
    let chunks = chunks_of_sources(&console, "php", "php", 80);
    assert_member_section(
        &chunks,
        "Console/Application.php",
        "class Application",
        "function doRun",
    );
}
