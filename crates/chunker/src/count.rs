//! Exact token accounting without re-tokenizing candidate merges.
//!
//! BERT's normalizer and pre-tokenizer split on whitespace before word-piece runs, so the count of
//! a text is the count of its specials plus the sum of its whitespace-separated words' counts.
//! Each distinct word is sent to the [`TokenCounter`] once (cached across documents); any byte
//! range is then counted in O(log n) from prefix sums over the document's words.

// Word lookups dominate the warm path; SipHash was a fifth of it.
use foldhash::{HashMap, HashMapExt};
use std::ops::Range;
use std::sync::RwLock;

use crate::TokenCounter;

/// Words longer than this are counted but not cached: they are rare and would bloat the cache.
const MAX_CACHED_WORD: usize = 512;
/// The shared cache is cleared past this many entries, bounding memory on adversarial input.
const MAX_CACHE_ENTRIES: usize = 1 << 20;

/// Whitespace exactly as BERT's pre-tokenizer sees it. The normalizer deletes control characters
/// (VT, FF, NEL) before splitting, so those glue words together rather than separate them.
#[inline]
pub(crate) fn is_ws(c: char) -> bool {
    c.is_whitespace() && !matches!(c, '\u{0B}' | '\u{0C}' | '\u{85}')
}

/// Byte ranges of the whitespace-separated words of `text`, offset by `base`.
pub(crate) fn word_spans(text: &str, base: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in text.char_indices() {
        if is_ws(c) {
            if let Some(s) = start.take() {
                out.push(base + s..base + i);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        out.push(base + s..base + text.len());
    }
    out
}

/// Per-chunker state: the counter, its special-token overhead and a shared word cache.
pub(crate) struct Counting {
    pub counter: std::sync::Arc<dyn TokenCounter>,
    /// Tokens the counter adds to any text (count of the empty string): [CLS] + [SEP] for BERT.
    pub specials: usize,
    /// Whether word counts add up (probed at construction). When false every range is counted whole.
    pub additive: bool,
    /// Whether counts also add up over ASCII punctuation (BERT isolates punctuation before
    /// word-piece), so a word's count is the sum of its parts' counts.
    punct_additive: bool,
    cache: RwLock<HashMap<Box<str>, u32>>,
}

impl Counting {
    pub fn new(counter: std::sync::Arc<dyn TokenCounter>) -> Counting {
        let specials = counter.count("");
        let additive = probe_additive(counter.as_ref(), specials);
        let punct_additive = additive && probe_punct_additive(counter.as_ref(), specials);
        Counting {
            counter,
            specials,
            additive,
            punct_additive,
            cache: RwLock::new(HashMap::new()),
        }
    }

    /// Tokens of `s` excluding specials, counted directly.
    pub fn direct(&self, s: &str) -> usize {
        if s.trim_matches(is_ws).is_empty() {
            return 0;
        }
        self.counter.count(s).saturating_sub(self.specials)
    }

    /// Tokens of each word in `words` (slices of `text` at `base`), reading and filling the cache
    /// with one lock acquisition each way.
    fn word_counts(&self, text: &str, base: usize, words: &[Range<usize>]) -> Vec<u32> {
        let mut out = vec![0u32; words.len()];
        let mut local: HashMap<&str, u32> = HashMap::new();
        // Words not cached, each with the positions it occurs at.
        let mut missing: HashMap<&str, Vec<usize>> = HashMap::new();
        {
            let cache = self.cache.read().unwrap_or_else(|e| e.into_inner());
            for (i, w) in words.iter().enumerate() {
                let s = &text[w.start - base..w.end - base];
                if let Some(&n) = local.get(s) {
                    out[i] = n;
                } else if let Some(&n) = cache.get(s) {
                    local.insert(s, n);
                    out[i] = n;
                } else {
                    missing.entry(s).or_default().push(i);
                }
            }
        }
        if missing.is_empty() {
            return out;
        }
        // Long words (URLs, anchors) are mostly unique, but their punctuation-separated parts
        // repeat: count and cache the parts when the counter splits at punctuation anyway.
        let mut parts: HashMap<&str, u32> = HashMap::new();
        if self.punct_additive {
            let cache = self.cache.read().unwrap_or_else(|e| e.into_inner());
            for w in missing.keys() {
                for p in punct_parts(w) {
                    if let Some(&n) = cache.get(p) {
                        parts.insert(p, n);
                    }
                }
            }
        }
        let mut new_entries: Vec<(&str, u32)> = Vec::new();
        for (w, positions) in &missing {
            let n = if self.punct_additive {
                let mut sum = 0u32;
                for p in punct_parts(w) {
                    let n = match parts.get(p) {
                        Some(&n) => n,
                        None => {
                            let n = self.direct(p) as u32;
                            parts.insert(p, n);
                            new_entries.push((p, n));
                            n
                        }
                    };
                    sum = sum.saturating_add(n);
                }
                sum
            } else {
                self.direct(w) as u32
            };
            new_entries.push((w, n));
            for &i in positions {
                out[i] = n;
            }
        }
        let mut cache = self.cache.write().unwrap_or_else(|e| e.into_inner());
        if cache.len() + new_entries.len() > MAX_CACHE_ENTRIES {
            cache.clear();
        }
        for (s, n) in new_entries {
            if s.len() <= MAX_CACHED_WORD {
                cache.insert(s.into(), n);
            }
        }
        out
    }

    /// Tokens of an arbitrary string (breadcrumbs, repeated headers), excluding specials.
    pub fn str_tokens(&self, s: &str) -> usize {
        if !self.additive {
            return self.direct(s);
        }
        let words = word_spans(s, 0);
        self.word_counts(s, 0, &words)
            .iter()
            .map(|&n| n as usize)
            .sum()
    }
}

/// Splits a word into maximal runs without ASCII punctuation and single punctuation characters.
fn punct_parts(w: &str) -> impl Iterator<Item = &str> {
    let b = w.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= b.len() {
            return None;
        }
        let start = i;
        if b[i].is_ascii_punctuation() {
            i += 1;
        } else {
            while i < b.len() && !b[i].is_ascii_punctuation() {
                i += 1;
            }
        }
        Some(&w[start..i])
    })
}

