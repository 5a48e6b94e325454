//! The chunking rules of issue 3, one small document each, with the real tokenizer.

mod common;

use std::sync::Arc;

use rag_chunker::{ChunkError, Chunker, ChunkerConfig, Document, TokenCounter};

fn chunk(path: &str, src: &str) -> Document {
    common::chunker().chunk(path, src).expect("chunk")
}

fn small(max: usize, target: usize) -> Chunker {
    Chunker::new(
        common::hf(),
        ChunkerConfig {
            max_tokens: max,
            target_tokens: target,
            overlap_tokens: 8,
            ..ChunkerConfig::default()
        },
    )
    .expect("config")
}

fn assert_cap(doc: &Document, max: usize) {
    let hf = common::hf();
    for c in &doc.chunks {
        assert_eq!(c.tokens, hf.count(&c.text), "reported count: {}", c.text);
        assert!(c.tokens <= max, "{} > {max}: {}", c.tokens, c.text);
    }
}

#[test]
fn front_matter_becomes_metadata_and_title() {
    let src = "---\ntitle: \"Guide\"\ntags: [a, b]\nweight: 3\nnested: {x: 1}\n---\n\n# Heading One\n\nBody text.\n";
    let doc = chunk("dir/guide.md", src);
    assert_eq!(doc.title, "Guide");
    assert_eq!(doc.metadata["weight"], 3);
    assert_eq!(doc.chunks.len(), 1);
    let c = &doc.chunks[0];
    assert_eq!(c.heading_path, ["Guide", "Heading One"]);
    assert!(c.text.starts_with("Guide > Heading One\n\n# Heading One"));
    assert!(!c.text.contains("weight"), "front matter is not embedded");
    assert_eq!(c.metadata["tags"], serde_json::json!(["a", "b"]));
    assert!(!c.metadata.contains_key("nested"));
    assert_eq!(&src[c.byte_range.clone()], "# Heading One\n\nBody text.");
}

#[test]
fn malformed_front_matter_is_text_with_a_warning() {
    let src = "---\ntitle: [unclosed\n---\n\nBody.\n";
    let doc = chunk("x.md", src);
    assert_eq!(doc.warnings.len(), 1, "{:?}", doc.warnings);
    assert!(doc.chunks.iter().any(|c| c.text.contains("unclosed")));
    assert_eq!(doc.title, "x");
}

#[test]
fn title_falls_back_to_h1_then_file_name() {
    assert_eq!(chunk("a/b.md", "intro\n\n# The H1\n\ntext").title, "The H1");
    assert_eq!(chunk("a/b.md", "## Only H2\n\ntext").title, "b");
    let doc = chunk("a/b.md", "# The H1\n\n## Sub\n\ntext");
    assert_eq!(
        doc.chunks[0].heading_path,
        ["The H1", "Sub"],
        "H1 equal to the title is not repeated"
    );
}

#[test]
fn titles_headings_and_front_matter_copied_to_every_chunk_are_bounded() {
    let chunker = common::chunker();
    let sections: String = (0..50)
        .map(|i| format!("## Section {i}\n\nParagraph {i} about topic {i}.\n\n"))
        .collect();
    // A converted page's title and a heading, each a megabyte: every chunk would carry both.
    let title = "Title ".repeat(200_000);
    let src = format!("# {}\n\nIntro.\n\n{sections}", "Heading ".repeat(150_000));
    let doc = chunker
        .chunk_rendered("p.html", &src, Some(&title))
        .unwrap();
    assert!(doc.chunks.len() > 40);
    for c in &doc.chunks {
        assert!(
            c.title.len() <= 303 && c.title.ends_with('…'),
            "{}",
            c.title.len()
        );
        assert!(
            c.heading_path.iter().all(|h| h.len() <= 303),
            "{:?}",
            c.heading_path
        );
        assert!(
            c.text.starts_with(&c.heading_path[0][..100]),
            "the breadcrumb leads"
        );
    }
    assert!(
        doc.chunks
            .iter()
            .any(|c| c.heading_path.last().unwrap() == "Section 49")
    );

    // A long front matter value is left out of the chunks' copies, with a warning.
    let md = format!(
        "---\ntitle: Guide\ntags: [a, b]\ndescription: \"{}\"\n---\n{sections}",
        "D ".repeat(30_000)
    );
    let doc = chunker.chunk("guide.md", &md).unwrap();
    for c in &doc.chunks {
        assert_eq!(c.metadata["tags"], serde_json::json!(["a", "b"]));
        assert!(c.metadata.get("description").is_none());
    }
    assert!(
        doc.warnings
            .iter()
            .any(|w| w.contains("`description` (60002 bytes)")),
        "{:?}",
        doc.warnings
    );
}

#[test]
fn sections_never_merge_and_headings_never_stand_alone() {
    let src = "# T\n\n## A\n\nAlpha one.\n\nAlpha two.\n\n## B\n\n### B1\n\nBeta.\n\n## C\n";
    let doc = chunk("t.md", src);
    let texts: Vec<&str> = doc.chunks.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "T > A\n\n# T\n\n## A\n\nAlpha one.\n\nAlpha two.",
            "T > B > B1\n\n## B\n\n### B1\n\nBeta.\n\n## C",
        ],
        "a trailing empty heading joins the previous chunk; an empty parent joins its child"
    );
    assert!(
        texts
            .iter()
            .all(|t| !t.contains("Alpha") || !t.contains("Beta"))
    );
}

#[test]
fn oversized_table_pieces_repeat_header_and_record_keys() {
    let mut src = String::from(
        "# Options\n\nIntro.\n\n| Field | Description | Default |\n|:------------|:----------------|:---|\n",
    );
    for i in 0..60 {
        src.push_str(&format!(
            "| `opt{i}` | Option number {i} controls the widget frobnication level. | {i}s |\n"
        ));
    }
    let doc = chunk("opts.md", &src);
    assert!(doc.chunks.len() > 2);
    assert_cap(&doc, 256);
    let mut keys = Vec::new();
    for c in doc
        .chunks
        .iter()
        .filter(|c| !c.metadata.contains_key("record"))
    {
        let body = c.text.split_once("\n\n").map(|x| x.1).unwrap_or("");
        let table = &body[body.find("| Field").expect("header in every piece")..];
        assert!(
            table.starts_with("| Field | Description | Default |\n|:---|:---|:---|\n"),
            "{table}"
        );
        keys.extend(
            c.metadata["table_keys"]
                .as_array()
                .expect("keys")
                .iter()
                .cloned(),
        );
    }
    assert_eq!(keys.len(), 60);
    assert_eq!(keys[0], "opt0");
}

#[test]
fn oversized_code_is_refenced_between_lines() {
    let mut src = String::from("## Config\n\n```yaml tab=\"File (YAML)\"\n");
    for i in 0..120 {
        src.push_str(&format!("key{i}: value-{i}\n"));
    }
    src.push_str("```\n");
    let doc = chunk("c.md", &src);
    assert!(doc.chunks.len() > 1);
    assert_cap(&doc, 256);
    for c in &doc.chunks {
        let body = c.text.split_once("\n\n").map(|x| x.1).unwrap_or("");
        let body = body.strip_prefix("## Config\n\n").unwrap_or(body);
        assert!(body.starts_with("```yaml tab=\"File (YAML)\"\n"), "{body}");
        assert!(body.ends_with("\n```"), "{body}");
        assert!(
            body.lines()
                .all(|l| l.starts_with("key") || l.starts_with("```")),
            "split mid-line"
        );
    }
}

#[test]
fn oversized_code_in_a_list_item_is_refenced_at_its_column() {
    // Inside an item the fences are indented: a repeated fence at the margin would not be
    // closed by the indented closing one, and what follows would read as code.
    let mut src = String::from("## Install\n\n1. Write the config:\n\n   ```yaml\n");
    for i in 0..120 {
        src.push_str(&format!("   key{i}: value-{i}\n"));
    }
    src.push_str("   ```\n\n2. Start the server.\n");
    let doc = chunk("c.md", &src);
    assert!(doc.chunks.len() > 1);
    assert_cap(&doc, 256);
    for c in &doc.chunks {
        let fences: Vec<&str> = c.text.lines().filter(|l| l.contains("```")).collect();
        assert_eq!(fences.len() % 2, 0, "{}", c.text);
        for f in fences {
            assert!(
                f.starts_with("   ```") || f.starts_with("1. ```"),
                "{f:?} in {}",
                c.text
            );
        }
    }
}

