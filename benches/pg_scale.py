"""Helpers of benches/pg_scale.sh (run with the LangChain/pg venv's python: numpy, psycopg, blake3).

    gen CORPUS OUT N [S]    N Markdown files of S sections each (default 1, as benches/sync_lifecycle.sh
                            makes them), each section ending in a line that names it, so every chunk
                            text (and vector) is unique
    seed URL FINGERPRINT random|clustered|gaussian BIN MODEL
                            chunk JSON lines (`rag-index chunks --json`) on stdin -> one unit vector
                            (384 dims) per distinct hash, COPYed into rag_index.embeddings: random;
                            clustered (the model's vector of the text, plus noise); or gaussian
                            (drawn from the mean and covariance of the model's vectors of the
                            distinct section texts, a sample of at most 4,000 of them: the real
                            spread, without near-duplicates)
    sqlrecall URL QUERIES BIN MODEL K   recall@K of the HNSW statement at several ef_search
    sizes URL               table and index sizes as JSON
    rebuild URL             time CREATE INDEX (HNSW) from scratch over the synced chunks, then drop it
    lexoverlap URL QUERIES HTTP K   rag-index's (pruned) lexical search vs the unpruned statement
    search URL QUERIES K    against `rag-index serve --http` at URL: per query, dense and hybrid,
                            graph and --exact; latency p50/p99 and recall@K of graph vs exact
"""

import json
import os
import random
import re
import statistics
import sys
import time

# Texts embedded to estimate the mean and covariance of --vectors gaussian.
MOMENT_TEXTS = 4000


def gen(corpus, out, n, per_file=1):
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
        d = os.path.join(out, f"d{i // 1000:04d}")
        if i % 1000 == 0:
            os.makedirs(d, exist_ok=True)
        p = os.path.join(d, f"doc{i:07d}.md")
        if per_file == 1:
            title, body = pool[i % len(pool)]
            text = f'---\ntitle: "{title}"\nid: {i}\n---\n{body}\n\nGenerated document {i}.\n'
        else:
            # Consecutive pool entries, each under a heading of its own so it stays its own
            # chunk, and each with a unique last line.
            title = pool[(i * per_file) % len(pool)][0]
            parts = [f'---\ntitle: "{title}"\nid: {i}\n---\n']
            for j in range(per_file):
                part_title, body = pool[(i * per_file + j) % len(pool)]
                if not body.startswith("#"):
                    body = f"## {part_title}\n\n{body}"
                parts.append(f"{body}\n\nGenerated section {i}.{j}.\n\n")
            text = "".join(parts)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        os.utime(p, (old, old))
    print(f"{len(pool)} distinct sections, {n} files of {per_file} sections", file=sys.stderr)


def embed(bin_, model, texts):
    import subprocess

    import numpy as np

    out = subprocess.run([bin_, "embed", "--model-dir", model], capture_output=True, text=True, check=True,
                         input="".join(json.dumps(t) + "\n" for t in texts)).stdout
    return np.array([json.loads(l) for l in out.splitlines() if l.strip()], dtype=np.float32)


