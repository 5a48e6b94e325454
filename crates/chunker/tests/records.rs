//! Row records of keyed tables, on real Traefik files: one record per row with its key in
//! metadata, none for duplicate keys, ragged rows or small tables, `table_key:` picking the key
//! column, stable IDs, the token cap.

mod common;

use rag_chunker::{Chunk, Chunker, ChunkerConfig, Document};
use serde_json::json;

fn read(rel: &str) -> String {
    std::fs::read_to_string(format!("{}/{rel}", common::CORPUS)).expect("corpus file")
}

fn chunk(rel: &str, src: &str) -> Document {
    common::chunker_with_records()
        .chunk(rel, src)
        .expect("chunk")
}

fn records(doc: &Document) -> Vec<&Chunk> {
    doc.chunks
        .iter()
        .filter(|c| c.metadata.get("record") == Some(&json!("table_row")))
        .collect()
}

/// 1-based line of byte `at`.
fn line_of(src: &str, at: usize) -> usize {
    1 + src[..at].matches('\n').count()
}

#[test]
fn an_options_table_yields_one_record_per_row_keyed_by_field() {
    let rel = "reference/routing-configuration/http/middlewares/ratelimit.md";
    let src = read(rel);
    let doc = chunk(rel, &src);
    let first = src
        .find("| Field      | Description")
        .expect("options table");
    let rows: Vec<&str> = src[first..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let group = records(&doc)
        .into_iter()
        .find(|r| r.metadata["row_key"] == "average")
        .expect("record of `average`")
        .metadata["table_group"]
        .clone();
    let recs: Vec<&Chunk> = records(&doc)
        .into_iter()
        .filter(|r| r.metadata["table_group"] == group)
        .collect();
    // Every row has a record, in order, except a row whose record would pass the token cap,
    // which is named in a warning instead.
    let over_cap: Vec<&&str> = rows
        .iter()
        .filter(|row| {
            let line = line_of(&src, src.find(**row).expect("row"));
            doc.warnings
                .iter()
                .any(|w| w.starts_with(&format!("line {line}: the record of table row")))
        })
        .collect();
    let with_record: Vec<&&str> = rows.iter().filter(|r| !over_cap.contains(r)).collect();
    assert_eq!(recs.len(), with_record.len(), "one record per row");
    assert!(over_cap.len() <= 1, "{over_cap:?}");
    for (r, row) in recs.iter().zip(&with_record) {
        assert_eq!(
            &&src[r.byte_range.clone()],
            *row,
            "byte_range is the row's line"
        );
        assert_eq!(r.metadata["key_column"], "Field");
        assert_eq!(r.metadata["field"], r.metadata["row_key"]);
        assert!(r.tokens <= 256);
    }
    let average = recs[0];
    assert_eq!(average.metadata["row_key"], "average");
    assert!(
        average
            .text
            .starts_with(&format!("{}\n\n", average.heading_path.join(" > "))),
        "breadcrumb first: {}",
        average.text
    );
    // The record is the source's header row, a compact delimiter and the row, as written.
    let header = src[first..].lines().next().expect("header");
    assert!(
        average.text.ends_with(&format!(
            "{header}\n|:---|:---|:---|:---|\n{}",
            with_record[0]
        )),
        "{}",
        average.text
    );
    let dial = recs
        .iter()
        .find(|r| r.metadata["row_key"] == "redis.dialTimeout")
        .expect("redis.dialTimeout");
    assert!(
        dial.text.contains("| Default | Required |")
            && dial.text.contains(
                "| Timeout for establishing new connections. Zero means no timeout. | 5s | No |"
            ),
        "the row under its column names, units as written: {}",
        dial.text
    );
    assert_eq!(
        dial.text.matches("redis.dialTimeout").count(),
        rows.iter()
            .find(|r| r.contains("`redis.dialTimeout`"))
            .expect("row")
            .matches("redis.dialTimeout")
            .count(),
        "one row only: {}",
        dial.text
    );
    // The table's own chunks are still there, verbatim, and carry the same group.
    let table_chunks: Vec<&Chunk> = doc
        .chunks
        .iter()
        .filter(|c| c.metadata.get("table_group") == Some(&group) && !recs.contains(c))
        .collect();
    assert!(!table_chunks.is_empty());
    assert!(
        table_chunks
            .iter()
            .all(|c| c.text.contains("| Default | Required |"))
    );
    assert!(
        table_chunks
            .iter()
            .any(|c| c.text.contains("| 5s | No |") && c.text.contains("`redis.dialTimeout`"))
    );
    // Records follow the document's own chunks.
    let first_record = doc
        .chunks
        .iter()
        .position(|c| c.metadata.contains_key("record"));
    assert!(
        doc.chunks[first_record.expect("records")..]
            .iter()
            .all(|c| c.metadata.contains_key("record"))
    );
}

#[test]
fn record_ids_are_stable_and_a_caption_is_kept() {
    let rel = "deprecation/releases.md";
    let src = read(rel);
    let doc = chunk(rel, &src);
    let recs = records(&doc);
    assert_eq!(recs.len(), 9);
    assert_eq!(recs[3].metadata["row_key"], "3.4");
    assert_eq!(recs[3].metadata["version"], "3.4");
    assert_eq!(
        recs[3].text,
        "Releases > Versions\n\nBelow is a non-exhaustive list of versions and their maintenance \
         status:\n\n| Version | Release Date | Active Support     | Security Support   |\n\
         |---|---|---|---|\n| 3.4     | May 05, 2025 | Ended Jul 23, 2025 | No                 |"
    );
    // An edit elsewhere in the file moves the rows but changes no record's ID.
    let edited = src.replace("This page is maintained", "This page is kept");
    let again = chunk(rel, &edited);
    let ids = |d: &Document| records(d).iter().map(|c| c.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&doc), ids(&again));
    let moved = format!(
        "# Releases\n\nA new first paragraph.\n{}",
        &src["# Releases\n".len()..]
    );
    let again = chunk(rel, &moved);
    assert_eq!(ids(&doc), ids(&again));
    assert_eq!(
        records(&doc)[0].metadata["table_group"],
        records(&again)[0].metadata["table_group"]
    );
}

