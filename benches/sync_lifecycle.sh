#!/usr/bin/env bash
# Sync-lifecycle benchmark (issue 6, "Performance"): the same workloads through `rag-index sync`
# and through LangChain's `index()` (SQLRecordManager + InMemoryVectorStore, same model, cleanup
# "full" and "incremental"), in one run, on a copy of ../shared/corpora/traefik/docs.
#
#   benches/sync_lifecycle.sh            # everything: Traefik workloads x 3 systems, then 100k files
#   benches/sync_lifecycle.sh --quick    # rag-index only, no 100k-file run (a few minutes)
#
# Options: --quick | --no-langchain | --no-scale | --scale-only (no Traefik workloads) |
#          --scale-files N[,N...] (default 100000; several sizes show how costs grow) |
#          --sections-per-file K (sections of the corpus in each generated file, default 1;
#          10 gives ~1M chunks in ~100k files, the chunks per file of real docs) |
#          --edits N (one-file edits in a row at scale, default 3) | --bin PATH (that binary) |
#          --no-build | --keep (keep the temp folder) | --json FILE (raw results, one per line) |
#          --corpus DIR (another docs folder, for trying the script out)
#
# Workloads: full sync; no-op sync (rag-index: median of 5); `chmod -R` (rag-index, median of
# 3); append a paragraph to one file;
# insert a paragraph at the top of the longest file; delete 10 files. Then, per size, a generated
# folder of N small Markdown files: full sync, no-op syncs, one-file edits in a row (each a
# different file), a whole `query` process, with wall time and peak RSS, and where the index's
# bytes go.
# Prints a Markdown report on stdout; progress goes to stderr. Every figure carries the 1-minute
# load average read just before it was measured (2 cores: > 2 means contention).
#
# Needs: a Rust toolchain, python3, /usr/bin/time (apt-get install time), and for LangChain
# PyPI access the first time (benches/peers/setup_langchain_venv.sh builds its venv, ~5 GB).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
corpus="$(cd "$root/../shared/corpora/traefik/docs" && pwd)"
model="$root/models/all-MiniLM-L6-v2"

langchain=1 scale=1 traefik=1 build=1 keep=0 scale_files=100000 sections=1 edits=3 json_out="" given_bin=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) langchain=0 scale=0 ;;
        --no-langchain) langchain=0 ;;
        --no-scale) scale=0 ;;
        --scale-only) traefik=0 langchain=0 ;;
        --scale-files) scale_files="$2"; shift ;;
        --sections-per-file) sections="$2"; shift ;;
        --edits) edits="$2"; shift ;;
        --bin) given_bin="$2"; build=0; shift ;;
        --no-build) build=0 ;;
        --keep) keep=1 ;;
        --json) json_out="$2"; shift ;;
        --corpus) corpus="$(cd "$2" && pwd)"; shift ;;
        -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
    shift
done

log() { echo "[$(date +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)] $*" >&2; }
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time is needed (apt-get install time)" >&2; exit 2; }
[ -f "$model/model.safetensors" ] || { echo "error: no model at $model (models/fetch-model.sh)" >&2; exit 2; }

if [ "$build" = 1 ]; then
    log "building rag-index (release)"
    (cd "$root" && cargo build --release --bin rag-index --quiet)
fi
if [ "$langchain" = 1 ]; then
    log "checking the LangChain venv"
    bash "$here/peers/setup_langchain_venv.sh"
fi

work="$(mktemp -d /tmp/sync-bench.XXXXXX)"
if [ "$keep" = 1 ]; then
    log "work folder kept: $work"
else
    trap 'rm -rf "$work"' EXIT
fi
# A private copy of the binary: the shared target dir may be rebuilt while this runs.
cp "${given_bin:-${CARGO_TARGET_DIR:-$root/target}/release/rag-index}" "$work/rag-index"
bin="$work/rag-index"
results="$work/results.jsonl"
: >"$results"

docs="$work/docs"
# -a keeps the files' old mtimes: a docs folder that has been sitting there, as in real use.
cp -a "$corpus" "$docs"
rag_index="$work/rag.idx"
lc_full="$work/lc-full"
lc_incr="$work/lc-incremental"

