//! From ranked hits to the results handed back: each hit alone or with its neighbours or its
//! section, every chunk at most once across all results, in rank order until `k` results or the
//! token budget. Sections are trimmed around their hits a whole chunk at a time, so a table or a
//! code block (never split across chunks unless it alone exceeds a chunk) is never cut.

use std::collections::{HashMap, HashSet};

use crate::Result;
use crate::access::{Access, required_labels};
use crate::chunk::{Hit, IndexedChunk, PassageChunk, mark_repeats};
use crate::request::Expand;
use crate::source::ChunkSource;

/// Most tokens one section brings along without a budget: a whole long document is not a
/// section a prompt wants.
pub const SECTION_CAP_TOKENS: usize = 2_048;

/// Builds the results from `hits` (best first, already filtered and deduplicated).
pub(crate) fn assemble(
    source: &mut dyn ChunkSource,
    hits: Vec<Hit>,
    expand: Expand,
    k: usize,
    budget: Option<usize>,
    access: &Access,
) -> Result<Vec<Hit>> {
    let mut out = Assembly {
        source,
        access,
        budget,
        spent: 0,
        results: Vec::new(),
        used: HashMap::new(),
        files: HashMap::new(),
        sections: HashMap::new(),
    };
    for hit in hits {
        if out.results.len() == k || out.budget.is_some_and(|b| out.spent >= b) {
            break;
        }
        if let Some(&at) = out.used.get(&hit.chunk.scoped_id()) {
            out.mark_hit(at, &hit.chunk.chunk_id);
            continue;
        }
        match expand {
            Expand::None => out.add_alone(hit),
            Expand::Neighbors => out.add_with_neighbours(hit)?,
            Expand::Section => out.add_section(hit)?,
        }
    }
    for (i, result) in out.results.iter_mut().enumerate() {
        result.rank = i + 1;
        result.result_tokens = match result.passage.is_empty() {
            true => result.chunk.tokens,
            false => result.passage.iter().map(|p| p.chunk.tokens).sum(),
        };
    }
    Ok(out.results)
}

struct Assembly<'a> {
    source: &'a mut dyn ChunkSource,
    access: &'a Access,
    budget: Option<usize>,
    spent: usize,
    results: Vec<Hit>,
    /// Chunk ID (scoped by collection) → the result that holds it.
    used: HashMap<String, usize>,
    /// A file's visible chunks in order, loaded once.
    files: HashMap<String, Vec<IndexedChunk>>,
    /// (path, first ordinal of a section) → the result that holds it.
    sections: HashMap<(String, u32), usize>,
}

