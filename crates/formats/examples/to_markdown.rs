//! Prints the Markdown of one file: `cargo run --release --example to_markdown -- FILE`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: to_markdown FILE");
        return ExitCode::from(2);
    };
    let Some(format) = rag_formats::Format::from_path(&path) else {
        eprintln!("{path}: unknown extension");
        return ExitCode::from(2);
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rag_formats::convert(format, &bytes) {
        Ok(doc) => {
            if let Some(t) = &doc.title {
                eprintln!("title: {t}");
            }
            for w in &doc.warnings {
                eprintln!("warning: {w}");
            }
            eprintln!("spans: {}", doc.spans.len());
            print!("{}", doc.markdown);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{path}: {e}");
            ExitCode::FAILURE
        }
    }
}
