//! Indexes the Traefik docs' paragraphs (x5, ~20k docs) and prints build, incremental commit,
//! query latency and disk size, and what counting BM25's statistics over one caller's scope
//! costs beside the index-wide statistics. Run with `cargo bench -p rag-lexical`;
//! `RAG_LEXICAL_BENCH_COPIES=250` makes it ~1M docs.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use std::collections::HashMap;

use rag_lexical::{LexicalDoc, LexicalIndex, Scope};

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/corpora/traefik/docs"
);
const COPIES: usize = 5;

fn copies() -> usize {
    std::env::var("RAG_LEXICAL_BENCH_COPIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(COPIES)
}

fn paragraphs() -> Vec<(String, String)> {
    let root = Path::new(CORPUS);
    let (mut files, mut dirs) = (Vec::new(), vec![root.to_path_buf()]);
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("corpus directory") {
            let path: PathBuf = entry.expect("corpus entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(root)
            .expect("under root")
            .to_string_lossy()
            .into_owned();
        let text = fs::read_to_string(&file).expect("markdown file");
        for paragraph in text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
            out.push((rel.clone(), paragraph.to_string()));
        }
    }
    out
}

fn dir_size(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .expect("index dir")
        .map(|e| e.expect("entry").metadata().expect("metadata").len())
        .sum()
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let base = paragraphs();
    // Copies get their own chunk IDs and points; their text is the same, as for duplicated files.
    let copies = copies();
    let docs: Vec<(String, u64, &str, &str)> = (0..copies)
        .flat_map(|_| base.iter())
        .enumerate()
        .map(|(point, (path, text))| {
            (
                format!("{point:032x}"),
                point as u64,
                text.as_str(),
                path.as_str(),
            )
        })
        .collect();
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("lexical");
    let index = LexicalIndex::open_or_create(&dir).expect("open");

    let start = Instant::now();
    let mut batch = index.writer().expect("writer");
    for (id, point, text, path) in &docs {
        batch
            .add(LexicalDoc {
                chunk_id: id,
                point: *point,
                text,
                path,
            })
            .expect("add");
    }
    batch.commit(1).expect("commit");
    let build = start.elapsed();

    let start = Instant::now();
    let mut batch = index.writer().expect("writer");
    for (id, point, text, path) in docs.iter().take(20) {
        batch.delete(id);
        batch
            .add(LexicalDoc {
                chunk_id: id,
                point: *point,
                text,
                path,
            })
            .expect("add");
    }
    batch.commit(2).expect("commit");
    let incremental = start.elapsed();

    // 200 queries of 1 to 3 words taken across the corpus, identifiers included.
    let words: Vec<&str> = base
        .iter()
        .flat_map(|(_, t)| t.split_whitespace())
        .filter(|w| w.len() > 3)
        .collect();
    let step = words.len() / 600;
    let queries: Vec<String> = (0..200)
        .map(|q| {
            let n = 1 + q % 3;
            (0..n)
                .map(|i| words[(q * 3 + i) * step])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let mut times: Vec<Duration> = queries
        .iter()
        .map(|q| {
            let start = Instant::now();
            let hits = index.search(q, 10, None).expect("search");
            std::hint::black_box(hits);
            start.elapsed()
        })
        .collect();
    times.sort();
    let filter = |p: u64| p.is_multiple_of(100);
    let start = Instant::now();
    for q in &queries {
        std::hint::black_box(index.search(q, 10, Some(&filter)).expect("search"));
    }
    let filtered = start.elapsed() / queries.len() as u32;

    // A caller who may not see 2% of the docs, looked up in a map as the core's point table
    // does: the same allow filter, searched with index-wide and with scoped statistics.
    let hidden: HashMap<u64, bool> = docs
        .iter()
        .map(|(_, point, _, _)| (*point, point % 50 == 7))
        .collect();
    let visible = |p: u64| hidden.get(&p).is_some_and(|h| !h);
    let scope = Scope::new("bench", &visible);
    let start = Instant::now();
    std::hint::black_box(
        index
            .search_within(&queries[0], 10, Some(&visible), Some(scope))
            .expect("search"),
    );
    let first_scoped = start.elapsed();
    let mean = |scope: Option<Scope<'_>>| {
        let start = Instant::now();
        for q in &queries {
            std::hint::black_box(
                index
                    .search_within(q, 10, Some(&visible), scope)
                    .expect("search"),
            );
        }
        start.elapsed() / queries.len() as u32
    };
    let (index_wide, scoped) = (mean(None), mean(Some(scope)));

    println!(
        "| rag-lexical, {} docs ({} paragraphs x{copies}) | |",
        docs.len(),
        base.len()
    );
    println!("| --- | --- |");
    println!("| full build (add all + commit) | {} |", ms(build));
    println!("| commit deleting + adding 20 docs | {} |", ms(incremental));
    println!(
        "| query p50 (k=10, 200 queries) | {} |",
        ms(times[times.len() / 2])
    );
    println!("| query p99 | {} |", ms(times[times.len() * 99 / 100]));
    println!("| query mean with a 1% allow filter | {} |", ms(filtered));
    println!(
        "| query mean, 98% visible, index-wide statistics | {} |",
        ms(index_wide)
    );
    println!(
        "| query mean, 98% visible, statistics of what is visible | {} |",
        ms(scoped)
    );
    println!(
        "| first search of that scope (counts it per segment) | {} |",
        ms(first_scoped)
    );
    println!("| segments | {} |", index.num_segments());
    println!(
        "| disk size | {:.1} MiB |",
        dir_size(&dir) as f64 / (1 << 20) as f64
    );
}