#[test]
fn duplicate_keys_warn_and_make_no_records() {
    let rel = "reference/install-configuration/entrypoints.md";
    let src = read(rel);
    let doc = chunk(rel, &src);
    let table = src.find("| EncodeQuerySemicolons |").expect("table");
    let dup = src[table..].find("opt-false-2").expect("second false") + table;
    let line = line_of(&src, dup);
    assert!(
        doc.warnings
            .iter()
            .any(|w| w.starts_with(&format!("line {line}: table key \"false\" repeats"))),
        "{:?}",
        doc.warnings
    );
    assert!(
        records(&doc)
            .iter()
            .all(|r| r.metadata["key_column"] != "EncodeQuerySemicolons")
    );
}

#[test]
fn ragged_rows_warn_and_make_no_records() {
    let rel = "reference/routing-configuration/tcp/service.md";
    let src = read(rel);
    let doc = chunk(rel, &src);
    let ragged = src.find("| <a id=\"opt-healthCheck\"").expect("ragged row");
    let line = line_of(&src, ragged);
    assert!(
        doc.warnings.contains(&format!(
            "line {line}: table row has 4 cells, its header 3; the table gets no row records"
        )),
        "{:?}",
        doc.warnings
    );
    assert!(
        records(&doc)
            .iter()
            .all(|r| r.metadata["row_key"] != "servers.address")
    );
}

