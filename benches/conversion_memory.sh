#!/usr/bin/env bash
# How much memory converting one file holds, on hostile DOCX and HTML shapes near the size
# limits, beside the real Bash manual in the same formats in the same run: `rag-index chunks
# FILE` (convert + chunk, no index) per file, with the conversion's peak from its debug log, the
# bound it is held to (1 GiB + 128 bytes per byte of the file) and the process's peak RSS.
#
#   benches/conversion_memory.sh [--bin PATH] [--xml-mib N] [--html-mib N]
#
# --xml-mib: the inflated size of each hostile DOCX's document.xml (default 60; the DOCX reader
# refuses past 64). --html-mib: each hostile HTML file's size (default 30; sync skips files past
# 32). A file past its bound shows "refused" and its exit code.
set -euo pipefail
cd "$(dirname "$0")/.."

bin="${CARGO_TARGET_DIR:-target}/release/rag-index"
xml_mib=60
html_mib=30
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --xml-mib) xml_mib="$2"; shift 2 ;;
    --html-mib) html_mib="$2"; shift 2 ;;
    *) echo "usage: $0 [--bin PATH] [--xml-mib N] [--html-mib N]" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work" "$xml_mib" "$html_mib" <<'EOF'
import sys, zipfile
work, xml_bytes, html_bytes = sys.argv[1], int(sys.argv[2]) << 20, int(sys.argv[3]) << 20
ns = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
types = ('<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
         'content-types"><Default Extension="xml" ContentType="application/xml"/></Types>')
rels = ('<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/'
        '2006/relationships"><Relationship Id="r1" Type="http://schemas.openxmlformats.org/'
        'officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>'
        '</Relationships>')

def docx(name, unit, wrap=("", "")):
    body = wrap[0] + unit * (xml_bytes // len(unit)) + wrap[1]
    with zipfile.ZipFile(f"{work}/{name}", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", types)
        z.writestr("_rels/.rels", rels)
        z.writestr("word/document.xml",
                   f'<?xml version="1.0"?><w:document {ns}><w:body>{body}</w:body></w:document>')
    return name

def html(name, unit, wrap=("", "")):
    body = wrap[0] + unit * (html_bytes // len(unit)) + wrap[1]
    open(f"{work}/{name}", "w").write(f"<html><body>{body}</body></html>")
    return name

cell = "<w:tc><w:p><w:r><w:t>c</w:t></w:r></w:p></w:tc>"
shapes = [
    ("docx: tiny paragraphs", docx("paragraphs.docx", "<w:p><w:r><w:t>a b</w:t></w:r></w:p>")),
    ("docx: one paragraph of short runs",
     docx("runs.docx", "<w:r><w:t>x </w:t></w:r>", ("<w:p>", "</w:p>"))),
    ("docx: one paragraph, one run", docx("one-run.docx", "word ",
                                          ("<w:p><w:r><w:t>", "</w:t></w:r></w:p>"))),
    ("docx: 8-column table", docx("table.docx", "<w:tr>" + cell * 8 + "</w:tr>",
                                  ("<w:tbl>", "</w:tbl>"))),
    ("html: tiny sections", html("sections.html", "<h2>T</h2><p>a b</p>")),
    ("html: 8-column table", html("table.html", "<tr>" + "<td>c</td>" * 8 + "</tr>",
                                  ("<table>", "</table>"))),
    ("html: unclosed <li>", html("items.html", "<li>x", ("<ul>", ""))),
]
with open(f"{work}/list", "w") as out:
    for name, path in shapes:
        out.write(f"{name}\t{work}/{path}\n")
    for fmt in ("html", "pdf", "docx"):
        out.write(f"baseline: the Bash manual ({fmt})\t../shared/corpora/bash/docs/bashref.{fmt}\n")
EOF

printf '| file | size | held at most | per byte | bound | peak RSS | wall |\n'
printf '|---|---|---|---|---|---|---|\n'
while IFS=$'\t' read -r name path; do
  size=$(stat -c %s "$path")
  code=0
  /usr/bin/time -f '%M %e' -o "$work/time" env RUST_LOG=rag_index_core::document=debug \
    "$bin" chunks --json "$path" > /dev/null 2> "$work/log" || code=$?
  read -r rss_kib wall < <(tail -n 1 "$work/time")
  held=$(grep -o 'held at most [0-9]*' "$work/log" | grep -o '[0-9]*$' || true)
  python3 - "$name" "$size" "${held:-}" "$rss_kib" "$wall" "$code" <<'EOF'
import sys
name, size, held, rss_kib, wall, code = sys.argv[1:]
size = int(size)
mib = lambda b: f"{b / (1 << 20):,.0f} MiB"
bound = (1 << 30) + 128 * size
if held:
    held_cell, per_byte = mib(int(held)), f"{int(held) / size:,.0f}"
else:
    held_cell, per_byte = f"refused (exit {code})", "-"
print(f"| {name} | {size / 1024:,.0f} KiB | {held_cell} | {per_byte} | {mib(bound)} "
      f"| {mib(int(rss_kib) * 1024)} | {wall} s |")
EOF
done < "$work/list"
