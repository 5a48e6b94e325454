#!/usr/bin/env bash
# Retrieval on another HTML generator no one tuned rag-index on: "The Rust Programming Language"
# as mdBook renders it, from the toolchain's own docs (`rustup component add rust-docs`:
# SYSROOT/share/doc/rust/html/book), scored with 12 questions written for this check
# (benches/questions/rust-book.jsonl: a user's question, the chapter page that answers it,
# evidence from that page's visible text). mdBook wraps each heading's text in a link, so this
# also checks that chunks keep the section headings above them (printed: chunks whose heading
# path goes below the page title).
#
#   benches/unseen_rust_book.sh [--keep DIR]
#
# Takes the book's chapter pages (*.html at its top; not print.html, the whole book again as one
# page) and checks every evidence string against its page (a miss stops the run: another edition
# of the book is caught rather than scored). Then `rag-index sync` (timed) and `rag-index eval
# --exact` in hybrid, dense and lexical modes.
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/rust-book.jsonl"

unseen_args "$@"
book="$(rustc --print sysroot)/share/doc/rust/html/book"
[ -f "$book/ch01-00-getting-started.html" ] \
    || { echo "the Rust book is not at $book (rustup component add rust-docs)" >&2; exit 2; }
unseen_workdir rust-book

mkdir -p "$work/docs"
find "$book" -maxdepth 1 -name '*.html' ! -name print.html -exec cp {} "$work/docs/" \;
echo "corpus: $(ls "$work/docs" | wc -l) pages of the book from $(rustc --version)"
section_structure
unseen_score "$work/docs" "$questions"
