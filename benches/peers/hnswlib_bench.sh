#!/usr/bin/env bash
# Runs hnswlib_bench.py in its own venv (benches/peers/.venv-hnswlib), creating it and
# installing hnswlib + numpy from PyPI on first use. Arguments go to the Python script.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-hnswlib"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import hnswlib, numpy" 2>/dev/null; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check hnswlib numpy >&2
fi
exec "$venv/bin/python" "$here/hnswlib_bench.py" "$@"
