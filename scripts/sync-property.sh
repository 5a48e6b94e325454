#!/usr/bin/env bash
# The larger run of the sync property test: many seeded random edit sequences, each checked
# against a fresh index after every sync.   scripts/sync-property.sh [SEQUENCES] [SEED]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
./models/fetch-model.sh
RAG_PROPTEST_SEQUENCES="${1:-50}" RAG_PROPTEST_SEED="${2:-$RANDOM}" \
    cargo test --release --test sync_property -- --nocapture
