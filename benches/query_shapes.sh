#!/usr/bin/env bash
# Query-shape benchmark (issue 13, "Measure"): recall on a question set for plain top-5 and for
# token budgets of 512 / 1,024 / 2,048 with and without dedup and each expansion, overall and
# per pattern, with the mean tokens handed back per question. One index, one run.
#
#   benches/query_shapes.sh [--index DIR] [--docs DIR] [--questions FILE] [--mode MODE]
#
# Without --index it syncs the docs (default ../shared/corpora/traefik/docs) into a temporary
# index first. "R@all" is the share of questions one returned result answers (the whole budget's
# worth); a result is a chunk, or with expansion the passage handed back for a hit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
docs="$root/../shared/corpora/traefik/docs"
questions="$root/../shared/corpora/traefik/questions.jsonl"
index="" mode=hybrid
while [ $# -gt 0 ]; do
    case "$1" in
        --index) index="$2"; shift ;;
        --docs) docs="$2"; shift ;;
        --questions) questions="$2"; shift ;;
        --mode) mode="$2"; shift ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
    shift
done
bin="${CARGO_TARGET_DIR:-$root/target}/release/rag-index"
[ -x "$bin" ] || (cd "$root" && cargo build --release --quiet)
if [ -z "$index" ]; then
    index="$(mktemp -d)/index"
    echo "syncing $docs into $index" >&2
    "$bin" sync "$docs" --index "$index" >/dev/null
fi

run() { # label, eval flags...
    local label="$1"; shift
    "$bin" eval "$questions" --index "$index" --mode "$mode" --json "$@" |
        python3 -c '
import json, sys
label = sys.argv[1]
r = json.load(sys.stdin)
o = r["overall"]
per = " ".join("%s=%.2f" % (p, m["recall"]) for p, m in sorted(r["per_pattern"].items()))
print("| %s | %.3f | %.3f | %.3f | %.3f | %.0f | %s |" % (label, o["recall_at_1"], o["recall_at_5"],
      o["recall"], o["mrr_at_10"], r["mean_tokens_per_query"], per))
' "$label"
}

echo "questions: $questions; mode: $mode; index: $index"
echo
echo "| setting | R@1 | R@5 | R@all | MRR@10 | mean tokens/question | R@all per pattern |"
echo "|---|---|---|---|---|---|---|"
run "top-5, no dedup" -k 5 --no-dedup
run "top-5, dedup" -k 5
for budget in 512 1024 2048; do
    run "budget $budget, no dedup" --budget "$budget" --no-dedup
    run "budget $budget, dedup" --budget "$budget"
    run "budget $budget, dedup, neighbors" --budget "$budget" --expand neighbors
    run "budget $budget, dedup, section" --budget "$budget" --expand section
done
