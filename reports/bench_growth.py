#!/usr/bin/env python3
"""How docs-qa grows with the folder: index time, question time, peak memory and cache size.

    python3 reports/bench_growth.py DOCS --work WORK
        [--sizes 10000,38430,100000,300000] [--question-runs 5] [--warm-runs 10]
        [--anchor-python VENV/bin/python] [--out reports/growth.md] [--svg reports/growth.svg]

For each size N, a folder of N documents is built under --work from the Markdown pages of
DOCS: a seeded sample when N is smaller than DOCS, DOCS itself when equal, and beyond it
DOCS plus perturbed copies. Each copy renames every file and rewrites a share of its words
(PERTURB_RATE of the words of 4+ letters) into one of a few spelling variants drawn from a
Zipf-like law, so the vocabulary and the postings grow as a larger real corpus's would
(new words ever rarer), instead of repeating the same terms. Copies are generated once under
WORK/pool and hard-linked (copied when links fail) into each size's folder; generation is
not timed.

Measured per size, BM25 only (DOCS_QA_BASE_URL points at a port where nothing listens):
- first index, `python3 docs_qa.py index --docs D --cache-dir CACHE`: wall, peak RSS, cache size;
- a question as a cold CLI process (`--extractive --json`, every file's freshness verified);
- the same questions to a warm `serve` process over HTTP (POST /rag, extractive), and its RSS,
  twice: `--watch off` (every question walks the folder, as before issue 35) and the default
  `--watch events` (a resident index kept fresh by inotify), p50 and p99 of --warm-runs each;
- with `--watch events`, how long until an edit is seen: a probe document is written, then
  rewritten with a new word, and POST /search is asked for that word every EDIT_POLL_S until
  it is found (--edit-runs times; the probe is the only file written: the folders are links);
- optionally bm25s (--anchor-python) building and answering over the same folder, alternately.
Each metric's growth is fitted as y ~ N^slope on a log-log scale (slope 1 = linear).
Standard library only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import pathlib
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_index import (BM25S_BUILD, BM25S_QUERY, DOCS_QA, anchor_available,  # noqa: E402
                         docs_qa_env, machine)
from bench_embed_overhead import run_timed, stop_child  # noqa: E402

PYTHON = sys.executable             # docs-qa's interpreter: the anchor's when there is one

SEED = 18
PERTURB_RATE = 0.15                 # share of the words of 4+ letters respelled in a copy
MAX_VARIANT = 64                    # spelling variants per word (Zipf-like: variant 1 most often)
SUFFIXES = (".md", ".markdown", ".txt")
QUESTIONS = ("how to list files in a directory", "extract a tar archive", "show the git commit history")
ITEM = re.compile(r"^- (.{12,120}):\s*$")      # a tldr page's example description, as a question
ENGLISH_PAGES = "pages"                        # tldr's English pages (pages.de/ and so on: translations)
EDIT_POLL_S = 0.005                 # how often a probe word is asked for until an edit is seen
PROBE = "edit-probe.md"             # the document the edit probe writes (and removes)
LETTERS = "abcdefghijklmnopqrstuvwxyz"
WORD = re.compile(r"[A-Za-z]{4,}")
PRACTICAL = {"index_s": (600, "a first index over 10 minutes"),
             "index_cpu": (600, "a first index over 10 CPU minutes"),
             "cold_s": (1.0, "a cold CLI question over 1 s"),
             "cold_cpu": (1.0, "a cold CLI question over 1 CPU second"),
             "warm_s": (1.0, "a warm `serve` question over 1 s"),
             "watch_s": (0.05, "a watched `serve` question over 50 ms"),
             "index_mb": (12 * 1024, "an index peak over half of the 24 GB")}


# === Folders ===


def source_files(docs: str) -> list[str]:
    """Return the documents of docs (relative paths, sorted; hidden folders skipped)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(docs):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found += [os.path.relpath(os.path.join(dirpath, n), docs) for n in sorted(filenames)
                  if n.lower().endswith(SUFFIXES) and not n.startswith(".")]
    return found


