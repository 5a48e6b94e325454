#!/usr/bin/env bash
# Retrieval on plain text no one tuned rag-index on: Vim 9.0's help files (Debian
# `vim-runtime`: 151 `.txt` files, 9.8 MB, indexed as the folder is), scored with 16 questions
# written for this check by a helper that read only the files
# (benches/questions/vim-docs.jsonl: a user's question, the file that answers it, evidence as
# written; four in an option's entry, four in a command's). Vim's help is the format of every
# Vim plugin's doc/ too: sections between rules of `=`, numbered headings followed by `*tags*`,
# and entries with a hanging indent (a command or option at the margin, its text indented below
# over several paragraphs). The script prints how many chunks sit under a false heading (a tag
# line, a wrapped sentence) and how many begin inside an entry whose head line they do not show.
#
#   benches/unseen_vim_help.sh [--keep DIR]
#
# Fetches the package with `apt-get download` (2:9.0.1378-2+deb12u2, the version the questions
# were checked against, when the mirror still has it, else the current one) and checks every
# evidence string against its file (a miss stops the run). Then `rag-index sync` (timed) and
# `rag-index eval --exact` in hybrid, dense and lexical modes.
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/vim-docs.jsonl"
checked_version="2:9.0.1378-2+deb12u2"

unseen_args "$@"
unseen_workdir vim-help
unseen_deb vim-runtime "$checked_version"
rm -rf "$work/docs"
mkdir -p "$work/docs"
cp "$work"/unpacked/usr/share/vim/vim*/doc/*.txt "$work/docs/"
echo "corpus: $(find "$work/docs" -name '*.txt' | wc -l) help files from $deb"
structure_check='
import json, re, sys
chunks = [json.loads(line) for line in sys.stdin]
# A tag line (`*CTRL-R*`) or a wrapped sentence ("1. When starting Vim ... See") taken for a heading.
def false_heading(h):
    return h.startswith("*") or bool(re.search(r"[.?!]\s+[A-Z|]\S*$", h))
false = sum(any(false_heading(h) for h in c["heading_path"]) for c in chunks)
def is_tags(line):
    return all(t.startswith("*") and t.endswith("*") for t in line.split())
def body_first(text):
    # The first line after the breadcrumb and any *tags*: indented text, no head line above it.
    lines = [l for l in text.split("\n")[1:] if l.strip() and not is_tags(l)]
    return bool(lines) and lines[0].startswith("\t\t")
headless = sum(body_first(c["text"]) for c in chunks)
print(f"chunks under a false heading: {false}, starting inside an entry without its head: {headless}, of {len(chunks)}")'
unseen_score "$work/docs" "$questions"
