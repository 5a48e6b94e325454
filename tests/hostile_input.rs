//! Hostile input and faults, one test per class of failure, with the real binary on real files:
//! rag-index never deletes what it did not create, bounds every input, keeps readers working
//! after a dead writer, reports corruption instead of panicking, and treats an unreadable
//! folder as unreadable rather than gone.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

const SMALL: &[&str] = &[
    "reference/install-configuration/observability/healthcheck.md",
    "deprecation/releases.md",
];

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn small_docs(work: &Path) -> PathBuf {
    let docs = work.join("docs");
    copy_corpus_files(&docs, SMALL);
    docs
}

/// Exit code of `rag-index args`, with stderr, asserting it did not panic (exit 101).
fn code_of(args: &[&str]) -> (i32, String) {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out.status.code().expect("exited");
    assert_ne!(code, 101, "rag-index {args:?} panicked: {stderr}");
    assert!(!stderr.contains("panicked"), "rag-index {args:?}: {stderr}");
    (code, stderr)
}

/// Paths named in a sync report's warnings.
fn warned_paths(report: &Value) -> Vec<&str> {
    report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["path"].as_str().unwrap())
        .collect()
}

fn texts(index: &Path) -> Vec<(String, String)> {
    dump(index)
        .into_iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_string(),
                c["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn only_what_rag_index_created_is_ever_deleted() {
    let work = tempfile::tempdir().unwrap();
    let docs = small_docs(work.path());
    // A folder with foreign content and no index is refused, and left exactly as it was.
    let foreign = work.path().join("u");
    std::fs::create_dir_all(foreign.join("graph-x")).unwrap();
    std::fs::write(foreign.join("graph-x/f"), "hi").unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    let (code, stderr) = code_of(&["sync", s(&docs), "--index", s(&foreign)]);
    assert_eq!(code, 2);
    assert!(stderr.contains("not an index directory"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(foreign.join("graph-x/f")).unwrap(),
        "hi"
    );
    assert!(!foreign.join(rag_index_core::DB_FILE).exists());

    // Inside a real index, look-alikes of graph directories that hold other files survive
    // syncs that replace graphs; rag-index's own old graphs are removed.
    let index = work.path().join("idx");
    sync(&docs, &index, 0);
    for lookalike in ["graph-1-ab", "graph-x", "graph-99-ff"] {
        std::fs::create_dir_all(index.join(lookalike)).unwrap();
        std::fs::write(index.join(lookalike).join("notes.txt"), "mine").unwrap();
    }
    for round in 0..2 {
        std::fs::write(
            docs.join("new.md"),
            format!("# New\n\nRound {round} text.\n"),
        )
        .unwrap();
        sync(&docs, &index, 0);
    }
    for lookalike in ["graph-1-ab", "graph-x", "graph-99-ff"] {
        assert!(
            index.join(lookalike).join("notes.txt").is_file(),
            "{lookalike} lost"
        );
    }
    let ours: Vec<String> = std::fs::read_dir(&index)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.starts_with("graph-") && !n.contains("-ab") && n != "graph-x" && !n.contains("-ff")
        })
        .collect();
    // The current graph is a delta (the edits were small) and keeps its base; every older
    // graph of ours is gone.
    assert_eq!(ours.len(), 2, "the current graph and its base: {ours:?}");
    let base_line = |dir: &str| {
        std::fs::read_to_string(index.join(dir).join("MANIFEST"))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("base=").map(str::to_owned))
    };
    let bases: Vec<String> = ours.iter().filter_map(|d| base_line(d)).collect();
    assert_eq!(bases.len(), 1, "{ours:?}");
    assert!(ours.contains(&bases[0]), "{ours:?} {bases:?}");
    run_expect(&["verify", "--index", s(&index)], 0);
}

