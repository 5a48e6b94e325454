//! Parse throughput per corpus file, against a plain-text baseline (UTF-8 check + line split).
//! `cargo bench -p rag-formats --bench parse`; with `RST_DOCS=DIR`, every `.rst` under DIR too
//! (`../shared` has none: `benches/unseen_flask_docs.sh --keep DIR` leaves Flask's in DIR/docs).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rag_formats::{Format, convert};

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
    if let Some(dir) = std::env::var_os("RST_DOCS") {
        let mut pending = vec![PathBuf::from(dir)];
        let mut pages = Vec::new();
        while let Some(d) = pending.pop() {
            for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    pending.push(path);
                } else if path.extension().is_some_and(|e| e == "rst") {
                    pages.push(path);
                }
            }
        }
        pages.sort();
        out.extend(pages);
    }
    out
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
    // Hostile reStructuredText: quadratic work would show as a row far below the others.
    for (name, src) in hostile_rst::hostile_rst() {
        let parse = time(|| {
            let _ = std::hint::black_box(convert(Format::Rst, src.as_bytes()));
        });
        let base = time(|| {
            std::hint::black_box(src.lines().count());
        });
        println!(
            "hostile rst: {name:<22} {:>9} B  {:>8.1} ms  {:>7.2} MB/s  (baseline {:>8.1} MB/s)",
            src.len(),
            parse.as_secs_f64() * 1e3,
            mbps(src.len(), parse),
            mbps(src.len(), base)
        );
    }
}
