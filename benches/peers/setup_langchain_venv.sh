#!/usr/bin/env bash
# Creates benches/peers/.venv-langchain for benches/peers/langchain_sync.py: LangChain's indexing
# API (langchain-core `index()`, langchain-classic `SQLRecordManager`), its text splitters, and
# sentence-transformers on torch to run the same local model folder. Idempotent; only PyPI needed.
# Also the document loaders of benches/peers/langchain_formats.py (langchain-community's
# BSHTMLLoader, PyPDFLoader, Docx2txtLoader) and the parsers behind them: beautifulsoup4 with lxml
# (BSHTMLLoader's default parser), pypdf, docx2txt.
#
# PyPI has no CPU-only torch wheel, so its default (CUDA) wheel is used. torch is tried first
# without its CUDA dependency packages (several GB); if that torch does not import, the full set is
# installed. sentence-transformers is installed without dependencies (its only heavy one is torch,
# already there) so pip does not pull the CUDA packages back in through torch's requirements.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-langchain"
python=$(command -v python3 || command -v python) || { echo "error: python3 is needed" >&2; exit 2; }

check='import torch, sentence_transformers, langchain_core.indexing, langchain_classic.indexes, langchain_text_splitters'
check="$check, langchain_community.document_loaders, bs4, lxml, pypdf, docx2txt"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" 2>/dev/null; then
    exit 0
fi

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --disable-pip-version-check --quiet)
"${pip[@]}" --upgrade pip >&2
if ! "$venv/bin/python" -c "import torch; torch.ones(2) @ torch.ones(2)" 2>/dev/null; then
    "${pip[@]}" --no-deps torch >&2
    "${pip[@]}" filelock typing-extensions sympy networkx jinja2 fsspec setuptools numpy >&2
    if ! "$venv/bin/python" -c "import torch; torch.ones(2) @ torch.ones(2)" 2>/dev/null; then
        echo "torch without its CUDA packages does not import; installing the full dependency set" >&2
        "${pip[@]}" torch >&2
    fi
fi
"${pip[@]}" --no-deps sentence-transformers >&2
"${pip[@]}" transformers huggingface-hub tqdm scipy scikit-learn pillow typing-extensions >&2
"${pip[@]}" langchain-core langchain-text-splitters langchain-classic "sqlalchemy[asyncio]" \
    langchain-community beautifulsoup4 lxml pypdf docx2txt >&2
"$venv/bin/python" -c "$check; import langchain_core, torch, sentence_transformers; print('langchain venv ready: torch', torch.__version__, 'sentence-transformers', sentence_transformers.__version__, 'langchain-core', langchain_core.__version__)" >&2
