#!/usr/bin/env bash
# Retrieval on Markdown no one tuned rag-index on: the Fastify 5.12.8 docs (docs/ of the `fastify`
# package on the npm registry: 41 pages, Reference/ and Guides/, with tables of error codes,
# many JavaScript examples and numbered procedures), scored with 16 questions written for this
# check by a helper that read only the pages (benches/questions/fastify-docs.jsonl: a
# developer's question, the page that answers it, evidence as written: three in table rows,
# three in code, three in procedure steps). The script prints how many chunks start a code
# block they cut after two lines or fewer, and how many continue a numbered list without the
# step before their first one.
#
#   benches/unseen_fastify_docs.sh [--keep DIR]
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
questions="$root/benches/questions/fastify-docs.jsonl"

unseen_args "$@"
unseen_workdir fastify-docs
unseen_npm_folder fastify 5.12.8 docs
echo "corpus: $(find "$work/docs" -name '*.md' | wc -l) pages of the Fastify 5.12.8 docs"
split_structure "$work/docs"
unseen_score "$work/docs" "$questions"
