#!/usr/bin/env python3
"""Build the check sets: documentation this machine already has, with the questions in
reports/check-sets/, in the layout reports/eval_answers.py reads (SET/LANG/docs and
SET/LANG/questions.jsonl). The questions were written for reports/answers-real-docs.md
("Three more documentation sets"); the documents are not shipped, they are copied from
where the software installed them:

- pyenv (en): pyenv's README, command reference, contributing notes, changelogs and plugin
  READMEs (--pyenv-root, default ~/.pyenv);
- npm (en): npm's own documentation pages (--npm-docs, default
  /usr/lib/node_modules/npm/docs/content);
- plman (pl): the Polish manual pages (--man-pl, default /usr/share/man/pl), rendered to text
  by groff (its -k preprocessor for UTF-8), section titles made '## ' headings, every line's
  indent and repeated spaces taken off, so options and their descriptions are prose;
- enman (en): 57 English manual pages of everyday commands (ENMAN_PAGES; --man-en, default
  /usr/share/man), rendered the same way; its questions were written by a session that never
  ran the tool (reports/answers-real-docs.md, thirteenth round).

    python3 reports/make_check_sets.py OUT [--sets pyenv npm plman enman]
    python3 reports/eval_answers.py OUT/npm --lang en

A set whose source is missing (or a manual-page set without groff) is skipped with a line
saying why. OUT/SET must not exist yet. Standard library only (groff is run for plman and enman).
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
QUESTIONS = os.path.join(HERE, "check-sets")
PYENV_FILES = ("README.md", "COMMANDS.md", "CHANGELOG.md", "CONTRIBUTING.md", "MAINTENANCE.md",
               "plugins/python-build/README.md", "plugins/pyenv-doctor/README.md",
               "plugins/pyenv-update/README.md", "plugins/pyenv-virtualenv/README.md",
               "plugins/pyenv-virtualenv/CHANGELOG.md")
ENMAN_PAGES = ("base64.1 basename.1 chmod.1 chown.1 cp.1 cut.1 date.1 df.1 diff.1 dirname.1 du.1 env.1 "
               "file.1 find.1 free.1 grep.1 gzip.1 head.1 kill.1 less.1 ln.1 ls.1 md5sum.1 mkdir.1 mv.1 "
               "nice.1 nl.1 nohup.1 patch.1 pgrep.1 pkill.1 ps.1 readlink.1 realpath.1 rm.1 rmdir.1 sed.1 "
               "seq.1 sha256sum.1 sort.1 split.1 stat.1 tail.1 tar.1 tee.1 timeout.1 touch.1 tr.1 uniq.1 "
               "uptime.1 watch.1 wc.1 which.1 xargs.1 groupadd.8 useradd.8 usermod.8").split()
SETS = {"pyenv": "en", "npm": "en", "plman": "pl", "enman": "en"}
_MAN_SECTION = re.compile(r"^[A-ZĄĆĘŁŃÓŚŹŻ][A-ZĄĆĘŁŃÓŚŹŻ0-9 ()/,-]+$")
_MAN_RUNNING_HEAD = re.compile(r"^\S.*\(\d\)\s*$")


class Skipped(Exception):
    """A set cannot be built here; the message says why."""


def build_pyenv(source: str, docs: str) -> int:
    """Copy pyenv's documentation files from source into docs; return how many."""
    found = [rel for rel in PYENV_FILES if os.path.isfile(os.path.join(source, rel))]
    if "README.md" not in found:
        raise Skipped(f"no pyenv README.md under {source}")
    for rel in found:
        os.makedirs(os.path.dirname(os.path.join(docs, rel)), exist_ok=True)
        shutil.copyfile(os.path.join(source, rel), os.path.join(docs, rel))
    return len(found)


def build_npm(source: str, docs: str) -> int:
    """Copy npm's documentation pages (*.md under source) into docs; return how many."""
    if not os.path.isdir(os.path.join(source, "commands")):
        raise Skipped(f"no npm documentation (commands/) under {source}")
    count = 0
    for folder, _, names in os.walk(source):
        for name in sorted(n for n in names if n.endswith(".md")):
            rel = os.path.relpath(os.path.join(folder, name), source)
            os.makedirs(os.path.dirname(os.path.join(docs, rel)), exist_ok=True)
            shutil.copyfile(os.path.join(folder, name), os.path.join(docs, rel))
            count += 1
    return count


