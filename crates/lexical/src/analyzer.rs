//! The analyzer for technical documentation: one tantivy [`Tokenizer`] that splits identifiers
//! into their parts while keeping the whole identifier, lowercases, and stems prose.
//!
//! Why one tokenizer rather than a chain of tantivy filters: whether a token is stemmed depends on
//! what kind of token it is (a whole dotted identifier is never stemmed, its parts are), and that
//! knowledge is lost once a generic filter sees only the token text. Doing it in one pass also
//! avoids re-scanning each token once per filter.
//!
//! For every maximal run of letters, digits and joiners (`.` `-` `_` `/` `:`), with leading and
//! trailing joiners trimmed (`--entrypoints.web.address` → `entrypoints.web.address`, `Host:` →
//! `Host`):
//! - a plain word (no joiner, no camelCase hump) gives one token: lowercased and stemmed;
//! - an identifier gives its **whole** form, lowercased, then its **parts**: the pieces between
//!   joiners, each split again at camelCase humps (`maxConcurrentStreams` → `max` `concurrent`
//!   `streams`, `HTTPServer` → `http` `server`), every part lowercased and stemmed. A piece that
//!   has humps inside a joined identifier (`myMiddleware` in `http.middlewares.myMiddleware`) is
//!   also kept as one part. Letters and digits are not split apart (`r1`, `http2`, `h2c` stay).
//!
//! Stemming rules, and why:
//! - parts are stemmed, so a prose query (`router`) meets identifier parts (`http.routers.r1`);
//! - a whole identifier with joiners is *not* stemmed: it can only be matched by a query holding
//!   the same identifier, which analyzes to the same unstemmed text, so stemming would only
//!   garble the term (`…r1.rule` → `…r1.rul`) and make term look-ups surprising;
//! - a whole camelCase word without joiners *is* stemmed, because a user typing it in lowercase
//!   (`maxconcurrentstreams`) is indistinguishable from prose, and both sides must meet;
//! - numbers are kept as they are (`503`).
//!
//! Stop words are kept: `for` is a real part of `X-Forwarded-For`, and BM25's IDF already gives
//! common words little weight. Tokens longer than [`MAX_TOKEN_BYTES`] are dropped (their parts
//! are still indexed) so base64 blobs or minified lines do not bloat the term dictionary.
//!
//! Stemming is Snowball English from `frostem`, the very implementation behind tantivy's
//! `Stemmer` filter, called directly so it can be applied per kind of token.

use tantivy::tokenizer::{TextAnalyzer, Token, TokenStream, Tokenizer};

/// The name the analyzer is registered under in the index's tokenizer manager (and stored in the
/// schema).
pub const ANALYZER_NAME: &str = "rag_tech_v1";

/// Tokens longer than this many bytes are not indexed (their parts still are).
pub const MAX_TOKEN_BYTES: usize = 80;

/// Characters that join the pieces of one identifier (`a.b`, `a-b`, `a_b`, `a/b`, `a:b`).
fn is_joiner(c: char) -> bool {
    matches!(c, '.' | '-' | '_' | '/' | ':')
}

/// The tantivy tokenizer of this crate; see the [module docs](self) for what it emits.
#[derive(Clone)]
pub struct TechTokenizer {
    stemmer: frostem::Stemmer,
    tokens: Vec<Token>,
}

impl Default for TechTokenizer {
    fn default() -> Self {
        TechTokenizer {
            stemmer: frostem::Stemmer::new(frostem::Algorithm::English),
            tokens: Vec::new(),
        }
    }
}

/// The full analyzer (the [`TechTokenizer`]) as a tantivy [`TextAnalyzer`], for indexing and for
/// queries alike.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::from(TechTokenizer::default())
}

/// Analyzes `text` and returns the token texts in order (whole identifiers before their parts).
/// Useful to see what a query or a document is indexed as.
pub fn analyze(text: &str) -> Vec<String> {
    let mut analyzer = analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while let Some(token) = stream.next() {
        out.push(token.text.clone());
    }
    out
}

impl Tokenizer for TechTokenizer {
    type TokenStream<'a> = TechTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> TechTokenStream<'a> {
        // The token buffer lives in the tokenizer so its allocations are reused across documents.
        self.tokens.clear();
        let mut emitter = Emitter {
            stemmer: self.stemmer,
            tokens: &mut self.tokens,
            position: 0,
        };
        for (start, end) in runs(text) {
            emitter.run(text, start, end);
        }
        TechTokenStream {
            tokens: &mut self.tokens,
            next: 0,
        }
    }
}

