#!/usr/bin/env bash
# Retrieval on the C++ API reference format no one tuned rag-index on: the Doxygen HTML of
# JsonCpp 1.9.5 (Debian `libjsoncpp-doc`: the whole folder as a user would index it, 156 HTML
# pages: class, struct, file and namespace pages, 15 `*_source.html` listings, member and
# global indexes), scored with 16 questions written for this check by a helper that read only
# the pages (benches/questions/doxygen-docs.jsonl: six about a method's behaviour, four details
# buried in a long description, three with a line of a code example, three settings).
# Doxygen writes code as a `div.fragment` of `div.line`s followed by hidden hover tooltips
# (`div.ttc`), and this package's custom header leaves pages without a `<title>`: the script
# prints how many chunks hold tooltip text ("Definition: file.h:N") and how many breadcrumbs
# start with a file name (`class_json_1_1_...`) instead of the page's name.
#
#   benches/unseen_doxygen.sh [--keep DIR]
#
# Fetches the package with `apt-get download` (1.9.5-4, the version the questions were checked
# against, when the mirror still has it, else the current one) and checks every evidence string
# against its page (a miss stops the run). Then `rag-index sync` (timed; about 1,200 chunks)
# and `rag-index eval --exact` in hybrid, dense and lexical modes.
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/doxygen-docs.jsonl"

unseen_args "$@"
unseen_workdir doxygen
unseen_deb_folder libjsoncpp-doc 1.9.5-4 usr/share/doc/libjsoncpp-doc
echo "corpus: $(find "$work/docs" -name '*.html' | wc -l) HTML pages, $(find "$work/docs" -type f | wc -l) files, from $deb"
structure_check="
import json, re, sys
chunks = [json.loads(line) for line in sys.stdin]
tooltips = sum(bool(re.search(r'^Definition: \\S+:\\d+\$', c['text'], re.M)) for c in chunks)
unnamed = sum(c['title'] == c['path'].rsplit('/', 1)[-1].rsplit('.', 1)[0] for c in chunks)
print(f'chunks holding tooltip text: {tooltips}; with a file name for a title: {unnamed}; of {len(chunks)}')"
unseen_score "$work/docs" "$questions"
