#!/usr/bin/env bash
# Scale figures of the PostgreSQL backend at large chunk counts: full sync, no-op sync, one-file
# edit, query p50/p99 (warm `serve --http`, dense and hybrid) and recall@10 of the HNSW path vs
# exact (through rag-index, and of its SQL statement at several hnsw.ef_search). No model run for
# the corpus: unit vectors are COPYed into rag_index.embeddings under the keys the sync looks up
# (--vectors random; clustered = the model's vector of the text without its unique line + noise;
# gaussian = drawn from the mean and covariance of the model's vectors of the section texts).
#
#   benches/pg_scale.sh [--sizes 100000,1000000] [--budget-min 60]
#                       [--vectors random|clustered|gaussian] [--sections-per-file S (default 1:
#                       sizes are files and about as many chunks; 10: ten sections per file)]
#                       [--fast (PG_FAST=1)] [--keep] [--no-rebuild (skip the from-scratch
#                       CREATE INDEX timing; the full sync builds the collection's index anyway)]
#
# A fresh server per size; the run stops before a size its previous one projects past the budget
# or the free disk. Before the timed steps the server is settled (VACUUM ANALYZE, CHECKPOINT, load
# average < 1). Env: RAG_INDEX_BIN (default /var/tmp/rag-index-bench-bin), RAG_INDEX_BIN_B (a second
# binary whose edits and no-ops alternate with the first's, same database), LC_VENV (default
# /var/tmp/lcpg-venv), BENCH_TMP (default /var/tmp), PG_MAINTENANCE_WORK_MEM (passed to
# scripts/pg.sh: e.g. 4GB keeps a 1M-chunk HNSW build in memory). Raw numbers: a JSON file under /var/tmp.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
corpus="$(cd "$root/../shared/corpora/traefik/docs" && pwd)"
model="$root/models/all-MiniLM-L6-v2"
bin="${RAG_INDEX_BIN:-/var/tmp/rag-index-bench-bin}"
bin_b="${RAG_INDEX_BIN_B:-}"
py="${LC_VENV:-/var/tmp/lcpg-venv}/bin/python"
sizes=100000,1000000 budget_min=60 fast=0 keep=0 vectors=random rebuild=1 per_file=1
while [ $# -gt 0 ]; do
    case "$1" in
        --sizes) sizes="$2"; shift ;;
        --budget-min) budget_min="$2"; shift ;;
        --fast) fast=1 ;;
        --vectors) vectors="$2"; shift ;;
        --sections-per-file) per_file="$2"; shift ;;
        --keep) keep=1 ;;
        --no-rebuild) rebuild=0 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
    shift
done
log() { echo "[$(date +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)] $*" >&2; }
load1() { cut -d' ' -f1 /proc/loadavg; }
now_ms() { date +%s%3N; }
free_bytes() { df -B1 --output=avail "$tmp" | tail -1 | tr -d ' '; }
"$py" -c 'import numpy, psycopg, pgvector, blake3' || { echo "error: $py lacks numpy/psycopg/pgvector/blake3" >&2; exit 2; }

