#!/usr/bin/env python3
"""Benchmark docs-qa indexing and cached questions against bm25s, as whole processes.

    python3 reports/bench_index.py DOCS_DIR [--anchor-python VENV/bin/python] [--cpus 0]
                                   [--build-runs 3] [--query-runs 11] [--out OUT.md]
                                   [--growth 10000,38000] [--embed-python VENV/bin/python]
    python3 reports/bench_index.py --generate 5000     # a synthetic folder when no DOCS_DIR

Runs docs-qa and the anchor alternately in one run (the machine may be shared), and
prints medians, min/max and ratios, with the machine, the date and the exact commands,
as a markdown report (--out writes it to a file too), with a profile of each docs-qa
process (what limits it). DOCS_DIR
is only read: the edited-file goal works on a copy. Standard library only; the anchors
(bm25s, rank_bm25) run under --anchor-python when it can import them and are skipped
otherwise. --growth and --embed-python append the sections of reports/bench_growth.py
and reports/bench_embed_overhead.py (skipped with a line saying so when absent); dense
search is measured by reports/bench_dense.py, whose output --append adds.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import importlib
import io
import json
import pstats
import shlex
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS_QA = os.path.join(REPO, "docs_qa.py")
DEFAULT_QUESTION = "how to list files in a directory"
PYTHON = sys.executable             # docs-qa's interpreter (--docs-qa-python)
LAST_CPU_S = 0.0
PINNED: list[str] = []              # ["taskset", "-c", CPUS] with --cpus: every measured process runs there
MEMORY_RUNS = 3                     # runs per side sampled for memory after the timed ones

# === Anchor scripts (run under the anchor interpreter) ===

BM25S_BUILD = r'''
import json, os, sys
import bm25s
root, out = sys.argv[1], sys.argv[2]
paths, texts = [], []
for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    for name in sorted(filenames):
        if name.lower().endswith((".md", ".markdown", ".txt")) and not name.startswith("."):
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as fh:
                texts.append(fh.read())
            paths.append(os.path.relpath(path, root))
tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False)
retriever = bm25s.BM25()
retriever.index(tokens, show_progress=False)
retriever.save(out)
with open(os.path.join(out, "paths.json"), "w") as fh:
    json.dump(paths, fh)
print(len(paths))
'''

BM25S_QUERY = r'''
import json, os, sys
import bm25s
out, question = sys.argv[1], sys.argv[2]
retriever = bm25s.BM25.load(out)
with open(os.path.join(out, "paths.json")) as fh:
    paths = json.load(fh)
query = bm25s.tokenize([question], stopwords="en", return_ids=False, show_progress=False)
docs, scores = retriever.retrieve(query, k=5, show_progress=False)
print(json.dumps([[paths[int(d)], float(s)] for d, s in zip(docs[0], scores[0])]))
'''

# === Measuring ===


class TreeMemory:
    """Samples the summed resident memory of a process and its descendants (worker
    processes included) every interval from /proc; peak_mb is the largest sum seen."""

    def __init__(self, root: int, interval: float = 0.02) -> None:
        self.root, self.interval, self.peak_mb = root, interval, 0
        self.page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "TreeMemory":
        if os.path.isdir("/proc"):
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _sample(self) -> int:
        parents, rss = {}, {}
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) < self.root:
                continue                      # descendants are started after the root
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
                with open(f"/proc/{name}/statm", "rb") as fh:
                    rss[int(name)] = int(fh.read().split()[1]) * self.page
            except (OSError, IndexError, ValueError):
                continue
            parents[int(name)] = int(fields[1])
        tree, grew = {self.root}, True
        while grew:
            grew = False
            for pid, ppid in parents.items():
                if ppid in tree and pid not in tree:
                    tree.add(pid)
                    grew = True
        return sum(rss.get(pid, 0) for pid in tree) // (1024 * 1024)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak_mb = max(self.peak_mb, self._sample())


def run_measured(cmd: list[str], env: dict[str, str] | None = None,
                 sample_memory: bool = True) -> tuple[float, int, str, str, int]:
    """Return (wall seconds, peak RSS in MB, stdout, stderr, exit code) of one process; the
    peak is the larger of its own ru_maxrss and, with sample_memory, the sampled sum over it
    and its workers (the sampling thread takes CPU time from a process that uses both
    cores, so timed runs are not sampled). CPU time (user+sys, workers included) of the
    last run is kept in LAST_CPU_S."""
    global LAST_CPU_S
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        if env is None:
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        proc = subprocess.Popen([*PINNED, *cmd], stdout=out, stderr=err, env=env, cwd=REPO)
        with TreeMemory(proc.pid) if sample_memory else contextlib.nullcontext() as tree:
            _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        LAST_CPU_S = usage.ru_utime + usage.ru_stime
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (wall, max(usage.ru_maxrss // 1024, tree.peak_mb if tree else 0), out.read().decode("utf-8", "replace"),
                err.read().decode("utf-8", "replace"), proc.returncode)


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def fmt(s: dict[str, float], unit: str = "s", digits: int = 3) -> str:
    return f"{s['median']:.{digits}f} {unit} (min {s['min']:.{digits}f}, max {s['max']:.{digits}f}, n={s['n']})"


def anchor_available(python: str | None, module: str) -> bool:
    if not python or not os.path.exists(python):
        return False
    return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0


def anchor_versions(python: str | None) -> str:
    """Return the anchor's package versions as "bm25s X, numpy Y, scipy Z" ("" when unknown):
    its load-and-query time moves with numpy's and scipy's import times."""
    if not python:
        return ""
    code = ("from importlib.metadata import version\n"
            "print(', '.join(f'{p} {version(p)}' for p in ('bm25s', 'numpy', 'scipy')))")
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def docs_qa_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_") and k != "EMBED_MOCK"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)     # cache imported modules' bytecode, as users do
    env["DOCS_QA_BASE_URL"] = "http://127.0.0.1:9/v1"    # nothing listens: BM25 only, degraded
    return env


# === Benchmarks ===


def measure_into(rows: dict[str, list], side: str, cmd: list[str], timed: bool,
                 env: dict[str, str] | None = None) -> tuple[str, str]:
    """Run cmd once for side ('docs_qa' or 'bm25s'): a timed run adds its wall and CPU time
    to rows, an untimed one its sampled peak memory; return (stdout, stderr); exit on failure."""
    wall, mb, out, err, rc = run_measured(cmd, env, sample_memory=not timed)
    if rc != 0:
        raise SystemExit(f"{side} run failed: {err[-500:]}")
    if timed:
        rows[side].append(wall)
        rows[f"{side}_cpu"].append(LAST_CPU_S)
    else:
        rows[f"{side}_mb"].append(mb)
    return out, err


def bench_build(docs: str, runs: int, anchor: str | None, work: str) -> dict:
    """Goal 1: first index, docs-qa vs bm25s build process, alternately."""
    ours_cmd = lambda cache: [PYTHON, DOCS_QA, "index", "--docs", docs, "--cache-dir", cache]
    anchor_cmd = lambda out: [anchor, "-c", BM25S_BUILD, docs, out]
    rows: dict[str, list] = {"docs_qa": [], "bm25s": [], "docs_qa_mb": [], "bm25s_mb": [],
                             "docs_qa_cpu": [], "bm25s_cpu": []}
    stderr_sample, stdout_sample = "", ""
    for i in range(runs + min(MEMORY_RUNS, runs)):        # timed runs, then sampled ones for memory
        timed = i < runs
        cache = os.path.join(work, f"cache-build-{i}")
        stdout_sample, stderr_sample = measure_into(rows, "docs_qa", ours_cmd(cache), timed, docs_qa_env())
        shutil.rmtree(cache, ignore_errors=True)
        if anchor:
            out_dir = os.path.join(work, f"bm25s-build-{i}")
            measure_into(rows, "bm25s", anchor_cmd(out_dir), timed)
            shutil.rmtree(out_dir, ignore_errors=True)
    return {"rows": rows, "stderr": stderr_sample, "stdout": stdout_sample,
            "commands": [shlex.join([*PINNED, *ours_cmd("CACHE")]),
                         shlex.join([*PINNED, anchor]) + f" -c <BM25S_BUILD> {docs} OUT" if anchor else ""]}


def bench_query(docs: str, runs: int, anchor: str | None, work: str, question: str) -> dict:
    """Goal 2: a question on an unchanged folder, docs-qa vs bm25s load-and-query, alternately."""
    cache = os.path.join(work, "cache-query")
    out_dir = os.path.join(work, "bm25s-index")
    run_measured([PYTHON, DOCS_QA, "index", "--docs", docs, "--cache-dir", cache], docs_qa_env())
    if anchor:
        run_measured([anchor, "-c", BM25S_BUILD, docs, out_dir])
    ours = [PYTHON, DOCS_QA, question, "--docs", docs, "--cache-dir", cache,
            "--extractive", "--json"]
    # the same question as `python -m docs_qa` from the project folder (run_measured's cwd):
    # a module runs from its bytecode cache, a script is compiled by every process
    ours_module = [PYTHON, "-m", "docs_qa", *ours[2:]]
    script_out = run_measured(ours, docs_qa_env(), sample_memory=False)[2]
    module_out = run_measured(ours_module, docs_qa_env(), sample_memory=False)[2]  # writes the cache
    if module_out != script_out:
        raise SystemExit("python -m docs_qa printed something other than docs_qa.py")
    theirs = [anchor, "-c", BM25S_QUERY, out_dir, question] if anchor else None
    floor = [PYTHON, "-c", "pass"]
    rows: dict[str, list] = {side + suffix: [] for side in ("docs_qa", "docs_qa_module", "bm25s")
                             for suffix in ("", "_mb", "_cpu")}
    rows["python"] = []
    for i in range(runs + min(MEMORY_RUNS, runs)):        # timed runs, then sampled ones for memory
        timed = i < runs
        measure_into(rows, "docs_qa", ours, timed, docs_qa_env())
        measure_into(rows, "docs_qa_module", ours_module, timed, docs_qa_env())
        if theirs:
            measure_into(rows, "bm25s", theirs, timed)
        if timed:
            rows["python"].append(run_measured(floor, sample_memory=False)[0])
    return {"rows": rows, "cache": cache,
            "commands": [shlex.join([*PINNED, *ours]).replace(cache, "CACHE"),
                         shlex.join([*PINNED, *ours_module]).replace(cache, "CACHE") + "    # from the project folder",
                         shlex.join([*PINNED, anchor]) + f" -c <BM25S_QUERY> OUT '{question}'" if anchor else "",
                         shlex.join([*PINNED, *floor])]}


def bench_edit(source: str, work: str) -> dict:
    """Edit one file of a copy of the folder (indexed first), then time `index` and read its counts."""
    docs = os.path.join(work, "edit-docs")
    cache = os.path.join(work, "cache-edit")
    shutil.copytree(source, docs, symlinks=True)
    run_measured([PYTHON, DOCS_QA, "index", "--docs", docs, "--cache-dir", cache], docs_qa_env())
    target = None
    for dirpath, dirnames, filenames in os.walk(docs):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        names = sorted(n for n in filenames if n.endswith(".md"))
        if names:
            target = os.path.join(dirpath, names[0])
            break
    with open(target, "rb") as fh:
        original = fh.read()
    stat = os.stat(target)
    cmd = [PYTHON, DOCS_QA, "index", "--docs", docs, "--cache-dir", cache]
    try:
        with open(target, "ab") as fh:
            fh.write(b"\nAn extra line written by bench_index.py.\n")
        edited = run_measured(cmd, docs_qa_env())
    finally:
        with open(target, "wb") as fh:
            fh.write(original)
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    restored = run_measured(cmd, docs_qa_env())
    return {"file": os.path.relpath(target, docs), "edited": edited, "restored": restored,
            "command": " ".join(cmd).replace(cache, "CACHE").replace(docs, "DOCS")}


def bench_embed(docs: str, work: str, max_files: int) -> dict:
    """Goal 5: embed a folder through a local stand-in OpenAI server (tests/helpers.py):
    an interrupted run (the server fails after 20 requests), the resumed run, a third run."""
    sys.path[:0] = [REPO, os.path.join(REPO, "tests")]
    import docs_qa
    from helpers import StubModelServer

    class FailingAfter(StubModelServer):
        ok_requests = 10 ** 9

        def _embeddings(self, handler, body):
            if self.embed_requests >= self.ok_requests:
                self.embed_fault = "http_400"
            super()._embeddings(handler, body)

    sub = os.path.join(work, "embed-docs")
    copied = 0
    for dirpath, dirnames, filenames in os.walk(docs):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(".md") and copied < max_files:
                dest = os.path.join(sub, os.path.relpath(os.path.join(dirpath, name), docs))
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                shutil.copyfile(os.path.join(dirpath, name), dest)
                copied += 1
    cache = os.path.join(work, "cache-embed")
    runs = []
    for label, ok_requests in (("interrupted", 20), ("resumed", 10 ** 9), ("unchanged", 10 ** 9)):
        with FailingAfter() as stub:
            stub.ok_requests, stub.dim = ok_requests, 768
            settings = docs_qa.Settings(docs_dir=sub, cache_dir=cache, base_url=stub.base_url,
                                        embed_model="stub-768", retries=0)
            events: list[tuple[float, int, int]] = []
            start = time.perf_counter()
            stats = docs_qa.index_folder(settings, lambda stage, done, total: events.append(
                (time.perf_counter() - start, done, total)) if stage == "embed" else None)
            wall = time.perf_counter() - start
            conn = docs_qa.cache_open(docs_qa.cache_path(cache, sub))
            stored = docs_qa.cache_vector_count(conn)
            conn.close()
            runs.append({"stored": stored, "label": label, "wall": wall, "requests": stub.embed_requests,
                         "texts": stub.embedded_texts,
                         "max_batch": max((len(b.get("input", [])) for _, b in stub.bodies), default=0),
                         "progress_events": len(events), "chunks": stats.chunks,
                         "notes": [n.code for n in stats.notes]})
    return {"files": copied, "runs": runs}


def profile_process(args: list[str], out: str, top: int = 14) -> list[str]:
    """Run docs_qa.py with args under cProfile in a child process; return markdown rows of
    the functions with the most own time (the profiler slows calls down, shares hold)."""
    prof = os.path.join(out, "profile.out")
    run_measured([PYTHON, "-m", "cProfile", "-o", prof, DOCS_QA, *args], docs_qa_env())
    stats = pstats.Stats(prof, stream=io.StringIO())
    total = max(stats.total_tt, 1e-9)
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]
    lines = ["| function | calls | own time | share | with callees |", "|---|---|---|---|---|"]
    for (path, line, name), (_, calls, own, cumulative, _) in rows:
        where = f"{os.path.basename(path)}:{line}({name})" if line else name
        lines.append(f"| `{where}` | {calls} | {own:.3f} s | {own / total:.0%} | {cumulative:.3f} s |")
    os.remove(prof)
    return [f"Profile (cProfile, {total:.2f} s in all under the profiler; top {top} by own time):", "",
            *lines, ""]


# the parse of a first index in stages, in one process with the cyclic GC off (as the indexer
# parses): each stage is a whole pass over the folder's documents or chunks, timed by CPU
PARSE_STAGES = r'''
import collections, gc, json, sys, time
sys.path.insert(0, sys.argv[1])
import docs_qa as d
docs, runs = sys.argv[2], int(sys.argv[3])
gc.disable()
def best(work):
    times = []
    for _ in range(runs):
        start = time.process_time()
        result = work()
        times.append(time.process_time() - start)
    return min(times), result
entries, _ = d.corpus_walk(docs)
out = {}
out["read"], texts = best(lambda: [t for t, _ in map(d.corpus_read, entries, [d.MAX_FILE_BYTES] * len(entries))
                                   if t is not None])
out["hash"], _ = best(lambda: list(map(d._blake2b_hex, texts)))
out["chunk"], parsed = best(lambda: [d.chunk_parse("p", t) for t in texts])
chunks = [(c.text, h) for p in parsed for c, h in zip(p.chunks, p.heads)]
out["fold"], words = best(lambda: [d.text_folded_words(t) for t, _ in chunks])
out["count"], counts = best(lambda: list(map(collections.Counter, words)))
out["language"], languages = best(lambda: list(map(d.Tokenizer.words_language, counts)))
out["stems"], _ = best(lambda: (lambda tok: [tok.weighted_counts(c, l, d.TF_UNITS)
                                            for c, l in zip(counts, languages)])(d.Tokenizer()))
tok = d.Tokenizer()
[tok.weighted_counts(c, l, d.TF_UNITS) for c, l in zip(counts, languages)]
out["weights"], _ = best(lambda: [tok.weighted_counts(c, l, d.TF_UNITS) for c, l in zip(counts, languages)])
out["stems"] -= out["weights"]
out["term_counts"], _ = best(lambda: (lambda tk: [d.bm25_term_counts(t, tk, h) for t, h in chunks])(d.Tokenizer()))
batches = d._parse_batches(entries)
out["parse"], _ = best(lambda: (lambda tk: [d._parse_batch(b, [None] * len(b), d.MAX_FILE_BYTES,
                                                           d.DEFAULT_CHUNK_CHARS, tk) for b in batches])(d.Tokenizer()))
out["n_chunks"], out["n_words"] = len(chunks), sum(map(len, words))
print(json.dumps(out))
'''


def parse_stages(docs: str, anchor_cpu_s: float | None, runs: int = 3) -> list[str]:
    """Return markdown on where a first index's parse spends its CPU (PARSE_STAGES), each
    stage also as a share of the anchor's whole build (anchor_cpu_s, its median CPU)."""
    proc = subprocess.run([*PINNED, PYTHON, "-c", PARSE_STAGES, REPO, docs, str(runs)],
                          capture_output=True, text=True, env=docs_qa_env(), cwd=REPO)
    if proc.returncode != 0:
        return [f"(parse stages not measured: {proc.stderr.strip().splitlines()[-1:]})", ""]
    got = json.loads(proc.stdout)
    names = {"read": "read and decode every document (corpus_read)",
             "hash": "content hash of every document (BLAKE2b)",
             "chunk": "chunk every document (chunk_parse)",
             "fold": "fold and split every chunk's words (text_folded_words: NFKC, casefold, "
                     "diacritics, the word regex)",
             "count": "count each chunk's words (Counter)",
             "language": "each chunk's stemmer, by its stop words (Tokenizer.words_language)",
             "stems": "stem each distinct word once per language (the memo's misses)",
             "weights": "each chunk's term counts from its word counts, memo warm (weighted_counts)",
             "term_counts": "all of the above for the chunks, as the indexer calls it (bm25_term_counts)",
             "parse": "the whole parse: read, hash, chunk, count, rows and postings (_parse_batch)"}
    share = (lambda s: f"{s / anchor_cpu_s:.2f}x") if anchor_cpu_s else (lambda s: "n/a")
    lines = [f"Where the parse's CPU goes ({got['n_chunks']} chunks, {got['n_words']} words; one process, "
             f"cyclic GC off, best of {runs}; the share is of the anchor's whole build, median CPU):", "",
             "| stage | CPU | per chunk | vs the anchor's build |", "|---|---|---|---|"]
    lines += [f"| {names[key]} | {got[key]:.3f} s | {1e6 * got[key] / max(got['n_chunks'], 1):.1f} us | "
              f"{share(got[key])} |" for key in names]
    return lines + [""]


