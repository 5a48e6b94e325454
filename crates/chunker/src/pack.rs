//! Packing blocks into chunks: merge small blocks up to the target within a section, split
//! oversized ones at the coarsest boundary that fits (rows, lines, sentences, words, characters).

use std::ops::Range;

use crate::blocks::{Block, Kind, lines, trim_end, trim_start};
use crate::count::{Tokens, is_ws};

/// A candidate chunk body: `prefix + source[range] + suffix`. Prefixes and suffixes are the
/// re-assembled parts of split blocks (table header, code fence, list intro, admonition marker).
#[derive(Debug, Clone)]
pub(crate) struct Piece {
    pub prefix: String,
    pub range: Range<usize>,
    pub suffix: String,
    pub ptok: usize,
    pub stok: usize,
    /// Tokens of the whole body, excluding the model's specials.
    pub tokens: usize,
    /// First cells of the table rows in this piece.
    pub keys: Vec<String>,
}

/// A finished chunk body and the section it belongs to.
pub(crate) struct Emitted {
    pub path: Vec<String>,
    pub breadcrumb: String,
    pub bc_tokens: usize,
    pub piece: Piece,
}

pub(crate) struct Cx<'a> {
    pub tok: &'a Tokens<'a>,
    pub src: &'a str,
    pub max_tokens: usize,
    pub target_tokens: usize,
    pub overlap_tokens: usize,
    /// Extra tokens held back from every budget; only grows when a counter is not additive.
    pub slack: usize,
    pub title: String,
}

#[derive(Debug, Clone, Copy)]
struct Budget {
    first_max: usize,
    first_target: usize,
    max: usize,
    target: usize,
}

