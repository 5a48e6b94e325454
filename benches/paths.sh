# Sourced by bench scripts: the checkout ($root), the rag-index binary they run ($bin: $RAG_INDEX_BIN,
# else the release build in $CARGO_TARGET_DIR or ./target) and the model folder ($model:
# $RAG_INDEX_MODEL_DIR, else models/all-MiniLM-L6-v2).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${RAG_INDEX_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/rag-index}"
model="${RAG_INDEX_MODEL_DIR:-$root/models/all-MiniLM-L6-v2}"
