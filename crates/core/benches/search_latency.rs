//! Warm search latency in the library, per mode, over the dev question set, unfiltered and with a
//! filter that ~1% of the chunks pass (whole files, by path: applied inside each signal), plus
//! the time to rebuild the lexical index from the stored chunks (what a sync adds on a reindex or
//! repair).
//!
//! `cargo bench -p rag-index-core --bench search_latency -- [INDEX_DIR] [QUESTIONS]`, defaults
//! `/tmp/tr-idx` (made by `rag-index sync ../shared/corpora/traefik/docs --index /tmp/tr-idx`) and
//! the Traefik question set. Prints a table; asserts nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rag_index_core::{
    Condition, Embedder, EmbedderConfig, Fusion, IndexConfig, Op, RagIndex, SearchMode,
    SearchRequest,
};
use rag_lexical::{LexicalDoc, LexicalIndex};

const ROUNDS: usize = 5;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = args
        .first()
        .map_or_else(|| PathBuf::from("/tmp/tr-idx"), PathBuf::from);
    let questions = args.get(1).map_or_else(
        || root.join("../shared/corpora/traefik/questions.jsonl"),
        PathBuf::from,
    );
    if !dir.join(rag_index_core::DB_FILE).is_file() {
        eprintln!("no index at {}: sync one first", dir.display());
        return;
    }
    let model = rag_index_core::resolve_model_dir(None, &[root.join("models")]).expect("model");
    let embedder = Arc::new(Embedder::load(&model, EmbedderConfig::default()).expect("model"));
    let index = RagIndex::open_read_only(&dir, embedder, IndexConfig::default()).expect("index");
    let text = std::fs::read_to_string(&questions).expect("questions");
    let questions = rag_index_core::eval::parse_questions(&text).expect("questions parse");
    let chunks = index.dump().expect("dump");
    println!(
        "{} chunks, {} queries x {ROUNDS} rounds, k = 10, warm",
        chunks.len(),
        questions.len()
    );
    println!(
        "{:<16} {:>9} {:>9} {:>9}",
        "mode", "p50 ms", "p99 ms", "mean ms"
    );
    // Files in path order until they hold 1% of the chunks: a filter as selective as that.
    let mut per_file: std::collections::BTreeMap<&str, usize> = Default::default();
    for c in &chunks {
        *per_file.entry(c.path.as_str()).or_default() += 1;
    }
    let (mut picked, mut passing) = (Vec::new(), 0);
    for (path, n) in per_file.iter().step_by(7) {
        if passing * 100 >= chunks.len() {
            break;
        }
        picked.push(path.to_string());
        passing += n;
    }
    let one_percent = Condition::new("path", Op::Eq, picked.clone()).expect("condition");
    println!(
        "filter: {} files holding {passing} of {} chunks ({:.2}%)",
        picked.len(),
        chunks.len(),
        passing as f64 * 100.0 / chunks.len() as f64
    );
    let settings = [
        ("dense", SearchMode::Dense, Fusion::RRF, false),
        ("dense 1%", SearchMode::Dense, Fusion::RRF, true),
        ("lexical", SearchMode::Lexical, Fusion::RRF, false),
        ("lexical 1%", SearchMode::Lexical, Fusion::RRF, true),
        ("hybrid rrf", SearchMode::Hybrid, Fusion::RRF, false),
        ("hybrid convex", SearchMode::Hybrid, Fusion::CONVEX, false),
        ("hybrid convex 1%", SearchMode::Hybrid, Fusion::CONVEX, true),
    ];
    for (name, mode, fusion, filtered) in settings {
        let mut request = SearchRequest::new("", rag_index_core::Access::public())
            .k(10)
            .mode(mode)
            .fusion(fusion);
        if filtered {
            request = request.filter(one_percent.clone());
        }
        let mut short = 0;
        for q in &questions {
            index
                .search_with(&request.with_query(q.question.as_str()))
                .expect("search");
        }
        let mut times = Vec::with_capacity(questions.len() * ROUNDS);
        for _ in 0..ROUNDS {
            for q in &questions {
                let request = request.with_query(q.question.as_str());
                let started = Instant::now();
                let hits = index.search_with(&request).expect("search");
                times.push(started.elapsed());
                short += usize::from(mode == SearchMode::Dense && hits.len() < 10.min(passing));
            }
        }
        times.sort();
        let mean = times.iter().sum::<Duration>() / times.len() as u32;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "{name:<16} {:>9.2} {:>9.2} {:>9.2}{}",
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.99)),
            ms(mean),
            match short {
                0 => String::new(),
                n => format!("  ({n} searches returned fewer than k)"),
            }
        );
    }

    // What a no-op sync adds: opening the lexical index read-only to check its generation.
    let started = Instant::now();
    for _ in 0..20 {
        std::hint::black_box(LexicalIndex::open_read_only(&dir.join("lexical")).expect("open"));
    }
    println!(
        "lexical read-only open (no-op sync check): {:.2} ms",
        started.elapsed().as_secs_f64() * 1e3 / 20.0
    );

    let scratch = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let lexical = LexicalIndex::create_fresh(&scratch.path().join("lexical")).expect("create");
    let mut batch = lexical.writer().expect("writer");
    for (point, chunk) in chunks.iter().enumerate() {
        batch
            .add(LexicalDoc {
                chunk_id: &chunk.chunk_id,
                point: point as u64,
                text: &chunk.text,
                path: &chunk.path,
            })
            .expect("add");
    }
    batch.commit(1).expect("commit");
    println!(
        "lexical rebuild of {} chunks (create, add, fsynced commit): {:.0} ms",
        chunks.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
}
