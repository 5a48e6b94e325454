//! The PostgreSQL backend against a real PostgreSQL 16 + pgvector server (started by
//! `scripts/pg.sh`, stopped at the end): the same lifecycle as the embedded index (the index
//! equals a fresh one after every sync, kill -9 included), one writer per collection, labels
//! and selective filters inside the SQL search, and a lost connection leaving the last state.

mod common;
#[path = "common/pg.rs"]
mod pg_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use pg_support::PgServer;
use rag_index_core::{
    Access, Condition, Error, IndexConfig, OpenMode, PathGlob, RagIndex, SearchMode, SearchRequest,
    StoreLocation,
};
use serde_json::Value;

const FILES: &[&str] = &[
    "getting-started/faq.md",
    "security/request-path.md",
    "reference/routing-configuration/http/middlewares/circuitbreaker.md",
    "contributing/building-testing.md",
    "reference/routing-configuration/http/routing/multi-layer-routing.md",
    "getting-started/kubernetes.md",
];

fn pg_command(url: &str, collection: &str, args: &[&str]) -> Command {
    let mut cmd = rag_index();
    cmd.args(args)
        .args(["--store", url, "--collection", collection]);
    cmd
}

fn pg_run(url: &str, collection: &str, args: &[&str], code: i32) -> String {
    let out = pg_command(url, collection, args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "rag-index {args:?} --collection {collection}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn pg_sync(url: &str, collection: &str, docs: &Path) -> Value {
    let out = pg_run(
        url,
        collection,
        &["sync", docs.to_str().unwrap(), "--json"],
        0,
    );
    json_lines(&out).remove(0)
}

/// Chunks by ID without the times that record when an index first saw them.
fn live(chunks: Vec<Value>) -> BTreeMap<String, Value> {
    chunks
        .into_iter()
        .map(|mut chunk| {
            let metadata = chunk["metadata"].as_object_mut().unwrap();
            metadata.remove("indexed_at");
            metadata.remove("changed_at");
            (chunk["chunk_id"].as_str().unwrap().to_string(), chunk)
        })
        .collect()
}

/// Opens `location` as its one writer, failing (not waiting) while another writer holds it.
fn open_writer(location: &StoreLocation) -> Result<RagIndex, Error> {
    RagIndex::open_at(
        location,
        embedder(),
        IndexConfig::default(),
        OpenMode::Writer { wait: false },
    )
}

fn pg_dump(url: &str, collection: &str) -> BTreeMap<String, Value> {
    live(json_lines(&pg_run(url, collection, &["dump"], 0)))
}

/// Sets the mtime of `path` to a fixed time in 2020.
fn set_back(path: &Path) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000))
        .unwrap();
}

