//! Packing blocks into chunks: merge small blocks of a section up to the target, start a new
//! section at every heading, keep leads (headings, list intros) with what follows them, and hand
//! blocks too big for the budget to the splitter.

use std::ops::Range;

use crate::blocks::{Block, Kind};
use crate::count::{Tokens, is_ws};
use crate::piece::Piece;
use crate::split::{Budget, Level};

/// Everything packing one document needs: the source, its token counts and the budgets.
pub(crate) struct PackContext<'a> {
    pub tokens: &'a Tokens<'a>,
    pub source: &'a str,
    pub max_tokens: usize,
    pub target_tokens: usize,
    pub overlap_tokens: usize,
    /// Whether tables read as written or as their rendered page shows them (rewrites do it; a
    /// record, built outside a range, asks).
    pub tables: crate::TableText,
    /// Extra tokens held back from every budget; only grows when a counter is not additive.
    pub slack: usize,
    pub title: String,
}

/// Most of the cap, in percent, that text carried over from the previous chunk may take: a
/// chunk is at least half its own text. Against no carry, exact `eval`, recall@5 / MRR@10 went
/// 0.900 / 0.809 -> 0.950 / 0.835 on Traefik, 0.750 / 0.667 -> 0.850 / 0.758 on the Python docs
/// and 0.875 / 0.680 -> 0.917 / 0.693 on the Bash manual; a quarter gave about half the gain.
pub(crate) const CARRY_SHARE_PERCENT: usize = 50;

/// The section a chunk belongs to: the headings above it and the breadcrumb made of them.
#[derive(Debug, Clone, Default)]
struct Section {
    path: Vec<String>,
    breadcrumb: String,
    breadcrumb_tokens: usize,
}

/// A finished chunk body and the section it belongs to.
pub(crate) struct Emitted {
    pub path: Vec<String>,
    pub breadcrumb: String,
    pub breadcrumb_tokens: usize,
    pub piece: Piece,
}

