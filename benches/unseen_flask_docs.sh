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
unseen_sdist flask "$version"
rm -rf "$work/docs" "$work/docs-md" "$work/index-md"
cp -r "$sdist/docs" "$work/docs"
echo "corpus: $(find "$work/docs" -name '*.rst' | wc -l) .rst pages of the Flask $version docs (PyPI sdist), $(find "$work/docs" -type f | wc -l) files in all"
structure_check='
import json, sys
chunks = [json.loads(line) for line in sys.stdin]
rst = [c for c in chunks if c["path"].endswith((".rst", ".md"))]
below = sum(len(c["heading_path"]) > 1 for c in rst)
boxes = sum(any(l.startswith(":::") for l in c["text"].splitlines()) for c in rst)
print(f"page chunks: {len(rst)}; under a section heading: {below}; holding a box: {boxes}")'
unseen_score "$work/docs" "$questions"

echo "== baseline: the same pages as .md (reStructuredText read as Markdown)"
cp -r "$work/docs" "$work/docs-md"
find "$work/docs-md" -name '*.rst' -exec sh -c 'mv "$1" "${1%.rst}.md"' _ {} \;
"$bin" sync "$work/docs-md" --index "$work/index-md" 2>"$work/sync-md.stderr" || true
"$bin" stats --index "$work/index-md" | grep -E '^(files|chunks):'
"$bin" dump --index "$work/index-md" | python3 -c "$structure_check"
for mode in hybrid dense lexical; do
    echo "== rag-index eval --exact --mode $mode (as .md)"
    "$bin" eval "$questions" --index "$work/index-md" --exact --mode "$mode" 2>/dev/null
done
