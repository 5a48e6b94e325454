#!/usr/bin/env bash
# Retrieval on Markdown no one tuned rag-index on: the undici 7.30.3 docs (docs/docs/ of the
# `undici` package on the npm registry: 42 pages, an API reference of classes, options and
# errors, and best practices), scored with 16 questions written for this check by a helper that
# read only the pages (benches/questions/undici-docs.jsonl: a developer's question, the page
# that answers it, evidence as written: five about an option or method, three in code). The
# script prints how many chunks start a code block they cut after two lines or fewer, and how
# many continue a numbered list without the step before their first one.
#
#   benches/unseen_undici_docs.sh [--keep DIR]
#
# Fetches the package tarball from registry.npmjs.org and checks every evidence string against
# its page (a miss stops the run). Then `rag-index sync` (timed) and `rag-index eval --exact` in
# hybrid, dense and lexical modes.
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/undici-docs.jsonl"

unseen_args "$@"
unseen_workdir undici-docs
unseen_npm_folder undici 7.30.3 docs/docs
echo "corpus: $(find "$work/docs" -name '*.md' | wc -l) pages of the undici 7.30.3 docs"
split_structure "$work/docs"
unseen_score "$work/docs" "$questions"
