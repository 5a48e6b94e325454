//! Embedding throughput on the Traefik docs corpus, side by side with sentence-transformers.
//!
//! ```text
//! cargo bench -p rag-embed --bench embed_throughput
//! ```
//!
//! The corpus is cut into Markdown chunks of at most 256 tokens (blocks split at blank lines,
//! fences kept whole, packed greedily), the way an indexer would feed the embedder. Each
//! configuration runs in a child process with `CANDLE_NUM_THREADS` and `RAYON_NUM_THREADS` set,
//! because candle sizes its element-wise pool once per process. The peer,
//! `benches/peers/sentence_transformers_embed.sh`, embeds the same texts with the same model
//! folder and `torch.set_num_threads` equal; it sets up its own virtual environment on first
//! use.
//!
//! Every rag-embed configuration runs in both precisions (`f32`, `int8`) on the same texts, so
//! the int8 speed-up is read off one run.
//!
//! Environment knobs (all optional):
//! - `RAG_BENCH_THREADS` (default `1,2`), `RAG_BENCH_BATCHES` (default `8,16,32`)
//! - `RAG_BENCH_PRECISIONS` (default `f32,int8`)
//! - `RAG_BENCH_LIMIT`: embed an evenly spread subset of this many chunks (default: all)
//! - `RAG_BENCH_PEER` (`0` skips sentence-transformers), `RAG_BENCH_PEER_BATCH` (default `32`)
//! - `RAG_BENCH_TEXTS_OUT`: keep the chunk texts (JSON lines) at this path
//! - `RAG_INDEX_MODEL_DIR`: model folder (default: `models/all-MiniLM-L6-v2`)

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rag_embed::{Embedder, EmbedderConfig, Precision, resolve_model_dir};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn env_list(name: &str, default: &str) -> Vec<usize> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .filter(|&n| n > 0)
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(pos) = args.iter().position(|a| a == "--child") {
        child(&args[pos + 1..]);
        return;
    }
    parent();
}

/// `--child THREADS BATCH PRECISION TEXTS_FILE`: embed every text once, print one RESULT line.
fn child(args: &[String]) {
    let threads: usize = args[0].parse().expect("threads");
    let batch_size: usize = args[1].parse().expect("batch size");
    let precision: Precision = args[2].parse().expect("precision");
    let texts = read_texts(Path::new(&args[3]));
    let dir = resolve_model_dir(None, &[root().join("models")]).expect("model");
    let config = EmbedderConfig {
        batch_size,
        threads: Some(threads),
        precision,
        ..EmbedderConfig::default()
    };
    let embedder = Embedder::load(&dir, config).expect("load");
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    // Warm-up: thread pools, page-in of weights, allocator.
    embedder
        .embed_documents(&refs[..refs.len().min(batch_size)])
        .expect("warm-up");
    let start = Instant::now();
    let vectors = embedder.embed_documents(&refs).expect("embed");
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(vectors.len(), refs.len());
    println!("RESULT {secs}");
}

