#!/usr/bin/env bash
# Retrieval on Markdown docs no one tuned rag-index on: Hatch's MkDocs pages (Material's
# admonitions, collapsible boxes, content tabs for the pyproject.toml / hatch.toml variants of
# each example, option tables) from its source distribution on PyPI (docs/, indexed as the
# folder is), scored with 16 questions written for this check by a helper that read only the
# pages (benches/questions/hatch-docs.jsonl: a user's question, the page that answers it,
# evidence from that page as written; three in a box, three in a tab, three in a table).
#
#   benches/unseen_hatch_docs.sh [--keep DIR]
#
# Checks every evidence string against its page first (a miss stops the run). Then `rag-index
# sync` (timed) and `rag-index eval --exact` in hybrid, dense and lexical modes.
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/hatch-docs.jsonl"
version=1.18.2

unseen_args "$@"
unseen_workdir hatch-docs
unseen_sdist_folder hatch "$version" docs
echo "corpus: $(find "$work/docs" -name '*.md' | wc -l) pages of the Hatch $version docs (PyPI sdist), $(find "$work/docs" -type f | wc -l) files in all"
section_structure
unseen_score "$work/docs" "$questions"
