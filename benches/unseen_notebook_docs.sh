#!/usr/bin/env bash
# Retrieval on Jupyter notebooks no one tuned rag-index on: nbsphinx's documentation, which is
# written as notebooks (32 `.ipynb`: Markdown cells, code cells, raw reStructuredText and HTML
# cells), from its source distribution on PyPI (`pip download --no-binary :all:
# nbsphinx==0.9.8`: doc/, indexed as the folder is, .rst pages and conf.py included), scored
# with 16 questions written for this check (benches/questions/notebook-docs.jsonl: a user's
# question, the notebook that answers it, evidence as one cell holds it).
#
#   benches/unseen_notebook_docs.sh [--keep DIR]
#
# Checks every evidence string against its notebook first (a miss stops the run). Then
# `rag-index sync` (timed) and `rag-index eval --exact` in hybrid, dense and lexical modes. Then,
# as baselines in the same run:
#   - the same notebooks renamed `.txt`: their JSON read as text, which is what
#     `--ext ipynb` gave before notebooks had a reader (without `--ext`, `.ipynb` files were not
#     indexed at all);
#   - the same notebooks converted by nbconvert (`jupyter nbconvert --to markdown`, the usual
#     way to turn a notebook into text for retrieval; installed from PyPI into a virtualenv
#     under the work folder) and indexed as `.md` by the same binary.
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/notebook-docs.jsonl"
version=0.9.8

unseen_args "$@"
unseen_workdir notebook-docs
unseen_sdist_folder nbsphinx "$version" doc
echo "corpus: $(find "$work/docs" -name '*.ipynb' | wc -l) notebooks of the nbsphinx $version docs (PyPI sdist), $(find "$work/docs" -type f | wc -l) files in all"
page_structure .ipynb .txt .md
unseen_score "$work/docs" "$questions"

echo "== baseline: the same notebooks as .txt (their JSON read as text)"
rm -rf "$work/docs-txt" "$work/index-txt"
cp -r "$work/docs" "$work/docs-txt"
find "$work/docs-txt" -name '*.ipynb' -exec sh -c 'mv "$1" "${1%.*}.txt"' _ {} \;
"$bin" sync "$work/docs-txt" --index "$work/index-txt" 2>"$work/sync-txt.stderr" || true
# Each question names its notebook; the baseline's copy has another extension.
sed 's/\.ipynb"/.txt"/' "$questions" > "$work/questions-txt.jsonl"
unseen_report "$work/index-txt" "$work/questions-txt.jsonl" " (JSON as .txt)"

echo "== peer: the same notebooks through nbconvert to Markdown, indexed as .md"
if [ ! -x "$work/nbconvert-venv/bin/jupyter-nbconvert" ]; then
    python3 -m venv "$work/nbconvert-venv"
    "$work/nbconvert-venv/bin/pip" install --quiet "nbconvert==7.17.2"
fi
"$work/nbconvert-venv/bin/pip" list 2>/dev/null | grep -E '^(nbconvert|nbformat|mistune) '
rm -rf "$work/docs-nbconvert" "$work/index-nbconvert"
cp -r "$work/docs" "$work/docs-nbconvert"
find "$work/docs-nbconvert" -name '*.ipynb' -print0 \
    | xargs -0 "$work/nbconvert-venv/bin/jupyter-nbconvert" --to markdown --log-level ERROR
find "$work/docs-nbconvert" -name '*.ipynb' -delete
"$bin" sync "$work/docs-nbconvert" --index "$work/index-nbconvert" 2>"$work/sync-nbconvert.stderr" || true
sed 's/\.ipynb"/.md"/' "$questions" > "$work/questions-md.jsonl"
unseen_report "$work/index-nbconvert" "$work/questions-md.jsonl" " (nbconvert .md)"
