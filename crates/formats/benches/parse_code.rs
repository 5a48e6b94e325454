//! Conversion throughput per corpus file, against a plain-text baseline (`str::from_utf8` and
//! line splitting of the same bytes). Run: `cargo bench -p rag-formats --bench parse`.
//! Also prints the outline statistics: headings per file and the biggest fenced block.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rag_formats::{Format, convert};

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/corpora/code/docs"
);

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if Format::from_path(&p.to_string_lossy()).is_some() {
            out.push(p);
        }
    }
}

/// Seconds per run of `f`, repeated for at least 200 ms.
fn time(mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut runs = 0u32;
    while start.elapsed() < Duration::from_millis(200) || runs < 3 {
        f();
        runs += 1;
    }
    start.elapsed().as_secs_f64() / f64::from(runs)
}

fn main() {
    let tiny = time(|| {
        black_box(convert(Format::from_path("a.rs").expect("rs"), b"fn a() {}\n").ok());
    });
    println!("fixed cost of one tiny Rust file: {:.0} us", tiny * 1e6);
    let mut paths = Vec::new();
    files(Path::new(CORPUS), &mut paths);
    paths.sort();
    let (mut total_bytes, mut total_conv, mut total_base, mut total_parse) =
        (0usize, 0f64, 0f64, 0f64);
    let (mut total_headings, mut biggest) = (0usize, (0usize, String::new()));
    println!(
        "{:<34} {:>8} {:>9} {:>10} {:>5} {:>9}",
        "file", "bytes", "MB/s", "base MB/s", "hdgs", "max block"
    );
    for p in &paths {
        let rel = p
            .strip_prefix(CORPUS)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned();
        let bytes = std::fs::read(p).expect("corpus file");
        let Some(format) = Format::from_path(&rel) else {
            continue;
        };
        let doc = convert(format, &bytes).expect("converts");
        let headings = doc.markdown.lines().filter(|l| l.starts_with('#')).count()
            - doc
                .spans
                .iter()
                .map(|s| {
                    doc.markdown[s.markdown.clone()]
                        .lines()
                        .filter(|l| l.starts_with('#'))
                        .count()
                })
                .sum::<usize>();
        // Spans are per line; a fenced block is a run of spans that touch.
        let (mut max_block, mut run, mut last_end) = (0usize, 0usize, usize::MAX);
        for s in &doc.spans {
            run = if s.markdown.start == last_end {
                run + 1
            } else {
                1
            };
            last_end = s.markdown.end;
            max_block = max_block.max(run);
        }
        if max_block > biggest.0 {
            biggest = (max_block, rel.clone());
        }
        let conv = time(|| {
            black_box(convert(format, black_box(&bytes)).ok());
        });
        let grammar: tree_sitter::Language = if rel.ends_with(".rs") {
            tree_sitter_rust::LANGUAGE.into()
        } else {
            tree_sitter_python::LANGUAGE.into()
        };
        let parse_only = time(|| {
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&grammar).expect("grammar loads");
            black_box(parser.parse(black_box(&bytes), None));
        });
        total_parse += parse_only;
        let base = time(|| {
            let text = std::str::from_utf8(black_box(&bytes)).unwrap_or("");
            black_box(text.lines().filter(|l| !l.trim().is_empty()).count());
        });
        let mb = bytes.len() as f64 / 1e6;
        println!(
            "{rel:<34} {:>8} {:>9.1} {:>10.0} {headings:>5} {max_block:>9}",
            bytes.len(),
            mb / conv,
            mb / base
        );
        total_bytes += bytes.len();
        total_conv += conv;
        total_base += base;
        total_headings += headings;
    }
    let mb = total_bytes as f64 / 1e6;
    println!(
        "all {} files: {total_bytes} bytes, {:.1} MB/s (tree-sitter parse alone {:.1} MB/s, baseline {:.0} MB/s), {:.1} headings per file, biggest block {} lines ({})",
        paths.len(),
        mb / total_conv,
        mb / total_parse,
        mb / total_base,
        total_headings as f64 / paths.len().max(1) as f64,
        biggest.0,
        biggest.1
    );
}
