#!/usr/bin/env python3
"""Measure answers on a question set written the way people ask: right page, cited lines,
the keys an answer must hold, refusals, units, time, and how well the confidence tells.

    python3 reports/eval_answers.py DATASET [--lang pl sk en] [--embeddings off|live]
        [--base-url URL --embed-model NAME] [--code DIR] [--show N] [--out FILE.json]

DATASET holds one folder per language, each with `docs/` and `questions.jsonl` (the layout
of the docsqa-dev set: id, question, kind, answers [{path, start, end}], keys). Questions of
kind `none` are off-topic: the tool should refuse them (status no_answer).

Per language (answerable questions unless said):
- page first / top 5: an answering page is the first, or among the first five, distinct
  pages of the returned fragments;
- cites lines: a valid citation of the answer overlaps an answering range;
- keys: the answer text holds every key as a case-sensitive substring after whitespace runs
  are folded to one space (both sides);
- keys in the fragments: every key occurs so in one of the returned fragments, so the answer
  could have quoted it (keys found but not in the answer are lost in choosing the quote,
  keys not found are lost in ranking);
- off-topic refused (of the `none` questions), answerable refused;
- units: the answer's quoted units (bullets of the extractive answer, or valid citations);
- time: the median seconds of one answer (index built before, not timed);
- calibration, when envelopes carry `confidence` (an optional v1 field): of the answers
  shown as confident (level high), the share holding the keys; of the answers missing the
  keys, the share shown as weak (level low, or a `weak_answer` note) or refused.

--embeddings off (default) ranks by BM25 alone and answers extractively; live uses the
OpenAI-compatible embedding server at --base-url (for example the lmstub). --code DIR
imports docs_qa.py from DIR (a checkout of another commit) so one command measures before
and after. Standard library only; nothing is written into DATASET (the index goes to a
temporary folder).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict

LANGS = ("pl", "sk", "en")
BULLET = re.compile(r"^(?:- |\d+\. )", re.M)


def load_questions(folder: str) -> list[dict]:
    """Return the question records of one language folder."""
    with open(os.path.join(folder, "questions.jsonl"), encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def fold_space(text: str) -> str:
    """Return text with every whitespace run as one space, trimmed."""
    return " ".join(text.split())


def pages_in_order(envelope: dict) -> list[str]:
    """Return the distinct document paths of the returned sources, best first."""
    seen: list[str] = []
    for source in envelope.get("sources") or []:
        path = source.get("document_path")
        if path and path not in seen:
            seen.append(path)
    return seen


def cites_answer(envelope: dict, ranges: list[dict]) -> bool:
    """Return True when a valid citation overlaps an answering range of the same file."""
    for cite in envelope.get("citations") or []:
        if not cite.get("valid", True):
            continue
        for want in ranges:
            if cite.get("path") == want["path"] and cite.get("start_line", 0) <= want["end"] \
                    and cite.get("end_line", 0) >= want["start"]:
                return True
    return False


def keys_in_sources(envelope: dict, keys: list[str]) -> bool:
    """Return True when every key occurs (whitespace-normalised) in one of the returned
    fragments' texts: the answer could have quoted it. Keys found but missing from the answer
    are lost in choosing the quote; keys not found, in ranking."""
    texts = [fold_space(source.get("text") or "") for source in envelope.get("sources") or []]
    return bool(keys) and all(any(fold_space(key) in text for text in texts) for key in keys)


def answer_units(envelope: dict) -> int:
    """Return how many units the answer quotes: its bullets, else its valid citations."""
    text = envelope.get("answer") or ""
    bullets = len(BULLET.findall(text))
    return bullets or sum(1 for c in envelope.get("citations") or [] if c.get("valid", True))


def is_weak(envelope: dict) -> bool | None:
    """Return True when the envelope marks its answer weak, False when confident, None when
    it carries no confidence at all (older code)."""
    confidence = envelope.get("confidence")
    notes = {n.get("code") for n in envelope.get("notes") or [] if isinstance(n, dict)}
    if "weak_answer" in notes:
        return True
    if isinstance(confidence, dict) and confidence.get("level") in ("high", "low"):
        return confidence["level"] == "low"
    return None


def ask(docs_qa, question: str, settings) -> tuple[dict, float]:
    """Return the rag envelope of one question as a dict, and the seconds it took."""
    start = time.perf_counter()
    result = docs_qa.answer(question, settings)
    seconds = time.perf_counter() - start
    return docs_qa.to_envelope(result).to_dict(), seconds


def require_embeddings(what: str, note_codes: list[str]) -> None:
    """Stop the run when --embeddings live fell back to BM25 (the server down or still
    starting): its rows would be BM25's, printed as hybrid."""
    if "embeddings_unavailable" in note_codes:
        raise SystemExit(f"eval_answers: {what}: the embedding server did not answer "
                         "(embeddings_unavailable); a live run must not report BM25 as hybrid")


