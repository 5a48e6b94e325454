"""One sync of a Markdown folder through LangChain's indexing API, the peer of `rag-index sync`.

Used by benches/sync_lifecycle.sh. Each run is one process, like one `rag-index sync`:
load the model, split every file, call `langchain_core.indexing.index()` with a `SQLRecordManager`
(a sqlite file) and an `InMemoryVectorStore` (which supports delete by id), then persist the store.
The store is an in-memory structure, so it is pickled into the state folder between runs; that I/O
is timed separately (`store_io_s`) and is not part of `index_s`.

Embeddings: the local sentence-transformers model folder, wrapped in a tiny `Embeddings` class that
counts the texts it is asked to embed (`embedded`), with torch limited to --threads threads.
Splitting: RecursiveCharacterTextSplitter with LangChain's Markdown separators, chunk length counted
in the model tokenizer's tokens (`from_huggingface_tokenizer`), --chunk-tokens per chunk.

    python langchain_sync.py --docs DIR --state DIR --cleanup full --model MODEL_DIR --threads 2

Prints one JSON object: LangChain's own counts (num_added, num_updated, num_skipped, num_deleted),
`embedded`, `chunks` (split this run), `store_docs` (documents in the vector store afterwards),
`orphan_docs` (of those, how many come from files that no longer exist), `file_chunks` for each
--count-path, and timings in seconds.
"""

import argparse
import json
import os
import pickle
import time

STARTED = time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", required=True, help="folder of Markdown files")
    parser.add_argument("--state", required=True, help="folder for the sqlite record manager and the store")
    parser.add_argument("--cleanup", required=True, choices=["full", "incremental"])
    parser.add_argument("--model", required=True, help="sentence-transformers model folder")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chunk-tokens", type=int, default=256)
    parser.add_argument("--chunk-overlap", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=100, help="index() batch_size (LangChain's default: 100)")
    parser.add_argument("--count-path", action="append", default=[], help="report this file's chunk count")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    from langchain_classic.indexes import SQLRecordManager
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.indexing import index
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_text_splitters import Language, RecursiveCharacterTextSplitter
    from sentence_transformers import SentenceTransformer

    class CountingEmbeddings(Embeddings):
        """SentenceTransformer behind LangChain's Embeddings interface, counting texts embedded."""

        def __init__(self, model: SentenceTransformer) -> None:
            self.model = model
            self.embedded = 0

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            self.embedded += len(texts)
            with torch.inference_mode():
                vectors = self.model.encode(
                    list(texts), batch_size=32, normalize_embeddings=True, convert_to_numpy=True
                )
            return vectors.tolist()

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    imported = time.perf_counter()
    model = SentenceTransformer(args.model, device="cpu")
    model.eval()
    embeddings = CountingEmbeddings(model)
    loaded = time.perf_counter()

    os.makedirs(args.state, exist_ok=True)
    store_file = os.path.join(args.state, "store.pickle")
    db_file = os.path.join(args.state, "records.sqlite")
    store = InMemoryVectorStore(embedding=embeddings)
    if os.path.exists(store_file):
        with open(store_file, "rb") as f:
            store.store = pickle.load(f)
    record_manager = SQLRecordManager(f"rag-bench/{args.cleanup}", db_url=f"sqlite:///{db_file}")
    record_manager.create_schema()
    store_loaded = time.perf_counter()

    splitter = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(
        model.tokenizer,
        chunk_size=args.chunk_tokens,
        chunk_overlap=args.chunk_overlap,
        separators=RecursiveCharacterTextSplitter.get_separators_for_language(Language.MARKDOWN),
        is_separator_regex=True,
    )
    paths = []
    for dirpath, dirnames, filenames in os.walk(args.docs):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.lower().endswith((".md", ".markdown", ".txt")) and not name.startswith("."):
                paths.append(os.path.relpath(os.path.join(dirpath, name), args.docs))
    docs = []
    for rel in paths:
        with open(os.path.join(args.docs, rel), encoding="utf-8") as f:
            docs.append(Document(page_content=f.read(), metadata={"source": rel}))
    chunks = splitter.split_documents(docs)
    split_done = time.perf_counter()

    result = index(
        chunks,
        record_manager,
        store,
        cleanup=args.cleanup,
        source_id_key="source",
        batch_size=args.batch_size,
        key_encoder="sha256",
    )
    indexed = time.perf_counter()

    with open(store_file + ".tmp", "wb") as f:
        pickle.dump(store.store, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(store_file + ".tmp", store_file)
    saved = time.perf_counter()

    current = set(paths)
    sources = [doc["metadata"].get("source") for doc in store.store.values()]
    report = {
        "cleanup": args.cleanup,
        "files": len(paths),
        "chunks": len(chunks),
        "num_added": result["num_added"],
        "num_updated": result["num_updated"],
        "num_skipped": result["num_skipped"],
        "num_deleted": result["num_deleted"],
        "embedded": embeddings.embedded,
        "store_docs": len(sources),
        "orphan_docs": sum(1 for s in sources if s not in current),
        "orphan_files": len({s for s in sources if s not in current}),
        "file_chunks": {p: sum(1 for s in sources if s == p) for p in args.count_path},
        "import_s": round(imported - STARTED, 3),
        "model_load_s": round(loaded - imported, 3),
        "store_io_s": round((store_loaded - loaded) + (saved - indexed), 3),
        "split_s": round(split_done - store_loaded, 3),
        "index_s": round(indexed - split_done, 3),
        "process_s": round(saved - STARTED, 3),
        "threads": torch.get_num_threads(),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