fn parent() {
    let threads = env_list("RAG_BENCH_THREADS", "1,2");
    let batches = env_list("RAG_BENCH_BATCHES", "8,16,32");
    let precisions: Vec<Precision> = std::env::var("RAG_BENCH_PRECISIONS")
        .unwrap_or_else(|_| "f32,int8".to_string())
        .split(',')
        .map(|p| p.parse().expect("RAG_BENCH_PRECISIONS: f32 or int8"))
        .collect();
    let peer_batch = env_list("RAG_BENCH_PEER_BATCH", "32")
        .first()
        .copied()
        .unwrap_or(32);
    let run_peer = std::env::var("RAG_BENCH_PEER")
        .map(|v| v != "0")
        .unwrap_or(true);
    let limit = std::env::var("RAG_BENCH_LIMIT")
        .ok()
        .and_then(|v| v.parse::<usize>().ok());

    let dir = resolve_model_dir(None, &[root().join("models")]).expect("model folder");
    let embedder = Embedder::load(&dir, EmbedderConfig::default()).expect("load");
    let corpus = root().join("../shared/corpora/traefik/docs");
    let mut texts = chunk_corpus(&corpus, &embedder);
    let all = texts.len();
    if let Some(limit) = limit.filter(|&l| l < all) {
        let step = all as f64 / limit as f64;
        texts = (0..limit)
            .map(|i| texts[(i as f64 * step) as usize].clone())
            .collect();
    }
    let lengths: Vec<usize> = texts
        .iter()
        .map(|t| embedder.document_token_ids(t).expect("tokenize").len())
        .collect();
    let tokens: usize = lengths.iter().sum();
    println!(
        "corpus: {} chunks of {} ({} tokens incl. specials, mean {:.1}, max {}), model {}",
        texts.len(),
        all,
        tokens,
        tokens as f64 / texts.len() as f64,
        lengths.iter().max().unwrap_or(&0),
        embedder.fingerprint().id()
    );

    let keep = std::env::var_os("RAG_BENCH_TEXTS_OUT").map(PathBuf::from);
    let file = keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("rag-embed-bench-{}.jsonl", std::process::id()))
    });
    {
        let mut out = std::io::BufWriter::new(std::fs::File::create(&file).expect("texts file"));
        for t in &texts {
            writeln!(out, "{}", serde_json::json!({ "text": t })).expect("write");
        }
    }

    println!();
    // rag-embed packs a batch without padding (dense layers on real tokens only, attention per
    // sequence), so its computed/real token ratio is 1 by construction; sentence-transformers
    // pads each length-sorted batch to its longest text.
    println!(
        "| engine | precision | threads | batch | computed/real tokens | seconds | tokens/s | chunks/s |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let me = std::env::current_exe().expect("current exe");
    let mut best = Vec::new();
    for &t in &threads {
        let mut best_tps = vec![0f64; precisions.len()];
        for &b in &batches {
            for (pi, precision) in precisions.iter().enumerate() {
                let output = Command::new(&me)
                    .args([
                        "--child",
                        &t.to_string(),
                        &b.to_string(),
                        precision.as_str(),
                    ])
                    .arg(&file)
                    .env("CANDLE_NUM_THREADS", t.to_string())
                    .env("RAYON_NUM_THREADS", t.to_string())
                    .output()
                    .expect("run child");
                let stdout = String::from_utf8_lossy(&output.stdout);
                let Some(secs) = stdout
                    .lines()
                    .find_map(|l| l.strip_prefix("RESULT "))
                    .and_then(|s| s.trim().parse::<f64>().ok())
                else {
                    eprintln!("child failed: {}", String::from_utf8_lossy(&output.stderr));
                    continue;
                };
                let tps = tokens as f64 / secs;
                best_tps[pi] = best_tps[pi].max(tps);
                println!(
                    "| candle (rag-embed) | {precision} | {t} | {b} | 1.000 (sorted+padded would be {:.3}) | {secs:.1} | {tps:.0} | {:.1} |",
                    padding_ratio(&lengths, b),
                    texts.len() as f64 / secs
                );
            }
        }
        let peer = if run_peer {
            run_sentence_transformers(&dir, &file, t, peer_batch)
        } else {
            None
        };
        if let Some(secs) = peer {
            let tps = tokens as f64 / secs;
            println!(
                "| sentence-transformers | f32 | {t} | {peer_batch} | {:.3} | {secs:.1} | {tps:.0} | {:.1} |",
                padding_ratio(&lengths, peer_batch),
                texts.len() as f64 / secs
            );
        }
        best.push((t, best_tps, peer.map(|s| tokens as f64 / s)));
    }
    println!();
    for (t, tps, peer) in best {
        let mut line = format!("{t} thread(s): best");
        for (precision, candle) in precisions.iter().zip(&tps) {
            line.push_str(&format!(" {precision} {candle:.0}"));
        }
        line.push_str(" tokens/s");
        if let (Some(f32_pos), Some(int8_pos)) = (
            precisions.iter().position(|&p| p == Precision::F32),
            precisions.iter().position(|&p| p == Precision::Int8),
        ) {
            line.push_str(&format!("; int8/f32 {:.2}x", tps[int8_pos] / tps[f32_pos]));
        }
        match peer {
            Some(p) => {
                line.push_str(&format!("; sentence-transformers {p:.0} tokens/s"));
                for (precision, candle) in precisions.iter().zip(&tps) {
                    line.push_str(&format!("; {precision}/peer {:.2}x", candle / p));
                }
            }
            None => line.push_str(" (no peer run)"),
        }
        println!("{line}");
    }
    if keep.is_none() {
        let _ = std::fs::remove_file(&file);
    }
}

