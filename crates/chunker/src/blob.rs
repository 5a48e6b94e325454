//! Unembeddable blobs: data URIs, base64 blocks and minified lines are left out of the text that
//! gets chunked and embedded, replaced by a short placeholder.
//!
//! Such runs carry no meaning a sentence embedder can use, and they are costly: one 256 KB
//! base64 "word" is tens of thousands of word-piece tokens, hundreds of junk chunks, and splitting
//! inside a word counts tokens of ever-shorter suffixes. Finding them is one linear pass; the
//! document is then chunked with placeholders, and byte ranges are mapped back to the source.

use std::borrow::Cow;
use std::ops::Range;

use crate::count::is_ws;

/// A run without whitespace at least this long is a blob (real words, paths and URLs are shorter).
pub(crate) const BLOB_WORD_BYTES: usize = 1024;
/// Lines of base64/hex at least this long, without whitespace, ...
const ENCODED_LINE_BYTES: usize = 40;
/// ... this many in a row, of at least [`BLOB_WORD_BYTES`] in all, form an encoded block
/// (wrapped base64, hex dumps; a short PEM public key in a code sample stays).
const ENCODED_BLOCK_LINES: usize = 8;
/// A line this long whose words average [`MINIFIED_WORD_BYTES`] or more is minified code/data
/// (prose averages about 6 bytes a word, code and JSON about 8).
const MINIFIED_LINE_BYTES: usize = 4096;
const MINIFIED_WORD_BYTES: usize = 20;

/// A blob found in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Blob {
    pub range: Range<usize>,
    pub what: &'static str,
}

/// Blobs of `source[from..]`, sorted and disjoint.
pub(crate) fn find(source: &str, from: usize) -> Vec<Blob> {
    let mut blobs: Vec<Blob> = Vec::new();
    // Consecutive encoded lines (trimmed ranges) not yet classified.
    let mut encoded: Vec<Range<usize>> = Vec::new();
    let mut pos = from;
    for line in source[from..].split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        let lead = content.len() - content.trim_start_matches(is_ws).len();
        let trimmed = pos + lead..pos + content.trim_end_matches(is_ws).len().max(lead);
        let range = pos..pos + content.len();
        pos += line.len();
        let text = &source[trimmed.clone()];
        let is_encoded = text.len() >= ENCODED_LINE_BYTES
            && text.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_')
            });
        if is_encoded {
            encoded.push(trimmed);
            continue;
        }
        flush_encoded(source, &mut encoded, &mut blobs);
        if content.len() >= BLOB_WORD_BYTES {
            let mut long = Vec::new();
            long_words(source, range, &mut long);
            // Judged on what the long words leave: a paragraph holding one data URI keeps its
            // prose, a line of minified code goes whole.
            let rest_bytes = text.len() - long.iter().map(|b| b.range.len()).sum::<usize>();
            let rest_words = text.split(is_ws).filter(|w| !w.is_empty()).count() - long.len();
            if rest_bytes >= MINIFIED_LINE_BYTES
                && rest_bytes / rest_words.max(1) >= MINIFIED_WORD_BYTES
            {
                blobs.push(Blob {
                    range: trimmed,
                    what: "minified line",
                });
            } else {
                blobs.extend(long);
            }
        }
    }
    flush_encoded(source, &mut encoded, &mut blobs);
    blobs
}

/// Classifies a run of encoded lines: a block when long enough, else only over-long lines.
fn flush_encoded(source: &str, lines: &mut Vec<Range<usize>>, blobs: &mut Vec<Blob>) {
    let bytes = lines
        .first()
        .zip(lines.last())
        .map_or(0, |(f, l)| l.end - f.start);
    if lines.len() >= ENCODED_BLOCK_LINES && bytes >= BLOB_WORD_BYTES {
        blobs.push(Blob {
            range: lines[0].start..lines[lines.len() - 1].end,
            what: "base64/hex block",
        });
    } else {
        for line in lines.iter() {
            long_words(source, line.clone(), blobs);
        }
    }
    lines.clear();
}

