#!/usr/bin/env bash
# Issue 14 ("Beyond Markdown"): `rag-index eval` on the HTML / PDF / DOCX / source-code corpora of
# ../shared/corpora, beside LangChain's loaders + RecursiveCharacterTextSplitter with the same model,
# both in the same run (benches/peers/langchain_formats.py is the LangChain side).
#
#   benches/formats_vs_langchain.sh [--only bash|python-docs|code]... [--exact] [--keep DIR | --report DIR]
#
# Builds nothing: it runs the rag-index binary at $RAG_INDEX_BIN, by default
# ${CARGO_TARGET_DIR:-./target}/release/rag-index. Corpora: $CORPORA_DIR (default ../shared/corpora
# next to the checkout). Model: $RAG_INDEX_MODEL_DIR (default models/all-MiniLM-L6-v2). The
# LangChain venv is benches/peers/.venv-langchain (created by peers/setup_langchain_venv.sh if
# missing). Temporary indexes go under ${TMPDIR:-/tmp} and are removed at the end, unless --keep
# DIR is given, which keeps every JSON report (and the indexes) there.
#
# rag-index side, per corpus: `rag-index sync DOCS --index TMP --json` (timed), then
# `rag-index eval QUESTIONS --index TMP --json` (HNSW search as `eval` does by default; --exact
# passes --exact), and `rag-index dump` to count the chunks over 256 tokens. For bash, whose three
# files are the same manual, the index of all three is copied three times and each copy is synced
# again with `--ext html` / `--ext pdf` / `--ext docx`, which drops the other two files without
# embedding anything, so each format is evaluated on an index of that file alone.
# --report DIR prints the table again from the reports a --keep DIR run left, running nothing.
# LangChain side: one process per corpus (bash with --per-format: each format against only its
# own chunks, exact cosine).
#
# Time column: rag-index = wall time of the full `sync` process (model load included; for bash the
# sync of the three files, on the bash/all row); LangChain = load + split + embed inside the peer
# process (imports and model load, a few seconds, are not included; they are in the JSON).
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
corpora="${CORPORA_DIR:-$root/../shared/corpora}"
venv="$root/benches/peers/.venv-langchain"
threads="${THREADS:-2}"

only=()
exact=()
keep=""
report=""
while [ $# -gt 0 ]; do
    case "$1" in
        --only) only+=("${2:?--only needs bash, python-docs or code}"); shift 2 ;;
        --only=*) only+=("${1#--only=}"); shift ;;
        --exact) exact=(--exact); shift ;;
        --keep) keep="${2:?--keep needs a folder}"; shift 2 ;;
        --report) report="${2:?--report needs a folder}"; shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ ${#only[@]} -gt 0 ] || only=(bash python-docs code)
for c in "${only[@]}"; do
    case "$c" in bash|python-docs|code) ;; *) echo "--only: unknown corpus $c" >&2; exit 2 ;; esac
    [ -d "$corpora/$c/docs" ] || { echo "missing corpus: $corpora/$c/docs" >&2; exit 2; }
done

[ -x "$bin" ] || { echo "rag-index binary not found at $bin (set RAG_INDEX_BIN); this script builds nothing" >&2; exit 2; }
[ -d "$model" ] || { echo "model folder not found: $model" >&2; exit 2; }
if [ ! -x "$venv/bin/python" ]; then
    echo "creating $venv (several minutes)" >&2
    bash "$root/benches/peers/setup_langchain_venv.sh"
fi
python="$venv/bin/python"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/formats-vs-langchain.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
if [ -n "$keep" ]; then
    mkdir -p "$keep"
    out="$(cd "$keep" && pwd)"
    idx_root="$out"
else
    out="$tmp/results"
    mkdir -p "$out"
    idx_root="$tmp"
