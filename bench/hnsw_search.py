"""What HNSW's `ef_search` buys and costs in the index's dense search: recall of the exact top k and query time,
at the sizes of the ConfQuestions wiki and its copies (3,456 evidences for 215 pages, ~34,000 for 2,150).

Synthetic unit vectors of E5's width in clusters of 16 (a page's evidences sit near each other), a collection per
setting in a temporary folder, queried as the index queries it: k = 200 (twice the retriever's 100), without a
filter and with each of the filters a scope could give Chroma: three of ten spaces, all ten spaces listed, 20
pages hidden (a cluster is a page). Recall is measured without the filter, against numpy's exact cosine ranking.

    .venv/bin/python bench/hnsw_search.py --rows 3456 34000 --ef 100 500
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

import numpy as np

DIM, CLUSTER, SPACES = 384, 16, 10


def vectors(rows: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """`rows` unit vectors in clusters, and 60 queries near some of them."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(rows // CLUSTER + 1, DIM)).astype(np.float32)
    x = centers[np.arange(rows) // CLUSTER] + 0.5 * rng.normal(size=(rows, DIM)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    queries = x[rng.choice(rows, 60)] + 0.3 * rng.normal(size=(60, DIM)).astype(np.float32)
    return x, queries


def measure(rows: int, ef: int, k: int) -> dict[str, Any]:
    import chromadb
    from chromadb.config import Settings

    x, queries = vectors(rows)
    exact = [set(np.argsort(-(x @ q))[:k].astype(str)) for q in queries]
    with tempfile.TemporaryDirectory() as folder:
        client: Any = chromadb.PersistentClient(folder, Settings(anonymized_telemetry=False))
        collection = client.create_collection(
            "bench", embedding_function=None, configuration={"hnsw": {"space": "cosine", "ef_search": ef}}
        )
        started = time.perf_counter()
        for start in range(0, rows, 5000):
            ids = range(start, min(rows, start + 5000))
            collection.add(
                ids=[str(i) for i in ids],
                embeddings=x[start : start + 5000],
                metadatas=[{"space": f"S{i % SPACES}", "page_id": f"p{i // CLUSTER}"} for i in ids],
            )
        out: dict[str, Any] = {"rows": rows, "ef": ef, "add_s": round(time.perf_counter() - started, 1)}
        every = [f"S{i}" for i in range(SPACES)]
        scopes: list[tuple[str, Any]] = [
            ("all", None),
            ("scoped", {"space": {"$in": every[1:4]}}),
            ("every_space", {"space": {"$in": every}}),
            ("hidden", {"page_id": {"$nin": [f"p{i}" for i in range(0, 400, 20)]}}),
        ]
        for label, where in scopes:
            collection.query(query_embeddings=[queries[0]], n_results=k, where=where)  # loads the segment
            times, recall = [], []
            for q, best in zip(queries, exact, strict=True):
                t = time.perf_counter()
                got = collection.query(query_embeddings=[q], n_results=k, where=where, include=["distances"])
                times.append(time.perf_counter() - t)
                recall.append(len(best & set(got["ids"][0])) / k)
            times.sort()
            out[f"{label}_p50_ms"] = round(1000 * times[len(times) // 2], 1)
            out[f"{label}_p95_ms"] = round(1000 * times[int(len(times) * 0.95)], 1)
            if where is None:
                out["recall"] = round(float(np.mean(recall)), 3)
        client.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[3456, 34000])
    ap.add_argument("--ef", type=int, nargs="+", default=[100, 500])
    ap.add_argument("-k", type=int, default=200)
    args = ap.parse_args()
    print(
        "| rows | ef_search | recall@k | p50 / p95 ms | three spaces p50 / p95 ms | every space listed | "
        "20 pages hidden | add s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for rows in args.rows:
        for ef in args.ef:
            r = measure(rows, ef, args.k)
            print(
                f"| {rows:,} | {ef} | {r['recall']:.3f} | {r['all_p50_ms']} / {r['all_p95_ms']} | "
                f"{r['scoped_p50_ms']} / {r['scoped_p95_ms']} | {r['every_space_p50_ms']} / "
                f"{r['every_space_p95_ms']} | {r['hidden_p50_ms']} / {r['hidden_p95_ms']} | {r['add_s']} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