QUESTION_PHASES = r'''
import contextlib, io, json, os, sys, time, types
start = time.perf_counter()
path, docs, cache, question = sys.argv[1:5]
with open(path, "rb") as fh:
    code = compile(fh.read(), path, "exec")
compiled = time.perf_counter()
module = types.ModuleType("docs_qa")
module.__file__ = path
sys.modules["docs_qa"] = module
sys.path.insert(0, os.path.dirname(path))
exec(code, module.__dict__)
loaded = time.perf_counter()
walks = []
begin = module.corpus_scan_begin

class Timed:
    def __init__(self, run):
        self.run, self.shared = run, run.shared
    def finish(self):
        t = time.perf_counter()
        scan = self.run.finish()
        walks.append(time.perf_counter() - t)
        return scan
    def close(self):
        return self.run.close()

def timed_begin(*args, **kwargs):
    t = time.perf_counter()
    run = Timed(begin(*args, **kwargs))
    walks.append(time.perf_counter() - t)
    return run
module.corpus_scan_begin = timed_begin
with contextlib.redirect_stdout(io.StringIO()):
    module.main([question, "--docs", docs, "--cache-dir", cache, "--extractive", "--json"], dict(os.environ))
done = time.perf_counter()
shared, module.corpus_scan_begin = sum(walks), begin
conn = module.cache_open(module.cache_path(cache, docs))
listings = module.cache_listings(conn)
conn.close()
kept = time.perf_counter()
module.corpus_scan(docs, [cache], split=False, listings=listings)
listed = time.perf_counter()
module.corpus_scan(docs, [cache], split=False)
print(json.dumps({"compile": compiled - start, "module": loaded - compiled, "question": done - loaded,
                  "begin_finish": shared, "serial_walk": listed - kept,
                  "listing_walk": time.perf_counter() - listed}))
'''


