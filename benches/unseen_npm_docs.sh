#!/usr/bin/env bash
# Retrieval on Markdown no one tuned rag-index on: the npm CLI 12.2.3 docs (docs/content/ of the
# `npm` package on the npm registry: 87 pages with front matter, GitHub-flavoured tables and
# some inline HTML, indexed as the folder is), scored with 16 questions written for this check
# by a helper that read only the pages (benches/questions/npm-docs.jsonl: a user's question, the
# page that answers it, evidence as written; four about a config option, three in a list, two in
# a table row).
#
#   benches/unseen_npm_docs.sh [--keep DIR]
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
questions="$root/benches/questions/npm-docs.jsonl"
version=12.2.3

unseen_args "$@"
unseen_workdir npm-docs
unseen_npm_folder npm "$version" docs/content
echo "corpus: $(find "$work/docs" -name '*.md' | wc -l) pages of the npm $version CLI docs"
section_structure
unseen_score "$work/docs" "$questions"
