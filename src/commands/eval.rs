//! `rag-index eval`: retrieval quality over a question set.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::search_flags::SearchFlags;
use crate::output::{json_line, line};
use crate::setup::open_for_reading;

/// Question sets are small; a larger file is not one.
const MAX_QUESTIONS_BYTES: u64 = 64 << 20;

/// `rag-index eval`'s arguments.
#[derive(clap::Args)]
pub struct EvalArgs {
    /// The question set.
    pub questions: PathBuf,
    #[arg(long, value_name = "PATH")]
    pub index: Option<PathBuf>,
    /// Results retrieved per question (default 10; with --budget, as many as it takes).
    #[arg(short)]
    pub k: Option<usize>,
    #[arg(long)]
    pub json: bool,
    /// Write every question not answered within k to FILE (JSON lines): the question, its
    /// evidence and source, and the results with the evidence each one lacks.
    #[arg(long, value_name = "FILE")]
    pub failures: Option<PathBuf>,
    #[command(flatten)]
    pub search: SearchFlags,
}

/// One JSON object per unanswered question. Written to a new temporary file and renamed, so an
/// interrupted run never leaves half a file under the name asked for. An existing file is
/// replaced only when it is empty or an earlier failures file: nothing else is overwritten.
fn write_failures(path: &Path, failures: &[rag_index_core::eval::Failure]) -> Result<()> {
    if let Ok(existing) = std::fs::read(path) {
        let first = existing.split(|&b| b == b'\n').next().unwrap_or_default();
        let ours = serde_json::from_slice::<serde_json::Value>(first)
            .is_ok_and(|v| v.get("evidence").is_some() && v.get("retrieved").is_some());
        if !existing.is_empty() && !ours {
            anyhow::bail!(
                "{} exists and is not a failures file written by rag-index; not overwritten",
                path.display()
            );
        }
    }
    let mut text = String::new();
    for failure in failures {
        text.push_str(&serde_json::to_string(failure)?);
        text.push('\n');
    }
    let name = path
        .file_name()
        .map_or_else(|| "failures".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

pub fn run(model_dir: Option<&Path>, args: EvalArgs) -> Result<ExitCode> {
    let k = args.search.results(args.k, 10);
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
    let report = index.evaluate_with(&parsed, &args.search.request("", k.max(1))?)?;
    if let Some(path) = &args.failures {
        write_failures(path, &report.failures)?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        json_line(&mut out, &report)?;
        return Ok(ExitCode::SUCCESS);
    }
    line(
        &mut out,
        format_args!(
            "{:<10} {:>4} {:>6} {:>6} {:>6} {:>7} {:>6}",
            "pattern", "n", "R@1", "R@5", "R@10", "MRR@10", "R@all"
        ),
    )?;
    let rows = std::iter::once(("overall".to_string(), &report.overall))
        .chain(report.per_pattern.iter().map(|(p, m)| (p.clone(), m)));
    for (name, m) in rows {
        line(
            &mut out,
            format_args!(
                "{:<10} {:>4} {:>6.3} {:>6.3} {:>6.3} {:>7.3} {:>6.3}",
                name,
                m.questions,
                m.recall_at_1,
                m.recall_at_5,
                m.recall_at_10,
                m.mrr_at_10,
                m.recall
            ),
        )?;
    }
    line(
        &mut out,
        format_args!(
            "mean tokens per returned result: {:.1}; per question: {:.1}",
            report.mean_tokens_per_chunk, report.mean_tokens_per_query
        ),
    )?;
    Ok(ExitCode::SUCCESS)
}