def question_phases(docs: str, cache: str, question: str, runs: int) -> list[str]:
    """Return markdown on where a question's time goes, from fresh processes: compiling
    docs_qa.py, running its module body, and the question in-process, with the time spent
    in ScanRun.begin/finish (this process's share of the walk, after the early ranking) and,
    for comparison, a walk made by this process alone."""
    rows: dict[str, list[float]] = {}
    for _ in range(runs):
        proc = subprocess.run([PYTHON, "-c", QUESTION_PHASES, DOCS_QA, docs, cache, question],
                              capture_output=True, text=True, env=docs_qa_env(), cwd=REPO)
        if proc.returncode != 0:
            return [f"(phases not measured: {proc.stderr.strip().splitlines()[-1:]})", ""]
        for key, value in json.loads(proc.stdout).items():
            rows.setdefault(key, []).append(value)
    names = {"compile": "compile docs_qa.py (never cached for the script Python runs)",
             "module": "module body (imports, classes)",
             "question": "the question in-process (argparse to printed envelope)",
             "begin_finish": "of which: the walk's begin + finish (first levels listed, fork, "
                             "then this process's share after the early ranking)",
             "serial_walk": "for comparison: the same walk by one process (kept listings)",
             "listing_walk": "... and by one process listing every folder (no kept listings)"}
    lines = [f"Where a question's time goes, fresh processes under the same interpreter (medians of {runs}):", "",
             "| part | time |", "|---|---|"]
    lines += [f"| {names[key]} | {fmt(summary(values))} |" for key, values in rows.items()]
    return lines + [""]


