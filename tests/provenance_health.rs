//! Provenance on every chunk (modification time, size, source hash, first indexed, text last
//! changed) and the health report, on real Traefik files with the real model.

mod common;

use std::time::{Duration, SystemTime};

use common::*;
use rag_index_core::{Access, IndexConfig, RagIndex, SearchMode, SearchRequest};

fn field(index: &RagIndex, path: &str, key: &str) -> Vec<(String, String)> {
    index
        .dump()
        .unwrap()
        .into_iter()
        .filter(|c| c.path == path)
        .map(|c| (c.chunk_id, c.metadata[key].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn provenance_follows_touches_and_edits_without_embedding() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    let page = "getting-started/faq.md";
    copy_corpus_files(
        &docs,
        &[page, "reference/install-configuration/entrypoints.md"],
    );
    let index = RagIndex::open(
        &work.path().join("index"),
        embedder(),
        IndexConfig::default(),
    )
    .unwrap();
    sync_in_process(&index, &docs);
    let first = index.dump().unwrap();
    let c = first.iter().find(|c| c.path == page).unwrap();
    for key in ["modified", "indexed_at", "changed_at", "source_hash"] {
        assert!(
            c.metadata[key].is_string(),
            "{key} missing: {:?}",
            c.metadata
        );
    }
    assert_eq!(
        c.metadata["size"].as_u64().unwrap(),
        std::fs::metadata(docs.join(page)).unwrap().len()
    );

    // A touch to an old date: `modified` follows, nothing is embedded, and a filter on it
    // sees the change through the same long-lived index at once.
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000); // 2023-11-14
    std::fs::File::options()
        .write(true)
        .open(docs.join(page))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let report = sync_in_process(&index, &docs);
    assert_eq!(report.chunks.embedded, 0);
    assert!(
        field(&index, page, "modified")
            .iter()
            .all(|(_, m)| m == "2023-11-14T22:13:20Z")
    );
    let request = SearchRequest::new("Bad Gateway 502", Access::public())
        .k(50)
        .mode(SearchMode::Dense)
        .filter("modified<2024-01-01".parse().unwrap());
    let hits = index.search_with(&request).unwrap();
    assert!(!hits.is_empty() && hits.iter().all(|h| h.chunk.path == page));

    // An edit: only the chunks whose text changed get a new `changed_at`; `indexed_at` stays.
    let before_changed = field(&index, page, "changed_at");
    let before_indexed = field(&index, page, "indexed_at");
    std::thread::sleep(Duration::from_millis(1100));
    let mut text = std::fs::read_to_string(docs.join(page)).unwrap();
    text.push_str("\n## A new closing section\n\nThe zebrafish relay answers every probe twice.\n");
    std::fs::write(docs.join(page), text).unwrap();
    let report = sync_in_process(&index, &docs);
    assert!(report.chunks.embedded >= 1 && report.chunks.embedded <= 3);
    let after = field(&index, page, "changed_at");
    let old_changed: std::collections::HashMap<_, _> = before_changed.into_iter().collect();
    let mut kept = 0;
    for (id, changed) in &after {
        match old_changed.get(id) {
            Some(previous) => {
                assert_eq!(previous, changed, "an unchanged chunk kept its changed_at");
                kept += 1;
            }
            None => assert!(changed > &old_changed.values().max().unwrap().clone()),
        }
    }
    assert!(kept > 0 && kept < after.len());
    let indexed_at = &before_indexed[0].1;
    assert!(
        field(&index, page, "indexed_at")
            .iter()
            .all(|(_, at)| at == indexed_at)
    );
}

/// `stats --health --json` of the index, with more arguments.
fn health_json(index: &std::path::Path, more: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "stats",
        "--health",
        "--json",
        "--index",
        index.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    serde_json::from_str(&run_expect(&args, 0)).unwrap()
}

#[test]
fn the_health_report_finds_duplicates_failures_and_stale_sources() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    copy_corpus_files(&docs, &["getting-started/faq.md"]);
    let paragraph = "Rotate the signing keys of every entry point each quarter, and keep the \
                     previous key available for one week so that clients can still verify.";
    std::fs::write(docs.join("a.md"), format!("# Keys A\n\n{paragraph}\n")).unwrap();
    std::fs::write(
        docs.join("b.md"),
        format!("# Keys B\n\nIntro.\n\n## Rotation\n\n{paragraph}\n"),
    )
    .unwrap();
    std::fs::write(docs.join("broken.md"), b"# Broken\n\n\xff\xfe not UTF-8\n").unwrap();
    let parts = |third: &str| {
        format!(
            "# Parts\n\n| SKU | Lead time |\n|---|---|\n| A1 | 3 days |\n| A2 | 4 days |\n\
             | {third} | 5 days |\n| A3 | 6 days |\n"
        )
    };
    std::fs::write(docs.join("parts.md"), parts("A1")).unwrap();
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    std::fs::File::options()
        .write(true)
        .open(docs.join("a.md"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let index = work.path().join("index");
    let report = common::sync(&docs, &index, 1);
    assert_eq!(report["files"]["failed"], 1);
    let health = health_json(&index, &["--stale-days", "400"]);
    let duplicated = health["duplicates"].as_array().unwrap().iter().any(|d| {
        let places: Vec<&str> = d["places"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[0].as_str().unwrap())
            .collect();
        places == ["a.md", "b.md"]
    });
    assert!(duplicated, "{}", health["duplicates"]);
    let stale: Vec<&str> = health["stale_sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(stale, ["a.md"]);
    let errors = health["last_sync"]["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["path"], "broken.md");
    assert!(
        health["model_fingerprint"]
            .as_str()
            .unwrap()
            .contains("MiniLM")
    );
    let text = run_expect(
        &["stats", "--health", "--index", index.to_str().unwrap()],
        0,
    );
    assert!(
        text.contains("broken.md") && text.contains("duplicated texts: 1"),
        "{text}"
    );

    // A table skipped as records stays in the report through syncs that do not read its file
    // again, and leaves it once the file is mended.
    let table_warnings = |index: &std::path::Path| -> Vec<String> {
        health_json(index, &[])["last_sync"]["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["path"] == "parts.md")
            .map(|w| w["error"].as_str().unwrap().to_string())
            .collect()
    };
    let expected =
        ["line 7: table key \"A1\" repeats the row of line 5; the table gets no row records"];
    assert_eq!(table_warnings(&index), expected);
    let again = common::sync(&docs, &index, 1);
    assert_eq!(again["files"]["unchanged"], 4, "{again}");
    assert_eq!(again["warnings"].as_array().unwrap().len(), 0, "{again}");
    assert_eq!(
        table_warnings(&index),
        expected,
        "kept by a sync that did not read parts.md"
    );
    std::fs::write(docs.join("parts.md"), parts("A4")).unwrap();
    common::sync(&docs, &index, 1);
    assert!(table_warnings(&index).is_empty());
    let skus: Vec<String> = dump(&index)
        .iter()
        .filter(|c| c["path"] == "parts.md" && c["metadata"]["record"] == "table_row")
        .map(|c| c["metadata"]["sku"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(skus, ["A1", "A2", "A4", "A3"]);
}

/// Row records on by default, end to end with the real model: every row of a keyed options table
/// is also a chunk of its own (the source's header and that row), the key filter and the key
/// column's filter find exactly that row first, one table takes one record among the hits, and a
/// table whose keys repeat gets a warning naming the file and line instead of records.
#[test]
fn keyed_table_rows_are_records_found_by_their_key() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    let ratelimit = "reference/routing-configuration/http/middlewares/ratelimit.md";
    let distributed = "reference/routing-configuration/http/middlewares/distributed-ratelimit.md";
    let entrypoints = "reference/install-configuration/entrypoints.md";
    copy_corpus_files(&docs, &[ratelimit, distributed, entrypoints]);
    let index = RagIndex::open(
        &work.path().join("index"),
        embedder(),
        IndexConfig::default(),
    )
    .unwrap();
    let report = sync_in_process(&index, &docs);

    let src = std::fs::read_to_string(docs.join(ratelimit)).unwrap();
    let chunks = index.dump().unwrap();
    let records: Vec<_> = chunks
        .iter()
        .filter(|c| c.path == ratelimit && c.metadata.get("record") == Some(&"table_row".into()))
        .collect();
    let dial = records
        .iter()
        .find(|c| c.metadata["row_key"] == "redis.dialTimeout")
        .expect("a record for the redis.dialTimeout row");
    let row = &src[dial.byte_range.start as usize..dial.byte_range.end as usize];
    assert!(
        row.contains("`redis.dialTimeout`") && row.contains("| 5s |"),
        "{row}"
    );
    assert!(
        dial.text.ends_with(row)
            && dial
                .text
                .contains("| Field      | Description       | Default | Required |"),
        "the record is the header and the row as written: {}",
        dial.text
    );
    assert_eq!(dial.metadata["key_column"], "Field");
    assert_eq!(dial.metadata["field"], "redis.dialTimeout");
    let rows_in_file = src
        .lines()
        .filter(|l| l.starts_with("| <a id=\"opt-") && l.contains("`redis."))
        .count();
    let redis_records = records
        .iter()
        .filter(|c| {
            c.metadata["row_key"]
                .as_str()
                .unwrap()
                .starts_with("redis.")
        })
        .count();
    assert!(rows_in_file >= 10, "{rows_in_file}");
    assert_eq!(redis_records, rows_in_file, "one record per redis.* row");

    // The key filter, and the key column's own name, find exactly that row first.
    let question = "What is the default timeout for establishing new connections?";
    for filter in ["row_key=redis.dialTimeout", "field=redis.dialTimeout"] {
        let request = SearchRequest::new(question, Access::public())
            .k(5)
            .filter(filter.parse().unwrap());
        let hits = index.search_with(&request).unwrap();
        assert_eq!(hits.len(), 1, "{filter}: only the record has that key");
        assert_eq!(hits[0].chunk.chunk_id, dial.chunk_id, "{filter}");
    }

    // Unfiltered, the row's record answers first with the words of its row, and no table holds
    // two of the ten places through its records.
    let request = SearchRequest::new(
        "What's the default dial timeout when the rate limiter connects to Redis?",
        Access::public(),
    )
    .k(10);
    let hits = index.search_with(&request).unwrap();
    assert!(
        hits[..3].iter().any(|h| h.chunk.chunk_id == dial.chunk_id),
        "{:?}",
        hits.iter().map(|h| &h.chunk.text).collect::<Vec<_>>()
    );
    let mut groups = std::collections::HashSet::new();
    for h in hits
        .iter()
        .filter(|h| h.chunk.metadata.contains_key("record"))
    {
        let group = (
            h.chunk.path.clone(),
            h.chunk.metadata["table_group"].to_string(),
        );
        assert!(
            groups.insert(group),
            "two records of one table: {}",
            h.chunk.text
        );
    }

    // Duplicate keys: a warning with file and line, and no record of that table.
    assert!(
        report.warnings.iter().any(|w| w.path == entrypoints
            && w.error.contains("repeats the row of line")
            && w.error.contains("the table gets no row records")),
        "{:?}",
        report.warnings
    );
    assert!(
        chunks
            .iter()
            .filter(|c| c.path == entrypoints && c.metadata.contains_key("record"))
            .all(|c| c.metadata["key_column"] != "EncodeQuerySemicolons")
    );
}
