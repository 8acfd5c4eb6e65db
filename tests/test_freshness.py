"""Tests of the freshness contract of serve and mcp (section 10h): with the index resident and
kept fresh by folder events (inotify) or a background sweep, a change made at least
--fresh-within seconds before a question is in its answer. Real files, a real `docs_qa.py
serve` or `mcp` subprocess; each change is followed by one question, asked once the
contract's seconds have passed (the server may wait for its index to catch up: that is the
contract), never by polling until it passes."""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import unittest
from dataclasses import replace
from unittest import mock

from helpers import (INIT, SERVE_POLL_S, McpProcess, ServeProcess, http_request, run_cli,
                     write_files)

import docs_qa
import parallel
import retrieval_contract as rc

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process

FRESH_S = 0.2                      # --fresh-within of the servers here
CORPUS = {"intro.md": "# Intro\n\nThe zebra eats grass in the open field every day.\n",
          "guide/setup.md": "# Setup\n\nInstall the package, then run the configure step once.\n"}
INOTIFY = sys.platform.startswith("linux")
BULK_FILES = 500                   # new files one question waits for the server to index (their
                                   # events take longer to apply than the question to arrive)


def doc(word: str) -> str:
    """Return a document whose only rare word is word (each change below has its own)."""
    return f"# Note\n\nThe {word} appears in this note about the folder.\n"


class ServerCase(unittest.TestCase):
    """A serve subprocess over a temporary folder; ask() returns the /search envelope of a
    question asked FRESH_S after the last change (after_change())."""

    extra: tuple[str, ...] = ()

    def setUp(self) -> None:
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        self.docs = write_files(os.path.join(tmp, "docs"), CORPUS)
        self.cache = os.path.join(tmp, "cache")
        self.server = ServeProcess(self.docs, "--cache-dir", self.cache, "--fresh-within", str(FRESH_S),
                                   "--no-embed", *self.extra)
        self.addCleanup(self.server.close)
        self.changed_at = time.monotonic()

    def path(self, rel: str) -> str:
        return os.path.join(self.docs, *rel.split("/"))

    def write(self, rel: str, text: str) -> None:
        os.makedirs(os.path.dirname(self.path(rel)), exist_ok=True)
        with open(self.path(rel), "w", encoding="utf-8") as fh:
            fh.write(text)
        self.changed_at = time.monotonic()

    def changed(self) -> None:
        self.changed_at = time.monotonic()

    def ask(self, query: str) -> dict:
        """Return the /search envelope of query, asked FRESH_S after the last change."""
        time.sleep(max(0.0, self.changed_at + FRESH_S - time.monotonic()))
        status, _, body = http_request(self.server.port, "POST", "/search", json.dumps({"query": query}),
                                       {"Content-Type": "application/json"}, timeout=120)
        envelope = json.loads(body)
        self.assertEqual(status, 200, envelope)
        return envelope

    def paths(self, query: str) -> set[str]:
        """Return the documents the /search envelope of query names."""
        return {source["document_path"] for source in self.ask(query)["sources"]}

    def health(self) -> dict:
        status, _, body = http_request(self.server.port, "GET", "/health")
        self.assertEqual(status, 200)
        return json.loads(body)

    @contextlib.contextmanager
    def stopped(self):
        """Stop the server for the block, then let it go on. kill() returns before its
        threads have stopped (the watching thread could still read events meanwhile); the
        stop is reported to this process, its parent, once every thread has."""
        os.kill(self.server.proc.pid, signal.SIGSTOP)
        try:
            os.waitpid(self.server.proc.pid, os.WUNTRACED)
            yield
        finally:
            os.kill(self.server.proc.pid, signal.SIGCONT)


