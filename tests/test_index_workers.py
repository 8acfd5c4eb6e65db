"""Tests of the parse workers (sections 10d-10e): an index built with worker processes is the one a
single process builds, table by table; workers are not started beside another thread; a
worker that dies or answers garbage leaves its batches to the indexing process, which ends
with the same index; on a large first walk they start before it ends, and those not needed
are stopped; Ctrl-C and SIGTERM end every process. Each run is a fresh process (a
test runner has threads, and the spy on os.posix_spawn must see every start)."""

from __future__ import annotations

import collections
import json
import marshal
import os
import signal
import sqlite3
import subprocess
import sys
import time
import unittest
from unittest import mock

from helpers import REPO, TempDirTest, docs_qa, marking_modules, write_files
import parallel

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process

WAIT_S = 60                        # a guard against a hang, never a measured time
# Every index compared here keeps no folder listing: whether a walk keeps one depends on the
# clock (a folder changed under LISTING_SETTLE_NS ago is not kept), and a kept one names its
# own cache folder, so two indexes would differ by when they ran on a loaded machine.
NO_LISTINGS = 10**18

# Indexes DOCS into CACHE with three parsing processes (two workers) from the first file on,
# in batches of three files, committing after each batch and writing ahead one posting list
# per step near the end; prints how many workers were started. MODE: "plain"; "thread"
# (another thread runs); "die" (each worker is killed as it starts); "garbage" (the worker's
# interpreter is FAKE, which writes junk and exits); "bytes" (too few files for workers, but
# bytes enough: batches are closed at 2 KB instead of 3 files).
INDEX_SCRIPT = r'''
import json, os, sys, threading
sys.path.insert(0, sys.argv[1])
import docs_qa
docs, cache, mode = sys.argv[2], sys.argv[3], sys.argv[4]
started, real_spawn = [], os.posix_spawn
def spy(*args, **kwargs):
    pid = real_spawn(*args, **kwargs)
    started.append(pid)
    if mode == "die":
        os.kill(pid, 9)
    return pid
os.posix_spawn = spy
if mode == "garbage":
    sys.executable = sys.argv[5]
stop = threading.Event()
if mode == "thread":
    threading.Thread(target=stop.wait, daemon=True).start()
docs_qa.PARSE_BATCH_FILES, docs_qa.CACHE_COMMIT_S, docs_qa.WRITE_AHEAD_TERMS = 3, 0, 1
docs_qa.LISTING_SETTLE_NS = 10**18           # NO_LISTINGS
if mode == "bytes":
    docs_qa.PARSE_BATCH_FILES, docs_qa.PARSE_BATCH_BYTES, docs_qa.PARSE_BATCH_MIN_BYTES = 1000, 2048, 2048
settings = docs_qa.Settings(docs_dir=docs, cache_dir=cache, use_embeddings=False, index_workers=3,
                            index_parallel_min_files=10**9 if mode == "bytes" else 1,
                            index_parallel_min_bytes=1 if mode == "bytes" else 10**12)
stats = docs_qa.index_folder(settings)
stop.set()
print(json.dumps({"started": len(started), "new": stats.new, "updated": stats.updated,
                  "removed": stats.removed, "unchanged": stats.unchanged}))
'''

# Runs `docs_qa.py index ARGS` with workers from the first file on; once the workers run, the
# indexing process writes their pids to MARKER and sleeps in its first apply, for a signal.
SIGNAL_SCRIPT = r'''
import dataclasses, os, sys, time
sys.path.insert(0, sys.argv[1])
import docs_qa
marker = sys.argv[2]
started, real_spawn = [], os.posix_spawn
def spy(*args, **kwargs):
    pid = real_spawn(*args, **kwargs)
    started.append(pid)
    return pid
os.posix_spawn = spy
def apply_then_sleep(*args):
    with open(marker + ".part", "w") as fh:
        fh.write(" ".join(map(str, started)))
    os.replace(marker + ".part", marker)
    time.sleep(600)
docs_qa._apply_batch = apply_then_sleep
real_settings = docs_qa._settings_from_args
docs_qa._settings_from_args = lambda args, environ: dataclasses.replace(
    real_settings(args, environ), index_workers=3, index_parallel_min_files=1)
docs_qa.PARSE_BATCH_FILES = 2
sys.exit(docs_qa.main(sys.argv[3:]))
'''

