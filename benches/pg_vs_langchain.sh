#!/usr/bin/env bash
# rag-index embedded (--index) vs rag-index on PostgreSQL (--store) vs LangChain index() +
# SQLRecordManager + langchain-postgres PGVector (cleanup="full"): same model, same scratch copy of
# ../shared/corpora/traefik/docs, same throwaway Postgres (scripts/pg.sh, direct port). Measures full
# sync, no-op sync, one-file append, 10 files deleted (+ rows of them left), query latency over the
# 40 questions, recall@5. Prints a Markdown table (load average next to each figure) and the path
# of a JSON file with the raw numbers.
#
#   benches/pg_vs_langchain.sh [--embeddings st|cli] [--keep]
#
# Env: RAG_INDEX_BIN (default /var/tmp/rag-index-bench-bin), LC_VENV (default /var/tmp/lcpg-venv,
# made from benches/langchain_pg_requirements.txt if missing), ST_SITE (site-packages holding torch
# + sentence-transformers for --embeddings st; default benches/peers/.venv-langchain's), BENCH_TMP
# (scratch folder and server data, default /var/tmp).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
corpus="$(cd "$root/../shared/corpora/traefik/docs" && pwd)"
questions="$(cd "$root/../shared/corpora/traefik" && pwd)/questions.jsonl"
model="$root/models/all-MiniLM-L6-v2"
bin="${RAG_INDEX_BIN:-/var/tmp/rag-index-bench-bin}"
venv="${LC_VENV:-/var/tmp/lcpg-venv}"
st_site="${ST_SITE:-$here/peers/.venv-langchain/lib/python3.11/site-packages}"
embeddings=st keep=0
while [ $# -gt 0 ]; do
    case "$1" in
        --embeddings) embeddings="$2"; shift ;;
        --keep) keep=1 ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
    shift
done

log() { echo "[$(date +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)] $*" >&2; }
load1() { cut -d' ' -f1 /proc/loadavg; }
now_ms() { date +%s%3N; }
[ -x "$bin" ] || { echo "error: no rag-index binary at $bin" >&2; exit 2; }
if ! [ -x "$venv/bin/python" ]; then
    log "creating $venv from benches/langchain_pg_requirements.txt"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --no-cache-dir --disable-pip-version-check -r "$here/langchain_pg_requirements.txt"
fi
if [ "$embeddings" = st ] && ! "$venv/bin/python" -c "import sys; sys.path.append('$st_site'); import torch, sentence_transformers" 2>/dev/null; then
    echo "error: no torch + sentence-transformers under ST_SITE=$st_site (use --embeddings cli)" >&2
    exit 2
fi

