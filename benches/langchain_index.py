"""LangChain side of benches/pg_vs_langchain.sh: `index()` + SQLRecordManager + langchain-postgres
PGVector (cleanup="full"), all on one PostgreSQL server, with the same local model as rag-index.

    python langchain_index.py sync  --docs DIR --pg URL --model DIR --embeddings st|cli [...]
    python langchain_index.py query --questions FILE --pg URL --model DIR --embeddings st|cli [...]
    python langchain_index.py count --pg URL --deleted PATH... (orphan rows of both systems)

Each `sync` is one process, like one `rag-index sync`: read every .md file as plain text
(TextLoader-equivalent: the whole file as one Document, metadata source = path relative to DIR),
split with RecursiveCharacterTextSplitter (LangChain's Markdown separators, chunk length in the
model tokenizer's tokens, 256 per chunk, 32 overlap: rag-index's max/overlap), then `index()`.
Prints one JSON object with LangChain's counts, texts embedded, rows in the store and timings.

Embeddings: `st` = sentence-transformers on torch (imported from --st-site, a site-packages folder
that already has torch; see the .sh), normalised, batch 32; `cli` = `rag-index embed` spawned once
per embed_documents/embed_query call (it reads all stdin before answering).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

STARTED = time.perf_counter()
COLLECTION = "traefik"


def sa_url(url: str) -> str:
    return re.sub(r"^postgres(ql)?://", "postgresql+psycopg://", url)


def make_embeddings(args):
    from langchain_core.embeddings import Embeddings

    if args.embeddings == "st":
        if args.st_site:
            sys.path.append(args.st_site)
        import torch

        torch.set_num_threads(args.threads)
        torch.set_num_interop_threads(1)
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(args.model, device="cpu")
        model.eval()

        def encode(texts):
            with torch.inference_mode():
                return model.encode(list(texts), batch_size=32, normalize_embeddings=True,
                                    convert_to_numpy=True).tolist()
    else:

        def encode(texts):
            payload = "".join(json.dumps(t) + "\n" for t in texts)
            out = subprocess.run([args.bin, "embed", "--model-dir", args.model], input=payload,
                                 capture_output=True, text=True, check=True).stdout
            vectors = [json.loads(line) for line in out.splitlines() if line.strip()]
            assert len(vectors) == len(texts), (len(vectors), len(texts))
            return vectors

    class CountingEmbeddings(Embeddings):
        def __init__(self):
            self.embedded = 0
            self.seconds = 0.0

        def embed_documents(self, texts):
            t = time.perf_counter()
            self.embedded += len(texts)
            out = encode(texts)
            self.seconds += time.perf_counter() - t
            return out

        def embed_query(self, text):
            return encode([text])[0]

    return CountingEmbeddings()


def open_store(args, embeddings):
    from langchain_postgres import PGVector

    return PGVector(embeddings=embeddings, connection=sa_url(args.pg), collection_name=COLLECTION,
                    use_jsonb=True, create_extension=False)


def cmd_sync(args):
    from langchain_classic.indexes import SQLRecordManager
    from langchain_core.documents import Document
    from langchain_core.indexing import index
    from langchain_text_splitters import Language, RecursiveCharacterTextSplitter
    from tokenizers import Tokenizer

    embeddings = make_embeddings(args)
    imported = time.perf_counter()
    store = open_store(args, embeddings)
    record_manager = SQLRecordManager(f"pgvector/{COLLECTION}", db_url=sa_url(args.pg))
    record_manager.create_schema()
    opened = time.perf_counter()

    tokenizer = Tokenizer.from_file(os.path.join(args.model, "tokenizer.json"))
    tokenizer.no_truncation()  # tokenizer.json truncates and pads to 128: lengths would be 128
    tokenizer.no_padding()
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=args.chunk_tokens, chunk_overlap=args.chunk_overlap,
        length_function=lambda t: len(tokenizer.encode(t, add_special_tokens=False).ids),
        separators=RecursiveCharacterTextSplitter.get_separators_for_language(Language.MARKDOWN),
        is_separator_regex=True)
    docs = []
    for dirpath, dirnames, filenames in os.walk(args.docs):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.lower().endswith((".md", ".markdown")):
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    docs.append(Document(page_content=f.read(),
                                         metadata={"source": os.path.relpath(path, args.docs)}))
    chunks = splitter.split_documents(docs)
    split = time.perf_counter()
    tokens = [len(tokenizer.encode(c.page_content, add_special_tokens=False).ids) for c in chunks]
    result = index(chunks, record_manager, store, cleanup="full", source_id_key="source",
                   batch_size=args.batch_size, key_encoder="sha256")
    indexed = time.perf_counter()
    rows = store_rows(args.pg)
    print(json.dumps({
        "files": len(docs), "chunks": len(chunks), **{k: result[k] for k in
        ("num_added", "num_updated", "num_skipped", "num_deleted")},
        "mean_chunk_tokens": round(statistics.mean(tokens), 1) if tokens else 0,
        "embedded": embeddings.embedded, "embed_s": round(embeddings.seconds, 3), "store_rows": rows,
        "import_and_model_s": round(imported - STARTED, 3), "open_s": round(opened - imported, 3),
        "split_s": round(split - opened, 3), "index_s": round(indexed - split, 3),
        "process_s": round(time.perf_counter() - STARTED, 3)}))


def store_rows(url):
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT count(*) FROM langchain_pg_embedding e JOIN langchain_pg_collection c "
            "ON c.uuid = e.collection_id WHERE c.name = %s", (COLLECTION,)).fetchone()[0]


def norm(s):
    return " ".join(s.split())


def cmd_query(args):
    embeddings = make_embeddings(args)
    store = open_store(args, embeddings)
    questions = [json.loads(l) for l in open(args.questions, encoding="utf-8") if l.strip()]
    store.similarity_search("warm-up query", k=args.k)
    lat, lat_vec, found = [], [], 0
    for q in questions:
        t = time.perf_counter()
        hits = store.similarity_search(q["question"], k=args.k)
        lat.append((time.perf_counter() - t) * 1000)
        vec = embeddings.embed_query(q["question"])
        t = time.perf_counter()
        store.similarity_search_by_vector(vec, k=args.k)
        lat_vec.append((time.perf_counter() - t) * 1000)
        evidence = [norm(e) for e in q["evidence"]]
        if any(all(e in norm(h.page_content) for e in evidence) for h in hits):
            found += 1
    lat.sort()
    lat_vec.sort()
    p = lambda xs, f: xs[min(len(xs) - 1, int(round(f * (len(xs) - 1))))]
    print(json.dumps({"questions": len(questions), "k": args.k,
                      "recall_at_k": round(found / len(questions), 4),
                      "p50_ms": round(statistics.median(lat), 2), "p99_ms": round(p(lat, 0.99), 2),
                      "by_vector_p50_ms": round(statistics.median(lat_vec), 2),
                      "by_vector_p99_ms": round(p(lat_vec, 0.99), 2),
                      "process_s": round(time.perf_counter() - STARTED, 3)}))


def cmd_count(args):
    import psycopg

    with psycopg.connect(args.pg) as conn:
        lc = conn.execute(
            "SELECT count(*) FROM langchain_pg_embedding e JOIN langchain_pg_collection c "
            "ON c.uuid = e.collection_id WHERE c.name = %s AND e.cmetadata->>'source' = ANY(%s)",
            (COLLECTION, args.deleted)).fetchone()[0]
        rag = conn.execute(
            "SELECT count(*) FROM rag_index.chunks c JOIN rag_index.collections k "
            "ON k.id = c.collection WHERE k.name = %s AND c.path = ANY(%s)",
            (COLLECTION, args.deleted)).fetchone()[0]
        rag_files = conn.execute(
            "SELECT count(*) FROM rag_index.files f JOIN rag_index.collections k "
            "ON k.id = f.collection WHERE k.name = %s AND f.path = ANY(%s)",
            (COLLECTION, args.deleted)).fetchone()[0]
        records = conn.execute(
            "SELECT count(*) FROM upsertion_record WHERE namespace = %s AND group_id = ANY(%s)",
            (f"pgvector/{COLLECTION}", args.deleted)).fetchone()[0]
    print(json.dumps({"langchain_rows": lc, "langchain_records": records, "rag_pg_rows": rag,
                      "rag_pg_manifest_rows": rag_files}))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("sync", "query"):
        s = sub.add_parser(name)
        s.add_argument("--pg", required=True)
        s.add_argument("--model", required=True)
        s.add_argument("--embeddings", choices=["st", "cli"], default="st")
        s.add_argument("--st-site", default="")
        s.add_argument("--bin", default="rag-index")
        s.add_argument("--threads", type=int, default=2)
    s = sub.choices["sync"]
    s.add_argument("--docs", required=True)
    s.add_argument("--chunk-tokens", type=int, default=256)
    s.add_argument("--chunk-overlap", type=int, default=32)
    s.add_argument("--batch-size", type=int, default=100)
    q = sub.choices["query"]
    q.add_argument("--questions", required=True)
    q.add_argument("-k", type=int, default=5)
    c = sub.add_parser("count")
    c.add_argument("--pg", required=True)
    c.add_argument("--deleted", nargs="+", required=True)
    args = ap.parse_args()
    {"sync": cmd_sync, "query": cmd_query, "count": cmd_count}[args.cmd](args)


if __name__ == "__main__":
    main()
