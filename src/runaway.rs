//! What the CLI does when a source file's parse runs away with memory (rag-formats' bound,
//! reached inside tree-sitter's last step, where nothing can stop the parse and return): a
//! `sync`, `watch` or HTTP server starts again in a new process image, which skips the file (it
//! is recorded as set aside); any other command ends, naming the file.

use std::process::Command;

use rag_index_core::{RunawayParse, SET_ASIDE_ENV, on_runaway_parse};

use crate::output;

/// How many times one invocation restarts: one per runaway file, and a stop for anything else.
const MAX_RESTARTS: u32 = 16;
/// Counts the restarts across the new process images.
const RESTARTS_ENV: &str = "RAG_INDEX_RESTARTS";

/// For `sync`, `watch` and `serve --http`.
pub fn restart_on_runaway_parse() {
    on_runaway_parse(restart);
}

/// For every other command.
pub fn exit_on_runaway_parse() {
    on_runaway_parse(exit);
}

/// Whether this process image is a restart after a runaway parse.
pub fn is_restarted_image() -> bool {
    std::env::var_os(RESTARTS_ENV).is_some()
}

fn restart(event: &RunawayParse) {
    let restarts: u32 = std::env::var(RESTARTS_ENV)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let (Some(set_aside), true) = (&event.set_aside_env, restarts < MAX_RESTARTS) else {
        return exit(event);
    };
    output::note(&format!(
        "{}: {}; starting again without it",
        event.path, event.reason
    ));
    let Ok(exe) = std::env::current_exe() else {
        return exit(event);
    };
    // The open store is dropped as a kill would drop it (nothing is committed before the end
    // of a sync); its files and the sync lock are closed on exec.
    let error = exec(
        Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env(SET_ASIDE_ENV, set_aside)
            .env(RESTARTS_ENV, (restarts + 1).to_string()),
    );
    output::note(&format!("cannot start again: {error}"));
    std::process::exit(2);
}

#[cfg(unix)]
fn exec(command: &mut Command) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    command.exec()
}

#[cfg(not(unix))]
fn exec(_: &mut Command) -> std::io::Error {
    std::io::Error::other("no exec on this platform")
}

fn exit(event: &RunawayParse) {
    output::note(&format!("{}: {}", event.path, event.reason));
    std::process::exit(1);
}
