//! Which query words select the rows a text search ranks. Ranking every row that holds any
//! query word is what BM25 does, and it grows with the table: at 100k chunks a 12-word
//! question matched most of them. Words in a large share of the rows add little to a rank
//! (their inverse document frequency is small), so when the rows the words would select
//! exceed a budget, the most common words stop selecting (they still count in the rank of
//! the rows the rarer words select). Frequencies come from PostgreSQL's own statistics of the
//! `tsvector` column (`ANALYZE`'s most common elements); without statistics nothing is pruned.

use std::collections::HashMap;

use postgres::Transaction;

use crate::PgError;
use crate::store::query_error;

/// Default rows a text search may select before common words stop selecting.
pub const TEXT_CANDIDATE_BUDGET: u64 = 20_000;

/// A question's words as `tsquery` texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueryTerms {
    /// Every word, ORed: what ranks.
    pub ranking: String,
    /// The words that select candidates, ORed.
    pub selecting: String,
    /// How many words were left out of the selection.
    pub dropped: usize,
}

/// The terms of `query` (English stemming, stop words removed), or `None` when none is left.
pub(crate) fn choose(
    txn: &mut Transaction<'_>,
    server: &str,
    query: &str,
    budget: u64,
) -> Result<Option<QueryTerms>, PgError> {
    let err = |action| move |e| query_error(action, server, e);
    // The words and the column's statistics in one round trip: this runs for every search.
    let row = txn
        .query_one(
            "SELECT replace(plainto_tsquery('english', $1)::text, '&', '|'), \
             (SELECT reltuples FROM pg_class WHERE oid = 'rag_index.chunks'::regclass)::float8, \
             s.most_common_elems::text::text[], s.most_common_elem_freqs \
             FROM (SELECT 1) AS one LEFT JOIN pg_stats s ON s.schemaname = 'rag_index' \
             AND s.tablename = 'chunks' AND s.attname = 'lexical'",
            &[&query],
        )
        .map_err(err("text query"))?;
    let text: String = row.get(0);
    if text.trim().is_empty() {
        return Ok(None);
    }
    // `plainto_tsquery` prints quoted lexemes joined by `&`, now `|`.
    let terms: Vec<&str> = text.split(" | ").map(str::trim).collect();
    let keep_all = QueryTerms {
        ranking: text.clone(),
        selecting: text.clone(),
        dropped: 0,
    };
    if terms.len() < 2 {
        return Ok(Some(keep_all));
    }
    let rows: f64 = row.get(1);
    let elems: Option<Vec<String>> = row.get(2);
    let freqs: Option<Vec<f32>> = row.get(3);
    let (Some(elems), Some(freqs)) = (elems, freqs) else {
        return Ok(Some(keep_all));
    };
    if rows <= 0.0 || freqs.len() <= elems.len() {
        return Ok(Some(keep_all));
    }
    // After one frequency per element come the minimum, the maximum and the null share: a word
    // not listed is at most as frequent as the least frequent listed one.
    let unlisted = f64::from(freqs[elems.len()]);
    let frequency: HashMap<&str, f64> = elems
        .iter()
        .map(String::as_str)
        .zip(freqs.iter().map(|f| f64::from(*f)))
        .collect();
    let mut estimated: Vec<(f64, &str)> = terms
        .iter()
        .map(|term| {
            let lexeme = unquote(term);
            let share = frequency.get(lexeme.as_str()).copied().unwrap_or(unlisted);
            (share * rows, *term)
        })
        .collect();
    Ok(Some(prune(&text, &mut estimated, budget as f64)))
}

/// Drops the most common terms while the rows they select exceed `budget`, keeping at least one.
fn prune(ranking: &str, estimated: &mut Vec<(f64, &str)>, budget: f64) -> QueryTerms {
    let order: Vec<&str> = estimated.iter().map(|(_, t)| *t).collect();
    let mut total: f64 = estimated.iter().map(|(rows, _)| rows).sum();
    estimated.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut dropped = 0;
    while total > budget && estimated.len() - dropped > 1 {
        total -= estimated[dropped].0;
        dropped += 1;
    }
    let kept: Vec<&str> = estimated[dropped..].iter().map(|(_, t)| *t).collect();
    // In the question's order, so the same question always builds the same statement.
    let selecting: Vec<&str> = order.into_iter().filter(|t| kept.contains(t)).collect();
    QueryTerms {
        ranking: ranking.to_string(),
        selecting: selecting.join(" | "),
        dropped,
    }
}

/// `'it''s'` → `it's`.
fn unquote(term: &str) -> String {
    let inner = term
        .strip_prefix('\'')
        .and_then(|t| t.strip_suffix('\''))
        .unwrap_or(term);
    inner.replace("''", "'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_words_stop_selecting_once_the_rows_exceed_the_budget() {
        let mut terms = vec![
            (90_000.0, "'rout'"),
            (40.0, "'zeppelin'"),
            (5_000.0, "'entri'"),
        ];
        let pruned = prune("'rout' | 'zeppelin' | 'entri'", &mut terms, 20_000.0);
        assert_eq!(pruned.selecting, "'zeppelin' | 'entri'");
        assert_eq!(pruned.dropped, 1);
        assert_eq!(pruned.ranking, "'rout' | 'zeppelin' | 'entri'");
    }

    #[test]
    fn under_the_budget_every_word_selects_and_one_always_does() {
        let mut small = vec![(9_000.0, "'a'"), (9_000.0, "'b'")];
        assert_eq!(
            prune("'a' | 'b'", &mut small, 20_000.0).selecting,
            "'a' | 'b'"
        );
        let mut common = vec![(90_000.0, "'a'"), (80_000.0, "'b'")];
        let one = prune("'a' | 'b'", &mut common, 20_000.0);
        assert_eq!(one.selecting, "'b'");
        assert_eq!(one.dropped, 1);
    }

    #[test]
    fn quoted_lexemes_unquote() {
        assert_eq!(unquote("'it''s'"), "it's");
        assert_eq!(unquote("'rout'"), "rout");
    }
}