def word_variant(word: str, variant: int) -> str:
    """Return spelling variant `variant` of word: one letter replaced, chosen by a hash of
    both, so the same word and variant always give the same spelling."""
    h = zlib.crc32(f"{word}|{variant}".encode())
    pos = h % len(word)
    return word[:pos] + LETTERS[(h >> 8) % 26] + word[pos + 1:]


def perturb(text: str, rng: random.Random, rate: float = PERTURB_RATE) -> str:
    """Return text with about `rate` of its words of 4+ letters respelled (see word_variant)."""
    def respell(match: re.Match) -> str:
        if rng.random() >= rate:
            return match.group()
        return word_variant(match.group(), min(int(rng.paretovariate(1.0)), MAX_VARIANT))
    return WORD.sub(respell, text)


def new_questions(docs: str, files: list[str], count: int, seed: int = SEED) -> list[str]:
    """Return count different questions taken from docs' pages, seeded: the description of a
    page's example ('- List files one per line:' asks 'List files one per line'), from tldr's
    English pages when there are any (QUESTIONS are English). With
    --new-questions a server is asked each once, so nothing it keeps from an earlier question
    can make a repeated one look faster than a user's new one."""
    rng, found = random.Random(seed), {}
    english = [rel for rel in files if rel.split(os.sep, 1)[0] == ENGLISH_PAGES] or files
    for rel in rng.sample(english, len(english)):
        with open(os.path.join(docs, rel), encoding="utf-8", errors="replace") as fh:
            items = [m.group(1) for m in map(ITEM.match, fh) if m]
        if items:
            found.setdefault(rng.choice(items), None)
        if len(found) == count:
            break
    return list(found)


def _copy_name(rel: str, copy: int) -> str:
    stem, ext = os.path.splitext(rel)
    return os.path.join(f"copy{copy:02d}", f"{stem}-c{copy}{ext}")


def build_pool(docs: str, files: list[str], copies: int, pool: str) -> None:
    """Write perturbed copies 1..copies of files under pool (a copy already complete is kept)."""
    for copy in range(1, copies + 1):
        done = os.path.join(pool, f"copy{copy:02d}.done")
        if os.path.exists(done):
            continue
        rng = random.Random(SEED * 1000 + copy)
        for rel in files:
            with open(os.path.join(docs, rel), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            dest = os.path.join(pool, _copy_name(rel, copy))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "w", encoding="utf-8") as fh:
                fh.write(perturb(text, rng))
        open(done, "w").close()
        print(f"growth: copy {copy} of {copies} written", file=sys.stderr)


def _link(src: str, dest: str) -> None:
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)


def build_folder(docs: str, files: list[str], size: int, work: str) -> str:
    """Return a folder of `size` documents under work (built once; see the module docstring)."""
    folder = os.path.join(work, f"docs-{size}")
    done = folder + ".done"
    if os.path.exists(done):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    if size <= len(files):
        chosen = files if size == len(files) else random.Random(SEED).sample(files, size)
        for rel in chosen:
            _link(os.path.join(docs, rel), os.path.join(folder, "orig", rel))
    else:
        copies = math.ceil((size - len(files)) / len(files))
        pool = os.path.join(work, "pool")
        build_pool(docs, files, copies, pool)
        for rel in files:
            _link(os.path.join(docs, rel), os.path.join(folder, "orig", rel))
        extra = [_copy_name(rel, c) for c in range(1, copies + 1) for rel in files][:size - len(files)]
        for rel in extra:
            _link(os.path.join(pool, rel), os.path.join(folder, rel))
    open(done, "w").close()
    return folder


def folder_mb(path: str) -> float:
    """Return the size of the files under path in MB."""
    return sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(path) for n in names) / 1e6


