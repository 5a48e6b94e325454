#!/usr/bin/env bash
# Retrieval on reStructuredText docs no one tuned rag-index on: Flask's Sphinx sources (sections,
# `code-block`, admonitions, `py:data`/`class`/`attribute` descriptions, simple tables, field
# lists) from its source distribution on PyPI (`pip download --no-binary :all: flask==3.1.3`:
# docs/, indexed as the folder is, conf.py and images included), scored with 16 questions
# written for this check (benches/questions/flask-docs.jsonl: a user's question, the page that
# answers it, evidence as the rendered page shows it; three answered inside an admonition,
# three inside an object description).
#
#   benches/unseen_flask_docs.sh [--keep DIR]
#
# Checks every evidence string against its page first (inline markup read as Sphinx shows it;
# a miss stops the run). Then `rag-index sync` (timed) and `rag-index eval --exact` in hybrid,
# dense and lexical modes. Then, as the baseline in the same run, the same pages renamed to
# `.md`: how the same binary reads reStructuredText as Markdown, which is what `--ext rst` did
# before `.rst` had a reader of its own (without `--ext`, `.rst` files were not indexed at all).
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/flask-docs.jsonl"
version=3.1.3

unseen_args "$@"
unseen_workdir flask-docs
unseen_sdist_folder flask "$version" docs
echo "corpus: $(find "$work/docs" -name '*.rst' | wc -l) .rst pages of the Flask $version docs (PyPI sdist), $(find "$work/docs" -type f | wc -l) files in all"
page_structure .rst .md
unseen_score "$work/docs" "$questions"

echo "== baseline: the same pages as .md (reStructuredText read as Markdown)"
unseen_baseline_md .rst
