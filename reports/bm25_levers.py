#!/usr/bin/env python3
"""bm25_levers — per-lever ablation of docs-qa's BM25 over public test collections.

Each collection is chunked and indexed in memory with docs_qa's own functions
(chunk_text, bm25_term_counts, text_query_counts, bm25_query_weight, bm25_scores, and
search_feedback_wanted / search_feedback_weights for the RM3 second pass), so the "defaults"
row equals `eval_retrieval.py --embeddings off --limit 10`. A lever is switched off (or on)
by a Settings field or a parameter of the library call that carries it (bm25_query_weight's
k3, bm25_term_counts' heading_units, the Tokenizer's stemmers, the question's QueryRules);
nothing in the library is patched. Prints markdown: nDCG@10 per collection and lever, a k1/b grid and
leave-one-out choices of k1/b. Standard library only.

    python3 reports/bm25_levers.py DATASETS/cranfield DATASETS/cacm DATASETS/adi DATASETS/npl DATASETS/lisa
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_qa  # noqa: E402
import retrieval_contract as rc  # noqa: E402
import eval_retrieval as ev  # noqa: E402

K1S = (0.9, 1.2, 1.4, 1.6, 2.0)
BS = (0.4, 0.6, 0.75, 0.9)
FEEDBACK_SHARES = (0.3, 0.4, 0.5, 0.6)   # other bars for the RM3 second pass (Settings.feedback_min_share)


@dataclasses.dataclass(frozen=True)
class Lever:
    """The library's settings for one row: each a parameter of the call that carries it."""

    k3: float = docs_qa.BM25_K3                                     # bm25_query_weight
    rules: rc.QueryRules = rc.QUERY_RULES                           # the question's terms
    stemmers: dict | None = None                                    # Tokenizer (None: rc.STEMMERS)
    heading_units: int = docs_qa.HEADING_TF_UNITS                   # bm25_term_counts
    feedback_min_share: float = docs_qa.FEEDBACK_MIN_SHARE          # Settings (above 1: never)


def _unstemmed(word: str) -> str:
    return word


LEVERS = {
    "defaults (all levers on)": Lever(),
    "- query-term frequency (k3 = 0: each word once)": Lever(k3=1e-9),
    "- request stop words": Lever(rules=rc.QUERY_RULES._replace(request_stop_words=frozenset())),
    "- all-caps rule (capitals make code words)": Lever(rules=rc.QUERY_RULES._replace(all_caps_rule=False)),
    "- title weight (title words weigh 1)": Lever(heading_units=docs_qa.TF_UNITS),
    "stemmer: light stripper for English too (no Porter)": Lever(
        stemmers={**rc.STEMMERS, "en": rc.text_stem},
        rules=rc.QUERY_RULES._replace(stemmers={**rc.QUERY_RULES.stemmers, "en": (rc.text_stem,)})),
    "stemmer: none": Lever(stemmers=dict.fromkeys(rc.STEMMERS, _unstemmed), rules=rc.QUERY_RULES._replace(
        stemmers=dict.fromkeys(rc.QUERY_RULES.stemmers, (_unstemmed,)))),
    "- RM3 second pass (feedback_min_share above 1: never)": Lever(feedback_min_share=1.01),
    "previous defaults (t3: none of the five levers)": Lever(
        k3=1e-9, rules=rc.QUERY_RULES._replace(request_stop_words=frozenset(), all_caps_rule=False),
        heading_units=docs_qa.TF_UNITS, feedback_min_share=1.01),
}