#[test]
fn front_matter_bombs_are_bounded_and_the_rest_is_indexed() {
    let work = tempfile::tempdir().unwrap();
    let docs = small_docs(work.path());
    for (name, levels, width) in [("bomb10.md", 10, 10), ("bomb30.md", 30, 2)] {
        let mut yaml = format!("a0: &a0 [{}]\n", vec!["lol"; width].join(", "));
        for i in 1..levels {
            let refs = vec![format!("*a{}", i - 1); width].join(", ");
            yaml.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        let body =
            format!("---\n{yaml}title: Bomb\n---\n# Real heading\n\nThe {name} body is indexed.\n");
        std::fs::write(docs.join(name), body).unwrap();
    }
    let deep = format!(
        "---\nk: {}{}\n---\nDeep body text.\n",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    std::fs::write(docs.join("deep.md"), deep).unwrap();
    let report = sync(&docs, &work.path().join("idx"), 0);
    assert_eq!(report["files"]["added"], 5, "{report}");
    let warned = warned_paths(&report);
    for name in ["bomb10.md", "bomb30.md", "deep.md"] {
        assert!(warned.contains(&name), "{name} not reported: {report}");
    }
    let chunks = texts(&work.path().join("idx"));
    for (name, needle) in [
        ("bomb10.md", "The bomb10.md body is indexed."),
        ("bomb30.md", "The bomb30.md body is indexed."),
        ("deep.md", "Deep body text."),
    ] {
        let mine: Vec<&String> = chunks
            .iter()
            .filter(|(p, _)| p == name)
            .map(|(_, t)| t)
            .collect();
        assert!(mine.iter().any(|t| t.contains(needle)), "{name}: {mine:?}");
        // The refused YAML is not embedded.
        assert!(
            mine.iter().all(|t| !t.contains("*a") && !t.contains("[[[")),
            "{name}: {mine:?}"
        );
    }
}

#[test]
fn blobs_are_left_out_reported_and_do_not_stall_the_sync() {
    let work = tempfile::tempdir().unwrap();
    let docs = small_docs(work.path());
    let mut rng = 0x2545f4914f6cdd1du64;
    let mut base64 = String::new();
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    while base64.len() < 1 << 20 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        base64.push(alphabet[(rng % 64) as usize] as char);
    }
    let uri = format!(
        "# Screenshot\n\nBefore the image.\n\n![shot](data:image/png;base64,{})\n\nAfter the image.\n",
        &base64[..256 << 10]
    );
    std::fs::write(docs.join("uri.md"), uri).unwrap();
    let wrapped: String = base64
        .as_bytes()
        .chunks(76)
        .map(|l| format!("{}\n", std::str::from_utf8(l).unwrap()))
        .collect();
    std::fs::write(
        docs.join("wrapped.md"),
        format!("# Key\n\nThe key follows.\n\n{wrapped}\nEnd of key.\n"),
    )
    .unwrap();
    let numbers: String = (0..200_000).map(|i| format!("{i},")).collect();
    std::fs::write(docs.join("numbers.txt"), format!("Numbers\n\n{numbers}\n")).unwrap();
    std::fs::write(
        docs.join("word.md"),
        format!("# Word\n\n{}\n", "x".repeat(4 << 20)),
    )
    .unwrap();

    let index = work.path().join("idx");
    let report = sync(&docs, &index, 0);
    let warned = warned_paths(&report);
    for name in ["uri.md", "wrapped.md", "numbers.txt", "word.md"] {
        assert!(warned.contains(&name), "{name} not reported: {report}");
    }
    let chunks = dump(&index);
    for name in ["uri.md", "wrapped.md", "numbers.txt", "word.md"] {
        let mine: Vec<&Value> = chunks.iter().filter(|c| c["path"] == name).collect();
        assert!(
            !mine.is_empty() && mine.len() <= 3,
            "{name}: {} chunks",
            mine.len()
        );
        for c in &mine {
            let text = c["text"].as_str().unwrap();
            assert!(text.len() < 2048, "{name}: a {}-byte chunk", text.len());
            assert!(c["tokens"].as_u64().unwrap() <= 256);
        }
    }
    // The prose around a blob is indexed, and provenance points into the real file.
    let source = std::fs::read_to_string(docs.join("uri.md")).unwrap();
    let uri_chunk = chunks.iter().find(|c| c["path"] == "uri.md").unwrap();
    let text = uri_chunk["text"].as_str().unwrap();
    assert!(
        text.contains("Before the image.") && text.contains("After the image."),
        "{text}"
    );
    let range = uri_chunk["byte_range"].as_array().unwrap();
    let (a, b) = (
        range[0].as_u64().unwrap() as usize,
        range[1].as_u64().unwrap() as usize,
    );
    assert!(
        source[a..b].contains("data:image/png;base64,")
            && source[a..b].ends_with("After the image.")
    );
    assert!(
        chunks
            .iter()
            .any(|c| c["path"] == "wrapped.md"
                && c["text"].as_str().unwrap().contains("End of key."))
    );
}

/// Syncs `docs` into `index` and kills the process with `signal` once `after` has passed.
fn sync_and_signal(docs: &Path, index: &Path, signal: &str, after: Duration) -> Option<i32> {
    let mut child = rag_index()
        .args(["sync", s(docs), "--index", s(index)])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    if !still_running_at(&mut child, Instant::now(), after) {
        return child.wait().unwrap().code();
    }
    Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    child.wait().unwrap().code()
}

#[test]
fn readers_see_the_last_commit_after_a_killed_or_stopped_writer() {
    let work = tempfile::tempdir().unwrap();
    let docs = small_docs(work.path());
    let index = work.path().join("idx");
    sync(&docs, &index, 0);
    let before = texts(&index);
    // Enough new text that the sync is still embedding when it is stopped.
    copy_corpus_files(
        &docs,
        &[
            "reference/routing-configuration/http/middlewares/jwt.md",
            "reference/routing-configuration/kubernetes/gateway-api.md",
            "reference/install-configuration/entrypoints.md",
        ],
    );
    // Signals are timed as fractions of how long this sync takes here (into a scratch index),
    // so they land inside it on a fast machine as well as a slow one.
    let started = Instant::now();
    sync(&docs, &work.path().join("scratch"), 0);
    let takes = started.elapsed();
    let mut killed_mid_sync = 0;
    for (signal, fraction) in [("-KILL", 0.3), ("-KILL", 0.6), ("-TERM", 0.3)] {
        let code = sync_and_signal(&docs, &index, signal, takes.mul_f64(fraction));
        if code.is_some_and(|c| c == 0) {
            continue; // finished before the signal: nothing to test this round
        }
        killed_mid_sync += 1;
        if signal == "-TERM" {
            assert_eq!(
                code,
                Some(143),
                "SIGTERM ends the sync cleanly with 128 + 15"
            );
        }
        // Right after the death, every reader works and sees the last committed state.
        assert_eq!(texts(&index), before, "after {signal}");
        run_expect(&["query", "--index", s(&index), "health check"], 0);
        run_expect(&["stats", "--index", s(&index)], 0);
        run_expect(&["verify", "--index", s(&index)], 0);
    }
    assert!(killed_mid_sync > 0, "no signal landed inside a sync");
    sync(&docs, &index, 0);
    assert_eq!(
        dump(&index).len(),
        expected_chunks(&docs, Some(&index)).len()
    );
    run_expect(&["verify", "--index", s(&index)], 0);
}

#[test]
fn a_damaged_store_is_a_report_and_a_rebuild_not_a_panic() {
    let work = tempfile::tempdir().unwrap();
    let docs = small_docs(work.path());
    let index = work.path().join("idx");
    sync(&docs, &index, 0);
    let db = index.join(rag_index_core::DB_FILE);
    let good = std::fs::read(&db).unwrap();
    let mut damages: Vec<(&str, Vec<u8>)> = Vec::new();
    damages.push(("truncated", good[..good.len() / 3].to_vec()));
    let mut header = good.clone();
    header[..512].iter_mut().for_each(|b| *b = 0x5a);
    damages.push(("garbage header", header));
    let mut pages = good.clone();
    for at in (4096..pages.len()).step_by(4096) {
        for b in &mut pages[at + 64..(at + 2048).min(at + 4096)] {
            *b ^= 0xff;
        }
    }
    damages.push(("every page flipped", pages));
    for (what, bytes) in damages {
        std::fs::write(&db, &bytes).unwrap();
        for args in [
            vec!["query", "--index", s(&index), "health check"],
            vec!["dump", "--index", s(&index)],
            vec!["stats", "--index", s(&index)],
            vec!["sync", s(&docs), "--index", s(&index)],
        ] {
            let (code, _) = code_of(&args);
            assert_ne!(code, 0, "{what}: {args:?} succeeded on a damaged store");
        }
        let (code, _) = code_of(&["verify", "--index", s(&index)]);
        assert_eq!(code, 1, "{what}: verify reports damage with exit 1");
        // The way out: --reindex moves the damaged file aside and rebuilds from the folder.
        let (code, stderr) = code_of(&["sync", s(&docs), "--index", s(&index), "--reindex"]);
        assert_eq!(code, 0, "{what}: {stderr}");
        assert!(stderr.contains("moved"), "{what}: {stderr}");
        assert_eq!(
            dump(&index).len(),
            expected_chunks(&docs, Some(&index)).len()
        );
        run_expect(&["verify", "--index", s(&index)], 0);
    }
    let aside = entries_where(&index, |name| name.contains(".damaged-")).len();
    assert_eq!(aside, 3, "every damaged store is kept aside, none deleted");
}

#[test]
fn a_damaged_graph_is_rebuilt_by_the_next_sync() {
    let work = tempfile::tempdir().unwrap();
    let docs = small_docs(work.path());
    let index = work.path().join("idx");
    sync(&docs, &index, 0);
    let graph = std::fs::read_dir(&index)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("graph-"))
        .unwrap()
        .path();
    std::fs::write(graph.join("search.bin"), b"garbage").unwrap();
    let (code, _) = code_of(&["verify", "--index", s(&index)]);
    assert_eq!(code, 1);
    sync(&docs, &index, 0);
    run_expect(&["verify", "--index", s(&index)], 0);
}

