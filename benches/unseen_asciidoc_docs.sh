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
rm -rf "$work/docs"
mkdir -p "$work/docs"
cp -r "$work/unpacked/usr/share/gocode/src/github.com/git-lfs/git-lfs/docs/man" "$work/docs/git-lfs"
cp -r "$work/unpacked/usr/share/doc/openqa" "$work/docs/openqa"
find "$work/docs/openqa" -name '*.gz' -exec gunzip {} +
echo "corpus: $(find "$work/docs" -name '*.adoc' | wc -l) git-lfs man pages (.adoc) and" \
    "$(find "$work/docs" -name '*.asciidoc' | wc -l) openQA guides (.asciidoc)," \
    "$(find "$work/docs" -type f | wc -l) files in all"
page_structure .adoc .asciidoc .md
unseen_score "$work/docs" "$questions"

echo "== baseline: the same pages as .md (AsciiDoc read as Markdown)"
unseen_baseline_md .adoc .asciidoc
