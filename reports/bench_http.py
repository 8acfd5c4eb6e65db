#!/usr/bin/env python3
"""Load benchmark of the HTTP tool server: N concurrent keep-alive clients for T seconds
against POST /search and POST /rag (extractive), loopback only, bounded in clients and time.

Starts `docs_qa.py serve --port 0` as a subprocess (EMBED_MOCK=1, a throw-away cache),
reports throughput, p50/p99 latency and errors, and writes reports/http-load.md.

    python3 reports/bench_http.py [--docs corpus] [--clients 1,16] [--seconds 10]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "127.0.0.1"                 # loopback only, by construction
MAX_CLIENTS = 64
MAX_SECONDS = 120
QUESTIONS = ["do kiedy składam JPK", "stawki VAT na usługi", "faktura korygująca rabat",
             "biała lista podatników", "składka zdrowotna ryczałt", "kasa fiskalna online",
             "mechanizm podzielonej płatności", "zaliczki PIT termin", "KSeF e-faktura",
             "rejestracja VAT-R"]
ENDPOINTS = {"/search": lambda q: {"query": q}, "/rag --extractive": lambda q: {"question": q, "extractive": True}}


def _start_server(docs: str, cache_home: str) -> tuple[subprocess.Popen, int]:
    """Start the server; return the process and its port (read from its stderr log)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
    env.update({"EMBED_MOCK": "1", "XDG_CACHE_HOME": cache_home})
    proc = subprocess.Popen([sys.executable, os.path.join(REPO, "docs_qa.py"), "serve", "--docs", docs,
                             "--host", HOST, "--port", "0"], env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for line in proc.stderr:
        found = re.search(r"serving http://127\.0\.0\.1:(\d+)", line)
        if found:
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()  # drain the log
            return proc, int(found.group(1))
    raise SystemExit("the server did not start")


def _client(port: int, path: str, make_body, seconds: float, offset: int,
            latencies: list[float], errors: list[str]) -> None:
    """Send requests back to back on one keep-alive connection until the time is up."""
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    deadline = time.monotonic() + seconds
    n = offset
    while time.monotonic() < deadline:
        body = json.dumps(make_body(QUESTIONS[n % len(QUESTIONS)])).encode()
        n += 1
        started = time.perf_counter()
        try:
            conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            latencies.append(time.perf_counter() - started)
            if resp.status != 200 or json.loads(data)["status"] == "error":
                errors.append(f"HTTP {resp.status} {json.loads(data).get('reason')}")
        except (OSError, http.client.HTTPException, ValueError) as exc:
            errors.append(type(exc).__name__)
            conn.close()
            conn = http.client.HTTPConnection(HOST, port, timeout=30)
    conn.close()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def run_load(port: int, path: str, clients: int, seconds: float) -> dict:
    """Return throughput, p50/p99/max latency (ms) and errors of one load run."""
    latencies: list[float] = []
    errors: list[str] = []
    make_body = ENDPOINTS[path]
    threads = [threading.Thread(target=_client, args=(port, path.split()[0], make_body, seconds, i,
                                                      latencies, errors)) for i in range(clients)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    p50, p99 = _percentile(latencies, 0.50), _percentile(latencies, 0.99)
    return {"endpoint": path, "clients": clients, "requests": len(latencies), "errors": len(errors),
            "rps": len(latencies) / elapsed, "p50_ms": p50 * 1000, "p99_ms": p99 * 1000,
            "max_ms": max(latencies, default=float("nan")) * 1000, "p99_over_p50": p99 / p50 if p50 else 0,
            "error_kinds": dict(Counter(errors))}


def _report(rows: list[dict], command: str, docs: str, seconds: float) -> str:
    lines = ["# HTTP load benchmark", "",
             f"- Command: `{command}`",
             f"- Date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
             f"- Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} "
             f"{platform.release()}, Python {platform.python_version()}",
             f"- Server: `docs_qa.py serve` (ThreadingHTTPServer) on {HOST}, EMBED_MOCK=1 (hybrid: BM25 + "
             f"mock vectors), fresh cache indexed once at start-up; docs `{docs}`; clients in one "
             f"process on the same machine, keep-alive, back to back, {seconds:g} s per run",
             "- Goal: zero errors; p99 under 10x p50 at 16 clients", "",
             "| endpoint | clients | requests | errors | req/s | p50 ms | p99 ms | max ms | p99/p50 |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| `{r['endpoint']}` | {r['clients']} | {r['requests']} | {r['errors']} | "
                     f"{r['rps']:.1f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['max_ms']:.1f} | "
                     f"{r['p99_over_p50']:.1f} |")
    kinds = {f"`{r['endpoint']}` x{r['clients']}": r["error_kinds"] for r in rows if r["error_kinds"]}
    if kinds:
        lines += ["", "Errors by kind: " + "; ".join(f"{k}: {v}" for k, v in kinds.items())]
    sixteen = [r for r in rows if r["clients"] == 16]
    if sixteen:
        met = all(r["errors"] == 0 and r["p99_over_p50"] < 10 for r in sixteen)
        lines += ["", f"Goal at 16 clients: {'met' if met else 'NOT met'}."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default=os.path.join(REPO, "corpus"))
    parser.add_argument("--clients", default="1,16", help="comma-separated client counts")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--out", default=os.path.join(REPO, "reports", "http-load.md"))
    args = parser.parse_args()
    counts = [int(c) for c in args.clients.split(",")]
    if not all(1 <= c <= MAX_CLIENTS for c in counts) or not 0 < args.seconds <= MAX_SECONDS:
        parser.error(f"clients must be 1..{MAX_CLIENTS} and seconds 0..{MAX_SECONDS}")
    command = "python3 reports/bench_http.py " + " ".join(sys.argv[1:])
    with tempfile.TemporaryDirectory() as cache_home:
        proc, port = _start_server(args.docs, cache_home)
        try:
            rows = []
            for path in ENDPOINTS:
                run_load(port, path, 2, 1.0)            # warm-up: vectors, page cache
                for clients in counts:
                    row = run_load(port, path, clients, args.seconds)
                    print(json.dumps(row), file=sys.stderr)
                    rows.append(row)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    docs = os.path.relpath(args.docs, REPO) if os.path.abspath(args.docs).startswith(REPO) else args.docs
    report = _report(rows, command.strip(), docs, args.seconds)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