#[test]
fn a_damaged_delta_or_delta_base_is_reported_and_rebuilt_by_the_next_sync() {
    let work = tempfile::tempdir().unwrap();
    let docs = small_docs(work.path());
    let index = work.path().join("idx");
    sync(&docs, &index, 0);
    let first = rag_index_core::walk::walk(&docs, None)
        .0
        .into_iter()
        .map(|f| f.abs)
        .find(|p| p.extension().is_some_and(|e| e == "md"))
        .expect("a Markdown file");
    // The graph directory whose manifest names a base, and that base.
    let delta_and_base = || {
        entries_where(&index, |name| name.starts_with("graph-"))
            .into_iter()
            .find_map(|dir| {
                let manifest = std::fs::read_to_string(dir.join("MANIFEST")).ok()?;
                let base = manifest.lines().find_map(|l| l.strip_prefix("base="))?;
                Some((dir, index.join(base)))
            })
            .expect("an edit saves a delta")
    };
    for damaged in ["delta.bin", "search.bin", "vectors.bin"] {
        let mut text = std::fs::read_to_string(&first).unwrap();
        text.push_str(&format!("\n\nA line added before damaging {damaged}.\n"));
        std::fs::write(&first, text).unwrap();
        sync(&docs, &index, 0);
        let (delta, base) = delta_and_base();
        let path = match damaged {
            "delta.bin" => delta.join(damaged),
            _ => base.join(damaged),
        };
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let (code, _) = code_of(&["verify", "--index", s(&index)]);
        assert_eq!(code, 1, "verify misses a damaged {damaged}");
        // Searches answer meanwhile, from a graph rebuilt in memory.
        let hits = json_lines(&run_expect(
            &["query", "configuration", "--index", s(&index), "--json"],
            0,
        ));
        assert!(!hits[0]["hits"].as_array().unwrap().is_empty());
        // A no-op sync rebuilds it as one full save; nothing damaged is kept.
        sync(&docs, &index, 0);
        run_expect(&["verify", "--index", s(&index)], 0);
        let graphs = entries_where(&index, |name| name.starts_with("graph-")).len();
        assert_eq!(graphs, 1, "after rebuilding a damaged {damaged}");
    }
}