@unittest.skipUnless(INOTIFY, "folder events are inotify (Linux); elsewhere serve sweeps")
class WatchedFileTest(ServerCase):
    def test_health_and_envelopes_say_the_folder_is_watched(self):
        self.assertEqual(self.health()["freshness"]["mode"], "watch")
        envelope = self.ask("zebra grass")
        self.assertEqual(envelope["freshness"]["mode"], "watch")
        self.assertGreaterEqual(envelope["freshness"]["age_s"], 0)
        schema = docs_qa.OPERATIONS["search"].response_schema
        self.assertEqual(rc.schema_errors(envelope, schema), [])
        self.assertIn("freshness", schema["properties"])
        self.assertNotIn("freshness", schema.get("required", []))

    def test_create_edit_rename_delete_and_replace_a_file(self):
        self.write("new.md", doc("platypus"))
        self.assertIn("new.md", self.paths("platypus"))
        self.write("new.md", doc("wombat"))                           # edited
        self.assertIn("new.md", self.paths("wombat"))
        self.assertNotIn("new.md", self.paths("platypus"))
        os.rename(self.path("new.md"), self.path("guide/moved.md"))   # renamed into a subfolder
        self.changed()
        self.assertEqual(self.paths("wombat"), {"guide/moved.md"})
        with open(self.path("other.md"), "w", encoding="utf-8") as fh:
            fh.write(doc("quokka"))
        os.replace(self.path("other.md"), self.path("guide/moved.md"))   # replaced by a rename over it
        self.changed()
        self.assertEqual(self.paths("quokka"), {"guide/moved.md"})
        self.assertNotIn("guide/moved.md", self.paths("wombat"))
        os.remove(self.path("guide/moved.md"))                        # deleted
        self.changed()
        self.assertEqual(self.ask("quokka")["sources"], [])

    def test_an_editor_writes_a_temporary_file_and_renames_it_over(self):
        for step, word in enumerate(("narwhal", "axolotl")):
            temp = self.path(f"guide/.setup.md.swp{step}")             # hidden: never a document
            with open(temp, "w", encoding="utf-8") as fh:
                fh.write(f"# Setup\n\nInstall the {word} package, then run the configure step once.\n")
            os.replace(temp, self.path("guide/setup.md"))
            self.changed()
            self.assertEqual(self.paths(word), {"guide/setup.md"})
        self.assertEqual(self.ask("narwhal")["sources"], [])

    @unittest.skipUnless(hasattr(signal, "SIGSTOP"), "needs SIGSTOP")
    def test_an_edit_that_keeps_the_size_and_modification_time(self):
        before = os.stat(self.path("intro.md"))
        with self.stopped():                                   # its stat is as it was when the server looks
            with open(self.path("intro.md"), "r+", encoding="utf-8") as fh:
                text = fh.read()
                fh.seek(0)
                fh.write(text.replace("zebra", "okapi"))               # same length
            os.utime(self.path("intro.md"), ns=(before.st_atime_ns, before.st_mtime_ns))
        self.changed()
        self.assertEqual(self.paths("okapi"), {"intro.md"})

    @unittest.skipUnless(hasattr(signal, "SIGSTOP"), "needs SIGSTOP")
    def test_a_question_waits_for_the_index_to_catch_up(self):
        with self.stopped():                                  # the changes wait, unread, meanwhile
            write_files(self.docs, {f"bulk/{n}.md": doc(f"filler{n}x") for n in range(BULK_FILES)})
            self.write("bulk/target.md", doc("quoll"))
            time.sleep(FRESH_S)                                # older than the contract when asked
        self.assertEqual(self.paths("quoll"), {"bulk/target.md"})


