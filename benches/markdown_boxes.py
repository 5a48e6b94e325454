#!/usr/bin/env python3
"""How the boxes of Markdown docs fare in their chunks: boxes fenced by colon lines
(`::: tip Title` ... `:::`, VitePress, Docusaurus, Pandoc) or by a pair of Hugo shortcodes
(`{{% alert title="Note" %}}` ... `{{% /alert %}}`), and chunks with nothing to read.

Usage: benches/markdown_boxes.py [--bin RAG_INDEX] DOCS_DIR [DOCS_DIR ...]

Runs `rag-index chunks --json` over every .md and .mdx file of each folder (no index is built) and
prints, per folder: chunks; boxes found in the sources (fences inside code ignored); boxes
whose text spreads over more than one chunk; boxes with a chunk holding some of their text but
not their opening line (a box's title cut from its text); chunks ending on an opening fence;
chunks starting with a closing fence; chunks holding nothing but headings, fence lines and
HTML comments. Run it with two builds to compare them (`--bin`, or $RAG_INDEX_BIN).
"""

import json
import os
import re
import subprocess
import sys

OPEN = re.compile(r"^(:{3,})\s*[^:\s]")
CLOSE = re.compile(r"^(:{3,})$")
# Hugo shortcodes that pair up: {{% alert title="Note" %}} ... {{% /alert %}}, {{< note >}} ...
SHORTCODE_OPEN = re.compile(r"^\{\{([<%])\s*([A-Za-z][\w-]*)\b.*[>%]\}\}$")
SHORTCODE_CLOSE = re.compile(r"^\{\{([<%])\s*/\s*([A-Za-z][\w-]*)\s*[>%]\}\}$")
CODE_FENCE = re.compile(r"^(`{3,}|~{3,})")


def boxes(source: bytes):
    """(opening line start, closing line start, opening line) of each box, by byte offset."""
    found, open_boxes, pos, fence = [], [], 0, None
    for raw in source.split(b"\n"):
        line = raw.decode("utf-8", "replace").strip()
        code = CODE_FENCE.match(line)
        if code:
            mark = code.group(1)
            if fence is None:
                fence = mark
            elif line.startswith(fence) and not line.strip(fence[0]):
                fence = None
        elif fence is None:
            opened, closed = OPEN.match(line), CLOSE.match(line)
            sc_open, sc_close = SHORTCODE_OPEN.match(line), SHORTCODE_CLOSE.match(line)
            if opened:
                open_boxes.append((len(opened.group(1)), pos, line))
            elif sc_open:
                open_boxes.append((sc_open.group(2), pos, line))
            elif sc_close:
                names = [b[0] for b in open_boxes]
                if sc_close.group(2) in names:
                    at = len(names) - 1 - names[::-1].index(sc_close.group(2))
                    _, start, opening = open_boxes[at]
                    del open_boxes[at:]
                    found.append((start, pos, opening))
            elif (
                closed
                and open_boxes
                and isinstance(open_boxes[-1][0], int)
                and len(closed.group(1)) >= open_boxes[-1][0]
            ):
                _, start, opening = open_boxes.pop()
                found.append((start, pos, opening))
        pos += len(raw) + 1
    return found


def body(text: str) -> str:
    """A chunk's text without its breadcrumb line."""
    return text.split("\n\n", 1)[1] if "\n\n" in text else ""


def nothing_to_read(text: str) -> bool:
    shown = re.sub(r"<!--.*?-->", "", body(text), flags=re.S)
    shown = re.sub(r"^\s*(:{3,}.*|#{1,6} .*)\s*$", "", shown, flags=re.M)
    return not shown.strip()


def measure(binary: str, folder: str) -> None:
    files = sorted(
        os.path.join(d, f) for d, _, names in os.walk(folder) for f in names if f.endswith((".md", ".mdx"))
    )
    out = subprocess.run(
        [binary, "chunks", "--json", *files], capture_output=True, text=True, check=True
    ).stdout
    chunks = [json.loads(line) for line in out.splitlines() if line.strip()]
    by_path = {}
    for c in chunks:
        by_path.setdefault(c["path"], []).append(c)
    total = spread = title_cut = ends_open = starts_close = 0
    for path, of_file in by_path.items():
        with open(path, "rb") as f:
            source = f.read()
        for start, end, opening in boxes(source):
            text_start = source.index(b"\n", start) + 1
            holding = [
                c
                for c in of_file
                if c["byte_range"][0] < end
                and c["byte_range"][1] > text_start
                and source[max(c["byte_range"][0], text_start) : min(c["byte_range"][1], end)].strip()
            ]
            total += 1
            spread += len(holding) > 1
            title_cut += any(opening not in c["text"] for c in holding)
            # A chunk that ends on this box's opening line; one that starts on its closing line.
            close_line = source[end : source.find(b"\n", end) % (len(source) + 1)]
            for c in of_file:
                lo, hi = c["byte_range"]
                tail = source[lo:hi].rstrip()
                ends_open += lo <= start and tail.endswith(opening.encode())
                head = source[lo:hi].lstrip()
                starts_close += lo >= text_start and lo <= end < hi and head.startswith(
                    close_line.strip()
                )
    empty = sum(nothing_to_read(c["text"]) for c in chunks)
    print(
        f"{folder}: {len(files)} files, {len(chunks)} chunks; boxes {total}, spread over "
        f">1 chunk {spread}, text without its opening line {title_cut}; chunks ending on an "
        f"opening fence {ends_open}, starting with a closing fence {starts_close}, with nothing "
        f"to read {empty}"
    )


def main() -> None:
    args = sys.argv[1:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    binary = os.environ.get("RAG_INDEX_BIN", os.path.join(target, "release", "rag-index"))
    if args[:1] == ["--bin"] and len(args) > 1:
        binary, args = args[1], args[2:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if args else 2)
    os.environ.setdefault(
        "RAG_INDEX_MODEL_DIR", os.path.join(root, "models", "all-MiniLM-L6-v2")
    )
    for folder in args:
        measure(binary, folder)


if __name__ == "__main__":
    main()
