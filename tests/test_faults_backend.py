"""Fault battery, part 2: half-broken model servers, for embeddings and chat alike.

Each fault ends in the documented degradation: embeddings down -> BM25 only with an
`embeddings_unavailable` note; chat down -> extractive answer with an `llm_unavailable`
note. Retries are bounded in number, and the waits between them within the time budget:
the settings carry a sleep that records each wait instead of waiting.
"""
import json
import os
import socket
import threading
import unittest

from helpers import (StubServerCase, TAX_CORPUS, StubModelServer, TempDirTest, assert_clean_failure_output,
                     docs_qa, run_cli, write_files)
import parallel

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process

TIMEOUT_S = 0.5
RETRIES = 1
QUESTION = "do kiedy składam plik JPK"

# fault -> the kind named in the note (what the client can tell about it)
EMBED_FAULTS = {
    "refuse_body": "timeout", "hang": "timeout", "http_400": "http_400", "http_404": "http_404",
    "http_429": "http_429", "http_500": "http_500", "http_503": "http_503",
    "html": "malformed_json", "truncated_json": "malformed_json",
    "wrong_count": "wrong_vector_count", "wrong_dim": "inconsistent_dimensions",
    "changing_dim": "inconsistent_dimensions", "nan": "bad_vector", "huge": "wrong_vector_count",
}
CHAT_FAULTS = {
    "refuse_body": "timeout", "hang": "timeout", "http_400": "http_400", "http_404": "http_404",
    "http_429": "http_429", "http_500": "http_500", "http_503": "http_503",
    "html": "malformed_json", "truncated_json": "malformed_json",
    "empty_choices": "empty_choices", "no_content": "empty_choices", "huge": "empty_choices",
}
TRANSIENT = {"refuse_body", "hang", "http_429", "http_500", "http_503"}


class BackendCase(StubServerCase):
    def setUp(self):
        super().setUp()
        self.stub.hang_s = 3.0           # a client without a timeout would wait this long per attempt
        self.stub.chat_reply = "Plik JPK_V7M składa się do 25. dnia miesiąca [jpk.md:5-5]."
        self.waits: list[float] = []     # each backoff the client asked for, in seconds

    def live_settings(self, **overrides):
        values = {"embed_mock": False, "base_url": self.stub.base_url, "embed_model": "plain-model",
                  "timeout_s": TIMEOUT_S, "retries": RETRIES, "sleep": self.waits.append}
        values.update(overrides)
        return self.settings(**values)

    def ask(self, **overrides):
        return docs_qa.answer(QUESTION, self.live_settings(**overrides, chat_timeout_s=TIMEOUT_S))

    def notes(self, result) -> dict[str, str]:
        return {n.code: n.message for n in result.notes}


