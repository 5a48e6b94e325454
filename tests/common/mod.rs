//! Helpers shared by the integration tests: run the real binary, copy real corpus files.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The Traefik docs folder in ../shared, used in place (read-only).
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora/traefik/docs")
}

/// The Traefik question set.
pub fn questions_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora/traefik/questions.jsonl")
}

/// Every question of the set, parsed.
pub fn questions() -> Vec<Value> {
    std::fs::read_to_string(questions_file())
        .expect("questions.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("question line"))
        .collect()
}

/// Copies corpus files (paths relative to the docs folder) into `dest`, keeping their layout.
pub fn copy_corpus_files(dest: &Path, rel_paths: &[&str]) {
    for rel in rel_paths {
        let target = dest.join(rel);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(corpus_dir().join(rel), &target)
            .unwrap_or_else(|e| panic!("copy {rel}: {e}"));
    }
}

/// A number from the environment (test sizes and seeds), or `default`.
pub fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Waits until `child` exits or `at` has passed since `started`. True when it is still
/// running then, so a signal sent now lands inside its work.
pub fn still_running_at(
    child: &mut std::process::Child,
    started: std::time::Instant,
    at: std::time::Duration,
) -> bool {
    while started.elapsed() < at {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.try_wait().unwrap().is_none()
}

/// The binary under test.
pub fn rag_index() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rag-index"));
    cmd.env_remove("RAG_INDEX_PATH");
    cmd.env_remove("RAG_INDEX_PRECISION");
    cmd.env("RUST_LOG", "error");
    // With RUST_BACKTRACE set the binary prints caught panics too; users see the quiet default.
    cmd.env_remove("RUST_BACKTRACE");
    cmd
}

/// The binary under test run by `wrapper` (`sh -c SCRIPT`, `setpriv ...`), which gets
/// `wrapper_args`, then the binary's path; the environment is the one [`rag_index`] sets.
pub fn rag_index_through(wrapper: &str, wrapper_args: &[&str]) -> Command {
    let direct = rag_index();
    let mut command = Command::new(wrapper);
    command.args(wrapper_args).arg(direct.get_program());
    for (key, value) in direct.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    command
}

/// Runs the binary with `args` and returns its output.
pub fn run(args: &[&str]) -> Output {
    rag_index().args(args).output().expect("run rag-index")
}

/// Runs the binary, asserting exit code `code`, and returns stdout.
pub fn run_expect(args: &[&str], code: i32) -> String {
    let out = run(args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "rag-index {args:?}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("stdout is UTF-8")
}

/// Parses one JSON value per non-empty line.
pub fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

/// Syncs `docs` into an open index in this process, asserting that no file failed.
pub fn sync_in_process(
    index: &rag_index_core::RagIndex,
    docs: &Path,
) -> rag_index_core::SyncReport {
    let report = index
        .sync(
            docs,
            &rag_index_core::SyncOptions::default(),
            &|_| {},
            &std::sync::atomic::AtomicBool::new(false),
        )
        .unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    report
}

/// Runs `sync DIR --index INDEX --json` and returns the report.
pub fn sync(dir: &Path, index: &Path, code: i32) -> Value {
    let out = run_expect(
        &[
            "sync",
            dir.to_str().unwrap(),
            "--index",
            index.to_str().unwrap(),
            "--json",
        ],
        code,
    );
    let lines = json_lines(&out);
    assert_eq!(
        lines.len(),
        1,
        "sync --json prints exactly one object: {out}"
    );
    lines.into_iter().next().unwrap()
}

/// Runs `dump --index INDEX`.
pub fn dump(index: &Path) -> Vec<Value> {
    json_lines(&run_expect(
        &["dump", "--index", index.to_str().unwrap()],
        0,
    ))
}

/// Collapses whitespace runs, as evidence matching does.
pub fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The real model, loaded once per test binary.
pub fn embedder() -> std::sync::Arc<rag_index_core::Embedder> {
    static EMBEDDER: std::sync::OnceLock<std::sync::Arc<rag_index_core::Embedder>> =
        std::sync::OnceLock::new();
    EMBEDDER
        .get_or_init(|| {
            let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
            let dir = rag_index_core::resolve_model_dir(None, &[models]).expect("model fetched");
            std::sync::Arc::new(
                rag_index_core::Embedder::load(&dir, rag_index_core::EmbedderConfig::default())
                    .expect("model loads"),
            )
        })
        .clone()
}

/// (chunk ID, path, text) of every chunk a fresh index of `docs` would hold, computed with the
/// chunker alone (no embedding). Files that cannot be chunked are skipped, as sync does.
pub fn expected_chunks(
    docs: &Path,
    exclude: Option<&Path>,
) -> std::collections::BTreeSet<(String, String, String)> {
    let chunker =
        rag_index_core::chunker_for(&embedder(), rag_index_core::ChunkerConfig::default())
            .expect("chunker");
    let (files, _) = rag_index_core::walk::walk(docs, exclude);
    let mut out = std::collections::BTreeSet::new();
    for file in files {
        let Ok(bytes) = std::fs::read(&file.abs) else {
            continue;
        };
        let Ok(doc) = rag_index_core::chunk_file(&chunker, &file.rel, &bytes) else {
            continue;
        };
        for chunk in doc.chunks {
            out.insert((chunk.id, chunk.path, chunk.text));
        }
    }
    out
}

/// Cosine similarity of two JSON vectors.
pub fn cosine(a: &Value, b: &Value) -> f64 {
    let a: Vec<f64> = a
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let b: Vec<f64> = b
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let dot: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    let na: f64 = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (na * nb)
}

/// Rank of the first query hit whose text holds every evidence string of `question` (whitespace
/// runs collapsed on both sides), as `eval` counts it.
pub fn evidence_rank(question: &Value, hits: &[Value]) -> Option<Value> {
    let evidence: Vec<String> = question["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| collapse(e.as_str().unwrap()))
        .collect();
    hits.iter().find_map(|hit| {
        let text = collapse(hit["text"].as_str().unwrap());
        evidence
            .iter()
            .all(|e| text.contains(e.as_str()))
            .then(|| hit["rank"].clone())
    })
}

/// Where real documents fetched from package registries (a PyPI sdist, Debian packages) are
/// kept between test runs: `$RAG_INDEX_SDIST_CACHE`, by default `/var/tmp/rag-index-sdist`.
pub fn download_cache() -> PathBuf {
    std::env::var_os("RAG_INDEX_SDIST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/rag-index-sdist"))
}

/// The unpacked PyPI source distribution of `name==version` (`DIR/name-version/`), fetched
/// once from PyPI's JSON API into [`download_cache`] (not with `pip download`, which builds a
/// package's metadata first and fails where its build needs more than pip has).
pub fn pypi_sdist(name: &str, version: &str) -> PathBuf {
    let cache = download_cache();
    let unpacked = cache.join(format!("{name}-{version}"));
    if unpacked.is_dir() {
        return unpacked;
    }
    std::fs::create_dir_all(&cache).unwrap();
    let fetch = tempfile::tempdir_in(&cache).unwrap();
    // A mirror may give file URLs relative to the JSON's.
    let script = "import json, sys, urllib.parse, urllib.request\n\
        name, version, into = sys.argv[1:]\n\
        index = f'https://pypi.org/pypi/{name}/json'\n\
        meta = json.load(urllib.request.urlopen(index))\n\
        url = next(u['url'] for u in meta['releases'][version] if u['packagetype'] == 'sdist')\n\
        urllib.request.urlretrieve(urllib.parse.urljoin(index, url), into + '/sdist.tar.gz')\n";
    let status = Command::new("python3")
        .args(["-c", script, name, version])
        .arg(fetch.path())
        .status()
        .expect("python3 runs");
    assert!(
        status.success(),
        "could not fetch the {name} {version} sdist from PyPI"
    );
    let out = fetch.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(fetch.path().join("sdist.tar.gz"))
        .arg("-C")
        .arg(&out)
        .status()
        .expect("tar runs");
    assert!(status.success());
    // One top-level folder, however the sdist names it (`jpype1-1.7.1`, `Flask-…`).
    let top = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("the sdist holds a folder");
    // Another test run may have unpacked it meanwhile: either copy is the same.
    let _ = std::fs::rename(top, &unpacked);
    unpacked
}

/// A Debian package's files, unpacked once under `$RAG_INDEX_SDIST_CACHE` (default
/// `/var/tmp/rag-index-sdist`) with `apt-get download` and `dpkg -x`.
pub fn debian_package(name: &str) -> PathBuf {
    let cache = download_cache();
    let root = cache.join("debian").join(name);
    if root.is_dir() {
        return root;
    }
    std::fs::create_dir_all(cache.join("debian")).unwrap();
    let fetch = tempfile::tempdir_in(cache.join("debian")).unwrap();
    let status = Command::new("apt-get")
        .args(["download", "-q", name])
        .current_dir(fetch.path())
        .status()
        .expect("apt-get runs");
    assert!(status.success(), "apt-get could not fetch {name}");
    let deb = std::fs::read_dir(fetch.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .unwrap();
    let unpacked = fetch.path().join("root");
    let status = Command::new("dpkg")
        .arg("-x")
        .arg(&deb)
        .arg(&unpacked)
        .status()
        .expect("dpkg runs");
    assert!(status.success());
    // Another test run may have unpacked it meanwhile: either copy is the same.
    let _ = std::fs::rename(&unpacked, &root);
    root
}

/// The files under `dir` (recursively) with the extension `ext`, sorted.
pub fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|x| x == ext) {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// How many files under `dir` (recursively) have the extension `ext`.
pub fn count_files(dir: &Path, ext: &str) -> usize {
    files_with_extension(dir, ext).len()
}

/// The best hit of `rag-index query QUESTION --index INDEX --json -k 3`.
pub fn top_hit(index: &Path, question: &str) -> Value {
    let out = run_expect(
        &[
            "query",
            question,
            "--index",
            index.to_str().unwrap(),
            "--json",
            "-k",
            "3",
        ],
        0,
    );
    json_lines(&out)[0]["hits"][0].clone()
}

/// Syncs `docs` into `index` with no file failing, checks that `pages` distinct files were
/// indexed as `format` (the converters' `metadata.format`), and returns every chunk.
pub fn sync_every_page(docs: &Path, index: &Path, format: &str, pages: usize) -> Vec<Value> {
    let report = sync(docs, index, 0);
    assert_eq!(
        report["errors"].as_array().map_or(0, Vec::len),
        0,
        "{report}"
    );
    let chunks = dump(index);
    let indexed: std::collections::BTreeSet<&str> = chunks
        .iter()
        .filter(|c| c["metadata"]["format"] == format)
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(indexed.len(), pages, "pages indexed as {format}");
    chunks
}

/// Asserts that every question of the question set at `questions` (a path under the
/// workspace) is answered whole by one chunk of its `source` page: its evidence strings all in
/// that chunk's text, whitespace runs collapsed, as `eval` counts it.
pub fn assert_every_answer_whole_in_one_chunk(chunks: &[Value], questions: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(questions);
    for line in std::fs::read_to_string(&path).unwrap().lines() {
        let question: Value = serde_json::from_str(line).unwrap();
        let of_page: Vec<Value> = chunks
            .iter()
            .filter(|c| c["path"] == question["source"])
            .cloned()
            .collect();
        assert!(
            evidence_rank(&question, &of_page).is_some(),
            "{}: no chunk of {} holds {}",
            question["id"],
            question["source"],
            question["evidence"]
        );
    }
}

/// `rag-index ARGS --json` (a sync) with its address space limited to `kib` (`ulimit -v`), so a
/// runaway allocation fails (and the process aborts) instead of taking the machine. Returns the
/// exit code (none when a signal ended it), the report and stderr.
pub fn sync_within_address_space(args: &[&str], kib: u64) -> (Option<i32>, Value, String) {
    let script = format!("ulimit -v {kib} && exec \"$0\" \"$@\"");
    let out = rag_index_through("sh", &["-c", &script])
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{:?}: {stderr}", out.status));
    (out.status.code(), report, stderr)
}

/// The sync that met a runaway file: it started again once, and `path` is its one error, for
/// passing a memory bound.
pub fn assert_set_aside_after_one_restart(report: &Value, stderr: &str, path: &str) {
    assert_eq!(stderr.matches("starting again").count(), 1, "{stderr}");
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{report}");
    assert_eq!(errors[0]["path"], path);
    let reason = errors[0]["error"].as_str().unwrap();
    assert!(reason.contains("memory bound"), "{report}");
}

/// A valid TypeScript file, `was-fine.ts` in the runaway-parse tests.
pub const VALID_TS: &str = "/** Adds one. */\nexport function next(count: number): number {\n  \
                            return count + 1;\n}\n";

/// Fills `docs` (created) with a real Python file and `was-fine.ts`, for the runaway-parse tests.
pub fn code_folder_with_valid_ts(docs: &Path) {
    std::fs::create_dir_all(docs).unwrap();
    std::fs::copy(
        code_corpus().join("python/json/decoder.py"),
        docs.join("decoder.py"),
    )
    .unwrap();
    std::fs::write(docs.join("was-fine.ts"), VALID_TS).unwrap();
}

/// Turns `was-fine.ts` of `docs` into a parse that runs away with memory (unclosed type
/// arguments: tree-sitter's last step holds memory quadratic in their count; 40 KB took 1.4 GB),
/// adds `encoder.py`, and runs `sync`, which must set the file aside with one restart and fail
/// (exit 1). Returns its report.
pub fn sync_after_a_runaway_parse(
    docs: &Path,
    sync: impl Fn() -> (Option<i32>, Value, String),
) -> Value {
    std::fs::write(docs.join("was-fine.ts"), "f<a, ".repeat(40_000)).unwrap();
    std::fs::copy(
        code_corpus().join("python/json/encoder.py"),
        docs.join("encoder.py"),
    )
    .unwrap();
    let (code_now, report, stderr) = sync();
    assert_eq!(
        code_now,
        Some(1),
        "a refused file is a failure: {report} {stderr}"
    );
    assert_set_aside_after_one_restart(&report, &stderr, "was-fine.ts");
    report
}

fn code_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora/code/docs")
}
