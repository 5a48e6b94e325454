"""LangChain's loaders + RecursiveCharacterTextSplitter over a non-Markdown corpus: the peer of
`rag-index sync` + `rag-index eval` for issue 14 ("Beyond Markdown").

Used by benches/formats_vs_langchain.sh. One process per corpus folder:

- load every file with the LangChain loader for its extension, with the loader's defaults:
  `.html`/`.htm` BSHTMLLoader (bs4 + lxml, `get_text()` without separator, one Document per file),
  `.pdf` PyPDFLoader (pypdf, plain extraction, one Document per page), `.docx` Docx2txtLoader,
  `.py`/`.rs` TextLoader, `.md`/`.markdown`/`.txt` TextLoader; other files are skipped (listed
  in `skipped`), as `rag-index sync` skips them;
- split with RecursiveCharacterTextSplitter, chunk_size 1000 characters, chunk_overlap 200
  (LangChain's common defaults), add_start_index=True; code with
  `RecursiveCharacterTextSplitter.from_language(Language.PYTHON / Language.RUST)`, same sizes;
- embed with sentence-transformers from the local model folder (offline, normalized, batch 32,
  torch limited to --threads threads); the model truncates at its max_seq_length (256 tokens);
- exact cosine top-k for every question, scored as `rag-index eval` scores: answered at rank r
  when the chunk at rank r contains every evidence string, after collapsing whitespace runs on
  both sides.

With --per-file-group (used for the bash corpus, where the three files are the same manual),
each extension is also evaluated on its own, against only that format's chunks (the same as an
index of that file alone, because the search is exact), and the groups are timed separately.

    python langchain_formats.py --docs DIR --questions FILE --model MODEL_DIR [--per-format]

Prints one JSON object on stdout and a small table on stderr (or stdout with --table).
"""

import argparse
import json
import os
import re
import sys
import time

STARTED = time.perf_counter()

CAP = 256
LOADER_OF_EXT = {
    "html": "BSHTMLLoader",
    "htm": "BSHTMLLoader",
    "pdf": "PyPDFLoader",
    "docx": "Docx2txtLoader",
    "py": "TextLoader",
    "rs": "TextLoader",
    "md": "TextLoader",
    "markdown": "TextLoader",
    "txt": "TextLoader",
}


def collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def metrics(ranks: list) -> dict:
    n = len(ranks)
    if n == 0:
        return {"questions": 0, "recall_at_1": 0.0, "recall_at_5": 0.0, "recall_at_10": 0.0, "mrr_at_10": 0.0}

    def within(k: int) -> float:
        return sum(1 for r in ranks if r is not None and r <= k) / n

    return {
        "questions": n,
        "recall_at_1": within(1),
        "recall_at_5": within(5),
        "recall_at_10": within(10),
        "mrr_at_10": sum(1.0 / r for r in ranks if r is not None and r <= 10) / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", required=True, help="corpus folder")
    parser.add_argument("--questions", required=True, help="questions.jsonl")
    parser.add_argument("--model", required=True, help="sentence-transformers model folder")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chunk-size", type=int, default=1000)
    parser.add_argument("--chunk-overlap", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--per-format", action="store_true", help="also evaluate each extension on its own")
    parser.add_argument("--label", default=None, help="name of the corpus in the report")
    parser.add_argument("--table", action="store_true", help="print the table on stdout after the JSON")
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    from langchain_community.document_loaders import (
        BSHTMLLoader,
        Docx2txtLoader,
        PyPDFLoader,
        TextLoader,
    )
    from langchain_text_splitters import Language, RecursiveCharacterTextSplitter
    from sentence_transformers import SentenceTransformer

    imported = time.perf_counter()
    model = SentenceTransformer(args.model, device="cpu")
    model.eval()
    tokenizer = model.tokenizer
    model_loaded = time.perf_counter()

    def make_loader(kind: str, path: str):
        if kind == "BSHTMLLoader":
            return BSHTMLLoader(path, open_encoding="utf-8")
        if kind == "PyPDFLoader":
            return PyPDFLoader(path)
        if kind == "Docx2txtLoader":
            return Docx2txtLoader(path)
        return TextLoader(path, encoding="utf-8")

    sizes = {"chunk_size": args.chunk_size, "chunk_overlap": args.chunk_overlap, "add_start_index": True}
    splitters = {
        "py": RecursiveCharacterTextSplitter.from_language(Language.PYTHON, **sizes),
        "rs": RecursiveCharacterTextSplitter.from_language(Language.RUST, **sizes),
    }
    default_splitter = RecursiveCharacterTextSplitter(**sizes)

    paths, skipped = [], []
    for dirpath, dirnames, filenames in os.walk(args.docs):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), args.docs).replace(os.sep, "/")
            ext = name.rsplit(".", 1)[1].lower() if "." in name else ""
            (paths if ext in LOADER_OF_EXT else skipped).append(rel)

    def ext_of(rel: str) -> str:
        return rel.rsplit(".", 1)[1].lower()

    # Load and split, file by file, timed per extension.
    groups: dict = {}
    failures = []
    for rel in paths:
        ext = ext_of(rel)
        group = groups.setdefault(
            ext,
            {"files": [], "documents": 0, "chunks": [], "load_s": 0.0, "split_s": 0.0, "embed_s": 0.0, "chars": 0},
        )
        kind = LOADER_OF_EXT[ext]
        t0 = time.perf_counter()
        try:
            docs = make_loader(kind, os.path.join(args.docs, rel)).load()
        except Exception as err:  # a loader failure is a result, not a crash
            failures.append({"path": rel, "loader": kind, "error": f"{type(err).__name__}: {err}"})
            group["load_s"] += time.perf_counter() - t0
            continue
        t1 = time.perf_counter()
        for d in docs:
            d.metadata["rel"] = rel
        chunks = splitters.get(ext, default_splitter).split_documents(docs)
        t2 = time.perf_counter()
        group["files"].append(rel)
        group["documents"] += len(docs)
        group["chars"] += sum(len(d.page_content) for d in docs)
        group["chunks"].extend(chunks)
        group["load_s"] += t1 - t0
        group["split_s"] += t2 - t1
        if not any(d.page_content.strip() for d in docs):
            failures.append({"path": rel, "loader": kind, "error": "no text extracted"})

    # Embed, group by group (so each format of the bash corpus is timed on its own).
    all_chunks, all_vectors, chunk_group = [], [], []
    for ext, group in groups.items():
        texts = [c.page_content for c in group["chunks"]]
        t0 = time.perf_counter()
        if texts:
            with torch.inference_mode():
                vectors = model.encode(
                    texts, batch_size=args.batch_size, normalize_embeddings=True, convert_to_numpy=True
                )
            all_vectors.append(np.asarray(vectors, dtype=np.float32))
        group["embed_s"] = time.perf_counter() - t0
        all_chunks.extend(group["chunks"])
        chunk_group.extend([ext] * len(texts))
    embedded = time.perf_counter()
    matrix = np.concatenate(all_vectors) if all_vectors else np.zeros((0, 1), dtype=np.float32)
    chunk_group = np.array(chunk_group)

    # Token counts with the model's tokenizer, special tokens included (as rag-index counts).
    token_counts = np.array(
        [len(tokenizer(c.page_content, add_special_tokens=True, truncation=False)["input_ids"]) for c in all_chunks],
        dtype=np.int64,
    )
    counted = time.perf_counter()

    questions = []
    with open(args.questions, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                questions.append(json.loads(line))
    t0 = time.perf_counter()
    with torch.inference_mode():
        qvectors = model.encode(
            [q["question"] for q in questions],
            batch_size=args.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
        )
    scores_all = qvectors.astype(np.float32) @ matrix.T if len(all_chunks) else None
    collapsed = [collapse(c.page_content) for c in all_chunks]
    query_s = time.perf_counter() - t0

    def evaluate(mask) -> dict:
        """Exact top-k among the chunks where mask is true."""
        idx = np.nonzero(mask)[0]
        results, ranks, returned_tokens, returned_over = [], [], [], 0
        for qi, q in enumerate(questions):
            evidence = [collapse(e) for e in q["evidence"]]
            if len(idx):
                s = scores_all[qi, idx]
                order = idx[np.argsort(-s, kind="stable")[: args.k]]
            else:
                order = []
            rank = None
            for r, ci in enumerate(order, start=1):
                if rank is None and all(e in collapsed[ci] for e in evidence):
                    rank = r
                returned_tokens.append(int(token_counts[ci]))
                returned_over += int(token_counts[ci] > CAP)
            ranks.append(rank)
            top = all_chunks[order[0]] if len(order) else None
            results.append(
                {
                    "id": q["id"],
                    "pattern": q.get("pattern", ""),
                    "rank": rank,
                    "top_path": top.metadata["rel"] if top is not None else None,
                    "top_page": top.metadata.get("page") if top is not None else None,
                }
            )
        per_pattern = {}
        for p in sorted({r["pattern"] for r in results}):
            per_pattern[p] = metrics([r["rank"] for r in results if r["pattern"] == p])
        toks = token_counts[idx] if len(idx) else np.zeros(0, dtype=np.int64)
        return {
            "chunks": int(len(idx)),
            "overall": metrics(ranks),
            "per_pattern": per_pattern,
            "mean_tokens_per_chunk": (sum(returned_tokens) / len(returned_tokens)) if returned_tokens else 0.0,
            "returned_over_cap": returned_over,
            "returned": len(returned_tokens),
            "mean_tokens_all_chunks": float(toks.mean()) if len(toks) else 0.0,
            "max_tokens": int(toks.max()) if len(toks) else 0,
            "chunks_over_cap": int((toks > CAP).sum()),
            "questions": results,
        }

    label = args.label
    if not label:
        docs_dir = os.path.normpath(os.path.abspath(args.docs))
        if os.path.basename(docs_dir) == "docs":
            docs_dir = os.path.dirname(docs_dir)
        label = os.path.basename(docs_dir)
    runs = []
    everything = np.ones(len(all_chunks), dtype=bool)
    if args.per_format:
        for ext, group in groups.items():
            run = evaluate(chunk_group == ext)
            run.update(
                {
                    "label": f"{label}/{ext}",
                    "files": len(group["files"]),
                    "documents": group["documents"],
                    "chars": group["chars"],
                    "load_split_s": round(group["load_s"] + group["split_s"], 3),
                    "load_s": round(group["load_s"], 3),
                    "split_s": round(group["split_s"], 3),
                    "embed_s": round(group["embed_s"], 3),
                }
            )
            runs.append(run)
    run = evaluate(everything)
    load_s = sum(g["load_s"] for g in groups.values())
    split_s = sum(g["split_s"] for g in groups.values())
    embed_s = sum(g["embed_s"] for g in groups.values())
    run.update(
        {
            "label": f"{label}/all" if args.per_format else label,
            "files": sum(len(g["files"]) for g in groups.values()),
            "documents": sum(g["documents"] for g in groups.values()),
            "chars": sum(g["chars"] for g in groups.values()),
            "load_split_s": round(load_s + split_s, 3),
            "load_s": round(load_s, 3),
            "split_s": round(split_s, 3),
            "embed_s": round(embed_s, 3),
        }
    )
    runs.append(run)

    report = {
        "peer": "langchain",
        "corpus": label,
        "loaders": {ext: LOADER_OF_EXT[ext] for ext in groups},
        "splitter": {
            "class": "RecursiveCharacterTextSplitter",
            "chunk_size": args.chunk_size,
            "chunk_overlap": args.chunk_overlap,
            "add_start_index": True,
            "from_language": {"py": "PYTHON", "rs": "RUST"},
        },
        "model": os.path.basename(os.path.normpath(args.model)),
        "max_seq_length": model.max_seq_length,
        "cap_tokens": CAP,
        "k": args.k,
        "search": "exact cosine",
        "skipped": skipped,
        "loader_failures": failures,
        "runs": runs,
        "import_s": round(imported - STARTED, 3),
        "model_load_s": round(model_loaded - imported, 3),
        "token_count_s": round(counted - embedded, 3),
        "query_s": round(query_s, 3),
        "process_s": round(time.perf_counter() - STARTED, 3),
        "threads": torch.get_num_threads(),
        "versions": versions(),
    }
    print(json.dumps(report))
    out = sys.stdout if args.table else sys.stderr
    print(table(report), file=out)


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in [
        "langchain-core",
        "langchain-community",
        "langchain-text-splitters",
        "beautifulsoup4",
        "lxml",
        "pypdf",
        "docx2txt",
        "sentence-transformers",
        "torch",
    ]:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def table(report: dict) -> str:
    lines = [
        f"{'run':<22} {'chunks':>6} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR@10':>7} {'tok/chunk':>9} {'>256':>5} {'load+split':>10} {'embed':>7}"
    ]
    for run in report["runs"]:
        m = run["overall"]
        lines.append(
            f"{run['label']:<22} {run['chunks']:>6} {m['recall_at_1']:>6.3f} {m['recall_at_5']:>6.3f} "
            f"{m['recall_at_10']:>6.3f} {m['mrr_at_10']:>7.3f} {run['mean_tokens_per_chunk']:>9.1f} "
            f"{run['chunks_over_cap']:>5} {run['load_split_s']:>9.2f}s {run['embed_s']:>6.1f}s"
        )
    for run in report["runs"]:
        for p, m in run["per_pattern"].items():
            lines.append(
                f"  {run['label'] + ' ' + p:<20} {m['questions']:>6} {m['recall_at_1']:>6.3f} {m['recall_at_5']:>6.3f} "
                f"{m['recall_at_10']:>6.3f} {m['mrr_at_10']:>7.3f}"
            )
    for f in report["loader_failures"]:
        lines.append(f"loader failure: {f['path']} ({f['loader']}): {f['error']}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
