//! One module per command.

pub mod chunks;
pub mod eval;
pub mod health;
pub mod inspect;
pub mod query;
pub mod search_flags;
pub mod serve;
pub mod sync;
pub mod verify;
pub mod watch;

use std::io::{BufRead, Read};

use anyhow::{Result, bail};

/// Reads lines of at most `max_bytes` each (and at most `max_lines`), so that an endless or
/// binary input (`/dev/zero`) is an error, not an out-of-memory kill. `what` names the input.
pub fn bounded_lines(
    input: impl BufRead,
    what: &str,
    max_bytes: usize,
    max_lines: usize,
) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    let mut input = input;
    let mut buf = Vec::new();
    for n in 1.. {
        buf.clear();
        let read = (&mut input)
            .take(max_bytes as u64 + 1)
            .read_until(b'\n', &mut buf)?;
        if read == 0 {
            break;
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        } else if read > max_bytes {
            bail!("{what}: line {n} is longer than {max_bytes} bytes");
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        let Ok(text) = String::from_utf8(std::mem::take(&mut buf)) else {
            bail!("{what}: line {n} is not valid UTF-8");
        };
        if lines.len() == max_lines {
            bail!("{what}: more than {max_lines} lines");
        }
        lines.push(text);
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endless_and_binary_input_is_an_error() {
        let zeros = std::io::BufReader::new(std::io::repeat(0));
        let err = bounded_lines(zeros, "q", 1024, 10).unwrap_err();
        assert!(err.to_string().contains("longer than 1024 bytes"), "{err}");
        let ok = bounded_lines("a\r\nb\n\nc".as_bytes(), "q", 8, 10).unwrap();
        assert_eq!(ok, ["a", "b", "", "c"]);
        assert!(bounded_lines("a\nb\nc\n".as_bytes(), "q", 8, 2).is_err());
        assert!(bounded_lines(&b"\xff\n"[..], "q", 8, 2).is_err());
    }
}
