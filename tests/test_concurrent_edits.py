"""Tests of questions racing file edits (sections 10 and 12): a question reads one snapshot
of the index, whatever another process or thread commits meanwhile, and a folder being
edited never makes an internal error.

The function-level tests force the interleaving: a hook commits another connection's
refresh between two reads of one question, so they fail every time the snapshot is broken.
The process, HTTP and MCP tests run the real surfaces while a thread appends to files, a
bounded number of rounds; they catch the race when its timing falls so, which the shapes
here make likely: the processes ask over a folder of SCAN_SPLIT_MIN_FILES documents (whose
early ranking widened the window), the servers answer a dozen questions a round while the
edits come in waves and another process indexes.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

from helpers import INIT, REPO, TAX_CORPUS, McpProcess, ServeProcess, TempDirTest, http_request, write_files
import parallel

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process

import docs_qa
import retrieval_contract as rc

QUESTION = "how does the widget handle frobnication of the gadget"
SEARCH_SCHEMA = docs_qa.OPERATIONS["search"].response_schema
ROUND_S = 8.0                      # no new round starts after this long (a guard on a loaded host)
QUESTIONS_PER_ROUND = 12
EDIT_PAUSE_S = 0.05                # between two waves of edits while a server answers


def _append(path: str, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


class _RefreshElsewhereCase(TempDirTest):
    """TAX_CORPUS indexed with (mock) embeddings; refresh_elsewhere() edits and indexes it on
    another connection, as another process or thread would."""

    def setUp(self) -> None:
        super().setUp()
        write_files(self.docs, TAX_CORPUS)
        self.before = docs_qa.index_folder(self.settings()).index_version

    def refresh_elsewhere(self, text: str) -> str:
        """Append text to jpk.md and index it on a connection of another thread; return the
        index_version that refresh committed."""
        _append(os.path.join(self.docs, "jpk.md"), text)
        done: list = []
        worker = threading.Thread(target=lambda: done.append(docs_qa.index_folder(self.settings())))
        worker.start()
        worker.join(30)
        self.assertEqual(len(done), 1, "the other refresh did not finish")
        self.assertEqual(done[0].updated, 1)
        return done[0].index_version


class SnapshotTest(_RefreshElsewhereCase):
    """Another connection's refresh committed in the middle of a question, forced by a hook."""
    def test_chunks_replaced_after_the_postings_were_read_are_still_read_as_ranked(self):
        rank = docs_qa._bm25_ranking
        after: list[str] = []

        def ranked_then_refreshed(*args, **kwargs):
            top = rank(*args, **kwargs)
            if not after:                    # jpk.md's chunks get new ids now
                after.append(self.refresh_elsewhere("\nA zebracorn paragraph.\n"))
            return top
        with mock.patch.object(docs_qa, "_bm25_ranking", ranked_then_refreshed):
            result = docs_qa.search("termin JPK", self.settings())
        self.assertEqual(len(after), 1)
        self.assertEqual(result.hits[0].chunk.path, "jpk.md")
        self.assertNotIn("zebracorn", "".join(h.chunk.text for h in result.hits))   # the snapshot's
        self.assertEqual(result.index_version, self.before)                          # and named so
        self.assertNotEqual(after[0], self.before)

    def test_a_refresh_committed_before_the_ranking_is_named_by_the_index_version(self):
        find = docs_qa._find
        after: list[str] = []

        def refreshed_then_found(*args, **kwargs):
            if not after:
                after.append(self.refresh_elsewhere("\nThe zebracorn JPK file is in May.\n"))
            return find(*args, **kwargs)
        with mock.patch.object(docs_qa, "_find", refreshed_then_found):
            result = docs_qa.search("zebracorn JPK file", self.settings())   # no deadline asked
        self.assertIn("zebracorn", result.hits[0].chunk.text)
        self.assertEqual(result.index_version, after[0])

    def test_an_early_ranking_is_dropped_when_another_refresh_committed_the_edit(self):
        _append(os.path.join(self.docs, "notes.txt"), "\nThe zebracorn fee is due in May.\n")
        find, calls = docs_qa._find, []

        def found_then_refreshed(*args, **kwargs):
            found = find(*args, **kwargs)
            if not calls:                    # the early ranking, on the index before the edit
                done = docs_qa.index_folder(self.settings())      # another connection indexes it
                self.assertEqual(done.updated, 1)
            calls.append(found)
            return found
        with mock.patch.object(docs_qa, "SCAN_SPLIT_MIN_FILES", 3), \
                mock.patch.object(docs_qa, "_can_fork", return_value=True), \
                mock.patch.object(docs_qa, "_find", found_then_refreshed):
            result = docs_qa.search("zebracorn fee", self.settings())
        self.assertEqual(len(calls), 2)                    # this refresh found nothing left to do,
        self.assertEqual(result.stats.updated, 0)          # yet the stale ranking was dropped
        self.assertEqual(result.hits[0].chunk.path, "notes.txt")
        self.assertIn("zebracorn", result.hits[0].chunk.text)