def optional_section(module: str, function: str, *args, **kwargs) -> str:
    """Return the markdown of reports/<module>.py's function(*args), or one line saying it
    was skipped when that script is absent."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        make = getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError):
        return f"\n(reports/{module}.py with {function}() is absent: section skipped)\n"
    return "\n" + make(*args, **kwargs)


def placeholders(text: str, docs: str, anchor: str | None, work: str) -> str:
    """Return text with this machine's paths replaced by DOCS, VENV, WORK and relative paths."""
    if anchor:
        venv = os.path.dirname(os.path.dirname(anchor))
        text = text.replace(venv + os.sep, "VENV/")
    for path, name in ((work, "WORK"), (docs, "DOCS"), (REPO + os.sep, ""), (sys.executable, "python3")):
        text = text.replace(path, name)
    return text


# === Synthetic folder ===


def generate(root: str, n_files: int) -> str:
    """Write n_files small markdown pages (tldr-like) under root; return root."""
    words = ("list files directory copy move remove archive compress network process user "
             "permission search text print show create delete update install package server "
             "client port config log").split()
    for i in range(n_files):
        folder = os.path.join(root, f"section{i % 40:02d}")
        os.makedirs(folder, exist_ok=True)
        body = [f"# command{i}", "", f"> Tool number {i} to {words[i % len(words)]} things.", ""]
        for j in range(6):
            w = [words[(i * 7 + j * 3 + k) % len(words)] for k in range(6)]
            body += [f"- {' '.join(w).capitalize()}:", "", f"`command{i} --{w[0]} {{{{path/to/{w[1]}}}}}`", ""]
        with open(os.path.join(folder, f"command{i}.md"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(body))
    return root


# === Report ===


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            names = [line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")]
        cpu = f"{names[0]} x{len(names)}" if names else cpu
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as fh:
            mem = f", {int(fh.readline().split()[1]) / 1024 / 1024:.1f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    load = ", load average %.2f %.2f %.2f at start" % os.getloadavg() if hasattr(os, "getloadavg") else ""
    return f"{platform.system()} {platform.release()}, {cpu}{mem}, Python {platform.python_version()}{load}"


def ratio(a: list[float], b: list[float]) -> str:
    return f"{statistics.median(a) / statistics.median(b):.2f}x" if a and b else "n/a (anchor absent)"


def report_embed(embed: dict) -> list[str]:
    lines = ["## Embedding a folder: batched, resumable, never re-sent (issue 7)", "",
             f"{embed['files']} files of the folder, copied to a temporary folder, embedded through "
             "tests/helpers.py's StubModelServer (a real HTTP server on 127.0.0.1, 768-dim vectors); "
             "`index_folder` with the default batch of 32 and a progress callback.", "",
             "| run | wall | requests | texts sent | largest batch | progress events | notes |",
             "|---|---|---|---|---|---|---|"]
    for run in embed["runs"]:
        lines.append(f"| {run['label']} | {run['wall']:.2f} s | {run['requests']} | {run['texts']} | "
                     f"{run['max_batch']} | {run['progress_events']} | {', '.join(run['notes']) or '-'} |")
    first, second = embed["runs"][0], embed["runs"][1]
    lines += ["", f"The interrupted run stored {first['stored']} vectors before the "
                  f"server failed; the resumed run sent {second['texts']} texts for "
                  f"{second['chunks']} chunks (distinct chunk texts only), the third run none. The CLI "
                  "shows the progress events as `embed: done/total (rate/s, ETA s)` on stderr.", ""]
    return lines


def report(args, docs: str, n_files: int, build: dict, query: dict, edit: dict, started: str) -> str:
    b, q = build["rows"], query["rows"]
    lines = [
        "# docs-qa performance (issues 7, 18 and 35)", "",
        f"- Date: {started}", f"- Machine: {machine()}",
        f"- Folder: `{docs}` ({n_files} documents found by docs-qa)",
        f"- Command: `python3 reports/bench_index.py {' '.join(args.raw)}`",
        f"- CPUs: {'every measured process runs under `' + shlex.join(PINNED) + '`' if PINNED else 'all the machine has'}"
        f" ({os.cpu_count()} here)",
        f"- docs-qa runs under `{PYTHON}`, the anchor under `{args.anchor_python}` (one interpreter"
        " for both by default, so start-up and site-packages are alike)"
        + (f"; the anchor's packages: {args.anchor_packages}" if args.anchor_packages else ""),
        "- Each pair of processes is run alternately (docs-qa, then the anchor) in one run, so load",
        "  from other work on the machine hits both alike; medians decide, ratios are docs-qa / anchor.",
        f"- Peak memory comes from {MEMORY_RUNS} more alternating runs per side, sampled from /proc (summed",
        "  over a process and its workers); the timed runs are not sampled, since the sampling thread",
        "  takes CPU time from a docs-qa run that uses both cores.",
        "", "## First index, BM25 only, no model server reachable (issue 18 goal 1, issue 35 item 2)", "",
        "| process | wall time | CPU (user+sys) | peak RSS (all processes) |", "|---|---|---|---|",
        f"| docs-qa `index` | {fmt(summary(b['docs_qa']))} | {fmt(summary(b['docs_qa_cpu']))} | "
        f"{fmt(summary(b['docs_qa_mb']), 'MB', 0)} |",
    ]
    if b["bm25s"]:
        lines.append(f"| bm25s read+tokenize+index+save | {fmt(summary(b['bm25s']))} | "
                     f"{fmt(summary(b['bm25s_cpu']))} | {fmt(summary(b['bm25s_mb']), 'MB', 0)} |")
    lines += ["", f"Ratio (median wall): **{ratio(b['docs_qa'], b['bm25s'])}**; CPU "
                  f"{ratio(b['docs_qa_cpu'], b['bm25s_cpu'])}; peak memory ratio "
                  f"{ratio(b['docs_qa_mb'], b['bm25s_mb'])}. (The progress line is drawn on a terminal "
                  "only, so these runs, whose stderr is a file, show none.)", "",
              "Commands:", "", "```", *[c for c in build["commands"] if c], "```", "",
              *build.get("profile", []),
              "## A question on an unchanged folder, every file's freshness verified (issue 18 goal 2, issue 35 item 3)", "",
              "| process | wall time | CPU (user+sys) | peak RSS |", "|---|---|---|---|",
              f"| docs-qa question `--extractive --json` | {fmt(summary(q['docs_qa']))} | "
              f"{fmt(summary(q['docs_qa_cpu']))} | {fmt(summary(q['docs_qa_mb']), 'MB', 0)} |",
              f"| the same question as `python -m docs_qa` (bytecode cached) | {fmt(summary(q['docs_qa_module']))} | "
              f"{fmt(summary(q['docs_qa_module_cpu']))} | {fmt(summary(q['docs_qa_module_mb']), 'MB', 0)} |"]
    if q["bm25s"]:
        lines.append(f"| bm25s import+load+query | {fmt(summary(q['bm25s']))} | {fmt(summary(q['bm25s_cpu']))} | "
                     f"{fmt(summary(q['bm25s_mb']), 'MB', 0)} |")
    lines += [f"| `python -c pass` (floor, docs-qa's interpreter) | {fmt(summary(q['python']))} | | |", "",
              f"Ratio (median wall): **{ratio(q['docs_qa'], q['bm25s'])}** (goals: at most 0.8x, issue 18; at most 0.5x, issue 35); "
              f"as `python -m docs_qa`, which does not compile docs_qa.py each time: "
              f"**{ratio(q['docs_qa_module'], q['bm25s'])}**.",
              "", "Commands:", "", "```", *[c for c in query["commands"] if c], "```", "",
              *query.get("profile", [])]
    wall, _, out, _, _ = edit["edited"]
    wall2, _, out2, _, _ = edit["restored"]
    lines += ["## After editing one file (issue 7)", "",
              f"In a copy of the folder, indexed first, edited `{edit['file']}` (one line appended), "
              f"then ran `{edit['command']}`:", "",
              f"- {wall:.3f} s: `{out.strip().splitlines()[0] if out.strip() else '(no output)'}`",
              f"- restored the file (content and mtime) and ran it again, {wall2:.3f} s: "
              f"`{out2.strip().splitlines()[0] if out2.strip() else '(no output)'}`", ""]
    if args.embed_files:
        lines += report_embed(args.embed_result)
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs", nargs="?", help="folder of documents (default: generate one)")
    parser.add_argument("--generate", type=int, default=5000, metavar="N",
                        help="files in the synthetic folder when no DOCS_DIR is given")
    parser.add_argument("--anchor-python", default=sys.executable, metavar="VENV/bin/python",
                        help="interpreter that can import bm25s (default: this one; the "
                             "anchor is skipped when it cannot)")
    parser.add_argument("--docs-qa-python", metavar="PYTHON",
                        help="interpreter that runs docs_qa.py (default: the anchor's, when it can "
                             "import bm25s, so both start the same interpreter with the same "
                             "site-packages; else this one)")
    parser.add_argument("--cpus", metavar="CPUS",
                        help="run every measured process on these CPUs only, through taskset "
                             "(e.g. 0 for one core; docs-qa then starts no worker)")
    parser.add_argument("--build-runs", type=int, default=3)
    parser.add_argument("--query-runs", type=int, default=11)
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument("--embed-files", type=int, default=2000, metavar="N",
                        help="files embedded through a stand-in server, resumably (0 skips it)")
    parser.add_argument("--no-profile", action="store_true", help="skip the profiled runs")
    parser.add_argument("--growth", metavar="SIZES",
                        help="comma-separated folder sizes for reports/bench_growth.py's section")
    parser.add_argument("--embed-python", metavar="VENV/bin/python",
                        help="interpreter of the lmstub server for reports/bench_embed_overhead.py's section")
    parser.add_argument("--embed-overhead-files", type=int, default=500, metavar="N")
    parser.add_argument("--out", default=None, metavar="OUT.md",
                        help="also write the report here (reports/performance.md holds hand-written "
                             "sections under the generated one: write elsewhere and copy what is new)")
    parser.add_argument("--append", action="append", default=[], metavar="FILE",
                        help="markdown to append to the report (e.g. bench_dense.py output)")
    args = parser.parse_args()
    args.raw = sys.argv[1:]
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    anchor = args.anchor_python if anchor_available(args.anchor_python, "bm25s") else None
    args.anchor_packages = anchor_versions(anchor)
    if anchor is None:
        print("bm25s not importable by --anchor-python: anchor skipped", file=sys.stderr)
    global PYTHON
    if args.cpus:
        if shutil.which("taskset") is None:
            raise SystemExit("--cpus needs taskset (util-linux)")
        PINNED[:] = ["taskset", "-c", args.cpus]
    PYTHON = args.docs_qa_python or anchor or sys.executable
    with tempfile.TemporaryDirectory(prefix="docsqa-bench-") as work:
        docs = os.path.abspath(args.docs) if args.docs else generate(os.path.join(work, "docs"), args.generate)
        build = bench_build(docs, args.build_runs, anchor, work)
        print("build done", file=sys.stderr)
        query = bench_query(docs, args.query_runs, anchor, work, args.question)
        print("query done", file=sys.stderr)
        if not args.no_profile:
            anchor_cpu = statistics.median(build["rows"]["bm25s_cpu"]) if build["rows"]["bm25s_cpu"] else None
            build["profile"] = profile_process(["index", "--docs", docs, "--cache-dir",
                                                os.path.join(work, "cache-profile")], work) \
                + parse_stages(docs, anchor_cpu)
            query["profile"] = question_phases(docs, query["cache"], args.question, 9) + profile_process(
                [args.question, "--docs", docs, "--cache-dir", query["cache"], "--extractive", "--json"], work)
        edit = bench_edit(docs, work)
        args.embed_result = bench_embed(docs, work, args.embed_files) if args.embed_files else None
        n_files = sum(int(w) for w in build["stdout"].split()[1:2] if w.isdigit())
        counts = build["stdout"].split(";")[0]
        text = report(args, docs, n_files, build, query, edit, started)
        text = text.replace(f"({n_files} documents found by docs-qa)", f"(first index: `{counts.strip()}`)")
        if args.embed_python:
            text += optional_section("bench_embed_overhead", "embed_overhead_section", docs,
                                     args.embed_overhead_files, args.embed_python, os.path.join(work, "overhead"))
        if args.growth:
            sizes = [int(n) for n in args.growth.split(",") if n.strip()]
            text += optional_section("bench_growth", "growth_section", docs, sizes, os.path.join(work, "growth"),
                                     anchor_python=anchor)
        text = placeholders(text, docs, anchor, work)
        if args.out:
            text = text.replace(args.out, "OUT.md")
    for extra in args.append:
        with open(extra, encoding="utf-8") as fh:
            text += "\n" + fh.read()
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
