//! `rag-index watch` end to end (real binary, real model, real Traefik docs): after bursts of
//! random edits, renames, deletes and editor-style saves it converges to exactly what a fresh
//! `sync` of the folder gives; it holds the index's lock meanwhile; SIGTERM ends it cleanly.

mod common;
#[path = "common/serve.rs"]
mod serve_support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::*;
use serde_json::Value;
use serve_support::*;

const FILES: &[&str] = &[
    "getting-started/faq.md",
    "security/request-path.md",
    "security/http2-header-memory.md",
    "reference/routing-configuration/http/middlewares/circuitbreaker.md",
    "getting-started/configuration-overview.md",
];

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// One random change: an edit, an editor's save-by-rename, a rename (maybe into a new folder),
/// a delete, or a new file.
fn random_change(docs: &Path, rng: &mut fastrand::Rng, n: usize) {
    let files = files_under(docs);
    let kind = rng.u8(..5);
    let picked = files
        .get(rng.usize(..files.len().max(1)))
        .cloned()
        .unwrap_or_default();
    let pick = || picked.clone();
    match kind {
        _ if files.len() < 3 => {
            std::fs::write(
                docs.join(format!("new-{n}.md")),
                format!("# New {n}\n\nfresh text {n}\n"),
            )
            .unwrap();
        }
        0 => {
            let file = pick();
            let mut text = std::fs::read_to_string(&file).unwrap();
            text.push_str(&format!(
                "\n\n## Added {n}\n\nAn appended paragraph number {n}.\n"
            ));
            std::fs::write(&file, text).unwrap();
        }
        1 => {
            let file = pick();
            let text = std::fs::read_to_string(&file).unwrap().replacen(
                "Traefik",
                &format!("Traefik ({n})"),
                1,
            );
            let tmp = file.with_extension("md.swp-tmp");
            std::fs::write(&tmp, text).unwrap();
            std::fs::rename(&tmp, &file).unwrap();
        }
        2 => {
            let dir = docs.join(format!("moved-{}", n % 3));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::rename(pick(), dir.join(format!("renamed-{n}.md"))).unwrap();
        }
        3 => std::fs::remove_file(pick()).unwrap(),
        _ => {
            let text = std::fs::read_to_string(pick()).unwrap();
            std::fs::write(docs.join(format!("copy-{n}.md")), text).unwrap();
        }
    }
}

fn dump_lines(index: &Path) -> Vec<Value> {
    let mut lines = dump(index);
    // When each index first saw a text is history, not state: a watcher sees it earlier.
    for line in &mut lines {
        if let Some(metadata) = line["metadata"].as_object_mut() {
            metadata.remove("indexed_at");
            metadata.remove("changed_at");
        }
    }
    lines.sort_by_key(|l| l.to_string());
    lines
}

/// `rag-index watch DOCS --index INDEX`, killed when dropped.
fn spawn_watch(docs: &Path, index: &Path) -> Running {
    spawn_watch_with(docs, index, &[])
}

/// `rag-index watch DOCS --index INDEX MORE...`, killed when dropped.
fn spawn_watch_with(docs: &Path, index: &Path, more: &[&str]) -> Running {
    Running {
        child: rag_index()
            .args([
                "watch",
                docs.to_str().unwrap(),
                "--index",
                index.to_str().unwrap(),
            ])
            .args(more)
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
        base: String::new(),
    }
}