/// The entries of `dir` whose names `keep` accepts.
fn entries_where(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| keep(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect()
}

/// As root, permission bits do not stop reads: run the binary as `nobody` then.
fn as_unprivileged(args: &[&str]) -> std::process::Output {
    let bin = env!("CARGO_BIN_EXE_rag-index");
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/all-MiniLM-L6-v2");
    let mut cmd = if is_root() {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            bin,
        ]);
        c
    } else {
        Command::new(bin)
    };
    cmd.args(args)
        .args(["--model-dir", s(&models)])
        .env("RAG_INDEX_CACHE_DIR", "")
        .env("HOME", "/tmp")
        .env_remove("RUST_BACKTRACE")
        .env_remove("RAG_INDEX_PATH");
    cmd.output().unwrap()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

#[test]
fn an_unreadable_folder_keeps_its_chunks() {
    use std::os::unix::fs::PermissionsExt;
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let docs = work.path().join("docs");
    copy_corpus_files(&docs, SMALL);
    copy_corpus_files(&docs.join("sub"), &["deprecation/features.md"]);
    let index = work.path().join("idx");
    std::fs::create_dir_all(&index).unwrap();
    for dir in [
        &docs,
        &docs.join("sub"),
        &docs.join("sub/deprecation"),
        &index,
    ] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let sync_json = || {
        let out = as_unprivileged(&["sync", s(&docs), "--index", s(&index), "--json"]);
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("no report: {}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code(), report)
    };
    let (code, report) = sync_json();
    assert_eq!(code, Some(0), "{report}");
    let before = texts(&index);
    assert!(before.iter().any(|(p, _)| p.starts_with("sub/")));

    std::fs::set_permissions(docs.join("sub"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let (code, report) = sync_json();
    std::fs::set_permissions(docs.join("sub"), std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(code, Some(1), "an unreadable folder is a failure: {report}");
    assert_eq!(report["files"]["removed"], 0, "{report}");
    assert!(report["errors"].to_string().contains("sub"), "{report}");
    assert_eq!(
        texts(&index),
        before,
        "nothing under the folder was dropped"
    );
}

#[test]
fn a_closed_stdout_after_the_commit_is_not_a_failure() {
    let work = tempfile::tempdir().unwrap();
    let docs = small_docs(work.path());
    let index = work.path().join("idx");
    let mut child = rag_index()
        .args(["sync", s(&docs), "--index", s(&index), "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away, like `| true`
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        dump(&index).len(),
        expected_chunks(&docs, Some(&index)).len()
    );
    // Readers that lose their stdout end quietly too.
    let mut q = rag_index()
        .args(["dump", "--index", s(&index)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(q.stdout.take());
    let out = q.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn links_nul_bytes_nested_indexes_and_unbounded_inputs() {
    let work = tempfile::tempdir().unwrap();
    let docs = small_docs(work.path());
    let outside = work.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("secret.md"),
        "# Secret\n\nThe outside secret.\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.join("secret.md"), docs.join("passwd.md")).unwrap();
    let mut late_nul = "# Late\n\n".to_string() + &"words and more words ".repeat(1000);
    late_nul.push('\0');
    std::fs::write(docs.join("late-nul.md"), late_nul).unwrap();

    let index = work.path().join("idx");
    let report = sync(&docs, &index, 1);
    assert!(
        report["errors"].to_string().contains("late-nul.md"),
        "{report}"
    );
    assert!(
        texts(&index)
            .iter()
            .all(|(p, t)| p != "passwd.md" && !t.contains("outside secret"))
    );
    run_expect(&["sync", s(&docs), "--index", s(&index), "--follow"], 1);
    assert!(
        texts(&index).iter().any(|(p, _)| p == "passwd.md"),
        "--follow follows the link"
    );

    // An index inside the folder would hide files under it: refused unless hidden.
    let (code, stderr) = code_of(&["sync", s(&docs), "--index", s(&docs.join("idx"))]);
    assert_eq!(code, 2);
    assert!(stderr.contains("inside the folder"), "{stderr}");

    // Unbounded query input is an error, not an out-of-memory kill.
    let (code, stderr) = code_of(&["query", "--index", s(&index), "--queries", "/dev/zero"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("longer than"), "{stderr}");

    // A search for nothing would return arbitrary chunks with made-up scores.
    let (code, stderr) = code_of(&["query", " \t", "--index", s(&index)]);
    assert_eq!(code, 2);
    assert!(stderr.contains("the query is empty"), "{stderr}");

    // A question without evidence would count as answered by anything; one without text
    // asks nothing.
    let questions = work.path().join("q.jsonl");
    for (line, why) in [
        (
            r#"{"id":"x","question":"health?","evidence":[]}"#,
            "no evidence",
        ),
        (
            r#"{"id":"y","question":" ","evidence":["healthy"]}"#,
            "has no text",
        ),
    ] {
        std::fs::write(&questions, format!("{line}\n")).unwrap();
        let (code, stderr) = code_of(&["eval", s(&questions), "--index", s(&index)]);
        assert_eq!(code, 2);
        assert!(stderr.contains(why), "{stderr}");
    }
}

#[test]
fn config_files_nested_past_any_use_are_refused_by_name_in_a_line() {
    let work = tempfile::tempdir().unwrap();
    let docs = small_docs(work.path());
    let deep = 200_000;
    let brackets = format!("{}{}", "[".repeat(deep), "]".repeat(deep));
    std::fs::write(docs.join("flow.toml"), format!("a = {brackets}\n")).unwrap();
    std::fs::write(docs.join("flow.yaml"), format!("a: {brackets}\n")).unwrap();
    let block: String = (0..3_000)
        .map(|i| format!("{}k{i}:\n", "  ".repeat(i)))
        .collect();
    std::fs::write(
        docs.join("block.yaml"),
        block + &"  ".repeat(3_000) + "v: 1\n",
    )
    .unwrap();
    std::fs::write(docs.join("flow.json"), &brackets).unwrap();
    // A DOCX whose XML breaks off in a megabyte-long tag name, which the XML reader's error
    // quotes: the report keeps the start of the reason and says how much it left out.
    let mut docx = zip::ZipWriter::new(std::fs::File::create(docs.join("tag.docx")).unwrap());
    docx.start_file(
        "word/document.xml",
        zip::write::SimpleFileOptions::default(),
    )
    .unwrap();
    let body = format!(
        "<w:document><w:body><{}></w:body></w:document>",
        "a".repeat(1 << 20)
    );
    std::io::Write::write_all(&mut docx, body.as_bytes()).unwrap();
    docx.finish().unwrap();

    let index = work.path().join("idx");
    let out = run_expect(&["sync", s(&docs), "--index", s(&index), "--json"], 1);
    let report = &json_lines(&out)[0];
    let errors = report["errors"].as_array().unwrap();
    let failed: Vec<&str> = errors.iter().map(|e| e["path"].as_str().unwrap()).collect();
    for name in ["block.yaml", "flow.toml", "flow.yaml", "tag.docx"] {
        assert!(failed.contains(&name), "{name} is named: {report}");
    }
    for e in errors.iter().chain(report["warnings"].as_array().unwrap()) {
        let reason = e["error"].as_str().unwrap();
        assert!(
            reason.len() < 2_100,
            "a reason, not the input: {} bytes",
            reason.len()
        );
        if e["path"] != "tag.docx" {
            assert!(reason.len() < 500, "{reason}");
        }
    }
    let docx = errors.iter().find(|e| e["path"] == "tag.docx").unwrap();
    let reason = docx["error"].as_str().unwrap();
    assert!(reason.starts_with("not a valid docx file"), "{reason}");
    assert!(
        reason.ends_with(" more bytes)"),
        "{}",
        &reason[reason.len() - 80..]
    );
    let toml = errors.iter().find(|e| e["path"] == "flow.toml").unwrap();
    assert!(
        toml["error"].as_str().unwrap().contains("line 1, column"),
        "{toml}"
    );
    // The rest of the folder is indexed, and the next sync says the same in as few words.
    assert!(texts(&index).iter().any(|(p, _)| p == SMALL[0]));
    let (code, stderr) = code_of(&["sync", s(&docs), "--index", s(&index)]);
    assert_eq!(code, 1);
    assert!(stderr.len() < 8_000, "{} bytes of stderr", stderr.len());
}

#[test]
fn what_every_chunk_carries_of_its_file_is_bounded() {
    let work = tempfile::tempdir().unwrap();
    let docs = small_docs(work.path());
    let sections: String = (0..300)
        .map(|i| format!("<h2>Section {i}</h2><p>Paragraph {i} about topic {i}.</p>"))
        .collect();
    let page = format!(
        "<html><head><title>{}</title></head><body>{sections}</body></html>",
        "Title ".repeat(200_000)
    );
    std::fs::write(docs.join("title.html"), page).unwrap();
    let sections: String = (0..300)
        .map(|i| format!("## S{i}\n\nPart {i} of the guide.\n\n"))
        .collect();
    let long = "D ".repeat(30_000);
    let md = format!("---\ntags: [ops]\ndescription: \"{long}\"\n---\n{sections}");
    std::fs::write(docs.join("described.md"), md).unwrap();

    let index = work.path().join("idx");
    let report = sync(&docs, &index, 0);
    assert!(
        report["warnings"]
            .to_string()
            .contains("`description` (60002 bytes)"),
        "{report}"
    );
    for chunk in dump(&index) {
        let carried = chunk["title"].to_string().len()
            + chunk["heading_path"].to_string().len()
            + chunk["metadata"].to_string().len();
        assert!(carried < 1_500, "{} bytes: {}", carried, chunk["path"]);
    }
    // Before the bounds, the 1.2 MB page and the 71 KB guide made a 1.5 GB index.
    let stats = run_expect(&["stats", "--index", s(&index), "--json"], 0);
    let bytes = json_lines(&stats)[0]["total_bytes"].as_u64().unwrap();
    assert!(bytes < 100 << 20, "{bytes} bytes on disk");
}

/// `rag-index args` that must finish within `limit`: killed and failed otherwise, so a hang
/// is a test failure, not a stuck run. Returns the exit code, stdout and stderr.
fn run_within(args: &[&str], limit: Duration) -> (i32, String, String) {
    let mut child = rag_index()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("rag-index {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out.status.code().expect("exited");
    assert_ne!(code, 101, "rag-index {args:?} panicked: {stderr}");
    (
        code,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

#[test]
fn pipes_and_endless_devices_in_the_folder_neither_hang_nor_drop_chunks() {
    let work = tempfile::tempdir().unwrap();
    let docs = small_docs(work.path());
    copy_corpus_files(&docs.join("sub"), &["deprecation/features.md"]);
    let index = work.path().join("idx");
    let sync_args = ["sync", s(&docs), "--index", s(&index), "--json"];
    let limit = Duration::from_secs(300);
    let (code, _, stderr) = run_within(&sync_args, limit);
    assert_eq!(code, 0, "{stderr}");
    let before = texts(&index);
    assert!(before.iter().any(|(p, _)| p.starts_with("sub/")));

    // An ignore file that is a named pipe: the walker would block opening it. Its folder is
    // left unwalked, reported, and its chunks stay.
    let fifo = docs.join("sub/.gitignore");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let (code, stdout, stderr) = run_within(&sync_args, limit);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("{stderr}"));
    assert_eq!(code, 1, "a folder not walked is a failure: {report}");
    assert_eq!(report["files"]["removed"], 0, "{report}");
    assert!(
        report["errors"].to_string().contains("sub/.gitignore"),
        "{report}"
    );
    assert_eq!(texts(&index), before);
    std::fs::remove_file(&fifo).unwrap();

    // Permission rules behind a link to a device that never ends: refused by name before a
    // byte is read, and nothing indexed changes.
    std::os::unix::fs::symlink("/dev/zero", docs.join(".ragaccess")).unwrap();
    let (code, _, stderr) = run_within(&sync_args, limit);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains(".ragaccess"), "{stderr}");
    assert!(stderr.contains("not a regular file"), "{stderr}");
    assert_eq!(texts(&index), before);

    // A link to nothing is not "no rules": rules were meant to be there.
    std::fs::remove_file(docs.join(".ragaccess")).unwrap();
    std::os::unix::fs::symlink("missing-rules", docs.join(".ragaccess")).unwrap();
    let (code, _, stderr) = run_within(&sync_args, limit);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert_eq!(texts(&index), before);
}

/// `WORK/docs` holding one real python-docs page as `index.html` (a chapter of the tutorial: a
/// contents page is navigation, which the reader leaves out); returns the folder and the page's
/// path in the corpus.
fn docs_with_python_page(work: &Path) -> (PathBuf, PathBuf) {
    let docs = work.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let page = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpora/python-docs/docs/tutorial/controlflow.html");
    std::fs::copy(&page, docs.join("index.html")).unwrap();
    (docs, page)
}

#[test]
fn html_nested_without_end_is_refused_by_name_in_bounded_time() {
    let work = tempfile::tempdir().unwrap();
    let (docs, page) = docs_with_python_page(work.path());
    std::fs::copy(&page, docs.join("was-fine.html")).unwrap();
    let index = work.path().join("idx");
    let sync_args = ["sync", s(&docs), "--index", s(&index), "--json"];
    let limit = Duration::from_secs(300);
    let (code, _, stderr) = run_within(&sync_args, limit);
    assert_eq!(code, 0, "{stderr}");
    let count = |path: &str| texts(&index).iter().filter(|(p, _)| p == path).count();
    let before = count("was-fine.html");
    assert!(before > 3, "{before} chunks");

    // Markup that never closes (or misnests) makes html5ever's tree building quadratic: 2 MB
    // of it took tens of minutes. Each file is refused by name; an indexed file that turns
    // into one keeps its chunks; the other pages are indexed.
    let runaway = |unit: &str| {
        let body = unit.repeat((2 << 20) / unit.len());
        format!("<html><head><title>Deep</title></head><body>{body}</body></html>")
    };
    std::fs::write(docs.join("was-fine.html"), runaway("<div>")).unwrap();
    std::fs::write(docs.join("lists.html"), runaway("<ul><li>item ")).unwrap();
    std::fs::write(docs.join("misnested.htm"), runaway("<font><i><b>x</font>")).unwrap();
    std::fs::copy(page.with_file_name("errors.html"), docs.join("errors.html")).unwrap();
    let (code, stdout, stderr) = run_within(&sync_args, limit);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("{stderr}"));
    assert_eq!(code, 1, "refused files are a failure: {report}");
    let errors = report["errors"].to_string();
    for name in ["was-fine.html", "lists.html", "misnested.htm"] {
        assert!(errors.contains(name), "{name}: {report}");
    }
    assert!(errors.contains("nested"), "{report}");
    assert_eq!(count("was-fine.html"), before);
    assert_eq!(count("lists.html") + count("misnested.htm"), 0);
    assert!(count("errors.html") > 3, "{report}");
    assert_eq!(report["files"]["removed"], 0, "{report}");
}

#[test]
fn source_whose_parse_runs_away_with_memory_is_set_aside_and_the_sync_goes_on() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    code_folder_with_valid_ts(&docs);
    let index = work.path().join("idx");
    // Three GiB of address space: a runaway parse without its bound fails to allocate (and
    // tree-sitter aborts) instead of taking the machine; a bounded sync needs under one.
    let sync_in_3_gib =
        || sync_within_address_space(&["sync", s(&docs), "--index", s(&index)], 3 << 20);
    let (code_now, report, stderr) = sync_in_3_gib();
    assert_eq!(code_now, Some(0), "{report} {stderr}");
    let count = |path: &str| texts(&index).iter().filter(|(p, _)| p == path).count();
    assert_eq!(count("was-fine.ts"), 1);

    // The parse cannot be stopped inside the process, so the file is recorded and the sync
    // starts again without it, once.
    let report = sync_after_a_runaway_parse(&docs, sync_in_3_gib);
    assert_eq!(count("was-fine.ts"), 1, "its indexed chunks are kept");
    assert!(
        count("encoder.py") > 3,
        "the rest of the sync went on: {report}"
    );
    assert!(index.join("set-aside.json").exists());

    // Later syncs skip it without parsing it; new bytes are tried again.
    let (code_now, report, stderr) = sync_in_3_gib();
    assert_eq!(code_now, Some(1), "{report}");
    assert!(!stderr.contains("starting again"), "{stderr}");
    assert!(
        report["errors"].to_string().contains("set aside"),
        "{report}"
    );
    std::fs::write(docs.join("was-fine.ts"), VALID_TS.replace("one", "two")).unwrap();
    let (code_now, report, stderr) = sync_in_3_gib();
    assert_eq!(code_now, Some(0), "{report} {stderr}");
    assert!(
        texts(&index)
            .iter()
            .any(|(p, t)| p == "was-fine.ts" && t.contains("Adds two"))
    );
    let listed: Value =
        serde_json::from_slice(&std::fs::read(index.join("set-aside.json")).unwrap()).unwrap();
    assert_eq!(
        listed,
        serde_json::json!([]),
        "changed bytes leave the list"
    );
}

#[test]
fn in_the_library_a_runaway_parse_is_refused_recorded_and_then_skipped() {
    use rag_index_core::{IndexConfig, RagIndex, SyncOptions};
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let code = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora/code/docs");
    std::fs::copy(code.join("python/json/scanner.py"), docs.join("scanner.py")).unwrap();
    // 40 KB of unclosed type arguments: tree-sitter holds ~1.4 GB at the end, past the 260 MiB
    // bound. A library host has no policy set, so the parse runs to its end and is refused.
    std::fs::write(docs.join("runaway.ts"), "f<a, ".repeat(8_000)).unwrap();
    let index_dir = work.path().join("idx");
    let index = RagIndex::open(&index_dir, embedder(), IndexConfig::default()).unwrap();
    let sync = || {
        let cancel = std::sync::atomic::AtomicBool::new(false);
        index
            .sync(&docs, &SyncOptions::default(), &|_| {}, &cancel)
            .unwrap()
    };
    let report = sync();
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    assert_eq!(report.errors[0].path, "runaway.ts");
    assert!(
        report.errors[0].error.contains("memory"),
        "{:?}",
        report.errors
    );
    assert_eq!(report.files.added, 1, "the rest is indexed");
    // Recorded before the parse went on, so a host killed by it skips the file next time.
    let listed = std::fs::read_to_string(index_dir.join("set-aside.json")).unwrap();
    assert!(listed.contains("runaway.ts"), "{listed}");
    let report = sync();
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    assert!(
        report.errors[0].error.starts_with("set aside"),
        "{:?}",
        report.errors
    );
}

/// A one-page PDF whose page lists one compressed content stream `refs` times: 64 MiB of
/// text operators and spaces behind ~66 KB, so the file inflates to `refs` × 64 MiB.
fn inflating_pdf(refs: usize) -> Vec<u8> {
    use std::io::Write;
    let mut content =
        b"BT /F1 12 Tf 72 720 Td (Text that inflates far past its file) Tj ET\n".to_vec();
    content.resize(content.len() + (64 << 20), b' ');
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(&content).unwrap();
    let stream = encoder.finish().unwrap();
    let contents = vec!["4 0 R"; refs].join(" ");
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents [{contents}] \
             /Resources << /Font << /F1 5 0 R >> >> >>"
        )
        .into_bytes(),
        format!(
            "<< /Length {} /Filter /FlateDecode >>\nstream\n",
            stream.len()
        )
        .into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ];
    objects[3].extend_from_slice(&stream);
    objects[3].extend_from_slice(b"\nendstream");
    let mut pdf = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        pdf.extend_from_slice(object);
        pdf.extend_from_slice(b"\nendobj\n");
    }
    let xref = pdf.len();
    pdf.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        pdf.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    pdf.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    pdf
}

#[test]
fn a_pdf_that_inflates_past_its_memory_bound_is_set_aside_and_the_sync_goes_on() {
    let work = tempfile::tempdir().unwrap();
    let (docs, _) = docs_with_python_page(work.path());
    // ~66 KB that inflates to 6.4 GB in the PDF parser (lopdf holds every content stream).
    let bomb = inflating_pdf(100);
    assert!(bomb.len() < 100_000, "{} bytes", bomb.len());
    std::fs::write(docs.join("inflates.pdf"), &bomb).unwrap();
    // A small copy of the same shape stays far inside the bound and is indexed.
    std::fs::write(docs.join("small.pdf"), inflating_pdf(1)).unwrap();
    let index = work.path().join("idx");
    // Four GiB of address space: without a bound the parser fails to allocate and the
    // process aborts, instead of taking the machine.
    let sync_in_4_gib =
        || sync_within_address_space(&["sync", s(&docs), "--index", s(&index)], 4 << 20);
    let (code_now, report, stderr) = sync_in_4_gib();
    assert_eq!(code_now, Some(1), "{report} {stderr}");
    assert_set_aside_after_one_restart(&report, &stderr, "inflates.pdf");
    let chunks = texts(&index);
    assert!(chunks.iter().filter(|(p, _)| p == "index.html").count() > 3);
    assert!(
        chunks
            .iter()
            .any(|(p, t)| p == "small.pdf" && t.contains("inflates far past"))
    );
    assert!(!chunks.iter().any(|(p, _)| p == "inflates.pdf"));

    let (code_now, report, stderr) = sync_in_4_gib();
    assert_eq!(code_now, Some(1), "{report}");
    assert!(!stderr.contains("starting again"), "{stderr}");
    assert!(
        report["errors"].to_string().contains("set aside"),
        "{report}"
    );
}

/// Whether a terminal would obey `c` instead of showing it (controls other than newline and
/// tab, and the bidirectional overrides and isolates).
fn steers_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

#[test]
fn control_characters_in_names_and_text_are_shown_not_obeyed() {
    let work = tempfile::tempdir().unwrap();
    let docs = small_docs(work.path());
    // A real page with escape sequences in it, under a name that holds one and a newline, as
    // a downloaded or generated folder may: colour, screen clear, window title, clipboard
    // (OSC 52), an 8-bit CSI, a carriage return that overwrites, a right-to-left override.
    let page = std::fs::read_to_string(docs.join(SMALL[0])).unwrap();
    let planted = "The probe answers \u{1b}[31mred\u{1b}[0m\u{1b}[2J\u{1b}]0;title\u{7}\
        \u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{9b}1A overwritten\rfake evil\u{202E}txt.exe";
    let page = page.replacen("\n\n", &format!("\n\n{planted}\n\n"), 1);
    let name = "probe\u{1b}[2J\n 2. 0.999 trusted.md";
    std::fs::write(docs.join(name), &page).unwrap();
    // A warning names its file on stderr: a run of text too long to embed.
    let long_run = format!("# Blob\n\nKept words.\n\n{}\n", "x".repeat(4_000));
    std::fs::write(docs.join("warn\u{1b}]0;pwned\u{7}.md"), long_run).unwrap();

    let index = work.path().join("idx");
    let out = run(&["sync", s(&docs), "--index", s(&index), "-v"]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.chars().any(steers_terminal), "{stderr:?}");
    assert!(
        stderr.contains("warn\\u{1b}]0;pwned\\u{7}.md"),
        "the warning names the file, escaped: {stderr}"
    );

    let query = [
        "query",
        "probe answers red overwritten",
        "--index",
        s(&index),
    ];
    let shown = run_expect(&query, 0);
    assert!(!shown.chars().any(steers_terminal), "{shown:?}");
    let first = shown.lines().nth(1).unwrap();
    assert!(
        first.contains("probe\\u{1b}[2J\\n 2. 0.999 trusted.md"),
        "the file name stays on its result's line: {shown}"
    );
    assert!(
        shown.contains("\\u{1b}[31mred\\u{1b}[0m") && shown.contains("overwritten\\rfake"),
        "{shown}"
    );
    assert!(shown.contains("evil\\u{202e}txt.exe"), "{shown}");
    let explained = run_expect(&[&query[..], &["--explain"]].concat(), 0);
    assert!(!explained.chars().any(steers_terminal), "{explained:?}");

    // JSON escapes them too, and a parser reads back exactly the indexed name and text.
    let json = run_expect(&[&query[..], &["--json"]].concat(), 0);
    assert!(!json.chars().any(steers_terminal), "{json:?}");
    let hit = &json_lines(&json)[0]["hits"][0];
    assert_eq!(hit["path"], name);
    assert!(hit["text"].as_str().unwrap().contains(planted), "{hit}");

    let chunks = run_expect(&["chunks", s(&docs.join(name))], 0);
    assert!(!chunks.chars().any(steers_terminal), "{chunks:?}");
    assert!(chunks.contains("\\u{9b}1A"), "{chunks}");
}