impl PackContext<'_> {
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
        let mut packer = Packer::new(self, None);
        packer.set_section_budget();
        for b in blocks {
            packer.push_block(b);
        }
        let mut out = packer.finish();
        self.merge_bare_chunks(&mut out);
        self.carry_context(&mut out, blocks);
        self.drop_repeated_leads(&mut out, blocks);
        out
    }

    /// A lead emitted alone (a heading and the short paragraph under it, when the block after
    /// them fits a chunk only by itself) whose paragraph the next chunk now carries says nothing
    /// that chunk does not: its headings are in the next chunk's breadcrumb and the rest is in
    /// its text. It would only take a result slot from the chunk holding the evidence, so it
    /// goes. What it holds is checked block by block, so nothing of the source is dropped.
    fn drop_repeated_leads(&self, out: &mut Vec<Emitted>, blocks: &[Block]) {
        // Whether a chunk goes depends only on it and the next one, which stays: mark, then
        // remove in one pass (removing one at a time was quadratic in a long file).
        let repeated: Vec<bool> = (0..out.len())
            .map(|i| {
                let (lead, Some(next)) = (&out[i], out.get(i + 1)) else {
                    return false;
                };
                let uncovered = lead.piece.range.start..next.piece.range.start;
                lead.path == next.path
                    && !has_text(&lead.piece.prefix)
                    && !has_text(&lead.piece.suffix)
                    && next.piece.range.start > lead.piece.range.start
                    && next.piece.range.start < lead.piece.range.end
                    && next.piece.range.end >= lead.piece.range.end
                    && self.only_named_headings(uncovered, blocks, &next.breadcrumb)
                    && !self.holds_heading(next.piece.range.clone(), blocks)
            })
            .collect();
        let mut flags = repeated.into_iter();
        out.retain(|_| !flags.next().unwrap_or(false));
    }

    /// Whether a top-level heading starts in `range`: then a chunk starting there is another
    /// section, whatever its path says (two sections may have the same name).
    fn holds_heading(&self, range: Range<usize>, blocks: &[Block]) -> bool {
        let first = blocks.partition_point(|b| b.range.start < range.start);
        blocks[first..]
            .iter()
            .take_while(|b| b.range.start < range.end)
            .any(|b| matches!(b.kind, Kind::Heading { .. }))
    }

    /// Whether the top-level blocks overlapping `range` are all headings that `breadcrumb`
    /// holds whole (it is shortened when long).
    fn only_named_headings(&self, range: Range<usize>, blocks: &[Block], breadcrumb: &str) -> bool {
        let first = blocks.partition_point(|b| b.range.end <= range.start);
        blocks[first..]
            .iter()
            .take_while(|b| b.range.start < range.end)
            .all(|b| match &b.kind {
                Kind::Heading { text, .. } => breadcrumb.contains(text.as_str()),
                _ => self.source[b.range.clone()].trim().is_empty(),
            })
    }

    /// When a section goes on in a new chunk, the new chunk starts with the previous chunk's
    /// last paragraph (or its last sentences) when they are short: a rule is then not cut from
    /// the condition written just before it ("When X is not set, a warning is logged." / "To
    /// silence it, set X."). The carry is at most half the cap and must fit beside the chunk's
    /// own text, and it is a verbatim stretch of the source: the chunk's range simply starts
    /// earlier. Only paragraphs are carried, never headings, tables, code or lists, which have
    /// their own repeated heads; `overlap_tokens` 0 turns it off with the rest of the overlap.
    fn carry_context(&self, out: &mut [Emitted], blocks: &[Block]) {
        if self.overlap_tokens == 0 {
            return;
        }
        let limit = self.max_tokens * CARRY_SHARE_PERCENT / 100;
        for i in 1..out.len() {
            let (before, after) = out.split_at_mut(i);
            let (prev, next) = (&before[i - 1], &mut after[0]);
            let continues = prev.path == next.path
                && prev.piece.suffix.is_empty()
                && next.piece.prefix.is_empty()
                && self.source
                    [prev.piece.range.end..next.piece.range.start.max(prev.piece.range.end)]
                    .trim()
                    .is_empty();
            if !continues {
                continue;
            }
            let next_start = next.piece.range.start;
            let fixed = self.tokens.counting.specials + next.breadcrumb_tokens + self.slack;
            // Only what fits beside the chunk's own text: a code block or table that fills most
            // of its chunk still gets the last sentence introducing it.
            let room = (self.max_tokens).saturating_sub(fixed + next.piece.tokens);
            // A piece that already starts earlier (a procedure's carried step) keeps its start.
            let Some(start) = self
                .carry_start(&prev.piece, next_start, blocks, limit.min(room))
                .filter(|&start| start < next_start)
            else {
                continue;
            };
            let range = start..next.piece.range.end;
            let tokens = self.tokens.range(range.clone()) + next.piece.suffix_tokens;
            if fixed + tokens > self.max_tokens {
                continue;
            }
            next.piece.range = range;
            next.piece.tokens = tokens;
        }
    }

    /// Where the carried text of `prev` starts: its last block when that is a paragraph of at
    /// most `limit` tokens, else that paragraph's trailing sentences within `limit`. `None` when
    /// the chunk does not end with a whole paragraph of its own, the paragraph is all it holds,
    /// or the chunk starting at `next_start` is another item of the list the paragraph is in.
    fn carry_start(
        &self,
        prev: &Piece,
        next_start: usize,
        blocks: &[Block],
        limit: usize,
    ) -> Option<usize> {
        let end = prev.range.end;
        // Top-level blocks tile the document in order: the one holding `end` is the last to
        // start before it (a binary search; a linear one per chunk was quadratic in a long file).
        let at = blocks
            .partition_point(|b| b.range.start < end)
            .checked_sub(1)?;
        let mut last = &blocks[at];
        // In a split list item or quote, the innermost block the chunk ends in, when the next
        // chunk goes on inside the same item: a rule in an API member's description or in a
        // step keeps its condition too. Never across items: the next item is another entry
        // (a procedure's steps carry the step before instead).
        loop {
            let inside = last.children.partition_point(|c| c.range.start < end);
            let Some(inner) = inside.checked_sub(1).map(|k| &last.children[k]) else {
                break;
            };
            if next_start >= last.range.end {
                return None;
            }
            last = inner;
        }
        if last.range.end < end || last.range.start <= prev.range.start {
            return None;
        }
        let whole = self.source[end..last.range.end].trim().is_empty();
        if !whole || last.kind != Kind::Paragraph || !has_text(&self.source[last.range.clone()]) {
            return None;
        }
        let paragraph = last.range.start..end;
        if self.tokens.range(paragraph.clone()) <= limit {
            return Some(paragraph.start);
        }
        let mut start = None;
        for sentence in self
            .boundaries(paragraph.clone(), Level::Sentences)
            .iter()
            .rev()
        {
            if sentence.start == paragraph.start || self.tokens.range(sentence.start..end) > limit {
                break;
            }
            start = Some(sentence.start);
        }
        start
    }

    /// Whether `piece` has no line of text: only headings, quote, list and container markers,
    /// rules and blank lines.
    fn is_bare(&self, piece: &Piece) -> bool {
        !has_text(&piece.prefix)
            && !has_text(&self.source[piece.range.clone()])
            && !has_text(&piece.suffix)
    }

    /// A heading (or marker) with nothing under it says nothing on its own: each bare chunk
    /// joins the next one, or else the previous one, when the result fits the cap. Only a bare
    /// chunk too big to join anything (pathological nesting) is kept, and a document without any
    /// text is left as it is.
    fn merge_bare_chunks(&self, out: &mut Vec<Emitted>) {
        if out.iter().all(|e| self.is_bare(&e.piece)) {
            return;
        }
        let fits = |e: &Emitted, piece: &Piece| {
            let fixed = self.tokens.counting.specials + e.breadcrumb_tokens + self.slack;
            fixed + piece.tokens <= self.max_tokens
        };
        let mut i = 0;
        while i < out.len() {
            if !self.is_bare(&out[i].piece) {
                i += 1;
                continue;
            }
            if let Some(next) = out.get(i + 1)
                && out[i].piece.mergeable(&next.piece)
            {
                let merged = self.join(&out[i].piece, &next.piece);
                if fits(next, &merged) {
                    out[i + 1].piece = merged;
                    out.remove(i);
                    continue;
                }
            }
            if i > 0 && out[i - 1].piece.mergeable(&out[i].piece) {
                let merged = self.join(&out[i - 1].piece, &out[i].piece);
                if fits(&out[i - 1], &merged) {
                    out[i - 1].piece = merged;
                    out.remove(i);
                    continue;
                }
            }
            i += 1;
        }
    }
}

