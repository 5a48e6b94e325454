//! Load generator and library timer for `benches/serve_latency.sh` (not a test).
//!
//! ```text
//! serve_bench library INDEX QUESTIONS N [MODE]    # N warm searches through the library
//! serve_bench embed QUESTIONS N                   # N query embeddings alone
//! serve_bench http URL QUESTIONS CLIENTS SECONDS  # CLIENTS loopback clients for SECONDS
//! ```
//! Each prints one JSON line: requests, errors, throughput (req/s), p50_ms, p99_ms. The load is
//! bounded: every client sends one request at a time and all stop at the deadline.
//! `$RAG_INDEX_PRECISION` picks the precision and `$RAG_BENCH_EMBED_THREADS` the embedder's
//! threads (default: every core), so one binary measures each setting.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rag_index_core::{
    Access, Embedder, EmbedderConfig, IndexConfig, RagIndex, SearchMode, SearchRequest,
};

fn questions(file: &str) -> Vec<String> {
    std::fs::read_to_string(file)
        .expect("questions file")
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["question"].as_str().map(str::to_string))
        .collect()
}

fn report(
    mut latencies: Vec<Duration>,
    errors: usize,
    elapsed: Duration,
    extra: serde_json::Value,
) {
    latencies.sort();
    let pick = |q: f64| {
        let i = ((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len().max(1));
        latencies
            .get(i - 1)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let mut out = serde_json::json!({
        "requests": latencies.len(),
        "errors": errors,
        "throughput": latencies.len() as f64 / elapsed.as_secs_f64(),
        "p50_ms": pick(0.50),
        "p99_ms": pick(0.99),
    });
    if let (Some(out), Some(extra)) = (out.as_object_mut(), extra.as_object()) {
        out.extend(extra.clone());
    }
    println!("{out}");
}

/// The checkout's model, in the precision the CLI would use (`$RAG_INDEX_PRECISION`), so int8
/// can be timed too.
fn embedder() -> Embedder {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let dir = rag_index_core::resolve_model_dir(None, &[models]).expect("model");
    let mut config = EmbedderConfig::default();
    if let Some(precision) = std::env::var("RAG_INDEX_PRECISION")
        .ok()
        .filter(|p| !p.is_empty())
    {
        config.precision = precision.parse().expect("precision");
    }
    if let Ok(threads) = std::env::var("RAG_BENCH_EMBED_THREADS") {
        config.threads = Some(threads.parse().expect("RAG_BENCH_EMBED_THREADS"));
    }
    Embedder::load(&dir, config).expect("model loads")
}

fn library(index: &str, file: &str, n: usize, mode: SearchMode) {
    let embedder = Arc::new(embedder());
    let index = RagIndex::open_read_only(index.as_ref(), embedder, IndexConfig::default())
        .expect("index opens");
    let qs = questions(file);
    for q in &qs {
        index
            .search(q, &Access::public(), 5)
            .expect("warm-up search");
    }
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(n);
    for i in 0..n {
        let request = SearchRequest::new(&qs[i % qs.len()], Access::public())
            .k(5)
            .mode(mode);
        let t = Instant::now();
        index.search_with(&request).expect("search");
        latencies.push(t.elapsed());
    }
    report(
        latencies,
        0,
        started.elapsed(),
        serde_json::json!({"via": "library", "mode": format!("{mode:?}").to_lowercase()}),
    );
}

/// Times the query embedding alone: the part of a search's latency the model takes.
fn embed(file: &str, n: usize) {
    let embedder = embedder();
    let qs = questions(file);
    for q in &qs {
        embedder.embed_query(q).expect("warm-up embedding");
    }
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        embedder.embed_query(&qs[i % qs.len()]).expect("embedding");
        latencies.push(t.elapsed());
    }
    report(
        latencies,
        0,
        started.elapsed(),
        serde_json::json!({"via": "embed_query", "precision": embedder.config().precision.as_str()}),
    );
}

fn http(url: &str, file: &str, clients: usize, seconds: u64) {
    let qs = Arc::new(questions(file));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let (qs, url) = (qs.clone(), format!("{url}/search"));
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new()
                    .timeout(Duration::from_secs(60))
                    .build();
                let (mut latencies, mut errors) = (Vec::new(), 0);
                let mut i = c;
                while Instant::now() < deadline {
                    let body = serde_json::json!({"query": qs[i % qs.len()], "k": 5});
                    let t = Instant::now();
                    let read = agent
                        .post(&url)
                        .send_json(body)
                        .map(|response| response.into_string().is_ok());
                    match read {
                        Ok(true) => latencies.push(t.elapsed()),
                        _ => errors += 1,
                    }
                    i += clients;
                }
                (latencies, errors)
            })
        })
        .collect();
    let (mut all, mut errors) = (Vec::new(), 0);
    for thread in threads {
        let (latencies, e) = thread.join().expect("client thread");
        all.extend(latencies);
        errors += e;
    }
    report(
        all,
        errors,
        started.elapsed(),
        serde_json::json!({"via": "http", "clients": clients}),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["library", index, file, n] => {
            library(index, file, n.parse().expect("N"), SearchMode::default())
        }
        ["library", index, file, n, mode] => library(
            index,
            file,
            n.parse().expect("N"),
            mode.parse().expect("MODE"),
        ),
        ["embed", file, n] => embed(file, n.parse().expect("N")),
        ["http", url, file, clients, seconds] => http(
            url,
            file,
            clients.parse().expect("CLIENTS"),
            seconds.parse().expect("SECONDS"),
        ),
        _ => {
            eprintln!(
                "usage: serve_bench library INDEX QUESTIONS N [MODE] | embed QUESTIONS N | \
                 http URL QUESTIONS CLIENTS SECONDS"
            );
            std::process::exit(2);
        }
    }
}
