#!/usr/bin/env python3
"""Regenerate examples/*.md: run each example command for real and record its output.

Usage: python3 examples/regenerate.py        (from the repository root)

Every command runs as written from the repository root with no model server (the
degraded paths are part of what the examples show). tests/test_examples.py runs the
same list and checks each exit code and envelope status against what is recorded here.
"""
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (file name, title, command, what it shows)
EXAMPLES = [
    ("01-extractive-answer", "Extractive answer (no LLM)",
     'python3 docs_qa.py "faktura korygująca rabat" --docs corpus --extractive --no-embed',
     "The best-matching sentences of the top fragments, each cited with exactly the lines it spans."),
    ("02-extractive-answer-json", "Extractive answer as the v1 envelope",
     'python3 docs_qa.py "wiążąca informacja stawkowa opłata" --docs corpus --extractive --no-embed --json --limit 2',
     "The same answer in JSON: sources with lines and retrieval ranks, checked citations, the prompt."),
    ("03-degraded-run", "Degraded run: no model server",
     'python3 docs_qa.py "do kiedy składam JPK" --docs corpus --base-url http://127.0.0.1:9/v1',
     "No model server: BM25 + extractive, with a note for each model (a Polish question is not sent to the English-only default embedding model), exit 0."),
    ("04-no-answer", "Off-corpus question: no_answer",
     'python3 docs_qa.py "przepis na sernik z rodzynkami" --docs corpus --no-embed --json',
     "Nothing in the folder matches: status no_answer, reason no_matching_sources, the refusal."),
    ("05-graph-count-truncated", "Graph count with truncated evidence",
     'python3 graph_store.py "Koľko osôb má prácu v roku 2024?" --graph corpus/graph.json --limit 1 --json',
     "The exact count from the aggregation (complete), while the evidence shown is cut at 1."),
    ("06-graph-ambiguous", "Ambiguous name",
     'python3 graph_store.py "Aký názov práce má Holp?" --graph corpus/graph.json --json',
     "A surname that fits a man and a woman: status ambiguous with the candidates."),
    ("07-error-envelope", "Error envelope",
     'python3 docs_qa.py "do kiedy składam JPK" --docs corpus/does-not-exist --json',
     "A missing docs folder: exit 1, the error envelope on stdout (no path, no exception text)."),
    ("08-one-entry-point-graph", "One entry point: the graph answers what it understands",
     'python3 docs_qa.py "Kto je vedúci práce Jána Holpa?" --docs corpus --graph corpus/graph.json --no-embed',
     "docs_qa.py routes a graph question to the graph and cites its source documents."),
    ("09-graph-who-is", "Who someone is: a summary of the entity's facts",
     'python3 docs_qa.py "Kto je Peter Novák?" --docs corpus --graph corpus/graph.json --no-embed',
     "Exact counts per relation, the facts with their [S1] sources, and the longer paths."),
    ("10-graph-absent-relation", "The asked relation is absent: what the graph knows instead",
     'python3 graph_store.py "Who supervised Eva Šimková?" --graph corpus/graph.json',
     "She wrote no thesis, so nobody supervised her; the answer says so and lists what she supervised."),
    ("11-graph-did-you-mean", "A typo in a name: did you mean",
     'python3 docs_qa.py "Aký názov práce má Ján Hlop?" --docs corpus --graph corpus/graph.json --no-embed',
     "No answer for a misspelt name; the nearest name is offered (similar spelling), never chosen."),
    ("12-graph-narrowed-count", "A count narrowed by supervisor and year",
     'python3 docs_qa.py "Koľko prác viedol Peter Novák v roku 2024?" --docs corpus --graph corpus/graph.json --no-embed --limit 2',
     "The exact count (aggregation complete) while the evidence shown is cut at 2."),
    ("13-graph-ambiguous-who-is", "Who is Peter? Ambiguous, with the candidates",
     'python3 docs_qa.py "Kto je Peter?" --docs corpus --graph corpus/graph.json --no-embed',
     "Three persons fit a first name alone: status ambiguous, each candidate and why."),
    ("14-graph-co-supervision", "Theses with more than one supervisor",
     'python3 graph_store.py "Which theses have more than one supervisor?" --graph corpus/graph.json',
     "Co-supervision: the theses, both supervisors of each, and the paths joining them."),
    ("15-graph-passes-on", "A question the graph does not understand goes to the documents",
     'python3 docs_qa.py "Kto je dekan fakulty?" --docs corpus --graph corpus/graph.json --no-embed --search --limit 2',
     "Search answers; the note graph_not_applicable and `tool` say which tool answered."),
    ("16-removed-and-refused", "What the answer check removed, and why",
     'python3 examples/with_model_reply.py examples/16-model-reply.txt -- "do kiedy składam JPK" --docs corpus --no-embed',
     "A stand-in model (a fixed reply from examples/16-model-reply.txt) adds a command that is not "
     "in its cited lines, an unsupported claim and a citation outside the fragments: each is removed "
     "and the text output says so, one line per kind."),
    ("17-graph-polish-case", "A Slovak name in a Polish sentence",
     'python3 graph_store.py "Kto prowadził prace wspólnie z Peterem Novákiem?" --graph corpus/graph.json',
     "Peterem Novákiem (the Polish instrumental) is Peter Novák: his co-supervisors, answered in Polish."),
]


def run(command: str, cache_home: str = os.path.join(ROOT, ".example-cache")) -> subprocess.CompletedProcess:
    """Run an example command from the repository root, as a user would, with no
    EMBED_MOCK and no DOCS_QA_* settings; its cache under cache_home."""
    env = {k: v for k, v in os.environ.items() if k != "EMBED_MOCK" and not k.startswith("DOCS_QA_")}
    env["XDG_CACHE_HOME"] = cache_home
    return subprocess.run([sys.executable, *shlex.split(command)[1:]], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


# The page's screenshot is made by hand (it needs Chromium), so this script only lists it.
PAGE_SCREENSHOT = [
    "- [The web page answering a question](page-answer.png): `serve`'s page at `/`, extractive "
    "mode; the first citation is open, its cited line highlighted among its neighbours. Made with "
    "`EMBED_MOCK=1 python3 docs_qa.py serve --docs corpus --graph corpus/graph.json` and then "
    "`chromium --headless --hide-scrollbars --window-size=1100,720 --virtual-time-budget=10000 "
    "--no-sandbox --screenshot=examples/page-answer.png "
    "'http://127.0.0.1:8000/?q=do+kiedy+sk%C5%82ada+si%C4%99+JPK_V7M&mode=extractive&cite=1'`."]


def main() -> int:
    index = ["# Examples", "", "Real outputs of real runs, made by `python3 examples/regenerate.py` "
             "from the repository root with no model server running.", ""]
    for name, title, command, what in EXAMPLES:
        proc = run(command)
        body = [f"# {title}", "", what, "", "```bash", command, "```", "",
                f"Exit code: {proc.returncode}", "", "stdout:", "", "```", proc.stdout.rstrip(), "```"]
        if proc.stderr.strip():
            body += ["", "stderr:", "", "```", proc.stderr.rstrip(), "```"]
        with open(os.path.join(ROOT, "examples", f"{name}.md"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(body) + "\n")
        index.append(f"- [{title}]({name}.md): {what}")
        print(f"{name}: exit {proc.returncode}")
    index += PAGE_SCREENSHOT
    with open(os.path.join(ROOT, "examples", "README.md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(index) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
