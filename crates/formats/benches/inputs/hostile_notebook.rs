//! Hostile Jupyter notebooks, shared by the `notebook` test (no panic; refused or bounded
//! output) and the `parse` bench (each row's MB/s beside a plain-text baseline).

/// A notebook file holding `cells` (JSON text of the cells array's items).
fn notebook(cells: &str) -> String {
    format!("{{\"cells\": [{cells}], \"metadata\": {{}}, \"nbformat\": 4, \"nbformat_minor\": 5}}")
}

/// A code cell printing `text` (already JSON-escaped) to stdout.
fn printing(text: &str) -> String {
    notebook(&format!(
        "{{\"cell_type\": \"code\", \"source\": \"run()\", \"metadata\": {{}}, \"outputs\": [{{\"output_type\": \"stream\", \"name\": \"stdout\", \"text\": \"{text}\"}}]}}"
    ))
}

/// `(name, text)` of each hostile input: nesting deep enough to overflow a recursive reader,
/// outputs and cells by the hundred thousand, megabytes on one line, terminal redraws, fences
/// left open, image data, and values of the wrong type.
pub fn hostile_notebooks() -> Vec<(&'static str, String)> {
    let deep = 100_000;
    vec![
        (
            "nested cells",
            notebook(&format!("{}{}", "[".repeat(deep), "]".repeat(deep))),
        ),
        (
            "nested metadata",
            format!(
                "{{\"metadata\": {}1{}, \"cells\": []}}",
                "{\"a\": ".repeat(deep),
                "}".repeat(deep)
            ),
        ),
        (
            "nested output data",
            notebook(&format!(
                "{{\"cell_type\": \"code\", \"source\": \"x\", \"outputs\": [{{\"output_type\": \"display_data\", \"data\": {{\"application/json\": {}{}}}}}]}}",
                "[".repeat(deep),
                "]".repeat(deep)
            )),
        ),
        ("log of a million lines", printing(&"epoch 1 loss 0.25\\n".repeat(1_000_000))),
        ("progress redraws", printing(&" 1%|#    |\\r".repeat(1_000_000))),
        ("colour codes", printing(&"\\u001b[1;31mE\\u001b[0m".repeat(500_000))),
        (
            "many cells",
            notebook(
                &vec!["{\"cell_type\": \"markdown\", \"source\": \"Step.\"}"; 300_000].join(","),
            ),
        ),
        (
            "open fences",
            notebook(
                &vec!["{\"cell_type\": \"markdown\", \"source\": \"```\\nx\"}"; 200_000].join(","),
            ),
        ),
        (
            "one long line",
            notebook(&format!(
                "{{\"cell_type\": \"markdown\", \"source\": \"{}\"}}",
                "word ".repeat(4_000_000)
            )),
        ),
        (
            "a million source lines",
            notebook(&format!(
                "{{\"cell_type\": \"code\", \"source\": [{}\"x\"]}}",
                "\"x = 1\\n\",".repeat(1_000_000)
            )),
        ),
        (
            "image data",
            notebook(&format!(
                "{{\"cell_type\": \"code\", \"source\": \"plot()\", \"outputs\": [{{\"output_type\": \"display_data\", \"data\": {{\"image/png\": \"{}\", \"text/plain\": \"<Figure>\"}}}}]}}",
                "iVBORw0KGgo".repeat(2_500_000)
            )),
        ),
        (
            "wrong types",
            notebook(
                &[
                    "{\"cell_type\": \"code\", \"source\": 1, \"outputs\": {}}",
                    "{\"cell_type\": [], \"source\": \"x\"}",
                    "{\"cell_type\": \"code\", \"source\": [1, 2], \"outputs\": [3, {\"output_type\": {}}]}",
                    "{\"cell_type\": \"raw\", \"metadata\": [], \"source\": \"raw\"}",
                    "{\"cell_type\": \"code\", \"source\": \"ok\", \"outputs\": [{\"output_type\": \"stream\", \"text\": [null]}]}",
                ]
                .repeat(50_000)
                .join(","),
            ),
        ),
    ]
}
