#!/usr/bin/env python3
"""check_tokenizer — prove that the index terms did not change: the working tree's parse
against a reference revision's, document by document, chunk by chunk, term by term.

    python3 reports/check_tokenizer.py --reference REV DOCS [DOCS ...]

For every document of every DOCS folder (as the walk finds them) both sides print one line
per document (content hash, title, url, chunk count) and one per chunk: its lines, breadcrumb,
text, level-1 heading lines, its postings counts in order with its length
(bm25_term_counts, as the indexer counts them), the tokenizer's terms of its text
(Tokenizer.tokens, as a removed file's terms are recomputed) and the terms of its first line
read as a question (text_query_counts). The reference is REV's docs_qa.py and
retrieval_contract.py, taken from Git into a temporary folder; each side runs in its own
process. Every line must be equal; the first differences are shown. Exit 0 when none
differ, 1 otherwise. Standard library only; needs `git` for the reference.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = ("docs_qa.py", "retrieval_contract.py")
SHOWN_DIFFERENCES = 5

# run by each side: argv = [its folder, DOCS]; one JSON line per document and per chunk
SIDE = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
import docs_qa as d
entries, _ = d.corpus_walk(sys.argv[2])
tokenizer, out = d.Tokenizer(), sys.stdout
for entry in entries:
    text, skip = d.corpus_read(entry, d.MAX_FILE_BYTES)
    if text is None:
        out.write(json.dumps([entry.rel_path, "skip", skip]) + "\n")
        continue
    doc = d.chunk_parse(entry.rel_path, text, d.DEFAULT_CHUNK_CHARS)
    out.write(json.dumps([entry.rel_path, "doc", d._blake2b_hex(text), doc.title, doc.url,
                          len(doc.chunks)]) + "\n")
    for n, (chunk, heads) in enumerate(zip(doc.chunks, doc.heads)):
        counts, length = d.bm25_term_counts(chunk.text, tokenizer, heads)
        first_line = chunk.text.split("\n", 1)[0]
        out.write(json.dumps([entry.rel_path, n, chunk.start_line, chunk.end_line, chunk.sections,
                              chunk.text, heads, list(counts.items()), length,
                              tokenizer.tokens(chunk.text),
                              list(d.text_query_counts(first_line).items())],
                             ensure_ascii=False) + "\n")
'''


def reference_tree(rev: str, folder: str) -> str:
    """Write REV's modules into folder; return it (SystemExit when Git cannot show them)."""
    for name in MODULES:
        shown = subprocess.run(["git", "show", f"{rev}:{name}"], cwd=REPO, capture_output=True)
        if shown.returncode != 0:
            raise SystemExit(f"git show {rev}:{name} failed: {shown.stderr.decode(errors='replace').strip()}")
        with open(os.path.join(folder, name), "wb") as fh:
            fh.write(shown.stdout)
    return folder


def side_lines(tree: str, docs: str) -> list[str]:
    """Return the lines SIDE prints for docs with the modules of tree."""
    proc = subprocess.run([sys.executable, "-c", SIDE, tree, docs], capture_output=True, text=True,
                          encoding="utf-8", env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    if proc.returncode != 0:
        raise SystemExit(f"{tree} on {docs} failed:\n{proc.stderr[-2000:]}")
    return proc.stdout.splitlines()


def describe(old: str, new: str) -> str:
    """Return what differs between two lines of SIDE's output, field by field."""
    a, b = json.loads(old), json.loads(new)
    fields = [f"  field {i}: {json.dumps(x, ensure_ascii=False)[:300]}\n"
              f"       now: {json.dumps(y, ensure_ascii=False)[:300]}" for i, (x, y) in enumerate(zip(a, b)) if x != y]
    return f"{a[0]} {a[1]}\n" + "\n".join(fields or ["  (lengths differ)"])


def compare(reference: str, docs: str) -> tuple[int, int, int, list[str]]:
    """Return (documents, chunks, (chunk, term) pairs, differences) for one folder."""
    old, new = side_lines(reference, docs), side_lines(REPO, docs)
    differences = [describe(a, b) for a, b in zip(old, new) if a != b]
    if len(old) != len(new):
        differences.append(f"line counts differ: {len(old)} before, {len(new)} now")
    rows = [json.loads(line) for line in new]
    chunks = [row for row in rows if row[1] not in ("doc", "skip")]
    documents = sum(1 for row in rows if row[1] == "doc")
    return documents, len(chunks), sum(len(row[7]) for row in chunks), differences


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs", nargs="+", help="folders of documents")
    parser.add_argument("--reference", default="HEAD", metavar="REV",
                        help="the Git revision whose parse is the reference (default: HEAD)")
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory(prefix="check-tokenizer-") as folder:
        reference = reference_tree(args.reference, folder)
        print(f"reference: {args.reference}; now: the working tree")
        print("| folder | documents | chunks | (chunk, term) pairs | differences |\n|---|---|---|---|---|")
        for docs in args.docs:
            documents, chunks, pairs, differences = compare(reference, os.path.abspath(docs))
            print(f"| `{docs}` | {documents} | {chunks} | {pairs} | {len(differences)} |", flush=True)
            for text in differences[:SHOWN_DIFFERENCES]:
                print(text, file=sys.stderr)
            failed = failed or bool(differences)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