class EmbeddingFaultTest(BackendCase):
    def test_every_embedding_fault_degrades_to_bm25_with_a_note(self):
        for fault, kind in EMBED_FAULTS.items():
            with self.subTest(fault=fault):
                self.stub.embed_fault = fault
                self.stub.embed_requests = 0
                self.waits.clear()
                result = self.ask(cache_dir=None)
                self.assertEqual(result.search.mode, "bm25")
                self.assertEqual(self.notes(result)["embeddings_unavailable"],
                                 f"embeddings unavailable ({kind}); results are BM25 only")
                self.assertEqual(result.status, "ok")
                self.assertEqual(result.search.hits[0].chunk.path, "jpk.md")
                self.assertEqual(result.answer_mode, "assistant")
                # bounded: at most retries+1 attempts per call, two calls at most
                # (query, then the first document batch), each call's waits within its budget
                self.assertLessEqual(self.stub.embed_requests, 2 * (RETRIES + 1))
                self.assertLessEqual(len(self.waits), 2 * RETRIES)
                self.assertLess(sum(self.waits), 2 * TIMEOUT_S * (RETRIES + 1))
                if fault not in TRANSIENT:
                    self.assertLessEqual(self.stub.embed_requests, 2, "a permanent fault is not retried")
                    self.assertEqual(self.waits, [])

    def test_connection_refused_degrades_without_retrying(self):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()                      # nothing listens on port now
        result = docs_qa.search(QUESTION, self.live_settings(base_url=f"http://127.0.0.1:{port}/v1"))
        self.assertEqual(self.waits, [])          # no retry loop
        self.assertEqual(result.mode, "bm25")
        self.assertIn("(refused)", self.notes(result)["embeddings_unavailable"])

    def test_unparsable_or_unsupported_base_url_degrades_without_retrying(self):
        for base, kind in (("http://[::1/v1", "bad_url"), ("localhost:1234/v1", "bad_url")):
            with self.subTest(base=base):
                result = docs_qa.answer(QUESTION, self.live_settings(base_url=base,
                                                                     chat_timeout_s=TIMEOUT_S))
                self.assertEqual((result.search.mode, result.answer_mode), ("bm25", "extractive"))
                self.assertIn(f"({kind})", self.notes(result)["embeddings_unavailable"])
                self.assertIn(f"({kind})", self.notes(result)["llm_unavailable"])

    def test_server_speaking_garbage_instead_of_http_degrades(self):
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        self.addCleanup(server.close)

        def serve():
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    conn.recv(65536)
                    conn.sendall(b"garbage, not HTTP at all\r\n\r\n")
        threading.Thread(target=serve, daemon=True).start()
        base = f"http://127.0.0.1:{server.getsockname()[1]}/v1"
        result = docs_qa.answer(QUESTION, self.live_settings(base_url=base, chat_timeout_s=TIMEOUT_S))
        self.assertEqual(result.search.mode, "bm25")
        self.assertIn("(bad_reply)", self.notes(result)["embeddings_unavailable"])
        self.assertEqual(result.answer_mode, "extractive")
        self.assertIn("(bad_reply)", self.notes(result)["llm_unavailable"])

    def test_retry_after_is_honoured_but_capped_by_the_total_deadline(self):
        waits = []
        url = self.stub.base_url + "/embeddings"
        self.stub.embed_fault = "http_429"
        with self.assertRaises(docs_qa.BackendError) as ctx:
            docs_qa._request_json(url, {"input": ["x"]}, 0.5, 3, sleep=waits.append)
        self.assertEqual(ctx.exception.kind, "http_429")
        self.assertEqual(len(waits), 3)       # 4 attempts = retries + 1, none past the budget
        self.assertEqual(docs_qa._retry_after_s("120", 1), docs_qa.RETRY_AFTER_CAP_S)
        self.assertEqual(docs_qa._retry_after_s("soon", 2), 0.4)
        self.assertEqual(docs_qa._retry_after_s("-3", 1), 0.0)

    def test_inf_values_and_a_zero_length_vector_are_rejected(self):
        for reply in ({"data": [{"index": 0, "embedding": [float("inf"), 1.0]}]},
                      {"data": [{"index": 0, "embedding": []}]},
                      {"data": [{"index": 0, "embedding": ["1", "2"]}]},
                      {"data": [{"index": 5, "embedding": [1.0]}]},
                      {"data": "nope"}, [], None):
            with self.assertRaises(docs_qa.BackendError, msg=repr(reply)):
                docs_qa._check_vectors(reply, 1)

    def test_a_fault_leaves_no_vectors_in_the_cache_and_the_next_run_is_hybrid(self):
        self.stub.embed_fault = "wrong_dim"
        first = self.ask()
        self.assertEqual(first.search.mode, "bm25")
        self.stub.embed_fault = None
        second = self.ask()
        self.assertEqual(second.search.mode, "hybrid")
        self.assertEqual(second.search.hits[0].chunk.path, "jpk.md")
        self.assertNotIn("embeddings_unavailable", self.notes(second))


    def test_server_changing_dimension_between_runs_is_re_embedded_not_stuck(self):
        first = self.ask(use_embeddings=True)
        self.assertEqual(first.search.mode, "hybrid")
        self.stub.dim = 16                # same model name, another model behind it
        for question in ("kiedy termin JPK", "termin pliku JPK"):   # new: not in the query cache
            again = docs_qa.search(question, self.live_settings())
            self.assertEqual(again.mode, "hybrid")
            self.assertNotIn("embeddings_unavailable", self.notes(again))
            self.assertEqual(again.hits[0].chunk.path, "jpk.md")

    def test_server_flapping_dimension_never_caches_a_mixed_index(self):
        self.stub.embed_fault = "changing_dim"    # odd requests one longer than even ones
        for _ in range(3):
            result = docs_qa.search(QUESTION, self.live_settings())
            self.assertEqual(result.hits[0].chunk.path, "jpk.md")
        conn = docs_qa.cache_open(docs_qa.cache_path(self.cache, self.docs))
        self.addCleanup(conn.close)
        self.assertLessEqual(len({r[0] for r in conn.execute("SELECT dim FROM vectors")}), 1)


class ChatFaultTest(BackendCase):
    def test_every_chat_fault_degrades_to_an_extractive_answer_with_a_note(self):
        for fault, kind in CHAT_FAULTS.items():
            with self.subTest(fault=fault):
                self.stub.chat_fault = fault
                self.stub.chat_requests = 0
                self.waits.clear()
                result = self.ask(use_embeddings=False)
                self.assertLess(sum(self.waits), TIMEOUT_S)    # within the chat deadline
                self.assertEqual(result.status, "ok")
                self.assertEqual(result.answer_mode, "extractive")
                self.assertEqual(self.notes(result)["llm_unavailable"],
                                 f"the chat model is unavailable ({kind}); answered extractively")
                self.assertIn("[jpk.md:5-5]", result.answer)
                self.assertLessEqual(self.stub.chat_requests, RETRIES + 1)

    def test_healthy_chat_is_used_and_its_citation_checked(self):
        result = self.ask(use_embeddings=False)
        self.assertEqual(result.answer_mode, "assistant")
        self.assertEqual([(c.path, c.valid) for c in result.citations], [("jpk.md", True)])


class CliBackendTest(BackendCase):
    def test_cli_degrades_with_exit_0_and_notes_in_text_and_json(self):
        self.stub.embed_fault = "http_500"
        self.stub.chat_fault = "html"
        env = {"EMBED_MOCK": "0", "DOCS_QA_BASE_URL": self.stub.base_url,
               "DOCS_QA_EMBED_MODEL": "plain-model", "DOCS_QA_EMBED_LANGUAGES": "all"}   # Polish: asked
        common = (QUESTION, "--docs", self.docs, "--cache-dir", self.cache, "--timeout", "0.5")
        proc = run_cli(*common, "--json", env=env)
        assert_clean_failure_output(self, proc)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        envelope = json.loads(proc.stdout)
        self.assertEqual((envelope["status"], envelope["mode"], envelope["answer_mode"]),
                         ("ok", "bm25", "extractive"))
        # the stub lists its models, so the chat model was picked from /models (noted)
        # before the chat call itself failed
        self.assertEqual(sorted(n["code"] for n in envelope["notes"]),
                         ["chat_model_auto", "embeddings_unavailable", "llm_unavailable"])
        self.assertNotIn(self.tmp, proc.stdout)
        text = run_cli(*common, env=env)
        self.assertEqual(text.returncode, 0)
        self.assertIn("! embeddings_unavailable:", text.stdout)
        self.assertIn("! llm_unavailable:", text.stdout)


if __name__ == "__main__":
    unittest.main()
