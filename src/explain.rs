//! `query --explain`: everything retrieval hands the model, untruncated, with each chunk's
//! boundaries drawn so a reader sees exactly where one chunk ends and the next begins.

use std::io::Write;

use rag_index_core::{Hit, IndexedChunk, SignalRank};

use crate::output::line;
use crate::terminal_text::one_line;

/// Prints one result.
pub fn explain(out: &mut impl Write, hit: &Hit) -> std::io::Result<()> {
    let signal =
        |name: &str, s: Option<SignalRank>| s.map(|s| format!("{name} #{} {:.4}", s.rank, s.score));
    let signals: Vec<String> = hit
        .signals
        .iter()
        .flat_map(|s| [signal("dense", s.dense), signal("lexical", s.lexical)])
        .flatten()
        .collect();
    let signals = match signals.is_empty() {
        true => String::new(),
        false => format!("  ({})", signals.join(", ")),
    };
    line(
        out,
        format_args!(
            "#{} score {:.4}{signals}  {} tokens",
            hit.rank, hit.score, hit.result_tokens
        ),
    )?;
    if hit.passage.is_empty() {
        return chunk(out, &hit.chunk, None);
    }
    for part in &hit.passage {
        chunk(out, &part.chunk, Some(part.is_hit))?;
    }
    Ok(())
}

fn chunk(out: &mut impl Write, c: &IndexedChunk, is_hit: Option<bool>) -> std::io::Result<()> {
    let role = match is_hit {
        None => "",
        Some(true) => " [hit]",
        Some(false) => " [context]",
    };
    line(
        out,
        format_args!(
            "   chunk {}{role}  {}  bytes {}..{}  ordinal {}  {} tokens",
            c.chunk_id,
            one_line(&c.path),
            c.byte_range.start,
            c.byte_range.end,
            c.ordinal,
            c.tokens
        ),
    )?;
    line(
        out,
        format_args!("   headings: {}", one_line(&c.heading_path.join(" > "))),
    )?;
    if !c.metadata.is_empty() {
        let metadata = serde_json::Value::Object(c.metadata.clone());
        line(out, format_args!("   metadata: {metadata}"))?;
    }
    line(out, "   ┌───── text")?;
    for text_line in c.text.lines() {
        line(out, format_args!("   │ {text_line}"))?;
    }
    line(out, "   └───── end")
}