/// Whether `text` has a line that is more than headings, markers, blank space and what a reader
/// of the page never sees: HTML comments, scripts and styles, MDX's import and export lines.
/// A README's banner counts as a heading (`<h1 align="center">Name</h1>`), and a line of
/// nothing but tags (`<p align="center">`, a logo's `<img>`) as a marker.
fn has_text(text: &str) -> bool {
    let shown = shown_text(text);
    let lines: Vec<&str> = shown.lines().map(strip_markers).collect();
    lines.iter().enumerate().any(|(k, line)| {
        let setext_title = lines.get(k + 1).is_some_and(|next| is_rule(next));
        let bare = line.is_empty()
            || is_atx_heading(line)
            || is_html_heading(line)
            // Only a line starting with a tag can be all tags (no scan of every line of text).
            || (line.starts_with('<') && outside_tags(line).trim().is_empty())
            || is_rule(line)
            || setext_title
            || is_container_marker(line)
            || crate::mdx::is_module_line(line);
        !bare
    })
}

/// What a page shows of `text`: less its complete HTML comments and `<script>` and `<style>`
/// elements (a VitePress page's Vue setup, a blog post's CSS); an unclosed one is kept.
fn shown_text(text: &str) -> std::borrow::Cow<'_, str> {
    const HIDDEN: [(&str, &str); 3] = [
        ("<!--", "-->"),
        ("<script", "</script>"),
        ("<style", "</style>"),
    ];
    if !text.contains('<') {
        return text.into();
    }
    let mut shown = String::with_capacity(text.len());
    let mut kept_from = 0;
    let mut at = 0;
    while let Some(lt) = text[at..].find('<').map(|k| at + k) {
        at = lt + 1;
        let rest = &text[lt..];
        let Some((open, close)) = HIDDEN.iter().find(|(open, _)| {
            rest.starts_with(open)
                && (*open == "<!--"
                    || rest[open.len()..].starts_with(|c: char| c == '>' || c.is_whitespace()))
        }) else {
            continue;
        };
        let Some(end) = rest[open.len()..].find(close) else {
            break;
        };
        shown.push_str(&text[kept_from..lt]);
        at = lt + open.len() + end + close.len();
        kept_from = at;
    }
    shown.push_str(&text[kept_from..]);
    shown.into()
}