#[test]
fn oversized_list_repeats_its_intro() {
    let mut src = String::from("## Recovery\n\nIf the disk fills up:\n\n");
    for i in 1..=30 {
        src.push_str(&format!("{i}. Step number {i}: stop the writer, rotate the segment files and verify checksums.\n"));
    }
    let doc = chunk("r.md", &src);
    assert!(doc.chunks.len() > 1);
    assert_cap(&doc, 256);
    for c in &doc.chunks {
        assert!(c.text.contains("If the disk fills up:\n\n"), "{}", c.text);
    }
    let last = doc.chunks.last().expect("chunks");
    assert!(last.text.contains("30. Step number 30"));
}

#[test]
fn a_list_that_fits_a_chunk_is_not_split_from_its_long_intro() {
    // Intro and list do not fit one chunk together; the list fits one alone. It is kept whole
    // under the intro's last sentence instead of leaving its first item behind with the intro.
    let context: Vec<String> = (0..16)
        .map(|i| format!("Sentence {i} explains when schema errors are detected by the engine."))
        .collect();
    let src = format!(
        "## Errors\n\n{} Foreign key errors are reported if:\n\n\
         - The parent table does not exist, or\n\
         - The parent key columns named in the constraint do not exist, or\n\
         - The parent key columns are not the primary key and have no unique index, or\n\
         - The child names no parent columns and the column counts do not match.\n",
        context.join(" ")
    );
    let doc = chunk("e.md", &src);
    assert_cap(&doc, 256);
    let items = [
        "parent table does not exist",
        "columns named in the constraint",
        "have no unique index",
        "column counts do not match",
    ];
    let with_items: Vec<&str> = doc
        .chunks
        .iter()
        .filter(|c| items.iter().any(|i| c.text.contains(i)))
        .map(|c| c.text.as_str())
        .collect();
    assert_eq!(with_items.len(), 1, "{with_items:#?}");
    assert!(items.iter().all(|i| with_items[0].contains(i)));
    assert!(
        with_items[0].contains("\n\nForeign key errors are reported if:\n\n- The parent table"),
        "{}",
        with_items[0]
    );
    // The intro paragraph itself is whole in the chunk before.
    assert!(
        doc.chunks
            .iter()
            .any(|c| c.text.contains("Sentence 0 explains")
                && c.text.contains("Sentence 15 explains"))
    );
}

#[test]
fn a_heading_and_its_sentence_lead_the_first_piece_of_an_oversized_block() {
    // The block's first run of lines (up to its first blank line) fits a piece but not the room
    // beside the heading and sentence: it is cut to that room rather than leaving them a chunk
    // of their own.
    let sentence = "Run the following on every node of the cluster before the service starts, \
                    and again after each kernel upgrade, because the limits reset on reboot.";
    for first_run in 26..42 {
        let mut src = format!("## Limits\n\n{sentence}\n\n```sh\n");
        for i in 0..first_run + 20 {
            if i == first_run {
                src.push('\n');
            }
            src.push_str(&format!("ulimit -n {}\n", 1024 + i));
        }
        src.push_str("```\n");
        let doc = chunk("limits.md", &src);
        assert!(doc.chunks.len() > 1, "{first_run}: one chunk");
        assert_cap(&doc, 256);
        let lead = &doc.chunks[0];
        assert!(
            lead.text.contains("kernel upgrade") && lead.text.contains("ulimit -n 1024\n"),
            "{first_run}: the heading and sentence stand alone:\n{}",
            lead.text
        );
        for i in 0..first_run + 20 {
            let line = format!("ulimit -n {}\n", 1024 + i);
            assert!(
                doc.chunks.iter().any(|c| c.text.contains(&line)),
                "{line} lost"
            );
        }
    }
}

#[test]
fn atomic_blocks_that_fit_are_never_split() {
    let src = "## S\n\nSome text.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n```sh\necho one\n\necho two\n```\n\n- x\n- y\n";
    let doc = chunk("s.md", src);
    assert_eq!(doc.chunks.len(), 1);
    assert!(doc.chunks[0].text.ends_with("- x\n- y"));
}

#[test]
fn a_row_over_the_cap_splits_between_sentences_and_every_piece_names_its_row() {
    let rules: Vec<String> = (0..40)
        .map(|i| format!("Rule {i} says how a text value turns into an integer here."))
        .collect();
    let src = format!(
        "# Casts\n\n| Affinity | Conversion |\n|---|---|\n| REAL | Reals round toward zero. |\n\
         | INTEGER | {} |\n| TEXT | Text stays text. |\n",
        rules.join(" ")
    );
    let chunker = common::chunker();
    for (doc, header, lead) in [
        (
            chunker.chunk("casts.md", &src).unwrap(),
            "| Affinity | Conversion |\n|---|---|\n",
            "| INTEGER | ",
        ),
        // Converted from a page: cells joined by tabs, in the split row's pieces too.
        (
            chunker.chunk_rendered("casts.html", &src, None).unwrap(),
            "Affinity\tConversion\n",
            "INTEGER\t",
        ),
    ] {
        assert_cap(&doc, 256);
        let pieces: Vec<&str> = doc
            .chunks
            .iter()
            .filter(|c| !c.metadata.contains_key("record") && c.text.contains("Rule "))
            .map(|c| c.text.split_once("\n\n").unwrap().1)
            .collect();
        assert!(pieces.len() > 1, "{pieces:?}");
        for (k, piece) in pieces.iter().enumerate() {
            // The first piece opens with the heading; every piece has the table's header.
            let at = piece.find(header).unwrap_or_else(|| panic!("{piece}"));
            let body = &piece[at + header.len()..];
            let body = body.lines().find(|l| l.contains("Rule ")).unwrap();
            // Each piece is whole sentences of the row, the later ones under its first cell.
            if k > 0 {
                let rest = body.strip_prefix(lead).unwrap_or_else(|| panic!("{body}"));
                assert!(rest.starts_with("Rule "), "{rest}");
            }
            let end = body.trim_end_matches(" |");
            assert!(end.ends_with("integer here."), "{end}");
            if header.contains('\t') {
                assert!(!piece.contains('|'), "{piece}");
            }
        }
        // Every rule is whole in some piece.
        for rule in &rules {
            assert!(pieces.iter().any(|p| p.contains(rule.as_str())), "{rule}");
        }
    }
}

#[test]
fn oversized_paragraph_splits_at_sentences_with_small_overlap() {
    let sentences: Vec<String> = (0..80)
        .map(|i| format!("Sentence {i} explains one more detail about the retry policy."))
        .collect();
    let src = format!("# P\n\n{}\n", sentences.join(" "));
    let doc = chunk("p.md", &src);
    assert!(doc.chunks.len() > 1);
    assert_cap(&doc, 256);
    for w in doc.chunks.windows(2) {
        // Pieces begin at a sentence start and overlap the previous piece by at most 32 tokens.
        assert!(
            w[1].byte_range.start < w[0].byte_range.end,
            "overlap expected"
        );
        let overlap = &src[w[1].byte_range.start..w[0].byte_range.end];
        assert!(common::hf().count(overlap) - 2 <= 32);
        assert!(src[w[1].byte_range.clone()].starts_with("Sentence "));
    }
}

#[test]
fn admonition_and_tabs_stay_with_their_content() {
    let src = "## Tabs\n\n=== \"YAML\"\n\n    ```yaml\n    a: 1\n    ```\n\n!!! note \"Careful\"\n\n    This does not apply to enterprise plans.\n";
    let doc = chunk("t.md", src);
    assert_eq!(doc.chunks.len(), 1);
    assert!(
        doc.chunks[0]
            .text
            .contains("!!! note \"Careful\"\n\n    This does not apply")
    );
}