def score_language(docs_qa, folder: str, settings_for, show: int) -> tuple[dict, list[dict]]:
    """Return the measures of one language and one row per question."""
    settings = settings_for(os.path.join(folder, "docs"))
    stats = docs_qa.index_folder(settings)
    if settings.use_embeddings:
        require_embeddings(folder, [note.code for note in stats.notes])
    rows = []
    for record in load_questions(folder):
        envelope, seconds = ask(docs_qa, record["question"], settings)
        if settings.use_embeddings:
            require_embeddings(record["id"], [n.get("code") for n in envelope.get("notes") or []])
        pages = pages_in_order(envelope)
        wanted = {a["path"] for a in record["answers"]}
        answer_text = fold_space(envelope.get("answer") or "")
        rows.append({
            "id": record["id"], "kind": record["kind"], "question": record["question"],
            "status": envelope.get("status"), "reason": envelope.get("reason"),
            "page_first": bool(pages[:1]) and pages[0] in wanted,
            "page_top5": bool(wanted & set(pages[:5])),
            "cites": cites_answer(envelope, record["answers"]),
            "keys": bool(record["keys"]) and all(fold_space(k) in answer_text for k in record["keys"]),
            "keys_found": keys_in_sources(envelope, record["keys"]),
            "units": answer_units(envelope), "seconds": seconds, "weak": is_weak(envelope),
            "confidence": envelope.get("confidence"), "answer": envelope.get("answer") or ""})
    return summarise(rows), rows


def summarise(rows: list[dict]) -> dict:
    """Return the counts of one language's rows."""
    answerable = [r for r in rows if r["kind"] != "none"]
    off_topic = [r for r in rows if r["kind"] == "none"]
    answered = [r for r in answerable if r["status"] == "ok"]
    marked = [r for r in rows if r["status"] == "ok" and r["weak"] is not None]
    confident = [r for r in answerable if r["status"] == "ok" and r["weak"] is False]
    missing = [r for r in answerable if not r["keys"]]
    return {
        "answerable": len(answerable), "off_topic": len(off_topic),
        "page_first": sum(r["page_first"] for r in answerable),
        "page_top5": sum(r["page_top5"] for r in answerable),
        "cites": sum(r["cites"] for r in answerable),
        "keys": sum(r["keys"] for r in answerable),
        "keys_found": sum(r.get("keys_found", False) for r in answerable),
        "off_topic_refused": sum(r["status"] == "no_answer" for r in off_topic),
        "answerable_refused": sum(r["status"] == "no_answer" for r in answerable),
        "units_median": statistics.median([r["units"] for r in answered]) if answered else 0,
        "seconds_median": statistics.median([r["seconds"] for r in rows]) if rows else 0.0,
        "has_confidence": bool(marked),
        "confident": len(confident), "confident_with_keys": sum(r["keys"] for r in confident),
        "missing_keys": len(missing),
        "missing_keys_flagged": sum(r["status"] == "no_answer" or r["weak"] is True for r in missing),
        "off_topic_confident": sum(r["status"] == "ok" and r["weak"] is False for r in off_topic),
    }


