"""Section 10 (cache) and its plumbing in section 12: incremental refresh, schema
rebuild, resumable embeddings. Counts, never wall-clock times."""

from __future__ import annotations

import array
import contextlib
import json
import marshal
import os
import sqlite3
import threading
import time
import unittest
from unittest import mock

from helpers import TAX_CORPUS, StubModelServer, TempDirTest, run_cli, write_files
import parallel

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process

import docs_qa

WAIT_S = 10                        # a guard against a hang, never a measured time


def _bump_mtime(path: str) -> None:
    """Move a file's mtime forward so a stat sees it changed, whatever the clock granularity."""
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def _append(path: str, text: str) -> None:
    """Append text to a file and make the change visible to a stat."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)
    _bump_mtime(path)


class CountingCalls:
    """Patch docs_qa.corpus_read and docs_qa.chunk_parse (the indexer's chunker) to count calls."""

    def __init__(self, test: unittest.TestCase) -> None:
        self.reads, self.chunked = [], []
        real_read, real_chunk = docs_qa.corpus_read, docs_qa.chunk_parse

        def read(entry, max_bytes):
            self.reads.append(entry.rel_path)
            return real_read(entry, max_bytes)

        def chunk(path, text, max_chars=docs_qa.DEFAULT_CHUNK_CHARS):
            self.chunked.append(path)
            return real_chunk(path, text, max_chars)

        for name, fake in (("corpus_read", read), ("chunk_parse", chunk)):
            patcher = mock.patch.object(docs_qa, name, fake)
            patcher.start()
            test.addCleanup(patcher.stop)


class IncrementalRefreshTest(TempDirTest):

    def setUp(self) -> None:
        super().setUp()
        write_files(self.docs, TAX_CORPUS)

    def counts(self, stats: docs_qa.IndexStats) -> tuple[int, int, int, int]:
        return stats.new, stats.updated, stats.unchanged, stats.removed

    def test_unchanged_second_run_reads_and_chunks_nothing(self):
        settings = self.settings(use_embeddings=False)
        first = docs_qa.index_folder(settings)
        self.assertEqual(self.counts(first), (3, 0, 0, 0))
        calls = CountingCalls(self)
        second = docs_qa.index_folder(settings)
        self.assertEqual(self.counts(second), (0, 0, 3, 0))
        self.assertEqual((calls.reads, calls.chunked), ([], []))
        self.assertEqual(second.chunks, first.chunks)
        self.assertEqual(second.index_version, first.index_version)

    def test_editing_one_file_redoes_only_that_file(self):
        settings = self.settings(use_embeddings=False)
        docs_qa.index_folder(settings)
        _append(os.path.join(self.docs, "notes.txt"),
                "\nZupełnie nowy akapit o kryptowalutach i podatku od nich.\n")
        calls = CountingCalls(self)
        stats = docs_qa.index_folder(settings)
        self.assertEqual(self.counts(stats), (0, 1, 2, 0))
        self.assertEqual((calls.reads, calls.chunked), (["notes.txt"], ["notes.txt"]))
        hits = docs_qa.search("kryptowaluty", settings).hits
        self.assertEqual([h.chunk.path for h in hits][:1], ["notes.txt"])

    def test_touch_without_edit_rereads_but_does_not_rechunk(self):
        settings = self.settings(use_embeddings=False)
        docs_qa.index_folder(settings)
        _bump_mtime(os.path.join(self.docs, "jpk.md"))
        calls = CountingCalls(self)
        stats = docs_qa.index_folder(settings)
        self.assertEqual(self.counts(stats), (0, 0, 3, 0))
        self.assertEqual((calls.reads, calls.chunked), (["jpk.md"], []))

    def test_new_and_removed_files_are_counted_and_searchable(self):
        settings = self.settings(use_embeddings=False)
        docs_qa.index_folder(settings)
        os.remove(os.path.join(self.docs, "faktury", "korekta.md"))
        write_files(self.docs, {"nowy.md": "# Akcyza\n\nAkcyza na paliwa silnikowe jest płacona co miesiąc.\n"})
        stats = docs_qa.index_folder(settings)
        self.assertEqual(self.counts(stats), (1, 0, 2, 1))
        self.assertEqual([h.chunk.path for h in docs_qa.search("akcyza paliwa", settings).hits][:1],
                         ["nowy.md"])
        paths = [h.chunk.path for h in docs_qa.search("faktura korygująca rabat", settings).hits]
        self.assertNotIn("faktury/korekta.md", paths)

    def test_incremental_index_ranks_like_a_fresh_one(self):
        settings = self.settings(use_embeddings=False)
        docs_qa.index_folder(settings)
        _append(os.path.join(self.docs, "jpk.md"),
                "\n## Korekta\n\nKorekta pliku JPK jest składana razem z fakturą korygującą.\n")
        docs_qa.index_folder(settings)
        fresh = self.settings(use_embeddings=False, cache_dir=os.path.join(self.tmp, "fresh"))
        for question in ("korekta faktury", "kara JPK podatnik", "biała lista rachunek"):
            got = [(h.chunk.label, h.bm25_score) for h in docs_qa.search(question, settings).hits]
            want = [(h.chunk.label, h.bm25_score) for h in docs_qa.search(question, fresh).hits]
            self.assertEqual(got, want, question)

    def test_skip_notes_survive_the_fast_path(self):
        write_files(self.docs, {"binary.md": b"\x00\x01\x02 not text"})
        settings = self.settings(use_embeddings=False)
        first = docs_qa.index_folder(settings)
        second = docs_qa.index_folder(settings)
        self.assertIn("not_text", [n.code for n in first.notes])
        self.assertEqual([n.code for n in second.notes], [n.code for n in first.notes])

    def test_index_cli_reports_the_four_counts(self):
        proc = run_cli("index", "--docs", self.docs, "--cache-dir", self.cache, "--no-embed")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("3 new, 0 updated, 0 unchanged, 0 removed", proc.stdout)
        os.remove(os.path.join(self.docs, "notes.txt"))
        proc = run_cli("index", "--docs", self.docs, "--cache-dir", self.cache, "--no-embed")
        self.assertIn("0 new, 0 updated, 2 unchanged, 1 removed", proc.stdout)


class BulkWriteTest(TempDirTest):

    def test_a_breadcrumb_is_stored_as_json_dumps_writes_it(self):
        for sections in ((), ("Faktura",), ('Say "hi"', "a\\b"), ("zażółć", "Ľudia", "x\ty\n", "\u2028"),
                         ("\ud800 lone", "日本語 🙂"), ("",)):
            self.assertEqual(docs_qa._json_strings(sections), json.dumps(sections), sections)

    def test_many_small_flushes_index_like_one(self):
        write_files(self.docs, TAX_CORPUS)
        write_files(self.docs, {f"extra/{i}.md": f"# Nota {i}\n\nPodatek numer {i} oraz termin JPK {i}.\n"
                                for i in range(12)})
        one = self.settings(use_embeddings=False, cache_dir=os.path.join(self.tmp, "one"))
        many = self.settings(use_embeddings=False, cache_dir=os.path.join(self.tmp, "many"))
        docs_qa.index_folder(one)
        with mock.patch.object(docs_qa, "PARSE_BATCH_FILES", 1), \
                mock.patch.object(docs_qa, "CACHE_COMMIT_S", 0):
            stats = docs_qa.index_folder(many)
            os.remove(os.path.join(self.docs, "extra", "3.md"))
            docs_qa.index_folder(many)
            docs_qa.index_folder(one)
        self.assertEqual(stats.new, 15)
        for question in ("termin JPK", "podatek numer 7", "biała lista"):
            got = [(h.chunk.label, h.bm25_score) for h in docs_qa.search(question, many).hits]
            want = [(h.chunk.label, h.bm25_score) for h in docs_qa.search(question, one).hits]
            self.assertEqual(got, want, question)

    def test_an_interrupted_first_index_keeps_what_it_committed(self):
        write_files(self.docs, {f"doc{i:02}.md": f"# Nota {i}\n\nPodatek numer {i}.\n" for i in range(9)})
        real_apply = docs_qa._apply_batch

        def interrupted_run(commit_s: float, cache: str) -> docs_qa.IndexStats:
            """Index in batches of three files, interrupted at the third batch; then again."""
            applied = []

            def apply_two_then_stop(*args):
                if len(applied) == 2:
                    raise KeyboardInterrupt
                applied.append(None)
                real_apply(*args)
            settings = self.settings(use_embeddings=False, cache_dir=os.path.join(self.tmp, cache))
            with mock.patch.object(docs_qa, "PARSE_BATCH_FILES", 3), \
                    mock.patch.object(docs_qa, "CACHE_COMMIT_S", commit_s), \
                    mock.patch.object(docs_qa, "_apply_batch", apply_two_then_stop):
                with self.assertRaises(KeyboardInterrupt):
                    docs_qa.index_folder(settings)
            return docs_qa.index_folder(settings)
        stats = interrupted_run(0, "each-batch")       # committed after each batch: two are kept
        self.assertEqual((stats.new, stats.unchanged), (3, 6))
        stats = interrupted_run(3600.0, "hourly")      # no commit came: nothing is kept
        self.assertEqual((stats.new, stats.unchanged), (9, 0))

    def test_posting_lists_written_ahead_end_as_flush_writes_them(self):
        write_files(self.docs, TAX_CORPUS)
        write_files(self.docs, {f"extra/{i}.md": f"# Nota {i}\n\nPodatek numer {i} oraz termin JPK {i}.\n"
                                for i in range(12)})
        entries, _ = docs_qa.corpus_walk(self.docs)
        tokenizer = docs_qa.Tokenizer()
        batches = [entries[i:i + 2] for i in range(0, len(entries), 2)]
        parsed = [docs_qa._parse_batch(b, [None] * len(b), 10**6, docs_qa.DEFAULT_CHUNK_CHARS, tokenizer)
                  for b in batches]

        def postings(ahead_from: int) -> tuple[list[tuple], int]:
            """Index the batches, one step of writing ahead after each from batch ahead_from
            on (as a waiting indexer does), then flush; return the postings and the steps."""
            conn = docs_qa.cache_open(None)
            writer, steps = docs_qa._IndexWriter(conn, tokenizer), 0
            for number, (batch, batch_parsed) in enumerate(zip(batches, parsed)):
                writer.add_batch(batch_parsed, batch)
                steps += number >= ahead_from and writer.write_ahead()
            writer.flush()
            return conn.execute("SELECT term, data FROM postings ORDER BY term").fetchall(), steps
        plain, no_steps = postings(len(batches))
        with mock.patch.object(docs_qa, "WRITE_AHEAD_TERMS", 2):
            ahead, steps = postings(len(batches) // 2)
        self.assertEqual(no_steps, 0)
        self.assertEqual(steps, len(batches) - len(batches) // 2)    # the pass outlasts the batches
        self.assertEqual(ahead, plain)          # lists that grew afterwards were written again,
                                                # those not reached yet by flush()

    def test_chunk_numbers_are_shifted_without_a_carry_between_them(self):
        numbers = array.array("I", [0, 1, 255, 65535, 2**32 - 8])
        self.assertEqual(docs_qa._plus(numbers, 7), array.array("I", [7, 8, 262, 65542, 2**32 - 1]))
        self.assertEqual(docs_qa._plus(numbers, 0), numbers)
        self.assertEqual(docs_qa._plus(array.array("I"), 5), array.array("I"))


    def test_scan_signature_changes_with_a_stat_and_only_then(self):
        write_files(self.docs, TAX_CORPUS)
        first, again = docs_qa.corpus_scan(self.docs), docs_qa.corpus_scan(self.docs)
        self.assertEqual(first.signature, again.signature)
        self.assertEqual(first.entries, docs_qa.corpus_walk(self.docs)[0])
        _bump_mtime(os.path.join(self.docs, "notes.txt"))
        self.assertNotEqual(docs_qa.corpus_scan(self.docs).signature, first.signature)

    def test_cache_folder_inside_the_docs_is_not_walked(self):
        write_files(self.docs, TAX_CORPUS)
        inner = os.path.join(self.docs, "cache")
        write_files(inner, {"stray.md": "# Stray\n\nA markdown file inside the cache folder.\n"})
        entries, _ = docs_qa.corpus_walk(self.docs, [inner])
        self.assertNotIn("cache/stray.md", [e.rel_path for e in entries])
        self.assertEqual(len(entries), 3)


class SplitScanTest(TempDirTest):
    """corpus_scan(split=True) shares the walk with a forked child; what it finds, and the
    order the signature hashes it in, are the serial walk's."""

    FOLDER = {**{f"{part}/{i}.md": f"# Page {i}\n\nText {i} of {part}.\n" for part in "abcd" for i in range(5)},
              **{f"b/deep/er/{i}.md": f"# Deep {i}\n" for i in range(3)}, "d/inner/x.txt": "inner\n",
              "d/inner/žltý kôň.md": "# Kôň\n", "top.txt": "plain\n", "b/skip.bin": "not a document\n", ".hidden/x.md": "hidden\n",
              "b/bad\nname.md": "a newline in its name\n", "c/UPPER.MD": "# Upper\n"}

    def scans(self, parent_idle: bool = False, units: int = 2, patches=(), split: bool | None = True,
              child_fails: bool = False) -> tuple:
        """Return (serial scan, split scan, forks); parent_idle: this process takes no unit
        off the queue, so the child does them all (and none is done again here unless
        child_fails); units: subtrees listed before sharing; split: corpus_scan's (None:
        shared when the first levels show a large folder)."""
        write_files(self.docs, self.FOLDER)
        serial = docs_qa.corpus_scan(self.docs)
        parent, real, real_unit = os.getpid(), docs_qa._scan_units, docs_qa._scan_unit
        redone = []

        def scan_units(*args, **kwargs):
            return {} if parent_idle and os.getpid() == parent else real(*args, **kwargs)

        def scan_unit(unit, lister):
            if parent_idle and os.getpid() == parent:
                redone.append(unit)
            return real_unit(unit, lister)
        with contextlib.ExitStack() as stack:
            stack.enter_context(mock.patch.object(docs_qa, "_can_fork", return_value=True))
            stack.enter_context(mock.patch.object(docs_qa, "SCAN_SPLIT_UNITS", units))
            stack.enter_context(mock.patch.object(docs_qa, "_scan_units", scan_units))
            stack.enter_context(mock.patch.object(docs_qa, "_scan_unit", scan_unit))
            fork = stack.enter_context(mock.patch.object(docs_qa.os, "fork", wraps=os.fork))
            for target, name, value in patches:
                stack.enter_context(mock.patch.object(target, name, value))
            split = docs_qa.corpus_scan(self.docs, split=split)
        if parent_idle and fork.call_count:
            self.assertEqual(bool(redone), child_fails)      # the child's answer was used, or not
        return serial, split, fork.call_count

    def assert_same(self, serial, split) -> None:
        self.assertEqual(split.signature, serial.signature)
        self.assertEqual(split.entries, serial.entries)
        self.assertEqual(split.notes, serial.notes)
        self.assertEqual((split.n_folders, serial.n_folders), (8, 8))   # the root, a-d, 3 below

    def test_split_scan_finds_what_the_serial_scan_finds(self):
        for parent_idle in (False, True):
            for units in (2, 64):                   # subtrees walked by either process, or listed first
                with self.subTest(parent_idle=parent_idle, units=units):
                    serial, split, forks = self.scans(parent_idle, units)
                    self.assertEqual(forks, 1)
                    self.assert_same(serial, split)
        self.assertEqual(len(serial.entries), 27)            # 20 pages, 3 deep, 2 inner, top.txt, UPPER.MD
        self.assertEqual([n.code for n in serial.notes], ["bad_name"])

    def test_a_large_folder_is_shared_in_pieces(self):
        for parent_idle in (False, True):
            with self.subTest(parent_idle=parent_idle):
                serial, split, forks = self.scans(parent_idle, units=64,
                                                  patches=[(docs_qa, "SCAN_SPLIT_NAMES", 2)])
                self.assertEqual(forks, 1)
                self.assert_same(serial, split)
        with mock.patch.object(docs_qa, "SCAN_SPLIT_NAMES", 2):
            self.assertEqual(docs_qa._job_pieces([("/d", "", list("abcde")), ("/e", "e")]),
                             [("/d", "", ["a", "b"]), ("/d", "", ["c", "d"]), ("/d", "", ["e"]), ("/e", "e")])

    def test_a_child_s_records_read_back_as_the_folders_they_were_made_of(self):
        root = os.path.join(self.tmp, "root")
        mtimes = array.array("q", [1, -2, 2**62])
        folders = [(root, "", ["a.md", "b c.md", "žltý.md"], mtimes, array.array("q", [0, 5, 7])),
                   (os.path.join(root, "x", "\udcff"), "x/\udcff/", [], array.array("q"), array.array("q")),
                   (os.path.join(root, "x"), "x/", ["only.txt"], array.array("q", [9]), array.array("q", [10]))]
        data = b"".join(map(docs_qa._folder_record, folders))
        self.assertEqual(docs_qa._folders_of_records(data, root), folders)
        self.assertEqual([folder[0] for folder in docs_qa._folders_of_records(data, root + os.sep)],
                         [root + os.sep] + [folder[0] for folder in folders[1:]])   # as the walk names them
        self.assertEqual(docs_qa._folders_of_records(b"", root), [])
        scan = docs_qa.CorpusScan(root, [data], [])                   # hashed as sent, read when asked
        self.assertEqual(scan.signature, docs_qa.CorpusScan(root, folders, []).signature)
        self.assertEqual([e.rel_path for e in scan.entries], ["a.md", "b c.md", "x/only.txt", "žltý.md"])

    def test_a_failing_child_costs_only_its_units_again(self):
        def broken(_):
            raise ValueError("marshal failed in the child")
        serial, split, forks = self.scans(parent_idle=True, patches=[(docs_qa.marshal, "dumps", broken)],
                                          child_fails=True)
        self.assertEqual(forks, 1)
        self.assert_same(serial, split)

    def test_the_childs_answer_is_read_before_the_child_has_ended(self):
        # The child closes its end once written, so this process loads the answer while the
        # child is torn down. The child waits, in its exit, until the answer was loaded
        # (a marker file; at most WAIT_S) and records whether it was.
        loaded, seen = os.path.join(self.tmp, "loaded"), os.path.join(self.tmp, "seen")
        real_exit, real_loads = os._exit, docs_qa.marshal.loads

        def exit_after_load(status):
            deadline = time.monotonic() + WAIT_S
            while not os.path.exists(loaded) and time.monotonic() < deadline:
                time.sleep(0.01)
            with open(seen, "w") as fh:
                fh.write(str(os.path.exists(loaded)))
            real_exit(status)

        def loads(data):
            got = real_loads(data)
            open(loaded, "w").close()
            return got
        serial, split, forks = self.scans(parent_idle=True, patches=[(docs_qa.os, "_exit", exit_after_load),
                                                                     (docs_qa.marshal, "loads", loads)])
        self.assertEqual(forks, 1)
        self.assert_same(serial, split)
        with open(seen) as fh:
            self.assertEqual(fh.read(), "True")

    def test_a_fork_that_fails_leaves_a_serial_scan(self):
        serial, split, _ = self.scans(patches=[(docs_qa.os, "fork", mock.Mock(side_effect=OSError("EAGAIN")))])
        self.assert_same(serial, split)

    def test_notes_made_in_the_child_reach_the_scan(self):
        real_lstat = os.lstat
        gone = {os.path.join(self.docs, part, "4.md") for part in "abcd"}

        real_lstat_in = docs_qa._lstat_in

        def lstat(path, *args, **kwargs):
            if path in gone:
                raise FileNotFoundError(path)
            return real_lstat(path, *args, **kwargs)

        def lstat_in(abs_dir, names):       # the folder's stats by its descriptor: the first gone fails
            if any(os.path.join(abs_dir, name) in gone for name in names):
                raise FileNotFoundError(abs_dir)
            return real_lstat_in(abs_dir, names)
        with mock.patch.object(docs_qa.os, "lstat", lstat), mock.patch.object(docs_qa, "_lstat_in", lstat_in):
            serial, split, forks = self.scans(parent_idle=True)
        self.assertEqual(forks, 1)
        self.assert_same(serial, split)
        self.assertEqual([e.rel_path for e in split.entries if e.rel_path.endswith("/4.md")], [])
        self.assertIn("skipped 4 file(s) that could not be read", str(split.notes))

    def test_no_fork_while_another_thread_runs(self):
        release = threading.Event()
        worker = threading.Thread(target=release.wait)
        worker.start()
        try:
            self.assertFalse(docs_qa._can_fork())
            write_files(self.docs, self.FOLDER)
            with mock.patch.object(docs_qa.os, "fork") as fork:
                docs_qa.corpus_scan(self.docs, split=True)
            fork.assert_not_called()
        finally:
            release.set()
            worker.join()

    def test_a_first_walk_is_shared_only_when_its_first_levels_show_a_large_folder(self):
        # with 2 units the root's four subfolders are left unlisted; with 64 the whole tree
        # (27 documents) is listed first, and this process stats it alone
        for units, forks in ((2, 1), (64, 0)):
            with self.subTest(units=units):
                serial, split, forked = self.scans(units=units, split=None)
                self.assertEqual(forked, forks)
                self.assert_same(serial, split)
        with mock.patch.object(docs_qa, "SCAN_SPLIT_MIN_FILES", 27):
            serial, split, forked = self.scans(units=64, split=None)
        self.assertEqual(forked, 1)
        self.assert_same(serial, split)

    def assert_shared_from(self, stats: int) -> None:
        """Index the folder twice with the walk shared from stats and from stats + 1 stats on:
        the first walk decides by its first levels, the second by the count the first stored."""
        for min_stats, second in ((stats, True), (stats + 1, False)):
            settings = self.settings(use_embeddings=False, cache_dir=os.path.join(self.tmp, str(min_stats)))
            with self.subTest(min_stats=min_stats), \
                    mock.patch.object(docs_qa, "SCAN_SPLIT_MIN_FILES", min_stats), \
                    mock.patch.object(docs_qa, "corpus_scan_begin", wraps=docs_qa.corpus_scan_begin) as scan:
                docs_qa.index_folder(settings)
                docs_qa.index_folder(settings)
            self.assertEqual([c.kwargs["split"] for c in scan.call_args_list], [None, second])

    def test_a_walk_is_shared_by_its_first_levels_then_by_the_count_stored(self):
        write_files(self.docs, self.FOLDER)
        self.assert_shared_from(27 + 8)          # 27 documents in 8 folders (the root, a-d, 3 below)

    def test_a_walk_of_many_folders_and_few_documents_is_shared_by_its_folder_count(self):
        write_files(self.docs, {"a.md": "# A\n", "b.md": "# B\n",
                                **{f"f{i}/x.bin": "not a document\n" for i in range(30)}})
        self.assert_shared_from(2 + 31)          # 2 documents; the root and 30 folders of a non-document


class ListingReuseTest(TempDirTest):
    """A folder whose stat is the one the last walk kept is not listed again: its kept
    listing gives the same documents, notes and signature; a folder that changed is listed."""

    FOLDER = {**{f"{part}/{i}.md": f"# Page {i}\n" for part in "ab" for i in range(3)},
              "b/deep/x.md": "# Deep\n", "top.txt": "plain\n", "b/skip.bin": "no\n",
              ".hidden/x.md": "hidden\n", "a/bad\nname.md": "a newline in its name\n"}

    def setUp(self) -> None:
        super().setUp()
        write_files(self.docs, self.FOLDER)
        os.symlink(os.path.join(self.docs, "a"), os.path.join(self.docs, "b", "link"))
        os.mkfifo(os.path.join(self.docs, "a", "pipe.md"))
        os.makedirs(os.path.join(self.docs, "cache"))
        time.sleep(0.05)    # later changes get another ctime than the one kept (clock ticks are coarse)

    def scan(self, listings=None, settled: bool = True):
        """Return (scan, folders listed) with the kept listings; settled: every folder counts
        as changed long ago (else the real clock says they changed just now)."""
        clock = time.time_ns() + (10 * docs_qa.LISTING_SETTLE_NS if settled else 0)
        with mock.patch.object(docs_qa.time, "time_ns", return_value=clock), \
                mock.patch.object(docs_qa.os, "scandir", wraps=os.scandir) as scandir:
            scan = docs_qa.corpus_scan(self.docs, [os.path.join(self.docs, "cache")], listings=listings)
        return scan, sorted(os.path.relpath(c.args[0], self.docs) for c in scandir.call_args_list)

    def assert_same(self, scan, other) -> None:
        self.assertEqual(scan.signature, other.signature)
        self.assertEqual(scan.entries, other.entries)
        self.assertEqual(scan.notes, other.notes)

    def test_an_unchanged_folder_is_not_listed_and_scans_the_same(self):
        first, listed = self.scan()
        self.assertEqual(listed, [".", "a", "b", "b/deep"])
        again, listed = self.scan(first.listings)
        self.assertEqual(listed, [])
        self.assertIsNone(again.listings)                  # nothing to keep anew
        self.assert_same(again, first)
        self.assertEqual(sorted(n.code for n in first.notes),
                         ["bad_name", "cache_dir_skipped", "not_regular", "symlink_skipped"])
        self.assertEqual(len(first.entries), 8)

    def test_a_changed_folder_is_listed_again(self):
        first, _ = self.scan()
        write_files(self.docs, {"b/deep/new.md": "# New\n"})
        os.remove(os.path.join(self.docs, "a", "0.md"))
        os.rename(os.path.join(self.docs, "b", "deep"), os.path.join(self.docs, "b", "deeper"))
        again, listed = self.scan(first.listings)
        self.assertEqual(listed, ["a", "b", "b/deeper"])
        self.assert_same(again, self.scan()[0])
        paths = [e.rel_path for e in again.entries]
        self.assertIn("b/deeper/new.md", paths)
        self.assertNotIn("a/0.md", paths)
        self.assertIsNotNone(again.listings)

    def test_a_folder_changed_just_before_the_walk_is_not_kept(self):
        first, _ = self.scan(settled=False)
        self.assertIsNone(first.listings)
        again, listed = self.scan(first.listings)
        self.assertEqual(listed, [".", "a", "b", "b/deep"])

    def test_no_listing_is_kept_where_ctime_is_a_creation_time(self):
        with mock.patch.object(docs_qa.os, "name", "nt"):
            self.assertEqual(docs_qa._listing_cutoff_ns(), -1)
        first, _ = self.scan()
        with mock.patch.object(docs_qa, "_listing_cutoff_ns", return_value=-1):
            self.assertIsNone(docs_qa.corpus_scan(self.docs, [os.path.join(self.docs, "cache")]).listings)
        self.assertIsNotNone(first.listings)

    def test_listings_that_do_not_fit_are_ignored(self):
        first, _ = self.scan()
        version, root, skips, kept = marshal.loads(first.listings)
        for listings in (b"garbage", marshal.dumps((version + 1, root, skips, kept)),
                         marshal.dumps((version, root + "x", skips, kept)),
                         marshal.dumps((version, root, [], kept)), marshal.dumps((version, root, skips, []))):
            with self.subTest(listings=listings[:20]):
                again, listed = self.scan(listings)
                self.assertEqual(listed, [".", "a", "b", "b/deep"])
                self.assert_same(again, first)

    def test_a_malformed_listing_is_listed_again_and_the_others_are_used(self):
        first, _ = self.scan()
        version, root, skips, kept = marshal.loads(first.listings)
        damaged = {**kept, "a": kept["a"][:4] + ("../../secret.md",) + kept["a"][5:],   # a name leaving "a"
                   "b": kept["b"][:6], "b/deep": 7}
        again, listed = self.scan(marshal.dumps((version, root, skips, damaged)))
        self.assertEqual(listed, ["a", "b", "b/deep"])
        self.assert_same(again, first)
        self.assertEqual(marshal.loads(again.listings)[3], kept)     # the damaged ones are replaced

    def test_a_listing_with_an_empty_name_is_listed_again_not_walked_forever(self):
        # an empty subfolder name is the folder itself: once walked in a loop (a guard on
        # os.stat ends that loop here, so the test fails instead of hanging)
        first, _ = self.scan()
        version, root, skips, kept = marshal.loads(first.listings)
        damaged = {**kept, "": kept[""][:5] + (kept[""][5] + "\0",) + kept[""][6:],
                   "a": kept["a"][:4] + ("\0" + kept["a"][4],) + kept["a"][5:]}
        real_stat, calls = os.stat, []

        def bounded_stat(*args, **kwargs):
            calls.append(args[0])
            if len(calls) > 1000:
                raise OSError("too many stats: the walk loops")
            return real_stat(*args, **kwargs)
        with mock.patch.object(docs_qa.os, "stat", bounded_stat):
            again, listed = self.scan(marshal.dumps((version, root, skips, damaged)))
        self.assertEqual(listed, [".", "a"])
        self.assert_same(again, first)

    def test_a_kept_listing_is_what_the_walk_uses(self):
        first, _ = self.scan()
        version, root, skips, kept = marshal.loads(first.listings)
        fewer = {**kept, "b": kept["b"][:4] + ("0.md",) + kept["b"][5:]}   # as if b held one page
        again, listed = self.scan(marshal.dumps((version, root, skips, fewer)))
        self.assertEqual(listed, [])
        self.assertEqual([e.rel_path for e in again.entries if os.path.dirname(e.rel_path) == "b"], ["b/0.md"])

    def test_the_split_walk_keeps_the_child_s_listings(self):
        serial, _ = self.scan()
        with mock.patch.object(docs_qa, "_can_fork", return_value=True), \
                mock.patch.object(docs_qa, "SCAN_SPLIT_UNITS", 2), \
                mock.patch.object(docs_qa.time, "time_ns", return_value=time.time_ns() + 10**11):
            split = docs_qa.corpus_scan(self.docs, [os.path.join(self.docs, "cache")], split=True)
            again = docs_qa.corpus_scan(self.docs, [os.path.join(self.docs, "cache")], split=True,
                                        listings=split.listings)
        self.assertEqual(marshal.loads(split.listings), marshal.loads(serial.listings))
        self.assertIsNone(again.listings)
        self.assert_same(split, serial)
        self.assert_same(again, serial)

    def test_the_index_keeps_its_listings_and_finds_a_new_file(self):
        settings = self.settings(use_embeddings=False)
        with mock.patch.object(docs_qa.time, "time_ns", return_value=time.time_ns() + 10**11):
            docs_qa.index_folder(settings)
            with mock.patch.object(docs_qa.os, "scandir", wraps=os.scandir) as scandir:
                self.assertEqual(docs_qa.index_folder(settings).unchanged, 8)
            self.assertEqual(scandir.call_count, 0)
            write_files(self.docs, {"b/deep/new.md": "# New page\n"})
            stats = docs_qa.index_folder(settings)
        self.assertEqual((stats.new, stats.unchanged), (1, 8))

    def test_listings_are_kept_without_waiting_for_a_lock(self):
        settings = self.settings(use_embeddings=False)
        docs_qa.index_folder(settings)
        path = docs_qa.cache_path(self.cache, self.docs)
        holder = sqlite3.connect(path, isolation_level=None)
        conn = docs_qa.cache_open(path)
        try:
            holder.execute("BEGIN IMMEDIATE")
            self.assertFalse(docs_qa.cache_try_put_listings(conn, b"listings"))   # busy: not waited for
            self.assertEqual(conn.execute("PRAGMA busy_timeout").fetchone()[0],
                             int(docs_qa.CACHE_BUSY_TIMEOUT_S * 1000))
            holder.execute("ROLLBACK")
            self.assertTrue(docs_qa.cache_try_put_listings(conn, b"listings"))
            self.assertEqual(docs_qa.cache_listings(conn), b"listings")
        finally:
            holder.close()
            conn.close()


class EarlyRankTest(TempDirTest):
    """On a large folder a question ranks the stored index while the child walks; that
    ranking is used only when the walk finds nothing changed."""

    def ask(self, question: str) -> tuple[docs_qa.SearchResult, int]:
        with mock.patch.object(docs_qa, "SCAN_SPLIT_MIN_FILES", 3), \
                mock.patch.object(docs_qa, "_can_fork", return_value=True), \
                mock.patch.object(docs_qa, "_rank", wraps=docs_qa._rank) as rank:
            result = docs_qa.search(question, self.settings(use_embeddings=False))
        return result, rank.call_count

    def test_an_unchanged_folder_is_ranked_once_as_without_the_child(self):
        write_files(self.docs, TAX_CORPUS)
        docs_qa.index_folder(self.settings(use_embeddings=False))
        early, ranks = self.ask("termin JPK")
        self.assertEqual(ranks, 1)
        alone = docs_qa.search("termin JPK", self.settings(use_embeddings=False))
        self.assertEqual([(h.chunk.label, h.bm25_score) for h in early.hits],
                         [(h.chunk.label, h.bm25_score) for h in alone.hits])
        self.assertEqual(early.notes, alone.notes)

    def test_an_edit_found_by_the_walk_is_ranked_again(self):
        write_files(self.docs, TAX_CORPUS)
        docs_qa.index_folder(self.settings(use_embeddings=False))
        _append(os.path.join(self.docs, "notes.txt"), "\nThe zebracorn fee is due in May.\n")
        result, ranks = self.ask("zebracorn fee")
        self.assertEqual(ranks, 2)                            # the stale ranking was dropped
        self.assertEqual([h.chunk.path for h in result.hits][:1], ["notes.txt"])
        self.assertEqual(result.stats.updated, 1)


class SchemaTest(TempDirTest):

    def test_older_schema_is_detected_and_rebuilt(self):
        write_files(self.docs, TAX_CORPUS)
        settings = self.settings(use_embeddings=False)
        docs_qa.index_folder(settings)
        path = docs_qa.cache_path(self.cache, self.docs)
        conn = sqlite3.connect(path)
        conn.execute(f"PRAGMA user_version={docs_qa.CACHE_SCHEMA_VERSION - 1}")
        conn.commit()
        conn.close()
        result = docs_qa.search("termin JPK", settings)
        rebuilt = [n.message for n in result.notes if n.code == "cache_rebuilt"]
        self.assertEqual(len(rebuilt), 1)
        self.assertIn("another version of docs-qa", rebuilt[0])
        self.assertEqual(result.stats.new, 3)
        self.assertEqual(result.hits[0].chunk.path, "jpk.md")
        conn = sqlite3.connect(path)
        self.assertEqual(conn.execute("PRAGMA user_version").fetchone()[0], docs_qa.CACHE_SCHEMA_VERSION)
        conn.close()


class FailingAfter(StubModelServer):
    """A stub embedding server that answers the first `ok_requests` requests, then 400s."""

    def __init__(self, ok_requests: int) -> None:
        super().__init__()
        self.ok_requests = ok_requests

    def _embeddings(self, handler, body):
        if self.embed_requests >= self.ok_requests:
            self.embed_fault = "http_400"
        super()._embeddings(handler, body)


class EmbeddingResumeTest(TempDirTest):

    def setUp(self) -> None:
        super().setUp()
        files = {f"doc{i:02d}.md": f"# Temat {i}\n\nAkapit numer {i} mówi o podatku typu {i} i jego "
                                   f"terminach oraz stawkach w roku {2000 + i}.\n" for i in range(20)}
        write_files(self.docs, files)

    def settings_for(self, stub: StubModelServer) -> docs_qa.Settings:
        return self.settings(embed_mock=False, base_url=stub.base_url, embed_batch=4, retries=0,
                             timeout_s=5.0, embed_model="stub-model")

    def test_interrupted_run_keeps_its_vectors_and_never_resends(self):
        with FailingAfter(ok_requests=2) as stub:
            stats = docs_qa.index_folder(self.settings_for(stub))
            self.assertIn("embeddings_unavailable", [n.code for n in stats.notes])
            first_texts = stub.embedded_texts
        self.assertEqual(first_texts, 4 * 3)           # two batches stored, the third failed
        with StubModelServer() as stub:
            docs_qa.index_folder(self.settings_for(stub))
            self.assertEqual(stub.embedded_texts, 20 - 8)
            sent = [t for path, body in stub.bodies for t in body["input"]]
            self.assertEqual(len(sent), len(set(sent)))
            self.assertTrue(all(len(body["input"]) <= 4 for _, body in stub.bodies))
        with StubModelServer() as stub:
            docs_qa.index_folder(self.settings_for(stub))
            self.assertEqual(stub.embedded_texts, 0)   # unchanged chunks are never re-sent

    def test_long_chunks_are_cut_knowingly(self):
        write_files(self.docs, {"long.txt": ("slowo " * 199 + "\n") * 2})   # two ~1.2k-char lines
        long_text = "x " * (docs_qa.MAX_EMBED_CHARS + 10)
        write_files(self.docs, {"huge.md": long_text + "\n"})
        with StubModelServer() as stub:
            stats = docs_qa.index_folder(self.settings_for(stub))
            sent = [t for _, body in stub.bodies for t in body["input"]]
        self.assertTrue(all(len(t) <= docs_qa.MAX_EMBED_CHARS for t in sent))
        self.assertIn("embed_truncated", [n.code for n in stats.notes])


if __name__ == "__main__":
    unittest.main()