/// `line` without leading whitespace, quote markers and list markers.
fn strip_markers(line: &str) -> &str {
    let mut t = line.trim();
    loop {
        let before = t.len();
        t = t.strip_prefix('>').unwrap_or(t).trim_start();
        for bullet in ["- ", "* ", "+ "] {
            t = t.strip_prefix(bullet).unwrap_or(t).trim_start();
        }
        if matches!(t, "-" | "*" | "+") {
            t = "";
        }
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        if (1..=9).contains(&digits)
            && matches!(t.as_bytes().get(digits), Some(b'.' | b')'))
            && t[digits + 1..]
                .chars()
                .next()
                .is_none_or(char::is_whitespace)
        {
            t = t[digits + 1..].trim_start();
        }
        if t.len() == before {
            return t;
        }
    }
}

/// A line that is one HTML heading element, `<h1 align="center">Fastify</h1>`.
fn is_html_heading(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() >= 9
        && b[0] == b'<'
        && b[1].eq_ignore_ascii_case(&b'h')
        && (b'1'..=b'6').contains(&b[2])
        && matches!(b[3], b'>' | b' ' | b'\t')
        && b[b.len() - 5..].eq_ignore_ascii_case(&[b'<', b'/', b'h', b[2], b'>'])
}

/// `line` less its tags (`<p align="center">`, `</a>`, `<img .../>`): the text a reader sees
/// of it. `a < b` and an autolink (`<https://...>`) are text.
fn outside_tags(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(lt) = rest.find('<') {
        out.push_str(&rest[..lt]);
        let after = &rest[lt + 1..];
        let name = after.strip_prefix('/').unwrap_or(after);
        let name_len = name
            .bytes()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == b'-')
            .count();
        let is_tag = name.starts_with(|c: char| c.is_ascii_alphabetic())
            && matches!(
                name.as_bytes().get(name_len),
                Some(b' ' | b'\t' | b'/' | b'>')
            );
        if !is_tag {
            out.push('<');
            rest = after;
            continue;
        }
        // Without a `>` further on no later `<` closes either: one scan, never one per `<`.
        let Some(gt) = after.find('>') else {
            out.push_str(&rest[lt..]);
            return out;
        };
        rest = &after[gt + 1..];
    }
    out.push_str(rest);
    out
}

fn is_atx_heading(line: &str) -> bool {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&hashes)
        && line[hashes..]
            .chars()
            .next()
            .is_none_or(char::is_whitespace)
}

/// A thematic break or a setext underline.
fn is_rule(line: &str) -> bool {
    let mut marks = line.chars().filter(|c| !c.is_whitespace());
    marks
        .next()
        .is_some_and(|first| "-=*_".contains(first) && marks.all(|c| c == first))
}

/// A box's marker line: an mkdocs admonition or content tab (`!!! note "Title"`, `=== "YAML"`),
/// a colon fence (`::: tip`, `:::`) or a line that is one Hugo shortcode (`{{% alert %}}`).
fn is_container_marker(line: &str) -> bool {
    ["!!!", "???", "=== ", ":::"]
        .iter()
        .any(|m| line.starts_with(m))
        || crate::markdown::shortcode(line).is_some()
}

/// The headings of a section as its path: the open headings, less a first one that repeats the
/// title (the breadcrumb starts with the title already).
pub(crate) fn section_path(headings: &[(u8, String)], title: &str) -> Vec<String> {
    headings
        .iter()
        .enumerate()
        .filter(|(i, (_, t))| !(*i == 0 && t == title))
        .map(|(_, (_, t))| t.clone())
        .collect()
}

struct PendingItem {
    piece: Piece,
    heading: bool,
    /// A paragraph ending with ':' that may introduce a following list.
    intro: bool,
}

/// Greedy packer over sibling blocks. At the top level, headings start sections and budgets
/// depend on the breadcrumb; nested (splitting a block's children) budgets are fixed, or set
/// for the pieces after the first once it is done (`balance_after_first`).
pub(crate) struct Packer<'c, 'a> {
    ctx: &'c PackContext<'a>,
    nested: Option<Budget>,
    /// Where the split block ends, when later pieces share what the first leaves evenly.
    rebalance_until: Option<usize>,
    headings: Vec<(u8, String)>,
    section: Section,
    max: usize,
    target: usize,
    pending: Vec<PendingItem>,
    joined: Option<Piece>,
    out: Vec<Emitted>,
}

impl<'c, 'a> Packer<'c, 'a> {
    pub fn new(ctx: &'c PackContext<'a>, nested: Option<Budget>) -> Self {
        Packer {
            ctx,
            nested,
            rebalance_until: None,
            headings: Vec::new(),
            section: Section::default(),
            max: 0,
            target: 0,
            pending: Vec::new(),
            joined: None,
            out: Vec::new(),
        }
    }

