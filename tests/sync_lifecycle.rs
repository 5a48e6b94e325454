//! End to end with the real model on real Traefik docs: sync, answer the dev questions, then
//! edit, rename and delete files and check the index follows exactly.

mod common;

use std::collections::{BTreeSet, HashSet};

use common::*;
use serde_json::Value;

/// Small real files that are the sources of many dev questions, plus the questions' subjects.
const SUBSET: &[&str] = &[
    "reference/install-configuration/observability/healthcheck.md",
    "getting-started/faq.md",
    "contributing/submitting-pull-requests.md",
    "reference/routing-configuration/http/routing/multi-layer-routing.md",
    "security/request-path.md",
    "reference/install-configuration/experimental/fastproxy.md",
    "reference/routing-configuration/http/middlewares/compress.md",
    "reference/routing-configuration/http/middlewares/circuitbreaker.md",
    "deprecation/releases.md",
    "contributing/building-testing.md",
    "migrate/v2-to-v3.md",
];

fn chunk_ids_of(dump: &[Value], path: &str) -> BTreeSet<String> {
    dump.iter()
        .filter(|c| c["path"] == path)
        .map(|c| c["chunk_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn sync_answers_questions_and_follows_edits_renames_and_deletes() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    let index = work.path().join("index");
    copy_corpus_files(&docs, SUBSET);

    // First sync: everything is new.
    let report = sync(&docs, &index, 0);
    assert_eq!(report["files"]["added"], SUBSET.len());
    assert_eq!(report["files"]["failed"], 0);
    let total = report["chunks"]["total"].as_u64().unwrap();
    let embedded = report["chunks"]["embedded"].as_u64().unwrap();
    assert!(total >= SUBSET.len() as u64, "{report}");
    assert!(embedded > 0 && embedded <= total, "{report}");
    let first_dump = dump(&index);
    assert_eq!(first_dump.len() as u64, total);

    // The dev questions whose source is in the subset are answered from a top-10 chunk.
    let subset: HashSet<&str> = SUBSET.iter().copied().collect();
    let questions: Vec<Value> = questions()
        .into_iter()
        .filter(|q| subset.contains(q["source"].as_str().unwrap()))
        .collect();
    assert!(questions.len() >= 20);
    let queries_file = work.path().join("queries.txt");
    let lines: Vec<&str> = questions
        .iter()
        .map(|q| q["question"].as_str().unwrap())
        .collect();
    std::fs::write(&queries_file, lines.join("\n")).unwrap();
    let results = json_lines(&run_expect(
        &[
            "query",
            "--index",
            index.to_str().unwrap(),
            "--queries",
            queries_file.to_str().unwrap(),
            "-k",
            "10",
            "--json",
        ],
        0,
    ));
    assert_eq!(results.len(), questions.len(), "one result line per query");
    let mut answered = 0;
    for (question, result) in questions.iter().zip(&results) {
        assert_eq!(
            result["query"], question["question"],
            "results come in input order"
        );
        let hits = result["hits"].as_array().unwrap();
        assert!(hits.len() <= 10);
        if evidence_rank(question, hits).is_some() {
            answered += 1;
        }
    }
    let recall = answered as f64 / questions.len() as f64;
    assert!(
        recall >= 0.75,
        "recall@10 on the subset questions: {answered}/{}",
        questions.len()
    );

    // A second sync with no change reads nothing new and embeds nothing.
    let noop = sync(&docs, &index, 0);
    assert_eq!(noop["files"]["unchanged"], SUBSET.len());
    assert_eq!(noop["files"]["added"], 0);
    assert_eq!(noop["files"]["modified"], 0);
    assert_eq!(noop["chunks"]["embedded"], 0);
    assert_eq!(noop["chunks"]["total"], total);

    // Appending a paragraph to one file re-embeds only what changed in it.
    let edited = "getting-started/faq.md";
    let before_edit = chunk_ids_of(&first_dump, edited);
    let marker = "Zanzibar quokkas audit the proxy configuration every fortnight.";
    let mut text = std::fs::read_to_string(docs.join(edited)).unwrap();
    text.push_str(&format!("\n\n{marker}\n"));
    std::fs::write(docs.join(edited), text).unwrap();
    let report = sync(&docs, &index, 0);
    assert_eq!(report["files"]["modified"], 1);
    assert_eq!(report["files"]["unchanged"], SUBSET.len() - 1);
    let embedded = report["chunks"]["embedded"].as_u64().unwrap();
    assert!(
        (1..=2).contains(&embedded),
        "an appended paragraph re-embeds 1-2 chunks: {report}"
    );
    let after_edit = dump(&index);
    let after_ids = chunk_ids_of(&after_edit, edited);
    assert!(
        after_edit
            .iter()
            .any(|c| c["path"] == edited && c["text"].as_str().unwrap().contains(marker))
    );
    // Old chunks that no longer exist are gone, and the deleted count says how many.
    let gone = before_edit.difference(&after_ids).count() as u64;
    assert_eq!(report["chunks"]["deleted"], gone);
    assert_eq!(
        after_edit.len() as u64,
        report["chunks"]["total"].as_u64().unwrap()
    );
    let hits = json_lines(&run_expect(
        &[
            "query",
            "Zanzibar quokkas audit",
            "--index",
            index.to_str().unwrap(),
            "-k",
            "1",
            "--json",
        ],
        0,
    ));
    assert!(
        hits[0]["hits"][0]["text"]
            .as_str()
            .unwrap()
            .contains(marker)
    );

    // Renaming a file keeps its texts: no embedding, old path gone, new path present.
    let renamed_from = "migrate/v2-to-v3.md";
    let renamed_to = "migrate/moved/v2-to-v3-renamed.md";
    std::fs::create_dir_all(docs.join("migrate/moved")).unwrap();
    std::fs::rename(docs.join(renamed_from), docs.join(renamed_to)).unwrap();
    let report = sync(&docs, &index, 0);
    assert_eq!(report["files"]["added"], 1);
    assert_eq!(report["files"]["removed"], 1);
    assert_eq!(
        report["chunks"]["embedded"], 0,
        "renamed text is reused: {report}"
    );
    let after_rename = dump(&index);
    assert!(chunk_ids_of(&after_rename, renamed_from).is_empty());
    let old_texts: BTreeSet<&str> = after_edit
        .iter()
        .filter(|c| c["path"] == renamed_from)
        .map(|c| c["text"].as_str().unwrap())
        .collect();
    let new_texts: BTreeSet<&str> = after_rename
        .iter()
        .filter(|c| c["path"] == renamed_to)
        .map(|c| c["text"].as_str().unwrap())
        .collect();
    assert_eq!(old_texts, new_texts);

    // Deleting a file removes its chunks from dump and from query results.
    let deleted = "security/request-path.md";
    let deleted_ids = chunk_ids_of(&after_rename, deleted);
    assert!(!deleted_ids.is_empty());
    std::fs::remove_file(docs.join(deleted)).unwrap();
    let report = sync(&docs, &index, 0);
    assert_eq!(report["files"]["removed"], 1);
    assert_eq!(report["chunks"]["deleted"], deleted_ids.len());
    assert_eq!(report["chunks"]["embedded"], 0);
    let after_delete = dump(&index);
    assert!(chunk_ids_of(&after_delete, deleted).is_empty());
    assert_eq!(after_delete.len(), after_rename.len() - deleted_ids.len());
    let results = json_lines(&run_expect(
        &[
            "query",
            "How does Traefik normalize and sanitize the request path?",
            "--index",
            index.to_str().unwrap(),
            "-k",
            "20",
            "--json",
        ],
        0,
    ));
    for hit in results[0]["hits"].as_array().unwrap() {
        assert_ne!(hit["path"], deleted, "a deleted file's chunk was returned");
    }

    // The result equals a fresh index of the folder as it now is.
    let fresh = work.path().join("fresh");
    sync(&docs, &fresh, 0);
    let key = |c: &Value| {
        (
            c["chunk_id"].to_string(),
            c["path"].to_string(),
            c["text"].to_string(),
        )
    };
    let mut incremental: Vec<_> = after_delete.iter().map(key).collect();
    let mut rebuilt: Vec<_> = dump(&fresh).iter().map(key).collect();
    incremental.sort();
    rebuilt.sort();
    assert_eq!(incremental, rebuilt);

    // verify passes on the incrementally maintained index.
    let verify = json_lines(&run_expect(
        &["verify", "--index", index.to_str().unwrap(), "--json"],
        0,
    ));
    assert_eq!(verify[0]["ok"], true, "{}", verify[0]);
}

#[test]
fn a_link_turned_to_another_version_with_the_same_size_and_mtime_is_followed() {
    // Two releases of a page unpacked side by side (same size, same archive mtime) and a
    // `current.md` link switched from one to the other, as a deploy does: the link's target is
    // a different file, which its inode says even though its size and mtime are the same.
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    let index = work.path().join("index");
    let page = std::fs::read_to_string(corpus_dir().join(SUBSET[0])).unwrap();
    let at = page.rfind(|c: char| c.is_ascii_lowercase()).unwrap();
    let mut next = page.clone();
    next.replace_range(at..at + 1, &page[at..at + 1].to_ascii_uppercase());
    std::fs::create_dir_all(docs.join("releases")).unwrap();
    let released = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    for (name, text) in [("v1.md", &page), ("v2.md", &next)] {
        let path = docs.join("releases").join(name);
        std::fs::write(&path, text).unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(released).unwrap();
    }
    std::os::unix::fs::symlink("releases/v1.md", docs.join("current.md")).unwrap();
    // Past the racy window, so the next sync records every stamp as settled.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    sync(&docs, &index, 0);
    let current_text = |index: &std::path::Path| -> String {
        dump(index)
            .into_iter()
            .filter(|c| c["path"] == "current.md")
            .map(|c| c["text"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(!current_text(&index).contains(&next[at - 20..=at]));
    std::fs::remove_file(docs.join("current.md")).unwrap();
    std::os::unix::fs::symlink("releases/v2.md", docs.join("current.md")).unwrap();
    let report = sync(&docs, &index, 0);
    assert_eq!(report["files"]["modified"], 1, "{report}");
    assert!(current_text(&index).contains(&next[at - 20..=at]));
}

/// Compacting a copy of the index's store (in `scratch`) gives back next to nothing: the sync
/// left it compacted.
fn assert_compacted(index_dir: &std::path::Path, scratch: &std::path::Path) {
    let copy = scratch.join("copy.redb");
    std::fs::copy(index_dir.join("index.redb"), &copy).unwrap();
    let synced = std::fs::metadata(&copy).unwrap().len();
    let store = rag_store::Store::open_writer(&copy).unwrap();
    store.compact().unwrap();
    drop(store);
    let again = std::fs::metadata(&copy).unwrap().len();
    assert!(again * 20 >= synced * 19, "{synced} -> {again} bytes");
}

/// A reindex rewrites every chunk row even when it reuses every vector (a chunker or format
/// upgrade asks for one): the file held the old rows' space as well until compacted.
#[test]
fn a_reindex_leaves_its_store_compacted() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    copy_corpus_files(&docs, SUBSET);
    let index_dir = work.path().join("index");
    let open = || {
        let config = rag_index_core::IndexConfig::default();
        rag_index_core::RagIndex::open(&index_dir, embedder(), config).unwrap()
    };
    sync_in_process(&open(), &docs);
    // A new handle, as `sync --reindex` is a new process: one that has searched keeps a
    // snapshot, which compaction would wait out.
    let index = open();
    let mut options = rag_index_core::SyncOptions::default();
    options.reindex = true;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let report = index.sync(&docs, &options, &|_| {}, &stop).unwrap();
    assert_eq!(report.chunks.embedded, 0, "{report:?}");
    drop(index);

    assert_compacted(&index_dir, work.path());
}

/// A sync that commits its vectors in many batches leaves its store compacted: redb reuses
/// freed pages but never shrinks its file, which after such a sync held as much freed space as
/// data. Compacting a copy of the file again gives back next to nothing.
#[test]
fn a_sync_of_many_vector_batches_leaves_its_store_compacted() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    copy_corpus_files(&docs, SUBSET);
    let index_dir = work.path().join("index");
    let config = rag_index_core::IndexConfig::builder()
        .embed_commit_every(4)
        .build()
        .unwrap();
    let index = rag_index_core::RagIndex::open(&index_dir, embedder(), config).unwrap();
    let report = sync_in_process(&index, &docs);
    assert!(report.chunks.embedded >= 40, "{report:?}");
    drop(index);

    assert_compacted(&index_dir, work.path());
}