/// Whitespace-free runs of [`BLOB_WORD_BYTES`] or more inside `source[range]`.
fn long_words(source: &str, range: Range<usize>, blobs: &mut Vec<Blob>) {
    let text = &source[range.clone()];
    let mut start: Option<usize> = None;
    let push = |s: usize, e: usize, blobs: &mut Vec<Blob>| {
        if e - s >= BLOB_WORD_BYTES {
            let word = &text[s..e];
            blobs.push(Blob {
                range: range.start + s..range.start + e,
                what: if word.contains("data:") {
                    "data URI"
                } else {
                    "run of text without whitespace"
                },
            });
        }
    };
    for (i, c) in text.char_indices() {
        if is_ws(c) {
            if let Some(s) = start.take() {
                push(s, i, blobs);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        push(s, text.len(), blobs);
    }
}

/// The source with every blob replaced by a placeholder, and the way back to source offsets.
pub(crate) struct Sanitized<'a> {
    pub text: Cow<'a, str>,
    /// Per blob: (placeholder range in `text`, blob range in the source).
    map: Vec<(Range<usize>, Range<usize>)>,
}

impl<'a> Sanitized<'a> {
    /// Replaces `blobs` (sorted, disjoint) in `source`.
    pub fn new(source: &'a str, blobs: &[Blob]) -> Sanitized<'a> {
        if blobs.is_empty() {
            return Sanitized {
                text: Cow::Borrowed(source),
                map: Vec::new(),
            };
        }
        let mut text = String::with_capacity(source.len().min(1 << 20));
        let mut map = Vec::with_capacity(blobs.len());
        let mut pos = 0;
        for blob in blobs {
            text.push_str(&source[pos..blob.range.start]);
            let start = text.len();
            text.push_str(&placeholder(blob));
            map.push((start..text.len(), blob.range.clone()));
            pos = blob.range.end;
        }
        text.push_str(&source[pos..]);
        Sanitized {
            text: Cow::Owned(text),
            map,
        }
    }

    /// `range` of the sanitized text as a range of the source; a placeholder maps to its blob.
    pub fn to_source(&self, range: Range<usize>) -> Range<usize> {
        if self.map.is_empty() {
            return range;
        }
        self.offset(range.start, false)..self.offset(range.end, true)
    }

    fn offset(&self, x: usize, is_end: bool) -> usize {
        let i = self.map.partition_point(|(ph, _)| ph.start <= x);
        if i == 0 {
            return x;
        }
        let (ph, blob) = &self.map[i - 1];
        if x < ph.end {
            // Inside a placeholder: a range covering any of it covers the whole blob.
            return if is_end && x > ph.start {
                blob.end
            } else {
                blob.start
            };
        }
        x - ph.end + blob.end
    }
}

fn placeholder(blob: &Blob) -> String {
    format!("[{} of {} bytes omitted]", blob.what, blob.range.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_data_uris_encoded_blocks_and_minified_lines_only() {
        let uri = format!("![shot](data:image/png;base64,{})", "QUJD".repeat(2000));
        let pem: String = (0..20)
            .map(|_| format!("{}\n", "TUlJQ".repeat(13)))
            .collect();
        let minified = "x.a=function(e,t){return\"object\"==typeof e&&t(e)}; ".repeat(300);
        let mixed = format!(
            "See ![a](data:image/png;base64,{}) for the {}",
            "QUJD".repeat(500),
            "layout. ".repeat(600)
        );
        let prose = "Routers connect requests to services. ".repeat(300);
        let src = format!("# T\n\n{uri}\n\n{pem}\n{minified}\n\n{prose}\n\n{mixed}\n");
        let blobs = find(&src, 0);
        let kinds: Vec<&str> = blobs.iter().map(|b| b.what).collect();
        assert_eq!(
            kinds,
            ["data URI", "base64/hex block", "minified line", "data URI"]
        );
        assert!(src[blobs[3].range.clone()].starts_with("![a](data:"));
        assert!(src[blobs[0].range.clone()].starts_with("![shot](data:"));
        assert!(src[blobs[1].range.clone()].starts_with("TUlJ"));
        assert!(src[blobs[1].range.clone()].ends_with("TUlJQ"));
    }

    #[test]
    fn ranges_map_back_to_the_source() {
        let src = format!("a {} b {} c", "x".repeat(2000), "y".repeat(3000));
        let blobs = find(&src, 0);
        assert_eq!(blobs.len(), 2);
        let s = Sanitized::new(&src, &blobs);
        let text = s.text.as_ref();
        assert!(text.starts_with("a [run of text without whitespace of 2000 bytes omitted] b"));
        let b = text.find(" b ").unwrap() + 1;
        assert_eq!(&src[s.to_source(b..b + 1)], "b");
        assert_eq!(s.to_source(0..text.len()), 0..src.len());
        let c = text.len() - 1;
        assert_eq!(&src[s.to_source(c..c + 1)], "c");
        let ph = 2..text.find(" b ").unwrap();
        assert_eq!(s.to_source(ph), 2..2002);
    }
}