#[test]
fn plain_text_policy_sections_and_steps() {
    let src = "\
Inventory Replenishment Policy

1. Purpose

This policy sets how stores reorder stock so shelves stay full without tying up cash.

2. Scope

It applies to every store and to the central warehouse.

3. Safety Stock

Safety stock is held against demand spikes and late deliveries.

3.1 Inputs

Daily demand standard deviation and supplier lead time in days.

3.2 Formula

Safety stock = Z x sigma_daily x sqrt(lead time days), where Z is 1.65 for a 95% service level.

4. Exceptions

Promotions may override the reorder point for their duration. When an override is needed:

1. Notify the category manager within 24 hours.
2. Escalate to the regional director if no answer arrives within 48 hours.
";
    let doc = chunk("policies/replenishment.txt", src);
    assert_eq!(doc.title, "Inventory Replenishment Policy");
    let find = |needle: &str| {
        let hits: Vec<_> = doc
            .chunks
            .iter()
            .filter(|c| c.text.contains(needle))
            .collect();
        assert_eq!(hits.len(), 1, "{needle}");
        hits[0].clone()
    };
    let formula = find("Safety stock = Z x sigma_daily");
    assert_eq!(
        formula.heading_path,
        [
            "Inventory Replenishment Policy",
            "3. Safety Stock",
            "3.2 Formula"
        ]
    );
    let steps = find("1. Notify the category manager");
    assert!(
        steps.text.contains("2. Escalate to the regional director"),
        "steps in one chunk"
    );
    assert!(steps.text.contains("When an override is needed:"));
    assert_eq!(
        steps.heading_path,
        ["Inventory Replenishment Policy", "4. Exceptions"],
        "steps are not headings"
    );
    assert!(
        doc.chunks
            .iter()
            .all(|c| !c.heading_path.iter().any(|h| h.contains("Notify")))
    );
    // Each section's facts sit in one chunk, and no chunk crosses a section.
    let scope = find("It applies to every store");
    assert_eq!(
        scope.heading_path.last().map(String::as_str),
        Some("2. Scope")
    );
    assert!(!scope.text.contains("Safety stock is held"));
}

#[test]
fn vim_help_keeps_each_entry_head_on_its_pieces_and_sections_under_the_file() {
    // Vim's help (and every Vim plugin's doc/*.txt): a contents list of numbered sections,
    // sections between rules, entries with a hanging indent running over blank lines.
    let body: String = (1..=12)
        .map(|i| {
            format!(
                "\t\t\tStep {i} of the normal command is explained in this paragraph, which goes\n\
                 \t\t\ton for a while so that the entry is longer than one chunk.\n\n"
            )
        })
        .collect();
    let src = format!(
        "*various.txt*\tFor Vim version 9.0.\n\n\
         1. Various commands\t\t|various-cmds|\n\
         2. Running shell commands\t|shell|\n\n\
         ==============================================================================\n\
         1. Various commands\t\t\t\t\t*various-cmds*\n\n\
         \t\t\t\t\t\t\t*:norm* *:normal*\n\
         :norm[al][!] {{commands}}\n\
         \t\t\tExecute Normal mode commands {{commands}}.\n\n\
         {body}\
         \t\t\tThis command cannot be followed by another command.\n\n\
         ==============================================================================\n\
         2. Running shell commands\t\t\t\t*shell*\n\n\
         Text about the shell.\n"
    );
    let doc = small(120, 100)
        .chunk("doc/various.txt", &src)
        .expect("chunk");
    assert_cap(&doc, 120);
    assert!(!doc.title.starts_with("1. "), "title: {}", doc.title);
    let entry: Vec<_> = doc
        .chunks
        .iter()
        .filter(|c| c.text.contains("Step ") || c.text.contains("cannot be followed"))
        .collect();
    assert!(entry.len() >= 2, "the entry is split: {}", entry.len());
    for c in &entry {
        assert!(c.text.contains(":norm[al][!] {commands}"), "{}", c.text);
        assert_eq!(
            c.heading_path.last().map(String::as_str),
            Some("1. Various commands *various-cmds*")
        );
    }
    let shell = doc
        .chunks
        .iter()
        .find(|c| c.text.contains("Text about the shell."))
        .expect("shell section");
    assert_eq!(
        shell.heading_path.last().map(String::as_str),
        Some("2. Running shell commands *shell*")
    );
}

#[test]
fn edge_cases_do_not_panic_and_respect_the_cap() {
    // 5 MB on one line.
    let long_line = "word, ".repeat(900_000);
    let long_word = "x.".repeat(20_000);
    let nested = (0..200)
        .map(|i| format!("{}- level {i}\n", "  ".repeat(i)))
        .collect::<String>();
    let quotes = format!("{}deep\n", ">".repeat(5000));
    let cases: Vec<(&str, String)> = vec![
        ("empty.md", String::new()),
        ("ws.md", " \n\t\n".into()),
        ("fm-only.md", "---\ntitle: Only\n---\n".into()),
        ("heading-only.md", "# Just a heading".into()),
        ("long-line.md", long_line),
        ("long-word.md", long_word),
        ("nested.md", nested),
        ("quotes.md", quotes),
        (
            "unterminated.md",
            format!("# U\n\n```rust\n{}", "let x = 1;\n".repeat(300)),
        ),
        (
            "ragged.md",
            "| a | b |\n|---|---|\n| 1 |\n| 1 | 2 | 3 | 4 |\n".repeat(40),
        ),
        (
            "crlf.md",
            "# Title\r\n\r\nLine one.\r\n\r\n## Two\r\n\r\n| a | b |\r\n|---|---|\r\n| 1 | 2 |\r\n"
                .into(),
        ),
        ("bom.md", "\u{FEFF}---\ntitle: Bom\n---\n# H\n\ntext".into()),
        ("bom.txt", "\u{FEFF}Title Line\n\nSome text.".into()),
        (
            "control.md",
            "a\u{0B}b \u{0C} c\u{85}d \u{0}\u{FFFD} e\u{200B}f".into(),
        ),
        ("unclosed-fm.md", "---\ntitle: x\n\nno end".into()),
    ];
    for (path, src) in &cases {
        let doc = chunk(path, src);
        assert_cap(&doc, 256);
        for c in &doc.chunks {
            assert!(
                src.is_char_boundary(c.byte_range.start) && src.is_char_boundary(c.byte_range.end)
            );
        }
    }
    let doc = chunk("bom.md", &cases[11].1);
    assert_eq!(doc.title, "Bom");
    assert_eq!(doc.chunks[0].text, "Bom > H\n\n# H\n\ntext");
    assert!(chunk("empty.md", "").chunks.is_empty());
    assert_eq!(chunk("heading-only.md", "# Just a heading").chunks.len(), 1);
    let crlf = chunk("crlf.md", &cases[10].1);
    assert_eq!(crlf.chunks.len(), 2);
}

#[test]
fn small_budgets_still_hold_the_cap() {
    let src =
        std::fs::read_to_string(format!("{}/getting-started/faq.md", common::CORPUS)).expect("faq");
    for (max, target) in [(64, 48), (128, 100), (256, 256)] {
        let doc = small(max, target)
            .chunk("getting-started/faq.md", &src)
            .expect("chunk");
        assert_cap(&doc, max);
    }
}

#[test]
fn config_is_validated() {
    let bad = [
        ChunkerConfig {
            max_tokens: 10,
            target_tokens: 5,
            overlap_tokens: 0,
            ..ChunkerConfig::default()
        },
        ChunkerConfig {
            max_tokens: 256,
            target_tokens: 300,
            overlap_tokens: 0,
            ..ChunkerConfig::default()
        },
        ChunkerConfig {
            max_tokens: 256,
            target_tokens: 0,
            overlap_tokens: 0,
            ..ChunkerConfig::default()
        },
        ChunkerConfig {
            max_tokens: 256,
            target_tokens: 200,
            overlap_tokens: 150,
            ..ChunkerConfig::default()
        },
    ];
    for c in bad {
        assert!(matches!(
            Chunker::new(common::hf(), c),
            Err(ChunkError::InvalidConfig(_))
        ));
    }
    let a = Chunker::new(common::hf(), ChunkerConfig::default()).expect("ok");
    let b = small(256, 128);
    assert_ne!(a.fingerprint(), b.fingerprint());
    assert_eq!(a.config(), &ChunkerConfig::default());
}

