#!/usr/bin/env python3
"""Dense search over N cached vectors in pure Python: latency of the ways to do it.

    python3 reports/bench_dense.py [--vectors 100000] [--dim 768] [--queries 5] [--out FILE]

Synthetic clustered unit vectors (seeded) stand in for embeddings; the exact top-k by
cosine is the reference for recall. Measured, all standard library:

- load: reading N float32 blobs from a sqlite table shaped like docs-qa's `vectors`;
- exact: one dot product per vector, `sum(map(operator.mul, q, v))` over array('f');
- exact-flat: the same over one flat array and slices (fewer objects, same work);
- binary: sign bits packed in a Python int per vector, Hamming distance with
  `(q ^ v).bit_count()`, then the best R*k rescored exactly (binary quantisation);
- pool: exact dots over a BM25 candidate pool only (here 1,000 ids), as hybrid search
  could do; it cannot find a chunk that shares no term with the question.
With --docs-qa-folder DIR it also times docs_qa's own dense ranking (exact) over the
folder's cached EMBED_MOCK vectors (256-dim), indexing and embedding it first.
Writes a markdown section (for reports/performance.md) to --out or stdout.
"""

from __future__ import annotations

import argparse
import array
import heapq
import math
import operator
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time


def make_vectors(n: int, dim: int, seed: int = 7) -> list[array.array]:
    """Return n unit vectors around n/50 random centroids (clustered like real embeddings)."""
    rng = random.Random(seed)
    centroids = [[rng.gauss(0, 1) for _ in range(dim)] for _ in range(max(n // 50, 1))]
    out = []
    for i in range(n):
        c = centroids[i % len(centroids)]
        v = [x + rng.gauss(0, 0.8) for x in c]
        norm = math.sqrt(sum(x * x for x in v))
        out.append(array.array("f", [x / norm for x in v]))
    return out


def signature(vec: array.array) -> int:
    """Return the sign bits of vec as one int (bit i set when vec[i] > 0)."""
    return int("".join("1" if x > 0 else "0" for x in reversed(vec)), 2)


def exact_top(q: array.array, vectors: list[array.array], k: int) -> list[int]:
    mul = operator.mul
    scores = [sum(map(mul, q, v)) for v in vectors]
    return heapq.nlargest(k, range(len(scores)), key=scores.__getitem__)


def exact_flat_top(q: array.array, flat: array.array, dim: int, k: int) -> list[int]:
    mul = operator.mul
    scores = [sum(map(mul, q, flat[i:i + dim])) for i in range(0, len(flat), dim)]
    return heapq.nlargest(k, range(len(scores)), key=scores.__getitem__)


def binary_top(q: array.array, sigs: list[int], vectors: list[array.array], k: int, rescore: int) -> list[int]:
    qs = signature(q)
    dist = [(qs ^ s).bit_count() for s in sigs]
    pool = heapq.nsmallest(rescore * k, range(len(dist)), key=dist.__getitem__)
    mul = operator.mul
    return heapq.nlargest(k, pool, key=lambda i: sum(map(mul, q, vectors[i])))


def pool_top(q: array.array, vectors: list[array.array], pool: list[int], k: int) -> list[int]:
    mul = operator.mul
    return heapq.nlargest(k, pool, key=lambda i: sum(map(mul, q, vectors[i])))


def timed(fn, runs: int) -> tuple[list[float], object]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times, result


def load_from_sqlite(vectors: list[array.array]) -> tuple[float, float]:
    """Return (seconds to load every float32 blob, seconds to load every signature blob)."""
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(os.path.join(tmp, "v.sqlite"))
        conn.execute("CREATE TABLE vectors(id INTEGER PRIMARY KEY, data BLOB, bits BLOB)")
        nbytes = (len(vectors[0]) + 7) // 8
        conn.executemany("INSERT INTO vectors VALUES(?,?,?)",
                         [(i, v.tobytes(), signature(v).to_bytes(nbytes, "little"))
                          for i, v in enumerate(vectors)])
        conn.commit()
        start = time.perf_counter()
        loaded = []
        for _, data in conn.execute("SELECT id, data FROM vectors"):
            vec = array.array("f")
            vec.frombytes(data)
            loaded.append(vec)
        t_floats = time.perf_counter() - start
        start = time.perf_counter()
        sigs = [int.from_bytes(b, "little") for (b,) in conn.execute("SELECT bits FROM vectors")]
        t_bits = time.perf_counter() - start
        conn.close()
        assert len(loaded) == len(sigs) == len(vectors)
        return t_floats, t_bits


def docs_qa_dense(folder: str, cache_dir: str, runs: int = 5) -> str:
    """Return a report line: docs_qa.search_dense latency over a folder's mock vectors."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import docs_qa
    settings = docs_qa.Settings(docs_dir=folder, cache_dir=cache_dir, embed_mock=True)
    stats = docs_qa.index_folder(settings)
    conn = docs_qa.cache_open(docs_qa.cache_path(cache_dir, folder))
    questions = ["how to list files in a directory", "compress a folder", "show network interfaces",
                 "kill a process", "git undo last commit"]
    times = []
    for q in questions[:runs]:
        start = time.perf_counter()
        docs_qa.search_dense(conn, q, settings, 20)
        times.append(time.perf_counter() - start)
    conn.close()
    return (f"docs_qa's exact dense ranking (`search_dense`, pool 20, vectors loaded from its sqlite "
            f"cache on every question) over {stats.chunks:,} cached 256-dim mock vectors of `{folder}`: "
            f"median {statistics.median(times) * 1000:.0f} ms (min {min(times) * 1000:.0f}, "
            f"max {max(times) * 1000:.0f}, n={len(times)}).")


def recall(found: list[int], truth: list[int]) -> float:
    return len(set(found) & set(truth)) / len(truth)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--queries", type=int, default=5)
    parser.add_argument("--k", type=int, default=20, help="candidate pool taken from dense search")
    parser.add_argument("--rescore", type=int, default=10, help="binary: rescore rescore*k exactly")
    parser.add_argument("--out")
    parser.add_argument("--docs-qa-folder", metavar="DIR", help="also time docs_qa's dense ranking here")
    args = parser.parse_args()
    t0 = time.perf_counter()
    vectors = make_vectors(args.vectors, args.dim)
    gen_s = time.perf_counter() - t0
    sigs = [signature(v) for v in vectors]
    flat = array.array("f")
    for v in vectors:
        flat.extend(v)
    rng = random.Random(11)
    queries = [vectors[rng.randrange(len(vectors))] for _ in range(args.queries)]
    queries = [array.array("f", [x + rng.gauss(0, 0.02) for x in q]) for q in queries]
    rows: dict[str, list[float]] = {"exact": [], "exact-flat": [], "binary": [], "pool": []}
    recalls: dict[str, list[float]] = {"binary": [], "pool": []}
    pool_ids = rng.sample(range(len(vectors)), 1000)
    for q in queries:
        t, truth = timed(lambda: exact_top(q, vectors, args.k), 1)
        rows["exact"] += t
        t, _ = timed(lambda: exact_flat_top(q, flat, args.dim, args.k), 1)
        rows["exact-flat"] += t
        t, got = timed(lambda: binary_top(q, sigs, vectors, args.k, args.rescore), 1)
        rows["binary"] += t
        recalls["binary"].append(recall(got, truth))
        t, got = timed(lambda: pool_top(q, vectors, pool_ids + truth[:5], args.k), 1)
        rows["pool"] += t
    load_f, load_b = load_from_sqlite(vectors)
    med = {name: statistics.median(ts) for name, ts in rows.items()}
    lines = [
        f"## Goal 6 — dense search over {args.vectors:,} cached vectors (pure stdlib)", "",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; Python {platform.python_version()}; "
        f"load average {os.getloadavg()[0]:.2f}",
        f"- Command: `python3 reports/bench_dense.py {' '.join(sys.argv[1:])}`",
        f"- {args.vectors:,} synthetic clustered unit vectors, dim {args.dim}, {args.queries} queries, "
        f"top-{args.k} (the dense candidate pool for k=5); generation took {gen_s:.1f} s (not counted).", "",
        "| method | median per query | min | max | recall@k vs exact |", "|---|---|---|---|---|",
    ]
    labels = {"exact": "exact: `sum(map(mul, q, v))` per array('f') vector",
              "exact-flat": "exact over one flat array, sliced",
              "binary": f"sign-bit Hamming (`int.bit_count`) + exact rescoring of {args.rescore}x k",
              "pool": "exact over a 1,000-id BM25 candidate pool only"}
    for name, ts in rows.items():
        rec = f"{statistics.mean(recalls[name]):.3f}" if recalls.get(name) else ("1.000" if name.startswith("exact") else "n/a")
        lines.append(f"| {labels[name]} | {med[name] * 1000:.1f} ms | {min(ts) * 1000:.1f} ms | "
                     f"{max(ts) * 1000:.1f} ms | {rec} |")
    lines += ["", f"Loading from sqlite (one row per vector): float32 blobs {load_f:.2f} s; "
                  f"{(args.dim + 7) // 8}-byte sign-bit blobs {load_b:.2f} s.", "",
              f"Speed-up of binary+rescoring over exact: {med['exact'] / med['binary']:.1f}x.", ""]
    if args.docs_qa_folder:
        with tempfile.TemporaryDirectory() as cache_dir:
            lines += [docs_qa_dense(args.docs_qa_folder, cache_dir), ""]
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
