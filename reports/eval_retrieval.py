#!/usr/bin/env python3
"""eval_retrieval — compare BM25 only, embeddings only and RRF on labelled queries.

Two inputs:
  * a docs folder plus labelled queries (JSONL: id, query, lang, kind, expected
    [{path, start_line, end_line}]); a hit is a retrieved chunk of an expected path whose
    line range overlaps the expected lines; `expected: []` means off-corpus (search()
    should return nothing, i.e. the answer is no_answer);
  * a dataset folder in the layout of datasets/cranfield (docs/*.md, queries.jsonl,
    qrels.tsv `qid<TAB>docid<TAB>grade`); doc id = file stem, a document's rank = the
    rank of its best chunk; only queries present in qrels are evaluated.

Per method it reports hit@k, MRR@10, nDCG@10 (linear graded gains, as trec_eval) and
Recall@100, and for labelled queries the rank of the target per method. Rankings come
from docs_qa.search_rankings(), the same code path as docs_qa.search().
Standard library only; the lexical anchors (--anchors: rank_bm25, bm25s, bm25s + Snowball,
SQLite FTS5 with and without Porter) are imported lazily and skipped when absent.

    python3 reports/eval_retrieval.py --docs corpus --queries reports/demo-queries.jsonl
    python3 reports/eval_retrieval.py --dataset DATASETS/cranfield --embeddings live
    VENV/bin/python reports/eval_retrieval.py --embeddings off --limit 10 --anchors \
        --dataset DATASETS/cranfield DATASETS/cacm DATASETS/adi DATASETS/npl DATASETS/lisa
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import shlex
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
import docs_qa  # noqa: E402
import svg_charts  # noqa: E402  (beside this script)

METHODS = ("bm25", "dense", "rrf")
METHOD_NAMES = {"bm25": "BM25 only", "dense": "embeddings only", "rrf": "RRF (hybrid)",
                "gated": "through the gate (a refusal scores 0)"}
HIT_KS = (1, 3, 5, 10)
DEPTH = 100                        # ranking depth per method (Recall@100)
NDCG_K = 10
MRR_K = 10

# === Metrics (pure) ===


def overlaps(chunk_path: str, start: int, end: int, expected: dict) -> bool:
    """Return True when a chunk of chunk_path lines start..end overlaps the expected range."""
    return (chunk_path == expected["path"] and start <= expected["end_line"]
            and expected["start_line"] <= end)


def first_hit_rank(chunks: list[tuple[str, int, int]], expected: list[dict]) -> int | None:
    """Return the 1-based rank of the first chunk (path, start, end) that hits any expected range."""
    for rank, (path, start, end) in enumerate(chunks, 1):
        if any(overlaps(path, start, end, exp) for exp in expected):
            return rank
    return None


def hit_at(rank: int | None, k: int) -> float:
    """Return 1.0 when the target was found within the top k, else 0.0."""
    return 1.0 if rank is not None and rank <= k else 0.0


def reciprocal_rank(rank: int | None, k: int = MRR_K) -> float:
    """Return 1/rank when the target is within the top k, else 0.0."""
    return 1.0 / rank if rank is not None and rank <= k else 0.0


def doc_ranking(paths: list[str]) -> list[str]:
    """Return document ids (file stems) in order of their best chunk, each once."""
    seen: dict[str, None] = {}
    for path in paths:
        seen.setdefault(os.path.splitext(os.path.basename(path))[0], None)
    return list(seen)


def ndcg_at(ranked: list[str], gains: dict[str, float], k: int = NDCG_K) -> float:
    """Return nDCG@k with linear gains: sum gain/log2(rank+1) over the ideal ordering's sum."""
    dcg = sum(gains.get(doc, 0.0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: list[str], relevant: set[str], k: int = DEPTH) -> float:
    """Return the share of relevant ids within the top k (0.0 when there are none)."""
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def mean(values: list[float]) -> float:
    """Return the arithmetic mean (0.0 for no values)."""
    return sum(values) / len(values) if values else 0.0


# === Inputs ===


def load_jsonl(path: str) -> list[dict]:
    """Return the JSON objects of a JSONL file, skipping blank lines."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_dataset(folder: str) -> tuple[str, list[dict]]:
    """Return (docs folder, queries with 'gains' {docid: grade}) for qrels-judged queries."""
    gains: dict[str, dict[str, float]] = {}
    with open(os.path.join(folder, "qrels.tsv"), encoding="utf-8") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 3 and float(parts[2]) > 0:
                gains.setdefault(parts[0], {})[parts[1]] = float(parts[2])
    queries = [dict(q, gains=gains[q["id"]]) for q in load_jsonl(os.path.join(folder, "queries.jsonl"))
               if q["id"] in gains]
    return os.path.join(folder, "docs"), queries


# === Runs ===


def rankings_for(question: str, settings: docs_qa.Settings) -> dict[str, list[docs_qa.Chunk]]:
    """Return docs_qa's per-method rankings for one question (DEPTH deep)."""
    return docs_qa.search_rankings(question, settings, DEPTH)


def run_labelled(queries: list[dict], settings: docs_qa.Settings) -> list[dict]:
    """Return one row per query: per-method target rank, or off-corpus outcome."""
    rows = []
    for q in queries:
        row = {"id": q["id"], "query": q["query"], "lang": q.get("lang", ""),
               "kind": q.get("kind", ""), "expected": q["expected"]}
        if not q["expected"]:
            hits = docs_qa.search(q["query"], settings).hits
            row["off_corpus_hits"] = len(hits)
        else:
            ranked = rankings_for(q["query"], settings)
            row["ranks"] = {m: first_hit_rank([(c.path, c.start_line, c.end_line) for c in chunks],
                                              q["expected"])
                            for m, chunks in ranked.items()}
        rows.append(row)
    return rows


def run_dataset(queries: list[dict], settings: docs_qa.Settings) -> dict[str, dict[str, list[str]]]:
    """Return method -> query id -> document ranking, plus 'gated': the first method's
    ranking when search() answers the question, none when its gate refuses it (a refused
    answerable question scores zero, as a user would see it)."""
    out: dict[str, dict[str, list[str]]] = {}
    for q in queries:
        ranked = rankings_for(q["query"], settings)
        for method, chunks in ranked.items():
            out.setdefault(method, {})[q["id"]] = doc_ranking([c.path for c in chunks])
        answered = bool(docs_qa.search(q["query"], settings).hits)
        shown = "rrf" if "rrf" in ranked else "bm25"          # the ranking search() answers with
        out.setdefault("gated", {})[q["id"]] = out[shown][q["id"]] if answered else []
    return out


# --- Lexical anchors: each ranks whole files with its library's defaults; a missing
# library is skipped (third-party packages are never a dependency of docs-qa).

def _read_docs(docs_dir: str) -> tuple[list[str], list[str]]:
    """Return (doc ids, texts) of a dataset's docs folder, sorted by file name."""
    names = sorted(os.listdir(docs_dir))
    texts = []
    for name in names:
        with open(os.path.join(docs_dir, name), encoding="utf-8") as fh:
            texts.append(fh.read())
    return [os.path.splitext(n)[0] for n in names], texts


def _version(package: str) -> str:
    from importlib.metadata import version
    return version(package)


# the Snowball stemmer of the questions' language (PyStemmer has no Slovak: Czech is closest)
SNOWBALL = {"en": "english", "pl": "polish", "sk": "czech"}


def questions_language(queries: list[dict]) -> str:
    """Return the language most of the questions are in, as docs-qa detects it."""
    votes = [docs_qa.text_detect_language(q["query"]) for q in queries]
    return max(set(votes), key=votes.count) if votes else "en"


def anchor_bm25s(ids: list[str], texts: list[str], queries: list[dict],
                 snowball: bool) -> tuple[str, dict[str, list[str]]] | None:
    """Return (label, query id -> doc ranking) from bm25s (stopwords=en, optionally PyStemmer's
    Snowball stemmer of the questions' language), or None when the package is absent."""
    language = SNOWBALL[questions_language(queries)]
    try:
        import bm25s  # optional anchor, never a dependency
        stemmer = None
        if snowball:
            import Stemmer  # PyStemmer, optional
            stemmer = Stemmer.Stemmer(language)
    except ImportError:
        return None
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)
    out = {}
    for q in queries:
        tokens = bm25s.tokenize([q["query"]], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            out[q["id"]] = []
            continue
        docs, _ = retriever.retrieve(tokens, k=min(DEPTH, len(ids)), show_progress=False)
        out[q["id"]] = [ids[i] for i in docs[0]]
    label = f"bm25s {_version('bm25s')}" + (f" + Snowball {language} (PyStemmer {_version('PyStemmer')})" if snowball else "")
    return label, out


def anchor_rank_bm25(ids: list[str], texts: list[str],
                     queries: list[dict]) -> tuple[str, dict[str, list[str]]] | None:
    """Return (label, rankings) from rank_bm25's BM25Okapi over lower-cased words, or None."""
    try:
        from rank_bm25 import BM25Okapi  # optional anchor
    except ImportError:
        return None
    import re
    words = re.compile(r"\w+")
    bm25 = BM25Okapi([words.findall(t.lower()) for t in texts])
    out = {}
    for q in queries:
        scores = bm25.get_scores(words.findall(q["query"].lower()))
        order = sorted(range(len(ids)), key=lambda i: (-scores[i], i))[:DEPTH]
        out[q["id"]] = [ids[i] for i in order if scores[i] > 0]
    return f"rank_bm25 {_version('rank_bm25')}", out


def anchor_fts5(ids: list[str], texts: list[str], queries: list[dict],
                porter: bool) -> tuple[str, dict[str, list[str]]] | None:
    """Return (label, rankings) from SQLite FTS5's bm25() (an OR of the query's words), or
    None when this sqlite3 has no FTS5."""
    import re
    import sqlite3
    conn = sqlite3.connect(":memory:")
    tokenize = "porter unicode61" if porter else "unicode61"
    try:
        conn.execute(f"CREATE VIRTUAL TABLE d USING fts5(body, tokenize='{tokenize}')")
    except sqlite3.OperationalError:
        return None
    conn.executemany("INSERT INTO d(rowid, body) VALUES(?, ?)", enumerate(texts))
    out = {}
    for q in queries:
        words = dict.fromkeys(re.findall(r"\w+", q["query"].lower()))
        match = " OR ".join(f'"{w}"' for w in words)
        rows = conn.execute("SELECT rowid FROM d WHERE d MATCH ? ORDER BY rank LIMIT ?",
                            (match, DEPTH)).fetchall() if match else []
        out[q["id"]] = [ids[r[0]] for r in rows]
    conn.close()
    return f"FTS5{' + Porter' if porter else ''} (SQLite {sqlite3.sqlite_version})", out


ANCHORS = {
    "rank_bm25": lambda ids, texts, qs: anchor_rank_bm25(ids, texts, qs),
    "bm25s": lambda ids, texts, qs: anchor_bm25s(ids, texts, qs, snowball=False),
    "bm25s + Snowball": lambda ids, texts, qs: anchor_bm25s(ids, texts, qs, snowball=True),
    "FTS5": lambda ids, texts, qs: anchor_fts5(ids, texts, qs, porter=False),
    "FTS5 + Porter": lambda ids, texts, qs: anchor_fts5(ids, texts, qs, porter=True),
}


def anchor_rankings(docs_dir: str, queries: list[dict]) -> dict[str, tuple[str, dict[str, list[str]]] | None]:
    """Return anchor name -> (label, rankings), or None for an anchor whose library is absent."""
    ids, texts = _read_docs(docs_dir)
    return {name: run(ids, texts, queries) for name, run in ANCHORS.items()}


# === Summaries ===


def labelled_summary(rows: list[dict], methods: list[str]) -> dict[str, dict[str, float]]:
    """Return method -> metric -> value over the queries that have an expected target."""
    answerable = [r for r in rows if r["expected"]]
    out = {}
    for m in methods:
        ranks = [r["ranks"].get(m) for r in answerable]
        metrics = {f"hit@{k}": mean([hit_at(x, k) for x in ranks]) for k in HIT_KS}
        metrics["MRR@10"] = mean([reciprocal_rank(x) for x in ranks])
        out[m] = metrics
    return out


def dataset_summary(rankings: dict[str, list[str]], queries: list[dict]) -> dict[str, float]:
    """Return nDCG@10, MRR@10, hit@k and Recall@100 of one method over the dataset's queries."""
    ndcg, rr, rec, hits = [], [], [], {k: [] for k in HIT_KS}
    for q in queries:
        ranked = rankings.get(q["id"], [])
        relevant = set(q["gains"])
        first = next((i for i, d in enumerate(ranked, 1) if d in relevant), None)
        ndcg.append(ndcg_at(ranked, q["gains"]))
        rr.append(reciprocal_rank(first))
        rec.append(recall_at(ranked, relevant))
        for k in HIT_KS:
            hits[k].append(hit_at(first, k))
    out = {"nDCG@10": mean(ndcg), "MRR@10": mean(rr), "Recall@100": mean(rec)}
    out.update({f"hit@{k}": mean(v) for k, v in hits.items()})
    return out


# === Formatting ===


def _rank_cell(rank: int | None, pool: int) -> str:
    if rank is None:
        return "outside pool"
    return f"{rank}" if rank <= pool else f"{rank} (outside pool)"


def format_labelled(rows: list[dict], methods: list[str], pool: int) -> str:
    """Return the markdown rank table and metric table for labelled queries."""
    lines = ["| id | lang | kind | query | " + " | ".join(METHOD_NAMES[m] for m in methods) + " |",
             "|---|---|---|---|" + "---|" * len(methods)]
    for r in rows:
        if r["expected"]:
            cells = [_rank_cell(r["ranks"].get(m), pool if m != "rrf" else DEPTH) for m in methods]
        else:
            verdict = "no results (ok)" if r["off_corpus_hits"] == 0 else f"{r['off_corpus_hits']} hits"
            cells = [verdict] + [""] * (len(methods) - 1)
        query = r["query"].replace("|", "\\|")
        lines.append(f"| {r['id']} | {r['lang']} | {r['kind']} | {query} | " + " | ".join(cells) + " |")
    summary = labelled_summary(rows, methods)
    keys = list(next(iter(summary.values())))
    lines += ["", "| method | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    for m in methods:
        lines.append(f"| {METHOD_NAMES[m]} | " + " | ".join(f"{summary[m][k]:.3f}" for k in keys) + " |")
    off = [r for r in rows if not r["expected"]]
    if off:
        ok = sum(1 for r in off if r["off_corpus_hits"] == 0)
        lines += ["", f"Off-corpus queries answered with no results (no_answer): {ok}/{len(off)}."]
    return "\n".join(lines)


def format_dataset(summaries: dict[str, dict[str, float]]) -> str:
    """Return the markdown metric table for a dataset run."""
    keys = ["nDCG@10", "MRR@10", "Recall@100"] + [f"hit@{k}" for k in HIT_KS]
    lines = ["| method | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    for name, metrics in summaries.items():
        lines.append(f"| {name} | " + " | ".join(f"{metrics[k]:.3f}" for k in keys) + " |")
    return "\n".join(lines)


# === CLI ===


def _settings(args: argparse.Namespace, docs_dir: str) -> docs_qa.Settings:
    live = args.embeddings == "live"
    return docs_qa.Settings(
        docs_dir=docs_dir, cache_dir=args.cache_dir, base_url=args.base_url,
        embed_model=args.embed_model, embed_mock=not live and args.embeddings == "mock",
        use_embeddings=args.embeddings != "off", limit=args.limit, pool_factor=args.pool_factor,
        rrf_k=args.rrf_k, k1=args.k1, b=args.b, chunk_chars=args.chunk_chars,
        per_document_limit=docs_qa.MAX_LIMIT, timeout_s=args.timeout, embed_batch=args.embed_batch)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--queries", help="labelled JSONL (needs --docs)")
    src.add_argument("--dataset", nargs="+", metavar="DIR",
                     help="one or more folders with docs/, queries.jsonl, qrels.tsv; with several, "
                          "a summary table of all of them ends the output")
    p.add_argument("--docs", help="docs folder for --queries")
    p.add_argument("--embeddings", choices=("mock", "live", "off"), default="mock")
    p.add_argument("--base-url", default=docs_qa.DEFAULT_BASE_URL)
    p.add_argument("--embed-model", default=docs_qa.DEFAULT_EMBED_MODEL)
    p.add_argument("--cache-dir", default=None, help="sqlite cache folder (reuse vectors across runs)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per embedding request")
    p.add_argument("--embed-batch", type=int, default=docs_qa.DEFAULT_EMBED_BATCH)
    p.add_argument("--limit", type=int, default=docs_qa.DEFAULT_LIMIT)
    p.add_argument("--pool-factor", type=int, default=docs_qa.DEFAULT_POOL_FACTOR)
    p.add_argument("--rrf-k", type=int, default=docs_qa.DEFAULT_RRF_K)
    p.add_argument("--k1", type=float, default=docs_qa.DEFAULT_K1)
    p.add_argument("--b", type=float, default=docs_qa.DEFAULT_B)
    p.add_argument("--chunk-chars", type=int, default=docs_qa.DEFAULT_CHUNK_CHARS)
    p.add_argument("--anchors", "--bm25s", action="store_true",
                   help="also rank datasets with the lexical anchors (rank_bm25, bm25s, bm25s + "
                        "Snowball, SQLite FTS5, FTS5 + Porter); an absent library is skipped")
    p.add_argument("--out", help="write the markdown section here (else stdout)")
    p.add_argument("--title", default=None)
    p.add_argument("--svg-dir", help="also write SVG charts here (svg_charts.py: demo-ranks.svg, ndcg-by-collection.svg)")
    return p


def run_one_dataset(folder: str, args: argparse.Namespace,
                    methods: list[str]) -> tuple[docs_qa.Settings, dict[str, dict[str, float]], int, int]:
    """Return (settings, row name -> metrics, query count, questions the gate refused) for
    one dataset folder (every judged question has an answer there)."""
    docs_dir, queries = load_dataset(folder)
    settings = _settings(args, docs_dir)
    per_method = run_dataset(queries, settings)
    refused = sum(1 for ranking in per_method["gated"].values() if not ranking)
    summaries = {METHOD_NAMES[m]: dataset_summary(per_method[m], queries) for m in methods + ["gated"]
                 if m in per_method}
    if args.anchors:
        for name, found in anchor_rankings(docs_dir, queries).items():
            if found is None:
                summaries[f"{name}: not installed, skipped"] = None
            else:
                summaries[found[0]] = dataset_summary(found[1], queries)
    return settings, summaries, len(queries), refused


def format_collections(results: dict[str, dict[str, dict[str, float] | None]], methods: list[str]) -> str:
    """Return one nDCG@10 row per collection: each anchor, then docs-qa's methods; the best
    lexical figure of the row in bold."""
    columns: list[str] = []
    for summaries in results.values():
        for name in summaries:
            if name not in columns and name not in METHOD_NAMES.values():
                columns.append(name)
    columns += [METHOD_NAMES[m] for m in methods + ["gated"]]
    lexical = [c for c in columns if c not in (METHOD_NAMES["dense"], METHOD_NAMES["rrf"])]
    lines = ["| collection | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for coll, summaries in results.items():
        values = {c: summaries[c]["nDCG@10"] for c in columns if summaries.get(c)}
        best = max((values[c] for c in lexical if c in values), default=None)
        cells = []
        for c in columns:
            if c not in values:
                cells.append("—")
            elif c in lexical and round(values[c], 3) == round(best, 3):
                cells.append(f"**{values[c]:.3f}**")
            else:
                cells.append(f"{values[c]:.3f}")
        lines.append(f"| {coll} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    started = time.time()
    methods = ["bm25", "dense", "rrf"] if args.embeddings != "off" else ["bm25"]
    model = {"mock": "EMBED_MOCK (not semantic)", "off": "none",
             "live": f"{args.embed_model} at {args.base_url}"}[args.embeddings]
    if args.queries:
        if not args.docs:
            print("--queries needs --docs", file=sys.stderr)
            return 2
        settings = _settings(args, args.docs)
        rows = run_labelled(load_jsonl(args.queries), settings)
        body = format_labelled(rows, methods, settings.candidate_limit)
        if args.svg_dir:
            chart = svg_charts.save_rank_chart(args.svg_dir, rows, methods, DEPTH, METHOD_NAMES,
                                               "embeddings: " + model.split(" at ")[0])
    else:
        parts, results = [], {}
        for folder in args.dataset:
            settings, summaries, n_queries, refused = run_one_dataset(folder, args, methods)
            name = os.path.basename(os.path.normpath(folder))
            results[name] = summaries
            shown = {k: v for k, v in summaries.items() if v is not None}
            skipped = [k for k, v in summaries.items() if v is None]
            if args.svg_dir:
                chart = svg_charts.save_ndcg_chart(args.svg_dir, name, shown, model.split(" at ")[0])
            parts.append(f"#### {name}\n\n{n_queries} judged queries; the no-answer gate refused "
                         f"{refused} ({refused / max(n_queries, 1):.1%}), each answerable."
                         + (f" Skipped: {'; '.join(skipped)}." if skipped else "")
                         + "\n\n" + format_dataset(shown))
        if len(args.dataset) > 1:
            parts.insert(0, "nDCG@10, one run; bold = the best lexical figure of the row.\n\n"
                         + format_collections(results, methods))
        body = "\n\n".join(parts)
    command = shlex.join(sys.argv[1:] if argv is None else argv)
    header = [f"### {args.title or (args.queries or ', '.join(args.dataset))}", "",
              f"- command: `python3 reports/eval_retrieval.py {command}`",
              f"- date: {datetime.date.today().isoformat()}; run time {time.time() - started:.0f} s",
              f"- embeddings: {model}",
              f"- settings: k1={settings.k1} b={settings.b} k3={docs_qa.BM25_K3} rrf_k={settings.rrf_k} "
              f"pool={settings.candidate_limit}/method (limit {settings.limit} x pool_factor "
              f"{settings.pool_factor}) chunk_chars={settings.chunk_chars} "
              f"tokenizer={docs_qa.TOKENIZER_VERSION}", "", ""]
    if args.svg_dir:
        link = os.path.relpath(chart, os.path.dirname(os.path.abspath(args.out or "x")))
        body += f"\n\n![{os.path.basename(chart)[:-4]}]({link})"
    text = "\n".join(header) + body + "\n"
    if args.out:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
