//! Parse throughput per corpus file, against a plain-text baseline (UTF-8 check + line split).
//! `cargo bench -p rag-formats --bench parse`; with `RST_DOCS=DIR`, every `.rst` under DIR too,
//! with `ADOC_DOCS=DIR` every `.adoc` and `.asciidoc` (`../shared` has neither:
//! `benches/unseen_flask_docs.sh --keep DIR` leaves Flask's in DIR/docs, and
//! `benches/unseen_asciidoc_docs.sh --keep DIR` git-lfs's and openQA's in DIR/docs), and with
//! `NOTEBOOK_DOCS=DIR` every `.ipynb` (`benches/unseen_notebook_docs.sh --keep DIR` leaves
//! nbsphinx's in DIR/docs).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rag_formats::{Format, convert};

#[path = "inputs/hostile_adoc.rs"]
mod hostile_adoc;
#[path = "inputs/hostile_notebook.rs"]
mod hostile_notebook;
#[path = "inputs/hostile_rst.rs"]
mod hostile_rst;

const CORPORA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpora");

fn files() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["bashref.html", "bashref.docx", "bashref.pdf"]
        .iter()
        .map(|f| Path::new(CORPORA).join("bash/docs").join(f))
        .collect();
    for dir in ["tutorial", "howto"] {
        if let Ok(rd) = std::fs::read_dir(Path::new(CORPORA).join("python-docs/docs").join(dir)) {
            let mut pages: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
            pages.sort();
            out.extend(pages);
        }
    }
    for (var, extensions) in [
        ("RST_DOCS", &["rst"][..]),
        ("ADOC_DOCS", &["adoc", "asciidoc"][..]),
        ("NOTEBOOK_DOCS", &["ipynb"][..]),
    ] {
        if let Some(dir) = std::env::var_os(var) {
            out.extend(pages_under(PathBuf::from(dir), extensions));
        }
    }
    out
}

/// Files under `dir` with one of `extensions`, sorted.
fn pages_under(dir: PathBuf, extensions: &[&str]) -> Vec<PathBuf> {
    let mut pending = vec![dir];
    let mut pages = Vec::new();
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .extension()
                .is_some_and(|e| extensions.iter().any(|x| e == *x))
            {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// Best of a few runs (the machine is shared).
fn time(mut f: impl FnMut()) -> Duration {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn mbps(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64().max(1e-9)
}

fn main() {
    let mut totals: std::collections::BTreeMap<&str, (usize, Duration, Duration)> =
        Default::default();
    for path in files() {
        let name = path.to_string_lossy().into_owned();
        let Some(format) = Format::from_path(&name) else {
            continue;
        };
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let parse = time(|| {
            let _ = std::hint::black_box(convert(format, &bytes));
        });
        let base = time(|| {
            let text = String::from_utf8_lossy(&bytes);
            std::hint::black_box(text.lines().count());
        });
        let t = totals.entry(format.name()).or_default();
        t.0 += bytes.len();
        t.1 += parse;
        t.2 += base;
        if bytes.len() > 400_000 {
            println!(
                "{:<60} {:>9} B  {:>8.1} ms  {:>7.2} MB/s  (baseline {:>8.1} MB/s)",
                path.file_name().unwrap_or_default().to_string_lossy(),
                bytes.len(),
                parse.as_secs_f64() * 1e3,
                mbps(bytes.len(), parse),
                mbps(bytes.len(), base)
            );
        }
    }
    for (format, (bytes, parse, base)) in totals {
        println!(
            "total {format:<6} {bytes:>9} B  {:>8.1} ms  {:>7.2} MB/s  (baseline {:>8.1} MB/s)",
            parse.as_secs_f64() * 1e3,
            mbps(bytes, parse),
            mbps(bytes, base)
        );
    }
    // Hostile input: quadratic work would show as a row far below the others.
    let hostile = hostile_rst::hostile_rst()
        .into_iter()
        .map(|(name, src)| (Format::Rst, name, src))
        .chain(
            hostile_adoc::hostile_adoc()
                .into_iter()
                .map(|(name, src)| (Format::Asciidoc, name, src)),
        )
        .chain(
            hostile_notebook::hostile_notebooks()
                .into_iter()
                .map(|(name, src)| (Format::Notebook, name, src)),
        );
    for (format, name, src) in hostile {
        let mut refused = false;
        let parse = time(|| {
            refused = std::hint::black_box(convert(format, src.as_bytes())).is_err();
        });
        let base = time(|| {
            std::hint::black_box(src.lines().count());
        });
        println!(
            "hostile {:<8} {name:<24} {:>9} B  {:>8.1} ms  {:>7.2} MB/s  (baseline {:>8.1} MB/s){}",
            format.name(),
            src.len(),
            parse.as_secs_f64() * 1e3,
            mbps(src.len(), parse),
            mbps(src.len(), base),
            if refused { "  refused" } else { "" }
        );
    }
}
