#!/usr/bin/env bash
# Retrieval on the Java API reference format no one tuned rag-index on: the Javadoc of Apache
# Commons Lang 3.12.0 (Debian `libcommons-lang3-java-doc`: the whole api/ folder as a user
# would index it, 730 HTML pages: 497 class, package and class-use pages, 223 `src-html/` source
# pages, indexes, and the JavaScript search index beside them), scored with 16 questions written
# for this check by a helper that read only the pages (benches/questions/javadoc-docs.jsonl: a
# developer's question, the page that answers it, evidence from its visible text: six about a
# method's behaviour from its detail section, three with a line of its examples). Source pages
# number every line in a `source-line-no` span inside the code; the script prints how many
# chunks of them hold code lines that start with their line number (`002 * Licensed to ...`).
#
#   benches/unseen_javadoc.sh [--keep DIR]
#
# Fetches the package with `apt-get download` (3.12.0-2+deb12u1, the version the questions were
# checked against, when the mirror still has it, else the current one) and checks every evidence
# string against its page (a miss stops the run). Then `rag-index sync` (timed; about 13,000
# chunks) and `rag-index eval --exact` in hybrid, dense and lexical modes.
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/javadoc-docs.jsonl"

unseen_args "$@"
unseen_workdir javadoc
unseen_deb_folder libcommons-lang3-java-doc 3.12.0-2+deb12u1 usr/share/doc/libcommons-lang3-java/api
echo "corpus: $(find "$work/docs" -name '*.html' | wc -l) HTML pages, $(find "$work/docs" -type f | wc -l) files, from $deb"
numbered_source_structure src-html/
unseen_score "$work/docs" "$questions"