/// The byte ranges of the maximal runs of word characters and joiners, with the joiners at either
/// end left out (a run starts and ends with a letter or digit).
fn runs(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut last_word_end = 0;
    for (i, c) in text.char_indices() {
        if c.is_alphanumeric() {
            start.get_or_insert(i);
            last_word_end = i + c.len_utf8();
        } else if !is_joiner(c)
            && let Some(s) = start.take()
        {
            out.push((s, last_word_end));
        }
    }
    if let Some(s) = start {
        out.push((s, last_word_end));
    }
    out
}

/// Byte ranges of the camelCase pieces of `s` (which has no joiners).
fn humps(s: &str) -> Vec<(usize, usize)> {
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    let mut out = Vec::new();
    let mut start = 0;
    for k in 1..chars.len() {
        let (i, c) = chars[k];
        let prev = chars[k - 1].1;
        let next_is_lower = chars.get(k + 1).is_some_and(|&(_, n)| n.is_lowercase());
        // `maxConcurrent`: lower or digit, then upper. `HTTPServer`: upper, upper, lower.
        let boundary = c.is_uppercase()
            && (prev.is_lowercase() || prev.is_numeric() || (prev.is_uppercase() && next_is_lower));
        if boundary {
            out.push((start, i));
            start = i;
        }
    }
    out.push((start, s.len()));
    out
}

struct Emitter<'t> {
    stemmer: frostem::Stemmer,
    tokens: &'t mut Vec<Token>,
    position: usize,
}

impl Emitter<'_> {
    /// Emits the tokens of the run `text[start..end]`.
    fn run(&mut self, text: &str, start: usize, end: usize) {
        let run = &text[start..end];
        let has_joiner = run.contains(is_joiner);
        if !has_joiner {
            let pieces = humps(run);
            self.push(run, start, end, true);
            if pieces.len() > 1 {
                for (a, b) in pieces {
                    self.push(&run[a..b], start + a, start + b, true);
                }
            }
            return;
        }
        self.push(run, start, end, false);
        let mut offset = 0;
        for piece in run.split(is_joiner) {
            let piece_start = start + offset;
            offset += piece.len() + 1;
            if piece.is_empty() {
                continue;
            }
            let pieces = humps(piece);
            self.push(piece, piece_start, piece_start + piece.len(), true);
            if pieces.len() > 1 {
                for (a, b) in pieces {
                    self.push(&piece[a..b], piece_start + a, piece_start + b, true);
                }
            }
        }
    }

    fn push(&mut self, raw: &str, from: usize, to: usize, stem: bool) {
        if raw.len() > MAX_TOKEN_BYTES {
            return;
        }
        let lower = raw.to_lowercase();
        let text = if stem {
            self.stemmer.stem(&lower).into_owned()
        } else {
            lower
        };
        self.tokens.push(Token {
            offset_from: from,
            offset_to: to,
            position: self.position,
            text,
            position_length: 1,
        });
        self.position += 1;
    }
}

/// The token stream of [`TechTokenizer`]: the tokens were computed up front.
pub struct TechTokenStream<'a> {
    tokens: &'a mut Vec<Token>,
    next: usize,
}

impl TokenStream for TechTokenStream<'_> {
    fn advance(&mut self) -> bool {
        self.next += 1;
        self.next <= self.tokens.len()
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::analyze;

    #[test]
    fn camel_case_keeps_whole_and_parts() {
        assert_eq!(
            analyze("maxConcurrentStreams"),
            ["maxconcurrentstream", "max", "concurr", "stream"]
        );
        assert_eq!(analyze("HTTPServer"), ["httpserver", "http", "server"]);
    }

    #[test]
    fn joined_identifiers_keep_whole_unstemmed_and_parts_stemmed() {
        assert_eq!(
            analyze("--entrypoints.web.address=:8080"),
            [
                "entrypoints.web.address",
                "entrypoint",
                "web",
                "address",
                "8080"
            ]
        );
        assert_eq!(
            analyze("X-Forwarded-For:"),
            ["x-forwarded-for", "x", "forward", "for"]
        );
        assert_eq!(
            analyze("snake_case_name"),
            ["snake_case_name", "snake", "case", "name"]
        );
        assert_eq!(
            analyze("`traefik.http.middlewares.myMiddleware.headers`"),
            [
                "traefik.http.middlewares.mymiddleware.headers",
                "traefik",
                "http",
                "middlewar",
                "mymiddlewar",
                "my",
                "middlewar",
                "header"
            ]
        );
    }

    #[test]
    fn prose_is_lowercased_and_stemmed_numbers_kept() {
        assert_eq!(
            analyze("Routing > Routers: HTTP 503 errors."),
            ["rout", "router", "http", "503", "error"]
        );
        assert_eq!(analyze("foo:bar \"(\" ) --"), ["foo:bar", "foo", "bar"]);
        assert!(analyze("").is_empty());
        assert_eq!(analyze(&"a".repeat(100)), Vec::<String>::new());
        assert_eq!(analyze("Zürich's naïve"), ["zürich", "s", "naïv"]);
    }
}
