//! Finding a model folder: explicit path, environment, well-known folders, the Hugging Face
//! cache, and as a last resort a guarded download.

use std::ffi::OsString;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use crate::EmbedError;

/// The default model's folder name and hub repository.
pub const DEFAULT_MODEL_NAME: &str = "all-MiniLM-L6-v2";
const DEFAULT_MODEL_REPO: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// Environment variable naming a model folder.
pub const MODEL_DIR_ENV: &str = "RAG_INDEX_MODEL_DIR";

/// Files a usable folder must hold, small ones first so a download stalls early if it stalls.
const MODEL_FILES: &[&str] = &[
    "config.json",
    "tokenizer.json",
    "sentence_bert_config.json",
    "modules.json",
    "1_Pooling/config.json",
    "model.safetensors",
];
const REQUIRED_FILES: &[&str] = &["config.json", "tokenizer.json", "model.safetensors"];

/// Inputs to resolution that normally come from the process environment; tests build their own.
#[derive(Debug, Clone)]
pub(crate) struct ResolveEnv {
    pub(crate) model_dir: Option<PathBuf>,
    pub(crate) hub_cache: Option<PathBuf>,
    pub(crate) endpoint: String,
    pub(crate) offline: bool,
    /// TCP connect probe; an unreachable hub fails within this.
    pub(crate) connect_timeout: Duration,
    /// Longest silence allowed between two small files (the hub accepts but never answers).
    pub(crate) stall_timeout: Duration,
    /// Budget for the weights file itself.
    pub(crate) weights_timeout: Duration,
}

impl ResolveEnv {
    pub(crate) fn from_process() -> ResolveEnv {
        ResolveEnv::from_vars(|name| std::env::var_os(name))
    }

    /// Reads the environment through `var`, so tests need not touch the process environment.
    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> ResolveEnv {
        let var = |name: &str| var(name).filter(|v| !v.is_empty());
        // Same precedence as huggingface_hub: HF_HUB_CACHE, then HF_HOME/hub, then
        // $XDG_CACHE_HOME/huggingface/hub, then ~/.cache/huggingface/hub.
        let hub_cache = var("HF_HUB_CACHE")
            .map(PathBuf::from)
            .or_else(|| var("HF_HOME").map(|h| PathBuf::from(h).join("hub")))
            .or_else(|| {
                var("XDG_CACHE_HOME").map(|c| PathBuf::from(c).join("huggingface").join("hub"))
            })
            .or_else(|| {
                var("HOME").map(|h| {
                    PathBuf::from(h)
                        .join(".cache")
                        .join("huggingface")
                        .join("hub")
                })
            });
        let offline = ["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"]
            .iter()
            .any(|name| {
                var(name).is_some_and(|v| {
                    matches!(
                        v.to_string_lossy().to_ascii_lowercase().as_str(),
                        "1" | "true" | "yes" | "on"
                    )
                })
            });
        ResolveEnv {
            model_dir: var(MODEL_DIR_ENV).map(PathBuf::from),
            hub_cache,
            endpoint: var("HF_ENDPOINT")
                .map(|e| e.to_string_lossy().trim_end_matches('/').to_string())
                .unwrap_or_else(|| "https://huggingface.co".to_string()),
            offline,
            connect_timeout: Duration::from_secs(3),
            stall_timeout: Duration::from_secs(20),
            weights_timeout: Duration::from_secs(600),
        }
    }
}

/// Finds a model folder.
///
/// Order: `explicit`; the `RAG_INDEX_MODEL_DIR` environment variable; `<dir>/all-MiniLM-L6-v2`
/// for each of `search_dirs`; the Hugging Face cache (`HF_HUB_CACHE`, else `HF_HOME/hub`, else
/// `~/.cache/huggingface/hub`) for `sentence-transformers/all-MiniLM-L6-v2`, read offline; and
/// finally a download from the hub (`HF_ENDPOINT` honoured, skipped when `HF_HUB_OFFLINE=1`),
/// which gives up within seconds when the hub is unreachable.
///
/// An explicit folder or the environment variable is returned as long as it is a directory,
/// without falling back: [`Embedder::load`](crate::Embedder::load) then names any missing file.
pub fn resolve_model_dir(
    explicit: Option<&Path>,
    search_dirs: &[PathBuf],
) -> Result<PathBuf, EmbedError> {
    resolve_with(&ResolveEnv::from_process(), explicit, search_dirs)
}