def man_text(rendered: str, name: str) -> str:
    """Return a manual page rendered by groff as markdown-like text: '# name', its section
    titles as '## ' headings, each line without its indent or repeated spaces, the running
    heads dropped, no more than one blank line in a row."""
    out = []
    for line in rendered.split("\n")[1:]:
        if _MAN_SECTION.match(line):
            out.append("\n## " + line.strip().capitalize() + "\n")
        elif not _MAN_RUNNING_HEAD.match(line):
            out.append(re.sub(r"\s{2,}", " ", line.strip()))
    return "# " + name + "\n" + re.sub(r"\n{3,}", "\n\n", "\n".join(out)) + "\n"


def build_plman(source: str, docs: str) -> int:
    """Render the manual pages under source (man*/*.gz) into docs as NAME.md; return how many."""
    pages = sorted(os.path.join(folder, n) for folder, _, names in os.walk(source) for n in names
                   if n.endswith(".gz")) if os.path.isdir(source) else []
    return render_man_pages(pages, source, docs)


def build_enman(source: str, docs: str) -> int:
    """Render the ENMAN_PAGES found under source (manN/NAME.N.gz) into docs; return how many."""
    pages = [os.path.join(source, "man" + name.rsplit(".", 1)[1], name + ".gz") for name in ENMAN_PAGES]
    return render_man_pages([page for page in pages if os.path.isfile(page)], source, docs)


def render_man_pages(pages: list[str], source: str, docs: str) -> int:
    """Render each gzipped manual page into docs as NAME.md (man_text); return how many."""
    groff = shutil.which("groff")
    if groff is None:
        raise Skipped("groff is not installed")
    if not pages:
        raise Skipped(f"no manual pages under {source}")
    os.makedirs(docs, exist_ok=True)
    for page in pages:
        with gzip.open(page, "rb") as fh:
            source_text = fh.read()
        rendered = subprocess.run([groff, "-k", "-Kutf8", "-Tutf8", "-mandoc", "-rHY=0", "-rLL=150n",
                                   "-P-c", "-P-b", "-P-u", "-P-o"], input=source_text,
                                  capture_output=True, check=False).stdout.decode("utf-8", "replace")
        name = os.path.basename(page)[:-3]
        with open(os.path.join(docs, name + ".md"), "w", encoding="utf-8") as fh:
            fh.write(man_text(rendered, name))
    return len(pages)


BUILDERS = {"pyenv": build_pyenv, "npm": build_npm, "plman": build_plman, "enman": build_enman}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the check sets (documentation this machine "
                                     "has, with the questions of reports/check-sets/).")
    parser.add_argument("out", help="folder to build the sets in (OUT/SET must not exist)")
    parser.add_argument("--sets", nargs="+", choices=sorted(SETS), default=sorted(SETS))
    parser.add_argument("--pyenv-root", default=os.path.expanduser("~/.pyenv"))
    parser.add_argument("--npm-docs", default="/usr/lib/node_modules/npm/docs/content")
    parser.add_argument("--man-pl", default="/usr/share/man/pl")
    parser.add_argument("--man-en", default="/usr/share/man")
    args = parser.parse_args(argv)
    sources = {"pyenv": args.pyenv_root, "npm": args.npm_docs, "plman": args.man_pl, "enman": args.man_en}
    for name in args.sets:
        target = os.path.join(args.out, name)
        if os.path.exists(target):
            print(f"{name}: {target} exists; not touched", file=sys.stderr)
            return 2
        lang_dir = os.path.join(target, SETS[name])
        try:
            count = BUILDERS[name](sources[name], os.path.join(lang_dir, "docs"))
        except Skipped as why:
            shutil.rmtree(target, ignore_errors=True)
            print(f"{name}: skipped, {why}")
            continue
        shutil.copyfile(os.path.join(QUESTIONS, name + ".jsonl"), os.path.join(lang_dir, "questions.jsonl"))
        print(f"{name}: {count} documents in {os.path.join(lang_dir, 'docs')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
