//! `rag-index verify`: check every invariant of the index; exit 1 when one fails.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use rag_index_core::{Error as CoreError, IndexConfig, OpenMode, RagIndex, VerifyReport};

use crate::output::{json_line, line};
use crate::setup::{load_embedder, locate_index};
use crate::terminal_text::one_line;

#[derive(serde::Serialize)]
struct VerifyJson<'a> {
    ok: bool,
    #[serde(flatten)]
    report: &'a VerifyReport,
}

pub fn run(
    model_dir: Option<&Path>,
    index: Option<PathBuf>,
    repair: bool,
    json: bool,
) -> Result<ExitCode> {
    let location = locate_index(index, None)?;
    let embedder = load_embedder(model_dir)?;
    let mode = match repair {
        true => OpenMode::Writer { wait: false },
        false => OpenMode::Reader,
    };
    let opened = RagIndex::open_at(&location, embedder, IndexConfig::default(), mode);
    let report = match opened {
        Ok(index) => index.verify(repair)?,
        // A store that cannot even be opened is the worst finding, still a report.
        Err(e @ (CoreError::Damaged { .. } | CoreError::Store(_))) => VerifyReport {
            problems: vec![e.to_string()],
            ..VerifyReport::default()
        },
        Err(e) => {
            return Err(anyhow::Error::new(e).context(format!("cannot open index {location}")));
        }
    };
    let mut out = std::io::stdout().lock();
    if json {
        let record = VerifyJson {
            ok: report.ok(),
            report: &report,
        };
        json_line(&mut out, &record)?;
    } else {
        for repaired in &report.repaired {
            line(&mut out, format_args!("repaired: {}", one_line(repaired)))?;
        }
        for problem in &report.problems {
            line(&mut out, format_args!("problem: {}", one_line(problem)))?;
        }
        line(
            &mut out,
            format_args!(
                "{}: {} files, {} chunks, {} vectors, {} problem{}",
                if report.ok() { "ok" } else { "FAILED" },
                report.files,
                report.chunks,
                report.vectors,
                report.problems.len(),
                if report.problems.len() == 1 { "" } else { "s" }
            ),
        )?;
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
