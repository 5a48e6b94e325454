//! The command-line contract, field by field, with the real model on real files.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

const SMALL: &[&str] = &[
    "reference/install-configuration/observability/healthcheck.md",
    "deprecation/releases.md",
];

fn small_index(work: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let docs = work.join("docs");
    let index = work.join("idx");
    copy_corpus_files(&docs, SMALL);
    std::fs::write(
        docs.join("notes.txt"),
        "1. Scope\n\nThis policy covers backups.\n",
    )
    .unwrap();
    (docs, index)
}

fn assert_u64_fields(object: &Value, fields: &[&str]) {
    for field in fields {
        assert!(
            object[field].is_u64(),
            "field {field} missing or not a count in {object}"
        );
    }
}

#[test]
fn sync_json_report_has_every_field() {
    let work = tempfile::tempdir().unwrap();
    let (docs, index) = small_index(work.path());
    let report = sync(&docs, &index, 0);
    assert_u64_fields(
        &report["files"],
        &["added", "modified", "removed", "unchanged", "failed"],
    );
    assert_u64_fields(
        &report["chunks"],
        &["embedded", "reused", "deleted", "total"],
    );
    assert!(report["errors"].as_array().unwrap().is_empty());
    assert!(report["elapsed_ms"].is_u64());
    assert_eq!(
        report["files"]["added"], 3,
        "md, md and txt are indexed: {report}"
    );
}

/// Every chunk of a new file is either embedded or reused; a text that occurs twice in one sync
/// is embedded once and the second occurrence counts as reused.
#[test]
fn duplicate_text_within_one_sync_is_embedded_once() {
    let work = tempfile::tempdir().unwrap();
    let (docs, index) = small_index(work.path());
    std::fs::copy(
        docs.join("deprecation/releases.md"),
        docs.join("releases-copy.md"),
    )
    .unwrap();
    let report = sync(&docs, &index, 0);
    let chunks = &report["chunks"];
    let total = chunks["total"].as_u64().unwrap();
    let (embedded, reused) = (
        chunks["embedded"].as_u64().unwrap(),
        chunks["reused"].as_u64().unwrap(),
    );
    assert_eq!(embedded + reused, total, "{report}");
    let copy_chunks = dump(&index)
        .iter()
        .filter(|c| c["path"] == "releases-copy.md")
        .count() as u64;
    // The copy differs only in its path (its title comes from its H1), so each of its chunk
    // texts is the original's: all of them reuse the vector embedded for the original.
    assert!(copy_chunks > 0);
    assert_eq!(reused, copy_chunks, "{report}");
}