started=$(now_ms)
tmp="${BENCH_TMP:-/var/tmp}"
work="$(mktemp -d "$tmp/pgscale.XXXXXX")"
pgdata="" serve_pid=""
cleanup() {
    [ -z "$serve_pid" ] || kill "$serve_pid" 2>/dev/null || true
    [ -z "$pgdata" ] || "$root/scripts/pg.sh" stop "$pgdata" >/dev/null 2>&1 || true
    [ "$keep" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT
results="$work/results.jsonl"
: >"$results"
record() { echo "$1" >>"$results"; }

# sync N STEP : one timed `rag-index sync --json` of the generated folder, with peak RSS.
sync_step() {
    local n="$1" step="$2" step_bin="${3:-$bin}" load t0 t1 rc=0
    load=$(load1)
    t0=$(now_ms)
    /usr/bin/time -f '%M' -o "$work/rss.txt" "$step_bin" --model-dir "$model" sync "$big" --store "$url" \
        --collection "scale" --json >"$work/out.json" 2>"$work/err.txt" || rc=$?
    t1=$(now_ms)
    [ "$rc" = 0 ] || { tail -20 "$work/err.txt" >&2; echo "error: sync $step failed ($rc)" >&2; exit 1; }
    record "{\"size\":$n,\"step\":\"$step\",\"load\":$load,\"load_end\":$(load1),\"bin\":\"$(basename "$step_bin")\",\"wall_ms\":$((t1 - t0)),\"rss_kb\":$(tail -1 "$work/rss.txt"),\"report\":$(cat "$work/out.json")}"
    log "size $n $step: $((t1 - t0)) ms, $(cat "$work/out.json")"
}

prev_n=0 prev_ms=0 prev_bytes=0
IFS=, read -ra size_list <<<"$sizes"
for n in "${size_list[@]}"; do
    elapsed_min=$(((($(now_ms) - started)) / 60000))
    if [ "$prev_n" -gt 0 ]; then
        # Linear projection from the previous size (the HNSW build grows a little faster than linear).
        need_ms=$((prev_ms * n / prev_n)) need_bytes=$((prev_bytes * n / prev_n))
        if [ $((elapsed_min + need_ms / 60000)) -gt "$budget_min" ] || [ "$need_bytes" -gt "$(($(free_bytes) - 1073741824))" ]; then
            msg="size $n skipped: projected $((need_ms / 60000)) min (elapsed $elapsed_min of $budget_min) and $((need_bytes >> 20)) MiB of disk ($(($(free_bytes) >> 20)) MiB free, 1 GiB kept spare)"
            log "$msg"
            record "{\"size\":$n,\"step\":\"skipped\",\"reason\":\"$msg\"}"
            break
        fi
    fi
    size_t0=$(now_ms)
    pgdata="$tmp/pgscale-pg.${work##*.}-$n"
    PG_FAST=$fast "$root/scripts/pg.sh" start "$pgdata" >/dev/null
    url="$("$root/scripts/pg.sh" url "$pgdata" --direct)"
    big="$work/big-$n"
    log "size $n: generating files"
    "$py" "$here/pg_scale.py" gen "$corpus" "$big" "$n" "$per_file"
    fp=$("$bin" --model-dir "$model" stats --store "$url" --collection scale --json |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["model_fingerprint"])')
    log "size $n: chunking (rag-index chunks --json) and seeding vectors for $fp"
    t0=$(now_ms)
    (cd "$big" && find . -name '*.md' -print0 | xargs -0 -n 20000 "$bin" --model-dir "$model" chunks --json) >"$work/chunks.jsonl"
    t1=$(now_ms)
    sample=$("$py" - "$work/chunks.jsonl" "$work/queries.txt" <<'EOF'
import json, random, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
random.seed(7)
with open(sys.argv[2], "w", encoding="utf-8") as f:
    for l in random.sample(lines, 50):
        words = json.loads(l)["text"].split("\n\n", 1)[-1].split()
        f.write(" ".join(words[:12]) + "\n")
print(len(lines))
EOF
)
    "$py" "$here/pg_scale.py" seed "$url" "$fp" "$vectors" "$bin" "$model" <"$work/chunks.jsonl" >"$work/seed.json"
    t2=$(now_ms)
    record "{\"size\":$n,\"step\":\"seed\",\"load\":$(load1),\"chunks_ms\":$((t1 - t0)),\"seed_ms\":$((t2 - t1)),\"report\":$(cat "$work/seed.json")}"
    log "size $n: $sample chunks; chunking $((t1 - t0)) ms, seeding $((t2 - t1)) ms: $(cat "$work/seed.json")"
    rm -f "$work/chunks.jsonl"

    sync_step "$n" full
    full_ms=$(($(now_ms) - size_t0))
    "$py" "$here/pg_scale.py" settle "$url" "$pgdata/superuser-password" >"$work/settle.json"
    record "{\"size\":$n,\"step\":\"settle\",\"report\":$(cat "$work/settle.json")}"
    log "size $n: settled: $(cat "$work/settle.json")"
    for run in 1 2 3; do sync_step "$n" "noop-$run"; done
    # Edit rounds: one appended paragraph in a file not edited before, then a no-op; with
    # RAG_INDEX_BIN_B the two binaries alternate on the same database (same-run A/B).
    edits=0
    for round in 1 2 3; do
        for label in A B; do
            step_bin="$bin"
            if [ "$label" = B ]; then
                [ -n "$bin_b" ] || continue
                step_bin="$bin_b"
            fi
            edits=$((edits + 1))
            i=$((n * edits / 9 + 1))
            edit="$big/d$(printf '%04d' $((i / 1000)))/doc$(printf '%07d' "$i").md"
            printf '\nA paragraph added by the scale benchmark (edit %s): the router matches it after the entry point.\n' "$edits" >>"$edit"
            sync_step "$n" "edit-$round-$label" "$step_bin"
            sync_step "$n" "noop-after-edit-$round-$label" "$step_bin"
        done
    done
    "$py" "$here/pg_scale.py" sizes "$url" >"$work/sizes.json"
    record "{\"size\":$n,\"step\":\"sizes\",\"report\":$(cat "$work/sizes.json"),\"folder_bytes\":$(du -sB1 "$big" | cut -f1)}"
    rc=0; "$bin" --model-dir "$model" verify --store "$url" --collection scale >"$work/verify.txt" 2>&1 || rc=$?
    record "{\"size\":$n,\"step\":\"verify\",\"exit\":$rc}"

    # Queries: single-query processes (CLI wall), then a warm HTTP server for p50/p99 and recall.
    q1="$(head -1 "$work/queries.txt")"
    for mode in dense hybrid; do
        for run in 1 2 3; do
            load=$(load1); t0=$(now_ms)
            /usr/bin/time -f '%U %S' -o "$work/cpu.txt" "$bin" --model-dir "$model" query "$q1" --store "$url" \
                --collection scale -k 10 --mode "$mode" --json >/dev/null
            t1=$(now_ms)
            read -r cpu_user cpu_sys < <(tail -1 "$work/cpu.txt")
            record "{\"size\":$n,\"step\":\"cli-query-$mode\",\"run\":$run,\"load\":$load,\"wall_ms\":$((t1 - t0)),\"user_s\":$cpu_user,\"sys_s\":$cpu_sys}"
        done
    done
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$bin" --model-dir "$model" serve --http "127.0.0.1:$port" --store "$url" --collection scale 2>"$work/serve.err" &
    serve_pid=$!
    for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done
    load=$(load1)
    "$py" "$here/pg_scale.py" search "http://127.0.0.1:$port" "$work/queries.txt" 10 >"$work/search.json"
    record "{\"size\":$n,\"step\":\"search\",\"load\":$load,\"load_after\":$(load1),\"report\":$(cat "$work/search.json")}"
    log "size $n search: $(cat "$work/search.json")"
    "$py" "$here/pg_scale.py" lexoverlap "$url" "$work/queries.txt" "http://127.0.0.1:$port" 10 >"$work/lex.json"
    record "{\"size\":$n,\"step\":\"lexoverlap\",\"load\":$(load1),\"report\":$(cat "$work/lex.json")}"
    log "size $n lexical vs unpruned: $(cat "$work/lex.json")"
    kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=""
    load=$(load1)
    "$py" "$here/pg_scale.py" sqlrecall "$url" "$work/queries.txt" "$bin" "$model" 10 >"$work/sqlrecall.json"
    record "{\"size\":$n,\"step\":\"sqlrecall\",\"load\":$load,\"report\":$(cat "$work/sqlrecall.json")}"
    log "size $n sql recall: $(cat "$work/sqlrecall.json")"

    used=$(($(du -sB1 "$pgdata" | cut -f1) + $(du -sB1 "$big" | cut -f1)))
    load=$(load1)
    if [ "$rebuild" = 1 ]; then
        "$py" "$here/pg_scale.py" rebuild "$url" >"$work/rebuild.json"
    else
        echo '{"skipped": true}' >"$work/rebuild.json"
    fi
    record "{\"size\":$n,\"step\":\"rebuild\",\"load\":$load,\"load_end\":$(load1),\"report\":$(cat "$work/rebuild.json")}"
    log "size $n HNSW from scratch: $(cat "$work/rebuild.json")"
    record "{\"size\":$n,\"step\":\"footprint\",\"disk_bytes\":$used,\"size_ms\":$(($(now_ms) - size_t0))}"
    "$root/scripts/pg.sh" stop "$pgdata" >/dev/null 2>&1 || true
    pgdata=""
    rm -rf "$big"
    prev_n=$n prev_ms=$(($(now_ms) - size_t0)) prev_bytes=$used
done

out="/var/tmp/pg_scale-$(date +%Y%m%d-%H%M%S).json"
python3 - "$results" "$out" "$fast" "$vectors" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
json.dump(rows, open(sys.argv[2], "w"), indent=1)
print(f"PG_FAST={sys.argv[3]} (1: fsync, synchronous_commit, full_page_writes off); vectors: {sys.argv[4]}\n")
for n in sorted({r["size"] for r in rows}):
    rs = [r for r in rows if r["size"] == n]
    skipped = [r for r in rs if r["step"] == "skipped"]
    if skipped:
        print(f"- {skipped[0]['reason']}")
        continue
    get = lambda s: next(r for r in rs if r["step"] == s)
    seed = get("seed")
    print(f"## {seed['report']['chunks']:,} chunks ({n:,} files)\n")
    print("| step | wall | in sync | peak RSS | embedded / reused / deleted / live | load |")
    print("|---|---|---|---|---|---|")
    print(f"| chunk + seed vectors (outside rag-index) | chunks {seed['chunks_ms'] / 1000:.1f} s + seed "
          f"{seed['seed_ms'] / 1000:.1f} s (of which embedding {seed['report'].get('embed_s', 0)} s, COPY "
          f"{seed['report']['copy_s']} s) | – | – | {seed['report']['distinct_hashes']:,} {seed['report'].get('vectors', 'random')} "
          f"vectors | {seed['load']} |")
    for r in rs:
        if "report" in r and "chunks" in r["report"] and "files" in r["report"]:
            c = r["report"]["chunks"]
            print(f"| {r['step']} | {r['wall_ms'] / 1000:.2f} s | {r['report']['elapsed_ms'] / 1000:.2f} s | "
                  f"{r['rss_kb'] / 1024:.0f} MiB | {c['embedded']} / {c['reused']:,} / {c['deleted']} / "
                  f"{c['total']:,} | {r['load']} -> {r['load_end']} |")
    for mode in ("dense", "hybrid"):
        cl = [r for r in rs if r["step"] == f"cli-query-{mode}"]
        print(f"| one `query` process, {mode}, k=10 (median of {len(cl)}) | "
              f"{statistics.median(r['wall_ms'] for r in cl) / 1000:.2f} s | client CPU "
              f"{statistics.median(r.get('user_s', 0) + r.get('sys_s', 0) for r in cl):.2f} s | – | – | "
              f"{'/'.join(str(r['load']) for r in cl)} |")
    s = get("search")
    rep = s["report"]
    print(f"\nWarm `serve --http`, {rep['queries']} queries (first 12 words of random chunks), k={rep['k']}, "
          f"no dedup (load {s['load']} -> {s['load_after']}):\n")
    print("| path | p50 | p99 | max | recall@10 vs exact (mean, min) |")
    print("|---|---|---|---|---|")
    for m, l in rep["latency_ms"].items():
        base = m.split("-")[0]
        rec = "" if m.endswith("exact") else f"{rep['recall_vs_exact'][base]:.3f} (min {rep['recall_min'][base]:.1f})"
        print(f"| {m} | {l['p50']} ms | {l['p99']} ms | {l['max']} ms | {rec} |")
    lx = next((r for r in rs if r["step"] == "lexoverlap"), None)
    if lx:
        lr = lx["report"]
        print(f"\nLexical (load {lx['load']}): rag-index p50 {lr['p50_ms']['rag-index lexical']} ms "
              f"(max {lr['max_ms']['rag-index lexical']}) vs the unpruned statement p50 "
              f"{lr['p50_ms']['unpruned SQL']} ms (max {lr['max_ms']['unpruned SQL']}); overlap@{lr['k']} "
              f"{lr['overlap_mean']:.3f} (min {lr['overlap_min']:.1f}).")
    sq = get("sqlrecall")
    print(f"\nThe dense SQL statement alone (psycopg, same query texts embedded by `rag-index embed`), "
          f"recall@{sq['report']['k']} vs exact (load {sq['load']}): " + "; ".join(
          f"{ef}: {v['recall']:.3f} at p50 {v['p50_ms']} ms" for ef, v in sq["report"]["sql"].items()))
    rb = get("rebuild")
    if not rb["report"].get("skipped"):
      print(f"\nThe same HNSW index built from scratch over these chunks (CREATE INDEX, maintenance_work_mem "
          f"{rb['report']['maintenance_work_mem']}): {rb['report']['create_index_s']} s (load {rb['load']} -> {rb['load_end']}).")
    sz = get("sizes")["report"]
    fp = get("footprint")
    print(f"\nDatabase {sz['database_bytes'] / 2**20:.0f} MiB; " + ", ".join(
        f"{k} {v / 2**20:.0f} MiB" for k, v in sz["relations"].items() if v > 2**20) +
        f"; server data dir (db + WAL) + folder {fp['disk_bytes'] / 2**20:.0f} MiB; "
        f"verify exit {get('verify')['exit']}; whole size {fp['size_ms'] / 60000:.1f} min.\n")
print(f"raw numbers: {sys.argv[2]}")
EOF
