//! all-MiniLM-L6-v2's tokenizer as a [`TokenCounter`]: the one copy shared by the tests, the
//! bench and the example (those two include this file with `#[path]`).
#![allow(dead_code)]

use rag_chunker::TokenCounter;

pub const TOKENIZER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../models/all-MiniLM-L6-v2/tokenizer.json"
);

/// The model's tokenizer without the truncation (128) and padding its file carries.
pub struct Hf(pub tokenizers::Tokenizer);

impl Hf {
    /// Loads [`TOKENIZER`] (run `models/fetch-model.sh` first).
    pub fn load() -> Hf {
        let mut t = tokenizers::Tokenizer::from_file(TOKENIZER).expect("tokenizer.json");
        t.with_truncation(None).expect("no truncation");
        t.with_padding(None);
        Hf(t)
    }
}

impl TokenCounter for Hf {
    fn count(&self, text: &str) -> usize {
        self.0
            .encode_fast(text, true)
            .map(|e| e.len())
            .expect("tokenize")
    }
}
