//! Crash safety: the real binary is killed with SIGKILL at random moments during syncs of real
//! docs; after each kill the next `sync` succeeds, `verify` passes, `dump` equals a fresh index
//! of the folder and the lexical index holds exactly the chunks `dump` lists. `RAG_KILL_TRIALS` (default 10) and `RAG_KILL_SEED` set how many and which;
//! `scripts/kill-trials.sh` runs a larger number.

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;

const FILES: &[&str] = &[
    "getting-started/faq.md",
    "contributing/submitting-pull-requests.md",
    "reference/routing-configuration/http/routing/multi-layer-routing.md",
    "security/request-path.md",
    "reference/routing-configuration/http/middlewares/circuitbreaker.md",
    "migrate/v2-to-v3.md",
    "getting-started/kubernetes.md",
    "contributing/building-testing.md",
];

#[test]
fn sigkill_at_random_moments_never_leaves_an_index_the_next_sync_cannot_repair() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    let index = work.path().join("index");
    copy_corpus_files(&docs, FILES);
    let trials = env_number("RAG_KILL_TRIALS", 10);
    let mut rng = fastrand::Rng::with_seed(env_number("RAG_KILL_SEED", 7));
    let mut interrupted = 0;
    // Kill delays are drawn up to a bit past how long the last sync that finished took:
    // incremental syncs take well under a second, so a fixed range would mostly kill finished
    // processes.
    let mut delay_cap_ms: u64 = 3_000;

    for trial in 0..trials {
        // Change the folder between trials so kills also land in incremental syncs.
        if trial > 0 {
            let target = docs.join(FILES[rng.usize(..FILES.len())]);
            match rng.usize(..3) {
                0 if target.exists() => {
                    let mut text = std::fs::read_to_string(&target).unwrap();
                    text.push_str(&format!("\n\nTrial {trial} appended this paragraph.\n"));
                    std::fs::write(&target, text).unwrap();
                }
                1 if target.exists() => std::fs::remove_file(&target).unwrap(),
                _ => copy_corpus_files(&docs, &[FILES[rng.usize(..FILES.len())]]),
            }
        }
        let mut child = rag_index()
            .args([
                "sync",
                docs.to_str().unwrap(),
                "--index",
                index.to_str().unwrap(),
                "--json",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let delay = Duration::from_millis(rng.u64(5..delay_cap_ms));
        let spawned = std::time::Instant::now();
        if still_running_at(&mut child, spawned, delay) {
            interrupted += 1;
        } else {
            // Finished before its kill: aim the next kills within such a sync's duration.
            let took = spawned.elapsed().as_millis() as u64;
            delay_cap_ms = (took * 3 / 2).clamp(50, 3_000);
        }
        child.kill().ok(); // SIGKILL
        child.wait().unwrap();

        let report = sync(&docs, &index, 0);
        assert!(report["errors"].as_array().unwrap().is_empty(), "{report}");
        let verify = json_lines(&run_expect(
            &["verify", "--index", index.to_str().unwrap(), "--json"],
            0,
        ));
        assert_eq!(verify[0]["ok"], true, "trial {trial}: {}", verify[0]);
        let live: std::collections::BTreeSet<(String, String, String)> = dump(&index)
            .iter()
            .map(|c| {
                let s = |k: &str| c[k].as_str().unwrap().to_owned();
                (s("chunk_id"), s("path"), s("text"))
            })
            .collect();
        assert_eq!(live, expected_chunks(&docs, Some(&index)), "trial {trial}");
        let lexical = rag_lexical::LexicalIndex::open_read_only(&index.join("lexical")).unwrap();
        let lexical_ids: std::collections::BTreeSet<String> = lexical
            .chunk_ids()
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let live_ids: std::collections::BTreeSet<String> =
            live.iter().map(|(id, _, _)| id.clone()).collect();
        assert_eq!(lexical_ids, live_ids, "trial {trial}: lexical index");
        assert!(
            !std::fs::read_dir(&index)
                .unwrap()
                .flatten()
                .any(|e| { e.file_name().to_string_lossy().ends_with(".tmp") })
        );
    }
    eprintln!("{interrupted} of {trials} kills interrupted a running sync");
    assert!(
        interrupted > 0 || trials == 0,
        "no kill landed inside a sync"
    );

    // Vectors equal a fresh index's.
    let fresh = work.path().join("fresh");
    sync(&docs, &fresh, 0);
    let vectors = |dir: &std::path::Path| -> std::collections::BTreeMap<String, Value> {
        json_lines(&run_expect(
            &["dump", "--index", dir.to_str().unwrap(), "--vectors"],
            0,
        ))
        .into_iter()
        .map(|c| {
            (
                c["chunk_id"].as_str().unwrap().to_owned(),
                c["vector"].clone(),
            )
        })
        .collect()
    };
    let (ours, theirs) = (vectors(&index), vectors(&fresh));
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (id, v) in &ours {
        assert!(cosine(v, &theirs[id]) > 0.9999, "vector of {id} differs");
    }
}
