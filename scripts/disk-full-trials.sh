#!/usr/bin/env bash
# Disk-full trials: a sync whose index disk fills up at different points must fail with a clear
# error (exit 2, no panic), leave an index readers can search, and the next sync after space is
# freed must leave an index equal to a fresh one of the folder.
#
# Each trial copies a synced index of 40 Traefik pages onto a small tmpfs, adds 40 pages and edits
# 8 of the indexed ones, fills the tmpfs until FREE KiB are left, and syncs. With little room the
# sync fails while saving vectors or committing the store; with more, while writing the graph or
# the lexical index; with enough, it succeeds. Needs root (it mounts tmpfs); the larger run is a
# script, not a CI test, like scripts/kill-trials.sh.
#
#   scripts/disk-full-trials.sh [--bin PATH] [--free-kib 0,2048,...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BIN=target/release/rag-index
FREE_LIST=0,1024,4096,8192,12288,16384,24576
while (($#)); do
    case $1 in
        --bin) BIN=$2; shift 2 ;;
        --free-kib) FREE_LIST=$2; shift 2 ;;
        *) echo "usage: $0 [--bin PATH] [--free-kib LIST]" >&2; exit 2 ;;
    esac
done
[[ $(id -u) -eq 0 ]] || { echo "disk-full-trials: needs root to mount a tmpfs" >&2; exit 2; }
[[ -x $BIN ]] || { echo "disk-full-trials: no binary at $BIN (cargo build --release)" >&2; exit 2; }
BIN=$(realpath "$BIN")
PAGES=../shared/corpora/traefik/docs
[[ -d $PAGES ]] || { echo "disk-full-trials: $PAGES not found" >&2; exit 2; }

WORK=$(mktemp -d /tmp/rag-index-disk-full.XXXXXX)
MOUNT=$WORK/disk
cleanup() {
    mountpoint -q "$MOUNT" && umount "$MOUNT"
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/base-docs" "$WORK/added" "$MOUNT"

# The pages, flattened to one folder: 40 indexed at first, 40 added in the trial.
mapfile -t pages < <(find "$PAGES" -name '*.md' | sort | head -80)
for i in "${!pages[@]}"; do
    rel=${pages[$i]#"$PAGES"/}
    if ((i < 40)); then dest=$WORK/base-docs; else dest=$WORK/added; fi
    cp -p "${pages[$i]}" "$dest/${rel//\//_}"
done

# The folder as a trial leaves it; its own fresh index is what every trial must end equal to.
change_folder() {
    local docs=$1
    cp -p "$WORK"/added/* "$docs/"
    local n=0
    for f in "$docs"/*; do
        ((n++ < 8)) || break
        printf '\n## Operations note %d\n\nRestart the entrypoint after changing middleware %d.\n' \
            "$n" "$n" >>"$f"
    done
}
# Every field of every live chunk except the file times, which differ between two copies.
normalised_dump() {
    "$BIN" dump --index "$1" | python3 -c '
import json, sys
for line in sys.stdin:
    chunk = json.loads(line)
    chunk.pop("metadata", None)
    print(json.dumps(chunk, sort_keys=True))' | sort
}

echo "building the base index and a fresh index of the changed folder"
cp -rp "$WORK/base-docs" "$WORK/docs"
"$BIN" sync "$WORK/docs" --index "$WORK/base-index" --json >/dev/null 2>&1
cp -rp "$WORK/base-docs" "$WORK/final-docs"
change_folder "$WORK/final-docs"
"$BIN" sync "$WORK/final-docs" --index "$WORK/fresh-index" --json >/dev/null 2>&1
normalised_dump "$WORK/fresh-index" >"$WORK/fresh.dump"
base_chunks=$(normalised_dump "$WORK/base-index" | wc -l)
fresh_chunks=$(wc -l <"$WORK/fresh.dump")
echo "base: $base_chunks chunks; fresh after the change: $fresh_chunks chunks"

failures=0
fail() {
    echo "  FAIL: $*"
    failures=$((failures + 1))
}
printf '%-9s %-6s %-75s %-8s %-12s %s\n' "free KiB" "exit" "error" "readers" "verify" "after freeing"
IFS=, read -ra free_kibs <<<"$FREE_LIST"
for free in "${free_kibs[@]}"; do
    # The same folder path every trial, so the copied index belongs to it.
    rm -rf "$WORK/docs"
    cp -rp "$WORK/base-docs" "$WORK/docs"
    mount -t tmpfs -o size=48m tmpfs "$MOUNT"
    index=$MOUNT/index
    cp -rp "$WORK/base-index" "$index"
    change_folder "$WORK/docs"
    avail=$(df -k --output=avail "$MOUNT" | tail -1)
    if ((avail > free)); then
        dd if=/dev/zero of="$MOUNT/filler" bs=1K count=$((avail - free)) status=none 2>/dev/null || true
    fi

    set +e
    "$BIN" sync "$WORK/docs" --index "$index" --json >"$WORK/sync.json" 2>"$WORK/sync.err"
    code=$?
    "$BIN" query --index "$index" -k 3 --json "how do I configure a TLS certificate" \
        >"$WORK/query.json" 2>"$WORK/query.err"
    query_code=$?
    "$BIN" verify --index "$index" --json >"$WORK/verify.json" 2>/dev/null
    verify_code=$?
    set -e
    error=$(grep -m1 '^rag-index: error' "$WORK/sync.err" | sed 's/^rag-index: error: sync of [^ ]* failed: //' \
        | sed "s|$MOUNT/||g" | cut -c1-75 || true)
    hits=$(python3 -c 'import json,sys; print(len(json.loads(open(sys.argv[1]).read())["hits"]))' \
        "$WORK/query.json" 2>/dev/null || echo 0)

    grep -qiE 'panick|internal error' "$WORK/sync.err" && fail "the sync panicked: $(cat "$WORK/sync.err")"
    [[ $code == 0 || $code == 2 ]] || fail "sync exit $code: $(head -c 400 "$WORK/sync.err")"
    ((code == 0)) || [[ -n $error ]] || fail "a failed sync must say why"
    ((query_code == 0 && hits == 3)) || fail "readers: query exit $query_code, $hits hits: $(head -c 300 "$WORK/query.err")"
    verify_note=$( ((verify_code == 0)) && echo ok || echo "stale (1)")

    rm -f "$MOUNT/filler"
    set +e
    "$BIN" sync "$WORK/docs" --index "$index" --json >/dev/null 2>"$WORK/resync.err"
    resync_code=$?
    "$BIN" verify --index "$index" --json >/dev/null 2>&1
    reverify_code=$?
    set -e
    # What a failed sync wrote and no commit points at is gone: the graph in use and its base.
    graphs=$(find "$index" -maxdepth 1 -name 'graph-*' | wc -l)
    ((graphs <= 2)) || fail "$graphs graph directories left after the repairing sync"
    if ((resync_code == 0 && reverify_code == 0)) && cmp -s <(normalised_dump "$index") "$WORK/fresh.dump"; then
        after="synced, verified, equal to fresh"
    else
        after="sync $resync_code, verify $reverify_code, NOT equal to fresh"
        fail "after freeing space: $(head -c 300 "$WORK/resync.err")"
    fi
    printf '%-9s %-6s %-75s %-8s %-12s %s\n' "$free" "$code" "${error:--}" "$hits hits" "$verify_note" "$after"
    umount "$MOUNT"
done
if ((failures)); then
    echo "disk-full-trials: $failures failure(s)"
    exit 1
fi
echo "disk-full-trials: every trial failed cleanly or succeeded, readers were served, and the next sync repaired"
