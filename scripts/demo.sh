#!/usr/bin/env bash
# The main job, end to end: fetch the model, build, index a real docs folder and query it.
#   scripts/demo.sh [DOCS_DIR] [QUESTION...]
# DOCS_DIR defaults to the Traefik docs in ../shared; the index goes to target/demo-index.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

docs="${1:-../shared/corpora/traefik/docs}"
shift || true
questions=("$@")
if [ ${#questions[@]} -eq 0 ]; then
    questions=(
        "What exit code does traefik healthcheck return when the proxy is unhealthy?"
        "How do I limit the number of requests per second a client can make?"
    )
fi

./models/fetch-model.sh
cargo build --release --quiet --bin rag-index
bin="${CARGO_TARGET_DIR:-target}/release/rag-index"
index="${CARGO_TARGET_DIR:-target}/demo-index"

echo "== indexing $docs into $index" >&2
# The demo's index is its own: when an earlier build of rag-index made it with another model or
# chunker configuration, sync refuses it and names `--reindex`; rebuild it then.
sync_log="$(mktemp)"
trap 'rm -f "$sync_log"' EXIT
rc=0
"$bin" sync "$docs" --index "$index" -v 2> >(tee "$sync_log" >&2) || rc=$?
wait # for tee
if [ "$rc" != 0 ]; then
    grep -q -- 'sync --reindex' "$sync_log" || exit "$rc"
    echo "== $index was built by another configuration: rebuilding it" >&2
    "$bin" sync "$docs" --index "$index" --reindex -v
fi
"$bin" stats --index "$index"
for q in "${questions[@]}"; do
    echo
    "$bin" query "$q" --index "$index" -k 3
done
questions_file="$(dirname "$docs")/questions.jsonl"
if [ -f "$questions_file" ]; then
    echo "== retrieval quality on $questions_file" >&2
    "$bin" eval "$questions_file" --index "$index"
fi
