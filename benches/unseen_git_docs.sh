#!/usr/bin/env bash
# Retrieval on documents no one tuned rag-index on: the Git manual pages (Debian `git-doc`, 206
# AsciiDoc-generated HTML pages) and 24 questions written for this check
# (benches/questions/git-docs.jsonl: a user's question, the page that answers it, evidence strings
# from that page's visible text). None of rag-index's chunking or fusion choices were made on
# this corpus; it checks that what was measured on ../shared/corpora carries to another project's
# docs and another HTML generator.
#
#   benches/unseen_git_docs.sh [--peer] [--keep DIR]
#
# Fetches git-doc with `apt-get download` (the version the questions were checked against,
# 1:2.39.5-0+deb12u3, when the mirror still has it, else the current one), keeps its *.html,
# and checks every evidence string against its page (benches/questions/check_html_evidence.py;
# a miss stops the run, so another version of the pages is caught rather than scored). Then
# `rag-index sync` (timed) and `rag-index eval --exact` in hybrid, dense and lexical modes.
# --peer also runs LangChain's BSHTMLLoader + RecursiveCharacterTextSplitter with the same
# model over the same pages (benches/peers/langchain_formats.py; venv made by
# benches/peers/setup_langchain_venv.sh if missing).
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/git-docs.jsonl"
checked_version="1:2.39.5-0+deb12u3"

peer_allowed=1
unseen_args "$@"
unseen_workdir git-docs
unseen_deb git-doc "$checked_version"
mkdir -p "$work/docs"
cp "$work"/unpacked/usr/share/doc/git-doc/*.html "$work/docs/"
echo "corpus: $(ls "$work/docs" | wc -l) pages from $deb"
unseen_score "$work/docs" "$questions"

if [ "$peer" = 1 ]; then
    venv="$root/benches/peers/.venv-langchain"
    [ -x "$venv/bin/python" ] || bash "$root/benches/peers/setup_langchain_venv.sh"
    echo "== LangChain BSHTMLLoader + RecursiveCharacterTextSplitter (1000/200), same model, exact"
    "$venv/bin/python" "$root/benches/peers/langchain_formats.py" --docs "$work/docs" \
        --questions "$questions" --model "$model" --label git-docs --table \
        >"$work/langchain.json" 2>"$work/langchain.stderr"
    sed -n '2,$p' "$work/langchain.json"
fi
