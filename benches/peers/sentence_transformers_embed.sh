#!/usr/bin/env bash
# Runs sentence_transformers_embed.py in benches/peers/.venv (created on first use by
# setup_sentence_transformers_venv.sh). Arguments are passed through; --threads also caps the BLAS/OpenMP pools.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/setup_sentence_transformers_venv.sh"

threads=""
prev=""
for arg in "$@"; do
    [ "$prev" = "--threads" ] && threads="$arg"
    prev="$arg"
done
if [ -n "$threads" ]; then
    export OMP_NUM_THREADS="$threads" MKL_NUM_THREADS="$threads"
fi
# The model is read from a local folder; never reach for the hub.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec "$here/.venv/bin/python" "$here/sentence_transformers_embed.py" "$@"
