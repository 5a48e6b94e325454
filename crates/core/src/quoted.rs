//! Caller input quoted in an error message, cut to a line: a request's errors go to stderr, HTTP
//! responses and MCP results, and a megabyte-long filter key must not come back as a megabyte.

use std::fmt;

/// How many characters of the input an error quotes.
const MAX_QUOTED_CHARS: usize = 80;

/// `text` as a quoted string literal (control characters escaped), cut after
/// [`MAX_QUOTED_CHARS`] characters with `…` and how many bytes were left out.
pub struct Quoted<'a>(&'a str);

/// Quotes `text` for an error message; see [`Quoted`].
pub fn quoted(text: &str) -> Quoted<'_> {
    Quoted(text)
}

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.char_indices().nth(MAX_QUOTED_CHARS) {
            None => write!(f, "{:?}", self.0),
            Some((cut, _)) => write!(
                f,
                "{:?}… ({} more bytes)",
                &self.0[..cut],
                self.0.len() - cut
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_input_is_cut_on_a_character_and_says_how_much_is_left_out() {
        assert_eq!(quoted("key\n").to_string(), "\"key\\n\"");
        let long = "é".repeat(1_000);
        let shown = quoted(&long).to_string();
        assert_eq!(
            shown,
            format!("\"{}\"… ({} more bytes)", "é".repeat(80), 2 * 920)
        );
    }
}
