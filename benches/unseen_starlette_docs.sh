#!/usr/bin/env bash
# Retrieval on Markdown docs no one tuned rag-index on: Starlette's MkDocs pages (admonitions,
# content tabs, parameter lists, long release notes) from its source distribution on PyPI
# (`pip download --no-binary :all: starlette==1.10.0`: docs/*.md), scored with 12 questions
# written for this check (benches/questions/starlette-docs.jsonl: a user's question, the page that
# answers it, evidence from that page as written; four of them are answered inside an
# admonition). Also printed: chunks whose heading path goes below the page title.
#
#   benches/unseen_starlette_docs.sh [--keep DIR]
#
# Checks every evidence string against its page first (a miss stops the run: another release of
# the docs is caught rather than scored). Then `rag-index sync` (timed) and `rag-index eval
# --exact` in hybrid, dense and lexical modes.
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/starlette-docs.jsonl"
version=1.10.0

unseen_args "$@"
unseen_workdir starlette-docs
unseen_sdist starlette "$version"
mkdir -p "$work/docs"
cp "$sdist"/docs/*.md "$work/docs/"
echo "corpus: $(ls "$work/docs" | wc -l) pages of the Starlette $version docs (PyPI sdist)"
section_structure
unseen_score "$work/docs" "$questions"
