//! Nothing reaches stdout (rag-index's `--json` output shares it), even past hnsw_rs's
//! 50,000-insert progress message and through save, load and failing loads.
//!
//! The test re-runs its own binary with a probe variable set and `--nocapture`, so that output
//! from any thread (rayon's included) would show up between the probe's markers.

mod common;

use std::process::Command;

use common::random_items;
use rag_vector_index::{IndexParams, VectorIndex};

const PROBE: &str = "RAG_VECTOR_INDEX_STDOUT_PROBE";
const BEGIN: &str = "<<probe-begin>>";
const END: &str = "<<probe-end>>";

fn workload() {
    let params = IndexParams {
        ef_construction: 16,
        max_connections: 8,
        exact_below: 0,
        ..IndexParams::default()
    };
    let items = random_items(41, 60_000, 8, 0);
    let mut index = VectorIndex::build(8, params.clone(), items).unwrap();
    for (id, v) in random_items(42, 100, 8, 1_000_000) {
        index.insert(id, &v).unwrap();
    }
    for id in 0..20_000 {
        index.delete(id);
    }
    let q = random_items(43, 1, 8, 0).remove(0).1;
    index.search(&q, 10, None).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    index.save(&dir).unwrap();
    assert!(index.save(&dir).is_err());
    let mut loaded = VectorIndex::load(&dir, params.clone()).unwrap();
    loaded.insert(7_000_000, &q).unwrap();
    loaded.compact().unwrap();
    // The hnsw_rs dump is read on first need: without it the index still loads for searching,
    // and the first insert rebuilds the graph from the saved vectors.
    std::fs::remove_file(dir.join("graph.hnsw.graph")).unwrap();
    let mut lazy = VectorIndex::load(&dir, params.clone()).unwrap();
    lazy.insert(8_000_000, &q).unwrap();
    std::fs::remove_file(dir.join("search.bin")).unwrap();
    assert!(VectorIndex::load(&dir, params.clone()).is_err());
    assert!(VectorIndex::load(&tmp.path().join("missing"), params).is_err());
}

#[test]
fn nothing_is_printed_to_stdout() {
    if std::env::var_os(PROBE).is_some() {
        println!("{BEGIN}");
        workload();
        println!("{END}");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([
            "--exact",
            "nothing_is_printed_to_stdout",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROBE, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "probe failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let begin = stdout.find(BEGIN).expect("begin marker") + BEGIN.len();
    let end = stdout.find(END).expect("end marker");
    let between = stdout[begin..end].trim();
    assert!(between.is_empty(), "stdout got: {between:?}");
}
