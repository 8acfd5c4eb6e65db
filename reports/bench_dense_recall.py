#!/usr/bin/env python3
"""Dense search in docs_qa with real vectors: exact scoring vs the sign-bit prefilter.

    python3 reports/bench_dense_recall.py DIR --cache-dir C --base-url URL --embed-model M
        [--questions 100] [--rescore 100,200,500,1000] [--pool 10] [--out FILE]

DIR is a folder whose chunks are embedded into the cache C (the first run embeds them;
later runs reuse the vectors). Questions are the one-line descriptions of randomly
chosen pages (lines starting with "> ", as in tldr-pages; else the first heading),
seeded, so they read like what a user asks. For each question the script times docs_qa's own `search_dense`
scoring every vector exactly, then with the prefilter rescoring R vectors for each R (Settings.dense_rescore),
alternating in one process, and reports recall@pool of the prefiltered top `pool` against
the exact top `pool`, and whether the best chunk is the same. Standard library only.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import docs_qa  # noqa: E402


def sample_questions(folder: str, n: int, seed: int = 5) -> list[str]:
    """Return n questions from randomly chosen files of folder: each page's description
    ("> ..." line, as in tldr-pages), else its first heading."""
    paths = sorted(os.path.join(root, name) for root, _, names in os.walk(folder)
                   for name in names if name.endswith(".md"))
    random.Random(seed).shuffle(paths)
    out = []
    for path in paths[:n]:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
        line = next((ln[2:] for ln in lines if ln.startswith("> ") and "More information" not in ln),
                    None) or next((ln.lstrip("#") for ln in lines if ln.startswith("#")), None)
        if line and line.strip(" ."):
            out.append(line.strip().rstrip(" ."))
    return out


def ranking(conn, question: str, settings: docs_qa.Settings, pool: int) -> tuple[list[int], float]:
    """Return docs_qa's dense top pool chunk ids for question and the seconds it took."""
    start = time.perf_counter()
    top = docs_qa.search_dense(conn, question, settings, pool)
    return [cid for cid, _ in top[:pool]], time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--cache-dir", required=True)
    parser.add_argument("--base-url", default=docs_qa.DEFAULT_BASE_URL)
    parser.add_argument("--embed-model", default=docs_qa.DEFAULT_EMBED_MODEL)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--rescore", default="100,200,500,1000")
    parser.add_argument("--pool", type=int, default=2 * docs_qa.DEFAULT_LIMIT,
                        help="dense candidates compared (default: the pool for k=5)")
    parser.add_argument("--out")
    args = parser.parse_args()
    rescores = [int(r) for r in args.rescore.split(",")]
    exact = docs_qa.Settings(docs_dir=args.folder, cache_dir=args.cache_dir, base_url=args.base_url,
                             embed_model=args.embed_model, dense_exact_max=10 ** 9)
    prefilter = dataclasses.replace(exact, dense_exact_max=0)
    stats = docs_qa.index_folder(exact)
    questions = sample_questions(args.folder, args.questions)
    conn = docs_qa.cache_open(docs_qa.cache_path(args.cache_dir, args.folder))
    n_vectors = docs_qa.cache_chunk_count(conn)   # every chunk has a vector after index_folder
    for q in questions:                           # embed (or fetch) every question vector first
        ranking(conn, q, exact, 1)
    docs_qa.cache_drop_signatures(conn)          # the first prefiltered ranking builds them: timed
    build_s = ranking(conn, questions[0], prefilter, args.pool)[1]
    default = max(exact.dense_rescore, int(exact.dense_rescore_share * n_vectors), args.pool + 1)
    rescores = sorted(set(rescores) | {default})
    times: dict[str, list[float]] = {"exact": [], **{f"R={r}": [] for r in rescores}}
    recall: dict[int, list[float]] = {r: [] for r in rescores}
    same_top: dict[int, int] = {r: 0 for r in rescores}
    for q in questions:
        truth, seconds = ranking(conn, q, exact, args.pool)
        times["exact"].append(seconds)
        for r in rescores:
            fixed = dataclasses.replace(prefilter, dense_rescore=r, dense_rescore_share=0.0)
            got, seconds = ranking(conn, q, fixed, args.pool)
            times[f"R={r}"].append(seconds)
            recall[r].append(len(set(got) & set(truth)) / max(len(truth), 1))
            same_top[r] += bool(got and truth and got[0] == truth[0])
    conn.close()
    med = {name: statistics.median(ts) for name, ts in times.items()}
    lines = [
        f"## Dense search with real vectors: exact vs sign-bit prefilter ({n_vectors:,} vectors)", "",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; Python {platform.python_version()}; "
        f"load average {os.getloadavg()[0]:.2f}",
        f"- Command: `python3 reports/bench_dense_recall.py {' '.join(sys.argv[1:])}`",
        f"- Folder: {stats.new + stats.updated + stats.unchanged:,} files, {stats.chunks:,} chunks; {n_vectors:,} chunk vectors of "
        f"`{args.embed_model}`; {len(questions)} questions (page descriptions, seed 5); pool {args.pool}",
        f"- Building the signature row once (after the chunks or vectors change), with the first "
        f"prefiltered question: {build_s:.2f} s", "",
        f"| dense scoring | median per question | max | recall@{args.pool} vs exact (mean) | "
        f"min recall | same best chunk |",
        "|---|---|---|---|---|---|",
        f"| exact, every vector | {med['exact'] * 1000:.0f} ms | {max(times['exact']) * 1000:.0f} ms "
        f"| 1.000 | 1.000 | {len(questions)}/{len(questions)} |",
    ]
    for r in rescores:
        ts = times[f"R={r}"]
        mark = " (the default at this size)" if r == default else ""
        lines.append(f"| prefilter, {r} rescored ({r / max(n_vectors, 1):.1%}){mark} | {med[f'R={r}'] * 1000:.0f} ms "
                     f"| {max(ts) * 1000:.0f} ms | {statistics.mean(recall[r]):.3f} | {min(recall[r]):.2f} "
                     f"| {same_top[r]}/{len(questions)} |")
    lines += ["", "Speed-up over exact (medians): " + ", ".join(
        f"R={r} {med['exact'] / med[f'R={r}']:.1f}x" for r in rescores) + ".", ""]
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
