#!/usr/bin/env python3
"""Known-item benchmark of extractive answers: does the answer quote the lines that answer?

Usage (from the repository root; DOCS is the unpacked tldr-pages archive's docs/ folder):

    python3 reports/bench_answers.py DOCS --seed 2 [--code DIR] [--per-lang 60] [--pool 3000]

Pages are sampled with a seeded RNG, never picked by hand. For each sampled tldr page one
of its `- Description:` lines is drawn at random; the question is that description (the
list marker and final ':' removed) and the answering line is the command line it
introduces. The script also writes documentation-shaped pages of its own (PowerShell-like
`### Example N:` sections with a fenced block, numbered procedures, option tables) from
seeded word lists; their questions are an example title, a procedure heading or an
option's description, answered by the code block, the steps or the table row.

The corpus is the sampled target pages plus randomly sampled other pages of the same
languages up to --pool files (not all 38k pages), indexed BM25 only into a temporary
folder. --code DIR imports docs_qa.py from DIR (e.g. a checkout of main) so the same
command measures before and after. Standard library only.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import sys
import tempfile
from collections import defaultdict

LANG_DIRS = {"pl": "pages.pl", "cs": "pages.cs", "en": "pages"}
DESCRIPTION = re.compile(r"^- (.+):\s*$")
COMMAND = re.compile(r"^`(.+)`\s*$")


def tldr_pages(docs: str, folder: str) -> list[str]:
    """Return the relative paths of a language's pages, sorted."""
    out = []
    for root, _, files in os.walk(os.path.join(docs, folder)):
        out.extend(os.path.relpath(os.path.join(root, f), docs) for f in files if f.endswith(".md"))
    return sorted(out)


def tldr_items(text: str) -> list[tuple[str, int, str]]:
    """Return (description, 1-based command line, command) of each example of a page."""
    lines = text.split("\n")
    items = []
    for i, line in enumerate(lines):
        match = DESCRIPTION.match(line)
        if not match:
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        command = COMMAND.match(lines[j]) if j < len(lines) else None
        if command:
            items.append((match.group(1), j + 1, command.group(1)))
    return items


VERBS = ["Get", "Set", "Convert", "Export", "Import", "Remove", "Copy", "Test", "Start", "Stop",
         "Resolve", "Measure", "Rename", "Compare", "Register", "Publish"]
NOUNS = ["Path", "Item", "Service", "Process", "Archive", "Certificate", "Job", "Variable",
         "Module", "Snapshot", "Queue", "Tunnel", "Ledger", "Widget", "Mailbox", "Bucket"]
OBJECTS = ["a path to a string", "every hidden file in a folder", "the newest log entry",
           "a certificate by its thumbprint", "two folders recursively", "a stopped service",
           "the members of a group", "a module from a gallery", "a queue with a filter",
           "a snapshot older than a week", "the size of each bucket", "a remote mailbox quota",
           "a variable in the global scope", "a tunnel on a custom port", "a ledger to CSV",
           "widgets by their owner"]
PARAMS = ["-Path", "-Filter", "-Recurse", "-Force", "-Name", "-Scope", "-Port", "-Owner",
          "-Older", "-Depth", "-Encoding", "-Credential"]


def doc_pages(rng: random.Random, count: int) -> list[tuple[str, str, list[tuple[str, int, int]]]]:
    """Return (path, text, [(question, first answering line, last)]) documentation-shaped pages."""
    pages = []
    for n in range(count):
        kind = n % 3
        cmdlet = f"{rng.choice(VERBS)}-{rng.choice(NOUNS)}{n}"
        if kind == 0:
            lines, items = [f"# {cmdlet}", "", f"Runs {cmdlet} against local or remote targets.", ""], []
            for k, obj in enumerate(rng.sample(OBJECTS, 4), 1):
                verb = rng.choice(VERBS).lower()
                lines += [f"### Example {k}: {verb.capitalize()} {obj}", "",
                          f"This example shows how to {verb} {obj} with {cmdlet}.", "", "```powershell"]
                start = len(lines) + 1
                for _ in range(rng.randint(1, 4)):
                    lines.append(f"PS C:\\> {cmdlet} {rng.choice(PARAMS)} {rng.choice(NOUNS).lower()}"
                                 f" {rng.choice(PARAMS)} {rng.randint(1, 99)}")
                items.append((f"{verb} {obj}", start, len(lines)))
                lines += ["```", ""]
        elif kind == 1:
            lines, items = [f"# {cmdlet} procedures", ""], []
            for obj in rng.sample(OBJECTS, 3):
                verb = rng.choice(VERBS).lower()
                lines += [f"## To {verb} {obj}", ""]
                start = len(lines) + 1
                for step in range(1, rng.randint(3, 6)):
                    lines.append(f"{step}. Run `{cmdlet} {rng.choice(PARAMS)}` and check the "
                                 f"{rng.choice(NOUNS).lower()} it reports.")
                items.append((f"how to {verb} {obj}", start, len(lines)))
                lines.append("")
        else:
            lines = [f"# {cmdlet} parameters", "", f"The parameters {cmdlet} accepts.", "",
                     "| Parameter | Description |", "| --- | --- |"]
            items = []
            for param, obj in zip(rng.sample(PARAMS, 5), rng.sample(OBJECTS, 5)):
                lines.append(f"| {param} | selects {obj} |")
                items.append((f"which {cmdlet} parameter selects {obj}", len(lines), len(lines)))
        pages.append((f"generated/{cmdlet.lower()}.md", "\n".join(lines) + "\n", items))
    return pages