tmp="${BENCH_TMP:-/var/tmp}"
work="$(mktemp -d "$tmp/pgvl.XXXXXX")"
pgdata="$tmp/pgvl-pg.${work##*.}"
cleanup() {
    "$root/scripts/pg.sh" stop "$pgdata" >/dev/null 2>&1 || true
    [ "$keep" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT
"$root/scripts/pg.sh" start "$pgdata" >/dev/null
url="$("$root/scripts/pg.sh" url "$pgdata" --direct)"
docs="$work/traefik"  # the folder's name is the collection's default name too
cp -a "$corpus" "$docs"
idx="$work/embedded.idx"
results="$work/results.jsonl"
: >"$results"
jq_q="$work/questions.txt"
python3 -c 'import json,sys; [print(json.loads(l)["question"]) for l in open(sys.argv[1]) if l.strip()]' "$questions" >"$jq_q"
first_q="$(head -1 "$jq_q")"
lc=("$venv/bin/python" "$here/langchain_index.py")
lc_common=(--pg "$url" --model "$model" --embeddings "$embeddings" --st-site "$st_site" --bin "$bin")
export OMP_NUM_THREADS=2 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

record() { echo "$1" >>"$results"; }

# rag SYSTEM STEP RUN : one `rag-index sync --json`, wall time from outside.
rag() {
    local system="$1" step="$2" run="$3" where load t0 t1 rc=0
    [ "$system" = embedded ] && where=(--index "$idx") || where=(--store "$url" --collection traefik)
    load=$(load1)
    t0=$(now_ms)
    "$bin" --model-dir "$model" sync "$docs" "${where[@]}" --json >"$work/out.json" 2>"$work/err.txt" || rc=$?
    t1=$(now_ms)
    [ "$rc" = 0 ] || { cat "$work/err.txt" "$work/out.json" >&2; echo "error: rag-index $system sync failed ($rc)" >&2; exit 1; }
    record "{\"system\":\"$system\",\"step\":\"$step\",\"run\":$run,\"load\":$load,\"wall_ms\":$((t1 - t0)),\"report\":$(cat "$work/out.json")}"
    log "$system $step#$run: $((t1 - t0)) ms $(cat "$work/out.json")"
}
lcs() {
    local step="$1" load t0 t1
    load=$(load1)
    t0=$(now_ms)
    "${lc[@]}" sync --docs "$docs" "${lc_common[@]}" >"$work/out.json" 2>"$work/err.txt" ||
        { cat "$work/err.txt" >&2; echo "error: LangChain sync failed" >&2; exit 1; }
    t1=$(now_ms)
    record "{\"system\":\"langchain\",\"step\":\"$step\",\"run\":1,\"load\":$load,\"wall_ms\":$((t1 - t0)),\"report\":$(cat "$work/out.json")}"
    log "langchain $step: $((t1 - t0)) ms $(cat "$work/out.json")"
}
all() {
    local step="$1" runs="${2:-1}" r
    for ((r = 1; r <= runs; r++)); do rag embedded "$step" "$r"; done
    for ((r = 1; r <= runs; r++)); do rag postgres "$step" "$r"; done
    lcs "$step"
}

log "work $work; $(find "$docs" -name '*.md' | wc -l) files; server $pgdata; embeddings for LangChain: $embeddings"
all full
all noop 3
append_file="getting-started/faq.md"
printf '\n%s\n' "This paragraph was added by the benchmark. A routing rule written here is evaluated after \
the entry point has accepted the connection, and the certificate resolver named in the router takes \
precedence over the default certificate store." >>"$docs/$append_file"
all append
mapfile -t victims < <(cd "$docs" && find . -name '*.md' -printf '%P\n' | LC_ALL=C sort |
    grep -vxF "$append_file" | awk 'NR % 17 == 1' | head -10)
for f in "${victims[@]}"; do rm "$docs/$f"; done
all delete-10

# Rows of the deleted files still there.
"${lc[@]}" count --pg "$url" --deleted "${victims[@]}" >"$work/count.json"
"$bin" --model-dir "$model" dump --index "$idx" >"$work/dump.jsonl"
emb_left=$(python3 -c 'import json,sys; g=set(sys.argv[2:]); print(sum(1 for l in open(sys.argv[1]) if l.strip() and json.loads(l)["path"] in g))' "$work/dump.jsonl" "${victims[@]}")
record "{\"system\":\"facts\",\"step\":\"orphans\",\"deleted\":$(printf '%s\n' "${victims[@]}" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().split()))'),\"embedded_rows\":$emb_left,\"counts\":$(cat "$work/count.json")}"
for system in embedded postgres; do
    [ "$system" = embedded ] && where=(--index "$idx") || where=(--store "$url" --collection traefik)
    rc=0; "$bin" --model-dir "$model" verify "${where[@]}" >"$work/verify.txt" 2>&1 || rc=$?
    record "{\"system\":\"$system\",\"step\":\"verify\",\"exit\":$rc}"
done

# Queries. rag-index: one process per single query (median of 5), and one process for all 40
# (hybrid, the default, and dense, LangChain's kind); eval -k 5 for recall.
for system in embedded postgres; do
    [ "$system" = embedded ] && where=(--index "$idx") || where=(--store "$url" --collection traefik)
    for run in 1 2 3 4 5; do
        load=$(load1); t0=$(now_ms)
        "$bin" --model-dir "$model" query "$first_q" "${where[@]}" -k 5 --json >/dev/null
        t1=$(now_ms)
        record "{\"system\":\"$system\",\"step\":\"query-1\",\"run\":$run,\"load\":$load,\"wall_ms\":$((t1 - t0))}"
    done
    for mode in hybrid dense; do
        for run in 1 2 3; do
            load=$(load1); t0=$(now_ms)
            "$bin" --model-dir "$model" query --queries "$jq_q" "${where[@]}" -k 5 --mode "$mode" --json >"$work/q.jsonl"
            t1=$(now_ms)
            record "{\"system\":\"$system\",\"step\":\"query-40-$mode\",\"run\":$run,\"load\":$load,\"wall_ms\":$((t1 - t0)),\"answers\":$(wc -l <"$work/q.jsonl")}"
        done
        load=$(load1)
        "$bin" --model-dir "$model" eval "$questions" "${where[@]}" -k 5 --mode "$mode" --json >"$work/eval.json"
        record "{\"system\":\"$system\",\"step\":\"eval-$mode\",\"load\":$load,\"report\":$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["overall"]))' "$work/eval.json")}"
    done
    log "$system queries done"
done
load=$(load1); t0=$(now_ms)
"${lc[@]}" query --questions "$questions" "${lc_common[@]}" -k 5 >"$work/out.json" 2>"$work/err.txt" ||
    { cat "$work/err.txt" >&2; exit 1; }
t1=$(now_ms)
record "{\"system\":\"langchain\",\"step\":\"query\",\"load\":$load,\"wall_ms\":$((t1 - t0)),\"report\":$(cat "$work/out.json")}"
log "langchain query: $(cat "$work/out.json")"

out="/var/tmp/pg_vs_langchain-$(date +%Y%m%d-%H%M%S).json"
python3 - "$results" "$out" "$embeddings" "$venv" "$st_site" <<'EOF'
import json, statistics, sys, subprocess
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out, emb, venv, st_site = sys.argv[2:6]
def get(system, step):
    return [r for r in rows if r["system"] == system and r["step"] == step]
def med(rs, key="wall_ms"):
    return statistics.median(r[key] for r in rs)
def loads(rs):
    return "/".join(str(r["load"]) for r in rs)
def sync_cell(system, step):
    rs = get(system, step)
    w = med(rs)
    s = f"{w / 1000:.2f} s" + (f" (median of {len(rs)})" if len(rs) > 1 else "")
    rep = rs[-1]["report"]
    if system == "langchain":
        s += (f"; index() {rep['index_s']:.2f} s; embedded {rep['embedded']}; +{rep['num_added']} "
              f"={rep['num_skipped']} -{rep['num_deleted']}; {rep['store_rows']} rows")
    else:
        c = rep["chunks"]
        s += (f"; in sync {med([{'wall_ms': r['report']['elapsed_ms']} for r in rs]) / 1000:.2f} s; "
              f"embedded {c['embedded']}, reused {c['reused']}, deleted {c['deleted']}; {c['total']} rows")
    return s + f" (load {loads(rs)})"
systems = [("embedded", "rag-index --index"), ("postgres", "rag-index --store"),
           ("langchain", f"LangChain PGVector ({emb})")]
print(f"| step | " + " | ".join(n for _, n in systems) + " |")
print("|---|---|---|---|")
for step, name in [("full", "full sync (cold)"), ("noop", "no-op sync"), ("append", "append to 1 file"),
                   ("delete-10", "delete 10 files")]:
    print(f"| {name} | " + " | ".join(sync_cell(s, step) for s, _ in systems) + " |")
orph = get("facts", "orphans")[0]
print(f"| rows of deleted files left | {orph['embedded_rows']} | {orph['counts']['rag_pg_rows']} | "
      f"{orph['counts']['langchain_rows']} |")
cells = []
for s in ("embedded", "postgres"):
    q1, qh, qd = get(s, "query-1"), get(s, "query-40-hybrid"), get(s, "query-40-dense")
    w1, wh, wd = med(q1), med(qh), med(qd)
    cells.append(f"1-query process {w1:.0f} ms (median of 5, load {loads(q1)}); 40 in one process: hybrid "
                 f"{wh:.0f} ms = {wh / 40:.1f} ms/q, marginal {(wh - w1) / 39:.1f} ms/q; dense {wd:.0f} ms = "
                 f"{wd / 40:.1f} ms/q, marginal {(wd - w1) / 39:.1f} ms/q (load {loads(qh)} / {loads(qd)})")
lq = get("langchain", "query")[0]
r = lq["report"]
cells.append(f"in-process similarity_search(k=5) p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms; "
             f"by_vector p50 {r['by_vector_p50_ms']:.1f} ms (process {lq['wall_ms'] / 1000:.1f} s, load {lq['load']})")
print("| query latency | " + " | ".join(cells) + " |")
rec = []
for s in ("embedded", "postgres"):
    h, d = get(s, "eval-hybrid")[0], get(s, "eval-dense")[0]
    rec.append(f"hybrid {h['report']['recall_at_5']:.3f}, dense {d['report']['recall_at_5']:.3f}")
rec.append(f"dense {r['recall_at_k']:.3f}")
print("| recall@5 (40 q) | " + " | ".join(rec) + " |")
print("\nverify: " + ", ".join(f"{s} exit {get(s, 'verify')[0]['exit']}" for s in ("embedded", "postgres")))
print("deleted files: " + ", ".join(orph["deleted"]))
print(f"LangChain side-effects after delete: {orph['counts']}")
freeze = subprocess.run([f"{venv}/bin/pip", "freeze"], capture_output=True, text=True).stdout.split()
if emb == "st":
    probe = subprocess.run([f"{venv}/bin/python", "-c", f"import sys; sys.path.append({st_site!r}); "
        "import torch, sentence_transformers, transformers; print(f'torch=={torch.__version__} "
        "sentence-transformers=={sentence_transformers.__version__} transformers=={transformers.__version__}')"],
        capture_output=True, text=True).stdout.split()
    freeze += probe
json.dump({"embeddings": emb, "python_packages": freeze, "rows": rows}, open(out, "w"), indent=1)
print(f"\nraw numbers: {out}")
EOF
