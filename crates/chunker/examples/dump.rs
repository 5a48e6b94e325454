//! Prints the chunks of one file: `cargo run -p rag-chunker --example dump -- PATH [ROOT]`.

use std::sync::Arc;

use rag_chunker::{Chunker, ChunkerConfig};

#[path = "../tests/common/hf.rs"]
mod hf;
use hf::Hf;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/corpora/traefik/docs"
    );
    let Some(rel) = args.get(1) else {
        eprintln!("usage: dump RELATIVE_PATH (inside shared/corpora/traefik/docs)");
        std::process::exit(2);
    };
    let src = std::fs::read_to_string(format!("{root}/{rel}")).expect("read");
    let chunker = Chunker::new(Arc::new(Hf::load()), ChunkerConfig::default()).expect("config");
    let doc = chunker.chunk(rel, &src).expect("chunk");
    for c in &doc.chunks {
        println!(
            "===== #{} {:?} tokens={} range={:?} meta={:?}",
            c.ordinal,
            c.heading_path,
            c.tokens,
            c.byte_range,
            c.metadata.get("table_keys").map(|v| v.to_string().len())
        );
        println!("{}", c.text);
    }
}