class EmbeddingRaceTest(_RefreshElsewhereCase):
    """Another connection's refresh committed while a question embeds the chunks without a
    vector, forced by a hook after the scan for them."""

    def embedding_with_a_refresh_after_the_scan(self, settings_elsewhere: docs_qa.Settings) -> docs_qa.SearchResult:
        """Leave jpk.md's chunks without vectors, then ask with embeddings while another
        connection re-chunks jpk.md (with settings_elsewhere) right after the scan."""
        _append(os.path.join(self.docs, "jpk.md"), "\nA first zebracorn paragraph.\n")
        docs_qa.index_folder(self.settings(use_embeddings=False))
        scan, scans = docs_qa._cache_missing_vectors, []

        def scanned_then_refreshed(*args, **kwargs):
            missing = scan(*args, **kwargs)
            scans.append(len(missing))
            if len(scans) == 1:              # (the other refresh's own scan is the second)
                _append(os.path.join(self.docs, "jpk.md"), "\nA second zebracorn paragraph.\n")
                self.assertEqual(docs_qa.index_folder(settings_elsewhere).updated, 1)
            return missing
        with mock.patch.object(docs_qa, "_cache_missing_vectors", scanned_then_refreshed):
            result = docs_qa.search("zebracorn termin JPK", self.settings())
        self.assertGreater(scans[0], 0)
        return result

    def test_chunks_dropped_after_the_scan_for_missing_vectors_are_skipped(self):
        result = self.embedding_with_a_refresh_after_the_scan(self.settings())
        self.assertEqual(result.mode, "hybrid")
        self.assertTrue(any("second zebracorn" in h.chunk.text for h in result.hits))

    def test_chunks_written_after_the_scan_are_embedded_by_the_next_question(self):
        self.embedding_with_a_refresh_after_the_scan(self.settings(use_embeddings=False))
        settings = self.settings()
        model = docs_qa._model_tag(settings)
        path = docs_qa.cache_path(self.cache, self.docs)
        conn = docs_qa.cache_open(path)
        try:
            self.assertGreater(len(docs_qa._cache_missing_vectors(conn, model)), 0)   # the other's chunks
        finally:
            conn.close()
        docs_qa.search("zebracorn termin JPK", settings)          # embeds them, as nothing says done
        conn = docs_qa.cache_open(path)
        try:
            self.assertEqual(len(docs_qa._cache_missing_vectors(conn, model)), 0)
        finally:
            conn.close()


def _big_folder(root: str, n_files: int, n_folders: int) -> None:
    """Write n_files small markdown files spread over n_folders folders."""
    for n in range(n_folders):
        os.makedirs(os.path.join(root, f"d{n}"))
    for i in range(n_files):
        with open(os.path.join(root, f"d{i % n_folders}", f"f{i}.md"), "w", encoding="utf-8") as fh:
            fh.write(f"# Topic {i}\n\nThe widget number {i} handles frobnication of gadget {i % 97}.\n\n"
                     f"## Details\n\nMore about sprockets, alpha{i % 13} and beta{i % 7}.\n")


class _EditedFolderCase(unittest.TestCase):
    """A folder indexed once for the class; editing() appends to every tenth file in a
    thread while questions run."""

    N_FILES, N_FOLDERS = 1000, 10
    EMBED = True                   # index with (mock) embeddings

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.mkdtemp()
        cls.docs, cls.cache = os.path.join(cls.tmp, "docs"), os.path.join(cls.tmp, "cache")
        _big_folder(cls.docs, cls.N_FILES, cls.N_FOLDERS)
        docs_qa.index_folder(docs_qa.Settings(docs_dir=cls.docs, cache_dir=cls.cache, embed_mock=True,
                                              use_embeddings=cls.EMBED))
        cls.rounds = 0

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def editing(self, waves: int = 1, until: threading.Event | None = None) -> threading.Thread:
        """Start appending a line to every tenth file, in that many waves a moment apart (the
        rest are left alone once until is set); return the thread."""
        type(self).rounds += 1
        line = f"\nappended in round {self.rounds}: the widget frobnication changed\n"
        edited = range(0, self.N_FILES, 10)

        def edit() -> None:
            for wave in range(waves):
                if wave and (until is None or until.wait(EDIT_PAUSE_S)):
                    break
                for i in edited[wave::waves]:
                    _append(os.path.join(self.docs, f"d{i % self.N_FOLDERS}", f"f{i}.md"), line)
        thread = threading.Thread(target=edit)
        thread.start()
        return thread

    def assert_search_envelope(self, envelope: dict, where: str) -> None:
        self.assertEqual(envelope.get("status"), "ok", f"{where}: {envelope}")
        self.assertEqual(rc.schema_errors(envelope, SEARCH_SCHEMA), [], where)
        self.assertTrue(envelope["sources"], where)


