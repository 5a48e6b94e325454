//! Bearer tokens and the labels each one may see, read from a file the operator writes.

use std::path::Path;

use rag_index_core::Access;

use crate::{Result, ServerError};

/// Shortest token accepted: a guessable token is no protection.
const MIN_TOKEN_BYTES: usize = 16;
/// Largest tokens file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// The tokens a server accepts, each mapped to the labels its holder may see.
///
/// The file has one token per line, `TOKEN` or `TOKEN LABEL[,LABEL...]`; blank lines and lines
/// starting with `#` are ignored. A token with no label sees public documents only.
///
/// ```
/// let tokens = rag_server::Tokens::parse("# ops\nops-0123456789abcdef finance,hr\n").unwrap();
/// assert!(tokens.access("ops-0123456789abcdef").unwrap().may_see(&["hr".into()]));
/// assert!(tokens.access("guess").is_none());
/// ```
#[derive(Debug, Clone)]
pub struct Tokens {
    entries: Vec<(Vec<u8>, Access)>,
}

impl Tokens {
    /// Reads a tokens file.
    pub fn load(path: &Path) -> Result<Tokens> {
        let error = |reason: String| ServerError::Tokens {
            path: path.to_owned(),
            reason,
        };
        let size = std::fs::metadata(path)
            .map_err(|e| error(e.to_string()))?
            .len();
        if size > MAX_FILE_BYTES {
            return Err(error(format!("larger than {MAX_FILE_BYTES} bytes")));
        }
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        Tokens::parse(&text).map_err(error)
    }

    /// Parses the text of a tokens file.
    pub fn parse(text: &str) -> std::result::Result<Tokens, String> {
        let mut entries: Vec<(Vec<u8>, Access)> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            let token = words.next().unwrap_or_default();
            let labels = words.next().unwrap_or("");
            if words.next().is_some() {
                return Err(format!(
                    "line {}: expected `TOKEN LABEL[,LABEL]` (labels are comma-separated, \
                     without spaces)",
                    n + 1
                ));
            }
            if token.len() < MIN_TOKEN_BYTES {
                return Err(format!(
                    "line {}: tokens must be at least {MIN_TOKEN_BYTES} characters",
                    n + 1
                ));
            }
            if entries.iter().any(|(t, _)| t == token.as_bytes()) {
                return Err(format!("line {}: the token is listed twice", n + 1));
            }
            let access = Access::parse_list(labels).map_err(|e| format!("line {}: {e}", n + 1))?;
            entries.push((token.as_bytes().to_vec(), access));
        }
        if entries.is_empty() {
            return Err("no tokens (every request would be refused)".into());
        }
        Ok(Tokens { entries })
    }

    /// The labels of `token`, if it is one of the file's.
    pub fn access(&self, token: &str) -> Option<&Access> {
        // Every entry is compared in full, in time independent of where bytes differ, so the
        // response time does not leak how much of a guess was right.
        let mut found = None;
        for (known, access) in &self.entries {
            if constant_time_eq(known, token.as_bytes()) {
                found = Some(access);
            }
        }
        found
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_files_are_refused() {
        assert!(Tokens::parse("").is_err());
        assert!(Tokens::parse("short finance").is_err());
        assert!(Tokens::parse("0123456789abcdef a b").is_err());
        assert!(Tokens::parse("0123456789abcdef bad!label").is_err());
        assert!(Tokens::parse("0123456789abcdef\n0123456789abcdef x").is_err());
        let t = Tokens::parse("0123456789abcdef\n0123456789abcdeg finance").unwrap();
        assert!(
            !t.access("0123456789abcdef")
                .unwrap()
                .may_see(&["finance".into()])
        );
        assert!(
            t.access("0123456789abcdeg")
                .unwrap()
                .may_see(&["finance".into()])
        );
        assert!(t.access("0123456789abcde").is_none());
    }
}
