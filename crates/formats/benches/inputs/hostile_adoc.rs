//! Hostile AsciiDoc, shared by the `asciidoc` test (no panic; refused or bounded output) and
//! the `parse` bench (each row's MB/s beside a plain-text baseline).

/// `(name, text)` of each hostile input: unclosed inline markup (quadratic in a paragraph's
/// length in the parser), deep nesting, document cells and delimiters by the ten thousand.
pub fn hostile_adoc() -> Vec<(&'static str, String)> {
    vec![
        ("unclosed strong", "*a ".repeat(300_000)),
        ("unclosed monospace", "`a ".repeat(300_000)),
        ("unclosed strong, lines", "*a\n".repeat(300_000)),
        ("unclosed passthroughs", "+++a ".repeat(100_000)),
        ("unclosed xrefs", "<<a, ".repeat(100_000)),
        ("nested examples", {
            let mut s = String::new();
            for depth in 0..2_000 {
                s.push_str(&"=".repeat(4 + depth));
                s.push('\n');
            }
            s
        }),
        ("nested bullets", {
            (1..=2_000)
                .map(|level| format!("{} item\n", "*".repeat(level)))
                .collect()
        }),
        ("nested terms", {
            (1..=2_000)
                .map(|level| format!("term{}\n", ":".repeat(level + 1)))
                .collect()
        }),
        (
            "document cells",
            format!("|===\n{}|===\n", "a|x ".repeat(100_000)),
        ),
        (
            "plain cells",
            format!("|===\n{}|===\n", "|x |y\n".repeat(100_000)),
        ),
        (
            "long table",
            format!("|===\n{}|===\n", "|x\n".repeat(90_000)),
        ),
        (
            "unclosed listing",
            format!("----\n{}", "line\n".repeat(200_000)),
        ),
        ("attribute chain", {
            let mut s = String::from(":a0: xxxxxxxxxx\n");
            for i in 1..40 {
                s.push_str(&format!(
                    ":a{i}: {}\n",
                    format!("{{a{}}}", i - 1).repeat(10)
                ));
            }
            s.push_str("\n{a39}\n");
            s
        }),
        ("conditionals", "ifdef::a[]\n".repeat(100_000)),
    ]
}
