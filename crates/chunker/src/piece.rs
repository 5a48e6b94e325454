//! A candidate chunk body and the token arithmetic of joining and prefixing pieces.

use std::ops::Range;

use crate::pack::PackContext;

/// A candidate chunk body: `prefix + source[range] + suffix`. Prefixes and suffixes are the
/// re-assembled parts of split blocks (table header, code fence, list intro, admonition marker).
#[derive(Debug, Clone)]
pub(crate) struct Piece {
    pub prefix: String,
    pub range: Range<usize>,
    pub suffix: String,
    pub prefix_tokens: usize,
    pub suffix_tokens: usize,
    /// Tokens of the whole body, excluding the model's specials.
    pub tokens: usize,
    /// First cells of the table rows in this piece.
    pub keys: Vec<String>,
}

impl Piece {
    /// Whether `self` followed by `next` is one verbatim span of the source.
    pub fn mergeable(&self, next: &Piece) -> bool {
        self.suffix.is_empty() && next.prefix.is_empty() && next.range.start >= self.range.start
    }

    /// Puts `prefix` (of `prefix_tokens` tokens) in front of the body.
    pub fn add_prefix(&mut self, prefix: &str, prefix_tokens: usize) {
        if !prefix.is_empty() {
            self.prefix.insert_str(0, prefix);
            self.prefix_tokens += prefix_tokens;
            self.tokens += prefix_tokens;
        }
    }

    /// Appends `suffix` (of `suffix_tokens` tokens) to the body.
    pub fn add_suffix(&mut self, suffix: &str, suffix_tokens: usize) {
        self.suffix.push_str(suffix);
        self.suffix_tokens += suffix_tokens;
        self.tokens += suffix_tokens;
    }
}

impl PackContext<'_> {
    /// The verbatim piece `source[range]`.
    pub fn piece(&self, range: Range<usize>) -> Piece {
        let tokens = self.tokens.range(range.clone());
        Piece {
            prefix: String::new(),
            range,
            suffix: String::new(),
            prefix_tokens: 0,
            suffix_tokens: 0,
            tokens,
            keys: vec![],
        }
    }

    pub fn str_tokens(&self, s: &str) -> usize {
        self.tokens.counting.str_tokens(s)
    }

    /// `a` followed by `b` as one verbatim span (only valid when [`Piece::mergeable`]).
    pub fn join(&self, a: &Piece, b: &Piece) -> Piece {
        let range = a.range.start..b.range.end.max(a.range.end);
        let tokens = a.prefix_tokens + self.tokens.range(range.clone()) + b.suffix_tokens;
        let mut keys = a.keys.clone();
        keys.extend(b.keys.iter().cloned());
        Piece {
            prefix: a.prefix.clone(),
            range,
            suffix: b.suffix.clone(),
            prefix_tokens: a.prefix_tokens,
            suffix_tokens: b.suffix_tokens,
            tokens,
            keys,
        }
    }

    /// Whether `a` and `b` join into one piece of at most `max` tokens.
    pub fn joins_within(&self, a: &Piece, b: &Piece, max: usize) -> bool {
        a.mergeable(b) && self.join(a, b).tokens <= max
    }
}
