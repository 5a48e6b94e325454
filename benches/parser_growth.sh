#!/usr/bin/env bash
# How parse time grows with input size on hostile shapes, beside a well-formed file of the same
# format and size in the same run: `rag-index chunks FILE` (convert + chunk, no model) per file,
# at 1x, 2x and 4x. Linear growth doubles the time per step; quadratic quadruples it.
#
#   benches/parser_growth.sh [--bin PATH] [--base N]   (N: repeats at 1x, default 10000)
#
# A refused file (the HTML step budget, the tree-sitter time bound) shows its exit code 1.
set -euo pipefail
cd "$(dirname "$0")/.."

bin="${CARGO_TARGET_DIR:-target}/release/rag-index"
base=10000
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --base) base="$2"; shift 2 ;;
    *) echo "usage: $0 [--bin PATH] [--base N]" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work" "$base" <<'EOF'
import random, sys
work, base = sys.argv[1], int(sys.argv[2])
def random_code(length):
    rng = random.Random(5)
    return "".join(rng.choice("(){}[];:,.\"'\n =+-*/#abc123 if else return fn let class ") for _ in range(length))

page = lambda body: f"<html><head><title>T</title></head><body>{body}</body></html>"
shapes = {
    # name: (extension, function of n repeats)
    "html well-formed <p>": ("html", lambda n: page("<p>para text</p>" * n)),
    "html nested <div>": ("html", lambda n: page("<div>" * n + "x" + "</div>" * n)),
    "html <ul><li> unclosed": ("html", lambda n: page("<ul><li>item " * n)),
    "html misnested <font><i><b>": ("html", lambda n: page("<font><i><b>x</font>" * n)),
    "py one-line functions": ("py", lambda n: "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(n))),
    "ts valid functions": ("ts", lambda n: "".join(f"function f{i}(a: number): number {{ return a + {i}; }}\n" for i in range(n))),
    "ts random code characters": ("ts", lambda n: random_code(n * 25)),
    "md reference definitions": ("md", lambda n: "# T\n\n" + "".join(f"[r{i}]: http://x/{i}\n" for i in range(n))),
}
with open(f"{work}/list", "w") as out:
    for k, (name, (ext, make)) in enumerate(shapes.items()):
        for scale in (1, 2, 4):
            path = f"{work}/s{k}x{scale}.{ext}"
            open(path, "w").write(make(base * scale))
            out.write(f"{name}\t{scale}\t{path}\n")
EOF

printf '| shape | 1x | 2x | 4x | time 4x / 1x (linear 4, quadratic 16) |\n|---|---|---|---|---|\n'
current=""
row=""
times=()
while IFS=$'\t' read -r name scale path; do
  if [ "$name" != "$current" ]; then
    [ -n "$current" ] && printf '| %s%s | %s |\n' "$current" "$row" "$(python3 -c "print(f'{${times[2]}/max(${times[0]},1e-3):.1f}x')")"
    current="$name"; row=""; times=()
  fi
  start=$(date +%s.%N)
  code=0
  "$bin" chunks --json "$path" > /dev/null 2>&1 || code=$?
  secs=$(python3 -c "print(f'{$(date +%s.%N) - $start:.2f}')")
  times+=("$secs")
  size=$(stat -c %s "$path")
  mark=""
  [ "$code" -ne 0 ] && mark=" (exit $code)"
  row="$row | ${secs} s, $((size / 1024)) KiB$mark"
done < "$work/list"
printf '| %s%s | %s |\n' "$current" "$row" "$(python3 -c "print(f'{${times[2]}/max(${times[0]},1e-3):.1f}x')")"
