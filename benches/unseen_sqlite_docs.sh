#!/usr/bin/env bash
# Retrieval on hand-written HTML no one tuned rag-index on: the SQLite 3.40.1 documentation
# (Debian `sqlite3-doc`: 766 pages, the C API's c3ref/ pages and the release log included,
# indexed as the folder is), scored with 16 questions written for this check by a helper that
# read only the pages (benches/questions/sqlite-docs.jsonl: a developer's question, the page
# that answers it, evidence from its visible text; four answered in a table row, three in a
# list). Its tables hold rows longer than a chunk (the CAST conversions, the printf
# substitutions); the script prints how many chunks show a table row with Markdown pipes,
# which a reader of the page never saw.
#
#   benches/unseen_sqlite_docs.sh [--keep DIR]
#
# Fetches the package with `apt-get download` (3.40.1-2+deb12u2, the version the questions were
# checked against, when the mirror still has it, else the current one) and checks every
# evidence string against its page (a miss stops the run). Then `rag-index sync` (timed) and
# `rag-index eval --exact` in hybrid, dense and lexical modes.
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/sqlite-docs.jsonl"
checked_version="3.40.1-2+deb12u2"

unseen_args "$@"
unseen_workdir sqlite-docs
unseen_deb_folder sqlite3-doc "$checked_version" usr/share/doc/sqlite3
echo "corpus: $(find "$work/docs" -name '*.html' | wc -l) pages from $deb"
structure_check='
import json, re, sys
chunks = [json.loads(line) for line in sys.stdin]
def prose(text):
    return re.sub(r"(?ms)^(```+|~~~+).*?^\1", "", text)
pipes = sum(bool(re.search(r"(?m)^\|.*\|$|^\| | \|$", prose(c["text"]))) for c in chunks)
print(f"chunks showing a table row with pipes outside code: {pipes} of {len(chunks)}")'
unseen_score "$work/docs" "$questions"