@unittest.skipUnless(INOTIFY, "folder events are inotify (Linux); elsewhere serve sweeps")
class WatchedFolderTest(ServerCase):
    def test_create_rename_delete_and_replace_a_folder(self):
        self.write("deep/a/b/one.md", doc("pangolin"))                # new nested subfolders
        self.assertEqual(self.paths("pangolin"), {"deep/a/b/one.md"})
        self.write("deep/a/b/two.md", doc("capybara"))                # the new ones are watched
        self.assertEqual(self.paths("capybara"), {"deep/a/b/two.md"})
        os.rename(self.path("deep/a"), self.path("deep/z"))            # renamed
        self.changed()
        self.assertEqual(self.paths("pangolin"), {"deep/z/b/one.md"})
        self.write("deep/z/b/three.md", doc("tapir"))                 # still watched under its new name
        self.assertEqual(self.paths("tapir"), {"deep/z/b/three.md"})
        shutil.rmtree(self.path("deep/z"))                            # replaced: deleted and made again
        self.write("deep/z/b/one.md", doc("ibex"))
        self.assertEqual(self.paths("ibex"), {"deep/z/b/one.md"})
        self.assertEqual(self.ask("pangolin")["sources"], [])
        self.assertEqual(self.ask("tapir")["sources"], [])
        fresh = os.path.join(os.path.dirname(self.docs), "elsewhere")  # replaced by a rename over it
        write_files(fresh, {"b/one.md": doc("gazelle")})
        shutil.rmtree(self.path("deep/z"))
        os.rename(fresh, self.path("deep/z"))
        self.changed()
        self.assertEqual(self.paths("gazelle"), {"deep/z/b/one.md"})
        self.assertEqual(self.ask("ibex")["sources"], [])
        shutil.rmtree(self.path("deep"))                              # deleted
        self.changed()
        self.assertEqual(self.ask("gazelle")["sources"], [])
        self.assertEqual(self.paths("zebra"), {"intro.md"})

    def test_folders_the_walk_leaves_out_stay_out(self):
        self.write(".hidden/secret.md", doc("mongoose"))              # hidden, as the walk skips them
        self.write("visible/seen.md", doc("mongoose"))
        self.assertEqual(self.paths("mongoose"), {"visible/seen.md"})
        os.symlink(self.path("visible"), self.path("linked"))          # a link is not followed
        self.write("visible/more.md", doc("meerkat"))
        self.assertEqual(self.paths("meerkat"), {"visible/more.md"})

    def test_the_folder_deleted_under_the_server_and_made_again(self):
        shutil.rmtree(self.docs)
        self.changed()
        envelope = self.ask_error("zebra")
        self.assertEqual(envelope["reason"], "invalid_request")
        write_files(self.docs, {"back.md": doc("lemur")})
        self.changed()
        self.assertEqual(self.paths("lemur"), {"back.md"})
        self.assertEqual(self.ask("zebra")["sources"], [])
        self.write("later.md", doc("dingo"))                          # watched again
        self.assertEqual(self.paths("dingo"), {"later.md"})
        self.assertEqual(self.health()["freshness"]["mode"], "watch")

    def test_the_folder_replaced_by_another_renamed_into_its_place(self):
        fresh = write_files(self.docs + ".new", {"swapped.md": doc("margay")})
        os.rename(self.docs, self.docs + ".old")
        os.rename(fresh, self.docs)
        self.changed()
        self.assertEqual(self.paths("margay"), {"swapped.md"})
        self.write("after.md", doc("serval"))                          # the new folder is the one watched
        self.assertEqual(self.paths("serval"), {"after.md"})
        with open(os.path.join(self.docs + ".old", "gone.md"), "w", encoding="utf-8") as fh:
            fh.write(doc("caracal"))                                   # the old one is not
        self.changed()
        self.assertEqual(self.ask("caracal")["sources"], [])

    def ask_error(self, query: str) -> dict:
        time.sleep(max(0.0, self.changed_at + FRESH_S - time.monotonic()))
        status, _, body = http_request(self.server.port, "POST", "/search", json.dumps({"query": query}),
                                       {"Content-Type": "application/json"}, timeout=120)
        self.assertNotEqual(status, 200)
        return json.loads(body)