# === Measuring ===


def _index(folder: str, cache: str) -> dict:
    shutil.rmtree(cache, ignore_errors=True)
    run = run_timed([PYTHON, DOCS_QA, "index", "--docs", folder, "--cache-dir", cache], docs_qa_env())
    numbers = [int(n) for n in re.findall(r"(\d+) (?:new|chunks)", run["stdout"])]
    return {"wall": run["wall"], "cpu": run["cpu"], "mb": run["rss"], "files": numbers[0] if numbers else 0,
            "chunks": numbers[1] if len(numbers) > 1 else 0, "cache_mb": folder_mb(cache)}


def _cold_question(folder: str, cache: str, question: str) -> dict:
    """Return the run of one question process (exit 1, no answer, is still a full question)."""
    return run_timed([PYTHON, DOCS_QA, question, "--docs", folder, "--cache-dir", cache,
                      "--extractive", "--json"], docs_qa_env(), ok=(0, 1))


def _anchor(anchor: str, script: str, *args: str) -> dict:
    return run_timed([anchor, "-c", script, *args])


class ServeProcess:
    """`docs_qa.py serve` on a free loopback port, BM25 only, with the folder's cache."""

    def __init__(self, folder: str, cache: str, *extra: str):
        start = time.perf_counter()
        self.proc = subprocess.Popen([PYTHON, DOCS_QA, "serve", "--docs", folder, "--cache-dir", cache,
                                      "--host", "127.0.0.1", "--port", "0", *extra], env=docs_qa_env(), text=True,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for line in self.proc.stderr:
            found = re.search(r"serving http://127\.0\.0\.1:(\d+)", line)
            if found:
                self.port = int(found.group(1))
                self.ready_s = time.perf_counter() - start
                threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()
                return
        raise RuntimeError("docs_qa serve did not start")

    def ask(self, question: str) -> float:
        """Return the wall seconds of one POST /rag (extractive) on a new connection."""
        start = time.perf_counter()
        self.post("/rag", {"question": question, "extractive": True})
        return time.perf_counter() - start

    def post(self, route: str, request: dict) -> dict:
        """Return the envelope of one POST on a new connection."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        conn.request("POST", route, body=json.dumps(request).encode("utf-8"),
                     headers={"Content-Type": "application/json"})
        reply = conn.getresponse()
        data = reply.read()
        conn.close()
        if reply.status != 200:
            raise RuntimeError(f"serve: HTTP {reply.status}")
        return json.loads(data)

    def edit_seen(self, folder: str, run: int) -> float:
        """Return the seconds from an edit of a document to the first POST /search that finds
        its new word (see EDIT_POLL_S); the probe document is made first, removed after."""
        probe = os.path.join(folder, PROBE)
        words = [f"zqprobe{LETTERS[run % 26]}{LETTERS[step]}" for step in range(2)]
        for step, word in enumerate(words):
            with open(probe, "w", encoding="utf-8") as fh:
                fh.write(f"# Probe\n\nThe {word} is written here to time how soon an edit is seen.\n")
            written = time.perf_counter()
            while not any(PROBE in s["document_path"] for s in self.post("/search", {"query": word})["sources"]):
                time.sleep(EDIT_POLL_S)
            seen = time.perf_counter() - written
        os.remove(probe)
        return seen

    def peak_mb(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as fh:
            return next((int(line.split()[1]) // 1024 for line in fh if line.startswith("VmHWM")), 0)

    def stop(self) -> None:
        stop_child(self.proc)


def measure_size(folder: str, work: str, anchor: str | None, question_runs: int, warm_runs: int,
                 edit_runs: int = 5, asked: list[str] | None = None) -> dict:
    """Return the figures of one folder (see the module docstring); asked: the questions a
    server is asked in turn (default QUESTIONS, repeated)."""
    asked = asked or list(QUESTIONS)
    cache = os.path.join(work, "cache")
    row: dict = {"docs_mb": folder_mb(folder)}
    row.update(_index(folder, cache))
    out_dir = os.path.join(work, "bm25s")
    if anchor:
        shutil.rmtree(out_dir, ignore_errors=True)
        run = _anchor(anchor, BM25S_BUILD, folder, out_dir)
        row["anchor_index_s"], row["anchor_index_cpu"], row["anchor_index_mb"] = run["wall"], run["cpu"], run["rss"]
    for key in ("cold", "cold_cpu", "cold_mb", "anchor_query", "anchor_query_cpu"):
        row[key] = []
    for i in range(question_runs):
        question = QUESTIONS[i % len(QUESTIONS)]
        run = _cold_question(folder, cache, question)
        row["cold"].append(run["wall"])
        row["cold_cpu"].append(run["cpu"])
        row["cold_mb"].append(run["rss"])
        if anchor:
            run = _anchor(anchor, BM25S_QUERY, out_dir, question)
            row["anchor_query"].append(run["wall"])
            row["anchor_query_cpu"].append(run["cpu"])
    for watch, key in (("off", "warm"), ("events", "watch")):
        server = ServeProcess(folder, cache, "--watch", watch)
        try:
            row[f"{key}_ready_s"] = server.ready_s
            server.ask(QUESTIONS[0])                       # the first request loads what it keeps
            row[key] = [server.ask(asked[i % len(asked)]) for i in range(warm_runs)]
            row[f"{key}_mb"] = server.peak_mb()
            if watch == "events":
                row["seen"] = [server.edit_seen(folder, run) for run in range(edit_runs)]
        finally:
            server.stop()
    row["serve_mb"] = row["warm_mb"]
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(out_dir, ignore_errors=True)
    return row


def measure(docs: str, sizes: list[int] | None, work: str, anchor_python: str | None = None,
            question_runs: int = 5, warm_runs: int = 10, edit_runs: int = 5, new: bool = False) -> dict:
    """Return {size: figures} for each size (default: 10k, all of docs, 100k, 300k); new: a
    server is asked warm_runs different questions (new_questions), not QUESTIONS repeated."""
    files = source_files(docs)
    asked = new_questions(docs, files, warm_runs) if new else None
    sizes = sizes or [10_000, len(files), 100_000, 300_000]
    global PYTHON
    anchor = anchor_python if anchor_available(anchor_python, "bm25s") else None
    PYTHON = anchor or sys.executable      # one interpreter for both: start-up and site-packages alike
    os.makedirs(work, exist_ok=True)
    rows = {}
    for size in sorted(sizes):
        folder = build_folder(docs, files, size, work)
        started = os.getloadavg()[0]
        rows[size] = measure_size(folder, work, anchor, question_runs, warm_runs, edit_runs, asked)
        rows[size]["load"] = (started, os.getloadavg()[0])
        print(f"growth: {size} files: index {rows[size]['wall']:.1f} s, {rows[size]['mb']} MB, "
              f"cold {statistics.median(rows[size]['cold']):.3f} s, warm {statistics.median(rows[size]['warm']):.3f} s",
              file=sys.stderr)
    return {"rows": rows, "base": len(files), "anchor": bool(anchor)}


# === Report ===


def loglog_slope(points: list[tuple[float, float]]) -> float:
    """Return the least-squares slope of log y against log x (y ~ x^slope)."""
    if len(points) < 2:
        return float("nan")
    xs, ys = [math.log(x) for x, _ in points], [math.log(max(y, 1e-9)) for _, y in points]
    return statistics.linear_regression(xs, ys).slope


def growth_word(slope: float) -> str:
    if math.isnan(slope):
        return "n/a"
    if slope < 0.15:
        return "flat"
    if slope < 0.9:
        return "sub-linear"
    if slope <= 1.1:
        return "linear"
    return "super-linear"


def _metrics(rows: dict) -> dict[str, tuple[str, list[tuple[int, float]]]]:
    med = statistics.median
    series = {"index_s": ("first index (s)", [(n, r["wall"]) for n, r in rows.items()]),
              "index_cpu": ("first index, CPU (s)", [(n, r["cpu"]) for n, r in rows.items()]),
              "index_mb": ("first index peak RSS (MB)", [(n, r["mb"]) for n, r in rows.items()]),
              "cache_mb": ("cache size (MB)", [(n, r["cache_mb"]) for n, r in rows.items()]),
              "cold_s": ("cold CLI question (s)", [(n, med(r["cold"])) for n, r in rows.items()]),
              "cold_cpu": ("cold CLI question, CPU (s)", [(n, med(r["cold_cpu"])) for n, r in rows.items()]),
              "warm_s": ("warm `serve --watch off` question (s)", [(n, med(r["warm"])) for n, r in rows.items()]),
              "watch_s": ("watched `serve` question (s)", [(n, med(r["watch"])) for n, r in rows.items()]),
              "seen_s": ("watched `serve`: edit seen (s)", [(n, med(r["seen"])) for n, r in rows.items()]),
              "serve_mb": ("`serve` peak RSS (MB)", [(n, r["serve_mb"]) for n, r in rows.items()])}
    if all("anchor_index_s" in r for r in rows.values()):
        series["anchor_index_s"] = ("bm25s build (s)", [(n, r["anchor_index_s"]) for n, r in rows.items()])
        series["anchor_index_cpu"] = ("bm25s build, CPU (s)", [(n, r["anchor_index_cpu"]) for n, r in rows.items()])
        series["anchor_index_mb"] = ("bm25s build peak RSS (MB)", [(n, r["anchor_index_mb"]) for n, r in rows.items()])
        series["anchor_query_s"] = ("bm25s load+query (s)", [(n, med(r["anchor_query"])) for n, r in rows.items()])
        series["anchor_query_cpu"] = ("bm25s load+query, CPU (s)",
                                      [(n, med(r["anchor_query_cpu"])) for n, r in rows.items()])
    return series


def _practical_limit(points: list[tuple[int, float]], slope: float, threshold: float) -> str:
    """Return the folder size at which the power law with `slope` through the largest
    point reaches threshold."""
    n_max, y_max = max(points)
    if y_max >= threshold:
        return f"already at {n_max:,} files"
    if math.isnan(slope) or slope <= 0.05:
        return "not reached (flat)"
    estimate = n_max * (threshold / y_max) ** (1 / slope)
    return f"≈ {estimate:,.0f} files" if estimate < 1e9 else "beyond 10⁹ files"


def _p99(values: list[float]) -> float:
    """Return the 99th percentile of values (nearest rank: the largest of fewer than 100)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def _span(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}–{max(values):.3f})"