pub(crate) fn resolve_with(
    env: &ResolveEnv,
    explicit: Option<&Path>,
    search_dirs: &[PathBuf],
) -> Result<PathBuf, EmbedError> {
    // A folder the user named is never silently replaced by another model.
    for (what, dir) in [
        ("--model-dir", explicit),
        (MODEL_DIR_ENV, env.model_dir.as_deref()),
    ] {
        if let Some(dir) = dir {
            return if dir.is_dir() {
                Ok(dir.to_path_buf())
            } else {
                Err(EmbedError::ModelNotFound {
                    tried: vec![format!("{} (from {what}: not a directory)", dir.display())],
                })
            };
        }
    }

    let mut tried = Vec::new();
    for dir in search_dirs {
        let candidate = dir.join(DEFAULT_MODEL_NAME);
        match missing_file(&candidate) {
            None => return Ok(candidate),
            Some(why) => tried.push(format!("{} ({why})", candidate.display())),
        }
    }

    if let Some(hub) = &env.hub_cache {
        match cached_snapshot(hub) {
            Ok(dir) => return Ok(dir),
            Err(why) => tried.push(format!("Hugging Face cache {} ({why})", hub.display())),
        }
    }

    if env.offline {
        tried.push("download skipped (HF_HUB_OFFLINE is set)".into());
    } else if let Some(hub) = &env.hub_cache {
        match download(env, hub) {
            Ok(dir) => return Ok(dir),
            Err(why) => tried.push(format!("download from {} ({why})", env.endpoint)),
        }
    } else {
        tried.push("download skipped (no cache directory: set HF_HOME)".into());
    }
    Err(EmbedError::ModelNotFound { tried })
}

/// `None` when `dir` holds every required file, else a short reason.
fn missing_file(dir: &Path) -> Option<String> {
    if !dir.is_dir() {
        return Some("not found".into());
    }
    REQUIRED_FILES
        .iter()
        .find(|f| !dir.join(f).is_file())
        .map(|f| format!("no {f}"))
}

/// The snapshot folder `refs/main` points at, in the layout huggingface_hub and hf-hub share:
/// `models--org--name/refs/main` holds a commit, `snapshots/<commit>/` holds the files.
fn cached_snapshot(hub: &Path) -> Result<PathBuf, String> {
    let cache = hf_hub::Cache::new(hub.to_path_buf()).model(DEFAULT_MODEL_REPO.to_string());
    let config = cache
        .get("config.json")
        .ok_or_else(|| format!("no {DEFAULT_MODEL_REPO} snapshot"))?;
    let dir = config
        .parent()
        .ok_or_else(|| "malformed snapshot path".to_string())?
        .to_path_buf();
    match missing_file(&dir) {
        None => Ok(dir),
        Some(why) => Err(format!("snapshot {}: {why}", dir.display())),
    }
}

enum Progress {
    Connected,
    Fetched(&'static str),
    Done(Result<PathBuf, String>),
}

/// Downloads into the hub cache on a worker thread and waits with deadlines, because hf-hub
/// 0.4.3 has no read timeout and hangs forever on a server that accepts but never answers.
/// A worker that overruns is abandoned; it holds nothing but a socket.
fn download(env: &ResolveEnv, hub: &Path) -> Result<PathBuf, String> {
    let (tx, rx) = mpsc::channel();
    let endpoint = env.endpoint.clone();
    let hub = hub.to_path_buf();
    let connect_timeout = env.connect_timeout;
    std::thread::Builder::new()
        .name("rag-embed-download".into())
        .spawn(move || {
            let result = (|| {
                probe(&endpoint, connect_timeout)?;
                let _ = tx.send(Progress::Connected);
                let api = hf_hub::api::sync::ApiBuilder::from_cache(hf_hub::Cache::new(hub))
                    .with_endpoint(endpoint)
                    .with_progress(false)
                    .with_retries(0)
                    .build()
                    .map_err(|e| e.to_string())?;
                let repo = api.model(DEFAULT_MODEL_REPO.to_string());
                let mut dir = None;
                for &file in MODEL_FILES {
                    let path = repo.get(file).map_err(|e| format!("{file}: {e}"))?;
                    if file == "config.json" {
                        dir = path.parent().map(Path::to_path_buf);
                    }
                    let _ = tx.send(Progress::Fetched(file));
                }
                dir.ok_or_else(|| "downloaded files have no folder".to_string())
            })();
            let _ = tx.send(Progress::Done(result));
        })
        .map_err(|e| format!("cannot start download thread: {e}"))?;

    // DNS lookup happens inside the probe too, so allow a little beyond the connect timeout.
    let mut wait = env.connect_timeout + Duration::from_secs(2);
    loop {
        match rx.recv_timeout(wait) {
            Ok(Progress::Connected) => wait = env.stall_timeout,
            Ok(Progress::Fetched(file)) => {
                log::info!("downloaded {file}");
                // The weights come last and get the long budget.
                let next = MODEL_FILES.iter().position(|f| *f == file).map(|i| i + 1);
                wait = match next.and_then(|i| MODEL_FILES.get(i)) {
                    Some(&"model.safetensors") => env.weights_timeout,
                    _ => env.stall_timeout,
                };
            }
            Ok(Progress::Done(result)) => return result,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(format!("no progress for {}s, gave up", wait.as_secs_f32()));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err("download thread ended without a result".into());
            }
        }
    }
}