impl Assembly<'_> {
    fn left(&self) -> usize {
        self.budget
            .map_or(usize::MAX, |b| b.saturating_sub(self.spent))
    }

    fn add_alone(&mut self, hit: Hit) {
        let cost = hit.chunk.tokens as usize;
        if cost > self.left() {
            return;
        }
        self.spent += cost;
        self.used.insert(hit.chunk.scoped_id(), self.results.len());
        self.results.push(hit);
    }

    fn mark_hit(&mut self, at: usize, chunk_id: &str) {
        for part in &mut self.results[at].passage {
            if part.chunk.chunk_id == chunk_id {
                part.is_hit = true;
            }
        }
    }

    /// The file's chunks the caller may see, in order, and the hit's position among them.
    fn file_of(&mut self, hit: &IndexedChunk) -> Result<(Vec<IndexedChunk>, Option<usize>)> {
        let file = hit.scoped_path();
        if !self.files.contains_key(&file) {
            let mut chunks = self.source.file_chunks(hit)?;
            chunks.retain(|chunk| self.access.may_see(&required_labels(&chunk.metadata)));
            self.files.insert(file.clone(), chunks);
        }
        let chunks = self.files[&file].clone();
        let at = chunks.iter().position(|c| c.chunk_id == hit.chunk_id);
        Ok((chunks, at))
    }

    fn push_passage(&mut self, mut hit: Hit, mut parts: Vec<PassageChunk>) {
        mark_repeats(&mut parts);
        let at = self.results.len();
        self.spent += parts.iter().map(|p| p.chunk.tokens as usize).sum::<usize>();
        for part in &parts {
            self.used.insert(part.chunk.scoped_id(), at);
        }
        hit.passage = parts;
        self.results.push(hit);
    }

    fn add_with_neighbours(&mut self, hit: Hit) -> Result<()> {
        let (chunks, Some(i)) = self.file_of(&hit.chunk)? else {
            self.add_alone(hit);
            return Ok(());
        };
        let same_section = |j: usize| chunks[j].heading_path == hit.chunk.heading_path;
        let free =
            |j: usize, used: &HashMap<String, usize>| !used.contains_key(&chunks[j].scoped_id());
        let mut picked = vec![i];
        let mut cost = hit.chunk.tokens as usize;
        if cost > self.left() {
            return Ok(());
        }
        let before = i.checked_sub(1);
        let after = (i + 1 < chunks.len()).then_some(i + 1);
        for j in [before, after].into_iter().flatten() {
            let extra = chunks[j].tokens as usize;
            if same_section(j) && free(j, &self.used) && cost + extra <= self.left() {
                cost += extra;
                picked.push(j);
            }
        }
        picked.sort_unstable();
        let parts = picked
            .into_iter()
            .map(|j| PassageChunk::new(chunks[j].clone(), j == i))
            .collect();
        self.push_passage(hit, parts);
        Ok(())
    }

    fn add_section(&mut self, hit: Hit) -> Result<()> {
        let (chunks, Some(i)) = self.file_of(&hit.chunk)? else {
            self.add_alone(hit);
            return Ok(());
        };
        // The section: the run of chunks around the hit under the same headings (or deeper).
        let inside = |j: usize| chunks[j].heading_path.starts_with(&hit.chunk.heading_path);
        let mut first = i;
        while first > 0 && inside(first - 1) {
            first -= 1;
        }
        let mut last = i;
        while last + 1 < chunks.len() && inside(last + 1) {
            last += 1;
        }
        let key = (hit.chunk.scoped_path(), chunks[first].ordinal);
        if let Some(&at) = self.sections.get(&key) {
            // Another hit of a section already returned: it joins that result if it fits.
            let cost = hit.chunk.tokens as usize;
            if cost <= self.left() {
                self.spent += cost;
                self.used.insert(hit.chunk.scoped_id(), at);
                let passage = &mut self.results[at].passage;
                passage.push(PassageChunk::new(hit.chunk, true));
                passage.sort_by_key(|p| p.chunk.ordinal);
                mark_repeats(passage);
            }
            return Ok(());
        }
        let cap = self
            .left()
            .min(SECTION_CAP_TOKENS.max(hit.chunk.tokens as usize));
        let mut cost = hit.chunk.tokens as usize;
        if cost > self.left() {
            return Ok(());
        }
        // Grow around the hit one chunk at a time, alternating sides (the text before often
        // holds the condition, the text after the steps), each side stopping at a chunk that
        // does not fit or that another result holds.
        let (mut lo, mut hi) = (i, i);
        let (mut grow_lo, mut grow_hi) = (true, true);
        let mut picked: HashSet<usize> = HashSet::from([i]);
        while grow_lo || grow_hi {
            for side in [0, 1] {
                let next = match side {
                    0 if grow_lo && lo > first => Some(lo - 1),
                    1 if grow_hi && hi < last => Some(hi + 1),
                    _ => None,
                };
                let Some(j) = next else {
                    match side {
                        0 => grow_lo = false,
                        _ => grow_hi = false,
                    }
                    continue;
                };
                let extra = chunks[j].tokens as usize;
                if self.used.contains_key(&chunks[j].scoped_id()) || cost + extra > cap {
                    match side {
                        0 => grow_lo = false,
                        _ => grow_hi = false,
                    }
                    continue;
                }
                cost += extra;
                picked.insert(j);
                match side {
                    0 => lo = j,
                    _ => hi = j,
                }
            }
        }
        let parts = (lo..=hi)
            .filter(|j| picked.contains(j))
            .map(|j| PassageChunk::new(chunks[j].clone(), j == i))
            .collect();
        self.sections.insert(key, self.results.len());
        self.push_passage(hit, parts);
        Ok(())
    }
}