@unittest.skipUnless(INOTIFY, "folder events are inotify (Linux); elsewhere serve sweeps")
class ScopedRefreshServerTest(ServerCase):
    """An event refreshes only the folders it names (index_refresh's scope): after each change,
    the server answers as a fresh index of the same folder does (a CLI run on a new cache),
    with the same index_version."""

    def check_as_fresh(self, query: str, paths: set[str]) -> None:
        served = self.ask(query)
        self.assertEqual({s["document_path"] for s in served["sources"]}, paths)
        fresh = os.path.join(tempfile.mkdtemp(), "cache")
        self.addCleanup(shutil.rmtree, os.path.dirname(fresh), ignore_errors=True)
        proc = run_cli(query, "--docs", self.docs, "--cache-dir", fresh, "--search", "--json", "--no-embed")
        walked = json.loads(proc.stdout)
        self.assertEqual(served["index_version"], walked["index_version"], query)
        self.assertEqual(served["sources"], walked["sources"], query)

    def test_an_event_compares_only_the_folder_it_names(self):
        self.ask("zebra")                                       # started and indexed
        conn = docs_qa.cache_open(docs_qa.cache_path(self.cache, self.docs))
        self.addCleanup(conn.close)
        signature = docs_qa.cache_meta(conn)["stat_sig"]
        with docs_qa.cache_transaction(conn):      # intro.md's stored stat made one no file has,
            docs_qa.cache_mark_stale(conn, ["intro.md"])        # the stat signature kept: a whole
            docs_qa.cache_meta_put(conn, {"stat_sig": signature})   # refresh would read it again
        self.write("guide/new.md", doc("platypus"))
        self.assertEqual(self.paths("platypus"), {"guide/new.md"})
        self.assertEqual(docs_qa.cache_file_state(conn, "intro.md").mtime_ns, -1)   # not compared
        self.assertIsNotNone(docs_qa.cache_file_state(conn, "guide/new.md"))

    def test_create_edit_rename_delete_in_a_folder_and_new_subfolders(self):
        self.check_as_fresh("zebra", {"intro.md"})
        self.write("guide/new.md", doc("platypus"))                     # created
        self.check_as_fresh("platypus", {"guide/new.md"})
        self.write("guide/new.md", doc("wombat") + "More words.\n")     # edited
        self.check_as_fresh("wombat", {"guide/new.md"})
        os.rename(self.path("guide/new.md"), self.path("guide/renamed.md"))   # renamed in its folder
        self.changed()
        self.check_as_fresh("wombat", {"guide/renamed.md"})
        self.write("guide/sub/deeper/leaf.md", doc("wombat"))           # new nested subfolders
        self.check_as_fresh("wombat", {"guide/renamed.md", "guide/sub/deeper/leaf.md"})
        os.remove(self.path("guide/setup.md"))                          # deleted
        self.write("intro.md", doc("zebra") + "The numbat too.\n")     # the root's own document
        self.check_as_fresh("numbat", {"intro.md"})
        self.check_as_fresh("configure zebra", {"intro.md"})
        os.rename(self.path("guide/sub"), self.path("guide/moved"))      # a subfolder renamed
        self.changed()
        self.check_as_fresh("wombat", {"guide/renamed.md", "guide/moved/deeper/leaf.md"})
        shutil.rmtree(self.path("guide/moved"))                          # and deleted
        self.changed()
        self.check_as_fresh("wombat", {"guide/renamed.md"})


