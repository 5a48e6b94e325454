//! Collapsing near-duplicate hits: the same paragraph in two files, or a chunk that another
//! hit already holds, should not take two of the k places distinct evidence could fill.
//!
//! Two texts are near-duplicates when most of the shorter one's token trigrams occur in the
//! other (containment, not Jaccard: a short chunk repeated inside a longer one is a duplicate).
//! Tokens are whitespace-separated and keep their punctuation, so the tabs of one configuration
//! example (`--ratelimit.average=100` vs `average: 100`), which share their comments, stay
//! distinct. The overlap window between neighbouring chunks of one section is a small fraction
//! of a chunk, so neighbours are never collapsed.

use std::collections::HashSet;

use crate::chunk::Hit;

/// Share of the shorter text's trigrams that must occur in the other.
pub const DUPLICATE_CONTAINMENT: f64 = 0.8;

/// The word trigrams of a text, hashed, sorted and distinct; texts under three words give their
/// words instead.
///
/// The hash is FNV-1a over the lowercased characters and a multiply-xorshift mix of three word
/// hashes: a search collapses its ~25 candidates on every query, and a cryptographic hash per
/// trigram (blake3 here before) cost as much as the BM25 scan. A 64-bit collision could only
/// make two texts look a trigram more alike.
pub(crate) struct Shingles(Vec<u64>);

impl Shingles {
    pub fn of(text: &str) -> Shingles {
        let words: Vec<u64> = text.split_whitespace().map(word_hash).collect();
        let mut hashes: Vec<u64> = if words.len() < 3 {
            words.iter().map(|&w| mix(w)).collect()
        } else {
            words
                .windows(3)
                .map(|w| mix(mix(mix(w[0]) ^ w[1]) ^ w[2]))
                .collect()
        };
        hashes.sort_unstable();
        hashes.dedup();
        Shingles(hashes)
    }

    /// Whether the two texts are near-duplicates. Empty texts duplicate only each other.
    pub fn duplicates(&self, other: &Shingles) -> bool {
        let (small, large) = match self.0.len() <= other.0.len() {
            true => (&self.0, &other.0),
            false => (&other.0, &self.0),
        };
        if small.is_empty() {
            return large.is_empty();
        }
        let needed = (DUPLICATE_CONTAINMENT * small.len() as f64).ceil() as usize;
        shares_at_least(small, large, needed)
    }
}

/// FNV-1a of the word's lowercase characters.
fn word_hash(word: &str) -> u64 {
    word.chars()
        .flat_map(char::to_lowercase)
        .fold(0xcbf2_9ce4_8422_2325, |h, c| {
            (h ^ u64::from(u32::from(c))).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// A bijective 64-bit finaliser (splitmix64's), so combined hashes spread over all bits.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Whether `a` and `b` (sorted, distinct) share at least `needed` values. Stops as soon as too
/// many of `a`'s values are missing from `b`: most candidate pairs are not duplicates, and
/// that shows after a fifth of the merge.
fn shares_at_least(a: &[u64], b: &[u64], needed: usize) -> bool {
    let allowed_misses = a.len().saturating_sub(needed);
    let (mut i, mut j, mut shared, mut misses) = (0, 0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                misses += 1;
                if misses > allowed_misses {
                    return false;
                }
                i += 1;
            }
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    shared >= needed
}

/// Whether two texts are near-duplicates in the sense dedup collapses.
pub fn near_duplicates(a: &str, b: &str) -> bool {
    Shingles::of(a).duplicates(&Shingles::of(b))
}

/// Chunk metadata naming the table a chunk represents (the table itself, its row groups, or one
/// of its row records): one table takes one place among the hits.
pub const TABLE_GROUP_KEY: &str = "table_group";

/// Drops near-duplicates of better-ranked hits, and every row record of a table but the
/// best-ranked one, keeping rank order: one table takes at most its own chunks and one record.
/// (Collapsing the table's own chunks into a record too was measured: table-pattern R@5 fell
/// from 0.667 to 0.167, the record winning over the chunk that holds the rows verbatim.)
pub(crate) fn collapse(hits: Vec<Hit>) -> Vec<Hit> {
    let keep = keep_distinct(hits.iter().map(|h| h.chunk.body()));
    let mut all: Vec<Option<Hit>> = hits.into_iter().map(Some).collect();
    let mut tables: HashSet<(String, String)> = HashSet::new();
    keep.into_iter()
        .filter_map(|i| all[i].take())
        .filter(|h| {
            let is_record = h
                .chunk
                .metadata
                .get(rag_chunker::RECORD_KEY)
                .and_then(|v| v.as_str())
                == Some(rag_chunker::ROW_RECORD);
            match h.chunk.metadata.get(TABLE_GROUP_KEY) {
                Some(group) if is_record => {
                    tables.insert((h.chunk.path.clone(), group.to_string()))
                }
                _ => true,
            }
        })
        .collect()
}

/// Indices of the items to keep, in order: each item unless it duplicates an earlier kept one.
pub(crate) fn keep_distinct<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<usize> {
    let mut kept: Vec<(usize, Shingles)> = Vec::new();
    for (i, text) in texts.into_iter().enumerate() {
        let shingles = Shingles::of(text);
        if !kept.iter().any(|(_, k)| k.duplicates(&shingles)) {
            kept.push((i, shingles));
        }
    }
    kept.into_iter().map(|(i, _)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_collapse_and_neighbours_stay() {
        let a = "The router forwards requests to the service when the rule matches the host \
                 header and the path prefix of the request.";
        let copy_in_longer = format!("Intro line. {a} And a closing remark about retries.");
        let neighbour = "the path prefix of the request. Middlewares then run in the order \
                         they are declared, before the service is called at all.";
        let kept = keep_distinct([a, copy_in_longer.as_str(), neighbour, a]);
        assert_eq!(kept, [0, 2]);
        let labels = "# An average of 100 requests per second is allowed.\n\
                      - \"traefik.http.middlewares.rl.ratelimit.average=100\"\n\
                      - \"traefik.http.middlewares.rl.ratelimit.burst=200\"";
        let yaml = "# An average of 100 requests per second is allowed.\n\
                    rl:\n  rateLimit:\n    average: 100\n    burst: 200";
        assert!(
            !near_duplicates(labels, yaml),
            "tabs of one example stay distinct"
        );
        assert_eq!(keep_distinct(["", "x", ""]), [0, 1]);
        // The threshold is inclusive: 4 of 5 trigrams shared is a duplicate, 3 of 5 is not.
        let seven = "one two three four five six seven";
        assert!(near_duplicates(seven, "one two three four five six SEVEN"));
        assert!(near_duplicates(seven, "one two three four five six eight"));
        assert!(!near_duplicates(
            seven,
            "one two three four five eight nine"
        ));
        // Case does not matter, word order does.
        assert!(near_duplicates(
            "Enable The Dashboard now",
            "enable the dashboard NOW"
        ));
        assert!(!near_duplicates(
            "enable the dashboard now",
            "now dashboard the enable"
        ));
    }
}
