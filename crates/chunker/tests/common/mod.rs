//! Shared test helpers: the real tokenizer and the real corpus, by relative path.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rag_chunker::{Chunk, Chunker, ChunkerConfig};

mod hf;
pub use hf::Hf;

pub const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/corpora/traefik/docs"
);

pub fn hf() -> Arc<Hf> {
    static HF: OnceLock<Arc<Hf>> = OnceLock::new();
    HF.get_or_init(|| Arc::new(Hf::load())).clone()
}

pub fn chunker() -> Chunker {
    Chunker::new(hf(), ChunkerConfig::default()).expect("default config")
}

/// Row records of keyed tables on (the default), said explicitly for the tests about them.
pub fn chunker_with_records() -> Chunker {
    let config = ChunkerConfig {
        table_records: true,
        ..ChunkerConfig::default()
    };
    Chunker::new(hf(), config).expect("config")
}

/// The default configuration with row records of keyed tables turned off.
pub fn chunker_without_records() -> Chunker {
    let config = ChunkerConfig {
        table_records: false,
        ..ChunkerConfig::default()
    };
    Chunker::new(hf(), config).expect("config")
}

/// (relative path, text) of every corpus file, sorted.
pub fn corpus() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("corpus dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md" || x == "txt") {
                out.push(p);
            }
        }
    }
    let root = Path::new(CORPUS);
    let mut files = Vec::new();
    walk(root, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(root)
                .expect("prefix")
                .to_string_lossy()
                .replace('\\', "/");
            (rel, std::fs::read_to_string(&p).expect("utf-8 corpus file"))
        })
        .collect()
}

/// Whether byte `i` is on a line whose letters and digits the breadcrumb of the next chunk
/// holds, in order: a lead whose text the next chunk repeats is dropped, and its heading lives on
/// in that breadcrumb. Only letters and digits are compared: the breadcrumb holds a heading's
/// text without its markup (escapes, emphasis, code spans, `#`s, a setext underline), and plain
/// text has headings of its own syntax.
pub fn heading_named_next(src: &str, i: usize, chunks: &[Chunk]) -> bool {
    let start = src[..i].rfind('\n').map_or(0, |n| n + 1);
    let end = src[i..].find('\n').map_or(src.len(), |n| i + n);
    let letters = |s: &str| {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .collect::<String>()
    };
    chunks
        .iter()
        .find(|c| c.byte_range.start >= end)
        .and_then(|c| c.text.lines().next())
        .is_some_and(|crumb| letters(crumb).contains(&letters(&src[start..end])))
}
