//! `rag-index serve` end to end, with the real binary, the real model and real Traefik docs:
//! the HTTP API through a real client (ureq), the MCP server through the official Python SDK,
//! labels enforced by the server, and answers that keep coming through a sync, a `kill -9` of
//! a concurrent writer, and `serve --watch`.

mod common;
#[path = "common/serve.rs"]
mod serve_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use serve_support::*;

const FILES: &[&str] = &[
    "security/http2-header-memory.md",
    "getting-started/faq.md",
    "security/request-path.md",
    "reference/routing-configuration/http/middlewares/circuitbreaker.md",
];
const BREAKER: &str = "reference/routing-configuration/http/middlewares/circuitbreaker.md";
const BREAKER_QUESTION: &str = "How does the circuit breaker decide a service is unhealthy?";
/// Long enough for the server's minimum.
const FINANCE_TOKEN: &str = "fin-0123456789abcdef";
const PUBLIC_TOKEN: &str = "pub-0123456789abcdef";

/// A folder of Traefik files plus the finance-only document, synced.
fn indexed_folder(tmp: &Path) -> (PathBuf, PathBuf) {
    let docs = tmp.join("docs");
    copy_corpus_files(&docs, FILES);
    write_secret(&docs);
    let index = tmp.join("index");
    sync(&docs, &index, 0);
    (docs, index)
}

