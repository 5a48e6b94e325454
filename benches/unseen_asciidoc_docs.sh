#!/usr/bin/env bash
# Retrieval on AsciiDoc docs no one tuned rag-index on: git-lfs 3.3's man pages (35 `.adoc`:
# option lists, examples) and openQA's guides (12 `.asciidoc`: admonitions, titled listings,
# tables), both from Debian bookworm packages (`apt-get download
# golang-github-git-lfs-git-lfs-dev openqa-doc`; openQA's guides gunzipped, as a docs site has
# them), scored with 16 questions written for this check (benches/questions/asciidoc-docs.jsonl:
# a user's question, the page that answers it, evidence as the rendered page shows it).
#
#   benches/unseen_asciidoc_docs.sh [--keep DIR]
#
# Checks every evidence string against its page first (a miss stops the run). Then `rag-index
# sync` (timed) and `rag-index eval --exact` in hybrid, dense and lexical modes. Then, as the
# baseline in the same run, the same pages renamed to `.md`: how the same binary reads AsciiDoc
# as Markdown, which is what `--ext adoc` did before AsciiDoc had a reader of its own (without
# `--ext`, `.adoc` and `.asciidoc` files were not indexed at all).
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/asciidoc-docs.jsonl"

unseen_args "$@"
unseen_workdir asciidoc-docs
unseen_deb golang-github-git-lfs-git-lfs-dev 3.3.0-1+deb12u1
unseen_deb openqa-doc 4.6.1674490999.b00c12673-2
rm -rf "$work/docs" "$work/docs-md" "$work/index-md"
mkdir -p "$work/docs"
cp -r "$work/unpacked/usr/share/gocode/src/github.com/git-lfs/git-lfs/docs/man" "$work/docs/git-lfs"
cp -r "$work/unpacked/usr/share/doc/openqa" "$work/docs/openqa"
find "$work/docs/openqa" -name '*.gz' -exec gunzip {} +
echo "corpus: $(find "$work/docs" -name '*.adoc' | wc -l) git-lfs man pages (.adoc) and" \
    "$(find "$work/docs" -name '*.asciidoc' | wc -l) openQA guides (.asciidoc)," \
    "$(find "$work/docs" -type f | wc -l) files in all"
structure_check='
import json, sys
chunks = [json.loads(line) for line in sys.stdin]
pages = [c for c in chunks if c["path"].endswith((".adoc", ".asciidoc", ".md"))]
below = sum(len(c["heading_path"]) > 1 for c in pages)
boxes = sum(any(l.startswith(":::") for l in c["text"].splitlines()) for c in pages)
print(f"page chunks: {len(pages)}; under a section heading: {below}; holding a box: {boxes}")'
unseen_score "$work/docs" "$questions"

echo "== baseline: the same pages as .md (AsciiDoc read as Markdown)"
cp -r "$work/docs" "$work/docs-md"
find "$work/docs-md" \( -name '*.adoc' -o -name '*.asciidoc' \) \
    -exec sh -c 'mv "$1" "${1%.*}.md"' _ {} \;
"$bin" sync "$work/docs-md" --index "$work/index-md" 2>"$work/sync-md.stderr" || true
"$bin" stats --index "$work/index-md" | grep -E '^(files|chunks):'
"$bin" dump --index "$work/index-md" | python3 -c "$structure_check"
for mode in hybrid dense lexical; do
    echo "== rag-index eval --exact --mode $mode (as .md)"
    "$bin" eval "$questions" --index "$work/index-md" --exact --mode "$mode" 2>/dev/null
done