def section(figures: dict, command: str, chart: str | None = None) -> str:
    """Return the markdown report of figures (see measure())."""
    rows = figures["rows"]
    lines = [f"# docs-qa growth curve: {min(rows):,} to {max(rows):,} files (issue 18, goal 4)", "",
             f"- Date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; machine: {machine()}",
             f"- Command: `{command}`",
             f"- Folders: the {figures['base']:,} Markdown pages of `DOCS` (tldr); smaller sizes are a seeded sample, "
             f"larger ones add renamed copies with {PERTURB_RATE:.0%} of the words of 4+ letters respelled "
             f"(Zipf-like choice among {MAX_VARIANT} variants per word, seed {SEED}).",
             "- BM25 only (no embedding server). Times are whole processes (index, cold question) or one HTTP "
             "request to a warm `serve` (`POST /rag`, extractive). A CLI question and `serve --watch off` verify "
             "every file's stat per question; `serve --watch events` (the default) answers from a resident index "
             "that inotify keeps fresh (a change made 1 s before a question is always seen).",
             f"- docs-qa runs under the anchor's interpreter when one is given (`{'VENV/bin/python' if PYTHON != sys.executable else 'python3'}`), "
             "so both start alike; the load average per size is in the table (its own processes included).", "",
             "| files | chunks | docs MB | first index: wall, CPU | index peak RSS | cache | "
             "cold CLI question: wall, median (min–max); CPU | warm `serve --watch off` question | `serve` RSS | load |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for n, r in rows.items():
        lines.append(f"| {r['files']:,} | {r['chunks']:,} | {r['docs_mb']:.1f} | {r['wall']:.1f} s, {r['cpu']:.1f} s | "
                     f"{r['mb']} MB | {r['cache_mb']:.1f} MB | {_span(r['cold'])} s (n={len(r['cold'])}); "
                     f"{statistics.median(r['cold_cpu']):.3f} s | "
                     f"{_span(r['warm'])} s (n={len(r['warm'])}) | {r['serve_mb']} MB | "
                     f"{r['load'][0]:.1f}–{r['load'][1]:.1f} |")
    lines += ["", "`serve` per question (`POST /rag`, extractive; one process per mode, the first request not "
              "counted), and the time from an edit to the first `POST /search` that finds its new word "
              f"(asked every {EDIT_POLL_S * 1000:g} ms):", "",
              "| files | `--watch off`: p50, p99 | `--watch events`: p50, p99 | events / off (p50) | "
              "edit seen: median (min–max) | ready (off, events) | RSS (off, events) |",
              "|---|---|---|---|---|---|---|"]
    for n, r in rows.items():
        med = statistics.median
        lines.append(f"| {r['files']:,} | {med(r['warm']) * 1000:.1f}, {_p99(r['warm']) * 1000:.1f} ms (n={len(r['warm'])}) | "
                     f"{med(r['watch']) * 1000:.1f}, {_p99(r['watch']) * 1000:.1f} ms (n={len(r['watch'])}) | "
                     f"{med(r['watch']) / med(r['warm']):.3f}x | {_span(r['seen'])} s (n={len(r['seen'])}) | "
                     f"{r['warm_ready_s']:.1f} s, {r['watch_ready_s']:.1f} s | {r['warm_mb']} MB, {r['watch_mb']} MB |")
    if figures["anchor"]:
        lines += ["", "bm25s on the same folders, run alternately with docs-qa (`VENV/bin/python -c <BM25S_BUILD>` "
                  "and `<BM25S_QUERY>` of reports/bench_index.py):", "",
                  "| files | bm25s build: wall, CPU | build peak RSS | load+query: wall, median (min–max); CPU | "
                  "docs-qa / bm25s: index, question (wall; CPU) |",
                  "|---|---|---|---|---|"]
        for n, r in rows.items():
            med = statistics.median
            lines.append(f"| {r['files']:,} | {r['anchor_index_s']:.1f} s, {r['anchor_index_cpu']:.1f} s | "
                         f"{r['anchor_index_mb']} MB | {_span(r['anchor_query'])} s; {med(r['anchor_query_cpu']):.3f} s | "
                         f"{r['wall'] / r['anchor_index_s']:.2f}x, {med(r['cold']) / med(r['anchor_query']):.2f}x; "
                         f"{r['cpu'] / r['anchor_index_cpu']:.2f}x, "
                         f"{med(r['cold_cpu']) / med(r['anchor_query_cpu']):.2f}x |")
    lines += ["", "## How each grows (slope of log y on log files; 1 = linear)", "",
              "The slope over all sizes includes fixed costs (interpreter start, imports) that flatten the small "
              "sizes; the slope between the two largest sizes is the marginal growth, and the one extrapolated.", "",
              "| metric | slope, all sizes | slope, two largest | growth (two largest) | "
              "where it stops being practical (extrapolated from the largest size) |",
              "|---|---|---|---|---|"]
    for key, (label, points) in _metrics(rows).items():
        slope, last = loglog_slope(points), loglog_slope(sorted(points)[-2:])
        limit = ""
        if key in PRACTICAL:
            threshold, what = PRACTICAL[key]
            limit = f"{what}: {_practical_limit(points, last, threshold)}"
        lines.append(f"| {label} | {slope:.2f} | {last:.2f} | {growth_word(last)} | {limit} |")
    if chart:
        lines += ["", f"![growth relative to the smallest folder]({chart})"]
    return "\n".join(lines) + "\n"


def growth_chart(figures: dict) -> str:
    """Return an SVG line chart of each metric relative to its value at the smallest size."""
    from svg_charts import line_chart
    rows = figures["rows"]
    n0 = min(rows)
    series = {"linear (reference)": [(n, n / n0) for n in rows]}
    for key in ("index_cpu", "cache_mb", "index_mb", "cold_cpu", "warm_s", "watch_s"):
        label, points = _metrics(rows)[key]
        series[label] = [(n, y / points[0][1]) for n, y in points]
    return line_chart(series, "docs-qa growth with the folder (relative to the smallest)", "files (log scale)",
                      f"x the value at {n0:,} files", log_x=True,
                      note="BM25 only; one run per index, medians for questions; shared 2-core machine.")


def growth_section(docs: str, sizes: list[int] | None, work: str, anchor_python: str | None = None,
                   question_runs: int = 5, warm_runs: int = 10, chart: str | None = None,
                   edit_runs: int = 5) -> str:
    """Return the markdown growth report of docs at each size; generated folders and caches
    live under work (kept there, so a re-run does not generate them again)."""
    return section(measure(docs, sizes, work, anchor_python, question_runs, warm_runs, edit_runs),
                   _command(sizes, anchor_python, question_runs, warm_runs, edit_runs), chart)


def _command(sizes: list[int] | None, anchor_python: str | None, question_runs: int, warm_runs: int,
             edit_runs: int = 5, new: bool = False) -> str:
    """Return the command line of a run, with placeholders instead of this machine's paths."""
    return ("python3 reports/bench_growth.py DOCS --work WORK"
            + (f" --sizes {','.join(map(str, sizes))}" if sizes else "")
            + (" --anchor-python VENV/bin/python" if anchor_python else "")
            + f" --question-runs {question_runs} --warm-runs {warm_runs} --edit-runs {edit_runs}"
            + (" --new-questions" if new else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs", help="folder of Markdown documents (e.g. the tldr pages)")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "docsqa-growth"),
                        help="where the generated folders and caches go (kept between runs)")
    parser.add_argument("--sizes", default=None, help="comma-separated file counts (default 10000,ALL,100000,300000)")
    parser.add_argument("--question-runs", type=int, default=5)
    parser.add_argument("--warm-runs", type=int, default=10)
    parser.add_argument("--edit-runs", type=int, default=5, help="edits timed until seen, per size")
    parser.add_argument("--new-questions", action="store_true",
                        help="ask each server a different question each time, taken from the pages "
                             "(default: three questions in turn)")
    parser.add_argument("--anchor-python", default=None, metavar="VENV/bin/python")
    parser.add_argument("--out", default=None, help="write the report here too")
    parser.add_argument("--svg", default=None, help="write the chart here (linked from the report by name)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
    figures = measure(os.path.abspath(args.docs), sizes, os.path.abspath(args.work), args.anchor_python,
                      args.question_runs, args.warm_runs, args.edit_runs, args.new_questions)
    text = section(figures, _command(sizes, args.anchor_python, args.question_runs, args.warm_runs, args.edit_runs,
                                     args.new_questions),
                   os.path.basename(args.svg) if args.svg else None)
    extra = ((args.svg, growth_chart(figures)),) if args.svg else ()
    for path, content in ((args.out, text),) + extra:
        if path:
            pathlib.Path(path).write_text(content, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