def build_corpus(docs: str, out: str, rng: random.Random, per_lang: int, pool: int
                 ) -> list[tuple[str, str, str, int, int, str]]:
    """Copy the sampled pages into out; return the questions (lang, question, path, first,
    last, command-or-empty)."""
    questions, chosen, every = [], set(), []
    for lang, folder in LANG_DIRS.items():
        pages = tldr_pages(docs, folder)
        every.extend(pages)
        items_of = {}
        for path in pages:
            with open(os.path.join(docs, path), encoding="utf-8") as fh:
                items_of[path] = tldr_items(fh.read())
        # a known item must be knowable: descriptions shared by several pages (alias pages'
        # "View documentation for the original command") are left out
        seen = defaultdict(int)
        for items in items_of.values():
            for desc in {d.casefold() for d, _, _ in items}:
                seen[desc] += 1
        targets = []
        for path in rng.sample(pages, len(pages)):
            items = [item for item in items_of[path] if seen[item[0].casefold()] == 1]
            if items:
                desc, line, command = rng.choice(items)
                questions.append((lang, desc, path, line, line, command))
                targets.append(path)
            if len(targets) == per_lang:
                break
        chosen.update(targets)
    for path in rng.sample(every, len(every)):
        if len(chosen) >= pool:
            break
        chosen.add(path)
    for path in sorted(chosen):
        os.makedirs(os.path.dirname(os.path.join(out, path)), exist_ok=True)
        shutil.copyfile(os.path.join(docs, path), os.path.join(out, path))
    for path, text, items in doc_pages(rng, per_lang // 2):
        os.makedirs(os.path.dirname(os.path.join(out, path)), exist_ok=True)
        with open(os.path.join(out, path), "w", encoding="utf-8") as fh:
            fh.write(text)
        questions.extend(("doc", q, path, a, b, "") for q, a, b in [rng.choice(items)])
    return questions


def fenced_verbatim(docs_qa, answer: str, folder: str) -> bool:
    """Return True when every fenced block of answer is a run of the lines of the file
    cited last before it (a tldr command line counts without its backticks). Citations are
    read by docs_qa's own parser: a path such as `[.md` is cited quoted."""
    for match in re.finditer(r"^```[^\n]*\n(.*?)\n```", answer, flags=re.S | re.M):
        cites = docs_qa.citation_parse(answer[:match.start()])
        if not cites:
            return False
        with open(os.path.join(folder, cites[-1].path), encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        plain = [COMMAND.sub(r"\1", line) for line in lines]
        body = match.group(1).split("\n")
        if not any(plain[i:i + len(body)] == body or lines[i:i + len(body)] == body
                   for i in range(len(lines))):
            return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("docs", help="the tldr-pages docs/ folder")
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--per-lang", type=int, default=60)
    parser.add_argument("--pool", type=int, default=3000, help="pages indexed per run")
    parser.add_argument("--code", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="folder whose docs_qa.py is measured (default: this repository)")
    parser.add_argument("--show-misses", type=int, default=0)
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.code))
    import docs_qa
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "docs")
        questions = build_corpus(args.docs, folder, rng, args.per_lang, args.pool)
        settings = docs_qa.Settings(docs_dir=folder, cache_dir=os.path.join(tmp, "cache"),
                                    use_embeddings=False, extractive=True)
        docs_qa.index_folder(settings)
        stats: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        misses = []
        for lang, question, path, first, last, _command in questions:
            result = docs_qa.answer(question, settings)
            hits = result.search.hits
            cites = [c for c in result.citations if c.valid and c.path == path]
            cited = any(c.start_line <= first and last <= c.end_line for c in cites)
            top = bool(hits) and hits[0].chunk.path == path
            row = stats[lang]
            row["questions"] += 1
            row["page_first"] += top
            row["cited"] += cited
            row["cited_when_first"] += cited and top
            row["fenced_verbatim"] += fenced_verbatim(docs_qa, result.answer, folder)
            if top and not cited or not top and args.show_misses < 0:
                misses.append((lang, question, path, first, result.answer))
    print(f"seed {args.seed}, {len(questions)} questions, code {os.path.basename(os.path.abspath(args.code))}")
    print("| lang | questions | right page first | answering lines cited | cited when page first "
          "| fenced blocks verbatim |")
    print("|---|---|---|---|---|---|")
    for lang, row in stats.items():
        n, first_n = row["questions"], row["page_first"]
        print(f"| {lang} | {n} | {first_n}/{n} | {row['cited']}/{n} | "
              f"{row['cited_when_first']}/{first_n} ({100 * row['cited_when_first'] / max(first_n, 1):.0f}%) "
              f"| {row['fenced_verbatim']}/{n} |")
    for lang, question, path, line, answer in misses[:abs(args.show_misses)]:
        print(f"\nMISS {lang} {question!r} {path}:{line}\n{answer}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
