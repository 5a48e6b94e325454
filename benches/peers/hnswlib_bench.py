#!/usr/bin/env python3
"""hnswlib on the vectors the Rust benchmark writes, for a side-by-side comparison.

Reads raw little-endian files: data (n x dim f32), queries (q x dim f32), ground truth
(q x k u32 ids = row numbers in data, from an exact scan). Builds an HNSW index with
space='ip' (distance 1 - dot, as rag-vector-index uses on normalised vectors), then measures
recall@k and single-thread queries/s at each ef. Prints one JSON object per line.
"""

import argparse
import json
import time

import hnswlib
import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--gt", required=True)
    ap.add_argument("--dim", type=int, required=True)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--M", type=int, default=16)
    ap.add_argument("--efc", type=int, default=200)
    ap.add_argument("--efs", default="16,32,64,128")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--label", default="")
    ap.add_argument("--passes", type=int, default=1, help="passes per ef; the fastest counts")
    a = ap.parse_args()

    data = np.fromfile(a.data, dtype="<f4").reshape(-1, a.dim)
    queries = np.fromfile(a.queries, dtype="<f4").reshape(-1, a.dim)
    gt = np.fromfile(a.gt, dtype="<u4").reshape(-1, a.k)

    index = hnswlib.Index(space="ip", dim=a.dim)
    index.init_index(max_elements=len(data), M=a.M, ef_construction=a.efc, random_seed=100)
    index.set_num_threads(a.threads)
    t0, c0 = time.perf_counter(), time.process_time()
    index.add_items(data, np.arange(len(data)))
    build_s, build_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    print(
        json.dumps({"label": a.label, "build_s": build_s, "build_cpu_s": build_cpu_s, "n": len(data)}),
        flush=True,
    )

    # Single-thread queries, one at a time, as the Rust side measures them. Throughput is per
    # second of this thread's CPU time, so other load on the machine does not skew it.
    index.set_num_threads(1)
    for ef in (int(x) for x in a.efs.split(",")):
        index.set_ef(max(ef, a.k))
        elapsed = float("inf")
        for _ in range(max(a.passes, 1)):
            found = []
            t0 = time.thread_time()
            for q in queries:
                labels, _ = index.knn_query(q, k=a.k)
                found.append(labels[0])
            elapsed = min(elapsed, time.thread_time() - t0)
        hits = sum(len(set(f.tolist()) & set(g.tolist())) for f, g in zip(found, gt))
        print(
            json.dumps(
                {
                    "label": a.label,
                    "ef": ef,
                    "recall": hits / (len(queries) * a.k),
                    "qps": len(queries) / elapsed,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
