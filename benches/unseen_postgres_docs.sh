#!/usr/bin/env bash
# Retrieval on DocBook HTML, a generator no one tuned rag-index on: 119 pages of the PostgreSQL 15
# manual (Debian `postgresql-doc-15`: the runtime-config-*, textsearch-*, sql-create*,
# sql-alter*, wal-* and routine-* pages) and 12 questions written for this check
# (benches/questions/postgres-docs.jsonl, each from a paragraph picked at random, evidence from
# that page's visible text). DocBook frames every page with Prev/Up/Home/Next bars and titles
# each note and warning box with an <h3>; the script prints how many chunks hold such a bar and
# how many sit under a box title instead of their section.
#
#   benches/unseen_postgres_docs.sh [--keep DIR]
#
# Fetches the package with `apt-get download` (the version the questions were checked against,
# 15.18-0+deb12u1, when the mirror still has it, else the current one) and checks every evidence
# string against its page (a miss stops the run). Then `rag-index sync` (timed) and `rag-index
# eval --exact` in hybrid, dense and lexical modes.
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/postgres-docs.jsonl"
checked_version="15.18-0+deb12u1"

unseen_args "$@"
unseen_workdir postgres-docs
unseen_deb postgresql-doc-15 "$checked_version"
html="$work/unpacked/usr/share/doc/postgresql-doc-15/html"
mkdir -p "$work/docs"
for pattern in 'runtime-config-*' 'textsearch-*' 'sql-create*' 'sql-alter*' 'wal-*' 'routine-*'; do
    find "$html" -maxdepth 1 -name "$pattern.html" -exec cp {} "$work/docs/" \;
done
echo "corpus: $(ls "$work/docs" | wc -l) pages from $deb"
structure_check='
import json, re, sys
chunks = [json.loads(line) for line in sys.stdin]
boxed = sum(bool(re.match(r"(Note|Warning|Tip|Caution|Important)\b", c["heading_path"][-1])) for c in chunks)
bars = sum(all(w in c["text"] for w in ("Prev", "Home", "Next")) for c in chunks)
print(f"chunks under a box title: {boxed}; holding a Prev/Home/Next bar: {bars}; of {len(chunks)}")'
unseen_score "$work/docs" "$questions"
