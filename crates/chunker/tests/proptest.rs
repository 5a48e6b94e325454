//! Arbitrary input never panics, and the cap holds, counted with the real tokenizer.

mod common;

use proptest::prelude::*;
use rag_chunker::{Chunker, ChunkerConfig, TokenCounter};

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[ -~\n]{0,200}",
        Just("# Heading\n".to_string()),
        Just("## Sub heading\n\n".to_string()),
        Just("---\ntitle: x\n---\n".to_string()),
        Just("```yaml\nkey: value\n".to_string()),
        Just("```\n".to_string()),
        Just("| a | b |\n|:---|---:|\n| 1 | 2 |\n".to_string()),
        Just("| ragged |\n| 1 | 2 | 3 |\n".to_string()),
        Just("- item one\n  - nested item\n1. step one.\n".to_string()),
        Just("!!! note \"Title\"\n\n    Indented body.\n".to_string()),
        Just("=== \"Tab\"\n\n    ```sh\n    echo\n    ```\n".to_string()),
        Just("::: warning Title\n".to_string()),
        Just(":::: details Outer\n\n".to_string()),
        Just(":::\n".to_string()),
        Just("::::\n\n".to_string()),
        Just("<!-- a comment -->\n\n".to_string()),
        Just("import A from 'a';\nimport {\n  B,\n} from \"b\";\n\n".to_string()),
        Just("> quote\n>> deeper\n".to_string()),
        Just("<div>\nhtml\n</div>\n".to_string()),
        Just("\r\n\u{FEFF}\u{0B}\u{85}\u{200B}日本語 ".to_string()),
        Just("The end. Another sentence! A third? ".repeat(8)),
        "[a-z.]{50,400}",
    ]
}

fn doc() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn any_input_chunks_within_the_cap(src in doc(), path in prop_oneof![Just("doc.md"), Just("doc.txt"), Just("doc.mdx")], max in 40usize..300, records in any::<bool>()) {
        let hf = common::hf();
        let config = ChunkerConfig { max_tokens: max, target_tokens: max * 3 / 4, overlap_tokens: max / 8, table_records: records };
        let chunker = Chunker::new(hf.clone(), config).expect("config");
        let out = chunker.chunk(path, &src).expect("chunk");
        let mut covered = vec![false; src.len()];
        for c in &out.chunks {
            prop_assert_eq!(c.tokens, hf.count(&c.text));
            prop_assert!(c.tokens <= max, "{} > {}", c.tokens, max);
            prop_assert!(src.is_char_boundary(c.byte_range.start) && src.is_char_boundary(c.byte_range.end));
            covered[c.byte_range.clone()].iter_mut().for_each(|b| *b = true);
        }
        // Coverage of the body: everything after the first chunk's start that is not whitespace.
        if let Some(first) = out.chunks.first() {
            for (i, ch) in src[first.byte_range.start..].char_indices() {
                let i = i + first.byte_range.start;
                prop_assert!(covered[i] || ch.is_whitespace()
                    || common::heading_named_next(&src, i, &out.chunks),
                    "byte {} ({:?}) not covered", i, ch);
            }
        }
        let again = chunker.chunk(path, &src).expect("chunk");
        prop_assert_eq!(out, again);
    }
}
