#!/usr/bin/env python3
"""calibrate_gate — measure the no-answer gate's signals on on-corpus and off-corpus questions.

For each question it prints the signals the gate compares (docs_qa.search_gate_signals):
the IDF-weighted share of the question one fragment holds (--min-coverage), the folder's share,
the best embedding cosine (--min-similarity, for the configured model), the identifier the
folder names (WIS; Settings.identifier_gate; it passes on its own), and whether the question's
target is in the ungated top k. It then prints the thresholds that separate them: the
coverage midway between the highest off-corpus and the lowest retrievable question, and the
lowest similarity no off-corpus question reaches. Standard library only.

    python3 reports/calibrate_gate.py --docs corpus --answerable reports/demo-queries.jsonl \\
        --off-corpus reports/off-corpus-queries.jsonl [DATASETS/cacm/queries.jsonl ...] [--no-table] \\
        [--embeddings live --base-url URL --embed-model M]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_qa  # noqa: E402
import eval_retrieval as ev  # noqa: E402

SIMILARITY_STEP = 0.01             # a similarity threshold sits this far above the highest off-corpus cosine


def measure(questions: list[dict], settings: docs_qa.Settings) -> list[dict]:
    """Return one row per question: id, query, off-corpus or not, signals, ungated target rank."""
    ungated = dataclasses.replace(settings, min_coverage=0.0)
    rows = []
    for q in questions:
        coverage, folder, similarity, identifier = docs_qa.search_gate_signals(q["query"], settings)
        rank = None
        if q["expected"]:
            ranked = docs_qa.search_rankings(q["query"], ungated, settings.limit)["rrf"]
            rank = ev.first_hit_rank([(c.path, c.start_line, c.end_line) for c in ranked], q["expected"])
        rows.append({"id": q["id"], "query": q["query"], "off": not q["expected"], "coverage": coverage, "folder": folder,
                     "similarity": similarity, "identifier": identifier, "rank": rank})
    return rows


def _midway(rows: list[dict], key: str) -> float | None:
    """Return the value midway between the highest off-corpus and the next retrievable question."""
    top_off = max((r[key] for r in rows if r["off"]), default=0.0)
    above = [r[key] for r in rows if not r["off"] and r["rank"] is not None and r[key] > top_off]
    return (top_off + min(above)) / 2 if above else None


def thresholds(rows: list[dict]) -> tuple[float | None, float | None, float | None, list[str], list[str]]:
    """Return (coverage, folder coverage and similarity thresholds, ids of retrievable
    questions that no signal lets through, ids of off-corpus questions that one lets through)."""
    coverage, folder = _midway(rows, "coverage"), _midway(rows, "folder")
    sims = [r["similarity"] for r in rows if r["off"] and r["similarity"] is not None]
    similarity = round(max(sims) + SIMILARITY_STEP, 2) if sims else None

    def passes(r: dict) -> bool:
        return r["identifier"] is not None or (coverage is not None and r["coverage"] >= coverage) or \
            (folder is not None and r["folder"] >= folder) or \
            (similarity is not None and r["similarity"] is not None and r["similarity"] >= similarity)
    lost = [r["id"] for r in rows if not r["off"] and r["rank"] is not None and not passes(r)]
    let_through = [r["id"] for r in rows if r["off"] and passes(r)]
    return coverage, folder, similarity, lost, let_through


def at_settings(rows: list[dict], settings: docs_qa.Settings) -> tuple[list[dict], list[dict]]:
    """Return (retrievable questions the configured gate refuses, off-corpus questions it lets through)."""
    def passes(r: dict) -> bool:
        return r["coverage"] >= settings.min_coverage or r["folder"] >= settings.min_folder_coverage or \
            (r["similarity"] is not None and r["similarity"] >= settings.min_similarity) or \
            (settings.identifier_gate and r["identifier"] is not None)
    return ([r for r in rows if not r["off"] and r["rank"] is not None and not passes(r)],
            [r for r in rows if r["off"] and passes(r)])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--docs", required=True)
    p.add_argument("--answerable", required=True, help="labelled JSONL (reports/demo-queries.jsonl)")
    p.add_argument("--off-corpus", required=True, nargs="+",
                   help="JSONL files of questions the folder cannot answer (a test collection's "
                        "queries.jsonl works: another collection's questions over this folder)")
    p.add_argument("--no-table", action="store_true", help="print the summary lines only")
    p.add_argument("--embeddings", choices=("mock", "live", "off"), default="off")
    p.add_argument("--base-url", default=docs_qa.DEFAULT_BASE_URL)
    p.add_argument("--embed-model", default=docs_qa.DEFAULT_EMBED_MODEL)
    p.add_argument("--cache-dir", default=None)
    p.add_argument("--timeout", type=float, default=120.0)
    args = p.parse_args(argv)
    settings = docs_qa.Settings(
        docs_dir=args.docs, cache_dir=args.cache_dir, base_url=args.base_url, embed_model=args.embed_model,
        embed_mock=args.embeddings == "mock", use_embeddings=args.embeddings != "off", timeout_s=args.timeout)
    questions = ev.load_jsonl(args.answerable)
    for path in args.off_corpus:
        questions += [{**q, "expected": []} for q in ev.load_jsonl(path)]
    rows = measure(questions, settings)
    model = {"off": "none", "mock": "EMBED_MOCK (not semantic)", "live": args.embed_model}[args.embeddings]
    print(f"Gate signals, embeddings: {model}; defaults min_coverage {docs_qa.DEFAULT_MIN_COVERAGE}, "
          f"min_folder_coverage {docs_qa.DEFAULT_MIN_FOLDER_COVERAGE}, "
          f"min_similarity {docs_qa.DEFAULT_MIN_SIMILARITY}.\n")
    if not args.no_table:
        print("| id | question | off-corpus | coverage | folder coverage | similarity | identifier | ungated top-k rank |\n"
              "|---|---|---|---:|---:|---:|---|---:|")
    for r in [] if args.no_table else sorted(rows, key=lambda r: r["coverage"]):
        sim = "" if r["similarity"] is None else f"{r['similarity']:.2f}"
        rank = "" if r["off"] else (str(r["rank"]) if r["rank"] else "not in top k")
        print(f"| {r['id']} | {r['query']} | {'yes' if r['off'] else ''} | {r['coverage']:.2f} | "
              f"{r['folder']:.2f} | {sim} | {r['identifier'] or ''} | {rank} |")
    coverage, folder, similarity, lost, let_through = thresholds(rows)
    print(f"\nSeparating --min-coverage: {'none' if coverage is None else f'{coverage:.2f}'} "
          "(midway between the highest off-corpus and the next retrievable question)")
    print(f"Separating folder coverage: {'none' if folder is None else f'{folder:.2f}'} "
          f"(Settings.min_folder_coverage, default {docs_qa.DEFAULT_MIN_FOLDER_COVERAGE})")
    print(f"Separating --min-similarity: {'none' if similarity is None else f'{similarity:.2f}'} "
          "(just above the highest off-corpus cosine)")
    print(f"Retrievable questions no signal lets through: {', '.join(lost) or 'none'}")
    print(f"Off-corpus questions a signal lets through: {', '.join(let_through) or 'none'}")
    lost, let_through = at_settings(rows, settings)
    n_off = sum(1 for r in rows if r["off"])
    print(f"\nAt the configured thresholds: off-corpus questions refused {n_off - len(let_through)}/{n_off}"
          + "".join(f"\n  let through: {r['id']} {r['query'][:70]}" for r in let_through)
          + f"\nRetrievable questions refused: {', '.join(r['id'] for r in lost) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
