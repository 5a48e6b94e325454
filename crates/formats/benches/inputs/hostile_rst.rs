//! Hostile reStructuredText, shared by the `rst` test (no panic, bounded output) and the
//! `parse` bench (linear time: each row's MB/s beside a plain-text baseline).

/// `(name, text)` of each hostile input: unclosed inline markup, deep nesting, table and
/// adornment lines by the hundred thousand.
pub fn hostile_rst() -> Vec<(&'static str, String)> {
    vec![
        ("unclosed backquotes", "`a ".repeat(300_000)),
        ("unclosed literals", "``a ".repeat(200_000)),
        ("unclosed emphasis", "*a ".repeat(300_000)),
        ("footnote brackets", "[a ".repeat(300_000)),
        ("nested directives", {
            let mut s = String::new();
            for depth in 0..2_000 {
                s.push_str(&" ".repeat(depth * 3));
                s.push_str(".. note::\n\n");
            }
            s
        }),
        ("nested bullets", format!("{}x\n", "- ".repeat(50_000))),
        ("simple table borders", "=== ===\nx y\n".repeat(100_000)),
        ("grid borders", "+---+\n| a |\n".repeat(100_000)),
        ("adornment lines", "====\n".repeat(200_000)),
        ("underscores", "a_".repeat(400_000)),
    ]
}