load1() { cut -d' ' -f1 /proc/loadavg; }
now_ns() { date +%s%N; }

# record KEY=VALUE... : one JSON object per line in $results (values are JSON already).
record() {
    local line="{" sep=""
    for kv in "$@"; do
        line+="$sep\"${kv%%=*}\":${kv#*=}"
        sep=","
    done
    echo "$line}" >>"$results"
}

# rag_sync STEP [RUN] : one `rag-index sync --json` of $docs, timed from outside, with peak RSS.
rag_sync() {
    local step="$1" run="${2:-0}" load t0 t1 rc=0
    load=$(load1)
    t0=$(now_ns)
    /usr/bin/time -f '%M' -o "$work/time.txt" \
        "$bin" --model-dir "$model" sync "$docs" --index "$rag_index" --json >"$work/out.json" 2>"$work/err.txt" || rc=$?
    t1=$(now_ns)
    if [ "$rc" != 0 ] && [ "$rc" != 1 ]; then
        cat "$work/err.txt" >&2
        echo "error: rag-index sync failed (exit $rc) at step $step" >&2
        exit 1
    fi
    record system='"rag-index"' step="\"$step\"" run="$run" load="$load" exit="$rc" \
        wall_ms=$(((t1 - t0) / 1000000)) rss_kb="$(tail -1 "$work/time.txt")" report="$(cat "$work/out.json")"
    log "rag-index $step: $(cat "$work/out.json") wall $(((t1 - t0) / 1000000)) ms"
}

# lc_sync STEP MODE [COUNT_PATH...] : one LangChain index() run in its own process.
lc_sync() {
    local step="$1" mode="$2" load t0 t1 state
    shift 2
    [ "$mode" = full ] && state="$lc_full" || state="$lc_incr"
    local count_args=()
    for p in "$@"; do count_args+=(--count-path "$p"); done
    load=$(load1)
    t0=$(now_ns)
    OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
        /usr/bin/time -f '%M' -o "$work/time.txt" \
        "$here/peers/.venv-langchain/bin/python" "$here/peers/langchain_sync.py" \
        --docs "$docs" --state "$state" --cleanup "$mode" --model "$model" --threads 2 \
        "${count_args[@]}" >"$work/out.json" 2>"$work/err.txt" || {
        cat "$work/err.txt" >&2
        echo "error: LangChain ($mode) failed at step $step" >&2
        exit 1
    }
    t1=$(now_ns)
    record system="\"langchain-$mode\"" step="\"$step\"" run=0 load="$load" exit=0 \
        wall_ms=$(((t1 - t0) / 1000000)) rss_kb="$(tail -1 "$work/time.txt")" report="$(cat "$work/out.json")"
    log "langchain-$mode $step: $(cat "$work/out.json") wall $(((t1 - t0) / 1000000)) ms"
}

# all_sync STEP [COUNT_PATH...] : the step through every system.
all_sync() {
    local step="$1"
    shift
    rag_sync "$step"
    if [ "$langchain" = 1 ]; then
        lc_sync "$step" full "$@"
        lc_sync "$step" incremental "$@"
    fi
}

dump() { "$bin" --model-dir "$model" dump --index "$rag_index" >"$1"; }

# edit_facts STEP FILE BEFORE AFTER : for an edited file, its chunks after the edit and how many
# of their texts did not exist anywhere in the index before (what a minimal sync must embed).
edit_facts() {
    python3 - "$@" <<'EOF' >>"$results"
import json, sys
step, path, before, after = sys.argv[1:5]
def load(p):
    with open(p, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]
old, new = load(before), load(after)
old_texts = {c["text"] for c in old}
old_file = [c for c in old if c["path"] == path]
new_file = [c for c in new if c["path"] == path]
print(json.dumps({"system": "rag-index-facts", "step": step, "path": path,
    "file_chunks_before": len(old_file), "file_chunks_after": len(new_file),
    "new_texts_in_file": len({c["text"] for c in new_file if c["text"] not in old_texts}),
    "sections_changed": len({" > ".join(c["heading_path"]) for c in new_file if c["text"] not in old_texts}),
    "live_chunks": len(new)}))
EOF
}

paragraph="This paragraph was added by the sync benchmark. It explains that a routing rule \
written here is evaluated after the entry point has accepted the connection, and that the \
certificate resolver named in the router takes precedence over the default certificate store."