#[test]
fn postgres_index_equals_the_embedded_one_and_a_fresh_one_through_edits() {
    let pg = PgServer::start();
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    let index = work.path().join("index");
    copy_corpus_files(&docs, &FILES[..5]);

    let first = pg_sync(&pg.url, "docs", &docs);
    assert_eq!(first["files"]["added"], 5);
    sync(&docs, &index, 0);
    assert_eq!(pg_dump(&pg.url, "docs"), live(dump(&index)));

    // Nothing changed: nothing embedded, nothing written.
    let again = pg_sync(&pg.url, "docs", &docs);
    assert_eq!(again["chunks"]["embedded"], 0, "{again}");
    assert_eq!(again["files"]["unchanged"], 5);

    // An edit, a deletion, a new file and a touch (new mtime, same bytes), on both backends.
    let provenance = |path: &str| -> BTreeMap<String, (Value, Value, Value)> {
        json_lines(&pg_run(&pg.url, "docs", &["dump"], 0))
            .into_iter()
            .filter(|c| c["path"] == path)
            .map(|c| {
                let m = &c["metadata"];
                let id = c["chunk_id"].as_str().unwrap().to_string();
                (
                    id,
                    (
                        m["changed_at"].clone(),
                        m["size"].clone(),
                        m["modified"].clone(),
                    ),
                )
            })
            .collect()
    };
    let before_edit = provenance(FILES[0]);
    let before_touch = provenance(FILES[2]);
    let touched = docs.join(FILES[2]);
    set_back(&touched);
    let edited = docs.join(FILES[0]);
    let mut text = std::fs::read_to_string(&edited).unwrap();
    text.push_str("\n\n## Added section\n\nA paragraph that only exists after the edit.\n");
    std::fs::write(&edited, text).unwrap();
    std::fs::remove_file(docs.join(FILES[1])).unwrap();
    copy_corpus_files(&docs, &FILES[5..]);
    let report = pg_sync(&pg.url, "docs", &docs);
    assert_eq!(report["files"]["modified"], 1, "{report}");
    assert_eq!(report["files"]["removed"], 1, "{report}");
    assert_eq!(report["files"]["added"], 1, "{report}");
    sync(&docs, &index, 0);
    let incremental = pg_dump(&pg.url, "docs");
    assert_eq!(incremental, live(dump(&index)));
    // Chunks the edit left alone keep when their text appeared and take the file's new size
    // and time; a touched file's chunks take its new time and keep the rest.
    let after_edit = provenance(FILES[0]);
    let size = std::fs::metadata(&edited).unwrap().len();
    let kept: Vec<&String> = before_edit
        .keys()
        .filter(|id| after_edit.contains_key(*id))
        .collect();
    assert!(
        !kept.is_empty() && kept.len() < after_edit.len(),
        "{after_edit:?}"
    );
    for id in kept {
        let (changed_at, _, _) = &before_edit[id];
        let (changed_at_now, size_now, _) = &after_edit[id];
        assert_eq!(changed_at_now, changed_at, "{id}");
        assert_eq!(size_now, &Value::from(size), "{id}");
    }
    let after_touch = provenance(FILES[2]);
    assert_eq!(after_touch.len(), before_touch.len());
    for (id, (changed_at, size, modified)) in &after_touch {
        assert_eq!(
            (changed_at, size),
            (&before_touch[id].0, &before_touch[id].1)
        );
        assert_eq!(modified, "2020-09-13T12:26:40Z", "{id}");
    }
    assert!(
        incremental.values().all(|c| c["path"] != FILES[1]),
        "no row of a deleted file is left"
    );

    // Rewritten in place with its size kept and its mtime set back, as `cp -p`, `tar x` or
    // `touch -r` leave a file: the manifest's ctime and inode say it changed, on both backends.
    // The wait lets the touch leave the racy window, in which any stat is re-hashed anyway,
    // and the syncs after it record the file as settled.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    pg_sync(&pg.url, "docs", &docs);
    sync(&docs, &index, 0);
    let text = std::fs::read_to_string(&touched).unwrap();
    let at = text.rfind(|c: char| c.is_ascii_lowercase()).unwrap();
    let mut same_size = text.clone();
    same_size.replace_range(at..at + 1, &text[at..at + 1].to_ascii_uppercase());
    std::fs::write(&touched, &same_size).unwrap();
    set_back(&touched);
    let report = pg_sync(&pg.url, "docs", &docs);
    assert_eq!(report["files"]["modified"], 1, "{report}");
    let report = sync(&docs, &index, 0);
    assert_eq!(report["files"]["modified"], 1, "{report}");
    let incremental = pg_dump(&pg.url, "docs");
    assert_eq!(incremental, live(dump(&index)));
    assert!(
        incremental.values().any(|c| c["path"] == FILES[2]
            && c["text"]
                .as_str()
                .unwrap()
                .contains(&same_size[at - 20..=at])),
        "the rewritten text is indexed"
    );
    assert_eq!(
        pg.psql("SELECT count(*) FROM rag_index.files WHERE ctime_ns IS NULL OR inode IS NULL")
            .trim(),
        "0",
        "every manifest row keeps its stamp"
    );
    assert_eq!(
        pg.psql(&format!(
            "SELECT count(*) FROM rag_index.chunks WHERE path = '{}'",
            FILES[1]
        ))
        .trim(),
        "0"
    );

    // A fresh collection of the same folder holds exactly the same chunks, and its vectors
    // came from the cache the first collection filled.
    let fresh = pg_sync(&pg.url, "fresh", &docs);
    assert_eq!(fresh["chunks"]["embedded"], 0, "{fresh}");
    assert_eq!(pg_dump(&pg.url, "fresh"), incremental);

    let verify: Value =
        serde_json::from_str(&pg_run(&pg.url, "docs", &["verify", "--json"], 0)).unwrap();
    assert_eq!(verify["ok"], true, "{verify}");

    // Each collection has its own valid HNSW index, built after its first load. A reindex
    // writes the collection anew under a new ID and leaves no index of the old one behind.
    let vector_indexes = || {
        pg.psql(
            "SELECT k.name || ':' || i.indisvalid FROM pg_index i \
             JOIN pg_class c ON c.oid = i.indexrelid \
             JOIN rag_index.collections k ON c.relname = 'chunks_hnsw_c' || k.id || '_d384' \
             ORDER BY 1",
        )
    };
    let all_hnsw = || {
        pg.psql("SELECT count(*) FROM pg_class WHERE relname LIKE 'chunks\\_hnsw\\_%'")
            .trim()
            .to_string()
    };
    assert_eq!(vector_indexes(), "docs:true\nfresh:true\n");
    let old_id = pg.psql("SELECT id FROM rag_index.collections WHERE name = 'docs'");
    let reindexed: Value = serde_json::from_str(&pg_run(
        &pg.url,
        "docs",
        &["sync", docs.to_str().unwrap(), "--reindex", "--json"],
        0,
    ))
    .unwrap();
    assert_eq!(reindexed["chunks"]["embedded"], 0, "{reindexed}");
    assert_ne!(
        pg.psql("SELECT id FROM rag_index.collections WHERE name = 'docs'"),
        old_id
    );
    assert_eq!(pg_dump(&pg.url, "docs"), incremental);
    assert_eq!(vector_indexes(), "docs:true\nfresh:true\n");
    assert_eq!(all_hnsw(), "2", "the replaced collection's index is gone");

    // A database of schema version 1 (one HNSW index per dimension, no `dim` column) migrates
    // when a newer rag-index first opens it: its data stays as it was and each collection
    // gets its own index.
    pg.psql(
        "DO $$ DECLARE names text[]; BEGIN \
         SELECT array_agg(relname) INTO names FROM pg_class \
         WHERE relname LIKE 'chunks\\_hnsw\\_c%'; \
         FOR i IN 1 .. array_length(names, 1) LOOP \
         EXECUTE 'DROP INDEX rag_index.' || quote_ident(names[i]); END LOOP; END $$; \
         CREATE INDEX chunks_hnsw_384 ON rag_index.chunks \
         USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE dim = 384; \
         ALTER TABLE rag_index.collections DROP COLUMN dim; \
         ALTER TABLE rag_index.chunks RESET (fillfactor); \
         ALTER TABLE rag_index.files DROP COLUMN ctime_ns, DROP COLUMN inode; \
         DELETE FROM rag_index.schema_version WHERE version >= 2",
    );
    assert_eq!(pg_dump(&pg.url, "docs"), incremental);
    assert_eq!(
        pg.psql("SELECT max(version) FROM rag_index.schema_version")
            .trim(),
        "4"
    );
    // Version 4's manifest rows start without stamps: the next sync hashes their files, finds
    // them unchanged and records the stamps, without rewriting a chunk.
    let stampless = || {
        pg.psql(
            "SELECT count(*) FROM rag_index.files f JOIN rag_index.collections k \
                 ON k.id = f.collection WHERE k.name = 'docs' AND f.ctime_ns IS NULL",
        )
    };
    assert_ne!(stampless().trim(), "0");
    let resynced = pg_sync(&pg.url, "docs", &docs);
    assert_eq!(resynced["files"]["modified"], 0, "{resynced}");
    assert_eq!(resynced["chunks"]["embedded"], 0, "{resynced}");
    assert_eq!(stampless().trim(), "0");
    assert_eq!(pg_dump(&pg.url, "docs"), incremental);
    // Version 3 leaves room on chunk pages for metadata updates to stay HOT.
    assert_eq!(
        pg.psql(
            "SELECT array_to_string(reloptions, ',') FROM pg_class \
             WHERE oid = 'rag_index.chunks'::regclass"
        )
        .trim(),
        "fillfactor=75"
    );
    assert_eq!(vector_indexes(), "docs:true\nfresh:true\n");
    assert_eq!(all_hnsw(), "2", "the per-dimension index is gone");

    // The same exact dense search answers the same on both backends.
    for question in questions().iter().take(4) {
        let q = question["question"].as_str().unwrap();
        let args = [
            "query", q, "--json", "--mode", "dense", "--exact", "-k", "3",
        ];
        let on_pg = json_lines(&pg_run(&pg.url, "docs", &args, 0));
        let mut embedded_args = args.to_vec();
        embedded_args.extend(["--index", index.to_str().unwrap()]);
        let embedded = json_lines(&run_expect(&embedded_args, 0));
        let ids = |v: &Value| -> Vec<String> {
            v["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["chunk_id"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(ids(&on_pg[0]), ids(&embedded[0]), "query {q:?}");
        // The index path finds the same nearest chunks at this size.
        let graph_args: Vec<&str> = args.iter().copied().filter(|a| *a != "--exact").collect();
        let on_graph = json_lines(&pg_run(&pg.url, "docs", &graph_args, 0));
        assert_eq!(ids(&on_graph[0]), ids(&embedded[0]), "graph query {q:?}");
    }
}

/// Writes `n` one-paragraph documents; every hundredth is in `restricted/` and has `tier: gold`.
fn many_small_documents(docs: &Path, n: usize) {
    let topics = [
        "rate limiting",
        "TLS certificates",
        "health checks",
        "retries",
        "load balancing",
        "access logs",
        "metrics",
        "tracing",
        "middlewares",
        "service discovery",
    ];
    for i in 0..n {
        // Only restricted notes carry a code name: a key only labelled chunks have.
        let (dir, tier, extra) = match i % 100 {
            0 => ("restricted", "gold", format!("codename: falcon-{i}\n")),
            _ => ("open", "standard", String::new()),
        };
        let topic = topics[i % topics.len()];
        let path = docs.join(dir).join(format!("note-{i:04}.md"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            path,
            format!(
                "---\ntier: {tier}\nweight: {i}\n{extra}---\n# Note {i}\n\nNote {i} explains \
                 {topic} for service number {i} in plain words.\n"
            ),
        )
        .unwrap();
    }
    std::fs::write(docs.join(".ragaccess"), "restricted/** staff\n").unwrap();
}

#[test]
fn labels_and_a_one_percent_filter_apply_inside_the_postgres_search() {
    let pg = PgServer::start();
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    many_small_documents(&docs, 1500);
    let location =
        StoreLocation::from_flag(Some(&pg.url), Path::new("unused"), Some("notes")).unwrap();
    let index = open_writer(&location).unwrap();
    let report = sync_in_process(&index, &docs);
    assert_eq!(report.files.added, 1500);

    // On a large table the most common words rank but stop selecting rows: every note says
    // "plain words", one in ten is about tracing. With a budget of 300 rows only "tracing"
    // selects (the statistics the first load's ANALYZE made say so), and the rows it selects
    // are exactly the best-ranked rows of the unpruned search, in the same order.
    let store = rag_pg::PgStore::open(&pg.url, "notes", rag_pg::OpenMode::Reader).unwrap();
    let everything = rag_pg::PgFilter {
        held_labels: vec!["staff".into()],
        ..rag_pg::PgFilter::default()
    };
    let words = "plain words about tracing";
    let ids = |rows: Vec<(rag_pg::PgChunk, f32)>| -> Vec<String> {
        rows.into_iter().map(|(c, _)| c.id).collect()
    };
    let unpruned = ids(store
        .read(|v| v.lexical_within(words, 400, &everything, u64::MAX))
        .unwrap());
    let pruned = ids(store
        .read(|v| v.lexical_within(words, 400, &everything, 300))
        .unwrap());
    assert_eq!(unpruned.len(), 400, "every note has the common words");
    assert_eq!(pruned.len(), 150, "only the tracing notes are selected");
    assert_eq!(pruned, unpruned[..150]);
    // Under the default budget this small table is searched unpruned.
    let default = ids(store.read(|v| v.lexical(words, 400, &everything)).unwrap());
    assert_eq!(default, unpruned);

    let staff = Access::labels(["staff"]).unwrap();
    let query = "how are TLS certificates handled";
    // Public callers never see a restricted chunk, in any mode.
    for mode in [SearchMode::Dense, SearchMode::Lexical, SearchMode::Hybrid] {
        let hits = index
            .search_with(&SearchRequest::new(query, Access::public()).k(50).mode(mode))
            .unwrap();
        assert_eq!(hits.len(), 50, "{mode:?}");
        assert!(
            hits.iter().all(|h| h.chunk.path.starts_with("open/")),
            "{mode:?}"
        );
    }
    // 1% of the chunks match; the search still returns k of them (pgvector 0.6 filters after
    // its HNSW scan, which alone would return almost none).
    let gold = Condition::new("tier", rag_index_core::Op::Eq, vec!["gold".into()]).unwrap();
    for mode in [SearchMode::Dense, SearchMode::Hybrid] {
        let hits = index
            .search_with(
                &SearchRequest::new(query, staff.clone())
                    .k(10)
                    .mode(mode)
                    .filter(gold.clone()),
            )
            .unwrap();
        assert_eq!(hits.len(), 10, "{mode:?}");
        assert!(hits.iter().all(|h| h.chunk.metadata["tier"] == "gold"));
    }
    // Without the label the same filter matches nothing visible.
    let hidden = index
        .search_with(
            &SearchRequest::new(query, Access::public())
                .k(10)
                .filter(gold),
        )
        .unwrap();
    assert!(
        hidden.is_empty(),
        "{:?}",
        hidden.first().map(|h| &h.chunk.path)
    );
    // Numeric comparisons and path globs run in SQL as they do in memory.
    let heavy = Condition::new("weight", rag_index_core::Op::Ge, vec!["1490".into()]).unwrap();
    let hits = index
        .search_with(
            &SearchRequest::new(query, staff.clone())
                .k(20)
                .filter(heavy)
                .path(PathGlob::new("open/*.md").unwrap()),
        )
        .unwrap();
    let mut weights: Vec<i64> = hits
        .iter()
        .map(|h| h.chunk.metadata["weight"].as_i64().unwrap())
        .collect();
    weights.sort();
    assert_eq!(weights, (1490..1500).collect::<Vec<i64>>());
    // A key no chunk has is an error, not an empty answer.
    let error_for = |access: &Access, key: &str| {
        let condition = Condition::new(key, rag_index_core::Op::Eq, vec!["falcon-0".into()]);
        let request = SearchRequest::new(query, access.clone()).filter(condition.unwrap());
        match index.search_with(&request) {
            Err(e @ Error::InvalidRequest { .. }) => e.to_string(),
            other => panic!("{key}: {:?}", other.map(|h| h.len())),
        }
    };
    assert!(error_for(&staff, "teir").contains("\"codename\""));
    // A key only restricted chunks have is unknown to a public caller, word for word like a
    // key no chunk has, and no error lists it: the answer must not reveal such documents.
    let typo = error_for(&Access::public(), "teir");
    assert!(!typo.contains("codename"), "{typo}");
    assert_eq!(
        error_for(&Access::public(), "codename"),
        typo.replace("\"teir\"", "\"codename\"")
    );
    let falcon = Condition::new("codename", rag_index_core::Op::Eq, vec!["falcon-0".into()]);
    let staff_hits = index
        .search_with(&SearchRequest::new(query, staff.clone()).filter(falcon.unwrap()))
        .unwrap();
    assert_eq!(staff_hits.len(), 1);
    assert_eq!(staff_hits[0].chunk.path, "restricted/note-0000.md");
    // Direct lookups obey labels too.
    let restricted = hits_of(&index, &staff, "note 0 explains rate limiting");
    assert!(
        index
            .chunk(&restricted, &Access::public())
            .unwrap()
            .is_none()
    );
    assert!(index.chunk(&restricted, &staff).unwrap().is_some());
    assert!(
        index
            .section(&restricted, &Access::public(), 512)
            .unwrap()
            .is_none()
    );
}

fn hits_of(index: &RagIndex, access: &Access, query: &str) -> String {
    let hits = index
        .search_with(
            &SearchRequest::new(query, access.clone())
                .k(1)
                .path(PathGlob::new("restricted/**").unwrap()),
        )
        .unwrap();
    hits[0].chunk.chunk_id.clone()
}

#[test]
fn one_writer_per_collection_and_collections_sync_side_by_side() {
    let pg = PgServer::start();
    let work = tempfile::tempdir().unwrap();
    let (a, b) = (work.path().join("a"), work.path().join("b"));
    copy_corpus_files(&a, &FILES[..2]);
    copy_corpus_files(&b, &FILES[2..4]);
    let location = StoreLocation::from_flag(Some(&pg.url), Path::new("unused"), Some("a")).unwrap();
    let holder = open_writer(&location).unwrap();
    // A second writer of the same collection: busy (exit 75), in-process and from the CLI.
    assert!(matches!(open_writer(&location), Err(Error::Busy { .. })));
    pg_run(&pg.url, "a", &["sync", a.to_str().unwrap()], 75);
    // `--wait` waits for the holder, then syncs.
    let mut waiting = pg_command(
        &pg.url,
        "a",
        &["sync", a.to_str().unwrap(), "--wait", "--json"],
    )
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(waiting.try_wait().unwrap().is_none(), "--wait must wait");
    drop(holder);
    let out = waiting.wait_with_output().unwrap();
    assert!(out.status.success());

    // A sync restarted after a runaway parse waits a while, without `--wait`, for the lock its
    // previous image's session may still hold on the server.
    let holder = open_writer(&location).unwrap();
    let mut restarted = pg_command(&pg.url, "a", &["sync", a.to_str().unwrap(), "--json"])
        .env("RAG_INDEX_RESTARTS", "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        restarted.try_wait().unwrap().is_none(),
        "a restarted image must wait"
    );
    drop(holder);
    let out = restarted.wait_with_output().unwrap();
    assert!(out.status.success());

    // Two machines, two collections, at once: both succeed.
    let children: Vec<_> = [("b", &b), ("a2", &a)]
        .iter()
        .map(|(name, dir)| {
            pg_command(&pg.url, name, &["sync", dir.to_str().unwrap(), "--json"])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(pg_dump(&pg.url, "a2"), pg_dump(&pg.url, "a"));
    assert!(pg_dump(&pg.url, "b").values().all(|c| {
        let path = c["path"].as_str().unwrap();
        FILES[2..4].contains(&path)
    }));

    // One search over several collections ranks their chunks together; each hit names its
    // collection, and the chunk `a` and `a2` share (same path, same text, same ID) comes back
    // once from each.
    let mut seen = BTreeSet::new();
    for question in questions().iter().take(12) {
        let q = question["question"].as_str().unwrap();
        let out = json_lines(&pg_run(
            &pg.url,
            "a,b",
            &["query", q, "--json", "-k", "5"],
            0,
        ));
        for hit in out[0]["hits"].as_array().unwrap() {
            let collection = hit["collection"]
                .as_str()
                .expect("a hit names its collection");
            let path = hit["path"].as_str().unwrap();
            let expected = if FILES[..2].contains(&path) { "a" } else { "b" };
            assert_eq!(collection, expected, "{hit}");
            seen.insert(collection.to_string());
        }
    }
    assert_eq!(seen.len(), 2, "hits from both collections: {seen:?}");
    let q = questions()[0]["question"].as_str().unwrap().to_string();
    let args = [
        "query",
        &q,
        "--json",
        "-k",
        "2",
        "--mode",
        "dense",
        "--exact",
        "--no-dedup",
        "--expand",
        "section",
    ];
    let twins = json_lines(&pg_run(&pg.url, "a,a2", &args, 0));
    let hits = twins[0]["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "{}", twins[0]);
    assert_eq!(hits[0]["chunk_id"], hits[1]["chunk_id"]);
    let names: BTreeSet<&str> = hits
        .iter()
        .map(|h| h["collection"].as_str().unwrap())
        .collect();
    assert_eq!(names, BTreeSet::from(["a", "a2"]));
    for hit in hits {
        for part in hit["passage"].as_array().expect("a section passage") {
            assert_eq!(
                part["collection"], hit["collection"],
                "expansion stays in its collection"
            );
        }
    }
    // Writing, checking and counting concern one collection.
    let refused = pg_run(&pg.url, "a,b", &["sync", a.to_str().unwrap()], 2);
    assert!(refused.is_empty());
    pg_run(&pg.url, "a,b", &["stats"], 2);
}

/// Whether a rag-index session holds an advisory lock: a sync has connected and is migrating
/// or holds its collection's writer lock.
fn writer_connected(pg: &PgServer) -> bool {
    pg.psql(
        "SELECT count(*) FROM pg_locks JOIN pg_stat_activity USING (pid) \
         WHERE locktype = 'advisory' AND granted AND application_name = 'rag-index'",
    )
    .trim()
        != "0"
}

/// A fresh server, and a folder of the first `files` corpus files synced to collection "docs".
fn synced_docs(files: usize) -> (PgServer, tempfile::TempDir, std::path::PathBuf) {
    let pg = PgServer::start();
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    copy_corpus_files(&docs, &FILES[..files]);
    pg_sync(&pg.url, "docs", &docs);
    (pg, work, docs)
}

#[test]
fn kill_and_lost_connections_mid_sync_leave_a_state_the_next_sync_repairs() {
    let (pg, _work, docs) = synced_docs(3);
    // Interruptions are aimed inside a sync's measured duration, not a fixed range: on a fast
    // machine a fixed range mostly lands after the sync has finished (CI once saw 0 of 4).
    // A sync with nothing to do (start, connect, plan) is shorter than any trial's, so the first
    // kill lands; then the aim grows after each hit (to reach the write and commit) and shrinks
    // to inside a sync that finished first.
    let started = Instant::now();
    pg_sync(&pg.url, "docs", &docs);
    let mut aim_ms = (started.elapsed().as_millis() as u64).max(20);
    let mut rng = fastrand::Rng::with_seed(env_number("RAG_KILL_SEED", 11));
    let trials = env_number("RAG_PG_KILL_TRIALS", 4) as usize;
    let mut interrupted = 0;
    for trial in 0..trials {
        copy_corpus_files(&docs, &[FILES[3 + trial % 3]]);
        let target = docs.join(FILES[trial % 3]);
        let mut text = std::fs::read_to_string(&target).unwrap();
        text.push_str(&format!("\n\nTrial {trial} appended this paragraph.\n"));
        std::fs::write(&target, text).unwrap();
        let before = pg_dump(&pg.url, "docs");

        let mut child = pg_command(&pg.url, "docs", &["sync", docs.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let spawned = Instant::now();
        let lost_connection = trial % 2 == 1;
        let delay = if lost_connection {
            // Only a connected sync can lose its connection: wait for its session first.
            while child.try_wait().unwrap().is_none() && !writer_connected(&pg) {}
            spawned.elapsed() + Duration::from_millis(rng.u64(0..aim_ms))
        } else {
            Duration::from_millis(rng.u64(5..aim_ms.max(6)))
        };
        if !still_running_at(&mut child, spawned, delay) {
            aim_ms = (spawned.elapsed().as_millis() as u64 * 3 / 4).max(20);
        } else {
            aim_ms = aim_ms * 3 / 2;
            if lost_connection {
                // The server side of the sync goes away (as a restart or a network cut would).
                pg.psql(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE application_name = 'rag-index' AND pid <> pg_backend_pid()",
                );
            } else {
                let _ = child.kill();
            }
        }
        let out = child.wait_with_output().unwrap();
        eprintln!(
            "trial {trial}: delay {delay:?}, exit {:?} after {:?}",
            out.status.code(),
            spawned.elapsed()
        );
        let after = pg_dump(&pg.url, "docs");
        if !out.status.success() {
            interrupted += 1;
            // Interrupted: readers still get the state before the sync, whole.
            assert_eq!(after, before, "trial {trial}");
            if lost_connection {
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert!(stderr.contains("127.0.0.1"), "names the server: {stderr}");
            }
        }
        pg_sync(&pg.url, "docs", &docs);
        let verify: Value =
            serde_json::from_str(&pg_run(&pg.url, "docs", &["verify", "--json"], 0)).unwrap();
        assert_eq!(verify["ok"], true, "trial {trial}: {verify}");
        let fresh = format!("fresh{trial}");
        pg_sync(&pg.url, &fresh, &docs);
        assert_eq!(
            pg_dump(&pg.url, "docs"),
            pg_dump(&pg.url, &fresh),
            "trial {trial}"
        );
    }
    eprintln!("{interrupted} of {trials} interruptions hit a running sync");
    assert!(
        interrupted > 0 || trials == 0,
        "no trial interrupted a sync"
    );
}

#[test]
fn verify_finds_damaged_rows_and_repair_lets_the_next_sync_restore_them() {
    let (pg, _work, docs) = synced_docs(3);
    let healthy = pg_dump(&pg.url, "docs");
    let ids_of = |path: &str| -> Vec<String> {
        let mut ids: Vec<String> = (healthy.iter())
            .filter(|(_, c)| c["path"] == path)
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids
    };
    let (edited, missing) = (ids_of(FILES[0])[0].clone(), ids_of(FILES[1])[0].clone());
    // A text changed behind rag-index's back, a listed chunk deleted, a chunk no file lists.
    pg.psql(&format!(
        "UPDATE rag_index.chunks SET text = text || ' (edited)' WHERE id = '{edited}'; \
         DELETE FROM rag_index.chunks WHERE id = '{missing}'; \
         INSERT INTO rag_index.chunks SELECT collection, 'stray0000', path, title, heading_path, \
         ordinal, byte_start, byte_end, text, hash, tokens, metadata, labels, embedding_key, dim, \
         embedding FROM rag_index.chunks WHERE id = '{}'",
        ids_of(FILES[2])[0]
    ));
    let damaged: Value =
        serde_json::from_str(&pg_run(&pg.url, "docs", &["verify", "--json"], 1)).unwrap();
    assert_eq!(damaged["ok"], false, "{damaged}");
    let problems = damaged["problems"].to_string();
    for expected in [
        format!("{}: chunk {edited} text does not match its hash", FILES[0]),
        format!("{}: chunk {missing} is missing", FILES[1]),
        "1 chunk(s) belong to no manifest entry (first: stray0000)".to_string(),
    ] {
        assert!(problems.contains(&expected), "{expected} in {problems}");
    }
    let repaired: Value = serde_json::from_str(&pg_run(
        &pg.url,
        "docs",
        &["verify", "--repair", "--json"],
        0,
    ))
    .unwrap();
    assert!(
        !repaired["repaired"].as_array().unwrap().is_empty(),
        "{repaired}"
    );
    // The damaged files' entries are gone, so the next sync indexes them again.
    let report = pg_sync(&pg.url, "docs", &docs);
    assert_eq!(report["files"]["added"], 2, "{report}");
    let after: Value =
        serde_json::from_str(&pg_run(&pg.url, "docs", &["verify", "--json"], 0)).unwrap();
    assert_eq!(after["ok"], true, "{after}");
    assert_eq!(pg_dump(&pg.url, "docs"), healthy);
}

#[test]
fn an_unreachable_server_is_a_clear_error_naming_it() {
    let out = rag_index()
        .args([
            "stats",
            "--store",
            "postgres://rag:x@127.0.0.1:1/rag?connect_timeout=2",
        ])
        .args(["--collection", "docs"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("127.0.0.1:1/rag"), "{stderr}");
    assert!(!stderr.contains(":x@"), "no password in messages: {stderr}");
}

#[test]
fn tls_from_the_url() {
    let pg = PgServer::start();
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    copy_corpus_files(&docs, &FILES[..1]);
    let tls = format!("{}?sslmode=require", pg.url);
    pg_sync(&tls, "docs", &docs);
    // The direct port has no TLS (this server build has none; the script's front adds it):
    // `require` must then fail rather than fall back to plain text.
    let plain_only = format!("{}?sslmode=require&connect_timeout=3", pg.direct_url());
    let out = pg_command(&plain_only, "docs", &["stats"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_long_lived_reader_reads_in_parallel_and_outlives_dropped_sessions() {
    let (pg, _work, _docs) = synced_docs(2);
    let location =
        StoreLocation::from_flag(Some(&pg.url), Path::new("unused"), Some("docs")).unwrap();
    let reader = std::sync::Arc::new(
        RagIndex::open_at(
            &location,
            embedder(),
            IndexConfig::default(),
            OpenMode::Reader,
        )
        .unwrap(),
    );
    let question = questions()[0]["question"].as_str().unwrap().to_string();
    let ids = |index: &RagIndex| -> Vec<String> {
        let request = SearchRequest::new(&question, Access::public()).k(5);
        (index.search_with(&request).unwrap().into_iter())
            .map(|h| h.chunk.chunk_id)
            .collect()
    };
    let expected = ids(&reader);
    assert!(!expected.is_empty());
    let sessions = || {
        pg.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = 'rag' \
             AND pid <> pg_backend_pid()",
        )
        .trim()
        .parse::<u32>()
        .unwrap()
    };
    // Several threads search one reader at once: each gets its own session from the pool.
    // Searches take milliseconds, so on a busy machine one round may not overlap; the threads
    // start together and a few rounds are allowed before the pool must have opened a second.
    for _round in 0..10 {
        let start = std::sync::Barrier::new(4);
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        ids(&reader)
                    })
                })
                .collect();
            for handle in handles {
                assert_eq!(handle.join().unwrap(), expected);
            }
        });
        if sessions() >= 2 {
            break;
        }
    }
    assert!(sessions() >= 2, "the pool opened more than one session");
    // The server drops every session (a restart, an idle timeout): the reader's next search
    // checks its idle session, finds it gone and opens a fresh one.
    pg.psql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE usename = 'rag' AND pid <> pg_backend_pid()",
    );
    std::thread::sleep(Duration::from_millis(2_500));
    assert_eq!(ids(&reader), expected);
}

#[test]
fn a_reader_during_a_sync_sees_the_old_state_or_the_new_one_never_a_mix() {
    let pg = PgServer::start();
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    copy_corpus_files(&docs, &FILES[..4]);
    pg_sync(&pg.url, "docs", &docs);
    let before: Vec<String> = pg_dump(&pg.url, "docs").into_keys().collect();
    // Change every file, so the commit swaps chunks everywhere.
    for rel in &FILES[..4] {
        let path = docs.join(rel);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.insert_str(0, "Preface added before the sync started.\n\n");
        std::fs::write(&path, text).unwrap();
    }
    copy_corpus_files(&docs, &FILES[4..]);
    let location =
        StoreLocation::from_flag(Some(&pg.url), Path::new("unused"), Some("docs")).unwrap();
    let reader = RagIndex::open_at(
        &location,
        embedder(),
        IndexConfig::default(),
        OpenMode::Reader,
    )
    .unwrap();
    let mut child = pg_command(&pg.url, "docs", &["sync", docs.to_str().unwrap()])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut seen: Vec<Vec<String>> = Vec::new();
    while child.try_wait().unwrap().is_none() {
        let ids: Vec<String> = reader
            .dump()
            .unwrap()
            .into_iter()
            .map(|c| c.chunk_id)
            .collect();
        if seen.last() != Some(&ids) {
            seen.push(ids);
        }
    }
    assert!(child.wait().unwrap().success());
    let after: Vec<String> = pg_dump(&pg.url, "docs").into_keys().collect();
    assert_ne!(before, after);
    // Dump orders by path; compare as sets of IDs.
    let seen: Vec<Vec<String>> = seen
        .into_iter()
        .map(|mut ids| {
            ids.sort();
            ids
        })
        .collect();
    assert_eq!(
        seen.first(),
        Some(&before),
        "the reader ran while the sync did"
    );
    for sorted in &seen {
        assert!(
            *sorted == before || *sorted == after,
            "a reader saw {} chunks, neither the {} before nor the {} after",
            sorted.len(),
            before.len(),
            after.len()
        );
    }
}

#[test]
fn a_runaway_parse_on_postgres_is_set_aside_and_the_sync_goes_on() {
    let pg = PgServer::start();
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    code_folder_with_valid_ts(&docs);
    let docs_arg = docs.to_str().unwrap();
    let args = ["sync", docs_arg, "--store", &pg.url, "--collection", "code"];
    // Three GiB of address space: without its bound a runaway parse fails to allocate instead
    // of taking the machine; a bounded sync needs well under one.
    let sync_in_3_gib = || sync_within_address_space(&args, 3 << 20);
    let (code_now, report, stderr) = sync_in_3_gib();
    assert_eq!(code_now, Some(0), "{report} {stderr}");
    let chunks_of = |path: &str| {
        pg_dump(&pg.url, "code")
            .into_values()
            .filter(|c| c["path"] == path)
            .map(|c| c["text"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let before = chunks_of("was-fine.ts");
    assert_eq!(before.len(), 1);

    // The process cannot stop the parse and return, so it starts again without the file. There
    // is no index folder to record the file in: the new process image is told by its
    // environment, and it must take the collection's writer lock the old image held.
    let report = sync_after_a_runaway_parse(&docs, sync_in_3_gib);
    assert_eq!(
        chunks_of("was-fine.ts"),
        before,
        "its indexed chunks are kept"
    );
    assert!(
        chunks_of("encoder.py").len() > 3,
        "the rest went on: {report}"
    );

    // New bytes are tried again, and the index equals a fresh one of the folder.
    std::fs::write(docs.join("was-fine.ts"), VALID_TS.replace("one", "two")).unwrap();
    let (code_now, report, stderr) = sync_in_3_gib();
    assert_eq!(code_now, Some(0), "{report} {stderr}");
    assert!(chunks_of("was-fine.ts")[0].contains("Adds two"));
    pg_sync(&pg.url, "fresh", &docs);
    assert_eq!(pg_dump(&pg.url, "code"), pg_dump(&pg.url, "fresh"));
}
