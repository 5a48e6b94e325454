#!/usr/bin/env bash
# Retrieval on generated HTML no one tuned rag-index on: the Node.js 18 API reference (Debian
# `nodejs-doc`: 64 pages of api/, `all.html`, their concatenation, left out), scored with 16
# questions written for this check by a helper that read only the pages
# (benches/questions/node-docs.jsonl: a developer's question, the page that answers it, evidence
# from its visible text; most answers sit under an h3/h4 method or option heading of a long
# page). Every page carries the site's menu of pages in a bare list and its own table of
# contents in `<details id="toc">`; the script prints how many chunks hold either, which a
# reader came to the page to get past.
#
#   benches/unseen_node_docs.sh [--keep DIR]
#
# Fetches the package with `apt-get download` (18.20.4+dfsg-1~deb12u2, the version the
# questions were checked against, when the mirror still has it, else the current one) and checks
# every evidence string against its page (a miss stops the run). Then `rag-index sync` (timed)
# and `rag-index eval --exact` in hybrid, dense and lexical modes.
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/node-docs.jsonl"
checked_version="18.20.4+dfsg-1~deb12u2"

unseen_args "$@"
unseen_workdir node-docs
unseen_deb nodejs-doc "$checked_version"
rm -rf "$work/docs"
mkdir -p "$work/docs"
find "$work/unpacked/usr/share/doc/nodejs/api" -maxdepth 1 -name '*.html' ! -name all.html \
    -exec cp {} "$work/docs/" \;
echo "corpus: $(find "$work/docs" -name '*.html' | wc -l) pages from $deb"
structure_check='
import json, sys
chunks = [json.loads(line) for line in sys.stdin]
menu = sum("- About this documentation" in c["text"] for c in chunks)
toc = sum("Table of contents" in c["text"] for c in chunks)
print(f"chunks holding the site menu: {menu}, a page table of contents: {toc}, of {len(chunks)}")'
unseen_score "$work/docs" "$questions"