#[test]
fn a_small_table_stays_whole_without_records() {
    let rel = "reference/routing-configuration/http/middlewares/hmac.md";
    let src = read(rel);
    let doc = chunk(rel, &src);
    let table = src.find("| Field ").expect("three-row options table");
    let rows = src[table..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .count();
    assert_eq!(rows, 3);
    let end = table + src[table..].find("\n\n").expect("end");
    assert!(
        records(&doc)
            .iter()
            .all(|r| r.byte_range.end <= table || r.byte_range.start >= end)
    );
    assert!(
        doc.chunks
            .iter()
            .filter(|c| c.byte_range.start <= table && c.byte_range.end >= end)
            .all(|c| !c.metadata.contains_key("table_group"))
    );
}

#[test]
fn front_matter_table_key_picks_another_column() {
    let rel = "deprecation/releases.md";
    let src = format!("---\ntable_key: release date\n---\n{}", read(rel));
    let doc = chunk(rel, &src);
    let recs = records(&doc);
    assert_eq!(recs.len(), 9);
    assert_eq!(recs[0].metadata["key_column"], "Release Date");
    assert_eq!(recs[0].metadata["row_key"], "May 05, 2026");
    assert_eq!(recs[0].metadata["release_date"], "May 05, 2026");
    assert!(!recs[0].metadata.contains_key("version"));
}

#[test]
fn a_column_never_shadows_a_front_matter_field() {
    let rel = "deprecation/releases.md";
    let src = format!("---\nversion: v3\n---\n{}", read(rel));
    let doc = chunk(rel, &src);
    let recs = records(&doc);
    assert_eq!(recs[0].metadata["row_key"], "3.7");
    assert_eq!(recs[0].metadata["version"], "v3");
}

#[test]
fn a_row_over_the_cap_gets_no_record_and_a_warning() {
    let rel = "reference/routing-configuration/kubernetes/ingress-nginx.md";
    let src = read(rel);
    let doc = chunk(rel, &src);
    let key = "nginx.ingress.kubernetes.io/auth-signin";
    assert!(
        doc.warnings
            .iter()
            .any(|w| w.contains(&format!("the record of table row \"{key}\" has"))),
        "{:?}",
        doc.warnings
    );
    let recs = records(&doc);
    assert!(recs.iter().all(|r| r.metadata["row_key"] != key));
    assert!(
        recs.iter()
            .any(|r| r.metadata["row_key"] == "nginx.ingress.kubernetes.io/auth-type")
    );
}

#[test]
fn records_are_capped_per_table() {
    let mut src = String::from("# Parts\n\n| SKU | Lead time |\n|---|---|\n");
    for i in 0..2_100 {
        src.push_str(&format!("| P{i:05} | {} days |\n", i % 30));
    }
    let doc = chunk("parts.md", &src);
    assert_eq!(records(&doc).len(), 2_000);
    assert_eq!(records(&doc)[7].metadata["sku"], "P00007");
    assert_eq!(
        records(&doc)[7].text,
        "Parts\n\n| SKU | Lead time |\n|---|---|\n| P00007 | 7 days |"
    );
    assert_eq!(
        doc.warnings,
        ["line 3: table has 2100 rows; only the first 2000 get row records"]
    );
}

#[test]
fn records_are_on_by_default_and_add_chunks_without_changing_any() {
    let rel = "deprecation/releases.md";
    let src = read(rel);
    assert!(ChunkerConfig::default().table_records);
    let config = ChunkerConfig {
        table_records: false,
        ..ChunkerConfig::default()
    };
    let off = Chunker::new(common::hf(), config.clone()).expect("config");
    let doc = off.chunk(rel, &src).expect("chunk");
    assert!(records(&doc).is_empty());
    assert!(
        doc.chunks
            .iter()
            .all(|c| !c.metadata.contains_key("table_group"))
    );
    let on = chunk(rel, &src);
    let own: Vec<&Chunk> = on
        .chunks
        .iter()
        .filter(|c| !c.metadata.contains_key("record"))
        .collect();
    assert_eq!(own.len(), doc.chunks.len());
    for (a, b) in own.iter().zip(&doc.chunks) {
        assert_eq!(
            (&a.id, &a.text),
            (&b.id, &b.text),
            "records add chunks, change none"
        );
    }
    let on = ChunkerConfig {
        table_records: true,
        ..config.clone()
    };
    assert_ne!(config.fingerprint(), on.fingerprint());
}

#[test]
fn a_table_closed_by_its_box_fence_keeps_its_records() {
    // Quarto, Pandoc and VitePress pages close a box right under a table: CommonMark runs the
    // table on to the fence line, which is the box's end, not a ragged row.
    let src = "# Limits\n\n::: {.callout-note}\nEach limit applies per tenant.\n\n\
               | Setting | Default | Meaning |\n|---|---|---|\n\
               | max_jobs | 500 | Jobs held before new ones are refused |\n\
               | max_workers | 8 | Workers started per node |\n\
               | retry_after | 30s | Wait before a refused job is retried |\n\
               | queue_ttl | 24h | How long a queued job is kept |\n:::\n\nAfter the box.\n";
    for page in [
        src.to_string(),
        src.replace("::: {.callout-note}", "{{% alert %}}")
            .replace(":::\n", "{{% /alert %}}\n"),
    ] {
        let doc = chunk("limits.md", &page);
        assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
        let keys: Vec<&serde_json::Value> = records(&doc)
            .iter()
            .map(|r| &r.metadata["row_key"])
            .collect();
        assert_eq!(
            keys,
            ["max_jobs", "max_workers", "retry_after", "queue_ttl"],
            "{page}"
        );
    }
}