    /// Once the first piece is done, the target of later ones becomes an even share of what
    /// is left up to `end`: the first piece is filled, the rest cut as few times as the cap
    /// forces, without a sliver at the end.
    pub fn balance_after_first(&mut self, end: usize) {
        self.rebalance_until = Some(end);
    }

    fn set_section_budget(&mut self) {
        let ctx = self.ctx;
        let path = section_path(&self.headings, &ctx.title);
        let (breadcrumb, breadcrumb_tokens) = ctx.breadcrumb(&path);
        let specials = ctx.tokens.counting.specials;
        let fixed = specials + breadcrumb_tokens + ctx.slack;
        self.max = ctx.max_tokens.saturating_sub(fixed).max(1);
        self.target = ctx.target_tokens.saturating_sub(fixed).clamp(1, self.max);
        self.section = Section {
            path,
            breadcrumb,
            breadcrumb_tokens,
        };
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
        !self.pending.is_empty() && self.pending.iter().all(|a| a.heading)
    }

    /// Only headings and intro paragraphs: text that must not end a chunk.
    fn lead_only(&self) -> bool {
        !self.pending.is_empty() && self.pending.iter().all(|a| a.heading || a.intro)
    }

    /// How many pending items at the end must not end a chunk: an intro paragraph and the
    /// headings before it (headings follow other blocks only inside a split block).
    fn trailing_leads(&self) -> usize {
        let intro = usize::from(self.pending.last().is_some_and(|a| a.intro));
        let headings = self.pending[..self.pending.len() - intro]
            .iter()
            .rev()
            .take_while(|a| a.heading)
            .count();
        intro + headings
    }

    fn pending_tokens(&self) -> usize {
        self.joined.as_ref().map_or(0, |p| p.tokens)
    }

    /// Whether `p` can join the accumulation within `max`.
    fn fits_with_pending(&self, p: &Piece, max: usize) -> bool {
        self.joined
            .as_ref()
            .is_some_and(|j| self.ctx.joins_within(j, p, max))
    }

    fn push(&mut self, item: PendingItem) {
        self.joined = Some(match self.joined.take() {
            Some(j) => self.ctx.join(&j, &item.piece),
            None => item.piece.clone(),
        });
        self.pending.push(item);
    }

    fn rejoin(&mut self) {
        self.joined = None;
        let items = std::mem::take(&mut self.pending);
        for it in items {
            self.push(it);
        }
    }

    fn flush(&mut self) {
        if let Some(piece) = self.joined.take() {
            let Section {
                path,
                breadcrumb,
                breadcrumb_tokens,
            } = self.section.clone();
            self.out.push(Emitted {
                path,
                breadcrumb,
                breadcrumb_tokens,
                piece,
            });
        }
        self.pending.clear();
        if self.out.len() == 1
            && let (Some(end), Some(b)) = (self.rebalance_until.take(), self.nested.as_mut())
        {
            let rest = self
                .ctx
                .tokens
                .range(self.out[0].piece.range.end.min(end)..end);
            b.target = crate::split::balance(rest, Budget::flat(b.max), 0).1;
        }
    }