class ScopedIndexRefreshTest(unittest.TestCase):
    """index_refresh with a RefreshScope compares only the scope's documents with their stored
    states, and keeps the generation and statistics a recount of every document gives."""

    TOTALS = ("generation", "generation_marks", "n_files", "n_chunks", "n_terms", "avg_terms", "file_notes")

    def setUp(self) -> None:
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        self.docs = write_files(os.path.join(tmp, "docs"), {
            "root.md": doc("heron"), "a/one.md": doc("egret"), "a/old/two.md": doc("stork"),
            "b/three.md": doc("crane"), "a/binary.md": b"\x00\x01 not text"})
        self.cache = os.path.join(tmp, "cache")
        self.settings = docs_qa.Settings(docs_dir=self.docs, cache_dir=self.cache, use_embeddings=False)
        self.before = self.walk()
        docs_qa.index_folder(self.settings, scan=self.before)
        self.conn = docs_qa.cache_open(docs_qa.cache_path(self.cache, self.docs))
        self.addCleanup(self.conn.close)

    def walk(self) -> docs_qa.CorpusScan:
        return docs_qa.corpus_scan(self.docs, [self.cache])

    def change_a_and_b(self) -> docs_qa.CorpusScan:
        """Edit, add, delete and skip in a and its subfolders, edit b; return the walk after."""
        time.sleep(0.01)                       # a later mtime for the edits
        write_files(self.docs, {"a/one.md": doc("ibis") + "More.\n", "a/new/four.md": doc("plover"),
                                "a/bad.md": b"\x00 also binary", "b/three.md": doc("avocet") + "More.\n"})
        shutil.rmtree(os.path.join(self.docs, "a", "old"))
        os.remove(os.path.join(self.docs, "a", "binary.md"))
        return self.walk()

    def recounted(self) -> dict[str, str]:
        """Return the totals in meta as cache_update_generation recounts them (rolled back)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            docs_qa.cache_update_generation(self.conn)
            return {k: docs_qa.cache_meta(self.conn)[k] for k in self.TOTALS[:-1]}
        finally:
            self.conn.execute("ROLLBACK")

    def test_only_the_scope_is_compared_and_the_totals_are_a_recounts(self):
        after = self.change_a_and_b()
        scope = docs_qa.RefreshScope(self.before, frozenset({"a"}), frozenset({"a/old", "a/new"}), frozenset())
        stats = docs_qa.index_refresh(self.conn, self.settings, scan=after, scope=scope)
        self.assertEqual((stats.new, stats.updated, stats.removed), (1, 1, 1))
        meta = docs_qa.cache_meta(self.conn)
        self.assertEqual({k: meta[k] for k in self.TOTALS[:-1]}, self.recounted())
        self.assertEqual(meta["stat_sig"], after.signature)
        notes = json.loads(meta["file_notes"])
        self.assertEqual([code for code, _ in notes], ["not_text"])
        self.assertIn("1 file(s)", notes[0][1])            # a/bad.md; a/binary.md went with its file
        self.assertIn("a/bad.md", notes[0][1])
        stored = docs_qa.cache_file_state(self.conn, "b/three.md")      # outside the scope: not looked at
        self.assertNotEqual((stored.mtime_ns, stored.size), next(
            (e.mtime_ns, e.size) for e in after.entries if e.rel_path == "b/three.md"))
        self.assertIsNone(docs_qa.cache_file_state(self.conn, "a/old/two.md"))
        self.assertIsNotNone(docs_qa.cache_file_state(self.conn, "a/new/four.md"))

    def test_scoped_then_whole_refreshes_give_a_fresh_indexs_version_and_results(self):
        after = self.change_a_and_b()
        scope = docs_qa.RefreshScope(self.before, frozenset({"a"}), frozenset({"a/old", "a/new"}), frozenset())
        docs_qa.index_refresh(self.conn, self.settings, scan=after, scope=scope)
        scope = docs_qa.RefreshScope(after, frozenset({"b"}), frozenset(), frozenset())
        stats = docs_qa.index_refresh(self.conn, self.settings, scan=self.walk(), scope=scope)
        self.assertEqual((stats.new, stats.updated, stats.removed), (0, 1, 0))
        first = docs_qa.search("avocet", self.settings)          # walks: finds nothing left to redo
        self.assertEqual((first.stats.new, first.stats.updated, first.stats.removed), (0, 0, 0))
        fresh = replace(self.settings, cache_dir=self.cache + "-fresh")
        for query in ("ibis", "plover", "avocet", "heron", "stork note folder"):
            scoped, walked = docs_qa.search(query, self.settings), docs_qa.search(query, fresh)
            self.assertEqual(scoped.stats.index_version, walked.stats.index_version)
            self.assertEqual(scoped.hits, walked.hits, query)
            self.assertEqual(scoped.notes, walked.notes)
            self.assertTrue(scoped.hits or query == "stork note folder", query)

    def test_a_scope_over_an_index_another_refresh_changed_compares_everything(self):
        after = self.change_a_and_b()
        docs_qa.index_folder(self.settings, scan=after)         # another process's refresh
        write_files(self.docs, {"b/three.md": doc("curlew")})
        scope = docs_qa.RefreshScope(self.before, frozenset({"a"}), frozenset(), frozenset())
        stats = docs_qa.index_refresh(self.conn, self.settings, scan=self.walk(), scope=scope)
        self.assertEqual((stats.new, stats.updated, stats.removed), (0, 1, 0))   # b's edit is seen
        self.assertEqual([h.chunk.path for h in docs_qa.search("curlew", self.settings).hits], ["b/three.md"])

    def test_totals_another_version_left_behind_are_recounted_first(self):
        with docs_qa.cache_transaction(self.conn):       # a refresh by a version that keeps no
            docs_qa.cache_meta_put(self.conn, {"generation": "0123456789ab"})   # totals
        after = self.change_a_and_b()
        scope = docs_qa.RefreshScope(self.before, frozenset({"a"}), frozenset({"a/old", "a/new"}), frozenset())
        stats = docs_qa.index_refresh(self.conn, self.settings, scan=after, scope=scope)
        self.assertEqual((stats.new, stats.updated, stats.removed), (1, 2, 1))   # b too: a whole refresh
        meta = docs_qa.cache_meta(self.conn)
        self.assertEqual({k: meta[k] for k in self.TOTALS[:-1]}, self.recounted())

    def test_a_refresh_cut_short_after_a_commit_is_recounted_by_the_next(self):
        # a clock that runs 100 s per reading commits after every parse batch; the refresh is
        # stopped after the last one, so every file is stored but the totals are not: the
        # next refresh finds nothing left to read and must still recount them. (Its own
        # folder: this class's holds a binary file, which every refresh reads again.)
        docs = write_files(os.path.join(self.cache, "..", "plain"), {"root.md": doc("heron")})
        settings = replace(self.settings, docs_dir=docs)
        docs_qa.index_folder(settings)
        conn = docs_qa.cache_open(docs_qa.cache_path(self.cache, docs))
        self.addCleanup(conn.close)
        write_files(docs, {f"many/n{k:03}.md": doc(f"word{k}") for k in range(120)})
        ticks = itertools.count(step=100)

        def stop(stage: str, done: int, total: int) -> None:
            if stage == "index" and done == total:
                raise KeyboardInterrupt
        with self.assertRaises(KeyboardInterrupt):
            docs_qa.index_refresh(conn, replace(settings, clock=lambda: float(next(ticks))), stop)
        stored = [k for k in range(120) if docs_qa.cache_file_state(conn, f"many/n{k:03}.md")]
        self.assertEqual(len(stored), 120)                     # all committed, the totals not
        docs_qa.index_refresh(conn, settings)
        self.assertEqual(docs_qa.cache_meta(conn)["n_files"], "121")
        self.assertEqual(docs_qa.search("word7", settings).stats.index_version,
                         docs_qa.search("word7", replace(settings, cache_dir=self.cache + "-fresh")).stats.index_version)

    def test_a_stale_document_in_the_scope_is_read_again(self):
        path = os.path.join(self.docs, "a", "one.md")
        st = os.stat(path)
        with open(path, "r+", encoding="utf-8") as fh:
            text = fh.read()
            fh.seek(0)
            fh.write(text.replace("egret", "snipe"))                       # same length
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        after = self.walk()
        self.assertEqual(after.signature, self.before.signature)
        scope = docs_qa.RefreshScope(self.before, frozenset({"a"}), frozenset(), frozenset({"a/one.md"}))
        stats = docs_qa.index_refresh(self.conn, self.settings, scan=after, scope=scope)
        self.assertEqual(stats.updated, 1)
        meta = docs_qa.cache_meta(self.conn)
        self.assertEqual({k: meta[k] for k in self.TOTALS[:-1]}, self.recounted())


@unittest.skipUnless(INOTIFY and hasattr(signal, "SIGSTOP"), "needs inotify and SIGSTOP")
class OverflowTest(ServerCase):
    def test_a_lost_event_queue_walks_the_folder_again(self):
        try:
            with open("/proc/sys/fs/inotify/max_queued_events") as fh:
                queued = int(fh.read())
        except OSError:
            self.skipTest("the inotify queue length is not readable")
        if queued > 200_000:
            self.skipTest(f"an inotify queue of {queued} events takes too long to fill")
        self.paths("zebra")
        with self.stopped():                                           # nothing reads the queue now
            # a write is an event (IN_MODIFY); the two files take turns, so that no event
            # merges with the one queued before it (the kernel merges only those)
            with open(self.path("a.tmp"), "wb", buffering=0) as one, \
                    open(self.path("b.tmp"), "wb", buffering=0) as two:
                for _ in range(queued // 2 + 100):
                    one.write(b"x")
                    two.write(b"x")
            self.write("after/overflow.md", doc("chinchilla"))
        self.assertEqual(self.paths("chinchilla"), {"after/overflow.md"})
        self.assertTrue(self.server.wait_for_line("queue overflowed", 60), self.server.stderr)
        self.write("after/later.md", doc("armadillo"))                # watched again after the walk
        self.assertEqual(self.paths("armadillo"), {"after/later.md"})


class SweepTest(ServerCase):
    extra = ("--watch", "sweep")

    def test_a_sweep_finds_changes_within_the_contract(self):
        self.assertEqual(self.health()["freshness"]["mode"], "sweep")
        self.write("swept.md", doc("marmoset"))
        envelope = self.ask("marmoset")
        self.assertEqual({s["document_path"] for s in envelope["sources"]}, {"swept.md"})
        self.assertEqual(envelope["freshness"]["mode"], "sweep")
        os.remove(self.path("swept.md"))
        self.changed()
        self.assertEqual(self.ask("marmoset")["sources"], [])

    def test_off_walks_the_folder_per_question(self):
        self.server.close()
        self.server = ServeProcess(self.docs, "--cache-dir", self.cache, "--watch", "off", "--no-embed")
        self.addCleanup(self.server.close)       # (setUp's cleanup closes the first one)
        self.assertEqual(self.health()["freshness"], {"mode": "check", "age_s": 0.0})
        self.write("walked.md", doc("jerboa"))
        status, _, body = http_request(self.server.port, "POST", "/search", json.dumps({"query": "jerboa"}),
                                       {"Content-Type": "application/json"})
        envelope = json.loads(body)
        self.assertEqual([s["document_path"] for s in envelope["sources"]], ["walked.md"])
        self.assertEqual(envelope["freshness"], {"mode": "check", "age_s": 0.0})


class WatchLimitTest(unittest.TestCase):
    """When a watch cannot be added (fs.inotify.max_user_watches reached: ENOSPC), or there is
    no inotify, the server sweeps, and says so in /health and in a note on every envelope."""

    def serve(self, patch: mock._patch) -> tuple[str, int, list[str]]:
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        docs = write_files(os.path.join(tmp, "docs"), CORPUS)
        settings = docs_qa.Settings(docs_dir=docs, cache_dir=os.path.join(tmp, "cache"), use_embeddings=False,
                                    fresh_within_s=FRESH_S)
        log: list[str] = []
        watcher = docs_qa._Watcher(settings, log.append)
        with patch:
            watcher.start()
        ctx = docs_qa.ServerContext(docs_qa.OperationContext(replace(settings, watcher=watcher)))
        server = docs_qa.http_server(ctx, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, args=(SERVE_POLL_S,), daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return docs, server.server_address[1], log

    def check_swept(self, patch: mock._patch, why: str) -> None:
        docs, port, log = self.serve(patch)
        status, _, body = http_request(port, "GET", "/health")
        freshness = json.loads(body)["freshness"]
        self.assertEqual(freshness["mode"], "sweep")
        self.assertIn(why, freshness["note"])
        self.assertTrue(any(why in line for line in log), log)
        write_files(docs, {"late.md": doc("okapi")})
        changed_at = time.monotonic()
        time.sleep(FRESH_S)
        status, _, body = http_request(port, "POST", "/search", json.dumps({"query": "okapi"}),
                                       {"Content-Type": "application/json"}, timeout=120)
        envelope = json.loads(body)
        self.assertGreaterEqual(time.monotonic() - changed_at, FRESH_S)
        self.assertEqual([s["document_path"] for s in envelope["sources"]], ["late.md"])
        self.assertEqual(envelope["freshness"]["mode"], "sweep")
        self.assertIn("folder_swept", [n["code"] for n in envelope["notes"]])

    def test_the_watch_limit(self):
        self.check_swept(mock.patch.object(docs_qa._Inotify, "add", side_effect=OSError(
            errno.ENOSPC, os.strerror(errno.ENOSPC))), "max_user_watches")

    def test_no_inotify(self):
        self.check_swept(mock.patch.object(docs_qa._Inotify, "__init__", side_effect=OSError(
            0, "no inotify")), "not available")


class WatcherClockTest(unittest.TestCase):
    """The watcher reads time off Settings.clock: a view's age is the clock's, not the wall's."""

    def test_a_views_age_and_healths_age_come_from_the_settings_clock(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        docs = write_files(os.path.join(tmp, "docs"), CORPUS)
        now = [1000.0]
        # a sweep every fresh_within_s / 2 = 300 s: the background thread stays asleep here
        settings = docs_qa.Settings(docs_dir=docs, cache_dir=os.path.join(tmp, "cache"), use_embeddings=False,
                                    watch="sweep", fresh_within_s=600.0, clock=lambda: now[0])
        watcher = docs_qa._Watcher(settings, [].append)
        watcher.start()
        now[0] += 42.5                         # no real time passes: only the clock moves
        view = watcher.view()
        self.assertEqual(view.freshness, docs_qa.Freshness("sweep", 42.5))
        self.assertEqual(watcher.health(), {"mode": "sweep", "age_s": 42.5})


class EnvelopeTest(unittest.TestCase):
    def test_the_cli_checks_every_question(self):
        with tempfile.TemporaryDirectory() as tmp:
            docs = write_files(os.path.join(tmp, "docs"), CORPUS)
            proc = run_cli("zebra grass", "--docs", docs, "--cache-dir", os.path.join(tmp, "cache"),
                           "--extractive", "--json")
            envelope = json.loads(proc.stdout)
        self.assertEqual(envelope["freshness"], {"mode": "check", "age_s": 0.0})
        self.assertEqual(rc.schema_errors(envelope, docs_qa.OPERATIONS["rag"].response_schema), [])

    def test_the_contract_grows_by_an_optional_field(self):
        self.assertIn("freshness", rc.OPTIONAL_FIELDS)
        for name in ("search", "rag"):
            schema = docs_qa.OPERATIONS[name].response_schema
            self.assertIn("freshness", schema["properties"])
            self.assertNotIn("freshness", schema["required"])
        spec = docs_qa.http_openapi()["components"]["schemas"]
        self.assertIn("freshness", spec["SearchEnvelope"]["properties"])
        self.assertIn("freshness", spec["Health"]["properties"])

    def test_a_bad_setting_is_refused(self):
        for env in ({"DOCS_QA_FRESH_WITHIN": "-1"}, {"DOCS_QA_WATCH": "always"}):
            with self.assertRaises(rc.InvalidRequestError):
                docs_qa.settings_from_env(env, docs_dir=".")
        settings = docs_qa.settings_from_env({"DOCS_QA_FRESH_WITHIN": "2.5", "DOCS_QA_WATCH": "sweep"},
                                             docs_dir=".")
        self.assertEqual((settings.fresh_within_s, settings.watch), (2.5, "sweep"))


@unittest.skipUnless(INOTIFY, "folder events are inotify (Linux)")
class McpTest(unittest.TestCase):
    def test_a_tool_call_sees_a_change_and_says_how_fresh(self):
        with tempfile.TemporaryDirectory() as tmp:
            docs = write_files(os.path.join(tmp, "docs"), CORPUS)
            mcp = McpProcess(["--docs", docs, "--cache-dir", os.path.join(tmp, "cache"),
                              "--fresh-within", str(FRESH_S), "--no-embed"], {"EMBED_MOCK": "1"})
            self.addCleanup(mcp.kill)
            init = mcp.recv_reply(mcp.send("initialize", INIT))
            self.assertIn("result", init)
            first = mcp.recv_reply(mcp.send("tools/call", {"name": "search_docs",
                                                           "arguments": {"query": "zebra"}}))
            write_files(docs, {"fresh.md": doc("bonobo")})
            time.sleep(FRESH_S)
            reply = mcp.recv_reply(mcp.send("tools/call", {"name": "search_docs",
                                                           "arguments": {"query": "bonobo"}}))
            self.assertEqual(mcp.close()[0], 0)
        self.assertEqual(first["result"]["structuredContent"]["freshness"]["mode"], "watch")
        envelope = reply["result"]["structuredContent"]
        self.assertEqual([s["document_path"] for s in envelope["sources"]], ["fresh.md"])
        self.assertEqual(envelope["freshness"]["mode"], "watch")
        tool = next(t for t in docs_qa.mcp_tools() if t["name"] == "search_docs")
        self.assertEqual(rc.schema_errors(envelope, tool["outputSchema"]), [])


if __name__ == "__main__":
    unittest.main()
