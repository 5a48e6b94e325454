#!/usr/bin/env bash
# Retrieval on Java, C++ and C sources no one tuned rag-index on: JPype 1.7.1's native bridge
# from its source distribution on PyPI (native/: 41 `.java`, 55 `.cpp`, 45 `.h`, build files
# included), scored with 16 questions written for this check
# (benches/questions/jpype-code.jsonl: a developer's question, the file that answers it,
# evidence as lines of that file).
#
#   benches/unseen_jpype_code.sh [--keep DIR]
#
# Checks every evidence string against its file first (a miss stops the run). Then `rag-index
# sync` (timed) and `rag-index eval --exact` in hybrid, dense and lexical modes. Then, as the
# baseline in the same run, the same files renamed `.md`: what `--ext java,cpp,h` gave before
# these languages had a reader (the Markdown chunker, where `#include` and `#define` lines read
# as headings; without `--ext` the files were not indexed at all).
#
# Builds nothing: runs $RAG_INDEX_BIN, by default ${CARGO_TARGET_DIR:-./target}/release/rag-index.
# Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). Work files go under a temporary
# folder removed at the end, unless --keep DIR.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
. "$root/benches/unseen_common.sh"
questions="$root/benches/questions/jpype-code.jsonl"
version=1.7.1

unseen_args "$@"
unseen_workdir jpype-code
unseen_sdist_folder jpype1 "$version" native
echo "corpus: JPype $version native sources (PyPI sdist): $(find "$work/docs" -name '*.java' | wc -l) .java," \
    "$(find "$work/docs" -name '*.cpp' | wc -l) .cpp, $(find "$work/docs" -name '*.h' | wc -l) .h," \
    "$(find "$work/docs" -type f | wc -l) files in all"
page_structure .java .cpp .h .md
unseen_score "$work/docs" "$questions"

echo "== baseline: the same files as .md (source read as Markdown)"
unseen_baseline_md .java .cpp .h
