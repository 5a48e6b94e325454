//! `rag-index eval`: retrieval quality over a question set.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::search_flags::SearchFlags;
use crate::output::line;
use crate::setup::open_for_reading;

/// Question sets are small; a larger file is not one.
const MAX_QUESTIONS_BYTES: u64 = 64 << 20;

pub struct EvalArgs {
    pub questions: PathBuf,
    pub index: Option<PathBuf>,
    pub k: usize,
    pub json: bool,
    pub search: SearchFlags,
}

pub fn run(model_dir: Option<&Path>, args: EvalArgs) -> Result<ExitCode> {
    let file = &args.questions;
    let size = std::fs::metadata(file)
        .with_context(|| format!("cannot read {}", file.display()))?
        .len();
    if size > MAX_QUESTIONS_BYTES {
        anyhow::bail!(
            "{}: larger than {MAX_QUESTIONS_BYTES} bytes",
            file.display()
        );
    }
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let parsed = rag_index_core::eval::parse_questions(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let index = open_for_reading(model_dir, args.index)?;
    let report = index.evaluate_with(&parsed, &args.search.request("", args.k.max(1)))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        line(&mut out, serde_json::to_string(&report)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    line(
        &mut out,
        format_args!(
            "{:<10} {:>4} {:>6} {:>6} {:>6} {:>7}",
            "pattern", "n", "R@1", "R@5", "R@10", "MRR@10"
        ),
    )?;
    let rows = std::iter::once(("overall".to_string(), &report.overall))
        .chain(report.per_pattern.iter().map(|(p, m)| (p.clone(), m)));
    for (name, m) in rows {
        line(
            &mut out,
            format_args!(
                "{:<10} {:>4} {:>6.3} {:>6.3} {:>6.3} {:>7.3}",
                name, m.questions, m.recall_at_1, m.recall_at_5, m.recall_at_10, m.mrr_at_10
            ),
        )?;
    }
    line(
        &mut out,
        format_args!(
            "mean tokens per returned chunk: {:.1}",
            report.mean_tokens_per_chunk
        ),
    )?;
    Ok(ExitCode::SUCCESS)
}
