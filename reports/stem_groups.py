#!/usr/bin/env python3
"""Print words that a stemmer merges, to read by hand: the words of a folder's documents
grouped by their stem, groups of two or more, a seeded random sample.

    python3 reports/stem_groups.py DOCS --stemmer polish|slovak|other [--sample 50] [--seed 1]

Each line is `stem: word word ...` (words folded as the index folds them). Reading a line
tells whether the stemmer joined forms of one word (kasa kasy kasie) or different words.
Standard library only; the folder is only read.
"""

from __future__ import annotations

import argparse
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
import docs_qa  # noqa: E402
import retrieval_contract as rc  # noqa: E402

STEMMERS = {"polish": docs_qa.text_stem_polish, "slovak": docs_qa.text_stem_slovak,
            "other": docs_qa.text_stem}


def folder_words(docs: str) -> set[str]:
    """Return the folded words of the folder's documents (stop words and words with digits left out)."""
    words: set[str] = set()
    entries, _ = docs_qa.corpus_walk(docs)
    for entry in entries:
        text, _ = docs_qa.corpus_read(entry, docs_qa.MAX_FILE_BYTES)
        words.update(w for w in docs_qa.text_folded_words(text or "") if w.isalpha() and w not in rc.STOP_WORDS)
    return words


def merged_groups(words: set[str], stem) -> dict[str, list[str]]:
    """Return stem -> its words, for stems that two or more words share."""
    groups: dict[str, list[str]] = {}
    for word in sorted(words):
        groups.setdefault(stem(word), []).append(word)
    return {s: ws for s, ws in groups.items() if len(ws) > 1}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("docs")
    parser.add_argument("--stemmer", choices=sorted(STEMMERS), required=True)
    parser.add_argument("--sample", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    words = folder_words(args.docs)
    groups = merged_groups(words, STEMMERS[args.stemmer])
    print(f"# {len(words)} words, {len(groups)} merged groups; {min(args.sample, len(groups))} "
          f"sampled (seed {args.seed})")
    for stem in sorted(random.Random(args.seed).sample(sorted(groups), min(args.sample, len(groups)))):
        print(f"{stem}: {' '.join(groups[stem])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