# ---------------------------------------------------------------------------------------------
log "work folder $work; $(find "$docs" -type f | wc -l) files; machine: $(nproc) cores"
if [ "$traefik" = 1 ]; then

all_sync full
for run in 1 2 3 4 5; do rag_sync noop "$run"; done
if [ "$langchain" = 1 ]; then
    lc_sync noop full
    lc_sync noop incremental
fi

# Permissions set again on every file (chmod moves the ctime, never the bytes or the mtime): each
# file is read and hashed again, nothing is embedded and only manifest entries are written.
# rag-index only; the pause takes the new ctimes out of the racy window first.
for run in 1 2 3; do
    chmod -R u+r "$docs"
    sleep 2.1
    rag_sync chmod "$run"
done

append_file="getting-started/faq.md"
[ -f "$docs/$append_file" ] || append_file="$(cd "$docs" && find . -type f -printf '%P\n' | LC_ALL=C sort | head -1)"
dump "$work/before-append.jsonl"
printf '\n%s\n' "$paragraph" >>"$docs/$append_file"
all_sync append "$append_file"
dump "$work/after-append.jsonl"
edit_facts append "$append_file" "$work/before-append.jsonl" "$work/after-append.jsonl"

longest="$(cd "$docs" && find . -type f -printf '%s %P\n' | sort -n | tail -1 | cut -d' ' -f2-)"
# At the top of the body: after the YAML front matter when there is one (before it, the paragraph
# would turn the front matter into body text and change the title of every chunk).
python3 - "$docs/$longest" "$paragraph" <<'EOF'
import sys
path, paragraph = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
at = 0
if text.startswith("---\n"):
    end = text.find("\n---\n", 3)
    at = end + 5 if end > 0 else 0
open(path, "w", encoding="utf-8").write(text[:at] + paragraph + "\n\n" + text[at:])
EOF
all_sync insert-top "$longest"
dump "$work/after-insert.jsonl"
edit_facts insert-top "$longest" "$work/after-append.jsonl" "$work/after-insert.jsonl"

# Ten files spread over the tree, never the two edited ones.
mapfile -t victims < <(cd "$docs" && find . -type f -printf '%P\n' | LC_ALL=C sort |
    grep -vxF -e "$append_file" -e "$longest" | awk 'NR % 17 == 1' | head -10)
for f in "${victims[@]}"; do rm "$docs/$f"; done
all_sync delete-10
dump "$work/after-delete.jsonl"
python3 - "$work/after-delete.jsonl" "${victims[@]}" <<'EOF' >>"$results"
import json, sys
gone = set(sys.argv[2:])
with open(sys.argv[1], encoding="utf-8") as f:
    left = sum(1 for l in f if l.strip() and json.loads(l)["path"] in gone)
print(json.dumps({"system": "rag-index-facts", "step": "delete-10", "orphan_chunks": left}))
EOF

verify_rc=0
"$bin" --model-dir "$model" verify --index "$rag_index" >"$work/verify.txt" 2>&1 || verify_rc=$?
record system='"rag-index-facts"' step='"verify"' exit="$verify_rc"
log "rag-index verify exit $verify_rc"
fi