fi

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
started=$(now)
[ -z "$report" ] || { out="$(cd "$report" && pwd)"; only_report=1; }
for c in "${only[@]}"; do
    [ -z "${only_report:-}" ] || break
    docs="$corpora/$c/docs"
    questions="$corpora/$c/questions.jsonl"
    idx="$idx_root/$c.rag-index"
    rm -rf "$idx"

    echo "== $c: rag-index sync" >&2
    t0=$(now)
    "$bin" sync "$docs" --index "$idx" --model-dir "$model" --json >"$out/$c.rag.sync.json" 2>"$out/$c.rag.sync.log"
    t1=$(now)
    echo "{\"wall_s\": $(elapsed "$t0" "$t1")}" >"$out/$c.rag.sync.time.json"
    "$bin" eval "$questions" --index "$idx" --model-dir "$model" --json "${exact[@]}" >"$out/$c.rag.eval.json"
    "$bin" dump --index "$idx" >"$out/$c.rag.dump.jsonl"

    if [ "$c" = bash ]; then
        for ext in html pdf docx; do
            cp -a "$idx" "$idx.$ext"
            t0=$(now)
            "$bin" sync "$docs" --index "$idx.$ext" --ext "$ext" --model-dir "$model" --json \
                >"$out/$c.$ext.rag.sync.json" 2>"$out/$c.$ext.rag.sync.log"
            t1=$(now)
            echo "{\"wall_s\": $(elapsed "$t0" "$t1")}" >"$out/$c.$ext.rag.sync.time.json"
            "$bin" eval "$questions" --index "$idx.$ext" --model-dir "$model" --json "${exact[@]}" \
                >"$out/$c.$ext.rag.eval.json"
            "$bin" dump --index "$idx.$ext" >"$out/$c.$ext.rag.dump.jsonl"
        done
    fi

    echo "== $c: LangChain" >&2
    per_format=()
    [ "$c" = bash ] && per_format=(--per-format)
    t0=$(now)
    "$python" "$root/benches/peers/langchain_formats.py" --docs "$docs" --questions "$questions" \
        --model "$model" --threads "$threads" --label "$c" "${per_format[@]}" \
        >"$out/$c.langchain.json" 2>"$out/$c.langchain.log"
    t1=$(now)
    echo "{\"wall_s\": $(elapsed "$t0" "$t1")}" >"$out/$c.langchain.time.json"
done
finished=$(now)

python3 - "$out" "$(elapsed "$started" "$finished")" "${#exact[@]}" "${only[@]}" <<'EOF'
import json, os, sys

out, total, exact, corpora = sys.argv[1], float(sys.argv[2]), sys.argv[3] != "0", sys.argv[4:]
CAP = 256


def load(name):
    with open(os.path.join(out, name)) as f:
        return json.load(f)


def rag_row(prefix, label, time_s):
    ev = load(f"{prefix}.rag.eval.json")
    tokens, paths = [], set()
    with open(os.path.join(out, f"{prefix}.rag.dump.jsonl")) as f:
        for line in f:
            if line.strip():
                chunk = json.loads(line)
                tokens.append(chunk["tokens"])
                paths.add(chunk["path"])
    m = ev["overall"]
    return {
        "label": label, "side": "rag-index", "n": m["questions"], "r1": m["recall_at_1"], "r5": m["recall_at_5"],
        "r10": m["recall_at_10"], "mrr": m["mrr_at_10"], "tok": ev["mean_tokens_per_chunk"],
        "over": sum(1 for t in tokens if t > CAP), "chunks": len(tokens), "files": len(paths), "time": time_s,
        "per_pattern": ev["per_pattern"],
    }


def lc_row(run, label, time_s):
    m = run["overall"]
    return {
        "label": label, "side": "LangChain", "n": m["questions"], "r1": m["recall_at_1"], "r5": m["recall_at_5"],
        "r10": m["recall_at_10"], "mrr": m["mrr_at_10"], "tok": run["mean_tokens_per_chunk"],
        "over": run["chunks_over_cap"], "chunks": run["chunks"], "files": run["files"], "time": time_s,
        "per_pattern": run["per_pattern"],
    }


