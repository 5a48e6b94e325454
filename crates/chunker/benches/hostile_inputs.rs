//! Chunking throughput on hostile inputs next to normal prose, in the same run: 1 MB of base64
//! (one unbroken line, and wrapped at 76 columns), 1 MB of comma-separated numbers (without and
//! with spaces), 1 MB of colon-fenced boxes (none closed, each closed, nested 700 deep), 1 MB of
//! boxes between Hugo shortcodes, 1 MB of real prose (Traefik docs concatenated), and plain text
//! (the prose, Vim-style entries, underlined headings, one entry 1 MB long). Every step
//! of chunking must stay near-linear: a 256 KB data URI once took minutes.
//!
//! `cargo bench -p rag-chunker --bench hostile_inputs`

use std::sync::Arc;
use std::time::{Duration, Instant};

use rag_chunker::{Chunker, ChunkerConfig};

#[path = "../tests/common/hf.rs"]
mod hf;
use hf::Hf;

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/corpora/traefik/docs"
);
const SIZE: usize = 1 << 20;

fn base64(n: usize) -> String {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x = 0x2545f4914f6cdd1du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            alphabet[(x % 64) as usize] as char
        })
        .collect()
}

/// About [`SIZE`] bytes of consecutive numbers joined by `sep`.
fn numbers(sep: &str) -> String {
    let mut out = String::with_capacity(SIZE + 16);
    let mut i = 0u64;
    while out.len() < SIZE {
        out.push_str(&i.to_string());
        out.push_str(sep);
        i += 1;
    }
    out
}

/// `unit` repeated to about [`SIZE`] bytes.
fn repeat_to_size(unit: &str) -> String {
    unit.repeat(SIZE / unit.len())
}

/// Boxes inside boxes, each opening fence one colon longer, then every closing fence.
fn nested_fences() -> String {
    let levels = 700;
    let mut out = String::with_capacity(SIZE);
    for depth in 0..levels {
        out.push_str(&format!(
            "{} note {depth}\n\nLevel {depth}.\n\n",
            ":".repeat(3 + depth)
        ));
    }
    for depth in (0..levels).rev() {
        out.push_str(&format!("{}\n\n", ":".repeat(3 + depth)));
    }
    out
}

fn prose(n: usize) -> String {
    let mut out = String::new();
    let mut stack = vec![std::path::PathBuf::from(CORPUS)];
    let mut files = Vec::new();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(dir).expect("corpus").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    files.sort();
    for f in files.iter().cycle() {
        if out.len() >= n {
            break;
        }
        out.push_str(&std::fs::read_to_string(f).expect("read"));
        out.push_str("\n\n");
    }
    out
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let hf = Arc::new(Hf::load());
    let wrapped: String = base64(SIZE)
        .as_bytes()
        .chunks(76)
        .map(|l| format!("{}\n", std::str::from_utf8(l).expect("ascii")))
        .collect();
    let mut inputs: Vec<(&str, String)> = vec![
        ("prose (Traefik docs)", prose(SIZE)),
        (
            "base64, one line (data URI)",
            format!("# Shot\n\n![s](data:image/png;base64,{})\n", base64(SIZE)),
        ),
        ("base64, 76 columns", format!("# Key\n\n{wrapped}")),
        ("numbers `1,2,3` (no spaces)", numbers(",")),
        ("numbers `1, 2, 3`", numbers(", ")),
        (
            "colon fences, none closed",
            repeat_to_size("::: tip Box\n\nThe text of a box.\n\n"),
        ),
        (
            "colon fences, each closed",
            repeat_to_size("::: tip Box\nThe text of a box.\n:::\n\n"),
        ),
        ("colon fences, nested deep", nested_fences()),
        (
            "one numbered list, 1 MB",
            format!(
                "Do these in order:\n\n{}",
                (1..)
                    .map(|i| format!("{i}. Step {i} turns the valve and waits.\n"))
                    .scan(0, |len, line| {
                        *len += line.len();
                        (*len <= SIZE).then_some(line)
                    })
                    .collect::<String>()
            ),
        ),
        (
            "Hugo shortcode boxes",
            repeat_to_size("{{% alert title=\"Note\" %}}\nThe text of a box.\n{{% /alert %}}\n\n"),
        ),
    ];
    // Plain text (`.txt` in the name): prose, Vim-style entries, underlined headings, and one
    // entry whose indented text runs for the whole megabyte.
    inputs.extend([
        ("prose as plain text (.txt)", prose(SIZE)),
        (
            "Vim entries (.txt)",
            repeat_to_size("\t\t\t\t*:cmd*\n:cmd {arg}\tDoes a thing.\n\t\t\tMore about it.\n\n"),
        ),
        (
            "underlined headings (.txt)",
            repeat_to_size("Title\n=====\n\nText.\n\n"),
        ),
        (
            "one entry, 1 MB (.txt)",
            format!(
                "head\n{}",
                repeat_to_size("\t\tIndented text of one entry.\n\n")
            ),
        ),
    ]);
    println!(
        "{:<30} {:>9} {:>8} {:>9} {:>8}",
        "input", "bytes", "chunks", "best ms", "MB/s"
    );
    for (name, text) in &inputs {
        let mut best = Duration::MAX;
        let mut chunks = 0;
        for _ in 0..3 {
            // A fresh chunker each round: no word-count cache carried over.
            let chunker = Chunker::new(hf.clone(), ChunkerConfig::default()).expect("config");
            let t = Instant::now();
            let path = if name.contains(".txt") {
                "bench.txt"
            } else {
                "bench.md"
            };
            let doc = chunker.chunk(path, text).expect("chunk");
            best = best.min(t.elapsed());
            chunks = doc.chunks.len();
        }
        println!(
            "{:<30} {:>9} {:>8} {:>9.1} {:>8.2}",
            name,
            text.len(),
            chunks,
            best.as_secs_f64() * 1e3,
            text.len() as f64 / 1e6 / best.as_secs_f64()
        );
    }
}