fn secret_chunk_id(index: &Path) -> String {
    dump(index)
        .into_iter()
        .find(|c| c["path"] == SECRET_PATH)
        .expect("the finance document is indexed")["chunk_id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn http_api_answers_checks_hosts_and_rejects_bad_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, index) = indexed_folder(tmp.path());
    let server = serve_http(&["--index", index.to_str().unwrap()]);
    let base = &server.base;

    let (code, answer) = post(
        base,
        "/search",
        &[],
        &json!({"query": BREAKER_QUESTION, "k": 3}).to_string(),
    );
    assert_eq!(code, 200, "{answer}");
    let hits = answer["hits"].as_array().unwrap();
    assert_eq!(hits[0]["path"], BREAKER, "{answer}");
    // The shape `query --json` prints for a hit.
    let cli = run_expect(
        &[
            "query",
            BREAKER_QUESTION,
            "-k",
            "3",
            "--json",
            "--index",
            index.to_str().unwrap(),
        ],
        0,
    );
    let cli: Value = serde_json::from_str(cli.trim()).unwrap();
    assert_eq!(
        cli["hits"], answer["hits"],
        "HTTP hits differ from query --json"
    );

    let id = hits[0]["chunk_id"].as_str().unwrap();
    let (code, chunk) = get(base, &format!("/chunks/{id}"), &[]);
    assert_eq!((code, &chunk["text"]), (200, &hits[0]["text"]));
    let (code, missing) = get(base, "/chunks/00000000000000000000000000000000", &[]);
    assert_eq!(code, 404);
    assert!(missing["error"].is_string());

    let (code, status) = get(base, "/status", &[]);
    assert_eq!(code, 200);
    assert!(status["generation"].as_u64().unwrap() >= 1, "{status}");
    assert!(
        status["committed_at"].as_u64().unwrap() > 1_700_000_000_000,
        "{status}"
    );
    assert_eq!(get(base, "/health", &[]).0, 200);

    // Malformed and invalid bodies: 4xx with a JSON error, and the server carries on.
    for body in [
        "{not json",
        "[]",
        r#"{"k": 3}"#,
        r#"{"query":"x","k":0}"#,
        r#"{"query":"x","mode":"both"}"#,
        r#"{"query":"x","labels":["finance"]}"#,
        r#"{"query":"  "}"#,
    ] {
        let (code, answer) = post(base, "/search", &[], body);
        assert_eq!(code, 400, "{body}: {answer}");
        assert!(answer["error"].is_string(), "{body}: {answer}");
    }
    let huge = json!({"query": "x".repeat(100_000)}).to_string();
    assert_eq!(post(base, "/search", &[], &huge).0, 413);
    // An error quotes a caller's input cut to a line, not echoed whole.
    let long = "k".repeat(30_000);
    for body in [
        json!({"query": "x", "filters": [format!("{long}=v")]}),
        json!({"query": "x", "filters": [long.clone()]}),
        json!({"query": "x", "paths": [format!("[{long}")]}),
        json!({"query": "x", "mode": long.clone()}),
    ] {
        let (code, answer) = post(base, "/search", &[], &body.to_string());
        assert_eq!(code, 400, "{answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(
            error.len() < 500 && error.contains("more bytes"),
            "{} bytes: {}",
            error.len(),
            &error[..error.len().min(300)]
        );
    }

    // DNS rebinding: a foreign name in Host or Origin is refused.
    for headers in [
        [("Host", "evil.example:80")],
        [("Origin", "http://evil.example")],
    ] {
        let (code, answer) = get(base, "/status", &headers);
        assert_eq!(code, 403, "{headers:?}: {answer}");
        let (code, _) = post(
            base,
            "/search",
            &headers,
            &json!({"query": "x"}).to_string(),
        );
        assert_eq!(code, 403);
    }
    assert_eq!(get(base, "/status", &[("Host", "localhost:1")]).0, 200);

    // Without a tokens file callers are public: the finance document never comes back.
    let paths = search_paths(
        base,
        &[],
        &json!({"query": SECRET_QUERY, "k": 10, "mode": "lexical"}),
    );
    assert!(!paths.iter().any(|p| p == SECRET_PATH), "{paths:?}");
    let secret = secret_chunk_id(&index);
    assert_eq!(get(base, &format!("/chunks/{secret}"), &[]).0, 404);
}

/// `serve --http` of the test folder's index with a tokens file: the finance token sees the
/// finance document, the public one only public documents.
fn serve_with_tokens(tmp: &Path) -> (PathBuf, Running) {
    let (_, index) = indexed_folder(tmp);
    let tokens = tmp.join("tokens");
    std::fs::write(
        &tokens,
        format!("# who sees what\n{FINANCE_TOKEN} finance\n{PUBLIC_TOKEN}\n"),
    )
    .unwrap();
    let server = serve_http(&[
        "--index",
        index.to_str().unwrap(),
        "--tokens",
        tokens.to_str().unwrap(),
    ]);
    (index, server)
}

#[test]
fn tokens_decide_what_a_caller_sees() {
    let tmp = tempfile::tempdir().unwrap();
    let (index, server) = serve_with_tokens(tmp.path());
    let base = &server.base;
    let body = json!({"query": SECRET_QUERY, "k": 10, "mode": "lexical"});

    for headers in [
        vec![],
        vec![("Authorization", "Bearer pub-0123456789abcdeX")],
        vec![("Authorization", PUBLIC_TOKEN)],
    ] {
        let (code, answer) = post(base, "/search", &headers, &body.to_string());
        assert_eq!(code, 401, "{headers:?}: {answer}");
        assert_eq!(get(base, "/status", &headers).0, 401);
    }
    // Health reveals nothing and stays open for probes.
    assert_eq!(get(base, "/health", &[]).0, 200);

    let public = format!("Bearer {PUBLIC_TOKEN}");
    let finance = format!("Bearer {FINANCE_TOKEN}");
    let secret = secret_chunk_id(&index);
    let paths = search_paths(base, &[("Authorization", &public)], &body);
    assert!(!paths.iter().any(|p| p == SECRET_PATH), "{paths:?}");
    for mode in ["dense", "hybrid"] {
        let body = json!({"query": "How large is the Quetzal reserve budget?", "k": 20, "mode": mode, "expand": "section"});
        let paths = search_paths(base, &[("Authorization", &public)], &body);
        assert!(!paths.iter().any(|p| p == SECRET_PATH), "{mode}: {paths:?}");
    }
    assert_eq!(
        get(
            base,
            &format!("/chunks/{secret}"),
            &[("Authorization", &public)]
        )
        .0,
        404
    );

    let paths = search_paths(base, &[("Authorization", &finance)], &body);
    assert_eq!(
        paths.first().map(String::as_str),
        Some(SECRET_PATH),
        "{paths:?}"
    );
    let (code, chunk) = get(
        base,
        &format!("/chunks/{secret}"),
        &[("Authorization", &finance)],
    );
    assert_eq!(code, 200);
    assert!(chunk["text"].as_str().unwrap().contains("zorblax"));
    let (_, status) = get(base, "/status", &[("Authorization", &finance)]);
    assert_eq!(status["labels"], json!(["finance"]));
}

/// The Python MCP SDK, in a venv under the target directory (made once). The tests of this
/// file run in parallel: on a fresh target directory each found no venv and made it at once,
/// so one's `venv` and `pip` rewrote the interpreter another's client was running (a client
/// died with no output in CI). Made once per process now, the others waiting.
fn mcp_python() -> PathBuf {
    static PYTHON: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PYTHON.get_or_init(make_mcp_venv).clone()
}

fn make_mcp_venv() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_rag-index"));
    let target = bin.parent().and_then(Path::parent).unwrap();
    let venv = target.join("mcp-venv");
    let python = venv.join("bin/python");
    let has_sdk = |p: &Path| {
        Command::new(p)
            .args(["-c", "import mcp.client.stdio"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if python.exists() && has_sdk(&python) {
        return python;
    }
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status();
    assert!(made.is_ok_and(|s| s.success()), "python3 -m venv failed");
    let pip = venv.join("bin/pip");
    let installed = Command::new(&pip)
        .args(["install", "-q", "mcp==2.3.0"])
        .status()
        .is_ok_and(|s| s.success())
        || Command::new(&pip)
            .args(["install", "-q", "mcp"])
            .status()
            .is_ok_and(|s| s.success());
    assert!(
        installed && has_sdk(&python),
        "cannot install the Python MCP SDK (PyPI `mcp`)"
    );
    python
}

/// The MCP client's view hides the finance document: not searchable, not fetchable.
fn assert_hidden(out: &Value) {
    let paths = out["secret_paths"].as_array().unwrap();
    assert!(!paths.iter().any(|p| p == SECRET_PATH), "{out}");
    assert!(out["hidden_chunk"]["error"].is_string(), "{out}");
}

/// The MCP client searched and fetched as a holder of the finance label.
fn assert_visible_to_finance(out: &Value) {
    assert_eq!(out["secret_paths"][0], SECRET_PATH, "{out}");
    assert_eq!(out["hidden_chunk"]["path"], SECRET_PATH, "{out}");
    assert_eq!(out["labels"], json!(["finance"]));
}

fn run_mcp_client(index: &Path, hidden: &str, extra: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let out = Command::new(mcp_python())
        .arg(script)
        .args([
            env!("CARGO_BIN_EXE_rag-index"),
            index.to_str().unwrap(),
            BREAKER_QUESTION,
            SECRET_QUERY,
            hidden,
        ])
        .args(extra)
        .output()
        .expect("run the MCP client");
    assert!(
        out.status.success(),
        "MCP client failed\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("client prints JSON")
}

#[test]
fn the_python_mcp_sdk_lists_and_calls_the_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, index) = indexed_folder(tmp.path());
    let secret = secret_chunk_id(&index);

    let out = run_mcp_client(&index, &secret, &[]);
    assert_eq!(out["server_name"], "rag-index");
    assert_eq!(
        out["tools"],
        json!(["get_chunk", "get_section", "search", "status"])
    );
    assert!(
        out["descriptions"]["search"]
            .as_str()
            .unwrap()
            .contains("chunk_id")
    );
    assert_eq!(out["search_paths"][0], BREAKER, "{out}");
    assert_eq!(out["chunk_matches"], true);
    let section: Vec<&Value> = out["section_ids"].as_array().unwrap().iter().collect();
    assert!(section.contains(&&out["first_id"]), "{out}");
    // Public by default: the labelled document is neither searchable nor fetchable.
    assert_hidden(&out);
    assert!(
        out["bad_request"]["error"].as_str().unwrap().contains('k'),
        "{out}"
    );
    assert!(out["generation"].as_u64().unwrap() >= 1);

    // Labels are the operator's choice at start (`--as`), never the client's.
    let out = run_mcp_client(&index, &secret, &["--as", "finance"]);
    assert_visible_to_finance(&out);
}

#[test]
fn mcp_over_streamable_http_searches_with_the_bearer_tokens_labels() {
    let tmp = tempfile::tempdir().unwrap();
    let (index, server) = serve_with_tokens(tmp.path());
    let url = format!("{}/mcp", server.base);
    let secret = secret_chunk_id(&index);

    let out = run_mcp_client(&index, &secret, &["--http", &url, PUBLIC_TOKEN]);
    assert_eq!(out["server_name"], "rag-index");
    assert_eq!(
        out["tools"],
        json!(["get_chunk", "get_section", "search", "status"])
    );
    assert_eq!(out["search_paths"][0], BREAKER, "{out}");
    assert_hidden(&out);
    assert_eq!(out["labels"], json!([]));

    let out = run_mcp_client(&index, &secret, &["--http", &url, FINANCE_TOKEN]);
    assert_visible_to_finance(&out);

    // No token, or a wrong one: the endpoint answers 401 before any MCP message is read.
    for headers in [vec![], vec![("Authorization", "Bearer not-a-token-at-all")]] {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}});
        let mut all = headers.clone();
        all.push(("Accept", "application/json, text/event-stream"));
        let (code, _) = post(&server.base, "/mcp", &all, &initialize.to_string());
        assert_eq!(code, 401, "{headers:?}");
    }
}

