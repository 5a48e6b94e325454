#!/usr/bin/env bash
# The larger run of the crash test: SIGKILL the real binary at random moments of many syncs and
# check that the next sync repairs everything.   scripts/kill-trials.sh [TRIALS] [SEED]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
./models/fetch-model.sh
RAG_KILL_TRIALS="${1:-50}" RAG_KILL_SEED="${2:-$RANDOM}" \
    cargo test --release --test kill_recovery -- --nocapture