# A first index of DOCS into CACHE whose first levels look large (UNITS subtrees listed first,
# default 2: two subfolders are enough; 64: the whole tree is listed and not shared), with
# three parsing processes from MIN_FILES files on; prints the events in order: "spawn" for
# each worker start, "walked" when the walk is done, "apply LIVE" at the first batch applied
# (LIVE: how many started workers are not yet reaped), and the counts.
EARLY_SCRIPT = r'''
import json, os, sys
sys.path.insert(0, sys.argv[1])
import docs_qa
docs, cache, min_files = sys.argv[2], sys.argv[3], int(sys.argv[4])
events, pids, real_spawn, real_finish, real_apply = [], [], os.posix_spawn, docs_qa.ScanRun.finish, docs_qa._apply_batch
def spawn(*args, **kwargs):
    pids.append(real_spawn(*args, **kwargs))
    events.append("spawn")
    return pids[-1]
def finish(self):
    scan = real_finish(self)
    events.append("walked")
    return scan
def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
def apply(*args):
    if "walked" == events[-1]:
        events.append(f"apply {sum(map(alive, pids))}")
    real_apply(*args)
os.posix_spawn, docs_qa.ScanRun.finish, docs_qa._apply_batch = spawn, finish, apply
docs_qa._can_fork = lambda: True
docs_qa.SCAN_SPLIT_UNITS = int(sys.argv[5]) if len(sys.argv) > 5 else 2
docs_qa.PARSE_BATCH_FILES, docs_qa.CACHE_COMMIT_S = 3, 0
docs_qa.LISTING_SETTLE_NS = 10**18           # NO_LISTINGS
settings = docs_qa.Settings(docs_dir=docs, cache_dir=cache, use_embeddings=False, index_workers=3,
                            index_parallel_min_files=min_files)
stats = docs_qa.index_folder(settings)
print(json.dumps({"events": events, "alive": sum(map(alive, pids)), "new": stats.new}))
'''

# Starts one parse worker from the folder CWD, sends it a job of CWD's documents and prints
# how many files its answer holds; this process imports what it needs before it moves there.
WORKER_CWD_SCRIPT = r'''
import json, marshal, os, sys
sys.path.insert(0, sys.argv[1])
import docs_qa
os.chdir(sys.argv[2])
settings = docs_qa.Settings(docs_dir=".", use_embeddings=False)
entries = docs_qa.corpus_scan(".").entries
worker = docs_qa._spawn_worker()
try:
    job = ([tuple(e) for e in entries], [None] * len(entries), settings.max_file_bytes, settings.chunk_chars)
    worker.link.send(0, marshal.dumps(job))
    while (message := worker.link.receive()) is None and not worker.link.ended:
        docs_qa._wait_links([worker.link])
finally:
    docs_qa._stop_workers([worker])
answer = docs_qa.ParsedBatch(*marshal.loads(message[1])) if message else None
print(json.dumps({"files": len(answer.files) if answer else None}))
'''


def corpus(n: int) -> dict[str, str | bytes]:
    """Return n varied documents: Polish, Slovak and English, headings, fences, a title in
    front matter, plus an unreadable (binary) one and a UTF-16 one."""
    files: dict[str, str | bytes] = {}
    for i in range(n):
        if i % 3 == 0:
            text = (f"# Faktura {i}\n\nFakturę korygującą numer {i} wystawia się po rabacie.\n\n"
                    f"## Termin\n\nPlik JPK_V7M składa się do 25. dnia miesiąca.\n")
        elif i % 3 == 1:
            text = (f"---\ntitle: Daň {i}\nurl: https://example.org/{i}\n---\n\nKoľko stojí "
                    f"priznanie k dani z príjmov {i}?\n\n```sh\ncalc --year {i}\n```\n")
        else:
            text = (f"# Tool {i}\n\n> The invoices were issued in {i}.\n\n- List the files:\n\n"
                    f"`ls -la path/to/dir{i}`\n\n" + "A long line of words. " * (i % 7) * 20 + "\n")
        files[f"part{i % 4}/doc{i:03}.md"] = text
    files["part0/binary.md"] = b"\x00\x01 not text"
    files["part1/utf16.txt"] = "Zażółć gęślą jaźń, UTF-16.\n".encode("utf-16")
    return files


