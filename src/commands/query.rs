//! `rag-index query`: search the index.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use rag_index_core::{Hit, MAX_QUERY_BYTES};

use super::bounded_lines;
use super::search_flags::SearchFlags;
use crate::output::{json_line, line, truncate};
use crate::setup::open_for_reading;
use crate::terminal_text::one_line;

/// Most queries one `--queries` file may hold.
const MAX_QUERIES: usize = 1_000_000;

/// `rag-index query`'s arguments.
#[derive(clap::Args)]
pub struct QueryArgs {
    /// The query (or use --queries).
    pub text: Option<String>,
    #[arg(long, value_name = "PATH")]
    pub index: Option<PathBuf>,
    /// Number of results (default 5; with --budget, as many as it takes).
    #[arg(short)]
    pub k: Option<usize>,
    /// One JSON object per query, one per line.
    #[arg(long)]
    pub json: bool,
    /// Show everything retrieval hands the model: per result its scores and ranks, chunk ID,
    /// path, headings, byte range, tokens, metadata and the full text with its boundaries.
    #[arg(long)]
    pub explain: bool,
    /// A file with one query per line.
    #[arg(long, value_name = "FILE")]
    pub queries: Option<PathBuf>,
    #[command(flatten)]
    pub search: SearchFlags,
}

#[derive(serde::Serialize)]
struct QueryLine<'a> {
    query: &'a str,
    hits: &'a [Hit],
}

pub fn run(model_dir: Option<&Path>, args: QueryArgs) -> Result<ExitCode> {
    let k = args.search.results(args.k, 5);
    let queries = match (args.text, &args.queries) {
        (Some(text), None) => {
            if text.len() > MAX_QUERY_BYTES {
                bail!("the query is longer than {MAX_QUERY_BYTES} bytes");
            }
            vec![text]
        }
        (None, Some(file)) => {
            let input = std::fs::File::open(file)
                .with_context(|| format!("cannot read queries file {}", file.display()))?;
            let what = file.display().to_string();
            bounded_lines(
                std::io::BufReader::new(input),
                &what,
                MAX_QUERY_BYTES,
                MAX_QUERIES,
            )?
            .into_iter()
            .filter(|l| !l.trim().is_empty())
            .collect()
        }
        (Some(_), Some(_)) => bail!("give either a query TEXT or --queries FILE, not both"),
        (None, None) => bail!("give a query TEXT or --queries FILE"),
    };
    if k == 0 {
        bail!("-k must be at least 1");
    }
    let index = open_for_reading(model_dir, args.index)?;
    let mut out = std::io::stdout().lock();
    for query in &queries {
        let hits = index.search_with(&args.search.request(query, k)?)?;
        if args.json {
            let record = QueryLine { query, hits: &hits };
            json_line(&mut out, &record)?;
            continue;
        }
        line(&mut out, format_args!("query: {query}"))?;
        if args.explain {
            for hit in &hits {
                crate::explain::explain(&mut out, hit)?;
            }
            line(&mut out, "")?;
            continue;
        }
        for hit in &hits {
            let c = &hit.chunk;
            let heading = c.heading_path.join(" > ");
            line(
                &mut out,
                format_args!(
                    "{:>2}. {:.3}  {}  [{}]",
                    hit.rank,
                    hit.score,
                    one_line(&c.path),
                    one_line(&heading)
                ),
            )?;
            let text = hit.text();
            let body = match hit.passage.is_empty() {
                true => c.body(),
                false => text.split_once("\n\n").map_or(text.as_str(), |(_, b)| b),
            };
            for body in body.lines().filter(|l| !l.trim().is_empty()).take(3) {
                line(&mut out, format_args!("      {}", truncate(body, 110)))?;
            }
        }
        line(&mut out, "")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