rows, notes, summary = [], [], {}
for c in corpora:
    sync = load(f"{c}.rag.sync.json")
    sync_s = load(f"{c}.rag.sync.time.json")["wall_s"]
    lc = load(f"{c}.langchain.json")
    lc_wall = load(f"{c}.langchain.time.json")["wall_s"]
    runs = {r["label"]: r for r in lc["runs"]}
    for key in ("errors", "warnings"):
        for e in sync.get(key) or []:
            notes.append(f"rag-index {c} sync {key[:-1]}: {json.dumps(e)}")
    for f in lc["loader_failures"]:
        notes.append(f"LangChain {c} loader failure: {f['path']} ({f['loader']}): {f['error']}")
    if lc["skipped"]:
        notes.append(f"LangChain {c}: skipped (no loader, as rag-index skips them): {', '.join(lc['skipped'])}")
    if c == "bash":
        for ext in ("html", "pdf", "docx"):
            r = runs[f"bash/{ext}"]
            rows.append(rag_row(f"bash.{ext}", f"bash/{ext}", None))
            rows.append(lc_row(r, f"bash/{ext}", r["load_split_s"] + r["embed_s"]))
        r = runs["bash/all"]
        rows.append(rag_row("bash", "bash/all 3", sync_s))
        rows.append(lc_row(r, "bash/all 3", r["load_split_s"] + r["embed_s"]))
        for ext in ("html", "pdf", "docx"):
            rf = runs[f"bash/{ext}"]
            notes.append(
                f"LangChain bash/{ext}: load {rf['load_s']:.2f}s, split {rf['split_s']:.2f}s, embed {rf['embed_s']:.1f}s "
                f"({rf['documents']} documents from the loader, {rf['chars']} characters); "
                f"rag-index --ext {ext} re-sync of the copied index: {load(f'bash.{ext}.rag.sync.time.json')['wall_s']:.2f}s"
            )
    else:
        r = lc["runs"][-1]
        rows.append(rag_row(c, c, sync_s))
        rows.append(lc_row(r, c, r["load_split_s"] + r["embed_s"]))
    last = lc["runs"][-1]
    notes.append(
        f"LangChain {c}: load+split {last['load_split_s']:.2f}s, embed {last['embed_s']:.1f}s, "
        f"model load {lc['model_load_s']:.1f}s, imports {lc['import_s']:.1f}s, process {lc_wall:.1f}s"
    )
    summary[c] = {"rag_sync_wall_s": sync_s, "langchain_process_s": lc_wall}

head = f"{'corpus/format':<14} {'side':<10} {'n':>3} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR@10':>7} {'tok/chunk':>9} {'>256 / chunks':>14} {'time':>8}"
print(head)
print("-" * len(head))
for i, r in enumerate(rows):
    t = "-" if r["time"] is None else f"{r['time']:.1f}s"
    over = f"{r['over']}/{r['chunks']}"
    print(
        f"{r['label']:<14} {r['side']:<10} {r['n']:>3} {r['r1']:>6.3f} {r['r5']:>6.3f} {r['r10']:>6.3f} "
        f"{r['mrr']:>7.3f} {r['tok']:>9.1f} {over:>14} {t:>8}"
    )
    if i % 2 == 1 and i + 1 < len(rows):
        print()
print()
print("R@5 by pattern (rag-index / LangChain):")
for a, b in zip(rows[0::2], rows[1::2]):
    cells = []
    for p in sorted(set(a["per_pattern"]) | set(b["per_pattern"])):
        pa, pb = a["per_pattern"].get(p), b["per_pattern"].get(p)
        n = (pa or pb)["questions"]
        cells.append(
            f"{p}({n}) {pa['recall_at_5'] if pa else float('nan'):.2f}/{pb['recall_at_5'] if pb else float('nan'):.2f}"
        )
    print(f"  {a['label']:<12} " + "  ".join(cells))
print()
print(
    f"rag-index eval: {'exact' if exact else 'HNSW (default)'} search; LangChain: exact cosine. "
    "time: rag-index = sync process wall time (model load included); LangChain = load+split+embed."
)
for n in notes:
    print(n)
print(f"total wall time: {total:.1f}s; reports in {out}")
EOF