# ---------------------------------------------------------------------------------------------
if [ "$scale" = 1 ]; then
# scale_run N : the generated-folder workloads at N files.
scale_run() {
    local files="$1"
    big="$work/big-$files"
    log "generating $files small Markdown files ($sections section(s) each)"
    # Each file: front matter with the section's document title and a unique id, then one
    # section (<= ~700 bytes) of a corpus file. Front matter other than the title is never
    # embedded, so files built from the same section share their chunks' vectors: the full sync
    # embeds each distinct section once, and every file's bytes still differ. mtimes are set a
    # day back, like a folder that has been sitting there. With K sections per file, file i
    # holds K consecutive sections of the pool (from section K*i), under the first one's title.
    python3 - "$corpus" "$big" "$files" "$sections" <<'EOF'
import os, re, sys, time
corpus, out, n, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sections = []
for dirpath, _, names in os.walk(corpus):
    for name in sorted(names):
        if not name.endswith(".md"):
            continue
        text = open(os.path.join(dirpath, name), encoding="utf-8").read()
        title = name[:-3]
        m = re.search(r"^title:\s*\"?(.*?)\"?\s*$", text, re.M) or re.search(r"^# (.+)$", text, re.M)
        if m:
            title = m.group(1).strip()
        if text.startswith("---"):
            end = text.find("\n---", 3)
            text = text[end + 4:] if end > 0 else text
        current, fence = [], False
        for line in text.splitlines():
            if line.startswith("```"):
                fence = not fence
            if not fence and re.match(r"#{1,3} ", line) and current:
                sections.append((title, current))
                current = []
            current.append(line)
        if current:
            sections.append((title, current))
pool = []
for title, lines in sections:
    body, size = [], 0
    for line in lines:
        if size + len(line) > 700 and body:
            break
        body.append(line)
        size += len(line) + 1
    body = "\n".join(body).strip()
    if body.count("```") % 2:
        body += "\n```"
    if len(body) > 80:
        pool.append((title.replace('"', "'"), body))
old = time.time() - 86400
for i in range(n):
    picked = [pool[(i * k + j) % len(pool)] for j in range(k)]
    title = picked[0][0]
    body = "\n\n".join(b for _, b in picked)
    d = os.path.join(out, f"d{i // 1000:03d}")
    if i % 1000 == 0:
        os.makedirs(d, exist_ok=True)
    p = os.path.join(d, f"doc{i:06d}.md")
    with open(p, "w", encoding="utf-8") as f:
        f.write(f'---\ntitle: "{title}"\nid: {i}\n---\n{body}\n')
    os.utime(p, (old, old))
print(f"{len(pool)} distinct sections, {n} files of {k}", file=sys.stderr)
EOF
    big_index="$work/big-$files.idx"
    scale_sync() {
        local step="$1" run="$2" load t0 t1 rc=0
        load=$(load1)
        t0=$(now_ns)
        /usr/bin/time -v -o "$work/timev.txt" \
            "$bin" --model-dir "$model" sync "$big" --index "$big_index" --json >"$work/out.json" 2>"$work/err.txt" || rc=$?
        t1=$(now_ns)
        if [ "$rc" != 0 ] && [ "$rc" != 1 ]; then
            cat "$work/err.txt" >&2
            echo "error: rag-index sync of the generated folder failed (exit $rc)" >&2
            exit 1
        fi
        local rss graphs
        rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/timev.txt")
        # How the graph was saved: one directory is a full save, two a delta beside its base.
        graphs=$(find "$big_index" -maxdepth 1 -name 'graph-*' -type d | wc -l)
        record system='"rag-index"' step="\"$step\"" files="$files" sections="$sections" run="$run" load="$load" exit="$rc" \
            wall_ms=$(((t1 - t0) / 1000000)) rss_kb="$rss" graph_dirs="$graphs" report="$(cat "$work/out.json")"
        log "rag-index $step at $files files: $(cat "$work/out.json") wall $(((t1 - t0) / 1000000)) ms, peak RSS $rss KB, $graphs graph dir(s)"
    }
    scale_sync scale-full 0
    for run in 1 2 3; do scale_sync scale-noop "$run"; done
    # One edited file at a time in the big index: what a cron run after a typo fix costs at
    # this size, several in a row (each a different file) so later edits on a delta count too.
    local i
    for i in $(seq 1 "$edits"); do
        local target
        target="$big/d$(printf '%03d' $(((files / 2 + i * 7919) % files / 1000)))/doc$(printf '%06d' $(((files / 2 + i * 7919) % files))).md"
        printf '\nA paragraph added by the benchmark, edit %s.\n' "$i" >>"$target"
        scale_sync scale-edit "$i"
    done
    local t0 t1
    t0=$(now_ns)
    /usr/bin/time -v -o "$work/timev.txt" "$bin" --model-dir "$model" query "how do I configure retries" \
        --index "$big_index" -k 5 --json >/dev/null 2>"$work/err.txt"
    t1=$(now_ns)
    record system='"rag-index-facts"' step='"scale-query"' files="$files" wall_ms=$(((t1 - t0) / 1000000)) \
        rss_kb="$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/timev.txt")" load="$(load1)"
    du_of() { du -sbc "$@" 2>/dev/null | tail -1 | cut -f1; }
    # Distinct vectors: the generated files repeat corpus sections, and the store keeps one
    # vector per distinct text, so its bytes per chunk are far below a real corpus's.
    local vectors
    vectors="$("$bin" --model-dir "$model" stats --index "$big_index" --json 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin).get("vectors", 0))' || echo 0)"
    record system='"rag-index-facts"' step='"scale-size"' files="$files" \
        index_bytes="$(du_of "$big_index")" store_bytes="$(du_of "$big_index/index.redb")" \
        graph_bytes="$(du_of "$big_index"/graph-*)" lexical_bytes="$(du_of "$big_index/lexical")" \
        vectors="$vectors"
    # The folder and index of one size are not needed by the next.
    [ "$keep" = 1 ] || rm -rf "$big" "$big_index"
}
for n in ${scale_files//,/ }; do scale_run "$n"; done
fi

[ -n "$json_out" ] && cp "$results" "$json_out"

# ---------------------------------------------------------------------------------------------
python3 - "$results" "$langchain" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
with_lc = sys.argv[2] == "1"

def runs(system, step):
    return [r for r in rows if r["system"] == system and r["step"] == step]

def facts(step):
    return next((r for r in rows if r["system"] == "rag-index-facts" and r["step"] == step), {})

def dur(ms):
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60000:
        return f"{ms / 1000:.2f} s"
    return f"{int(ms // 60000)} min {ms % 60000 / 1000:.0f} s"

def rag_cell(step):
    rs = runs("rag-index", step)
    if not rs:
        return "–"
    if len(rs) > 1:
        wall = statistics.median(r["wall_ms"] for r in rs)
        inner = statistics.median(r["report"]["elapsed_ms"] for r in rs)
        head = f"**{dur(int(wall))}** wall, {dur(int(inner))} in sync (median of {len(rs)}; first {dur(rs[0]['wall_ms'])})"
    else:
        r = rs[0]
        head = f"**{dur(r['wall_ms'])}** wall, {dur(r['report']['elapsed_ms'])} in sync"
    c, f = rs[-1]["report"]["chunks"], rs[-1]["report"]["files"]
    loads = "/".join(str(r["load"]) for r in rs)
    return (f"{head}; {c['embedded']:,} embedded, {c['reused']:,} reused, {c['deleted']:,} deleted, "
            f"{c['total']:,} live; files +{f['added']} ~{f['modified']} -{f['removed']} ={f['unchanged']}"
            f"{' ✗' + str(f['failed']) if f['failed'] else ''} (load {loads})")

def lc_cell(mode, step):
    rs = runs(f"langchain-{mode}", step)
    if not rs:
        return "–"
    r = rs[0]
    p = r["report"]
    extra = ""
    if p["file_chunks"]:
        extra = "; file now " + ", ".join(f"{v} chunks" for v in p["file_chunks"].values())
    orphans = f"; **{p['orphan_docs']} chunks of {p['orphan_files']} deleted files remain**" if p["orphan_docs"] else ""
    return (f"**{dur(r['wall_ms'])}** wall, {dur(int(p['index_s'] * 1000))} in index(); "
            f"{p['embedded']:,} embedded; +{p['num_added']} ~{p['num_updated']} ={p['num_skipped']} "
            f"-{p['num_deleted']}; {p['store_docs']:,} in store{extra}{orphans} (load {r['load']})")

steps = [("full", "Full sync"), ("noop", "No-op sync"),
         ("chmod", "`chmod -R` (bytes and mtimes kept)"),
         ("append", "Append a paragraph to one file"),
         ("insert-top", "Insert a paragraph at the top of the longest file"),
         ("delete-10", "Delete 10 files")]
traefik = bool(runs("rag-index", "full"))
if traefik:
    print(f"## Sync lifecycle: {runs('rag-index', 'full')[0]['report']['files']['added']} files of the Traefik docs\n")
if not traefik:
    pass
elif with_lc:
    print("| workload | rag-index | LangChain cleanup=full | LangChain cleanup=incremental |")
    print("|---|---|---|---|")
else:
    print("| workload | rag-index |")
    print("|---|---|")
for step, name in steps if traefik else []:
    cells = [rag_cell(step)]
    if with_lc:
        cells += [lc_cell("full", step), lc_cell("incremental", step)]
    print(f"| {name} | " + " | ".join(cells) + " |")

print()
for step in ("append", "insert-top"):
    f = facts(step)
    r = runs("rag-index", step)
    if f and r:
        print(f"- rag-index `{step}` on `{f['path']}`: {r[0]['report']['chunks']['embedded']} chunk(s) embedded; "
              f"the file has {f['file_chunks_after']} chunks (was {f['file_chunks_before']}); "
              f"{f['new_texts_in_file']} of its chunk texts are new, in {f['sections_changed']} section(s).")
f = facts("delete-10")
if f:
    print(f"- rag-index after deleting 10 files: {f['orphan_chunks']} of their chunks left in `dump`.")
f = facts("verify")
if f:
    print(f"- `rag-index verify` after the sequence: exit {f['exit']}.")
sizes = sorted({r["files"] for r in rows if r["step"] == "scale-full"})
def at(step, n):
    return [r for r in rows if r["step"] == step and r.get("files") == n]
for n in sizes:
    size = next((r for r in at("scale-size", n) if r["system"] == "rag-index-facts"), {})
    k = at("scale-full", n)[0].get("sections", 1)
    print(f"\n## Scale: {n:,} generated small Markdown files ({k} corpus section(s) each)\n")
    print("| run | wall | in sync | peak RSS | counts | graph saved as | load |")
    print("|---|---|---|---|---|---|---|")
    for r in at("scale-full", n) + at("scale-noop", n) + at("scale-edit", n):
        c, fl = r["report"]["chunks"], r["report"]["files"]
        saved = {1: "full", 2: "delta + base"}.get(r.get("graph_dirs"), str(r.get("graph_dirs")))
        print(f"| {r['step']}{' #' + str(r['run']) if r['run'] else ''} | {dur(r['wall_ms'])} | "
              f"{dur(r['report']['elapsed_ms'])} | {r['rss_kb'] / 1024:.0f} MiB | "
              f"files +{fl['added']} ~{fl['modified']} ={fl['unchanged']}; chunks {c['embedded']:,} embedded, "
              f"{c['reused']:,} reused, {c['total']:,} live | {saved} | {r['load']} |")
    q = next(iter(at("scale-query", n)), None)
    if q:
        print(f"| query (one process: open, load graph, embed, search) | {dur(q['wall_ms'])} | – | "
              f"{q['rss_kb'] / 1024:.0f} MiB | k=5 | – | {q['load']} |")
    live = at("scale-full", n)[0]["report"]["chunks"]["total"] or 1
    parts = ", ".join(f"{name} {size.get(key, 0) / live:,.0f}" for name, key in
                      [("store", "store_bytes"), ("graph", "graph_bytes"), ("lexical", "lexical_bytes")])
    print(f"\nIndex size on disk: {size.get('index_bytes', 0) / 2**20:.0f} MiB, "
          f"{size.get('index_bytes', 0) / live:,.0f} bytes per chunk ({parts}); "
          f"{size.get('vectors', 0):,} distinct vectors in the store for {live:,} chunks "
          f"(the generated files repeat corpus sections; a real corpus stores ~one 1,536-byte "
          f"vector per chunk).")
if len(sizes) > 1:
    med = lambda xs: statistics.median(xs) if xs else 0
    print("\n## How the costs grow\n")
    print("| files | live chunks | full sync | no-op (median) | one-file edit (median) | edit peak RSS (max) | query process |")
    print("|---|---|---|---|---|---|---|")
    for n in sizes:
        full = at("scale-full", n)[0]
        noop = med([r["wall_ms"] for r in at("scale-noop", n)])
        edit = at("scale-edit", n)
        q = next(iter(at("scale-query", n)), {"wall_ms": 0})
        print(f"| {n:,} | {full['report']['chunks']['total']:,} | {dur(full['wall_ms'])} | {dur(int(noop))} | "
              f"{dur(int(med([r['wall_ms'] for r in edit])))} | "
              f"{max((r['rss_kb'] for r in edit), default=0) / 1024:.0f} MiB | {dur(q['wall_ms'])} |")
EOF
