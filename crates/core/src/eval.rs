//! Retrieval evaluation: does a retrieved chunk hold the evidence that answers a question?
//!
//! A question counts as answered at rank r when the result at rank r contains every one of its
//! evidence strings, after collapsing runs of whitespace on both sides. A result is one chunk, or
//! with expansion the passage handed back for the hit (its chunks joined in document order).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Access, Fusion, Hit, RagIndex, Result, SearchMode, SearchRequest};

/// One question of a question set (the `questions.jsonl` format).
#[derive(Debug, Clone, Deserialize)]
pub struct Question {
    /// Question ID.
    pub id: String,
    /// The question, used as the query.
    pub question: String,
    /// Strings that one retrieved chunk must all contain.
    pub evidence: Vec<String>,
    /// Which chunking failure the question probes.
    #[serde(default)]
    pub pattern: String,
    /// Source file, relative to the docs folder.
    #[serde(default)]
    pub source: String,
}

/// Recall and MRR over a group of questions.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Metrics {
    /// Questions in the group.
    pub questions: usize,
    /// Answered at rank 1.
    pub recall_at_1: f64,
    /// Answered within the top 5.
    pub recall_at_5: f64,
    /// Answered within the top 10.
    pub recall_at_10: f64,
    /// Mean reciprocal rank of the first answering chunk, within the top 10.
    pub mrr_at_10: f64,
    /// Answered by any returned result (within k, or within the token budget).
    pub recall: f64,
}

/// Per-question outcome.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionResult {
    /// Question ID.
    pub id: String,
    /// Pattern.
    pub pattern: String,
    /// Rank of the first chunk holding all evidence, if any was retrieved.
    pub rank: Option<usize>,
    /// Path of the top hit.
    pub top_path: Option<String>,
}

/// The outcome of an evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    /// Hits retrieved per question.
    pub k: usize,
    /// The search mode.
    pub mode: SearchMode,
    /// The fusion rule (used by hybrid mode only).
    pub fusion: Fusion,
    /// All questions.
    pub overall: Metrics,
    /// By pattern.
    pub per_pattern: BTreeMap<String, Metrics>,
    /// Mean model tokens of one returned result (a chunk, or a passage with expansion).
    pub mean_tokens_per_chunk: f64,
    /// Mean model tokens handed back per question (all its results).
    pub mean_tokens_per_query: f64,
    /// Each question.
    pub questions: Vec<QuestionResult>,
    /// The questions not answered within k, with what was retrieved instead (for
    /// `eval --failures`; not part of the JSON report).
    #[serde(skip)]
    pub failures: Vec<Failure>,
}

/// A question no result answered: what was expected and what came back.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// Question ID.
    pub id: String,
    /// The question.
    pub question: String,
    /// Its pattern.
    pub pattern: String,
    /// Where the evidence is.
    pub source: String,
    /// The evidence strings one result had to hold.
    pub evidence: Vec<String>,
    /// The results, in rank order.
    pub retrieved: Vec<FailedResult>,
}

/// One result of a failed question.
#[derive(Debug, Clone, Serialize)]
pub struct FailedResult {
    /// Rank.
    pub rank: usize,
    /// Score.
    pub score: f32,
    /// The hit's chunk ID.
    pub chunk_id: String,
    /// Source path.
    pub path: String,
    /// Headings above it.
    pub heading_path: Vec<String>,
    /// Whether it came from the expected source file.
    pub from_source: bool,
    /// The evidence strings it does not hold.
    pub missing: Vec<String>,
    /// Its full text (the passage with expansion).
    pub text: String,
}

/// Collapses every run of whitespace to one space and trims, for evidence matching.
pub fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Parses a JSON-lines question set; blank lines are skipped.
/// A question whose evidence is empty (or only whitespace) would count as answered by any chunk,
/// and one without text asks nothing: both are rejected as bad input.
pub fn parse_questions(jsonl: &str) -> Result<Vec<Question>, String> {
    jsonl
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            let q: Question =
                serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
            if q.evidence.is_empty() || q.evidence.iter().any(|e| e.trim().is_empty()) {
                return Err(format!(
                    "line {}: question {:?} has no evidence (or an empty evidence string): \
                     it would count as answered by any chunk",
                    n + 1,
                    q.id
                ));
            }
            if q.question.trim().is_empty() {
                return Err(format!("line {}: question {:?} has no text", n + 1, q.id));
            }
            Ok(q)
        })
        .collect()
}

