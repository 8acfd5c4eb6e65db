"""A cache write that fails (issue 12, defect 4; sections 10 and 12): disk full, quota or
read-only never deletes or truncates the cache; the run answers from an in-memory copy
of the cache as it stands, with a `cache_unavailable` note; after space is freed nothing
is embedded again. Only proven corruption rebuilds (tests/test_faults_cache.py).

Which fault ran is in the test's name: `..._real_tmpfs` fills a real small tmpfs mounted
on a temporary folder (root only; skipped otherwise), `..._injected_max_page_count`
makes SQLite's own pager refuse to grow the file (SQLITE_FULL, every machine)."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import sqlite3
import subprocess
import unittest
from unittest import mock

from helpers import StubServerCase, run_cli, write_files

import docs_qa

QUESTION = "termin JPK"
TMPFS_BYTES = 4 * 1024 * 1024


def cache_counts(path: str) -> tuple[int, int, str]:
    """Return (vectors, chunks, integrity_check) of a cache file, reading it only."""
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return (conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0],
                conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0],
                conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


class DiskFullTest(StubServerCase):
    """The cache lives where writes fail; the stub embedding server counts every text."""

    def env(self) -> dict[str, str]:
        return {"EMBED_MOCK": "0", "DOCS_QA_BASE_URL": self.stub.base_url,
                "DOCS_QA_EMBED_MODEL": "text-embedding-stub"}

    def cli(self, *args: str) -> dict:
        proc = run_cli(*args, "--docs", self.docs, "--cache-dir", self.cache, "--json", env=self.env())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)
        return json.loads(proc.stdout)

    def document_embeds(self) -> list[str]:
        """Return the texts embedded as documents (not the question) since the last reset."""
        return [text for path, body in self.stub.bodies if path.endswith("/embeddings")
                for text in ([body["input"]] if isinstance(body["input"], str) else body["input"])
                if not text.endswith(QUESTION)]

    def build(self) -> tuple[str, tuple[int, int, str]]:
        """Index and embed everything once; return the cache file and its counts."""
        counts = self.cli("index")
        self.assertGreater(counts["chunks"], 0)
        path = docs_qa.cache_path(self.cache, self.docs)
        before = cache_counts(path)
        self.assertGreater(before[0], 0)
        self.assertGreater(len(self.document_embeds()), 0)
        self.reset_counts()
        return path, before

    def reset_counts(self) -> None:
        """Zero the stub's counters, keeping its vector size."""
        dim = self.stub.dim
        self.stub.reset()
        self.stub.dim = dim

    def assert_answered_with_note(self, envelope: dict) -> None:
        self.assertEqual(envelope["status"], "ok", envelope)
        self.assertTrue(envelope["sources"])
        self.assertIn("cache_unavailable", [n["code"] for n in envelope["notes"]])

    def assert_nothing_embedded_again(self) -> None:
        self.reset_counts()
        again = self.cli(QUESTION, "--search")
        self.assertEqual(again["status"], "ok")
        self.assertNotIn("cache_unavailable", [n["code"] for n in again["notes"]])
        self.assertEqual(self.document_embeds(), [])

    def test_disk_full_real_tmpfs(self):
        if os.geteuid() != 0:
            self.skipTest("not root: no tmpfs can be mounted (the injected fault test runs instead)")
        os.makedirs(self.cache)
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", self.cache],
                                 capture_output=True)
        if mounted.returncode != 0:
            self.skipTest("mount -t tmpfs is not allowed here (the injected fault test runs instead)")
        self.addCleanup(subprocess.run, ["umount", "-l", self.cache], capture_output=True)
        path, before = self.build()
        filler = os.path.join(self.cache, "filler")
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)   # take every free byte of the file system
        try:
            for size in (65536, 1):
                with contextlib.suppress(OSError):
                    while os.write(fd, b"\0" * size):
                        pass
        finally:
            os.close(fd)
        probe = os.open(os.path.join(self.cache, "probe"), os.O_WRONLY | os.O_CREAT)
        with self.assertRaises(OSError) as full:
            try:
                os.write(probe, b"\0" * 4096)
            finally:
                os.close(probe)
        self.assertEqual(full.exception.errno, errno.ENOSPC)
        write_files(self.docs, {"new.md": "# Nowy\n\nTermin JPK dla nowego pliku to 25. dzień.\n"})
        self.assert_answered_with_note(self.cli(QUESTION, "--search"))
        self.assertIn("cache_unavailable", [n["code"] for n in self.cli("index")["notes"]])
        self.assertEqual(cache_counts(path), before)
        os.remove(filler)
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(self.cache, "probe"))
        os.remove(os.path.join(self.docs, "new.md"))
        self.assert_nothing_embedded_again()
        self.assertEqual(cache_counts(path), (before[0] + 1, before[1], "ok"))   # + the question's vector

    def assert_survives_with(self, path: str, before: tuple, connect) -> None:
        """Ask with sqlite3.connect replaced by connect; the answer comes with the note, the
        cache keeps its rows and nothing is embedded again."""
        out = io.StringIO()
        with mock.patch.object(docs_qa.sqlite3, "connect", connect), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = docs_qa.main([QUESTION, "--search", "--json", "--docs", self.docs,
                                 "--cache-dir", self.cache], environ=self.env())
        self.assertEqual(code, 0, out.getvalue())
        self.assert_answered_with_note(json.loads(out.getvalue()))
        self.assertEqual(cache_counts(path), before)
        self.assert_nothing_embedded_again()

    def test_disk_full_injected_max_page_count(self):
        self.stub.dim = 2048          # a question's vector then needs pages the file may not add
        path, before = self.build()
        real_connect = sqlite3.connect

        def full_connect(database, *args, **kwargs):
            conn = real_connect(database, *args, **kwargs)
            if database == path:
                conn.execute("PRAGMA max_page_count = 1")   # = the current size: no page may be added
            return conn

        self.assert_survives_with(path, before, full_connect)

    def test_read_only_cache_file_injected(self):
        path, before = self.build()
        real_connect = sqlite3.connect

        def read_only_connect(database, *args, **kwargs):
            if database == path:
                database, kwargs = f"file:{path}?mode=ro", {**kwargs, "uri": True}
            return real_connect(database, *args, **kwargs)

        self.assert_survives_with(path, before, read_only_connect)

    def test_fault_kinds(self):
        full = sqlite3.OperationalError("database or disk is full")
        self.assertEqual(docs_qa._cache_fault(full), "unwritable")
        self.assertEqual(docs_qa._cache_fault(sqlite3.OperationalError("disk I/O error")), "unwritable")
        self.assertEqual(docs_qa._cache_fault(
            sqlite3.OperationalError("attempt to write a readonly database")), "unwritable")
        self.assertEqual(docs_qa._cache_fault(
            sqlite3.DatabaseError("database disk image is malformed")), "damaged")
        self.assertEqual(docs_qa._cache_fault(sqlite3.DatabaseError("file is not a database")), "damaged")
        self.assertEqual(docs_qa._cache_fault(sqlite3.OperationalError("database is locked")), "busy")


if __name__ == "__main__":
    unittest.main()
