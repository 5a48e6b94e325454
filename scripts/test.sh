#!/usr/bin/env bash
# Runs every test of the workspace with the real model (fetched first if missing), plus the format
# and lint gates. One release-profile build serves the tests, the demo and the benchmarks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

./models/fetch-model.sh
cargo fmt --all -- --check
cargo test --release --workspace --no-fail-fast
cargo run --release --quiet --example desktop_app
cargo clippy --release --workspace --all-targets -- -D warnings
