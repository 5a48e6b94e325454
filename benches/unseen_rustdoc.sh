#!/usr/bin/env bash
# Retrieval on the API reference every Rust crate publishes, no one tuned rag-index on: the
# folder `cargo doc` writes for the `regex` crate 1.13.2 (rustdoc HTML: 86 item and module pages
# of which 41 redirects, the crate's source as 25 `src/*.rs.html` pages, and the JavaScript,
# search index and settings pages beside them, indexed whole as a user pointing rag-index at
# `target/doc` would), scored with 16 questions written for this check by a helper that read
# only the pages (benches/questions/rustdoc-docs.jsonl: a developer's question, the page that
# answers it, evidence from its visible text: a method's docs, the crate docs' syntax tables,
# examples). Source pages number every line in a link inside the code; the script prints how
# many chunks of them hold code lines that start with their line number (`93  .utf8_empty(...)`
# read as `93.utf8_empty`), which no reader copies from the page.
#
#   benches/unseen_rustdoc.sh [--keep DIR]
#
# Needs cargo (and crates.io, or the crate in cargo's cache): `cargo doc --no-deps -p regex`
# in a throw-away package pinned to regex =1.13.2. The questions were checked against the
# output of rustdoc 1.95.0; every evidence string is checked against its page first, so another
# rustdoc whose pages read differently stops the run. Then `rag-index sync` (timed) and
# `rag-index eval --exact` in hybrid, dense and lexical modes.
#
# Builds nothing of rag-index: runs $RAG_INDEX_BIN, by default
# ${CARGO_TARGET_DIR:-./target}/release/rag-index. Model: $RAG_INDEX_MODEL_DIR (default
# models/all-MiniLM-L6-v2). Work files go under a temporary folder removed at the end, unless
# --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/rustdoc-docs.jsonl"

unseen_args "$@"
unseen_workdir rustdoc
command -v cargo >/dev/null || { echo "cargo is needed to write the pages" >&2; exit 2; }
if [ ! -f "$work/target/doc/regex/index.html" ]; then
    mkdir -p "$work/probe/src"
    printf '[package]\nname = "probe"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nregex = "=1.13.2"\n' \
        > "$work/probe/Cargo.toml"
    : > "$work/probe/src/lib.rs"
    (cd "$work/probe" && CARGO_TARGET_DIR="$work/target" cargo doc -q --no-deps -p regex)
fi
rm -rf "$work/docs"
cp -r "$work/target/doc" "$work/docs"
echo "corpus: $(find "$work/docs" -name '*.html' | wc -l) HTML pages, $(find "$work/docs" -type f | wc -l) files, from $(rustdoc --version)"
numbered_source_structure src/
unseen_score "$work/docs" "$questions"