/// Padded tokens / real tokens when batches are formed after sorting by length.
fn padding_ratio(lengths: &[usize], batch: usize) -> f64 {
    let mut sorted = lengths.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let padded: usize = sorted.chunks(batch).map(|c| c[0] * c.len()).sum();
    padded as f64 / sorted.iter().sum::<usize>() as f64
}

fn run_sentence_transformers(
    model: &Path,
    texts: &Path,
    threads: usize,
    batch: usize,
) -> Option<f64> {
    let script = root().join("benches/peers/sentence_transformers_embed.sh");
    let output = Command::new("bash")
        .arg(&script)
        .arg("--model")
        .arg(model)
        .arg("--texts")
        .arg(texts)
        .args([
            "--threads",
            &threads.to_string(),
            "--batch-size",
            &batch.to_string(),
        ])
        .output();
    match output {
        Ok(out) if out.status.success() => {
            let stdout = String::from_utf8_lossy(&out.stdout);
            let line = stdout.lines().rev().find(|l| l.starts_with('{'))?;
            let v: serde_json::Value = serde_json::from_str(line).ok()?;
            v.get("seconds").and_then(|s| s.as_f64())
        }
        Ok(out) => {
            eprintln!(
                "sentence-transformers peer failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            None
        }
        Err(e) => {
            eprintln!("cannot run {}: {e}", script.display());
            None
        }
    }
}

fn read_texts(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("texts file")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json line");
            v["text"].as_str().expect("text").to_string()
        })
        .collect()
}

/// Cuts every Markdown file into chunks of at most `max_seq_len` tokens: blocks split at blank
/// lines outside fences, packed greedily. A block longer than the cap becomes its own chunk
/// (and is truncated by the embedder, as it would be in a naive indexer).
fn chunk_corpus(dir: &Path, embedder: &Embedder) -> Vec<String> {
    let mut files = Vec::new();
    collect_markdown(dir, &mut files);
    files.sort();
    let cap = embedder.max_seq_len();
    let mut chunks = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read markdown");
        let mut current = String::new();
        let mut current_tokens = 0;
        for block in blocks(&text) {
            // Specials are counted once per chunk, not once per block.
            let n = embedder.count_tokens(block).saturating_sub(2);
            if !current.is_empty() && current_tokens + n + 2 > cap {
                chunks.push(std::mem::take(&mut current));
                current_tokens = 0;
            }
            if !current.is_empty() {
                current.push_str("\n\n");
            }
            current.push_str(block);
            current_tokens += n;
        }
        if !current.trim().is_empty() {
            chunks.push(current);
        }
    }
    chunks
}

fn blocks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    let mut in_fence = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        }
        if trimmed.is_empty() && !in_fence {
            if let Some(s) = start.take() {
                out.push(text[s..offset].trim_end());
            }
        } else if start.is_none() {
            start = Some(offset);
        }
        offset += line.len();
    }
    if let Some(s) = start {
        out.push(text[s..].trim_end());
    }
    out
}

fn collect_markdown(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        panic!("cannot read corpus folder {}", dir.display());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_markdown(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}