impl Budget {
    fn flat(max: usize) -> Budget {
        Budget {
            first_max: max,
            first_target: max,
            max,
            target: max,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
enum Level {
    Blank,
    Lines,
    Sentences,
    Words,
    Chars,
}

impl Level {
    fn next(self) -> Level {
        match self {
            Level::Blank => Level::Lines,
            Level::Lines => Level::Sentences,
            Level::Sentences => Level::Words,
            Level::Words | Level::Chars => Level::Chars,
        }
    }
}

impl<'a> Cx<'a> {
    pub fn piece(&self, range: Range<usize>) -> Piece {
        let tokens = self.tok.range(range.clone());
        Piece {
            prefix: String::new(),
            range,
            suffix: String::new(),
            ptok: 0,
            stok: 0,
            tokens,
            keys: vec![],
        }
    }

    fn str_tokens(&self, s: &str) -> usize {
        self.tok.counting.str_tokens(s)
    }

    fn mergeable(a: &Piece, b: &Piece) -> bool {
        a.suffix.is_empty() && b.prefix.is_empty() && b.range.start >= a.range.start
    }

    /// `a` followed by `b` as one verbatim span (only valid when [`Cx::mergeable`]).
    fn join(&self, a: &Piece, b: &Piece) -> Piece {
        let range = a.range.start..b.range.end.max(a.range.end);
        let tokens = a.ptok + self.tok.range(range.clone()) + b.stok;
        let mut keys = a.keys.clone();
        keys.extend(b.keys.iter().cloned());
        Piece {
            prefix: a.prefix.clone(),
            range,
            suffix: b.suffix.clone(),
            ptok: a.ptok,
            stok: b.stok,
            tokens,
            keys,
        }
    }

    fn add_prefix(p: &mut Piece, prefix: &str, ptok: usize) {
        if !prefix.is_empty() {
            p.prefix.insert_str(0, prefix);
            p.ptok += ptok;
            p.tokens += ptok;
        }
    }

    /// The breadcrumb for a heading path and its tokens, shortened so it never takes more than
    /// a quarter of the cap (titles and headings can be arbitrarily long).
    pub fn breadcrumb(&self, path: &[String]) -> (String, usize) {
        let mut parts: Vec<&str> = Vec::with_capacity(path.len() + 1);
        parts.push(&self.title);
        parts.extend(path.iter().map(String::as_str));
        let limit = self.max_tokens / 4;
        loop {
            let s = parts.join(" > ");
            let t = self.str_tokens(&s);
            if t <= limit {
                return (s, t);
            }
            if parts.len() > 2 {
                parts.remove(1);
                continue;
            }
            // Keep leading words that fit.
            let mut out = String::new();
            let mut used = 0;
            for w in s.split(is_ws).filter(|w| !w.is_empty()) {
                let n = self.str_tokens(w);
                if used + n > limit {
                    break;
                }
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(w);
                used += n;
            }
            return (out, used);
        }
    }

    /// Whole-document packing (top level: sections are delimited by headings).
    pub fn pack_document(&self, blocks: &[Block]) -> Vec<Emitted> {
        let mut p = Packer::new(self, None);
        p.set_section_budget();
        for b in blocks {
            p.push_block(b);
        }
        p.finish()
    }

    fn split_block(
        &self,
        block: &Block,
        budget: Budget,
        intro: Option<(&str, usize)>,
    ) -> Vec<Piece> {
        let r = block.range.clone();
        match &block.kind {
            Kind::Table => self.split_table(r, budget),
            Kind::FencedCode => self.split_code(r, budget),
            Kind::IndentedCode => self.split_text(r, budget, Level::Blank, false),
            _ if !block.children.is_empty() => {
                let prefix = match (&block.kind, intro) {
                    (Kind::List, Some((text, _))) => format!("{text}\n\n"),
                    (Kind::Container { marker }, _) => format!("{}\n\n", &self.src[marker.clone()]),
                    _ => String::new(),
                };
                self.split_children(&block.children, budget, &prefix)
            }
            Kind::Paragraph | Kind::Heading { .. } | Kind::Item => {
                self.split_text(r, budget, Level::Sentences, true)
            }
            _ => self.split_text(r, budget, Level::Blank, false),
        }
    }

    /// Packs child blocks; continuation pieces start with `prefix` (list intro, admonition marker).
    fn split_children(&self, children: &[Block], budget: Budget, prefix: &str) -> Vec<Piece> {
        let mut ptok = self.str_tokens(prefix);
        let mut prefix = prefix;
        if ptok * 3 > budget.max {
            prefix = "";
            ptok = 0;
        }
        let total = children
            .first()
            .zip(children.last())
            .map_or(0, |(f, l)| self.tok.range(f.range.start..l.range.end));
        let (first_soft, soft) = balance(total, budget, ptok);
        let inner = Budget {
            first_max: budget.first_max,
            first_target: first_soft,
            max: budget.max - ptok,
            target: soft,
        };
        let mut p = Packer::new(self, Some(inner));
        for c in children {
            p.push_block(c);
        }
        let mut pieces: Vec<Piece> = p.finish().into_iter().map(|e| e.piece).collect();
        for piece in pieces.iter_mut().skip(1) {
            Self::add_prefix(piece, prefix, ptok);
        }
        pieces
    }

    /// Splits between rows; every continuation piece repeats the header and delimiter rows.
    fn split_table(&self, r: Range<usize>, budget: Budget) -> Vec<Piece> {
        let ls = lines(self.src, r.clone());
        // The range may start before the table (a tiled first child holds its parent's marker).
        let Some(d) = (1..ls.len()).find(|&k| is_delimiter_row(&self.src[ls[k].clone()])) else {
            return self.split_text(r, budget, Level::Lines, false);
        };
        if d + 1 >= ls.len() {
            return self.split_text(r, budget, Level::Lines, false);
        }
        let header = format!("{}\n", self.tok.render(ls[d - 1].start..ls[d].end));
        let ptok = self.str_tokens(&header);
        if ptok * 2 > budget.max {
            return self.split_text(r, budget, Level::Lines, false);
        }
        let seg_max = budget.max - ptok;
        let mut segs = Vec::new();
        for k in d + 1..ls.len() {
            let start = if k == d + 1 { r.start } else { ls[k].start };
            let end = if k + 1 == ls.len() { r.end } else { ls[k].end };
            if self.src[start..end].trim().is_empty() {
                continue;
            }
            let mut seg = self.piece(start..end);
            if let Some(key) = row_key(&self.src[ls[k].clone()]) {
                seg.keys.push(key);
            }
            if seg.tokens > seg_max {
                let keys = seg.keys.clone();
                let mut sub =
                    self.split_text(seg.range, Budget::flat(seg_max), Level::Words, false);
                if let Some(first) = sub.first_mut() {
                    first.keys = keys;
                }
                segs.extend(sub);
            } else {
                segs.push(seg);
            }
        }
        self.greedy(segs, budget, &header, ptok, "", 0)
    }

    /// Splits between lines (preferring blank lines); every piece is re-fenced with the original
    /// opening fence line (language, attributes) and a closing fence.
    fn split_code(&self, r: Range<usize>, budget: Budget) -> Vec<Piece> {
        let ls = lines(self.src, r.clone());
        // The opening fence may follow a list marker or, for a tiled first child, a whole
        // admonition marker line.
        let found = ls.iter().enumerate().find_map(|(k, l)| {
            let line = &self.src[l.clone()];
            let col = line.find("```").or_else(|| line.find("~~~"))?;
            let before_ok = line[..col]
                .chars()
                .all(|c| c.is_whitespace() || "-*+>.)0123456789".contains(c));
            before_ok.then_some((k, col))
        });
        let Some((f, col)) = found.filter(|&(f, _)| f + 1 < ls.len()) else {
            return self.split_text(r, budget, Level::Blank, false);
        };
        let first = &self.src[ls[f].clone()];
        let fence_char = first.as_bytes()[col];
        let fence_len = first[col..]
            .bytes()
            .take_while(|&b| b == fence_char)
            .count();
        let fence: String = std::iter::repeat_n(fence_char as char, fence_len).collect();
        let last = self.src[ls[ls.len() - 1].clone()].trim();
        let closed = last.len() >= fence_len && last.bytes().all(|b| b == fence_char);
        let indent = " ".repeat(first[..col].chars().count());
        let prefix = format!("{indent}{}\n", &first[col..]);
        let suffix = format!("\n{indent}{fence}");
        let (ptok, stok) = (self.str_tokens(&prefix), self.str_tokens(&suffix));
        if (ptok + stok) * 2 > budget.max {
            return self.split_text(r, budget, Level::Lines, false);
        }
        let seg_max = budget.max - ptok - stok;
        let inner_end = if closed { ls.len() - 1 } else { ls.len() };
        // Segment starts: the block start, then every non-blank line that follows a blank one.
        let mut starts = vec![r.start];
        for k in f + 2..inner_end {
            let blank_before = self.src[ls[k - 1].clone()].trim().is_empty();
            if blank_before && !self.src[ls[k].clone()].trim().is_empty() {
                starts.push(ls[k].start);
            }
        }
        let mut segs = Vec::new();
        for (i, &s) in starts.iter().enumerate() {
            let e = starts
                .get(i + 1)
                .map_or(r.end, |&n| trim_end(self.src, s..n));
            let seg = self.piece(s..e);
            if seg.tokens > seg_max {
                segs.extend(self.split_text(s..e, Budget::flat(seg_max), Level::Lines, false));
            } else {
                segs.push(seg);
            }
        }
        let mut out = self.greedy(segs, budget, &prefix, ptok, &suffix, stok);
        if !closed {
            // The source never closes this fence; close it so the chunk stays balanced.
            if let Some(last) = out.last_mut().filter(|p| p.suffix.is_empty()) {
                last.suffix.push_str(&suffix);
                last.stok += stok;
                last.tokens += stok;
            }
        }
        out
    }

    /// Merges consecutive segments up to the target; pieces after the first get `prefix`, pieces
    /// before the last get `suffix`. Segments must already fit `max - ptok - stok`.
    fn greedy(
        &self,
        segs: Vec<Piece>,
        budget: Budget,
        prefix: &str,
        ptok: usize,
        suffix: &str,
        stok: usize,
    ) -> Vec<Piece> {
        let total = segs.iter().map(|s| s.tokens).sum();
        let (first_soft, soft) = balance(total, budget, ptok + stok);
        let mut out: Vec<Piece> = Vec::new();
        let mut cur: Option<Piece> = None;
        for s in segs {
            if let Some(c) = cur.take() {
                let limit = if out.is_empty() {
                    first_soft.saturating_sub(stok)
                } else {
                    soft
                };
                if Self::mergeable(&c, &s) {
                    let j = self.join(&c, &s);
                    if j.tokens <= limit {
                        cur = Some(j);
                        continue;
                    }
                }
                out.push(c);
            }
            cur = Some(s);
        }
        out.extend(cur);
        let n = out.len();
        for (i, p) in out.iter_mut().enumerate() {
            if i > 0 {
                Self::add_prefix(p, prefix, ptok);
            }
            if i + 1 < n && !suffix.is_empty() {
                p.suffix.push_str(suffix);
                p.stok += stok;
                p.tokens += stok;
            }
        }
        out
    }

    /// Splits verbatim text at the coarsest boundaries that fit: blank lines, lines, sentences,
    /// words, then characters (counted exactly). `overlap` repeats up to two trailing sentences of
    /// the previous piece, within `overlap_tokens`.
    fn split_text(
        &self,
        r: Range<usize>,
        budget: Budget,
        level: Level,
        overlap: bool,
    ) -> Vec<Piece> {
        let max = budget.max.max(1);
        if level == Level::Chars {
            return self.split_chars(r, max);
        }
        let segs = self.boundaries(r.clone(), level);
        if segs.len() <= 1 {
            return self.split_text(r, budget, level.next(), overlap);
        }
        let mut pieces = Vec::new();
        for s in &segs {
            let p = self.piece(s.clone());
            if p.tokens > max {
                pieces.extend(self.split_text(s.clone(), Budget::flat(max), level.next(), false));
            } else {
                pieces.push(p);
            }
        }
        let overlap = overlap && level == Level::Sentences && self.overlap_tokens > 0;
        // Leave room on later pieces for the sentences repeated from the previous one.
        let room = if overlap {
            self.overlap_tokens.min(max / 4)
        } else {
            0
        };
        let greedy_budget = Budget {
            max: max - room,
            first_max: budget.first_max.min(max - room),
            ..budget
        };
        let mut out = self.greedy(pieces, greedy_budget, "", 0, "", 0);
        if overlap {
            self.add_overlap(&mut out, &segs, max);
        }
        out
    }

    fn add_overlap(&self, out: &mut [Piece], segs: &[Range<usize>], max: usize) {
        for k in 1..out.len() {
            let start = out[k].range.start;
            let end = out[k].range.end;
            let before = segs.partition_point(|s| s.start < start);
            let mut new_start = start;
            for j in (before.saturating_sub(2)..before).rev() {
                let cand = segs[j].start;
                if cand >= out[k - 1].range.start
                    && self.tok.range(cand..start) <= self.overlap_tokens
                    && self.tok.range(cand..end) <= max
                {
                    new_start = cand;
                } else {
                    break;
                }
            }
            if new_start < start {
                let p = &mut out[k];
                p.range.start = new_start;
                p.tokens = p.ptok + self.tok.range(p.range.clone()) + p.stok;
            }
        }
    }

    /// Last resort inside a huge word: the largest prefix that fits, counted exactly.
    fn split_chars(&self, r: Range<usize>, max: usize) -> Vec<Piece> {
        let src = self.src;
        let ceil = |mut i: usize| {
            while i < r.end && !src.is_char_boundary(i) {
                i += 1;
            }
            i.min(r.end)
        };
        let mut out = Vec::new();
        let mut pos = r.start;
        while pos < r.end {
            let fits = |e: usize| self.tok.range(pos..e) <= max;
            let min_end = ceil(pos + 1);
            if fits(r.end) {
                out.push(self.piece(pos..r.end));
                break;
            }
            // Exponential then binary search for the last fitting end.
            let (mut good, mut bad) = (min_end, r.end);
            let mut step = 64;
            loop {
                let e = ceil(pos + step);
                if e >= bad {
                    break;
                }
                if fits(e) {
                    good = e;
                    step *= 2;
                } else {
                    bad = e;
                    break;
                }
            }
            while bad - good > 1 {
                let mid = ceil(good + (bad - good) / 2);
                if mid >= bad {
                    break;
                }
                if fits(mid) {
                    good = mid;
                } else {
                    bad = mid;
                }
            }
            out.push(self.piece(pos..good));
            pos = good;
        }
        out
    }

    /// Tiles `r` into segments at boundaries of `level` (each trimmed of trailing whitespace).
    fn boundaries(&self, r: Range<usize>, level: Level) -> Vec<Range<usize>> {
        let text = &self.src[r.clone()];
        let mut starts = vec![r.start];
        match level {
            Level::Blank | Level::Lines => {
                let mut prev_blank = false;
                let mut pos = r.start;
                for line in text.split_inclusive('\n') {
                    let blank = line.trim().is_empty();
                    let split = match level {
                        Level::Blank => prev_blank && !blank,
                        _ => !blank,
                    };
                    if split && pos > r.start {
                        starts.push(pos);
                    }
                    prev_blank = blank;
                    pos += line.len();
                }
            }
            Level::Sentences => {
                let b = text.as_bytes();
                let mut i = 0;
                while i < b.len() {
                    let c = b[i];
                    i += 1;
                    if !matches!(c, b'.' | b'!' | b'?') {
                        continue;
                    }
                    let mut j = i;
                    while j < b.len()
                        && matches!(b[j], b')' | b'"' | b'\'' | b']' | b'*' | b'_' | b'`')
                    {
                        j += 1;
                    }
                    let ws_start = j;
                    while j < b.len() && b[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if j == ws_start || j >= b.len() {
                        continue;
                    }
                    let next = text[j..].chars().next().unwrap_or(' ');
                    if !next.is_lowercase() {
                        starts.push(r.start + j);
                        i = j;
                    }
                }
            }
            Level::Words => {
                let mut prev_ws = false;
                for (i, c) in text.char_indices() {
                    let ws = is_ws(c);
                    if prev_ws && !ws && i > 0 {
                        starts.push(r.start + i);
                    }
                    prev_ws = ws;
                }
            }
            Level::Chars => {}
        }
        let mut out = Vec::with_capacity(starts.len());
        for (i, &s) in starts.iter().enumerate() {
            let e = starts
                .get(i + 1)
                .map_or(r.end, |&n| trim_end(self.src, s..n));
            if i == 0 || trim_start(self.src, s..e) < e {
                out.push(s..e);
            }
        }
        out
    }
}

pub(crate) fn is_delimiter_row(line: &str) -> bool {
    let t = line.trim();
    t.contains('-')
        && t.contains(['|', ':', '-'])
        && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
}

/// Soft limits (first piece, later pieces) that split `total` tokens into the fewest pieces of
/// even size: an oversized block is cut as few times as the cap forces, so a procedure keeps
/// as many consecutive steps together as fit. `overhead` is repeated on every later piece.
fn balance(total: usize, b: Budget, overhead: usize) -> (usize, usize) {
    let lead = b.max.saturating_sub(b.first_max);
    let hard = b.max.saturating_sub(overhead).max(1);
    let total = total + lead;
    let n = total.div_ceil(hard).max(1);
    let even = total.div_ceil(n);
    let soft = (even + even / 8).min(hard);
    (soft.saturating_sub(lead).min(b.first_max), soft)
}

/// The first cell of a table row, without markup: the row's entity key.
fn row_key(line: &str) -> Option<String> {
    let t = line.trim().strip_prefix('|').unwrap_or(line.trim());
    let cell = t.split('|').next()?;
    let mut out = String::new();
    let mut in_tag = false;
    for c in cell.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            '`' | '*' => {}
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out.trim().to_string();
    (!out.is_empty() && !out.bytes().all(|b| matches!(b, b'-' | b':' | b' '))).then_some(out)
}

struct AccItem {
    piece: Piece,
    heading: bool,
    /// A paragraph ending with ':' that may introduce a following list.
    intro: bool,
}

/// Greedy packer over sibling blocks. At the top level, headings start sections and budgets
/// depend on the breadcrumb; nested (splitting a block's children) budgets are fixed.
struct Packer<'c, 'a> {
    cx: &'c Cx<'a>,
    nested: Option<Budget>,
    headings: Vec<(u8, String)>,
    section: (Vec<String>, String, usize),
    max: usize,
    target: usize,
    acc: Vec<AccItem>,
    joined: Option<Piece>,
    out: Vec<Emitted>,
}

impl<'c, 'a> Packer<'c, 'a> {
    fn new(cx: &'c Cx<'a>, nested: Option<Budget>) -> Self {
        Packer {
            cx,
            nested,
            headings: Vec::new(),
            section: (Vec::new(), String::new(), 0),
            max: 0,
            target: 0,
            acc: Vec::new(),
            joined: None,
            out: Vec::new(),
        }
    }

    fn set_section_budget(&mut self) {
        let cx = self.cx;
        let path: Vec<String> = self
            .headings
            .iter()
            .enumerate()
            .filter(|(i, (_, t))| !(*i == 0 && *t == cx.title))
            .map(|(_, (_, t))| t.clone())
            .collect();
        let (bc, bct) = cx.breadcrumb(&path);
        let specials = cx.tok.counting.specials;
        let fixed = specials + bct + cx.slack;
        self.max = cx.max_tokens.saturating_sub(fixed).max(1);
        self.target = cx.target_tokens.saturating_sub(fixed).clamp(1, self.max);
        self.section = (path, bc, bct);
    }

    /// (max, target) for the piece being built.
    fn budgets(&self) -> (usize, usize) {
        match self.nested {
            Some(b) if self.out.is_empty() => (b.first_max, b.first_target),
            Some(b) => (b.max, b.target),
            None => (self.max, self.target),
        }
    }

    fn heading_only(&self) -> bool {
        !self.acc.is_empty() && self.acc.iter().all(|a| a.heading)
    }

    /// Only headings and intro paragraphs: text that must not end a chunk.
    fn lead_only(&self) -> bool {
        !self.acc.is_empty() && self.acc.iter().all(|a| a.heading || a.intro)
    }

    fn acc_tokens(&self) -> usize {
        self.joined.as_ref().map_or(0, |p| p.tokens)
    }

    /// Whether `p` can join the accumulation within `max`.
    fn fits_with_acc(&self, p: &Piece, max: usize) -> bool {
        self.joined
            .as_ref()
            .is_some_and(|j| Cx::mergeable(j, p) && self.cx.join(j, p).tokens <= max)
    }

    fn push(&mut self, item: AccItem) {
        self.joined = Some(match self.joined.take() {
            Some(j) => self.cx.join(&j, &item.piece),
            None => item.piece.clone(),
        });
        self.acc.push(item);
    }

    fn rejoin(&mut self) {
        self.joined = None;
        let items = std::mem::take(&mut self.acc);
        for it in items {
            self.push(it);
        }
    }

    fn flush(&mut self) {
        if let Some(piece) = self.joined.take() {
            let (path, bc, bct) = self.section.clone();
            self.out.push(Emitted {
                path,
                breadcrumb: bc,
                bc_tokens: bct,
                piece,
            });
        }
        self.acc.clear();
    }

    fn push_block(&mut self, block: &Block) {
        let cx = self.cx;
        if let (None, Kind::Heading { level, text }) = (&self.nested, &block.kind) {
            let p = cx.piece(block.range.clone());
            // Headings lead at most half a chunk, so text always fits beside them; longer runs
            // of empty headings (or absurdly long ones) are emitted on their own.
            if !self.acc.is_empty()
                && (!self.heading_only() || !self.fits_with_acc(&p, self.max / 2))
            {
                self.flush();
            }
            while self.headings.last().is_some_and(|(l, _)| *l >= *level) {
                self.headings.pop();
            }
            self.headings.push((*level, text.clone()));
            self.set_section_budget();
            let pieces = if p.tokens > self.max / 2 {
                cx.split_text(
                    p.range,
                    Budget::flat((self.max / 2).max(1)),
                    Level::Sentences,
                    false,
                )
            } else {
                vec![p]
            };
            for (i, piece) in pieces.into_iter().enumerate() {
                if i > 0 {
                    self.flush();
                }
                self.push(AccItem {
                    piece,
                    heading: true,
                    intro: false,
                });
            }
            return;
        }
        let (max, target) = self.budgets();
        let p = cx.piece(block.range.clone());
        let intro =
            block.kind == Kind::Paragraph && cx.src[block.range.clone()].trim_end().ends_with(':');
        if let Some(j) = &self.joined {
            // A lead (headings, an intro ending with ':') may take the block up to the cap.
            let limit = if self.lead_only() { max } else { target };
            if Cx::mergeable(j, &p) && cx.join(j, &p).tokens <= limit {
                self.push(AccItem {
                    piece: p,
                    heading: false,
                    intro,
                });
                return;
            }
        }
        // An intro paragraph moves forward to the block it introduces.
        if !self.lead_only() && self.acc.last().is_some_and(|a| a.intro) {
            if let Some(item) = self.acc.pop() {
                self.rejoin();
                self.flush();
                self.push(item);
            }
            let (max, _) = self.budgets();
            if self.fits_with_acc(&p, max) {
                self.push(AccItem {
                    piece: p,
                    heading: false,
                    intro,
                });
                return;
            }
        }
        if !self.lead_only() && p.tokens <= max {
            self.flush();
            // Budgets may differ for the next piece (nested first vs later).
            let (max, _) = self.budgets();
            if p.tokens <= max {
                self.push(AccItem {
                    piece: p,
                    heading: false,
                    intro,
                });
                return;
            }
        }
        // Oversized, or too big to sit with its lead (which must not be a chunk alone): split.
        // A small accumulation stays to take the first piece.
        if !self.lead_only() && self.acc_tokens() > target / 2 {
            self.flush();
        }
        let mut intro_text = None;
        if block.kind == Kind::List
            && let Some(last) = self.acc.last().filter(|a| a.intro)
        {
            intro_text = self.intro_text(last.piece.range.clone(), max);
        }
        let (max, target) = self.budgets();
        let used = self.acc_tokens();
        let budget = Budget {
            first_max: max.saturating_sub(used),
            first_target: target.saturating_sub(used),
            max: self.nested.map_or(max, |b| b.max),
            target: self.nested.map_or(target, |b| b.target),
        };
        let intro_ref = intro_text.as_ref().map(|(s, t)| (s.as_str(), *t));
        let pieces = cx.split_block(block, budget, intro_ref);
        for (i, piece) in pieces.into_iter().enumerate() {
            if i == 0 && self.fits_with_acc(&piece, self.budgets().0) {
                self.push(AccItem {
                    piece,
                    heading: false,
                    intro: false,
                });
                continue;
            }
            self.flush();
            self.push(AccItem {
                piece,
                heading: false,
                intro: false,
            });
        }
    }

    /// The sentence introducing a list, repeated on every piece of it: the whole paragraph when
    /// short, else its last sentence, else nothing.
    fn intro_text(&self, r: Range<usize>, max: usize) -> Option<(String, usize)> {
        let cx = self.cx;
        let limit = max / 4;
        let t = cx.tok.range(r.clone());
        if t <= limit {
            return Some((cx.src[r].trim().to_string(), t));
        }
        let sentences = cx.boundaries(r, Level::Sentences);
        let last = sentences.last()?.clone();
        let t = cx.tok.range(last.clone());
        (t <= limit).then(|| (cx.src[last].trim().to_string(), t))
    }

    fn finish(mut self) -> Vec<Emitted> {
        if self.nested.is_none() && self.heading_only() && !self.out.is_empty() {
            // A trailing heading with nothing under it joins the previous chunk when it fits.
            let last = self.out.len() - 1;
            if let Some(j) = &self.joined {
                let prev = &self.out[last];
                let room = self
                    .cx
                    .max_tokens
                    .saturating_sub(self.cx.tok.counting.specials + prev.bc_tokens + self.cx.slack);
                if Cx::mergeable(&prev.piece, j) {
                    let merged = self.cx.join(&prev.piece, j);
                    if merged.tokens <= room {
                        self.out[last].piece = merged;
                        self.joined = None;
                        self.acc.clear();
                    }
                }
            }
        }
        self.flush();
        self.out
    }
}