/// Checks whether splitting words at ASCII punctuation keeps counts additive.
fn probe_punct_additive(counter: &dyn TokenCounter, specials: usize) -> bool {
    const PROBES: &[&str] = &[
        "href=\"#opt-entrypoints-name-address\"",
        "entryPoints.web.address=:80",
        "`--ping.terminatingStatusCode=204`",
        "don't",
        "x.y",
        "(aé)[日本]{Ü}",
        "https://doc.traefik.io/traefik/v3.7/",
    ];
    PROBES.iter().all(|w| {
        let parts: Vec<&str> = punct_parts(w).collect();
        let sum: usize = parts.iter().map(|p| counter.count(p) - specials).sum();
        counter.count(w) == sum + specials
    })
}

/// Checks on a few strings whether count(a + ws + b) == count(a) + count(b) - specials.
fn probe_additive(counter: &dyn TokenCounter, specials: usize) -> bool {
    const PROBES: &[(&str, &str)] = &[
        ("hello", "world"),
        ("Traefik's", "entryPoints.web.address=:80"),
        ("| Field |", "`--ping`"),
        ("naïve café", "日本語 text"),
        ("a", "b c d e f g"),
    ];
    PROBES.iter().all(|(a, b)| {
        let joined = format!("{a}\n\n{b}");
        counter.count(&joined) + specials == counter.count(a) + counter.count(b)
    })
}

/// Word table of one document: counts any byte range of the source exactly.
pub(crate) struct Tokens<'a> {
    pub counting: &'a Counting,
    source: &'a str,
    starts: Vec<usize>,
    ends: Vec<usize>,
    /// `cum[i]` = tokens of words `0..i`.
    cum: Vec<u64>,
    /// Sorted, disjoint source ranges embedded as a replacement text (padded table delimiter
    /// rows, whose dashes cost one token each). Applied only when a range contains them whole.
    rewrites: Vec<(Range<usize>, String)>,
    /// `rw_cum[i]` = token change of rewrites `0..i`.
    rw_cum: Vec<i64>,
}