/// Fails fast when nothing answers at the endpoint's host and port.
fn probe(endpoint: &str, timeout: Duration) -> Result<(), String> {
    let (scheme, rest) = endpoint
        .split_once("://")
        .ok_or_else(|| format!("endpoint {endpoint} has no scheme"))?;
    let authority = rest.split('/').next().unwrap_or(rest);
    let default_port = if scheme == "http" { 80 } else { 443 };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => match p.parse() {
            Ok(port) => (h, port),
            Err(_) => (authority, default_port),
        },
        _ => (authority, default_port),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?;
    let mut last = format!("{host} has no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(_) => return Ok(()),
            Err(e) => last = format!("cannot connect to {addr}: {e}"),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Instant;

    use super::*;

    fn env_with(vars: &[(&str, &Path)]) -> ResolveEnv {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
            .collect();
        let mut env = ResolveEnv::from_vars(|name| map.get(name).cloned());
        // Never touch the real hub from tests.
        env.offline = true;
        env
    }

    fn fake_model(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        for f in REQUIRED_FILES {
            std::fs::write(dir.join(f), "{}").unwrap();
        }
    }

    #[test]
    fn explicit_then_env_var_then_search_dirs() {
        let tmp = tempfile::tempdir().unwrap();
        let explicit = tmp.path().join("explicit");
        let from_env = tmp.path().join("from-env");
        let search = tmp.path().join("search");
        for d in [&explicit, &from_env] {
            std::fs::create_dir_all(d).unwrap();
        }
        fake_model(&search.join(DEFAULT_MODEL_NAME));
        let env = env_with(&[(MODEL_DIR_ENV, &from_env)]);
        let dirs = [tmp.path().join("empty"), search.clone()];

        assert_eq!(
            resolve_with(&env, Some(&explicit), &dirs).unwrap(),
            explicit
        );
        assert_eq!(resolve_with(&env, None, &dirs).unwrap(), from_env);
        let no_env = env_with(&[]);
        assert_eq!(
            resolve_with(&no_env, None, &dirs).unwrap(),
            search.join(DEFAULT_MODEL_NAME)
        );
    }

    #[test]
    fn named_folder_that_does_not_exist_is_an_error_not_a_fallback() {
        let tmp = tempfile::tempdir().unwrap();
        let search = tmp.path().join("search");
        fake_model(&search.join(DEFAULT_MODEL_NAME));
        let missing = tmp.path().join("missing");
        let err = resolve_with(
            &env_with(&[]),
            Some(&missing),
            std::slice::from_ref(&search),
        )
        .unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
        let env = env_with(&[(MODEL_DIR_ENV, &missing)]);
        let err = resolve_with(&env, None, &[search]).unwrap_err();
        assert!(err.to_string().contains(MODEL_DIR_ENV), "{err}");
    }

    #[test]
    fn incomplete_search_dir_is_skipped_with_a_reason() {
        let tmp = tempfile::tempdir().unwrap();
        let partial = tmp.path().join("a").join(DEFAULT_MODEL_NAME);
        fake_model(&partial);
        std::fs::remove_file(partial.join("model.safetensors")).unwrap();
        let good = tmp.path().join("b");
        fake_model(&good.join(DEFAULT_MODEL_NAME));
        let env = env_with(&[]);
        let dirs = [tmp.path().join("a"), good.clone()];
        assert_eq!(
            resolve_with(&env, None, &dirs).unwrap(),
            good.join(DEFAULT_MODEL_NAME)
        );

        let err = resolve_with(&env, None, &dirs[..1]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("no model.safetensors"), "{msg}");
        assert!(msg.contains("./models/fetch-model.sh"), "{msg}");
        assert!(
            msg.contains("--model-dir") && msg.contains(MODEL_DIR_ENV),
            "{msg}"
        );
    }

    #[test]
    fn hub_cache_layout() {
        let tmp = tempfile::tempdir().unwrap();
        let hub = tmp.path().join("hf").join("hub");
        let repo = hub.join("models--sentence-transformers--all-MiniLM-L6-v2");
        let snapshot = repo.join("snapshots").join("abc123");
        fake_model(&snapshot);
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs").join("main"), "abc123").unwrap();

        // HF_HOME/hub ...
        let env = env_with(&[("HF_HOME", &tmp.path().join("hf"))]);
        assert_eq!(env.hub_cache.as_deref(), Some(hub.as_path()));
        assert_eq!(resolve_with(&env, None, &[]).unwrap(), snapshot);
        // ... and HF_HUB_CACHE wins over HF_HOME.
        let env = env_with(&[("HF_HOME", tmp.path()), ("HF_HUB_CACHE", &hub)]);
        assert_eq!(env.hub_cache.as_deref(), Some(hub.as_path()));
        assert_eq!(resolve_with(&env, None, &[]).unwrap(), snapshot);
        // Search dirs come before the cache.
        let local = tmp.path().join("models");
        fake_model(&local.join(DEFAULT_MODEL_NAME));
        assert_eq!(
            resolve_with(&env, None, std::slice::from_ref(&local)).unwrap(),
            local.join(DEFAULT_MODEL_NAME)
        );
        // A ref to a snapshot without weights does not count.
        std::fs::remove_file(snapshot.join("model.safetensors")).unwrap();
        let err = resolve_with(&env, None, &[]).unwrap_err();
        assert!(err.to_string().contains("no model.safetensors"), "{err}");
    }

    #[test]
    fn home_fallback_for_the_cache() {
        let env = env_with(&[("HOME", Path::new("/home/u"))]);
        assert_eq!(
            env.hub_cache.as_deref(),
            Some(Path::new("/home/u/.cache/huggingface/hub"))
        );
    }

    fn online_env(hub: &Path, endpoint: String) -> ResolveEnv {
        let mut env = env_with(&[("HF_HUB_CACHE", hub)]);
        env.offline = false;
        env.endpoint = endpoint;
        env.connect_timeout = Duration::from_millis(500);
        env.stall_timeout = Duration::from_millis(800);
        env
    }

    #[test]
    fn unreachable_hub_fails_fast() {
        let tmp = tempfile::tempdir().unwrap();
        // A port that was just free: connection refused.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let env = online_env(tmp.path(), format!("http://127.0.0.1:{port}"));
        let start = Instant::now();
        let err = resolve_with(&env, None, &[]).unwrap_err();
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        let msg = err.to_string();
        assert!(
            msg.contains("download from") && msg.contains("fetch-model.sh"),
            "{msg}"
        );
    }

    #[test]
    fn silent_hub_fails_fast() {
        let tmp = tempfile::tempdir().unwrap();
        // Accepts connections (the kernel does, from the backlog) but never answers.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let env = online_env(tmp.path(), format!("http://127.0.0.1:{port}"));
        let start = Instant::now();
        let err = resolve_with(&env, None, &[]).unwrap_err();
        assert!(
            start.elapsed() < Duration::from_secs(4),
            "{:?}",
            start.elapsed()
        );
        assert!(err.to_string().contains("gave up"), "{err}");
        drop(listener);
    }

    #[test]
    fn offline_skips_download() {
        let tmp = tempfile::tempdir().unwrap();
        let mut env = env_with(&[("HF_HUB_CACHE", tmp.path())]);
        env.offline = true;
        let err = resolve_with(&env, None, &[]).unwrap_err();
        assert!(err.to_string().contains("HF_HUB_OFFLINE"), "{err}");
    }

    #[test]
    fn probe_parses_endpoints() {
        // Port 1 on localhost is closed: the probe must fail, quickly, with the address.
        let err = probe("http://127.0.0.1:1/some/path", Duration::from_millis(300)).unwrap_err();
        assert!(err.contains("127.0.0.1:1"), "{err}");
        assert!(probe("no-scheme", Duration::from_millis(10)).is_err());
    }
}