/// Sends SIGTERM to the running `watch`, as a service manager stops it.
fn send_sigterm(watch: &Running) {
    let pid = watch.child.id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits until the watched index equals a fresh index of `docs`; panics after `limit`.
fn assert_converges(docs: &Path, watched: &Path, fresh: &Path, limit: Duration) {
    if fresh.exists() {
        std::fs::remove_dir_all(fresh).unwrap();
    }
    sync(docs, fresh, 0);
    let expected = dump_lines(fresh);
    let got = wait_for(limit, || {
        let got = dump_lines(watched);
        (got == expected).then_some(got)
    });
    if got.is_none() {
        let got = dump_lines(watched);
        let paths = |v: &[Value]| {
            v.iter()
                .map(|c| c["path"].to_string())
                .collect::<std::collections::BTreeSet<_>>()
        };
        panic!(
            "watch did not converge: watched {:?}\nfresh {:?}",
            paths(&got),
            paths(&expected)
        );
    }
}

#[test]
fn watch_converges_to_sync_after_bursts_of_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    copy_corpus_files(&docs, FILES);
    let index = tmp.path().join("watched");
    let fresh = tmp.path().join("fresh");
    let mut watch = spawn_watch(&docs, &index);
    assert_converges(&docs, &index, &fresh, Duration::from_secs(60));

    // While it runs, watch is the writer: a cron sync gets the "busy" exit code.
    let out = run(&[
        "sync",
        docs.to_str().unwrap(),
        "--index",
        index.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(75),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut rng = fastrand::Rng::with_seed(15);
    let mut n = 0;
    for _round in 0..3 {
        for _ in 0..12 {
            random_change(&docs, &mut rng, n);
            n += 1;
        }
        assert_converges(&docs, &index, &fresh, Duration::from_secs(60));
    }
    // A change inside a hidden folder is not indexed, and does not disturb convergence.
    std::fs::create_dir_all(docs.join(".git")).unwrap();
    std::fs::write(docs.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::remove_file(
        files_under(&docs)
            .into_iter()
            .find(|p| p.extension().is_some_and(|e| e == "md"))
            .unwrap(),
    )
    .unwrap();
    assert_converges(&docs, &index, &fresh, Duration::from_secs(60));

    // `stats --json` in another process shows the watcher's freshness report: what it serves
    // and what it has seen but not committed (nothing, now that it has converged).
    let stats = || -> Value {
        let out = run(&["stats", "--index", index.to_str().unwrap(), "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let watching = wait_for(Duration::from_secs(10), || {
        let s = stats();
        (s["watch"]["pending_changes"] == 0 && s["watch"]["syncing"] == false).then_some(s)
    })
    .expect("stats shows the watcher");
    assert_eq!(
        watching["watch"]["root"],
        docs.to_str().unwrap(),
        "{watching}"
    );
    assert!(
        watching["watch"]["syncs"].as_u64().unwrap() >= 4,
        "{watching}"
    );
    assert_eq!(watching["watch"]["generation"], watching["generation"]);

    // SIGTERM: a clean stop with exit code 0.
    send_sigterm(&watch);
    let status =
        wait_for(Duration::from_secs(20), || watch.child.try_wait().unwrap()).expect("watch stops");
    assert_eq!(status.code(), Some(0));
    assert!(
        stats().get("watch").is_none(),
        "a stopped watcher withdraws its status"
    );
    // The lock is released: a plain sync finds nothing to do.
    let report = sync(&docs, &index, 0);
    assert_eq!(report["chunks"]["embedded"], 0, "{report}");
}

/// A deploy that replaces the folder: a symlink switched to a new release, then a new folder
/// moved into the path. The watch on the old folder hears nothing of either; the watcher
/// notices the root changed (within its one-second root check, long before the ten-minute
/// reconcile), watches the new folder, syncs, and then follows edits made inside it.
#[test]
fn watch_follows_a_root_replaced_by_a_symlink_switch_or_a_new_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let (v1, v2, v3) = (
        tmp.path().join("releases/v1"),
        tmp.path().join("releases/v2"),
        tmp.path().join("releases/v3"),
    );
    copy_corpus_files(&v1, &FILES[..2]);
    copy_corpus_files(&v2, &FILES[2..4]);
    copy_corpus_files(&v3, &FILES[4..]);
    let docs = tmp.path().join("docs");
    std::os::unix::fs::symlink(&v1, &docs).unwrap();
    let index = tmp.path().join("watched");
    let fresh = tmp.path().join("fresh");
    let _watch = spawn_watch(&docs, &index);
    assert_converges(&docs, &index, &fresh, Duration::from_secs(60));

    // Switch the symlink atomically, as deploy tools do.
    let next = tmp.path().join("docs.next");
    std::os::unix::fs::symlink(&v2, &next).unwrap();
    std::fs::rename(&next, &docs).unwrap();
    assert_converges(&docs, &index, &fresh, Duration::from_secs(30));
    // An edit inside the new release is an event again, not a wait for the reconcile.
    let edited = v2.join(FILES[2]);
    let mut text = std::fs::read_to_string(&edited).unwrap();
    text.push_str(
        "\n\n## Rollout note\n\nThe quarantined edge proxies drain within ninety seconds.\n",
    );
    std::fs::write(&edited, text).unwrap();
    assert_converges(&docs, &index, &fresh, Duration::from_secs(30));

    // Replace the symlink by a real folder moved into place.
    std::fs::remove_file(&docs).unwrap();
    std::fs::rename(&v3, &docs).unwrap();
    assert_converges(&docs, &index, &fresh, Duration::from_secs(30));
    std::fs::remove_file(docs.join(FILES[4])).unwrap();
    std::fs::write(
        docs.join("new.md"),
        "# New\n\nA page written after the move.\n",
    )
    .unwrap();
    assert_converges(&docs, &index, &fresh, Duration::from_secs(30));
}

/// An index synced with `--no-table-records` is refused by a plain `watch` (exit 2, naming the
/// chunker configuration) and followed by `watch --no-table-records`, which keeps it without
/// row records.
#[test]
fn watch_keeps_an_index_without_table_records_when_told() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    let page = "deprecation/releases.md";
    copy_corpus_files(&docs, &[page]);
    let index = work.path().join("index");
    run_expect(
        &[
            "sync",
            docs.to_str().unwrap(),
            "--index",
            index.to_str().unwrap(),
            "--no-table-records",
        ],
        0,
    );
    let refused = rag_index()
        .args(["watch", docs.to_str().unwrap(), "--index"])
        .arg(&index)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("different chunker configuration"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    let _watch = spawn_watch_with(&docs, &index, &["--no-table-records"]);
    let mut text = std::fs::read_to_string(docs.join(page)).unwrap();
    text.push_str("\n## Support policy\n\nThe quokka release train stops every second spring.\n");
    std::fs::write(docs.join(page), text).unwrap();
    let seen = wait_for(Duration::from_secs(30), || {
        let lines = dump(&index);
        lines
            .iter()
            .any(|c| c["text"].as_str().unwrap().contains("quokka"))
            .then_some(lines)
    })
    .expect("the edit is indexed by the watcher");
    assert!(
        seen.iter().all(|c| c["metadata"].get("record").is_none()),
        "no row records"
    );
}

/// Past the system's limit on file watches (a tree with more folders than inotify may watch)
/// `watch` keeps running, says so once on stderr and in its status, and finds changes by
/// scanning the folder. The limit is lowered in a user namespace of its own (per-namespace
/// `max_inotify_watches`), so nothing else on the machine is affected.
#[test]
fn past_the_watch_limit_watch_scans_instead_of_stopping() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    copy_corpus_files(&docs, FILES);
    // Every folder on the way to a file is watched: the root, `getting-started`, `security`,
    // and the four of `reference/routing-configuration/http/middlewares`.
    let folders = files_under(&docs)
        .iter()
        .flat_map(|f| f.ancestors().skip(1).take_while(|a| a.starts_with(&docs)))
        .map(Path::to_path_buf)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert!(folders >= 6, "more folders than the limit of 3 below");
    let index = tmp.path().join("watched");
    let fresh = tmp.path().join("fresh");
    let script = "echo 3 > /proc/sys/user/max_inotify_watches && exec \"$0\" \"$@\"";
    let mut watch = Running {
        child: rag_index_through(
            "unshare",
            &["--user", "--map-root-user", "sh", "-c", script],
        )
        .args(["watch", docs.to_str().unwrap(), "--index"])
        .args([index.to_str().unwrap(), "--scan-every", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap(),
        base: String::new(),
    };
    assert_converges(&docs, &index, &fresh, Duration::from_secs(60));
    let limited = wait_for(Duration::from_secs(10), || {
        let out = run(&["stats", "--index", index.to_str().unwrap(), "--json"]);
        let stats: Value = serde_json::from_slice(&out.stdout).ok()?;
        stats["watch"]["notifications_limited"]
            .as_str()
            .map(str::to_string)
    })
    .expect("the status says notifications are limited");
    assert!(limited.contains("limit"), "{limited}");

    // Changes in folders past the limit are found by the scan.
    let deepest = docs.join(FILES[3]).parent().unwrap().to_path_buf();
    std::fs::write(
        deepest.join("late.md"),
        "# Late\n\nThe quartz relay restarts after the drain window.\n",
    )
    .unwrap();
    std::fs::remove_file(docs.join(FILES[1])).unwrap();
    assert_converges(&docs, &index, &fresh, Duration::from_secs(30));
    assert!(
        watch.child.try_wait().unwrap().is_none(),
        "watch is still running"
    );

    send_sigterm(&watch);
    let mut stderr = String::new();
    use std::io::Read;
    watch
        .child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let warnings = stderr.matches("found by a full scan every 2 s").count();
    assert_eq!(warnings, 1, "said once: {stderr}");
    assert_eq!(watch.child.wait().unwrap().code(), Some(0), "{stderr}");
}