def table_rows(cache_dir: str) -> dict[str, list[tuple]]:
    """Return every row of every table of the one index in cache_dir, sorted."""
    [name] = [n for n in os.listdir(cache_dir) if n.endswith(".sqlite")]
    conn = sqlite3.connect(os.path.join(cache_dir, name))
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    finally:
        conn.close()


class IndexWorkersTest(TempDirTest):

    def setUp(self) -> None:
        super().setUp()
        write_files(self.docs, corpus(40))
        patch = mock.patch.object(docs_qa, "LISTING_SETTLE_NS", NO_LISTINGS)
        patch.start()
        self.addCleanup(patch.stop)

    def run_index(self, cache: str, mode: str = "plain", *extra: str) -> dict:
        proc = subprocess.run([sys.executable, "-c", INDEX_SCRIPT, REPO, self.docs, cache, mode, *extra],
                              capture_output=True, text=True, timeout=WAIT_S)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def serial_index(self, cache: str) -> docs_qa.IndexStats:
        return docs_qa.index_folder(self.settings(cache_dir=cache, use_embeddings=False, index_workers=1))

    def test_workers_write_the_index_one_process_writes(self):
        parallel, serial = os.path.join(self.tmp, "parallel"), os.path.join(self.tmp, "serial")
        report = self.run_index(parallel)
        self.assertEqual(report["started"], 2)
        self.assertEqual(report["new"], self.serial_index(serial).new)
        self.assertEqual(table_rows(parallel), table_rows(serial))
        # a refresh: files changed, one added, one removed, one made unreadable
        write_files(self.docs, {"part0/doc000.md": "# Faktura 0\n\nNowy tekst o fakturze.\n",
                                "part2/doc002.md": "# Tool 2\n\nChanged words entirely.\n",
                                "part3/new.md": "# Nowy\n\nNowy plik o podatku.\n",
                                "part1/doc001.md": b"\x00binary now"})
        os.remove(os.path.join(self.docs, "part3", "doc003.md"))
        report = self.run_index(parallel)
        stats = self.serial_index(serial)
        self.assertEqual([report[k] for k in ("new", "updated", "removed", "unchanged")],
                         [stats.new, stats.updated, stats.removed, stats.unchanged])
        self.assertEqual(table_rows(parallel), table_rows(serial))

    def test_a_folder_of_few_files_but_many_bytes_is_parsed_by_workers_in_batches_cut_by_size(self):
        parallel, serial = os.path.join(self.tmp, "parallel"), os.path.join(self.tmp, "serial")
        self.assertEqual(self.run_index(parallel, "bytes")["started"], 2)
        self.serial_index(serial)
        self.assertEqual(table_rows(parallel), table_rows(serial))

    def test_no_worker_starts_beside_another_thread(self):
        parallel, serial = os.path.join(self.tmp, "parallel"), os.path.join(self.tmp, "serial")
        self.assertEqual(self.run_index(parallel, "thread")["started"], 0)
        self.serial_index(serial)
        self.assertEqual(table_rows(parallel), table_rows(serial))

    def test_a_worker_that_dies_leaves_its_batches_to_the_indexer(self):
        parallel, serial = os.path.join(self.tmp, "parallel"), os.path.join(self.tmp, "serial")
        self.assertEqual(self.run_index(parallel, "die")["started"], 2)
        self.serial_index(serial)
        self.assertEqual(table_rows(parallel), table_rows(serial))

    def test_a_worker_that_answers_garbage_leaves_its_batches_to_the_indexer(self):
        fake = os.path.join(self.tmp, "fake-python")
        with open(fake, "w") as fh:
            fh.write("#!/bin/sh\nprintf 'not a parsed batch, not even close'\n")
        os.chmod(fake, 0o755)
        parallel, serial = os.path.join(self.tmp, "parallel"), os.path.join(self.tmp, "serial")
        self.assertEqual(self.run_index(parallel, "garbage", fake)["started"], 2)
        self.serial_index(serial)
        self.assertEqual(table_rows(parallel), table_rows(serial))

    def run_early(self, cache: str, min_files: int, units: int = 2) -> dict:
        proc = subprocess.run([sys.executable, "-c", EARLY_SCRIPT, REPO, self.docs, cache, str(min_files),
                               str(units)],
                              capture_output=True, text=True, timeout=WAIT_S)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def test_a_large_first_walk_starts_the_workers_before_it_ends(self):
        early, serial = os.path.join(self.tmp, "early"), os.path.join(self.tmp, "serial")
        report = self.run_early(early, min_files=1)
        self.assertEqual(report["events"], ["spawn", "spawn", "walked", "apply 2"])
        self.assertEqual(report["alive"], 0)
        self.assertEqual(report["new"], self.serial_index(serial).new)
        self.assertEqual(table_rows(early), table_rows(serial))

    def test_workers_started_early_and_not_needed_are_stopped_before_the_first_batch(self):
        early, serial = os.path.join(self.tmp, "early"), os.path.join(self.tmp, "serial")
        report = self.run_early(early, min_files=len(corpus(40)) + 1)   # more files than the folder holds
        self.assertEqual(report["events"], ["spawn", "spawn", "walked", "apply 0"])
        self.assertEqual(report["alive"], 0)
        self.serial_index(serial)
        self.assertEqual(table_rows(early), table_rows(serial))

    def test_a_walk_not_shared_starts_the_workers_when_its_first_levels_list_enough_files(self):
        # 64 units: the whole tree (42 documents) is listed first, too few to share the walk
        for min_files, events in ((1, ["spawn", "spawn", "walked", "apply 2"]),
                                  (len(corpus(40)) + 1, ["walked", "apply 0"])):
            with self.subTest(min_files=min_files):
                early, serial = os.path.join(self.tmp, f"early{min_files}"), os.path.join(self.tmp, f"serial{min_files}")
                report = self.run_early(early, min_files=min_files, units=64)
                self.assertEqual(report["events"], events)
                self.assertEqual(report["alive"], 0)
                self.serial_index(serial)
                self.assertEqual(table_rows(early), table_rows(serial))

    def test_the_worker_count_comes_from_the_environment(self):
        settings = docs_qa.settings_from_env({"DOCS_QA_INDEX_WORKERS": " 3 "}, docs_dir=self.docs)
        self.assertEqual(settings.index_workers, 3)
        self.assertEqual(docs_qa.settings_from_env({}, docs_dir=self.docs).index_workers, 0)
        for bad in ("-1", "two", "1.5", "²"):
            with self.subTest(value=bad), self.assertRaises(docs_qa.InvalidRequestError):
                docs_qa.settings_from_env({"DOCS_QA_INDEX_WORKERS": bad}, docs_dir=self.docs)


