#!/usr/bin/env python3
"""Reshape a folder of documents, to measure docs-qa on folder shapes other than the one it was
tuned on: the same text, laid out another way.

    python3 reports/make_shapes.py DOCS OUT --shape large-files [--files 40]
    python3 reports/make_shapes.py DOCS OUT --shape folder-per-document

- large-files: DOCS's documents (in path order) concatenated into --files files of about
  equal length, each document starting on a new line: a folder of a few long manuals.
- folder-per-document: each document alone as OUT/A/B/N/page.md (A and B spread the N
  folders over two levels): a site whose every page is a folder (Hugo page bundles).

OUT must not exist yet. Then, for example:
    python3 reports/bench_index.py OUT --anchor-python VENV/bin/python --no-profile --embed-files 0
Standard library only.
"""

from __future__ import annotations

import argparse
import os
import sys

SUFFIXES = (".md", ".markdown", ".txt")
SPREAD = (37, 29)                   # folders of the two upper levels (primes: an even spread)


def documents(root: str) -> list[str]:
    """Return the paths of root's documents, sorted, hidden entries left out."""
    found = []
    for folder, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        found += [os.path.join(folder, n) for n in sorted(names)
                  if n.lower().endswith(SUFFIXES) and not n.startswith(".")]
    return found


def read(path: str) -> bytes:
    with open(path, "rb") as fh:
        data = fh.read()
    return data if data.endswith(b"\n") or not data else data + b"\n"


def large_files(paths: list[str], out: str, n_files: int) -> int:
    """Write paths' documents into n_files files of about equal length; return how many."""
    total = sum(os.path.getsize(p) for p in paths)
    target, written, part, held = -(-total // max(1, n_files)), 0, None, 0
    try:
        for path in paths:
            if part is None or (held >= target and written < n_files):
                if part is not None:
                    part.close()
                part = open(os.path.join(out, f"part{written:03}.md"), "wb")
                written, held = written + 1, 0
            held += part.write(read(path))
    finally:
        if part is not None:
            part.close()
    return written


def folder_per_document(paths: list[str], out: str) -> int:
    """Write each document as out/A/B/N/page.md; return how many."""
    for number, path in enumerate(paths):
        folder = os.path.join(out, str(number % SPREAD[0]), str(number // SPREAD[0] % SPREAD[1]), str(number))
        os.makedirs(folder)
        with open(os.path.join(folder, "page.md"), "wb") as fh:
            fh.write(read(path))
    return len(paths)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("docs", help="the folder whose documents are reshaped (read only)")
    parser.add_argument("out", help="the folder to create")
    parser.add_argument("--shape", required=True, choices=("large-files", "folder-per-document"))
    parser.add_argument("--files", type=int, default=40, help="large-files: how many files (default 40)")
    args = parser.parse_args(argv)
    if args.files < 1:
        parser.error("--files must be 1 or more")
    paths = documents(args.docs)
    if not paths:
        parser.error(f"no documents ({', '.join(SUFFIXES)}) under {args.docs}")
    try:
        os.makedirs(args.out)
    except OSError as exc:
        parser.error(f"cannot create {args.out}: {exc.strerror}")
    if args.shape == "large-files":
        made = large_files(paths, args.out, args.files)
    else:
        made = folder_per_document(paths, args.out)
    print(f"{len(paths)} documents -> {made} files in {args.out} ({args.shape})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