#[test]
fn searches_keep_answering_through_a_sync_and_a_killed_writer() {
    let tmp = tempfile::tempdir().unwrap();
    let (docs, index) = indexed_folder(tmp.path());
    let server = serve_http(&["--index", index.to_str().unwrap()]);
    let base = server.base.clone();
    let (_, before) = get(&base, "/status", &[]);

    let stop = Arc::new(AtomicBool::new(false));
    let load = {
        let (stop, base) = (stop.clone(), base.clone());
        std::thread::spawn(move || {
            let mut answered = 0;
            while !stop.load(Ordering::SeqCst) {
                let body = json!({"query": BREAKER_QUESTION, "k": 3}).to_string();
                let (code, answer) = post(&base, "/search", &[], &body);
                assert_eq!(code, 200, "a search failed during a sync: {answer}");
                assert_eq!(answer["hits"][0]["path"], BREAKER, "{answer}");
                answered += 1;
            }
            answered
        })
    };

    copy_corpus_files(
        &docs,
        &[
            "getting-started/docker.md",
            "getting-started/kubernetes.md",
            "getting-started/configuration-overview.md",
        ],
    );
    // A writer killed mid-sync: the reader must not notice.
    let mut writer = rag_index()
        .args([
            "sync",
            docs.to_str().unwrap(),
            "--index",
            index.to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    writer.kill().unwrap();
    writer.wait().unwrap();
    sync(&docs, &index, 0);
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::SeqCst);
    let answered = load.join().expect("every search answered");
    assert!(answered >= 3, "only {answered} searches ran");

    let (_, after) = get(&base, "/status", &[]);
    assert!(
        after["generation"].as_u64() > before["generation"].as_u64(),
        "{before} {after}"
    );
    let paths = search_paths(
        &base,
        &[],
        &json!({"query": "Getting started with Docker and Traefik quick start", "k": 3}),
    );
    assert!(
        paths.iter().any(|p| p == "getting-started/docker.md"),
        "the new commit is not served: {paths:?}"
    );
}

#[test]
fn serve_watch_makes_a_saved_file_searchable() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    copy_corpus_files(&docs, &FILES[..2]);
    let index = tmp.path().join("index");
    let server = serve_http(&[
        "--watch",
        docs.to_str().unwrap(),
        "--index",
        index.to_str().unwrap(),
    ]);
    let base = &server.base;
    let synced = wait_for(Duration::from_secs(60), || {
        let (_, status) = get(base, "/status", &[]);
        (status["watch"]["syncs"].as_u64() >= Some(1)).then_some(status)
    })
    .expect("the first sync finishes");
    assert!(synced["generation"].as_u64().unwrap() >= 1, "{synced}");

    let body = json!({"query": "quibbleflax", "mode": "lexical"});
    assert!(search_paths(base, &[], &body).is_empty());
    std::fs::write(
        docs.join("notes.md"),
        "# Notes\n\nThe quibbleflax setting tunes the retry budget.\n",
    )
    .unwrap();
    let found = wait_for(Duration::from_secs(30), || {
        let paths = search_paths(base, &[], &body);
        (!paths.is_empty()).then_some(paths)
    });
    assert_eq!(found, Some(vec!["notes.md".to_string()]));
    // Readers see a commit the moment it lands; the watcher records its finished sync just
    // after, so its status settles within moments rather than at the same instant.
    let settled = wait_for(Duration::from_secs(10), || {
        let (_, status) = get(base, "/status", &[]);
        (status["watch"]["pending_changes"] == 0 && status["watch"]["syncing"] == false)
            .then_some(status)
    });
    let Some(status) = settled else {
        let (_, status) = get(base, "/status", &[]);
        panic!("the watcher never settled: {status}");
    };
    assert!(
        status["generation"].as_u64() > synced["generation"].as_u64(),
        "{status}"
    );
    // `stats --json` in another process sees the same watcher (its status file follows the
    // in-memory status within a fraction of a second).
    let stats = wait_for(Duration::from_secs(5), || {
        let out = run_expect(&["stats", "--index", index.to_str().unwrap(), "--json"], 0);
        let stats: Value = serde_json::from_str(&out).unwrap();
        (stats["watch"] == status["watch"]).then_some(stats)
    });
    assert!(
        stats.is_some(),
        "stats --json shows the watcher's status: {status}"
    );
}
