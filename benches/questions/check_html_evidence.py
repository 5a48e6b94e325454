"""Checks a question set against the pages it was written from: every evidence string must be in
the visible text of the question's `source` page (tags dropped, scripts and styles left out;
reStructuredText's inline markup as Sphinx shows it; a Markdown, AsciiDoc or text page as
written, so AsciiDoc evidence avoids spans with inline markup; a notebook's cell sources and
the text of their outputs, each as written), whitespace runs collapsed on
both sides, as `rag-index eval` compares. Exits 1 and names each miss, so a different version
of the documents is caught before it is scored.

    python3 check_html_evidence.py QUESTIONS.jsonl DOCS_DIR
"""

import html.parser
import json
import os
import re
import sys


class VisibleText(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.parts = []
        self.hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.hidden += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self.hidden = max(0, self.hidden - 1)

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data)


def collapse(text):
    return re.sub(r"\s+", " ", text)


def rst_shown(text):
    """reStructuredText's inline markup as Sphinx shows it: literals, roles (a title, or the
    target with `~` keeping its last part and `()` after functions), references, emphasis."""
    pieces = re.split(r"``(.+?)``", text, flags=re.S)
    for i in range(0, len(pieces), 2):
        p = pieces[i]

        def role(m):
            kind, body = m.group(1).split(":")[-1], m.group(2)
            titled = re.match(r"(.*\S)\s*<[^<>]*>$", body, flags=re.S)
            if titled:
                return titled.group(1)
            body = body.lstrip("!")
            if body.startswith("~"):
                body = body[1:].split(".")[-1]
            body = body.lstrip(".")
            if kind in ("func", "meth") and not body.endswith(")"):
                body += "()"
            return body

        p = re.sub(r":([\w:+.-]+):`(.+?)`", role, p, flags=re.S)
        p = re.sub(r"`([^`<]*\S)\s*<[^<>]+>`__?", r"\1", p, flags=re.S)
        p = re.sub(r"`([^`]+)`_{0,2}", r"\1", p)
        p = re.sub(r"\*\*(\S.*?)\*\*", r"\1", p, flags=re.S)
        p = re.sub(r"(?<![\w*])\*(\S[^*]*?)\*(?![\w*])", r"\1", p)
        pieces[i] = re.sub(r"(\S)::(\s)", r"\1:\2", p)
    return "".join(pieces)


def notebook_text(text):
    """The source of every cell and the text its outputs show, one after the other."""

    def joined(value):
        return "".join(value) if isinstance(value, list) else str(value or "")

    notebook = json.loads(text)
    cells = notebook.get("cells") or [
        c for sheet in notebook.get("worksheets", []) for c in sheet.get("cells", [])
    ]
    parts = []
    for cell in cells:
        parts.append(joined(cell.get("source", cell.get("input"))))
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            for key in ("text/markdown", "text/plain"):
                if key in data:
                    parts.append(joined(data[key]))
                    break
            parts.append(joined(out.get("text")))
            if "ename" in out:
                parts.append(f"{out['ename']}: {out.get('evalue', '')}")
    return "\n".join(parts)


def visible_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if path.lower().endswith(".ipynb"):
        return collapse(notebook_text(text))
    if path.lower().endswith(".rst"):
        return collapse(rst_shown(text))
    if not path.lower().endswith((".html", ".htm")):
        return collapse(text)
    parser = VisibleText()
    parser.feed(text)
    return collapse("".join(parser.parts))


def main():
    questions, docs = sys.argv[1], sys.argv[2]
    pages = {}
    misses = 0
    with open(questions, encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            source = q["source"]
            if source not in pages:
                pages[source] = visible_text(os.path.join(docs, source))
            for evidence in q["evidence"]:
                if collapse(evidence) not in pages[source]:
                    print(f"{q['id']}: not in {source}: {evidence}")
                    misses += 1
    sys.exit(1 if misses else 0)


if __name__ == "__main__":
    main()