def confidence_auc(rows: list[dict]) -> tuple[float | None, int, int]:
    """Return how well the confidence score tells answers that hold the keys from those that
    do not (the area under the ROC curve: the chance that a random answer holding them scores
    above a random one missing them, ties counting half; 0.5 is chance), with the two counts;
    None when either group is empty. Only answered answerable questions with a score count."""
    scored = [(r["confidence"]["score"], r["keys"]) for r in rows
              if r["kind"] != "none" and r["status"] == "ok" and r.get("confidence")]
    right = [score for score, keys in scored if keys]
    wrong = [score for score, keys in scored if not keys]
    if not right or not wrong:
        return None, len(right), len(wrong)
    wins = sum((a > b) + 0.5 * (a == b) for a in right for b in wrong)
    return wins / (len(right) * len(wrong)), len(right), len(wrong)


def ratio(part: int, whole: int) -> str:
    """Return 'part/whole (pct %)'."""
    return f"{part}/{whole} ({100 * part / whole:.0f} %)" if whole else "0/0"


def markdown_table(results: dict[str, dict]) -> str:
    """Return the per-language measures as a Markdown table."""
    head = ("| lang | page first | page top 5 | cites lines | keys | keys in the fragments | off-topic refused "
            "| answerable refused | units (median) | time (median) | confident with keys | misses shown weak or refused |")
    lines = [head, "|" + "---|" * 12]
    for lang, m in results.items():
        calibration = (ratio(m["confident_with_keys"], m["confident"]),
                       ratio(m["missing_keys_flagged"], m["missing_keys"]))
        if not m["has_confidence"]:
            calibration = ("no confidence", f"refused only: {ratio(m['missing_keys_flagged'], m['missing_keys'])}")
        n = m["answerable"]
        lines.append(f"| {lang} | {ratio(m['page_first'], n)} | {ratio(m['page_top5'], n)} | {ratio(m['cites'], n)} "
                     f"| {ratio(m['keys'], n)} | {ratio(m['keys_found'], n)} "
                     f"| {ratio(m['off_topic_refused'], m['off_topic'])} "
                     f"| {ratio(m['answerable_refused'], n)} | {m['units_median']:g} "
                     f"| {m['seconds_median']:.3f} s | {calibration[0]} | {calibration[1]} |")
    return "\n".join(lines)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", metavar="DATASET", help="folder with <lang>/docs and <lang>/questions.jsonl")
    parser.add_argument("--lang", nargs="+", default=list(LANGS), help="languages to run (default: pl sk en)")
    parser.add_argument("--embeddings", choices=("off", "live"), default="off",
                        help="off: BM25 only (default); live: the embedding server at --base-url")
    parser.add_argument("--base-url", default="http://127.0.0.1:1234/v1", help="embedding server (with live)")
    parser.add_argument("--embed-model", default=None, help="embedding model name (with live)")
    parser.add_argument("--code", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="folder whose docs_qa.py is measured (default: this repository)")
    parser.add_argument("--show", type=int, default=0, help="print N answers per language that miss a key")
    parser.add_argument("--out", help="also write every question's row to this JSON file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    sys.path.insert(0, os.path.abspath(args.code))
    import docs_qa
    results: dict[str, dict] = {}
    all_rows: dict[str, list[dict]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        def settings_for(docs: str):
            overrides = {"use_embeddings": args.embeddings == "live", "base_url": args.base_url}
            if args.embed_model:
                overrides["embed_model"] = args.embed_model
            return docs_qa.Settings(docs_dir=docs, cache_dir=os.path.join(tmp, os.path.basename(os.path.dirname(docs))),
                                    extractive=True, **overrides)
        for lang in args.lang:
            folder = os.path.join(args.dataset, lang)
            results[lang], all_rows[lang] = score_language(docs_qa, folder, settings_for, args.show)
    print(f"embeddings {args.embeddings}, code {os.path.basename(os.path.abspath(args.code))}")
    print(markdown_table(results))
    auc, right, wrong = confidence_auc([r for rows in all_rows.values() for r in rows])
    if auc is not None:
        print(f"\nConfidence as a test of holding the keys (all languages): AUC {auc:.2f} "
              f"({right} answers with the keys, {wrong} without; 0.5 is chance)")
    for lang, rows in all_rows.items():
        misses = [r for r in rows if r["kind"] != "none" and not r["keys"]][:args.show]
        for row in misses:
            print(f"\nMISS {row['id']} ({row['kind']}, {row['status']}) {row['question']}\n{row['answer']}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump({"summary": results, "rows": all_rows}, fh, ensure_ascii=False, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
