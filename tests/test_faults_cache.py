"""Fault battery, part 3: a damaged, foreign, old, unwritable or contended cache.

The cache is an accelerator, never a source of truth: whatever happened to it, the
next answer is the one a fresh in-memory index gives.
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import unittest
from unittest import mock

from helpers import (REPO, TAX_CORPUS, TempDirTest, assert_clean_failure_output, docs_qa,
                     run_cli, write_files)
import parallel

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
QUESTION = "faktura korygująca rabat"


class CacheCase(TempDirTest):
    def setUp(self):
        super().setUp()
        write_files(self.docs, TAX_CORPUS)

    def labels(self, result) -> list[str]:
        return [h.chunk.label for h in result.hits]

    def fresh(self) -> list[str]:
        """The reference answer: an in-memory index, no cache involved."""
        return self.labels(docs_qa.search(QUESTION, self.settings(cache_dir=None)))

    def cache_file(self) -> str:
        return docs_qa.cache_path(self.cache, self.docs)

    def build(self) -> None:
        docs_qa.search(QUESTION, self.settings())
        self.assertTrue(os.path.isfile(self.cache_file()))


class DamagedCacheTest(CacheCase):
    def assert_rebuilt(self) -> None:
        result = docs_qa.search(QUESTION, self.settings())
        self.assertEqual(self.labels(result), self.fresh())
        self.assertIn("cache_rebuilt", [n.code for n in result.notes])
        again = docs_qa.search(QUESTION, self.settings())
        self.assertEqual(self.labels(again), self.fresh())
        self.assertNotIn("cache_rebuilt", [n.code for n in again.notes])
        self.assertEqual(again.stats.new, 0, "the rebuilt cache is used by the next run")

    def test_a_count_in_the_meta_that_is_no_number_is_rebuilt(self):
        self.build()
        for key, value in (("n_files", "x"), ("n_folders", "1.5"), ("n_chunks", "-1"), ("avg_terms", "nan")):
            with self.subTest(key=key, value=value):
                conn = sqlite3.connect(self.cache_file())
                with conn:
                    self.assertEqual(conn.execute("UPDATE meta SET value=? WHERE key=?", (value, key)).rowcount, 1)
                conn.close()
                snapshot = docs_qa.cache_snapshot(self.cache_file())   # what a run that cannot write reads
                self.assertEqual(snapshot.execute("SELECT COUNT(*) FROM chunks").fetchone()[0], 0)
                snapshot.close()
                self.assert_rebuilt()

    def test_truncated_cache_file_is_rebuilt(self):
        self.build()
        with open(self.cache_file(), "rb") as fh:
            data = fh.read()
        with open(self.cache_file(), "wb") as fh:
            fh.write(data[:len(data) // 2])
        self.assert_rebuilt()

    def test_random_bytes_are_rebuilt(self):
        self.build()
        with open(self.cache_file(), "wb") as fh:
            fh.write(os.urandom(20000))
        self.assert_rebuilt()

    def test_sqlite_header_with_garbage_pages_is_rebuilt(self):
        self.build()
        with open(self.cache_file(), "r+b") as fh:
            fh.seek(100)
            fh.write(os.urandom(8000))
        self.assert_rebuilt()

    def test_cache_of_an_older_schema_is_rebuilt(self):
        os.makedirs(self.cache)
        conn = sqlite3.connect(self.cache_file())
        conn.execute(f"PRAGMA application_id={docs_qa.CACHE_APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version={docs_qa.CACHE_SCHEMA_VERSION - 1}")
        conn.execute("CREATE TABLE chunks(path TEXT, text TEXT)")
        conn.execute("INSERT INTO chunks VALUES('jpk.md', 'stale text that must never be shown')")
        conn.commit()
        conn.close()
        self.assert_rebuilt()

    def test_a_foreign_sqlite_file_is_rebuilt_not_trusted(self):
        os.makedirs(self.cache)
        conn = sqlite3.connect(self.cache_file())
        conn.execute("CREATE TABLE unrelated(x)")
        conn.commit()
        conn.close()
        self.assert_rebuilt()

    def test_cached_text_tampered_in_place_is_not_served_after_the_file_changes(self):
        self.build()
        write_files(self.docs, {"faktury/korekta.md": "# Faktura korygująca\n\nFakturę korygującą "
                                "wystawia się po rabacie; to nowa treść pliku.\n"})
        result = docs_qa.search(QUESTION, self.settings())
        self.assertIn("nowa treść", result.hits[0].chunk.text)
        self.assertEqual(self.labels(result), self.fresh())


class UnwritableCacheTest(CacheCase):
    def assert_runs_in_memory(self, settings=None) -> None:
        result = docs_qa.search(QUESTION, settings or self.settings())
        self.assertEqual(self.labels(result), self.fresh())
        self.assertIn("cache_unavailable", [n.code for n in result.notes])

    def test_read_only_cache_folder_runs_without_caching_and_says_so(self):
        os.makedirs(self.cache)
        if IS_ROOT:
            # root may write anywhere: report the folder as read-only the way access(2) does.
            real_access = os.access
            with mock.patch.object(docs_qa.os, "access",
                                   lambda p, m: False if p == self.cache and m & os.W_OK
                                   else real_access(p, m)):
                self.assert_runs_in_memory()
        else:
            os.chmod(self.cache, 0o555)
            self.addCleanup(os.chmod, self.cache, 0o755)
            self.assert_runs_in_memory()
        self.assertEqual(os.listdir(self.cache), [], "nothing was written")

    def test_cache_folder_that_is_a_file_runs_without_caching(self):
        with open(self.cache, "w") as fh:
            fh.write("not a folder")
        self.assert_runs_in_memory()

    def test_cache_file_that_is_a_folder_runs_without_caching(self):
        os.makedirs(self.cache_file())
        self.assert_runs_in_memory()

    def test_cli_with_a_cache_dir_that_is_a_file_is_an_error(self):
        # a --cache-dir the user named must be a folder (issue 2: exit 1, one line on
        # stderr); the library's in-memory fallback above is for the default location
        with open(self.cache, "w") as fh:
            fh.write("not a folder")
        proc = run_cli(QUESTION, "--docs", self.docs, "--cache-dir", self.cache, "--json")
        assert_clean_failure_output(self, proc)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        envelope = json.loads(proc.stdout)
        self.assertEqual((envelope["status"], envelope["reason"], envelope["fields"]),
                         ("error", "invalid_request", ["cache_dir"]))
        self.assertNotIn(self.tmp, proc.stdout)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1)

    def test_cli_with_a_missing_cache_dir_creates_it(self):
        proc = run_cli(QUESTION, "--docs", self.docs, "--cache-dir", self.cache, "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(os.listdir(self.cache))


class ConcurrencyTest(CacheCase):
    def many_files(self, n: int) -> None:
        for i in range(n):
            write_files(self.docs, {f"bulk/f{i}.md": f"# Bulk {i}\n\nmarker{i} filler words alpha beta\n"})

    def test_two_processes_indexing_the_same_folder_at_once(self):
        self.many_files(800)
        args = [sys.executable, os.path.join(REPO, "docs_qa.py"), "index", "--docs", self.docs,
                "--cache-dir", self.cache, "--json"]
        env = dict(os.environ, EMBED_MOCK="1")
        procs = [subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(2)]
        outs = [p.communicate(timeout=60) for p in procs]
        for proc, (out, err) in zip(procs, outs):
            self.assertEqual(proc.returncode, 0, err)
            self.assertNotIn("Traceback", err)
        counts = [json.loads(out) for out, _ in outs]
        # together they saw every file once as new; the other run found them unchanged.
        # (the message carries both runs' notes and stderr, should this ever fail again)
        self.assertEqual(sorted(c["new"] for c in counts), [0, 803],
                         [(c["notes"], err[-500:]) for c, (_, err) in zip(counts, outs)])
        self.assertEqual(counts[0]["chunks"], counts[1]["chunks"])
        result = docs_qa.search("marker123", self.settings(use_embeddings=False))
        self.assertEqual(self.labels(result), ["bulk/f123.md:1-3"])
        self.assertEqual(result.stats.new + result.stats.updated, 0)

    def test_a_lock_another_process_holds_is_waited_for_not_taken_for_damage(self):
        self.build()                                  # a cache of the 3 corpus files
        write_files(self.docs, {"extra.md": "# Extra\n\nNowy dokument o akcyzie na paliwa.\n"})
        holder = sqlite3.connect(self.cache_file(), isolation_level=None, check_same_thread=False)
        self.addCleanup(holder.close)
        holder.execute("BEGIN IMMEDIATE")             # another writer holds the lock for 0.6 s
        threading.Timer(0.6, holder.execute, ("COMMIT",)).start()
        result = docs_qa.search(QUESTION, self.settings(cache_busy_timeout_s=0.2, cache_busy_retries=50))
        # the cache was kept: only the new file was indexed (a rebuild would count 4 new)
        self.assertEqual((result.stats.new, result.stats.unchanged), (1, 3))
        self.assertNotIn("cache_rebuilt", [n.code for n in result.notes])
        self.assertEqual(self.labels(result), self.fresh())

    def test_a_lock_never_released_is_an_error_and_the_cache_survives(self):
        self.build()
        write_files(self.docs, {"extra.md": "# Extra\n\nNowy dokument o akcyzie na paliwa.\n"})
        holder = sqlite3.connect(self.cache_file(), isolation_level=None)
        self.addCleanup(holder.close)
        holder.execute("BEGIN IMMEDIATE")
        with self.assertRaises(docs_qa.RetrievalUnavailableError):
            docs_qa.search(QUESTION, self.settings(cache_busy_timeout_s=0.1))
        holder.execute("COMMIT")
        self.assertEqual(docs_qa.search(QUESTION, self.settings()).stats.unchanged, 3)

    def test_process_killed_mid_write_leaves_a_cache_that_answers_correctly(self):
        self.many_files(3000)
        args = [sys.executable, os.path.join(REPO, "docs_qa.py"), "index", "--docs", self.docs,
                "--cache-dir", self.cache]
        proc = subprocess.Popen(args, env=dict(os.environ, EMBED_MOCK="1"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        journal = self.cache_file() + "-journal"  # a new file's first index writes with a rollback journal
        deadline = time.monotonic() + 20  # a guard against a hung indexer, not a bound
        while not (os.path.exists(journal) and os.path.exists(self.cache_file())) \
                and time.monotonic() < deadline:
            time.sleep(0.01)              # until the first transaction has written pages
        proc.send_signal(signal.SIGKILL)
        self.assertEqual(proc.wait(), -signal.SIGKILL, "the indexer was still writing when killed")
        reference = docs_qa.search("marker2999", self.settings(cache_dir=None, use_embeddings=False))
        result = docs_qa.search("marker2999", self.settings(use_embeddings=False))
        self.assertEqual(self.labels(result), self.labels(reference))
        self.assertEqual(self.labels(result), ["bulk/f2999.md:1-3"])
        self.assertEqual(result.stats.chunks, reference.stats.chunks)
        self.assertEqual(result.index_version, reference.index_version)
        self.assertEqual(journal_mode(self.cache_file()), "wal")      # the refresh that finished switched it

    def test_a_new_cache_is_indexed_with_a_rollback_journal_then_left_in_wal_mode(self):
        seen, real_apply = [], docs_qa._apply_batch

        def apply(*args):
            with open(self.cache_file(), "rb") as fh:
                seen.append(fh.read(20)[18:20])  # the header's write and read versions: 1 rollback, 2 WAL
            real_apply(*args)
        with mock.patch.object(docs_qa, "_apply_batch", apply):
            self.build()
        self.assertEqual(seen, [b"\x01\x01"])
        self.assertEqual(journal_mode(self.cache_file()), "wal")
        write_files(self.docs, {"extra.md": "# Extra\n\nNowy dokument o akcyzie na paliwa.\n"})
        self.assertEqual(docs_qa.search(QUESTION, self.settings()).stats.new, 1)
        self.assertEqual(journal_mode(self.cache_file()), "wal")

    def test_a_new_file_read_past_the_busy_timeout_is_switched_by_the_next_refresh(self):
        readers, real_use_wal = [], docs_qa.cache_use_wal

        def use_wal_while_read(conn):
            reader = sqlite3.connect(self.cache_file(), isolation_level=None)
            reader.execute("BEGIN")                   # another process's read transaction
            reader.execute("SELECT COUNT(*) FROM files").fetchone()
            readers.append(reader)
            real_use_wal(conn)
        settings = self.settings(use_embeddings=False, cache_busy_timeout_s=0.1)
        with mock.patch.object(docs_qa, "cache_use_wal", use_wal_while_read):
            first = docs_qa.search(QUESTION, settings)
        readers[0].execute("COMMIT")
        readers[0].close()
        self.assertEqual((first.stats.new, journal_mode(self.cache_file())), (3, "delete"))
        again = docs_qa.search(QUESTION, settings)
        self.assertEqual((again.stats.unchanged, journal_mode(self.cache_file())), (3, "wal"))
        self.assertEqual(self.labels(again), self.labels(first))


def journal_mode(path: str) -> str:
    """Return the journal mode of the sqlite file at path."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()


if __name__ == "__main__":
    unittest.main()