impl<'a> Tokens<'a> {
    /// Builds the table over `source[body]`.
    pub fn new(
        counting: &'a Counting,
        source: &'a str,
        body: Range<usize>,
        mut rewrites: Vec<(Range<usize>, String)>,
    ) -> Tokens<'a> {
        rewrites.sort_by_key(|(r, _)| r.start);
        let mut last_end = 0;
        rewrites.retain(|(r, _)| {
            let keep = r.start >= last_end && r.start < r.end && r.end <= source.len();
            if keep {
                last_end = r.end;
            }
            keep
        });
        let mut rw_cum = Vec::with_capacity(rewrites.len() + 1);
        rw_cum.push(0i64);
        let mut acc = 0i64;
        for (r, new) in &rewrites {
            acc += counting.str_tokens(new) as i64 - counting.str_tokens(&source[r.clone()]) as i64;
            rw_cum.push(acc);
        }
        if !counting.additive {
            let (starts, ends, cum) = (vec![], vec![], vec![0]);
            return Tokens {
                counting,
                source,
                starts,
                ends,
                cum,
                rewrites,
                rw_cum,
            };
        }
        let text = &source[body.clone()];
        let words = word_spans(text, body.start);
        let counts = counting.word_counts(text, body.start, &words);
        let mut cum = Vec::with_capacity(words.len() + 1);
        let mut acc = 0u64;
        cum.push(0);
        for n in counts {
            acc += u64::from(n);
            cum.push(acc);
        }
        let (starts, ends) = words.into_iter().map(|r| (r.start, r.end)).unzip();
        Tokens {
            counting,
            source,
            starts,
            ends,
            cum,
            rewrites,
            rw_cum,
        }
    }

    /// Indices `i..j` of the rewrites lying wholly inside `r`.
    fn rewrites_in(&self, r: &Range<usize>) -> Range<usize> {
        let i = self.rewrites.partition_point(|(w, _)| w.start < r.start);
        let j = self
            .rewrites
            .partition_point(|(w, _)| w.end <= r.end)
            .max(i);
        i..j
    }

    /// The embedded form of `source[r]`: verbatim except for rewrites lying wholly inside.
    pub fn render(&self, r: Range<usize>) -> String {
        let k = self.rewrites_in(&r);
        let mut out = String::with_capacity(r.len());
        let mut pos = r.start;
        for (w, new) in &self.rewrites[k] {
            out.push_str(&self.source[pos..w.start]);
            out.push_str(new);
            pos = w.end;
        }
        out.push_str(&self.source[pos..r.end.max(pos)]);
        out
    }

    /// Exact tokens of `source[r]` excluding specials. A word cut by the range is counted directly.
    pub fn range(&self, r: Range<usize>) -> usize {
        if r.start >= r.end {
            return 0;
        }
        if !self.counting.additive {
            return self.counting.direct(&self.render(r));
        }
        let k = self.rewrites_in(&r);
        let delta = self.rw_cum[k.end] - self.rw_cum[k.start];
        (self.words(r) as i64 + delta).max(0) as usize
    }

    /// Tokens of the verbatim `source[r]` (no rewrites), additive mode only.
    fn words(&self, r: Range<usize>) -> usize {
        // Words overlapping r: i..j.
        let i = self.ends.partition_point(|&e| e <= r.start);
        let j = self.starts.partition_point(|&s| s < r.end);
        if i >= j {
            return 0;
        }
        let mut total = (self.cum[j] - self.cum[i]) as usize;
        let mut fix = |k: usize| {
            let (ws, we) = (self.starts[k], self.ends[k]);
            if ws < r.start || we > r.end {
                let whole = (self.cum[k + 1] - self.cum[k]) as usize;
                let part = &self.source[ws.max(r.start)..we.min(r.end)];
                total = total - whole + self.counting.direct(part);
            }
        };
        fix(i);
        if j - 1 != i {
            fix(j - 1);
        }
        total
    }
}