fn metrics(ranks: &[Option<usize>]) -> Metrics {
    let n = ranks.len();
    if n == 0 {
        return Metrics::default();
    }
    let within =
        |k: usize| ranks.iter().filter(|r| r.is_some_and(|r| r <= k)).count() as f64 / n as f64;
    let mrr = ranks
        .iter()
        .map(|r| match r {
            Some(r) if *r <= 10 => 1.0 / *r as f64,
            _ => 0.0,
        })
        .sum::<f64>()
        / n as f64;
    Metrics {
        questions: n,
        recall_at_1: within(1),
        recall_at_5: within(5),
        recall_at_10: within(10),
        mrr_at_10: mrr,
        recall: ranks.iter().filter(|r| r.is_some()).count() as f64 / n as f64,
    }
}

impl RagIndex {
    /// Runs every question against the index, retrieving `k` hits each in the default mode,
    /// as a caller that holds no label.
    pub fn evaluate(&self, questions: &[Question], k: usize, exact: bool) -> Result<EvalReport> {
        self.evaluate_with(
            questions,
            &SearchRequest::new("", Access::public()).k(k).exact(exact),
        )
    }

    /// Runs every question against the index with the settings of `request` (its query text
    /// is replaced by each question's, and the settings are checked with it).
    pub fn evaluate_with(
        &self,
        questions: &[Question],
        request: &SearchRequest,
    ) -> Result<EvalReport> {
        let k = request.hits();
        let mut results = Vec::with_capacity(questions.len());
        let mut failures = Vec::new();
        let mut tokens = 0u64;
        let mut returned = 0u64;
        for question in questions {
            let hits = self.search_with(&request.with_query(question.question.as_str()))?;
            let evidence: Vec<String> = question
                .evidence
                .iter()
                .map(|e| collapse_whitespace(e))
                .collect();
            let texts: Vec<String> = hits
                .iter()
                .map(|h| collapse_whitespace(&h.text()))
                .collect();
            let rank = hits.iter().zip(&texts).find_map(|(hit, text)| {
                evidence
                    .iter()
                    .all(|e| text.contains(e.as_str()))
                    .then_some(hit.rank)
            });
            tokens += hits.iter().map(|h| u64::from(h.result_tokens)).sum::<u64>();
            returned += hits.len() as u64;
            if rank.is_none() {
                failures.push(failure(question, &hits, &texts, &evidence));
            }
            results.push(QuestionResult {
                id: question.id.clone(),
                pattern: question.pattern.clone(),
                rank,
                top_path: hits.first().map(|h| h.chunk.path.clone()),
            });
        }
        let mut groups: BTreeMap<String, Vec<Option<usize>>> = BTreeMap::new();
        for r in &results {
            groups.entry(r.pattern.clone()).or_default().push(r.rank);
        }
        let all: Vec<Option<usize>> = results.iter().map(|r| r.rank).collect();
        Ok(EvalReport {
            k,
            mode: request.search_mode(),
            fusion: request.fusion_rule(),
            overall: metrics(&all),
            per_pattern: groups
                .iter()
                .map(|(p, ranks)| (p.clone(), metrics(ranks)))
                .collect(),
            mean_tokens_per_chunk: if returned == 0 {
                0.0
            } else {
                tokens as f64 / returned as f64
            },
            mean_tokens_per_query: if results.is_empty() {
                0.0
            } else {
                tokens as f64 / results.len() as f64
            },
            questions: results,
            failures,
        })
    }
}

fn failure(question: &Question, hits: &[Hit], texts: &[String], evidence: &[String]) -> Failure {
    Failure {
        id: question.id.clone(),
        question: question.question.clone(),
        pattern: question.pattern.clone(),
        source: question.source.clone(),
        evidence: question.evidence.clone(),
        retrieved: hits
            .iter()
            .zip(texts)
            .map(|(hit, text)| FailedResult {
                rank: hit.rank,
                score: hit.score,
                chunk_id: hit.chunk.chunk_id.clone(),
                path: hit.chunk.path.clone(),
                heading_path: hit.chunk.heading_path.clone(),
                from_source: hit.chunk.path == question.source,
                missing: question
                    .evidence
                    .iter()
                    .zip(evidence)
                    .filter(|(_, e)| !text.contains(e.as_str()))
                    .map(|(original, _)| original.clone())
                    .collect(),
                text: hit.text(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_count_ranks_within_cutoffs() {
        let m = metrics(&[Some(1), Some(3), Some(7), None]);
        assert_eq!(m.questions, 4);
        assert_eq!(m.recall_at_1, 0.25);
        assert_eq!(m.recall_at_5, 0.5);
        assert_eq!(m.recall_at_10, 0.75);
        assert!((m.mrr_at_10 - (1.0 + 1.0 / 3.0 + 1.0 / 7.0) / 4.0).abs() < 1e-12);
    }

    #[test]
    fn whitespace_is_collapsed_on_both_sides() {
        assert_eq!(collapse_whitespace("  a\n\n  b\tc "), "a b c");
    }
}