class Collection:
    """A dataset chunked and indexed in memory with docs_qa's functions."""

    def __init__(self, folder: str) -> None:
        self.name = os.path.basename(os.path.normpath(folder))
        docs_dir, self.queries = ev.load_dataset(folder)
        self.chunks = []
        for name in sorted(os.listdir(docs_dir)):
            with open(os.path.join(docs_dir, name), encoding="utf-8") as fh:
                self.chunks += docs_qa.chunk_text(name, fh.read(), docs_qa.DEFAULT_CHUNK_CHARS)

    def index(self, lever: Lever = Lever()) -> None:
        """(Re)build postings, lengths and per-chunk term lists with lever's stemmers and title weight."""
        tokenizer = docs_qa.Tokenizer(lever.stemmers)
        self.postings: dict[str, list[tuple[int, int, int]]] = {}
        self.forward: list[list[tuple[str, int]]] = []
        self.lengths: list[int] = []
        for cid, chunk in enumerate(self.chunks):
            counts, length = docs_qa.bm25_term_counts(chunk.text, tokenizer, heading_units=lever.heading_units)
            self.lengths.append(length)
            self.forward.append(list(counts.items()))
            for term, tf in counts.items():
                self.postings.setdefault(term, []).append((cid, tf, length))
        self.avg = sum(self.lengths) / len(self.lengths)

    def scores(self, weights: dict[str, float], k1: float, b: float) -> dict[int, float]:
        found = {t: self.postings.get(t, []) for t in weights}
        return docs_qa.bm25_scores(found, len(self.chunks), self.avg, k1, b, weights, docs_qa.TF_UNITS)

    def feedback(self, question: rc.Question, first: dict[int, float], weights: dict[str, float], k1: float,
                 b: float, settings: docs_qa.Settings | None, always: bool) -> dict[int, float]:
        """Return the RM3 second pass as docs_qa runs it (settings None: docs_qa's defaults),
        or for every question (always); else first."""
        if not first:
            return first
        top = sorted(first.items(), key=lambda kv: (-kv[1], kv[0]))
        best_terms = {term for term, _ in self.forward[top[0][0]]}
        if not always and not docs_qa.search_feedback_wanted(question, weights, best_terms,
                                                             settings or docs_qa.Settings(docs_dir=".")):
            return first
        fragments = [(score, Counter(dict(self.forward[cid])), self.lengths[cid])
                     for cid, score in top[:docs_qa.FEEDBACK_DOCS]]
        return self.scores(docs_qa.search_feedback_weights(weights, fragments), k1, b)

    def ndcg(self, k1: float = docs_qa.DEFAULT_K1, b: float = docs_qa.DEFAULT_B,
             settings: docs_qa.Settings | None = None, always: bool = False, lever: Lever = Lever()) -> float:
        """Return nDCG@10 over the judged queries (terms and k3 as lever says), a document
        ranked by its best chunk."""
        values = []
        for q in self.queries:
            question = rc.question_make(q["query"], rules=lever.rules)
            weights = {t: docs_qa.bm25_query_weight(n, lever.k3) for t, n in question.terms.items()}
            scores = self.feedback(question, self.scores(weights, k1, b), weights, k1, b, settings, always)
            ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:ev.DEPTH * 3]
            docs = ev.doc_ranking([self.chunks[cid].path for cid, _ in ranked])
            values.append(ev.ndcg_at(docs, q["gains"]))
        return ev.mean(values)


def _row(label: str, values: list[float]) -> str:
    return f"| {label} | " + " | ".join(f"{v:.3f}" for v in values) + f" | {ev.mean(values):.3f} |"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("datasets", nargs="+", metavar="DIR")
    p.add_argument("--no-grid", action="store_true", help="skip the k1/b grid")
    args = p.parse_args(argv)
    started = time.time()
    colls = [Collection(f) for f in args.datasets]
    head = "| lever | " + " | ".join(c.name for c in colls) + " | mean |\n|---|" + "---:|" * (len(colls) + 1)
    print(f"nDCG@10, BM25 only, k1={docs_qa.DEFAULT_K1} b={docs_qa.DEFAULT_B} k3={docs_qa.BM25_K3}, "
          f"tokenizer {docs_qa.TOKENIZER_VERSION}.\n\n{head}")
    base = docs_qa.Settings(docs_dir=".")
    for label, lever in LEVERS.items():
        settings = dataclasses.replace(base, feedback_min_share=lever.feedback_min_share)
        for c in colls:
            c.index(lever)
        print(_row(label, [c.ndcg(settings=settings, lever=lever) for c in colls]), flush=True)
    for c in colls:
        c.index()
    print(_row("RM3 second pass for every question", [c.ndcg(always=True) for c in colls]))
    for share in FEEDBACK_SHARES:
        print(_row(f"RM3 when the best fragment holds >= {share} (not {base.feedback_min_share})",
                   [c.ndcg(settings=dataclasses.replace(base, feedback_min_share=share)) for c in colls]))
    for k3 in (1.2, 100.0):
        print(_row(f"k3 = {k3:g} instead of {docs_qa.BM25_K3:g}", [c.ndcg(lever=Lever(k3=k3)) for c in colls]))
    if not args.no_grid:
        grid = {(k1, b): [c.ndcg(k1, b) for c in colls] for k1 in K1S for b in BS}
        print(f"\nk1/b grid (other levers at their defaults):\n\n{head}")
        for (k1, b), values in grid.items():
            print(_row(f"k1={k1} b={b}", values))
        print("\nLeave one out: k1/b with the best mean over the other collections, scored on the left-out one.\n")
        print("| left out | chosen k1, b | its nDCG@10 | with the defaults |\n|---|---|---:|---:|")
        default = (docs_qa.DEFAULT_K1, docs_qa.DEFAULT_B)
        for i, c in enumerate(colls):
            best = max(grid, key=lambda kb: ev.mean([v for j, v in enumerate(grid[kb]) if j != i]))
            print(f"| {c.name} | {best[0]}, {best[1]} | {grid[best][i]:.3f} | {grid[default][i]:.3f} |")
    print(f"\nRun time {time.time() - started:.0f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
