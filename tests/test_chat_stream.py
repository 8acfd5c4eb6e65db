"""Tests of the chat call (sections 8 and 14): the reply is streamed, --timeout bounds each
silent gap, --chat-timeout the whole call, an accepted request is never sent twice, and
every fault (a length cut included) ends in the extractive answer with a note.

The stand-in (tests/helpers.StubModelServer) streams server-sent events, hangs before the
first byte (`hang`) or mid-stream (`hang_mid`), sends slowly but steadily (`slow`), cuts
for length (`length`), stops mid-reply with no end marker (`cut`, `cut_close`), ends with
only one of them (`stop_no_done`, `done_only`), or ignores "stream" (`chat_stream = False`). No assertion reads a
clock: a hang the client waited out would end after `hang_s` = 60 s with an empty reply,
whose note names another kind than the `timeout` or `deadline` each test asserts.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import unittest
from dataclasses import replace

from helpers import REPO, StubServerCase, assert_clean_failure_output, docs_qa, run_cli
import parallel

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process

QUESTION = "do kiedy składam plik JPK"
REPLY = "Plik JPK_V7M składa się do 25. dnia miesiąca [jpk.md:5-5]."
HANG_S = 60.0
WAIT_S = 30.0                      # how long a test waits for an event before it fails


class ChatStreamCase(StubServerCase):
    def setUp(self):
        super().setUp()
        self.stub.chat_reply = REPLY
        self.stub.hang_s = HANG_S

    def env(self, **extra: str) -> dict[str, str]:
        return {"DOCS_QA_BASE_URL": self.stub.base_url, "DOCS_QA_CHAT_MODEL": "stub-chat-7b", **extra}

    def ask(self, *flags: str, env: dict[str, str] | None = None) -> dict:
        """Run the CLI question with --json; return the envelope."""
        proc = run_cli(QUESTION, "--docs", self.docs, "--cache-dir", self.cache, "--no-embed",
                       "--json", *flags, env=env or self.env(), timeout=120)
        assert_clean_failure_output(self, proc)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    @staticmethod
    def notes(envelope: dict) -> dict[str, str]:
        return {n["code"]: n["message"] for n in envelope["notes"]}

    def chat_bodies(self) -> list[dict]:
        return [body for path, body in self.stub.bodies if path.endswith("/chat/completions")]


class StreamedReplyTest(ChatStreamCase):
    def test_the_reply_is_streamed_asked_for_once_and_its_citation_checked(self):
        envelope = self.ask()
        self.assertEqual((envelope["answer_mode"], self.stub.chat_requests), ("assistant", 1))
        self.assertIs(self.chat_bodies()[0]["stream"], True)
        self.assertGreater(self.stub.streamed_tokens, 3)
        self.assertEqual([c["valid"] for c in envelope["citations"]], [True])
        self.assertIn("25. dnia", envelope["answer"])

    def test_a_server_that_does_not_stream_is_read_as_one_plain_reply(self):
        self.stub.chat_stream = False
        envelope = self.ask()
        self.assertEqual((envelope["answer_mode"], self.stub.chat_requests), ("assistant", 1))
        self.assertIs(self.chat_bodies()[0]["stream"], True)     # asked to stream, read plain
        self.assertEqual(self.stub.streamed_tokens, 0)
        self.assertIn("25. dnia", envelope["answer"])

    def test_slow_but_steady_tokens_are_waited_for_past_the_gap_timeout(self):
        self.stub.chat_fault = "slow"
        self.stub.token_gap_s = 0.05           # 59 words: about 3 s in all, twice the 1.5 s gap
        self.stub.chat_reply = " ".join(["słowo"] * 50) + " " + REPLY   # timeout, never near 1.5 s silent
        envelope = self.ask("--timeout", "1.5", "--chat-timeout", "60")
        self.assertEqual(envelope["answer_mode"], "assistant", envelope["notes"])
        self.assertEqual(self.stub.chat_requests, 1)
        self.assertIn("25. dnia", envelope["answer"])


class HungServerTest(ChatStreamCase):
    def assert_fell_back(self, envelope: dict, kind: str) -> None:
        self.assertEqual((envelope["status"], envelope["answer_mode"]), ("ok", "extractive"))
        self.assertEqual(self.notes(envelope)["llm_unavailable"],
                         f"the chat model is unavailable ({kind}); answered extractively")
        self.assertIn("[jpk.md:5-5]", envelope["answer"])
        self.assertEqual(self.stub.chat_requests, 1, "an accepted request is never sent again")

    def test_a_hang_before_the_first_byte_ends_after_timeout(self):
        self.stub.chat_fault = "hang"
        envelope = self.ask("--timeout", "0.5")
        self.assert_fell_back(envelope, "timeout")

    def test_a_hang_mid_stream_ends_after_timeout(self):
        self.stub.chat_fault = "hang_mid"
        envelope = self.ask("--timeout", "1")
        self.assert_fell_back(envelope, "timeout")
        self.assertGreaterEqual(self.stub.streamed_tokens, 2)    # it had started answering

    def test_a_steady_stream_longer_than_the_chat_timeout_ends_at_it(self):
        self.stub.chat_fault = "slow"
        self.stub.token_gap_s = 0.05           # never near the 10 s gap timeout; ~3.5 s of tokens in all
        self.stub.chat_reply = " ".join(["słowo"] * 60) + " " + REPLY
        envelope = self.ask("--timeout", "10", env=self.env(DOCS_QA_CHAT_TIMEOUT="1"))
        self.assert_fell_back(envelope, "deadline")

    def test_a_server_error_after_the_request_was_accepted_is_not_resent(self):
        for fault in ("http_500", "http_502", "truncated_json"):
            with self.subTest(fault=fault):
                self.stub.reset()
                self.stub.chat_fault = fault
                envelope = self.ask("--timeout", "2")
                self.assertEqual(envelope["answer_mode"], "extractive")
                self.assertEqual(self.stub.chat_requests, 1)

    def test_a_503_before_any_byte_is_retried_and_the_accepted_request_sent_once(self):
        self.stub.chat_fault = "http_503"
        envelope = self.ask("--timeout", "2", "--chat-timeout", "2")
        self.assertEqual(envelope["answer_mode"], "extractive")
        self.assertGreater(self.stub.chat_requests, 1)          # retried while the deadline allows
        self.stub.reset()
        self.stub.chat_reply = REPLY
        self.stub.chat_fault = "refuse_then_ok"
        self.stub.fail_first = 1
        envelope = self.ask("--timeout", "2")
        self.assertEqual(envelope["answer_mode"], "assistant", envelope["notes"])
        self.assertEqual(self.stub.chat_requests, 2)            # one 503, one accepted


class LengthCutTest(ChatStreamCase):
    def test_a_reply_cut_for_length_falls_back_with_llm_truncated(self):
        for streamed in (True, False):
            with self.subTest(streamed=streamed):
                self.stub.reset()
                self.stub.chat_reply = REPLY
                self.stub.chat_fault = "length"
                self.stub.chat_stream = streamed
                envelope = self.ask()
                self.assertEqual((envelope["status"], envelope["answer_mode"]), ("ok", "extractive"))
                notes = self.notes(envelope)
                self.assertIn("llm_truncated", notes)
                self.assertNotIn("llm_unavailable", notes)
                self.assertIn("[jpk.md:5-5]", envelope["answer"])
                self.assertEqual(self.stub.chat_requests, 1)


class StreamEndTest(ChatStreamCase):
    """A stream that stops with neither [DONE] nor a finish_reason is an interrupted reply
    (issue 30, item 5): the extractive answer with an llm_unavailable note naming the cut;
    either end marker alone completes a reply."""

    def ask_ending(self, fault: str) -> dict:
        """Return the envelope of the question answered by a stream that ends as fault says."""
        self.stub.reset()
        self.stub.chat_reply, self.stub.chat_fault = REPLY, fault
        return self.ask()

    def test_a_stream_cut_without_done_or_finish_reason_falls_back_with_a_note(self):
        for fault in ("cut", "cut_close"):
            with self.subTest(fault=fault):
                envelope = self.ask_ending(fault)
                self.assertEqual((envelope["status"], envelope["answer_mode"]), ("ok", "extractive"))
                self.assertIn("(stream_cut)", self.notes(envelope).get("llm_unavailable", ""))
                self.assertIn("[jpk.md:5-5]", envelope["answer"])
                self.assertEqual(self.stub.chat_requests, 1)

    def test_a_stream_that_ends_with_only_a_finish_reason_or_only_done_is_complete(self):
        for fault in ("stop_no_done", "done_only"):
            with self.subTest(fault=fault):
                envelope = self.ask_ending(fault)
                self.assertEqual(envelope["answer_mode"], "assistant", envelope["notes"])
                self.assertIn("25. dnia", envelope["answer"])


class HttpRagBoundTest(ChatStreamCase):
    def test_rag_over_http_honours_the_gap_timeout_and_sends_once(self):
        self.stub.chat_fault = "hang_mid"
        settings = self.settings(base_url=self.stub.base_url, use_embeddings=False, timeout_s=1.0)
        ctx = docs_qa.ServerContext(docs_qa.OperationContext(replace(
            settings, chat_model="stub-chat-7b", chat_timeout_s=60.0)))
        status, _, body = docs_qa.handle_request("POST", "/rag", {}, json.dumps(
            {"question": QUESTION}).encode(), ctx)
        envelope = json.loads(body)
        self.assertEqual((status, envelope["answer_mode"]), (200, "extractive"))
        self.assertIn("(timeout)", self.notes(envelope)["llm_unavailable"])
        self.assertEqual(self.stub.chat_requests, 1)


class ChatTimeoutOptionTest(ChatStreamCase):
    def test_a_bad_chat_timeout_is_refused_in_one_line(self):
        proc = run_cli(QUESTION, "--docs", self.docs, "--no-cache",
                       env=self.env(DOCS_QA_CHAT_TIMEOUT="soon"))
        assert_clean_failure_output(self, proc)
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stderr.strip().splitlines(),
                         ["docs_qa: error: DOCS_QA_CHAT_TIMEOUT must be a positive number of seconds"])
        proc = run_cli(QUESTION, "--docs", self.docs, "--chat-timeout", "0")
        self.assertEqual(proc.returncode, 2)

    def test_help_states_the_default(self):
        proc = run_cli("--help")
        self.assertIn(f"default {docs_qa.DEFAULT_CHAT_TIMEOUT_S:g}", " ".join(proc.stdout.split()))


class SignalTest(ChatStreamCase):
    def start_hung_question(self) -> subprocess.Popen:
        self.stub.chat_fault = "hang"
        asked = threading.Event()
        self.stub.chat_hook = lambda body: asked.set()
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
        env.update(self.env(EMBED_MOCK="1"))
        # a shell starts background jobs with SIGINT ignored, and an ignored signal stays
        # ignored across exec: the child starts with the default, as in a terminal
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            proc = subprocess.Popen([sys.executable, os.path.join(REPO, "docs_qa.py"), QUESTION,
                                     "--docs", self.docs, "--no-cache", "--no-embed", "--timeout", "30"],
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        finally:
            signal.signal(signal.SIGINT, previous)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.assertTrue(asked.wait(WAIT_S), "the chat call never started")
        self.assertEqual(self.stub.chat_requests, 1)
        return proc

    def test_ctrl_c_and_sigterm_during_the_chat_end_in_one_line(self):
        for sig, code, word in ((signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")):
            with self.subTest(signal=sig.name):
                self.stub.reset()
                self.stub.hang_s = HANG_S
                proc = self.start_hung_question()
                proc.send_signal(sig)
                out, err = proc.communicate(timeout=WAIT_S)
                self.assertEqual(proc.returncode, code)
                self.assertEqual(err.strip().splitlines(), [f"docs_qa: {word}"])
                self.assertEqual(out, "")


@unittest.skipUnless(hasattr(os, "openpty"), "needs a pseudo-terminal")
class ProgressTest(ChatStreamCase):
    def run_with_stderr(self, stderr_fd: int | None) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
        env.update(self.env(EMBED_MOCK="1"))
        proc = subprocess.run([sys.executable, os.path.join(REPO, "docs_qa.py"), QUESTION,
                               "--docs", self.docs, "--no-cache", "--no-embed"], env=env,
                              stdout=subprocess.PIPE, stderr=stderr_fd if stderr_fd is not None
                              else subprocess.PIPE, timeout=60)
        self.assertEqual(proc.returncode, 0)
        return (proc.stderr or b"").decode()

    def test_progress_is_shown_on_a_terminal_and_nowhere_else(self):
        master, slave = os.openpty()
        shown, drawn = [], threading.Event()

        def read_terminal() -> None:       # until the child closes its end
            while True:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    return
                if not data:
                    return
                shown.append(data)
                if "waiting for".encode() in b"".join(shown):
                    drawn.set()
        reader = threading.Thread(target=read_terminal, daemon=True)
        reader.start()
        self.stub.chat_hook = lambda body: drawn.wait(WAIT_S)   # answer once the ticker drew
        try:
            self.run_with_stderr(slave)
            os.close(slave)
            reader.join(WAIT_S)
        finally:
            os.close(master)
        text = b"".join(shown).decode("utf-8", "replace")
        self.assertRegex(text, r"waiting for stub-chat-7b\u2026 \d+ s, \d+ tokens")
        # a reply slower than one ticker period, without a terminal: nothing is drawn
        self.stub.chat_hook = None
        self.stub.chat_fault = "slow"
        self.stub.token_gap_s = (docs_qa.PROGRESS_TICK_S + 0.5) / len(REPLY.split())
        self.assertEqual(self.run_with_stderr(None), "")


if __name__ == "__main__":
    unittest.main()
