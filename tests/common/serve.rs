//! Running `rag-index serve` and `watch` as child processes, and talking HTTP to them.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::rag_index;

/// A child process killed when dropped.
pub struct Running {
    pub child: Child,
    pub base: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free at the time of the call.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `rag-index serve --http 127.0.0.1:PORT ARGS` and waits until `/health` answers.
pub fn serve_http(args: &[&str]) -> Running {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let child = rag_index()
        .args(["serve", "--http", &addr])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("start serve");
    let mut running = Running {
        child,
        base: format!("http://{addr}"),
    };
    let started = Instant::now();
    loop {
        if let Some(status) = running.child.try_wait().unwrap() {
            panic!("serve exited early with {status}");
        }
        if get(&running.base, "/health", &[]).0 == 200 {
            return running;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "serve did not come up"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn finish(result: Result<ureq::Response, ureq::Error>) -> (u16, Value) {
    let response = match result {
        Ok(response) => response,
        Err(ureq::Error::Status(_, response)) => response,
        Err(e) => return (0, Value::String(e.to_string())),
    };
    let code = response.status();
    let text = response.into_string().unwrap_or_default();
    (
        code,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn with_headers(mut request: ureq::Request, headers: &[(&str, &str)]) -> ureq::Request {
    for (name, value) in headers {
        request = request.set(name, value);
    }
    request.timeout(Duration::from_secs(60))
}

/// GET `path`: (status, JSON body or the body as a string).
pub fn get(base: &str, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    finish(with_headers(ureq::get(&format!("{base}{path}")), headers).call())
}

/// POST a raw body to `path`.
pub fn post(base: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, Value) {
    let request = with_headers(ureq::post(&format!("{base}{path}")), headers)
        .set("Content-Type", "application/json");
    finish(request.send_string(body))
}

/// `POST /search` with a JSON body; the hits' paths.
pub fn search_paths(base: &str, headers: &[(&str, &str)], body: &Value) -> Vec<String> {
    let (code, answer) = post(base, "/search", headers, &body.to_string());
    assert_eq!(code, 200, "search {body}: {answer}");
    answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap().to_string())
        .collect()
}

/// Writes the finance-only document used to check labels.
pub fn write_secret(docs: &Path) {
    let dir = docs.join("finance");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("budget.md"),
        "---\ntitle: Budget\naccess: [finance]\n---\n# Budget 2027\n\nThe zorblax reserve for \
         Project Quetzal is 4.2 million euros, approved by the board in March.\n",
    )
    .unwrap();
}

/// The words only the finance document holds.
pub const SECRET_QUERY: &str = "zorblax reserve Quetzal";
pub const SECRET_PATH: &str = "finance/budget.md";

/// Polls `check` every 200 ms until it returns `Some`, for at most `limit`.
pub fn wait_for<T>(limit: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let started = Instant::now();
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        if started.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
