//! Counts tokenizer calls made while chunking the corpus (cold, then warm).
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rag_chunker::{Chunker, ChunkerConfig, TokenCounter};

struct Counted(tokenizers::Tokenizer, AtomicUsize, AtomicUsize);
impl TokenCounter for Counted {
    fn count(&self, text: &str) -> usize {
        self.1.fetch_add(1, Ordering::Relaxed);
        self.2.fetch_add(text.len(), Ordering::Relaxed);
        self.0.encode_fast(text, true).map(|e| e.len()).unwrap_or(usize::MAX)
    }
}

fn main() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpora/traefik/docs");
    let tok = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/all-MiniLM-L6-v2/tokenizer.json");
    let mut t = tokenizers::Tokenizer::from_file(tok).expect("tokenizer");
    t.with_truncation(None).expect("trunc");
    t.with_padding(None);
    let c = Arc::new(Counted(t, AtomicUsize::new(0), AtomicUsize::new(0)));
    let out = std::process::Command::new("find").arg(root).arg("-name").arg("*.md").output().expect("find");
    let files: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(String::from).collect();
    let docs: Vec<(String, String)> = files.iter().map(|f| (f[root.len() + 1..].to_string(), std::fs::read_to_string(f).expect("read"))).collect();
    let chunker = Chunker::new(c.clone(), ChunkerConfig::default()).expect("cfg");
    for pass in ["cold", "warm"] {
        c.1.store(0, Ordering::Relaxed);
        c.2.store(0, Ordering::Relaxed);
        let t = Instant::now();
        let mut per: Vec<(u128, &str)> = Vec::new();
        for (p, s) in &docs {
            let t1 = Instant::now();
            chunker.chunk(p, s).expect("chunk");
            per.push((t1.elapsed().as_micros(), p));
        }
        per.sort();
        println!("{pass}: {:?}, calls {}, bytes {}", t.elapsed(), c.1.load(Ordering::Relaxed), c.2.load(Ordering::Relaxed));
        for (us, p) in per.iter().rev().take(5) {
            println!("   {us} us {p}");
        }
    }
}