class WorkerPathTest(TempDirTest):
    """A worker started from inside a docs folder imports nothing from it: `python -c` would
    put the working folder first on the path, ahead of the standard library."""

    def test_a_worker_imports_no_module_from_its_working_folder(self):
        marks = os.path.join(self.tmp, "marks")
        os.mkdir(marks)
        planted = marking_modules(marks, ("argparse", "json", "re", "docs_qa"))
        write_files(self.docs, {**planted, "a.md": "# A\n\nAlpha text.\n", "b.md": "# B\n\nBeta.\n"})
        proc = subprocess.run([sys.executable, "-c", WORKER_CWD_SCRIPT, REPO, self.docs],
                              capture_output=True, text=True, timeout=WAIT_S)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads(proc.stdout), {"files": 2})     # the worker parsed the job
        self.assertEqual(os.listdir(marks), [])


class IndexWorkersSignalTest(TempDirTest):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) and SIGTERM (to the
    indexing process) during a parallel index end it in one line, and every worker with it."""

    def setUp(self) -> None:
        super().setUp()
        write_files(self.docs, corpus(24))

    def start(self) -> tuple[subprocess.Popen, list[int]]:
        marker = os.path.join(self.tmp, "workers")
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
        # a shell starts background jobs with SIGINT ignored, which the child would keep
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            proc = subprocess.Popen([sys.executable, "-c", SIGNAL_SCRIPT, REPO, marker, "index",
                                     "--docs", self.docs, "--cache-dir", self.cache, "--no-embed"],
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, start_new_session=True)
        finally:
            signal.signal(signal.SIGINT, previous)
        self.addCleanup(lambda: proc.poll() is None and os.killpg(proc.pid, signal.SIGKILL))
        deadline = time.monotonic() + WAIT_S
        while not os.path.exists(marker):
            self.assertIsNone(proc.poll(), proc.stderr.read() if proc.poll() is not None else "")
            self.assertLess(time.monotonic(), deadline, "the index never reached its first batch")
            time.sleep(0.02)
        with open(marker) as fh:
            workers = [int(pid) for pid in fh.read().split()]
        self.assertEqual(len(workers), 2)
        return proc, workers

    def assert_ended(self, proc: subprocess.Popen, workers: list[int], code: int, word: str) -> None:
        out, err = proc.communicate(timeout=WAIT_S)
        self.assertEqual(proc.returncode, code, err)
        self.assertEqual(err.strip().splitlines()[-1:], [f"docs_qa: {word}"])
        self.assertNotIn("Traceback", err)
        for pid in workers:                # killed and reaped by the indexing process
            with self.assertRaises(ProcessLookupError):
                os.kill(pid, 0)

    def test_sigterm_ends_the_indexer_and_its_workers(self):
        proc, workers = self.start()
        proc.send_signal(signal.SIGTERM)
        self.assert_ended(proc, workers, 143, "terminated")

    def test_ctrl_c_ends_the_indexer_and_its_workers(self):
        proc, workers = self.start()
        os.killpg(proc.pid, signal.SIGINT)
        self.assert_ended(proc, workers, 130, "interrupted")


class BatchSizeTest(unittest.TestCase):
    """A refresh of a few thousand files is cut into about PARSE_BATCHES batches, within the
    bounds; a large one into batches of PARSE_BATCH_FILES; a folder of large files by size too."""

    def test_a_few_large_files_are_cut_by_size_in_order(self):
        mb = 1 << 20
        sizes = [3 * mb, 10, 10, mb // 2, mb // 2, mb // 2, 10] + [100] * 20     # 27 files, 4.5 MB
        todo = [docs_qa.FileEntry(f"f{i}.md", f"/d/f{i}.md", 0, size) for i, size in enumerate(sizes)]
        # 27 files are under one batch's PARSE_BATCH_MIN_FILES; the bytes close each batch, at
        # 4.5 MB / PARSE_BATCHES, about 98 KB: the first file alone, then 10 + 10 + 512 KB, ...
        self.assertEqual(docs_qa._batch_bytes(sum(sizes)), -(-sum(sizes) // docs_qa.PARSE_BATCHES))
        batches = docs_qa._parse_batches(todo)
        self.assertEqual([[int(e.rel_path[1:-3]) for e in batch] for batch in batches],
                         [[0], [1, 2, 3], [4], [5], list(range(6, 27))])

    def test_batches_are_finer_for_fewer_files(self):
        most, least, wanted = docs_qa.PARSE_BATCH_FILES, docs_qa.PARSE_BATCH_MIN_FILES, docs_qa.PARSE_BATCHES
        for n_files in (1, least * wanted - 1, least * wanted, 6000, most * wanted, 10 * most * wanted):
            with self.subTest(n_files=n_files):
                size = docs_qa._batch_files(n_files)
                self.assertTrue(least <= size <= most, size)
                batches = -(-n_files // size)
                if n_files >= most * wanted:
                    self.assertEqual(size, most)
                elif n_files >= least * wanted:
                    self.assertTrue(wanted - 1 <= batches <= wanted, batches)
                else:
                    self.assertEqual(size, least)


class SlowLink:
    """A stand-in worker's link, in this process: it answers each job it was sent (parsed
    here) at the polls-th look for it, so the pool sees the batch not back before that."""

    def __init__(self, tokenizer: docs_qa.Tokenizer, polls: int) -> None:
        self.tokenizer, self.polls, self.looks, self.ended = tokenizer, polls, 0, False
        self.jobs: collections.deque = collections.deque()

    def send(self, number: int, data: bytes) -> None:
        self.jobs.append((number, data))

    def receive(self) -> tuple[int, bytes] | None:
        if not self.jobs:
            return None
        self.looks += 1
        if self.looks < self.polls:
            return None
        self.looks = 0
        number, data = self.jobs.popleft()
        return number, marshal.dumps(tuple(docs_qa._parse_job(marshal.loads(data), self.tokenizer)))


# Indexes DOCS into CACHE in this one process (no worker) and prints whether the cyclic GC was
# on while each batch was parsed, and after. MODE "thread": another thread runs meanwhile.
GC_SCRIPT = r'''
import gc, json, sys, threading
sys.path.insert(0, sys.argv[1])
import docs_qa
docs, cache, mode = sys.argv[2], sys.argv[3], sys.argv[4]
if mode == "thread":
    threading.Thread(target=threading.Event().wait, daemon=True).start()
during, real = [], docs_qa._parse_batch
def spy(*args, **kwargs):
    during.append(gc.isenabled())
    return real(*args, **kwargs)
docs_qa._parse_batch = spy
docs_qa.index_folder(docs_qa.settings_from_env({}, docs_dir=docs, cache_dir=cache, use_embeddings=False,
                                               index_workers=1))
print(json.dumps({"during": during, "after": gc.isenabled()}))
'''


class ParseGcTest(TempDirTest):
    """The cyclic GC is paused while a single-threaded process parses, with no worker as with
    some, and on again after; beside another thread it is left on (section 10d)."""

    def run_index(self, mode: str) -> dict:
        write_files(self.docs, corpus(12))
        proc = subprocess.run([sys.executable, "-c", GC_SCRIPT, REPO, self.docs, self.cache, mode],
                              capture_output=True, text=True, timeout=WAIT_S)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def test_a_single_threaded_parse_pauses_the_gc_and_turns_it_on_again(self):
        report = self.run_index("plain")
        self.assertTrue(report["during"])
        self.assertEqual(set(report["during"]), {False})
        self.assertTrue(report["after"])

    def test_beside_another_thread_the_gc_stays_on(self):
        report = self.run_index("thread")
        self.assertTrue(report["during"])
        self.assertEqual(set(report["during"]), {True})
        self.assertTrue(report["after"])


class EndGameTest(TempDirTest):
    """The parse pool's last batches (section 10d): the background work runs while the batch
    needed is at a worker, only near the end and until it has none left; the batches come
    in order and as parsed. A stand-in worker, so the order of events is fixed."""

    def test_background_work_fills_the_wait_for_the_last_batches(self):
        write_files(self.docs, corpus(36))
        entries, _ = docs_qa.corpus_walk(self.docs)
        batches = [entries[i:i + 2] for i in range(0, len(entries), 2)]
        tokenizer = docs_qa.Tokenizer()

        def job(number: int) -> tuple:
            return (list(map(tuple, batches[number])), [None] * len(batches[number]), 10**6,
                    docs_qa.DEFAULT_CHUNK_CHARS)
        left_at_calls: list[int] = []

        def background() -> bool:
            left_at_calls.append(pool.n_batches - pool.next_batch)
            return len(left_at_calls) < 5                   # four steps of work, then none
        worker = docs_qa._Worker(0, SlowLink(tokenizer, polls=3), collections.deque())
        with mock.patch.object(docs_qa, "_stop_workers", lambda workers, keep=0: workers.clear()), \
                mock.patch.object(docs_qa, "_wait_links", lambda links: None):     # waiting: a look again
            pool = docs_qa._ParsePool(job, len(batches), [worker], tokenizer, background)
            got = list(pool.results())
        want = [docs_qa._parse_job(job(n), docs_qa.Tokenizer()) for n in range(len(batches))]
        self.assertEqual(got, want)
        self.assertEqual(len(left_at_calls), 5)              # asked again until it had none left
        self.assertTrue(all(left <= 2 * docs_qa.PARSE_AHEAD for left in left_at_calls), left_at_calls)
        self.assertIsNone(pool.background)


if __name__ == "__main__":
    unittest.main()