/// A counter whose counts do not add up over words (characters): still exact, still capped.
struct Chars;
impl TokenCounter for Chars {
    fn count(&self, text: &str) -> usize {
        text.chars().count() + 2
    }
}

#[test]
fn non_additive_counter_is_exact() {
    let chunker = Chunker::new(
        Arc::new(Chars),
        ChunkerConfig {
            max_tokens: 300,
            target_tokens: 200,
            overlap_tokens: 20,
            ..ChunkerConfig::default()
        },
    )
    .expect("config");
    let src =
        std::fs::read_to_string(format!("{}/getting-started/faq.md", common::CORPUS)).expect("faq");
    let doc = chunker
        .chunk("getting-started/faq.md", &src)
        .expect("chunk");
    for c in &doc.chunks {
        assert_eq!(c.tokens, c.text.chars().count() + 2);
        assert!(c.tokens <= 300);
    }
}

#[test]
fn chunker_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Chunker>();
    let chunker = Arc::new(common::chunker());
    let handles: Vec<_> = (0..2)
        .map(|i| {
            let c = chunker.clone();
            std::thread::spawn(move || {
                c.chunk("t.md", &format!("# T{i}\n\ntext {i}"))
                    .expect("chunk")
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().expect("thread").chunks.len(), 1);
    }
}

/// A line with nothing to retrieve: blank, or only quote and list markers, a heading, a rule or
/// an admonition marker.
fn is_bare_line(line: &str) -> bool {
    let mut t = line.trim();
    loop {
        let before = t.len();
        t = t.trim_start_matches('>').trim_start();
        for bullet in ["- ", "* ", "+ "] {
            t = t.strip_prefix(bullet).unwrap_or(t);
        }
        if t.len() == before {
            break;
        }
    }
    t.is_empty()
        || t.starts_with('#')
        || t.starts_with("!!!")
        || t.chars().all(|c| c == '-' || c == ' ')
}

#[test]
fn no_chunk_is_only_headings_and_markers() {
    let mut quotes = String::from("# T\n\n");
    for i in 1..12 {
        let q = ">".repeat(i);
        quotes.push_str(&format!(
            "{q} ## H{i}\n{q}\n{q} Text of level {i}, long enough to matter. {}\n{q}\n",
            "word ".repeat(12)
        ));
    }
    quotes.push_str("end\n");
    let mut heading_list = String::from("# L\n\n");
    for i in 0..30 {
        heading_list.push_str(&format!(
            "- ## item {i}\n\n  {}\n\n",
            "Some words about it. ".repeat(1 + i % 5)
        ));
    }
    let mut admonitions = String::from("# A\n\n");
    for i in 0..12 {
        admonitions.push_str(&format!(
            "!!! note \"N{i}\"\n    ## inner {i}\n\n    {}\n\n",
            "The note says this. ".repeat(3 + i % 7)
        ));
    }
    let mut quoted_headings = String::from("# Q\n\n");
    for i in 0..6 {
        quoted_headings.push_str(&format!(
            "> ## Part {i}\n>\n> {}\n>\n",
            "A long quoted sentence goes on. ".repeat(14)
        ));
    }
    let docs = [quotes, heading_list, admonitions, quoted_headings];
    for (max, target) in [(256, 256), (128, 100), (64, 48)] {
        let chunker = small(max, target);
        for src in &docs {
            let doc = chunker.chunk("hostile.md", src).expect("chunk");
            assert_cap(&doc, max);
            for c in &doc.chunks {
                let body = c.text.split_once("\n\n").map_or("", |(_, b)| b);
                assert!(
                    body.lines().any(|l| !is_bare_line(l)),
                    "max {max}: chunk {} has no text:\n{}",
                    c.ordinal,
                    c.text
                );
            }
            // No text lost: every non-blank byte of the source is inside some chunk's range.
            let mut covered = vec![false; src.len()];
            for c in &doc.chunks {
                covered[c.byte_range.clone()].fill(true);
            }
            let lost = src
                .bytes()
                .zip(&covered)
                .position(|(b, &inside)| !inside && !b.is_ascii_whitespace());
            assert_eq!(lost, None, "max {max}: text lost");
        }
    }
}

/// A section long enough for three chunks: filler paragraphs, then `tail` as the last paragraph
/// before `next`.
fn section_with(tail: &str, next: &str) -> String {
    let filler: Vec<String> = (0..9)
        .map(|i| {
            format!(
                "Paragraph {i} of the gateway guide describes how listeners accept connections, \
                 negotiate protocols and hand requests to the routers that match them."
            )
        })
        .collect();
    format!(
        "# Gateway\n\n## Listeners\n\n{}\n\n{tail}\n\n{next}\n",
        filler.join("\n\n")
    )
}

#[test]
fn a_section_continued_in_a_new_chunk_carries_the_paragraph_before_it() {
    let condition =
        "When `trustHeaders` is not set explicitly, the gateway logs a warning on every start.";
    let rule = "To silence the warning, set `trustHeaders` to `true` or `false`.";
    let src = section_with(condition, rule);
    let doc = chunk("g.md", &src);
    assert_cap(&doc, 256);
    let with_rule = doc
        .chunks
        .iter()
        .position(|c| c.text.contains(rule))
        .unwrap();
    let c = &doc.chunks[with_rule];
    assert!(
        c.text.contains(condition),
        "the rule's chunk holds its condition: {}",
        c.text
    );
    // The carry is verbatim source: the chunk's range covers condition and rule.
    let body = &src[c.byte_range.clone()];
    assert!(body.starts_with(condition), "{body:?}");
    // It is a continuation: the previous chunk of the section ends with the same paragraph, so
    // without the carry the two would be cut apart.
    let prev = &doc.chunks[with_rule - 1];
    assert_eq!(prev.heading_path, c.heading_path);
    assert!(src[prev.byte_range.clone()].trim_end().ends_with(condition));
    assert!(!prev.text.contains(rule));
}

#[test]
fn carry_stops_at_headings_code_and_tables_and_can_be_turned_off() {
    let rule = "To silence the warning, set `trustHeaders` to `true` or `false`.";
    // A new section starts clean: nothing of the previous section comes along.
    let src = section_with(
        "Last words of the listeners section.",
        &format!("## Warnings\n\n{rule}"),
    );
    let doc = chunk("g.md", &src);
    let c = doc.chunks.iter().find(|c| c.text.contains(rule)).unwrap();
    assert!(!c.text.contains("Last words"), "{}", c.text);
    // Code and tables are never carried: their chunks have their own heads.
    for tail in [
        "```sh\ngateway --trust-headers=false\n```",
        "| key | value |\n|---|---|\n| trustHeaders | false |",
    ] {
        let src = section_with(tail, rule);
        let doc = chunk("g.md", &src);
        let c = doc.chunks.iter().find(|c| c.text.contains(rule)).unwrap();
        let first_line = tail.lines().next().unwrap();
        let holders = doc
            .chunks
            .iter()
            .filter(|c| c.text.contains(first_line))
            .count();
        assert_eq!(holders, 1, "{tail:?} is in one chunk only");
        assert!(src[c.byte_range.clone()].starts_with(rule) || c.text.contains(first_line));
    }
    // `overlap_tokens` 0 turns the carry off with the rest of the overlap.
    let condition =
        "When `trustHeaders` is not set explicitly, the gateway logs a warning on every start.";
    let src = section_with(condition, rule);
    let off = Chunker::new(
        common::hf(),
        ChunkerConfig {
            overlap_tokens: 0,
            ..ChunkerConfig::default()
        },
    )
    .unwrap()
    .chunk("g.md", &src)
    .unwrap();
    let holders = off
        .chunks
        .iter()
        .filter(|c| c.text.contains(condition))
        .count();
    assert_eq!(holders, 1);
    let on = chunk("g.md", &src);
    assert_eq!(on.chunks.len(), off.chunks.len(), "the carry adds no chunk");
    assert_ne!(
        ChunkerConfig::default().fingerprint(),
        ChunkerConfig {
            overlap_tokens: 0,
            ..ChunkerConfig::default()
        }
        .fingerprint()
    );
}

#[test]
fn a_long_paragraph_carries_only_its_last_whole_sentences() {
    // ~175 tokens: too long to carry whole (half the cap is 128), short enough for one chunk.
    let long: Vec<String> = (0..7)
        .map(|i| format!("Clause {i} of the warning policy applies to listeners (e.g. `web` and `websecure`) alike."))
        .collect();
    let long = long.join(" ");
    // ~100 tokens, so it cannot join the long paragraph's chunk.
    let rule = "To silence the warning, set `trustHeaders` to `true` or `false` on every listener that \
                accepts forwarded headers from a proxy in front of the gateway, restart the gateway, and \
                check that the start-up log no longer shows the warning for any listener; a listener that \
                is added later needs the same setting, or the warning comes back for that listener only.";
    let src = section_with(&long, rule);
    let doc = chunk("g.md", &src);
    assert_cap(&doc, 256);
    let at = doc
        .chunks
        .iter()
        .position(|c| c.text.contains(rule))
        .unwrap();
    let prev = &doc.chunks[at - 1];
    assert!(
        src[prev.byte_range.clone()].trim_end().ends_with(&long),
        "the paragraph ends the previous chunk"
    );
    let body = &src[doc.chunks[at].byte_range.clone()];
    let carried = &body[..body.find(rule).unwrap()];
    // Whole sentences from the end of the paragraph, never from after "e.g." inside one.
    assert!(carried.starts_with("Clause "), "{carried:?}");
    assert!(!carried.starts_with("Clause 0"), "not the whole paragraph");
    assert!(carried.trim_end().ends_with(
        "Clause 6 of the warning policy applies to listeners (e.g. `web` and `websecure`) alike."
    ));
    assert!(common::hf().count(carried) <= 128 + 2, "{carried:?}");
}

#[test]
fn rendered_tables_read_as_cells_and_still_split_with_their_header() {
    let rows: Vec<String> = (0..40)
        .map(|i| {
            format!("| option{i:02} | Sets the {i}th knob of the gateway \\| proxy pair. |  |")
        })
        .collect();
    let src = format!(
        "# Options\n\nThe options are:\n\n| Name | Meaning | Note |\n|:-----|-------|---|\n{}\n",
        rows.join("\n")
    );
    let chunker = common::chunker();
    let rendered = chunker.chunk_rendered("o.html", &src, None).unwrap();
    assert_cap(&rendered, 256);
    let table: Vec<_> = rendered
        .chunks
        .iter()
        .filter(|c| !c.metadata.contains_key("record") && c.text.contains("option"))
        .collect();
    assert!(table.len() > 1, "the table is split");
    for c in &table {
        // Every piece starts with the header as a row of cells; no pipe syntax anywhere.
        assert!(c.text.contains("Name\tMeaning\tNote\n"), "{}", c.text);
        assert!(!c.text.contains("---"), "{}", c.text);
        assert!(!c.text.lines().any(|l| l.starts_with('|')), "{}", c.text);
    }
    let all: String = table.iter().map(|c| c.text.as_str()).collect();
    assert!(all.contains("option07\tSets the 7th knob of the gateway | proxy pair.\t\n"));
    // Records keep the same form, key and metadata.
    let record = rendered
        .chunks
        .iter()
        .find(|c| c.metadata.get("row_key").and_then(|v| v.as_str()) == Some("option07"))
        .expect("record");
    assert!(
        record.text.ends_with(
            "Name\tMeaning\tNote\noption07\tSets the 7th knob of the gateway | proxy pair.\t"
        ),
        "{}",
        record.text
    );
    // The same Markdown as a Markdown file keeps its pipes.
    let source = chunker.chunk("o.md", &src).unwrap();
    assert!(
        source
            .chunks
            .iter()
            .any(|c| c.text.contains("| option07 |"))
    );
    assert!(!source.chunks.iter().any(|c| c.text.contains("option07\t")));
}

/// A fenced function too long for one chunk: `lead` lines, then a body of `n` statements.
fn long_function(fence: &str, lead: &str, n: usize, statement: &str) -> String {
    let body: Vec<String> = (0..n)
        .map(|i| statement.replace("{i}", &i.to_string()))
        .collect();
    format!("# Module\n\n```{fence}\n{lead}\n{}\n```\n", body.join("\n"))
}

#[test]
fn pieces_of_a_split_function_repeat_its_definition_line() {
    let py = long_function(
        "python",
        "@cached\ndef detect_encoding(b, strict=True):",
        60,
        "    if b.startswith(BOM_{i}):\n        return 'utf-{i}'",
    );
    let rs = long_function(
        "rust",
        "/// The global ignore file.\n#[inline]\npub fn excludes_file_default() -> Option<PathBuf> {",
        60,
        "    let path_{i} = home.join(\"git/ignore/{i}\");",
    );
    // A shell function with its brace on a line of its own: the name is the head, not `{`.
    let sh = long_function(
        "sh",
        "_comp_cd()\n{",
        60,
        "    local word_{i}=\"${COMP_WORDS[{i}]}\"",
    );
    for (src, definition, fence) in [
        (&py, "def detect_encoding(b, strict=True):", "```python"),
        (&sh, "_comp_cd()", "```sh"),
        (
            &rs,
            "pub fn excludes_file_default() -> Option<PathBuf> {",
            "```rust",
        ),
    ] {
        let doc = chunk("m.md", src);
        assert!(doc.chunks.len() > 2, "split");
        assert_cap(&doc, 256);
        for c in &doc.chunks {
            let body = c.text.split_once("\n\n").map(|x| x.1).unwrap_or("");
            let body = body.strip_prefix("# Module\n\n").unwrap_or(body);
            assert!(body.starts_with(fence), "{body}");
            // Every piece holds the definition line once: the first in place, the rest as a
            // repeated head under their fence.
            assert_eq!(body.matches(definition).count(), 1, "{body}");
        }
        let last = doc.chunks.last().unwrap();
        assert!(
            last.text.contains(&format!("{fence}\n{definition}\n")),
            "{}",
            last.text
        );
    }
    // A flat configuration block repeats its one enclosing key.
    let yaml = long_function("yaml", "entryPoints:", 90, "  web{i}: {address: ':{i}'}");
    let doc = chunk("y.md", &yaml);
    assert!(doc.chunks.len() > 1);
    for c in &doc.chunks {
        assert_eq!(c.text.matches("entryPoints:").count(), 1, "{}", c.text);
    }
}

#[test]
fn pieces_of_split_code_keep_every_value_with_its_keys() {
    // Nested configuration: wherever the cut falls, a router's settings stay with the router's
    // name and the keys above it (repeated as the piece's head, or carried over the cut).
    let yaml = long_function(
        "yaml",
        "http:\n  routers:",
        40,
        "    router{i}:\n      rule: r{i}-host\n      service: r{i}-svc\n      priority: r{i}-prio",
    );
    let doc = chunk("y.md", &yaml);
    assert!(doc.chunks.len() > 2, "split");
    assert_cap(&doc, 256);
    for (n, c) in doc.chunks.iter().enumerate() {
        assert!(
            c.text.contains("```yaml\nhttp:\n  routers:\n"),
            "{}",
            c.text
        );
        for line in c.text.lines().filter(|l| l.starts_with("      ")) {
            let i = line.split(": r").nth(1).and_then(|v| v.split('-').next());
            let name = format!("    router{}:\n", i.expect("a numbered value"));
            assert!(
                c.text.contains(&name),
                "chunk {n}: {line:?} without {name:?}:\n{}",
                c.text
            );
        }
    }
    // A run of fields cut in the middle: the piece after the cut repeats the line before it,
    // so two neighbouring fields always share at least one chunk.
    let rs = long_function(
        "rust",
        "struct IgnoreInner {",
        60,
        "    /// The matcher for kind {i}.\n    matcher_{i}: Gitignore,",
    );
    let doc = chunk("s.md", &rs);
    assert!(doc.chunks.len() > 1, "split");
    assert_cap(&doc, 256);
    for i in 0..59 {
        let (a, b) = (format!("matcher_{i}:"), format!("matcher_{}:", i + 1));
        assert!(
            doc.chunks
                .iter()
                .any(|c| c.text.contains(&a) && c.text.contains(&b)),
            "{a} and {b} never together"
        );
    }
    for c in &doc.chunks {
        assert_eq!(
            c.text.matches("struct IgnoreInner {").count(),
            1,
            "{}",
            c.text
        );
    }
}

#[test]
fn real_split_sections_keep_the_condition_with_its_rule() {
    // Traefik's migration guide: a warning's condition ended one chunk and the way to silence
    // it opened the next (dev question traefik-015).
    let rel = "migrate/v3.md";
    let src = std::fs::read_to_string(format!("{}/{rel}", common::CORPUS)).unwrap();
    let doc = chunk(rel, &src);
    assert_cap(&doc, 256);
    let rule = doc
        .chunks
        .iter()
        .find(|c| {
            c.text
                .contains("To silence the warning and avoid security concerns")
        })
        .expect("the rule's chunk");
    assert!(
        rule.text
            .contains("When `trustForwardHeader` is not explicitly set, Traefik logs a warning"),
        "{}",
        rule.text
    );
    // The carried paragraph is the source's own bytes, and the chunk before ends with it.
    let body = &src[rule.byte_range.clone()];
    assert!(
        body.starts_with("When `trustForwardHeader` is not explicitly set"),
        "{body}"
    );
}

/// The lines of a chunk's body that are not headings.
fn text_lines(c: &rag_chunker::Chunk) -> Vec<&str> {
    c.text
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

#[test]
fn a_lead_the_next_chunk_repeats_is_not_a_chunk_of_its_own() {
    // A heading and a short paragraph, then a code block that fits a chunk only by itself: the
    // lead is flushed alone and its paragraph carried into the code's chunk. Whatever the block's
    // size, no chunk may be only a lead whose every line the next chunk of its section repeats.
    let lead = "## Retries when a backend fails\n\nThe retry middleware resends a request that failed.\n\n";
    let mut dropped = 0;
    for n in 40..64 {
        let code: String = (0..n)
            .map(|k| format!("      attempts{k}: {}\n", k * 7))
            .collect();
        let src = format!("# Guide\n\n{lead}```yaml\nretry:\n{code}```\n");
        let doc = chunk("guide.md", &src);
        assert_cap(&doc, ChunkerConfig::default().max_tokens);
        for pair in doc.chunks.windows(2) {
            let (c, next) = (&pair[0], &pair[1]);
            let lines = text_lines(c);
            let repeated =
                c.heading_path == next.heading_path && lines.iter().all(|l| next.text.contains(l));
            assert!(
                !repeated,
                "n={n}: a lead repeated by the next chunk:\n{}",
                c.text
            );
        }
        let heading = src.find("## Retries").unwrap();
        if !doc.chunks.iter().any(|c| c.byte_range.contains(&heading)) {
            dropped += 1;
            // Its heading is then in the breadcrumb of the chunk that holds the paragraph.
            let holder = doc.chunks.iter().find(|c| c.text.contains("resends"));
            let crumb = "Guide > Retries when a backend fails\n";
            assert!(holder.unwrap().text.starts_with(crumb), "{holder:?}");
        }
    }
    assert!(
        dropped > 0,
        "no size of block made the lead a chunk of its own"
    );
    // Two sections of the same name: a lead is kept when the next chunk is the other section.
    let code: String = (0..40)
        .map(|k| format!("attempts{k}: {}\n", k * 7))
        .collect();
    let src = format!("# Guide\n\n{lead}## Retries when a backend fails\n\n```yaml\n{code}```\n");
    let doc = chunk("guide.md", &src);
    let first = src.find("## Retries").unwrap();
    assert!(
        doc.chunks.iter().any(|c| c.byte_range.contains(&first)),
        "{:#?}",
        doc.chunks.iter().map(|c| &c.text).collect::<Vec<_>>()
    );
}

#[test]
fn no_piece_of_a_split_code_block_is_an_empty_fence() {
    // A function whose doc comment and signature fill more than the room beside its heading:
    // the opening fence must not become a piece of its own (an empty block, a chunk holding
    // nothing but the heading and a fence).
    for doc_lines in 8..40 {
        let mut src = String::from(
            "## fn try_reserve\n\nContext: A growable buffer of bytes for the network layer.\n\n````rust\n",
        );
        for i in 0..doc_lines {
            src.push_str(&format!(
                "    /// Line {i} of the documentation says what happens when capacity runs out.\n"
            ));
        }
        src.push_str("    #[inline]\n    pub fn try_reserve(&mut self, extra: usize) -> Result<(), Error> {\n");
        for i in 0..30 {
            src.push_str(&format!("        self.grow_by({i}, extra)?;\n"));
        }
        src.push_str("    }\n````\n");
        let doc = chunk("buffer.md", &src);
        assert_cap(&doc, 256);
        for c in &doc.chunks {
            let body: Vec<&str> = c.text.lines().collect();
            let empty_fence = body
                .windows(2)
                .any(|w| w[0].starts_with("````rust") && w[1].trim() == "````");
            assert!(
                !empty_fence,
                "{doc_lines}: a chunk holds an empty block:\n{}",
                c.text
            );
        }
        for i in 0..doc_lines {
            let line = format!("/// Line {i} of the documentation");
            assert!(
                doc.chunks.iter().any(|c| c.text.contains(&line)),
                "{line} lost"
            );
        }
        assert!(
            doc.chunks
                .iter()
                .any(|c| c.text.contains("self.grow_by(29, extra)?;"))
        );
    }
}

#[test]
fn a_rendered_page_heading_keeps_what_looks_like_a_tag() {
    // API pages name generics in headings (`impl<T> From<T> for Option<T>`): on a converted page
    // that is text the reader saw. In a Markdown file, `<T>` is markup a browser hides.
    let src = "# Enum Option\n\n## impl<T> From<T> for Option<T>\n\nMoves `val` into a new Some.\n";
    let rendered = common::chunker()
        .chunk_rendered("option.html", src, None)
        .unwrap();
    let last = rendered.chunks.last().unwrap();
    assert_eq!(
        last.heading_path.last().map(String::as_str),
        Some("impl<T> From<T> for Option<T>"),
        "{:?}",
        last.heading_path
    );
    assert!(
        last.text
            .starts_with("Enum Option > impl<T> From<T> for Option<T>\n")
    );
    let markdown = chunk("option.md", src);
    let last = markdown.chunks.last().unwrap();
    assert_eq!(
        last.heading_path.last().map(String::as_str),
        Some("impl From for Option")
    );
}

#[test]
fn a_fenced_box_keeps_its_opening_line() {
    // VitePress, Docusaurus, Pandoc and Hugo boxes: the fence lines are paragraphs to
    // CommonMark, so a cut could fall between a box's title and its text, or leave a closing
    // fence alone.
    let boxes = [
        ("::: warning Using Vite on WSL 2", ":::"),
        (":::note[Formatting reversibility]", ":::"),
        (":::: danger Nested fences", "::::"),
        ("::: {.callout-tip title=\"Cache\"}", ":::"),
        (
            "{{% alert title=\"Warning\" color=\"warning\" %}}",
            "{{% /alert %}}",
        ),
        ("{{< note >}}", "{{< /note >}}"),
    ];
    for (open, close) in boxes {
        for lead in [0, 3, 6, 9, 12, 15] {
            for box_sentences in [2, 9, 20] {
                let mut src = String::from("# Guide\n\n## Server options\n\n");
                for i in 0..lead {
                    src.push_str(&format!(
                        "Lead paragraph {i} explains how the server answers a request on time.\n\n"
                    ));
                }
                src.push_str(open);
                src.push_str("\n\n");
                for i in 0..box_sentences {
                    src.push_str(&format!(
                        "Box sentence {i} tells what breaks when files live on the other side.\n"
                    ));
                    if i % 4 == 3 {
                        src.push('\n');
                    }
                }
                src.push_str(&format!("\n{close}\n\nAfter the box, the page goes on.\n"));
                for chunker in [common::chunker(), small(128, 100)] {
                    let doc = chunker.chunk("guide.md", &src).expect("chunk");
                    for c in &doc.chunks {
                        let last = c.text.lines().rev().find(|l| !l.trim().is_empty());
                        assert_ne!(
                            last,
                            Some(open),
                            "{open} ({lead}, {box_sentences}): a chunk ends on the opening line:\n{}",
                            c.text
                        );
                        if c.text.contains("Box sentence") {
                            assert!(
                                c.text.contains(open),
                                "{open} ({lead}, {box_sentences}): box text without its opening line:\n{}",
                                c.text
                            );
                        }
                        let body = c.text.split_once("\n\n").map_or("", |(_, b)| b);
                        assert!(
                            body.lines().any(|l| {
                                let l = l.trim();
                                !l.is_empty() && !l.starts_with(":::") && !l.starts_with("{{")
                            }),
                            "{open} ({lead}, {box_sentences}): a chunk of fence lines only:\n{}",
                            c.text
                        );
                    }
                    for i in 0..box_sentences {
                        let s = format!("Box sentence {i} tells");
                        assert!(doc.chunks.iter().any(|c| c.text.contains(&s)), "{s} lost");
                    }
                }
            }
        }
    }
}

#[test]
fn colon_fences_around_sections_leave_the_headings_to_the_document() {
    // A Pandoc div around whole sections wraps structure, not a box: its headings still head
    // their chunks.
    let mut src = String::from("# Manual\n\n::: {.section}\n\n");
    for s in ["Install", "Configure"] {
        src.push_str(&format!("## {s}\n\n"));
        for i in 0..12 {
            src.push_str(&format!("Step {i} of {s} is described in words here.\n\n"));
        }
    }
    src.push_str(":::\n");
    let doc = chunk("manual.md", &src);
    for s in ["Install", "Configure"] {
        assert!(
            doc.chunks
                .iter()
                .any(|c| c.heading_path.last().map(String::as_str) == Some(s)),
            "no chunk headed {s}"
        );
    }
}

#[test]
fn an_html_comment_is_never_a_chunk_of_its_own_when_it_can_join_one() {
    // Comments are invisible on the rendered page (authors' TODOs, notes to contributors): a
    // chunk holding only one answers nothing.
    let mut spilled = 0;
    for lead in 1..30 {
        let mut src = String::from("# Guide\n\n## Requirements files\n\n");
        for i in 0..lead {
            src.push_str(&format!(
                "Step {i} says which packages the project needs, and why it pins them:\n\n\
                 ```console\n$ pip install -r requirements-{i}.txt --require-hashes\n```\n\n"
            ));
        }
        src.push_str("<!--- TODO: Discuss equivalent commands for `compile` -->\n\n");
        src.push_str("## Development dependencies\n\nThe file format holds one set at once.\n");
        let doc = chunk("guide.md", &src);
        assert!(
            doc.chunks.iter().any(|c| c.text.contains("TODO: Discuss")),
            "{lead}: the comment is in no chunk"
        );
        for c in &doc.chunks {
            let body = c.text.split_once("\n\n").map_or("", |(_, b)| b);
            let shown = body
                .lines()
                .filter(|l| !l.trim().is_empty() && !l.contains("<!--") && !l.starts_with('#'));
            assert!(
                shown.count() > 0,
                "{lead}: a chunk of a comment only:\n{}",
                c.text
            );
        }
        let first_of_next = doc
            .chunks
            .iter()
            .find(|c| c.text.contains("The file format holds"))
            .expect("next section");
        spilled += usize::from(first_of_next.text.contains("TODO: Discuss"));
    }
    assert!(spilled > 0, "the comment never had to leave its section");
}

#[test]
fn mdx_import_lines_are_never_a_chunk_of_their_own() {
    // MDX pages open with module lines the page never shows; before the first heading they
    // made a chunk of their own. They are left out like front matter.
    let mut src = String::from(
        "---\ntitle: RPM\n---\n\nimport CommandTabs from '@components/CommandTabs.astro';\nimport { Tabs, TabItem } from \"@astrojs/starlight/components\";\nimport './custom.css';\n\n# Packaging for RPM\n\n",
    );
    for i in 0..30 {
        src.push_str(&format!(
            "Paragraph {i} tells how the package installs its files and scripts.\n\n"
        ));
    }
    let doc = chunk("distribute/rpm.mdx", &src);
    assert_eq!(doc.title, "RPM");
    assert!(
        doc.chunks[0]
            .text
            .contains("Packaging for RPM\n\nParagraph 0 tells")
    );
    for c in &doc.chunks {
        let body = c.text.split_once("\n\n").map_or("", |(_, b)| b);
        assert!(
            body.lines()
                .any(|l| !l.trim().is_empty() && !l.starts_with("import ") && !l.starts_with('#')),
            "a chunk of module lines only:\n{}",
            c.text
        );
    }
    // Prose that starts like a module line is text.
    let prose = chunk(
        "p.md",
        "# Notes\n\nimport the data from the old system first.\n\n## Next\n\nMore.\n",
    );
    assert!(
        prose
            .chunks
            .iter()
            .any(|c| c.text.contains("import the data"))
    );
}

#[test]
fn a_page_script_or_style_is_never_a_chunk_of_its_own_when_it_can_join_one() {
    // VitePress pages open with a Vue `<script setup>`; blog posts carry `<style>` blocks.
    for (hidden, lead) in [
        (
            "<script setup>\nimport BlogIndex from './components/BlogIndex.vue'\nconst posts = useData()\n</script>\n\n",
            true,
        ),
        (
            "<style>\n.links {\n  display: flex;\n  justify-content: space-around;\n}\n</style>\n\n",
            false,
        ),
    ] {
        // Up to 10 paragraphs the section has room for the hidden block beside it.
        for paragraphs in 1..=10 {
            let mut src = String::new();
            if lead {
                src.push_str(hidden);
            }
            src.push_str("# Latest from the blog\n\n");
            for i in 0..paragraphs {
                src.push_str(&format!(
                    "Post {i} announces a release and the features it brings to users.\n\n"
                ));
            }
            if !lead {
                src.push_str(hidden);
                src.push_str("## Older posts\n\nThe archive lists every earlier post.\n");
            }
            let doc = chunk("blog.md", &src);
            for c in &doc.chunks {
                let body = c.text.split_once("\n\n").map_or("", |(_, b)| b);
                assert!(
                    body.contains("Post ") || body.contains("archive lists"),
                    "{paragraphs}: a chunk of a script or style only:\n{}",
                    c.text
                );
            }
        }
    }
}

#[test]
fn an_example_opening_with_a_short_line_keeps_its_start_beside_its_lead() {
    // A Node example: `'use strict'`, a blank line, then one long statement. The lead sentence
    // and the example do not fit one chunk; the lead's chunk holds the statement's first lines,
    // not `'use strict'` alone, and every line is still in some chunk.
    let lead: Vec<String> = (0..6)
        .map(|i| format!("Sentence {i} says how the server negotiates the protocol with a client."))
        .collect();
    let mut src = format!(
        "## Secure\n\n{} The same server accepts both:\n\n```js\n'use strict'\n\nconst fastify = require('fastify')({{\n  http2: true,\n  https: {{\n    allowHTTP1: true, // fallback support for HTTP1\n",
        lead.join(" ")
    );
    for i in 0..24 {
        src.push_str(&format!("    option{i}: readOption('{i}'),\n"));
    }
    src.push_str("  }\n})\n```\n");
    let doc = chunk("http2.md", &src);
    assert_cap(&doc, 256);
    let with_lead = (doc.chunks.iter())
        .find(|c| c.text.contains("The same server accepts both:"))
        .expect("the lead");
    assert!(
        with_lead.text.contains("allowHTTP1: true"),
        "the lead's chunk holds only a sliver of its example:\n{}",
        with_lead.text
    );
    for i in 0..24 {
        let line = format!("option{i}: readOption('{i}'),");
        assert!(
            doc.chunks.iter().any(|c| c.text.contains(&line)),
            "{line} lost"
        );
    }
}

#[test]
fn a_split_procedure_repeats_the_step_before_each_piece() {
    // Steps long enough that the procedure is split: every piece after the first starts with
    // the step before its first one, after the intro, so no step is read without the one it
    // follows on from.
    let mut src =
        String::from("## Shutdown\n\nWhen the server closes, these steps happen in order:\n\n");
    for i in 1..=9 {
        src.push_str(&format!(
            "{i}. Step {i} runs the stage-{i} hooks. Requests still in flight at stage {i} are drained by the connection pool before the server goes on to the next stage of the shutdown.\n"
        ));
    }
    let doc = chunk("close.md", &src);
    assert_cap(&doc, 256);
    assert!(doc.chunks.len() > 1, "the procedure is split");
    let steps = |text: &str| -> Vec<usize> {
        (1..=9)
            .filter(|i| text.contains(&format!("{i}. Step {i} runs")))
            .collect()
    };
    for pair in doc.chunks.windows(2) {
        let (before, after) = (steps(&pair[0].text), steps(&pair[1].text));
        assert!(after[0] > 1, "{}", pair[1].text);
        assert_eq!(
            before.last(),
            after.first(),
            "a piece starts without the step before its own:\n{}",
            pair[1].text
        );
        assert!(pair[1].text.contains("these steps happen in order:"));
    }
}

#[test]
fn an_oversized_item_keeps_its_description_beside_its_example() {
    // An API reference member (Javadoc's method details, a Sphinx option): one list item holding
    // the description, the examples, then parameters and return value, too big for one chunk.
    // The first piece is filled, so the examples stay beside the description they illustrate;
    // what is left goes to as few pieces as fit.
    let mut src = String::from(
        "### initials\n\n- Extracts the initial characters from each word in the String. All first characters after the defined delimiters are returned as a new string. Their case is not changed. If the delimiter array is null, whitespace is used; a null input returns null and an empty delimiter array returns an empty string.\n\n  ```\n",
    );
    for (input, out) in [
        ("null, *", "null"),
        ("\"\", *", "\"\""),
        ("\"Ben John Lee\", null", "\"BJL\""),
        ("\"Ben J.Lee\", null", "\"BJ\""),
        ("\"Ben J.Lee\", [' ','.']", "\"BJL\""),
        ("*, new char[0]", "\"\""),
    ] {
        src.push_str(&format!("  WordUtils.initials({input}) = {out}\n"));
    }
    src.push_str("  ```\n\n");
    for (name, what) in [
        (
            "str",
            "the String to get initials from, may be null; leading and trailing delimiters are ignored",
        ),
        (
            "delimiters",
            "set of characters to determine words, null means whitespace; an empty set returns an empty String",
        ),
        (
            "returns",
            "String of initial characters, null if null String input, never longer than the number of words",
        ),
        (
            "since",
            "2.2, deprecated in 3.6 in favour of the text module, kept for binary compatibility of callers",
        ),
    ] {
        src.push_str(&format!("  {name}: {what}.\n\n"));
    }
    let doc = chunk("WordUtils.md", &src);
    assert_cap(&doc, 256);
    assert_eq!(doc.chunks.len(), 2, "{:#?}", doc.chunks);
    let first = &doc.chunks[0].text;
    assert!(first.contains("All first characters after the defined delimiters"));
    assert!(
        first.contains("WordUtils.initials(\"Ben J.Lee\", [' ','.']) = \"BJL\"")
            && first.contains("new char[0]"),
        "the example left its description:\n{first}"
    );
}

#[test]
fn a_split_list_item_carries_the_condition_but_not_the_item_before() {
    // The section as one list item (an API member whose details are all inside its `<li>`):
    // the rule cut from its condition gets it back, as at the top level.
    let condition =
        "When `trustHeaders` is not set explicitly, the gateway logs a warning on every start.";
    let rule = "To silence the warning, set `trustHeaders` to `true` or `false`.";
    let section = section_with(condition, rule);
    let (head, body) = section.split_once("## Listeners\n\n").unwrap();
    let item: Vec<String> = body
        .split("\n\n")
        .enumerate()
        .map(|(i, p)| format!("{}{p}", if i == 0 { "- " } else { "  " }))
        .collect();
    let src = format!("{head}## Listeners\n\n{}", item.join("\n\n"));
    let doc = chunk("g.md", &src);
    assert_cap(&doc, 256);
    let with_rule = doc.chunks.iter().position(|c| c.text.contains(rule));
    let c = &doc.chunks[with_rule.unwrap()];
    assert!(c.text.contains(condition), "{}", c.text);
    let prev = &doc.chunks[with_rule.unwrap() - 1];
    assert!(src[prev.byte_range.clone()].trim_end().ends_with(condition));

    // Two entries too big for one chunk: the second one's chunk does not start with the end
    // of the first, another entry.
    let entry = |name: &str| -> String {
        let paragraphs: Vec<String> = (0..8)
            .map(|i| format!("Paragraph {i} of `{name}` says how the option changes the way listeners accept connections."))
            .collect();
        format!(
            "- `{name}`\n\n  {}\n\n  Last words of `{name}`.",
            paragraphs.join("\n\n  ")
        )
    };
    let src = format!("# Options\n\n{}\n\n{}\n", entry("alpha"), entry("beta"));
    let doc = chunk("o.md", &src);
    assert_cap(&doc, 256);
    let beta = doc
        .chunks
        .iter()
        .find(|c| c.text.contains("`beta`"))
        .unwrap();
    assert!(!beta.text.contains("alpha"), "{}", beta.text);
}

#[test]
fn a_readme_banner_is_no_chunk_of_its_own() {
    // GitHub READMEs and docs copied from them open with an HTML banner: a centred `<h1>`, a
    // logo, badges. Like a heading with nothing under it, it joins the text that follows.
    let src = "<h1 align=\"center\">Fastify</h1>\n\n<p align=\"center\">\n  <img src=\"logo.png\" width=\"300\">\n</p>\n\n## Database\n\nFastify's ecosystem provides a handful of plugins for connecting to various database engines.\n";
    let doc = chunk("Database.md", src);
    assert_eq!(doc.chunks.len(), 1, "{:#?}", doc.chunks);
    assert!(doc.chunks[0].text.contains("a handful of plugins"));
    // Text in tags, or beside them, is text: a paragraph of links is a chunk's content.
    for kept in [
        "<p align=\"center\"><a href=\"https://x.io\">Fastify, fast and low overhead web framework</a></p>",
        "<https://fastify.dev/docs/latest/Guides/Database/>",
        "Compare a < b and b > c before <b>sorting</b>.",
    ] {
        let src = format!("{kept}\n\n## Database\n\n{}\n", "Fastify's ecosystem provides a handful of plugins for connecting to various database engines. ".repeat(3));
        let doc = chunk("Database.md", &src);
        assert!(
            doc.chunks
                .iter()
                .any(|c| c.text.contains(kept) && !c.text.contains("handful")),
            "{kept:?} merged away: {:#?}",
            doc.chunks
        );
    }
}

#[test]
fn a_split_table_keeps_a_row_with_an_empty_first_cell_under_the_row_above() {
    // Doxygen's member summaries: a row per member, then its description in a row of its own
    // with the first cell empty. A cut between them leaves a description without its member.
    let mut src = String::from("## Public Member Functions\n\n| Type | Member |\n|---|---|\n");
    for i in 0..40 {
        src.push_str(&format!("| UInt | index{i} () const |\n"));
        src.push_str(&format!(
            "|  | Return the index number {i} of the referenced value, or -1 if it is not an array. |\n"
        ));
    }
    let doc = chunk("members.md", &src);
    assert!(doc.chunks.len() > 2);
    assert_cap(&doc, 256);
    for i in 0..40 {
        let member = format!("index{i} ()");
        let description = format!("index number {i} of");
        let holder = doc
            .chunks
            .iter()
            .find(|c| c.text.contains(&description))
            .unwrap();
        assert!(
            holder.text.contains(&member),
            "{description} without {member}:\n{}",
            holder.text
        );
    }
}
