#!/usr/bin/env bash
# Serving benchmark (issue 15, "Measure"): warm query latency through the library, HTTP and MCP
# (stdio and streamable HTTP) on the Traefik index; HTTP throughput with 8/32/128 concurrent
# loopback clients, idle and during a sync; `serve --watch`: time from a file save to its text
# being searchable, idle CPU over 60 s and RSS. Not a CI test. Prints one JSON line per
# measurement on stdout; progress on stderr.
#
#   benches/serve_latency.sh [--index PATH] [--no-build] [--seconds N]
#
# --index: an existing index of ../shared/corpora/traefik/docs to copy (default: sync one, which
# embeds the whole corpus once). Needs python3 with the MCP SDK venv the tests make
# ($CARGO_TARGET_DIR/mcp-venv, or run `cargo test --release --test serve` once).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
corpus="$(cd "$root/../shared/corpora/traefik/docs" && pwd)"
questions="$root/../shared/corpora/traefik/questions.jsonl"
target="${CARGO_TARGET_DIR:-$root/target}"
bin="$target/release/rag-index"
bench="$target/release/examples/serve_bench"
python="$target/mcp-venv/bin/python"

index_src="" build=1 seconds=10
while [ $# -gt 0 ]; do
    case "$1" in
        --index) index_src="$2"; shift 2 ;;
        --no-build) build=0; shift ;;
        --seconds) seconds="$2"; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
if [ "$build" = 1 ]; then
    (cd "$root" && cargo build --release --bin rag-index --example serve_bench >&2)
fi

work="$(mktemp -d)"
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
note() { echo "serve_latency: $*" >&2; }
load() { cut -d' ' -f1 /proc/loadavg; }

# The docs with their mtimes (so a copied index needs no re-embedding) and the index inside.
cp -a "$corpus" "$work/docs"
if [ -n "$index_src" ]; then
    cp -r "$index_src" "$work/docs/.rag-index"
fi
note "syncing the index (a no-op with a copied index)"
"$bin" sync "$work/docs" --json >/dev/null
index="$work/docs/.rag-index"

note "query embedding alone, then library latency"
"$bench" embed "$questions" 400 | sed "s/}$/,\"load\":$(load)}/"
"$bench" library "$index" "$questions" 400 | sed "s/}$/,\"load\":$(load)}/"
"$bench" library "$index" "$questions" 400 lexical | sed "s/}$/,\"load\":$(load)}/"

note "MCP latency"
"$python" "$here/mcp_latency.py" "$bin" "$index" "$questions" 200 | sed "s/}$/,\"load\":$(load)}/"

port=7391
url="http://127.0.0.1:$port"
"$bin" serve --http "127.0.0.1:$port" --watch "$work/docs" 2>"$work/serve.err" &
server_pid=$!
until curl -sf "$url/status" 2>/dev/null | grep -q '"syncs":[1-9]'; do sleep 0.2; done

note "MCP over streamable HTTP latency"
"$python" "$here/mcp_latency.py" "$bin" "$index" "$questions" 200 "$url" | sed "s/}$/,\"load\":$(load)}/"

note "HTTP latency (1 client) and throughput"
for clients in 1 8 32 128; do
    "$bench" http "$url" "$questions" "$clients" "$seconds" | sed "s/}$/,\"load\":$(load)}/"
done

note "HTTP throughput during a sync (30 files edited, re-embedded meanwhile)"
for f in $(find "$work/docs" -name '*.md' -not -path '*/.rag-index/*' | sort | head -30); do
    printf '\n\n## Bench edit\n\nA paragraph added while clients search, %s.\n' "$RANDOM" >>"$f"
done
"$bench" http "$url" "$questions" 32 "$seconds" | sed "s/}$/,\"during_sync\":true,\"load\":$(load)}/"
until curl -sf "$url/status" | grep -q '"syncing":false,'; do sleep 0.2; done

note "watch: save to searchable"
now_ms() { date +%s%3N; }
for i in 1 2 3 4 5; do
    sleep 1
    word="zqxbench${i}w${RANDOM}"
    start=$(now_ms)
    printf '# Bench note %s\n\nThe %s setting is searchable.\n' "$i" "$word" >"$work/docs/bench-note-$i.md"
    until curl -sf -XPOST "$url/search" -d "{\"query\":\"$word\",\"mode\":\"lexical\"}" | grep -q "bench-note-$i.md"; do
        sleep 0.01
    done
    echo "{\"via\":\"watch\",\"save_to_searchable_ms\":$(( $(now_ms) - start )),\"load\":$(load)}"
done

note "idle CPU over 60 s"
ticks() { awk '{print $14 + $15}' "/proc/$server_pid/stat"; }
sleep 2
before=$(ticks)
sleep 60
after=$(ticks)
hz=$(getconf CLK_TCK)
rss_kb=$(awk '/VmRSS/ {print $2}' "/proc/$server_pid/status")
echo "{\"via\":\"idle\",\"cpu_seconds_per_60s\":$(awk "BEGIN {print ($after - $before) / $hz}"),\"rss_mib\":$(( rss_kb / 1024 )),\"load\":$(load)}"
