//! Writing results and messages: stdout carries only results, stderr the rest, and neither a
//! closed pipe nor a full disk makes the process panic.

use std::io::Write;
use std::sync::Mutex;

use crate::terminal_text;

/// The message of the last panic, kept by the quiet panic hook for one clean error line.
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Replaces the default panic hook (which prints a backtrace note to stderr) with one that only
/// records the message: panics inside dependencies are caught at the library boundaries and
/// become errors, and any other one is reported once by `main`. `RUST_BACKTRACE` restores the
/// default output for debugging.
pub fn install_quiet_panic_hook() {
    if std::env::var_os("RUST_BACKTRACE").is_some() {
        return;
    }
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = Some(format!("{message}{at}"));
        }
    }));
}

/// The last recorded panic message.
pub fn last_panic() -> String {
    LAST_PANIC
        .lock()
        .ok()
        .and_then(|p| p.clone())
        .unwrap_or_else(|| "unknown".into())
}

/// One line on stderr, prefixed `rag-index: `, its control characters shown escaped (it names
/// files). A closed or full stderr is ignored: it must not turn a finished sync into a failure.
pub fn note(line: &str) {
    let line = terminal_text::one_line(line);
    let _ = writeln!(std::io::stderr().lock(), "rag-index: {line}");
}

/// Writes one line of results to stdout, its control characters other than newlines and tabs
/// shown escaped (it holds indexed text), propagating errors (a broken pipe ends the command
/// quietly in `main`).
pub fn line(out: &mut impl Write, text: impl std::fmt::Display) -> std::io::Result<()> {
    let text = text.to_string();
    writeln!(out, "{}", terminal_text::lines(&text))
}

/// Writes `value` as one line of JSON on stdout, with the characters a terminal obeys escaped.
pub fn json_line(out: &mut impl Write, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let text = terminal_text::json(serde_json::to_string(value)?);
    writeln!(out, "{text}")?;
    Ok(())
}

/// Whether an error chain holds a broken pipe (the reader of stdout went away).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The error and its causes, each said once: many errors already end their message with their
/// cause's (`"cannot write {path}: {source}"`), and `{:#}` would repeat it.
pub fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let part = cause.to_string();
        if !text.is_empty() && text.ends_with(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

/// `line` cut to `max` characters with an ellipsis.
pub fn truncate(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// 1536 -> "1.5 KiB".
pub fn human_bytes(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < units.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", units[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cause_is_said_once() {
        let full_disk = || std::io::Error::from_raw_os_error(28);
        // This error quotes its source in its own message.
        let quoting = rag_index_core::Error::Io {
            action: "cannot write",
            path: "/i/graph".into(),
            source: full_disk(),
        };
        let err = anyhow::Error::new(quoting).context("sync of /docs failed");
        assert_eq!(
            error_text(&err),
            format!(
                "sync of /docs failed: cannot write /i/graph: {}",
                full_disk()
            )
        );
        // A cause the message does not end with is kept, even when its words occur in it.
        let err = anyhow::Error::new(std::io::Error::other("failed")).context("sync failed early");
        assert_eq!(error_text(&err), "sync failed early: failed");
        // A cause the message does not quote is kept.
        let err = anyhow::Error::new(full_disk()).context("cannot write /out");
        assert_eq!(
            error_text(&err),
            format!("cannot write /out: {}", full_disk())
        );
    }
}