def seed(url, fingerprint, mode, bin_, model):
    import blake3
    import numpy as np
    import psycopg
    from pgvector.psycopg import register_vector

    prefix = blake3.blake3(fingerprint.encode()).hexdigest()[:16]
    base_of, chunks = {}, 0
    for line in sys.stdin:
        if line.strip():
            c = json.loads(line)
            base_of[c["hash"]] = re.sub(r"\s*Generated (document \d+|section \d+\.\d+)\.\s*$", "", c["text"])
            chunks += 1
    hashes = set(base_of)
    rng = np.random.default_rng(42)
    bases = {}
    t = time.perf_counter()
    if mode in ("clustered", "gaussian"):
        # The real embedding of the chunk's text without its unique line, plus isotropic noise of
        # norm 0.5 (cosine ~0.89 to that embedding): clusters of near-duplicates, as in real corpora.
        texts = sorted(set(base_of.values()))
        if mode == "gaussian" and len(texts) > MOMENT_TEXTS:
            # Mean and covariance only: a fixed random sample estimates them (384 dimensions) at a
            # fraction of the model time (58k texts took ~45 min at 1M chunks).
            texts = sorted(random.Random(11).sample(texts, MOMENT_TEXTS))
        bases = dict(zip(texts, embed(bin_, model, texts)))
    embed_s = time.perf_counter() - t
    if mode == "gaussian":
        # Independent draws from N(mean, cov) of the real vectors: the spread of the model's
        # embedding space (its few dominant directions included), with no near-duplicate groups
        # that no index could order.
        real = np.stack(list(bases.values())).astype(np.float64)
        mean = real.mean(axis=0)
        cov = np.cov(real, rowvar=False) + 1e-6 * np.eye(real.shape[1])
        chol = np.linalg.cholesky(cov)
    t = time.perf_counter()
    with psycopg.connect(url) as conn:
        register_vector(conn)
        with conn.cursor() as cur, cur.copy(
                "COPY rag_index.embeddings (key, dim, vector) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["text", "int4", "vector"])
            hashes = sorted(hashes)
            for start in range(0, len(hashes), 10000):
                part = hashes[start:start + 10000]
                v = rng.standard_normal((len(part), 384), dtype=np.float32)
                v /= np.linalg.norm(v, axis=1, keepdims=True)
                if mode == "clustered":
                    v = np.stack([bases[base_of[h]] for h in part]) + 0.5 * v
                    v /= np.linalg.norm(v, axis=1, keepdims=True)
                elif mode == "gaussian":
                    z = rng.standard_normal((len(part), 384))
                    v = (mean + z @ chol.T).astype(np.float32)
                    v /= np.linalg.norm(v, axis=1, keepdims=True)
                for h, row in zip(part, v):
                    copy.write_row((f"{prefix}:{h}", 384, row))
    print(json.dumps({"chunks": chunks, "distinct_hashes": len(hashes), "key_prefix": prefix, "vectors": mode,
                      "base_texts_embedded": len(bases), "embed_s": round(embed_s, 2),
                      "copy_s": round(time.perf_counter() - t, 2)}))


def sqlrecall(url, queries_file, bin_, model, k):
    """The statement rag-index's dense search runs (HNSW on `embedding::vector(384)`) at several
    hnsw.ef_search values, against the exact order (`embedding <=> q` on the plain column)."""
    import psycopg
    from pgvector.psycopg import register_vector

    queries = [l.rstrip("\n") for l in open(queries_file, encoding="utf-8") if l.strip()]
    vectors = embed(bin_, model, queries)
    hnsw = ("SELECT c.id FROM rag_index.chunks c WHERE c.collection = %s AND c.dim = 384 "
            "ORDER BY c.embedding::vector(384) <=> %s::vector(384) LIMIT %s")
    exact = ("SELECT c.id FROM rag_index.chunks c WHERE c.collection = %s AND c.dim = 384 "
             "ORDER BY c.embedding <=> %s LIMIT %s")
    out = {}
    with psycopg.connect(url) as conn:
        register_vector(conn)
        coll = conn.execute("SELECT id FROM rag_index.collections WHERE name = 'scale'").fetchone()[0]
        truth = [set(r[0] for r in conn.execute(exact, (coll, v, k)).fetchall()) for v in vectors]
        for ef in (40, 100, 200, 400, 800):
            conn.execute(f"SET hnsw.ef_search = {ef}")
            rec, lat = [], []
            for v, t in zip(vectors, truth):
                t0 = time.perf_counter()
                got = {r[0] for r in conn.execute(hnsw, (coll, v, k)).fetchall()}
                lat.append((time.perf_counter() - t0) * 1000)
                rec.append(len(got & t) / k)
            out[f"ef_search={ef}"] = {"recall": round(statistics.mean(rec), 4), "p50_ms": round(statistics.median(lat), 2)}
    print(json.dumps({"queries": len(queries), "k": k, "sql": out}))


def rebuild(url):
    """How long building the HNSW index from scratch over the synced chunks takes (what a bulk
    load could do instead of maintaining it row by row); the copy is dropped again."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '512MB'")
        t = time.perf_counter()
        conn.execute("CREATE INDEX chunks_hnsw_bench ON rag_index.chunks USING hnsw "
                     "((embedding::vector(384)) vector_cosine_ops) WHERE dim = 384")
        s = time.perf_counter() - t
        size = conn.execute("SELECT pg_relation_size('rag_index.chunks_hnsw_bench')").fetchone()[0]
        conn.execute("DROP INDEX rag_index.chunks_hnsw_bench")
    print(json.dumps({"create_index_s": round(s, 1), "index_bytes": size, "maintenance_work_mem": "512MB"}))


def settle(url, super_password_file, max_wait_s=600, quiet_load=1.0):
    """Lets the server reach the state a running deployment is in before steps are timed: the full
    sync's million-row insert leaves autovacuum and a checkpoint to run, which otherwise overlap
    (and slow) the first timed steps. VACUUM ANALYZE + CHECKPOINT do that work now; then wait
    (bounded) for the 1-minute load average to fall below `quiet_load`."""
    import psycopg
    from urllib.parse import quote, urlsplit, urlunsplit

    # VACUUM of rag's tables as their owner; CHECKPOINT needs the superuser (scripts/pg.sh
    # keeps its password in the data directory).
    parts = urlsplit(url)
    password = open(super_password_file, encoding="utf-8").read().strip()
    host = parts.netloc.rsplit("@", 1)[-1]
    super_url = urlunsplit(parts._replace(netloc=f"postgres:{quote(password, safe='')}@{host}"))
    t = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) rag_index.chunks")
        conn.execute("VACUUM (ANALYZE) rag_index.files")
    with psycopg.connect(super_url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
    work_s = time.perf_counter() - t
    load = float(open("/proc/loadavg").read().split()[0])
    while load >= quiet_load and time.perf_counter() - t < max_wait_s:
        time.sleep(5)
        load = float(open("/proc/loadavg").read().split()[0])
    print(json.dumps({"vacuum_checkpoint_s": round(work_s, 1), "waited_s": round(time.perf_counter() - t - work_s, 1),
                      "load": load}))


def sizes(url):
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = 'rag_index' AND c.relkind IN ('r', 'i') "
            "ORDER BY 2 DESC").fetchall()
        db = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    print(json.dumps({"database_bytes": db, "relations": {name: size for name, size in rows}}))


def search(url, queries_file, k):
    import urllib.request

    def post(body):
        req = urllib.request.Request(url + "/search", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        t = time.perf_counter()
        with urllib.request.urlopen(req, timeout=600) as r:
            out = json.load(r)
        return (time.perf_counter() - t) * 1000, out

    def ids(out):
        hits = out.get("hits", out.get("results", []))
        return [h["chunk_id"] for h in hits]

    queries = [l.rstrip("\n") for l in open(queries_file, encoding="utf-8") if l.strip()]
    post({"query": "warm up", "k": k})
    lat = {m: [] for m in ("dense", "dense-exact", "hybrid", "hybrid-exact")}
    recall = {"dense": [], "hybrid": []}
    # The index paths first, then the exact ones: an exact search scans the whole table, and
    # interleaved with it the index searches would be timed on caches it just evicted.
    got = {name: [] for name in lat}
    for exact in (False, True):
        for q in queries:
            for mode in ("dense", "hybrid"):
                ms, out = post({"query": q, "k": k, "mode": mode, "exact": exact, "dedup": False})
                name = mode + ("-exact" if exact else "")
                lat[name].append(ms)
                got[name].append(ids(out))
    for mode in ("dense", "hybrid"):
        for found, exact in zip(got[mode], got[mode + "-exact"]):
            truth = set(exact)
            recall[mode].append(len(truth & set(found)) / max(1, len(truth)))

    def pct(xs, f):
        xs = sorted(xs)
        return round(xs[min(len(xs) - 1, int(round(f * (len(xs) - 1))))], 1)

    print(json.dumps({"queries": len(queries), "k": k,
                      "latency_ms": {m: {"p50": round(statistics.median(v), 1), "p99": pct(v, 0.99),
                                         "max": round(max(v), 1)} for m, v in lat.items()},
                      "recall_vs_exact": {m: round(statistics.mean(v), 4) for m, v in recall.items()},
                      "recall_min": {m: round(min(v), 2) for m, v in recall.items()}}))


def lexoverlap(url, queries_file, http, k):
    """rag-index's lexical search (through `serve --http`, common words pruned from the row
    selection on large tables) against the unpruned statement (every query word selects), run
    here with psycopg: latency of both and overlap@K of their top K."""
    import urllib.request
    import psycopg

    queries = [l.rstrip("\n") for l in open(queries_file, encoding="utf-8") if l.strip()]
    sql = ("SELECT c.id FROM rag_index.chunks c, (SELECT replace(plainto_tsquery('english', %s)::text, "
           "'&', '|')::tsquery AS q) q WHERE c.lexical @@ q.q "
           "ORDER BY ts_rank(c.lexical, q.q, 1) DESC, c.collection, c.id LIMIT %s")
    lat = {"rag-index lexical": [], "unpruned SQL": []}
    overlap = []
    with psycopg.connect(url) as conn:
        for q in queries:
            t = time.perf_counter()
            truth = [r[0] for r in conn.execute(sql, (q, k)).fetchall()]
            lat["unpruned SQL"].append((time.perf_counter() - t) * 1000)
            body = json.dumps({"query": q, "k": k, "mode": "lexical", "dedup": False}).encode()
            req = urllib.request.Request(http + "/search", data=body,
                                         headers={"Content-Type": "application/json"})
            t = time.perf_counter()
            with urllib.request.urlopen(req, timeout=600) as r:
                out = json.load(r)
            lat["rag-index lexical"].append((time.perf_counter() - t) * 1000)
            got = [h["chunk_id"] for h in out.get("hits", out.get("results", []))]
            overlap.append(len(set(got) & set(truth)) / max(1, len(truth)))
    print(json.dumps({"queries": len(queries), "k": k,
                      "p50_ms": {m: round(statistics.median(v), 1) for m, v in lat.items()},
                      "max_ms": {m: round(max(v), 1) for m, v in lat.items()},
                      "overlap_mean": round(statistics.mean(overlap), 4),
                      "overlap_min": round(min(overlap), 2)}))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "gen":
        gen(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    elif cmd == "seed":
        seed(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6])
    elif cmd == "sqlrecall":
        sqlrecall(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
    elif cmd == "rebuild":
        rebuild(sys.argv[2])
    elif cmd == "settle":
        settle(sys.argv[2], sys.argv[3])
    elif cmd == "sizes":
        sizes(sys.argv[2])
    elif cmd == "lexoverlap":
        lexoverlap(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    elif cmd == "search":
        search(sys.argv[2], sys.argv[3], int(sys.argv[4]))
