#!/usr/bin/env bash
# Creates benches/peers/.venv with sentence-transformers and a CPU-usable torch, for the peer
# benchmark. Idempotent. Only the package registry is needed (no model hub: the model is read
# from the local folder).
#
# torch is installed without its CUDA dependency packages first (several GB we do not need on a
# CPU-only machine); if that torch cannot be imported, the full dependency set is installed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
python=$(command -v python3 || command -v python) || { echo "error: python3 is needed" >&2; exit 2; }

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import torch, sentence_transformers" 2>/dev/null; then
    exit 0
fi

"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --disable-pip-version-check --quiet)
"${pip[@]}" --upgrade pip >&2
"${pip[@]}" --no-deps torch >&2
"${pip[@]}" filelock typing-extensions sympy networkx jinja2 fsspec setuptools numpy >&2
if ! "$venv/bin/python" -c "import torch; torch.ones(2) @ torch.ones(2)" 2>/dev/null; then
    echo "torch without its CUDA packages does not import; installing the full dependency set" >&2
    "${pip[@]}" torch >&2
fi
"${pip[@]}" sentence-transformers >&2
"$venv/bin/python" -c "import torch, sentence_transformers; print('peer venv ready: torch', torch.__version__, 'sentence-transformers', sentence_transformers.__version__)" >&2
