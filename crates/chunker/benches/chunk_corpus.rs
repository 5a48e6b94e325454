//! Chunks the whole Traefik corpus with the real tokenizer and reports MB/s next to one plain
//! tokenizer pass over the same text, in the same run, both parallel across files with rayon.
//!
//! `cargo bench -p rag-chunker --bench chunk_corpus` (set RAYON_NUM_THREADS to change threads).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rag_chunker::{Chunker, ChunkerConfig, TokenCounter};
use rayon::prelude::*;

#[path = "../tests/common/hf.rs"]
mod hf;
use hf::Hf;

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/corpora/traefik/docs"
);
const ROUNDS: usize = 5;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("corpus dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

fn best<F: FnMut()>(mut f: F) -> Duration {
    (0..ROUNDS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn mbps(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn main() {
    // `cargo test --benches` runs bench targets with --bench absent: skip the long run there.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let mut paths = Vec::new();
    files(Path::new(CORPUS), &mut paths);
    paths.sort();
    let docs: Vec<(String, String)> = paths
        .iter()
        .map(|p| {
            let rel = p
                .strip_prefix(CORPUS)
                .expect("prefix")
                .to_string_lossy()
                .into_owned();
            (rel, std::fs::read_to_string(p).expect("utf-8"))
        })
        .collect();
    let bytes: usize = docs.iter().map(|(_, s)| s.len()).sum();
    let hf = Arc::new(Hf::load());
    let threads = rayon::current_num_threads();
    println!(
        "corpus: {} files, {:.2} MB; rayon threads: {threads}; best of {ROUNDS}",
        docs.len(),
        bytes as f64 / 1e6
    );

    let tokenize = best(|| {
        let n: usize = docs.par_iter().map(|(_, s)| hf.count(s)).sum();
        assert!(n > 0);
    });
    let tokenize_1t = best(|| {
        let n: usize = docs.iter().map(|(_, s)| hf.count(s)).sum();
        assert!(n > 0);
    });

    let run = |chunker: &Chunker| -> usize {
        docs.par_iter()
            .map(|(p, s)| chunker.chunk(p, s).expect("chunk").chunks.len())
            .sum()
    };
    // Cold: a fresh chunker each round, so every distinct word goes through the tokenizer.
    let mut chunks = 0;
    let cold = best(|| {
        let chunker = Chunker::new(hf.clone(), ChunkerConfig::default()).expect("config");
        chunks = run(&chunker);
    });
    // Warm: the word cache filled by an earlier pass (re-indexing after edits).
    let warm_chunker = Chunker::new(hf.clone(), ChunkerConfig::default()).expect("config");
    run(&warm_chunker);
    let warm = best(|| {
        run(&warm_chunker);
    });
    let cold_1t = best(|| {
        let chunker = Chunker::new(hf.clone(), ChunkerConfig::default()).expect("config");
        let n: usize = docs
            .iter()
            .map(|(p, s)| chunker.chunk(p, s).expect("chunk").chunks.len())
            .sum();
        assert_eq!(n, chunks);
    });

    let row = |name: &str, d: Duration| {
        println!(
            "{name:<40} {:>8.1} ms {:>8.2} MB/s {:>6.2}x tokenizer pass",
            d.as_secs_f64() * 1e3,
            mbps(bytes, d),
            d.as_secs_f64() / tokenize.as_secs_f64()
        );
    };
    row("tokenizer pass (encode_fast, parallel)", tokenize);
    row("chunk, cold word cache (parallel)", cold);
    row("chunk, warm word cache (parallel)", warm);
    row("tokenizer pass (1 thread)", tokenize_1t);
    row("chunk, cold word cache (1 thread)", cold_1t);
    println!("chunks: {chunks}");
}
