//! `rag-index stats --health`: what quietly degrades retrieval, in one report.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use crate::output::{json_line, line, truncate};
use crate::setup::open_for_reading;
use crate::terminal_text::one_line;

/// Items listed per section in the text report (`--json` has them all).
const SHOWN: usize = 10;

pub fn run(
    model_dir: Option<&Path>,
    index: Option<PathBuf>,
    json: bool,
    stale_days: u64,
) -> Result<ExitCode> {
    let index = open_for_reading(model_dir, index)?;
    let report = index.health(stale_days)?;
    let mut out = std::io::stdout().lock();
    if json {
        json_line(&mut out, &report)?;
        return Ok(ExitCode::SUCCESS);
    }
    line(
        &mut out,
        format_args!("generation {}, {} chunks", report.generation, report.chunks),
    )?;
    line(
        &mut out,
        format_args!("model    {}", report.model_fingerprint),
    )?;
    line(
        &mut out,
        format_args!("chunker  {}", report.chunker_fingerprint),
    )?;
    line(
        &mut out,
        format_args!("duplicated texts: {}", report.duplicates.len()),
    )?;
    for d in report.duplicates.iter().take(SHOWN) {
        let places: Vec<&str> = d.places.iter().map(|(p, _)| p.as_str()).collect();
        line(
            &mut out,
            format_args!(
                "  \"{}…\" in {}",
                truncate(&d.preview, 60),
                places.join(", ")
            ),
        )?;
    }
    line(
        &mut out,
        format_args!(
            "sources not modified for over {} days: {}",
            report.stale_after_days,
            report.stale_sources.len()
        ),
    )?;
    for s in report.stale_sources.iter().take(SHOWN) {
        line(
            &mut out,
            format_args!("  {} ({}, {} days)", one_line(&s.path), s.modified, s.days),
        )?;
    }
    line(
        &mut out,
        format_args!("files with no chunk: {}", report.empty_files.len()),
    )?;
    for path in report.empty_files.iter().take(SHOWN) {
        line(&mut out, format_args!("  {}", one_line(path)))?;
    }
    line(
        &mut out,
        format_args!(
            "chunks near the {}-token cap: {}",
            report.token_cap,
            report.near_token_cap.len()
        ),
    )?;
    for c in report.near_token_cap.iter().take(SHOWN) {
        line(
            &mut out,
            format_args!(
                "  {} {} ({} tokens)",
                one_line(&c.path),
                c.chunk_id,
                c.tokens
            ),
        )?;
    }
    match &report.last_sync {
        None => line(&mut out, "last sync: not recorded")?,
        Some(last) => {
            line(
                &mut out,
                format_args!(
                    "last sync {}: {} failed, {} with warnings",
                    last.finished_at,
                    last.errors.len(),
                    last.warnings.len()
                ),
            )?;
            for e in last.errors.iter().chain(&last.warnings).take(SHOWN * 2) {
                line(
                    &mut out,
                    format_args!(
                        "  {}: {}",
                        one_line(&e.path),
                        one_line(&truncate(&e.error, 100))
                    ),
                )?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
