#!/usr/bin/env bash
# Retrieval on MyST Markdown no one tuned rag-index on: pip 26.3's Sphinx docs (docs/ of its
# source distribution on PyPI: 40 MyST `.md` pages with ```{note}/```{warning}/```{tab}
# directives and {ref} roles, 68 reStructuredText pages, indexed as the folder is), scored with
# 16 questions written for this check by a helper that read only the pages
# (benches/questions/pip-docs.jsonl: a user's question, the page that answers it, evidence from
# that page as written; four in a directive box, three in a list, two in a table row).
#
#   benches/unseen_pip_docs.sh [--keep DIR]
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
questions="$root/benches/questions/pip-docs.jsonl"
version=26.3

unseen_args "$@"
unseen_workdir pip-docs
unseen_sdist_folder pip "$version" docs
echo "corpus: $(find "$work/docs" -name '*.md' | wc -l) MyST and $(find "$work/docs" -name '*.rst' | wc -l) reStructuredText pages of the pip $version docs (PyPI sdist)"
section_structure
unseen_score "$work/docs" "$questions"
