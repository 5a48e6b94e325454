//! A real PostgreSQL + pgvector server for a test, started by the project's own script and
//! stopped (its data directory removed) when dropped.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A running server.
pub struct PgServer {
    data: PathBuf,
    /// `postgres://rag:...@127.0.0.1:PORT/rag`.
    pub url: String,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg.sh")
}

impl PgServer {
    /// Starts a fresh server (the script runs it as an unprivileged user when we are root).
    pub fn start() -> PgServer {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        // Not a tempdir: the server's own user must reach it, and root's temp dirs are 0700.
        let data = std::env::temp_dir().join(format!(
            "rag-index-test-pg-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::SeqCst)
        ));
        let out = Command::new(script())
            .arg("start")
            .arg(&data)
            .output()
            .expect("run scripts/pg.sh");
        assert!(
            out.status.success(),
            "scripts/pg.sh start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = String::from_utf8(out.stdout).unwrap().trim().to_string();
        assert!(url.starts_with("postgres://"), "bad URL {url:?}");
        PgServer { data, url }
    }

    /// The server's own port, without the script's TLS relay.
    pub fn direct_url(&self) -> String {
        let out = Command::new(script())
            .args(["url"])
            .arg(&self.data)
            .arg("--direct")
            .output()
            .expect("run scripts/pg.sh");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// Runs SQL as the `rag` role through the bundled psql; returns its unaligned output.
    pub fn psql(&self, sql: &str) -> String {
        let out = Command::new(script())
            .arg("psql")
            .arg(&self.data)
            .args(["-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .expect("run psql");
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = Command::new(script()).arg("stop").arg(&self.data).output();
    }
}