    pub fn push_block(&mut self, block: &Block) {
        let ctx = self.ctx;
        if let (None, Kind::Heading { level, text }) = (&self.nested, &block.kind) {
            let p = ctx.piece(block.range.clone());
            // Headings lead at most half a chunk, so text always fits beside them; longer runs
            // of empty headings (or absurdly long ones) are emitted on their own.
            if !self.pending.is_empty()
                && (!self.heading_only() || !self.fits_with_pending(&p, self.max / 2))
            {
                self.flush();
            }
            while self.headings.last().is_some_and(|(l, _)| *l >= *level) {
                self.headings.pop();
            }
            self.headings.push((*level, text.clone()));
            self.set_section_budget();
            let pieces = if p.tokens > self.max / 2 {
                ctx.split_text(
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
                self.push(PendingItem {
                    piece,
                    heading: true,
                    intro: false,
                });
            }
            return;
        }
        let (max, target) = self.budgets();
        let p = ctx.piece(block.range.clone());
        let intro = block.kind == Kind::Paragraph
            && ctx.source[block.range.clone()].trim_end().ends_with(':');
        // Inside a split block headings start no section, but they still lead what follows.
        let heading = matches!(block.kind, Kind::Heading { .. });
        if let Some(j) = &self.joined {
            // A lead (headings, an intro ending with ':') may take the block up to the cap.
            let limit = if self.lead_only() { max } else { target };
            if ctx.joins_within(j, &p, limit) {
                self.push(PendingItem {
                    piece: p,
                    heading,
                    intro,
                });
                return;
            }
        }
        // Trailing leads (an intro paragraph, the headings before it) move forward to the block
        // they introduce.
        let leads = self.trailing_leads();
        if !self.lead_only() && leads > 0 {
            let moved = self.pending.split_off(self.pending.len() - leads);
            self.rejoin();
            self.flush();
            for item in moved {
                self.push(item);
            }
            let (max, _) = self.budgets();
            if self.fits_with_pending(&p, max) {
                self.push(PendingItem {
                    piece: p,
                    heading,
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
                self.push(PendingItem {
                    piece: p,
                    heading,
                    intro,
                });
                return;
            }
        }
        // A list too big to sit with its long intro, that fits a chunk of its own under the
        // intro's last sentence, starts that chunk whole: no first items left behind with the
        // intro, away from the rest ("step 4 without steps 1-3").
        if block.kind == Kind::List
            && let Some(last) = self.pending.last().filter(|a| a.intro)
            && let Some((text, _)) = self.intro_text(last.piece.range.clone(), max)
        {
            let prefix = format!("{text}\n\n");
            let prefix_tokens = ctx.str_tokens(&prefix);
            let fresh_max = self.nested.map_or(self.max, |b| b.max);
            if prefix_tokens < last.piece.tokens && prefix_tokens + p.tokens <= fresh_max {
                self.flush();
                let mut piece = p;
                piece.add_prefix(&prefix, prefix_tokens);
                self.push(PendingItem {
                    piece,
                    heading: false,
                    intro: false,
                });
                return;
            }
        }
        // Oversized, or too big to sit with its lead (which must not be a chunk alone): split.
        // A small accumulation stays to take the first piece.
        if !self.lead_only() && self.pending_tokens() > target / 2 {
            self.flush();
        }
        let mut intro_text = None;
        if block.kind == Kind::List
            && let Some(last) = self.pending.last().filter(|a| a.intro)
        {
            intro_text = self.intro_text(last.piece.range.clone(), max);
        }
        let (max, target) = self.budgets();
        let used = self.pending_tokens();
        let budget = Budget {
            first_max: max.saturating_sub(used),
            first_target: target.saturating_sub(used),
            max: self.nested.map_or(max, |b| b.max),
            target: self.nested.map_or(target, |b| b.target),
        };
        let intro_ref = intro_text.as_ref().map(|(s, t)| (s.as_str(), *t));
        let pieces = ctx.split_block(block, budget, intro_ref);
        for (i, piece) in pieces.into_iter().enumerate() {
            if i == 0 && self.fits_with_pending(&piece, self.budgets().0) {
                self.push(PendingItem {
                    piece,
                    heading: false,
                    intro: false,
                });
                continue;
            }
            self.flush();
            self.push(PendingItem {
                piece,
                heading: false,
                intro: false,
            });
        }
    }

    /// The sentence introducing a list, repeated on every piece of it: the whole paragraph when
    /// short, else its last sentence, else nothing.
    fn intro_text(&self, r: Range<usize>, max: usize) -> Option<(String, usize)> {
        let ctx = self.ctx;
        let limit = max / 4;
        let t = ctx.tokens.range(r.clone());
        if t <= limit {
            return Some((ctx.source[r].trim().to_string(), t));
        }
        let sentences = ctx.boundaries(r, Level::Sentences);
        let last = sentences.last()?.clone();
        let t = ctx.tokens.range(last.clone());
        (t <= limit).then(|| (ctx.source[last].trim().to_string(), t))
    }

    pub fn finish(mut self) -> Vec<Emitted> {
        if self.nested.is_none() && self.heading_only() && !self.out.is_empty() {
            // A trailing heading with nothing under it joins the previous chunk when it fits.
            let last = self.out.len() - 1;
            if let Some(j) = &self.joined {
                let prev = &self.out[last];
                let room = self.ctx.max_tokens.saturating_sub(
                    self.ctx.tokens.counting.specials + prev.breadcrumb_tokens + self.ctx.slack,
                );
                if prev.piece.mergeable(j) {
                    let merged = self.ctx.join(&prev.piece, j);
                    if merged.tokens <= room {
                        self.out[last].piece = merged;
                        self.joined = None;
                        self.pending.clear();
                    }
                }
            }
        }
        self.flush();
        self.out
    }
}