class QuestionProcessesRaceTest(_EditedFolderCase):
    """Four CLI question processes at once while a thread edits 400 of the folder's files: each
    exits 0 with a valid envelope (the folder is large enough for the early ranking; BM25 only,
    to keep it quick: SnapshotTest covers the embeddings' reads)."""

    N_FOLDERS = 40
    N_FILES = docs_qa.SCAN_SPLIT_MIN_FILES - N_FOLDERS     # documents + folders: a shared walk
    EMBED = False

    def test_questions_started_while_files_are_appended_to_all_answer(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
        env["EMBED_MOCK"] = "1"
        command = [sys.executable, os.path.join(REPO, "docs_qa.py"), QUESTION, "--docs", self.docs,
                   "--cache-dir", self.cache, "--no-embed", "--search", "--json"]
        start = time.monotonic()
        for round_number in range(2):
            if round_number and time.monotonic() - start > ROUND_S:
                break
            procs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                     for _ in range(4)]
            editor = self.editing()
            for proc in procs:
                out, err = proc.communicate(timeout=120)
                where = f"round {round_number}: {err.decode(errors='replace')[-300:]}"
                self.assertEqual(proc.returncode, 0, where)
                self.assert_search_envelope(json.loads(out), where)
            editor.join()


class ServerThreadsRaceTest(_EditedFolderCase):
    """Four questions at a time to `serve` and to `mcp` (each serves them in threads) while files
    are appended to in waves and another process indexes the same cache."""

    def question_rounds(self, ask_round) -> None:
        """Run ask_round(numbers) (QUESTIONS_PER_ROUND questions, four at a time, checked) a
        few rounds, each while files are edited in waves and a CLI `index` refreshes the cache."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
        env["EMBED_MOCK"] = "1"
        start = time.monotonic()
        for round_number in range(3):
            if round_number and time.monotonic() - start > ROUND_S:
                break
            asked = threading.Event()
            editor = self.editing(waves=10, until=asked)
            indexer = subprocess.Popen([sys.executable, os.path.join(REPO, "docs_qa.py"), "index",
                                        "--docs", self.docs, "--cache-dir", self.cache], env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                first = QUESTIONS_PER_ROUND * round_number
                ask_round(range(first, first + QUESTIONS_PER_ROUND))
            finally:
                asked.set()
                editor.join()
                self.assertEqual(indexer.wait(120), 0)

    def test_serve_answers_every_question_while_files_are_appended_to(self):
        server = ServeProcess(self.docs, "--cache-dir", self.cache)
        try:
            def ask_round(numbers: range) -> None:
                replies: dict[int, tuple] = {}

                def ask(mine: range) -> None:
                    for n in mine:
                        replies[n] = http_request(server.port, "POST", "/search",
                                                  json.dumps({"query": f"{QUESTION} {n}"}),
                                                  {"Content-Type": "application/json"}, timeout=120)
                askers = [threading.Thread(target=ask, args=(numbers[k::4],)) for k in range(4)]
                for thread in askers:
                    thread.start()
                for thread in askers:
                    thread.join(120)
                self.assertEqual(sorted(replies), list(numbers))
                for n, (status, _, body) in replies.items():
                    self.assertEqual(status, 200, body[:300])
                    self.assert_search_envelope(json.loads(body), f"question {n}")
            self.question_rounds(ask_round)
        finally:
            stderr = server.close()
        self.assertNotIn("Traceback", stderr)

    def test_mcp_answers_every_tool_call_while_files_are_appended_to(self):
        mcp = McpProcess(["--docs", self.docs, "--cache-dir", self.cache], {"EMBED_MOCK": "1"})
        self.addCleanup(mcp.kill)
        mcp.recv_reply(mcp.send("initialize", INIT))

        def ask_round(numbers: range) -> None:       # the calls run MCP_WORKERS (4) at a time
            sent = {mcp.send("tools/call", {"name": "search_docs",
                                            "arguments": {"query": f"{QUESTION} {n}"}}): n for n in numbers}
            replies: dict[int, dict] = {}
            while len(replies) < len(sent):            # in the order they finish
                message = mcp.recv()
                if message.get("id") in sent and "method" not in message:
                    replies[message["id"]] = message["result"]
            for msg_id, result in replies.items():
                self.assertIs(result["isError"], False, result)
                self.assert_search_envelope(result["structuredContent"], f"call {sent[msg_id]}")
        self.question_rounds(ask_round)
        self.assertEqual(mcp.close()[0], 0)


if __name__ == "__main__":
    unittest.main()
