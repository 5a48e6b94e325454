//! Every dev question's evidence must land whole in one chunk of its source file: otherwise no
//! retriever can answer it, whatever the embedding.

mod common;

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_question_has_a_chunk_with_all_its_evidence() {
    let chunker = common::chunker();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/corpora/traefik/questions.jsonl"
    );
    let mut missing = Vec::new();
    for line in std::fs::read_to_string(path).expect("questions").lines() {
        let q: serde_json::Value = serde_json::from_str(line).expect("json");
        let source = q["source"].as_str().expect("source");
        let text = std::fs::read_to_string(format!("{}/{source}", common::CORPUS)).expect("file");
        let doc = chunker.chunk(source, &text).expect("chunk");
        let evidence: Vec<String> = q["evidence"]
            .as_array()
            .expect("evidence")
            .iter()
            .map(|e| collapse(e.as_str().unwrap_or("")))
            .collect();
        let ok = doc.chunks.iter().any(|c| {
            let t = collapse(&c.text);
            evidence.iter().all(|e| t.contains(e.as_str()))
        });
        if !ok {
            missing.push(format!("{} ({})", q["id"], q["pattern"]));
        }
    }
    assert!(
        missing.is_empty(),
        "evidence split across chunks: {missing:?}"
    );
}
