#!/usr/bin/env bash
# Retrieval on reStructuredText docs no one tuned rag-index on: Scrapy's Sphinx sources (55
# pages: 201 `setting` blocks, custom targets such as `reqmeta` and `stat`, admonitions,
# `versionadded`, code blocks, autodoc directives whose text is not in the files) from its
# source distribution on PyPI (docs/, indexed as the folder is), scored with 16 questions
# written for this check by a helper that read only the pages
# (benches/questions/scrapy-docs.jsonl: a user's question, the page that answers it, evidence as
# the rendered page shows it).
#
#   benches/unseen_scrapy_docs.sh [--keep DIR]
#
# Checks every evidence string against its page first (inline markup read as Sphinx shows it;
# a miss stops the run). Then `rag-index sync` (timed) and `rag-index eval --exact` in hybrid,
# dense and lexical modes. Then, as the baseline in the same run, the same pages renamed to
# `.md` (reStructuredText read as Markdown, what `--ext rst` gave before `.rst` had a reader).
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/scrapy-docs.jsonl"
version=2.19.0

unseen_args "$@"
unseen_workdir scrapy-docs
unseen_sdist_folder scrapy "$version" docs
echo "corpus: $(find "$work/docs" -name '*.rst' | wc -l) .rst pages of the Scrapy $version docs (PyPI sdist), $(find "$work/docs" -type f | wc -l) files in all"
page_structure .rst .md
unseen_score "$work/docs" "$questions"

echo "== baseline: the same pages as .md (reStructuredText read as Markdown)"
unseen_baseline_md .rst