/// A sync with nothing to do (the cron case) and `stats` must not pay for parsing the tokenizer
/// or loading the weights; a sync with an edit loads both.
#[test]
fn no_op_sync_loads_neither_tokenizer_nor_weights() {
    let work = tempfile::tempdir().unwrap();
    let (docs, index) = small_index(work.path());
    sync(&docs, &index, 0);
    let logged = |args: &[&str]| {
        let out = rag_index()
            .env("RUST_LOG", "info")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let (d, i) = (docs.to_str().unwrap(), index.to_str().unwrap());
    for args in [
        &["sync", d, "--index", i, "--json"][..],
        &["stats", "--index", i][..],
    ] {
        let log = logged(args);
        assert!(log.contains("opened embedder"), "{args:?}: {log}");
        assert!(
            !log.contains("loaded tokenizer") && !log.contains("loaded weights"),
            "{args:?} loaded the model: {log}"
        );
    }
    let file = docs.join("deprecation/releases.md");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("\n\nA new paragraph about the release policy.\n");
    std::fs::write(&file, text).unwrap();
    let log = logged(&["sync", d, "--index", i, "--json"]);
    assert!(
        log.contains("loaded tokenizer") && log.contains("loaded weights"),
        "an edit needs both: {log}"
    );
}

#[test]
fn default_index_lives_in_the_folder_and_is_not_indexed_itself() {
    let work = tempfile::tempdir().unwrap();
    let (docs, _) = small_index(work.path());
    let out = run_expect(&["sync", docs.to_str().unwrap(), "--json"], 0);
    assert!(docs.join(".rag-index/index.redb").is_file());
    let first: Value = serde_json::from_str(out.trim()).unwrap();
    let out = run_expect(&["sync", docs.to_str().unwrap(), "--json"], 0);
    let second: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(second["files"]["unchanged"], first["files"]["added"]);
    assert_eq!(second["files"]["added"], 0);

    // query finds ./.rag-index from the working directory (and its subfolders).
    let out = rag_index()
        .args([
            "query",
            "exit status of the healthcheck",
            "--json",
            "-k",
            "2",
        ])
        .current_dir(docs.join("deprecation"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(lines[0]["hits"].as_array().unwrap().len(), 2);
    // ... and from RAG_INDEX_PATH.
    let out = rag_index()
        .args(["stats", "--json"])
        .env("RAG_INDEX_PATH", docs.join(".rag-index"))
        .current_dir(work.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn query_chunks_dump_stats_and_embed_outputs() {
    let work = tempfile::tempdir().unwrap();
    let (docs, index) = small_index(work.path());
    let index_arg = index.to_str().unwrap();
    sync(&docs, &index, 0);

    let lines = json_lines(&run_expect(
        &[
            "query",
            "What exit code does the healthcheck return?",
            "--index",
            index_arg,
            "-k",
            "3",
            "--json",
        ],
        0,
    ));
    assert_eq!(lines.len(), 1);
    let hits = lines[0]["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 3);
    for (i, hit) in hits.iter().enumerate() {
        assert_eq!(hit["rank"], i + 1);
        assert!(hit["score"].is_f64());
        assert!(hit["chunk_id"].is_string());
        assert!(hit["heading_path"].is_array());
        assert!(hit["metadata"].is_object());
        let range = hit["byte_range"].as_array().unwrap();
        let (start, end) = (
            range[0].as_u64().unwrap() as usize,
            range[1].as_u64().unwrap() as usize,
        );
        // The byte range points at the source: its text appears verbatim in the embedded text.
        let source = std::fs::read(docs.join(hit["path"].as_str().unwrap())).unwrap();
        let body = String::from_utf8_lossy(&source[start..end]);
        let first_line = body.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        assert!(
            hit["text"].as_str().unwrap().contains(first_line.trim()),
            "{hit}"
        );
    }
    assert_eq!(hits[0]["path"], SMALL[0]);
    let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "hits sorted by score: {scores:?}"
    );

    // --exact gives the same top hit on a small index.
    let exact = json_lines(&run_expect(
        &[
            "query",
            "What exit code does the healthcheck return?",
            "--index",
            index_arg,
            "-k",
            "3",
            "--json",
            "--exact",
        ],
        0,
    ));
    assert_eq!(exact[0]["hits"][0]["chunk_id"], hits[0]["chunk_id"]);

    // dump: every live chunk with its fields, and its texts are what query returns.
    let dumped = dump(&index);
    for chunk in &dumped {
        for field in [
            "chunk_id",
            "path",
            "text",
            "hash",
            "heading_path",
            "byte_range",
        ] {
            assert!(!chunk[field].is_null(), "dump lacks {field}: {chunk}");
        }
        let hash = blake3::hash(chunk["text"].as_str().unwrap().as_bytes())
            .to_hex()
            .to_string();
        assert_eq!(chunk["hash"], hash);
    }
    assert!(
        dumped
            .iter()
            .any(|c| c["chunk_id"] == hits[0]["chunk_id"] && c["text"] == hits[0]["text"])
    );

    // chunks: the same chunk IDs as the index made, without an index.
    let file = docs.join(SMALL[1]);
    let chunks = json_lines(&run_expect(
        &["chunks", file.to_str().unwrap(), "--json"],
        0,
    ));
    assert!(!chunks.is_empty());
    for chunk in &chunks {
        for field in [
            "chunk_id",
            "path",
            "heading_path",
            "text",
            "byte_range",
            "tokens",
            "metadata",
        ] {
            assert!(!chunk[field].is_null(), "chunks lacks {field}: {chunk}");
        }
        assert!(chunk["tokens"].as_u64().unwrap() <= 256);
    }
    let indexed_texts: Vec<&Value> = dumped
        .iter()
        .filter(|c| c["path"] == SMALL[1])
        .map(|c| &c["text"])
        .collect();
    let chunk_texts: Vec<&Value> = chunks.iter().map(|c| &c["text"]).collect();
    assert_eq!(
        indexed_texts, chunk_texts,
        "chunks shows exactly what sync embedded"
    );

    // stats
    let stats: Value =
        serde_json::from_str(run_expect(&["stats", "--index", index_arg, "--json"], 0).trim())
            .unwrap();
    assert_eq!(stats["files"], 3);
    assert_eq!(stats["chunks"].as_u64().unwrap() as usize, dumped.len());
    assert_eq!(stats["dimensions"], 384);
    assert!(stats["db_bytes"].as_u64().unwrap() > 0);
    // Where the store's bytes go: every table's entries, within the pages it occupies.
    let tables = stats["store_tables"].as_array().unwrap();
    let entries = |name: &str| {
        tables.iter().find(|t| t["table"] == name).unwrap()["entries"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(entries("vectors"), stats["vectors"].as_u64().unwrap());
    assert_eq!(entries("chunks"), stats["chunks"].as_u64().unwrap());
    assert_eq!(entries("manifest"), 3);
    let pages: u64 = tables
        .iter()
        .map(|t| t["page_bytes"].as_u64().unwrap())
        .sum();
    assert!(pages <= stats["db_bytes"].as_u64().unwrap());
    for table in tables {
        let stored = table["stored_bytes"].as_u64().unwrap();
        assert!(
            stored > 0 && stored <= table["page_bytes"].as_u64().unwrap(),
            "{table}"
        );
    }
    // After an edit the graph is a delta beside its base, and counts both: at least the f32
    // row each chunk has in the base.
    let edited = docs.join("notes.txt");
    let mut text = std::fs::read_to_string(&edited).unwrap();
    text.push_str("\n\nA paragraph appended to make the next sync write a delta.\n");
    std::fs::write(&edited, text).unwrap();
    sync(&docs, &index, 0);
    let stats: Value =
        serde_json::from_str(run_expect(&["stats", "--index", index_arg, "--json"], 0).trim())
            .unwrap();
    let rows = stats["chunks"].as_u64().unwrap() * 384 * 4;
    assert!(stats["graph_bytes"].as_u64().unwrap() > rows, "{stats}");
    let text = run_expect(&["stats", "--index", index_arg], 0);
    assert!(
        text.contains("per chunk:") && text.contains("vectors "),
        "{text}"
    );

    // embed: one normalised 384-d vector per line; a JSON string line may hold newlines; the
    // vector of a chunk text equals the one search used (query of the exact text scores ~1).
    let mut child = rag_index()
        .args(["embed", "--json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "plain line").unwrap();
        writeln!(stdin, "{}", serde_json::to_string("two\nlines").unwrap()).unwrap();
        writeln!(stdin, "two lines").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let vectors = json_lines(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(vectors.len(), 3);
    let as_vec = |v: &Value| {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect::<Vec<_>>()
    };
    for v in &vectors {
        let v = as_vec(v);
        assert_eq!(v.len(), 384);
        let norm: f64 = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
    }
    // BERT lower-cases and splits on whitespace: "two\nlines" and "two lines" embed alike.
    let dot: f64 = as_vec(&vectors[1])
        .iter()
        .zip(as_vec(&vectors[2]))
        .map(|(a, b)| a * b)
        .sum();
    assert!(dot > 0.9999, "{dot}");
}

#[test]
fn eval_reports_recall_per_pattern() {
    let work = tempfile::tempdir().unwrap();
    let (docs, index) = small_index(work.path());
    sync(&docs, &index, 0);
    let questions = work.path().join("q.jsonl");
    let set: Vec<String> = common::questions()
        .into_iter()
        .filter(|q| q["source"] == SMALL[0] || q["source"] == SMALL[1])
        .map(|q| q.to_string())
        .collect();
    assert!(set.len() >= 2);
    std::fs::write(&questions, set.join("\n")).unwrap();
    let out = run_expect(
        &[
            "eval",
            questions.to_str().unwrap(),
            "--index",
            index.to_str().unwrap(),
            "--json",
        ],
        0,
    );
    let report: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(report["overall"]["questions"], set.len());
    for field in ["recall_at_1", "recall_at_5", "recall_at_10", "mrr_at_10"] {
        let v = report["overall"][field].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&v));
    }
    // Each question's rank is the rank of the first hit of `query` that holds all its evidence.
    for (line, result) in set.iter().zip(report["questions"].as_array().unwrap()) {
        let question: Value = serde_json::from_str(line).unwrap();
        let hits = json_lines(&run_expect(
            &[
                "query",
                question["question"].as_str().unwrap(),
                "--index",
                index.to_str().unwrap(),
                "-k",
                "10",
                "--json",
            ],
            0,
        ));
        let expected = evidence_rank(&question, hits[0]["hits"].as_array().unwrap());
        assert_eq!(result["id"], question["id"]);
        assert_eq!(result["rank"], expected.unwrap_or(Value::Null), "{report}");
    }
    let answered = report["questions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| !q["rank"].is_null())
        .count();
    assert_eq!(
        report["overall"]["recall_at_10"].as_f64().unwrap(),
        answered as f64 / set.len() as f64
    );
    assert!(answered >= 1, "{report}");
    assert!(report["per_pattern"].as_object().unwrap().len() >= 2);
    assert!(report["mean_tokens_per_chunk"].as_f64().unwrap() > 0.0);
}

#[test]
fn exit_codes() {
    let work = tempfile::tempdir().unwrap();
    let missing = work.path().join("no-such-index");

    // A missing index is a fatal error: 2, with a message naming it.
    let out = run(&["query", "anything", "--index", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-index"));
    assert!(out.stdout.is_empty());

    // A bad argument is a usage error: 2.
    assert_eq!(
        run(&["query", "x", "-k", "not-a-number"]).status.code(),
        Some(2)
    );
    assert_eq!(run(&["frobnicate"]).status.code(), Some(2));

    // Files that cannot be indexed: exit 1, each named in errors and on stderr, the rest indexed.
    let (docs, index) = small_index(work.path());
    std::fs::write(docs.join("binary.md"), b"\x00\x01\x02 not text").unwrap();
    std::fs::write(docs.join("latin1.md"), b"caf\xe9 au lait").unwrap();
    std::os::unix::fs::symlink(docs.join("gone.md"), docs.join("dangling.md")).unwrap();
    let out = run(&[
        "sync",
        docs.to_str().unwrap(),
        "--index",
        index.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors = report["errors"].as_array().unwrap();
    for bad in ["binary.md", "latin1.md", "dangling.md"] {
        assert!(
            errors
                .iter()
                .any(|e| e["path"] == bad && e["error"].as_str().is_some_and(|s| !s.is_empty())),
            "{bad} not in {report}"
        );
        assert!(stderr.contains(bad), "{bad} not on stderr: {stderr}");
    }
    assert_eq!(report["files"]["failed"], 3);
    assert_eq!(report["files"]["added"], 3);

    // A file that becomes unreadable keeps its previous chunks.
    let before = dump(&index).len();
    std::fs::write(docs.join(SMALL[1]), b"\xff\xfe broken now").unwrap();
    let report = sync(&docs, &index, 1);
    assert_eq!(report["files"]["failed"], 4);
    assert_eq!(
        dump(&index).len(),
        before,
        "nothing already indexed is lost"
    );
}

#[test]
fn a_second_writer_gets_exit_code_75() {
    let work = tempfile::tempdir().unwrap();
    let (docs, index) = small_index(work.path());
    sync(&docs, &index, 0);
    // Hold the index the way a running sync does.
    let holder = rag_store::Store::open_writer(&index.join("index.redb")).unwrap();
    let out = run(&[
        "sync",
        docs.to_str().unwrap(),
        "--index",
        index.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(75),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("busy"));
    // A query meanwhile still works.
    let out = run(&[
        "query",
        "healthcheck",
        "--index",
        index.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(holder);
    sync(&docs, &index, 0);
}

#[test]
fn metadata_only_change_reembeds_nothing_and_updates_metadata() {
    let work = tempfile::tempdir().unwrap();
    let (docs, index) = small_index(work.path());
    sync(&docs, &index, 0);
    let file = docs.join(SMALL[0]);
    let text = std::fs::read_to_string(&file).unwrap();
    let changed = text.replacen(
        "description: \"In Traefik Proxy",
        "description: \"Changed: In Traefik Proxy",
        1,
    );
    assert_ne!(text, changed);
    std::fs::write(&file, changed).unwrap();
    let report = sync(&docs, &index, 0);
    assert_eq!(report["files"]["modified"], 1);
    assert_eq!(report["chunks"]["embedded"], 0, "{report}");
    assert_eq!(report["chunks"]["deleted"], 0, "{report}");
    let dumped = dump(&index);
    let chunk = dumped.iter().find(|c| c["path"] == SMALL[0]).unwrap();
    assert!(
        chunk["metadata"]["description"]
            .as_str()
            .unwrap()
            .starts_with("Changed:"),
        "{chunk}"
    );
}

#[test]
fn dry_run_reports_the_plan_and_writes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let (docs, index) = small_index(work.path());
    sync(&docs, &index, 0);
    let before = dump(&index);
    std::fs::remove_file(docs.join(SMALL[1])).unwrap();
    std::fs::write(
        docs.join("new.md"),
        "# New\n\nA brand new page about quokkas.\n",
    )
    .unwrap();
    let out = run_expect(
        &[
            "sync",
            docs.to_str().unwrap(),
            "--index",
            index.to_str().unwrap(),
            "--json",
            "--dry-run",
        ],
        0,
    );
    let plan: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(plan["files"]["added"], 1);
    assert_eq!(plan["files"]["removed"], 1);
    assert_eq!(plan["chunks"]["embedded"], 1);
    let removed = before.iter().filter(|c| c["path"] == SMALL[1]).count();
    assert_eq!(plan["chunks"]["deleted"], removed);
    assert_eq!(plan["chunks"]["total"], before.len() - removed + 1);
    assert_eq!(dump(&index), before, "a dry run writes nothing");
    // The real sync does what the plan said.
    let report = sync(&docs, &index, 0);
    assert_eq!(report["files"], plan["files"]);
    assert_eq!(report["chunks"], plan["chunks"]);
}

#[test]
fn changed_chunker_configuration_needs_reindex() {
    let work = tempfile::tempdir().unwrap();
    let (docs, index) = small_index(work.path());
    sync(&docs, &index, 0);
    let before = dump(&index);
    let args = [
        "sync",
        docs.to_str().unwrap(),
        "--index",
        index.to_str().unwrap(),
        "--json",
        "--target-tokens",
        "64",
    ];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--reindex"));
    assert_eq!(dump(&index), before, "a refused sync changes nothing");
    let mut with_reindex = args.to_vec();
    with_reindex.push("--reindex");
    let report: Value = serde_json::from_str(run_expect(&with_reindex, 0).trim()).unwrap();
    assert_eq!(report["chunks"]["deleted"], before.len());
    let after = dump(&index);
    assert!(after.len() > before.len(), "smaller target, more chunks");
    assert!(
        after
            .iter()
            .all(|c| c["tokens"].as_u64().unwrap() <= 64 || !c["text"].as_str().unwrap().is_empty())
    );
    let verify = json_lines(&run_expect(
        &["verify", "--index", index.to_str().unwrap(), "--json"],
        0,
    ));
    assert_eq!(verify[0]["ok"], true, "{}", verify[0]);
    // The new configuration is now the stored one.
    let again: Value = serde_json::from_str(run_expect(&args, 0).trim()).unwrap();
    assert_eq!(again["chunks"]["embedded"], 0);
}

#[test]
fn precision_is_chosen_by_flag_or_environment_and_an_index_refuses_the_other() {
    let work = tempfile::tempdir().unwrap();
    let (docs, index) = small_index(work.path());
    let (d, i) = (docs.to_str().unwrap(), index.to_str().unwrap());
    let question = "which endpoint answers the health check";
    run_expect(
        &["sync", d, "--index", i, "--precision", "int8", "--json"],
        0,
    );

    // An f32 query of the int8 index is refused, not answered with vectors of another space.
    let out = run(&["query", question, "--index", i, "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("embedding model") && stderr.contains("precision=int8"),
        "{stderr}"
    );
    // The same precision searches, from the flag or from $RAG_INDEX_PRECISION.
    let by_flag = json_lines(&run_expect(
        &[
            "query",
            question,
            "--index",
            i,
            "--precision",
            "int8",
            "--json",
        ],
        0,
    ));
    assert!(!by_flag.is_empty());
    let by_env = rag_index()
        .env("RAG_INDEX_PRECISION", "int8")
        .args(["query", question, "--index", i, "--json"])
        .output()
        .unwrap();
    assert!(
        by_env.status.success(),
        "{}",
        String::from_utf8_lossy(&by_env.stderr)
    );
    assert_eq!(
        json_lines(&String::from_utf8_lossy(&by_env.stdout)),
        by_flag
    );

    // Syncing in f32 needs --reindex, which re-embeds everything; then f32 queries work.
    let out = run(&["sync", d, "--index", i, "--json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--reindex"));
    let report: Value = serde_json::from_str(
        run_expect(&["sync", d, "--index", i, "--reindex", "--json"], 0).trim(),
    )
    .unwrap();
    assert_eq!(report["chunks"]["embedded"], report["chunks"]["total"]);
    assert!(!json_lines(&run_expect(&["query", question, "--index", i, "--json"], 0)).is_empty());

    // An unknown precision is a usage error naming the choices.
    let out = run(&["query", question, "--index", i, "--precision", "fp16"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("int8"));
}

#[test]
fn hostile_folder_contents_are_reported_and_the_rest_is_indexed() {
    let work = tempfile::tempdir().unwrap();
    let (docs, index) = small_index(work.path());
    // A sparse 100 MB file, a symlink loop, unusual names, an empty file, a hidden folder.
    let huge = std::fs::File::create(docs.join("huge.md")).unwrap();
    huge.set_len(100 * 1024 * 1024).unwrap();
    std::os::unix::fs::symlink(&docs, docs.join("loop")).unwrap();
    std::fs::write(
        docs.join("spaces and ünïcödé — 日本.md"),
        "# Odd name\n\nStill indexed.\n",
    )
    .unwrap();
    std::fs::write(docs.join("empty.md"), "").unwrap();
    std::fs::create_dir_all(docs.join(".git")).unwrap();
    std::fs::write(docs.join(".git/hidden.md"), "# Hidden\n\nNever indexed.\n").unwrap();
    let report = sync(&docs, &index, 1);
    let errors = report["errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|e| e["path"] == "huge.md" && e["error"].as_str().unwrap().contains("too large")),
        "{report}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e["path"].as_str().unwrap().starts_with("loop")),
        "{report}"
    );
    let paths: std::collections::BTreeSet<String> = dump(&index)
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_owned())
        .collect();
    assert!(paths.contains("spaces and ünïcödé — 日本.md"), "{paths:?}");
    assert!(
        !paths
            .iter()
            .any(|p| p.contains("hidden") || p.starts_with("loop")),
        "{paths:?}"
    );
    assert!(paths.contains(SMALL[0]) && paths.contains(SMALL[1]));
}

#[test]
fn verify_detects_a_damaged_graph_and_repair_rebuilds_it() {
    let work = tempfile::tempdir().unwrap();
    let (docs, index) = small_index(work.path());
    sync(&docs, &index, 0);
    let index_arg = index.to_str().unwrap();
    let before = json_lines(&run_expect(
        &[
            "query",
            "healthcheck exit status",
            "--index",
            index_arg,
            "--json",
        ],
        0,
    ));
    // Damage the saved graph: every file of it truncated.
    let graph = std::fs::read_dir(&index)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("graph-"))
        .unwrap()
        .path();
    for file in std::fs::read_dir(&graph).unwrap().flatten() {
        std::fs::write(file.path(), b"").unwrap();
    }
    let report = json_lines(&run_expect(&["verify", "--index", index_arg, "--json"], 1));
    assert_eq!(report[0]["ok"], false);
    assert!(!report[0]["problems"].as_array().unwrap().is_empty());
    // Queries still work meanwhile: the graph is rebuilt in memory from stored vectors.
    let during = json_lines(&run_expect(
        &[
            "query",
            "healthcheck exit status",
            "--index",
            index_arg,
            "--json",
        ],
        0,
    ));
    assert_eq!(
        during[0]["hits"][0]["chunk_id"],
        before[0]["hits"][0]["chunk_id"]
    );
    let repaired = json_lines(&run_expect(
        &["verify", "--index", index_arg, "--repair", "--json"],
        0,
    ));
    assert_eq!(repaired[0]["ok"], true, "{}", repaired[0]);
    assert!(!repaired[0]["repaired"].as_array().unwrap().is_empty());
    let after = json_lines(&run_expect(&["verify", "--index", index_arg, "--json"], 0));
    assert_eq!(after[0]["ok"], true);
}
