"""Tests of server start-up and concurrency (sections 18 and 19): `mcp` answers initialize
at once and indexes in the background, a tool call waits for the index (with progress
notifications), a hanging ask_docs does not block ping, notifications/cancelled drops the
call it names and closes its model connection, the end of stdin ends the process while a
call hangs, the start-up index draws no carriage-return progress on a stderr that is not a
terminal, query_graph is listed only with a graph, and `serve --no-cache` keeps one
in-memory index for its lifetime.

The model stand-in hangs until released (StubModelServer.release), so the order of events
is forced, not timed; the bounds below only stop a broken server from hanging the suite.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import unittest

from helpers import INIT, REPO, WAIT_S, McpProcess, StubServerCase, docs_qa, http_request, write_files
import parallel

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process

PROMPT_S = 5.0                     # what "at once" may take on a loaded machine (it takes ~0.5 s)
HANG_S = 120.0                     # a hang nobody waits out: the test releases it
FRESH_S = 0.2                      # --fresh-within of a server here (a change this old is in an answer)




class McpConcurrencyTest(StubServerCase):
    def start(self, *extra: str, env: dict[str, str] | None = None) -> McpProcess:
        values = {"EMBED_MOCK": "1", "DOCS_QA_BASE_URL": self.stub.base_url,
                  "DOCS_QA_CHAT_MODEL": "stub-chat-7b", **(env or {})}
        mcp = McpProcess(["--docs", self.docs, "--cache-dir", self.cache, *extra], values)
        self.addCleanup(mcp.kill)
        return mcp

    def wait_for(self, condition) -> None:
        self.assertTrue(self.stub.wait_for(condition, WAIT_S), "the stand-in never saw the request")

    def test_initialize_is_answered_while_a_slow_index_is_still_embedding(self):
        self.stub.embed_fault = "hang"             # every embedding request hangs until released
        self.stub.hang_s = HANG_S
        mcp = self.start("--timeout", "100", env={"EMBED_MOCK": "0", "DOCS_QA_EMBED_MODEL": "stub-embed"})
        self.wait_for(lambda: self.stub.embed_requests >= 1)       # the index is under way, stuck
        init = mcp.recv_reply(mcp.send("initialize", INIT))
        self.assertEqual(init["result"]["serverInfo"]["name"], "docs-qa")
        mcp.send("notifications/initialized", notify=True)
        self.assertEqual(mcp.recv_reply(mcp.send("ping"))["result"], {})

        call = mcp.send("tools/call", {"name": "search_docs", "arguments": {"query": "JPK termin"},
                                       "_meta": {"progressToken": "tok-1"}})
        first = mcp.recv()                          # the call waits for the index, and says so
        self.assertEqual(first["method"], "notifications/progress")
        self.assertEqual(first["params"]["progressToken"], "tok-1")
        self.assertIn("waiting for the index", first["params"]["message"])
        self.assertEqual(self.stub.embed_requests, 1, "the call did not start its own indexing")

        self.stub.embed_fault = None
        self.stub.release.set()                     # the index finishes; the call runs
        notes: list = []
        reply = mcp.recv_reply(call, notes)
        self.assertIs(reply["result"]["isError"], False)
        self.assertEqual(reply["result"]["structuredContent"]["sources"][0]["document_path"], "jpk.md")
        progress = [n["params"]["progress"] for n in [first] + notes if n["method"] == "notifications/progress"]
        self.assertEqual(progress, sorted(set(progress)))          # strictly increasing
        self.assertEqual(mcp.close()[0], 0)

    def test_a_hanging_ask_docs_does_not_block_ping_and_cancel_drops_it(self):
        self.stub.chat_fault = "hang"
        self.stub.hang_s = HANG_S
        mcp = self.start("--timeout", "100")
        mcp.recv_reply(mcp.send("initialize", INIT))
        asked = mcp.send("tools/call", {"name": "ask_docs", "arguments": {"question": "do kiedy składam JPK"}})
        self.wait_for(lambda: self.stub.chat_requests >= 1)        # the call is stuck in the chat
        pinged = mcp.send("ping")
        self.assertEqual(mcp.recv(), {"jsonrpc": "2.0", "id": pinged, "result": {}})
        listed = mcp.send("tools/list")
        self.assertEqual(mcp.recv()["id"], listed)
        searched = mcp.send("tools/call", {"name": "search_docs", "arguments": {"query": "JPK"}})
        self.assertIs(mcp.recv_reply(searched)["result"]["isError"], False)   # another call, meanwhile

        mcp.send("notifications/cancelled", {"requestId": asked, "reason": "user"}, notify=True)
        pinged = mcp.send("ping")                   # read in order: once answered, the cancel was seen
        self.assertEqual(mcp.recv()["id"], pinged)
        self.stub.release.set()                     # the chat answers now; the call must stay silent
        code, rest = mcp.close()
        self.assertEqual(code, 0)
        self.assertEqual([m for m in rest if m.get("id") == asked], [])
        self.assertEqual(self.stub.chat_requests, 1)

    def test_cancel_closes_a_silent_models_connection_and_ping_is_answered_throughout(self):
        self.stub.chat_fault = "silent"             # reads the prompt, never answers a byte
        mcp = self.start("--timeout", "100")        # no timeout ends the call: only the cancel
        mcp.recv_reply(mcp.send("initialize", INIT))
        asked = mcp.send("tools/call", {"name": "ask_docs", "arguments": {"question": "do kiedy składam JPK"}})
        self.wait_for(lambda: self.stub.chat_requests >= 1)
        pinged = mcp.send("ping")
        self.assertEqual(mcp.recv(PROMPT_S), {"jsonrpc": "2.0", "id": pinged, "result": {}})

        mcp.send("notifications/cancelled", {"requestId": asked, "reason": "user"}, notify=True)
        pinged = mcp.send("ping")
        self.assertEqual(mcp.recv(PROMPT_S), {"jsonrpc": "2.0", "id": pinged, "result": {}})
        self.assertTrue(self.stub.wait_for(lambda: self.stub.chat_closed >= 1, PROMPT_S),
                        "the cancelled call kept its model connection open")
        code, rest = mcp.close()
        self.assertEqual(code, 0)
        self.assertEqual([m for m in rest if m.get("id") == asked], [])   # a cancelled call is not answered
        self.assertEqual(self.stub.chat_requests, 1, "the cancelled prompt was sent again")

    def test_the_end_of_stdin_ends_the_process_while_a_call_waits_for_a_silent_model(self):
        self.stub.chat_fault = "silent"
        mcp = self.start("--timeout", "100")
        mcp.recv_reply(mcp.send("initialize", INIT))
        mcp.send("tools/call", {"name": "ask_docs", "arguments": {"question": "do kiedy składam JPK"}})
        self.wait_for(lambda: self.stub.chat_requests >= 1)
        mcp.proc.stdin.close()                      # the client is gone
        try:
            mcp.proc.wait(timeout=PROMPT_S)
        except subprocess.TimeoutExpired:
            self.fail("the process outlived its stdin while a call waited for the model")
        self.assertEqual(mcp.proc.returncode, 0)
        self.assertTrue(self.stub.wait_for(lambda: self.stub.chat_closed >= 1, PROMPT_S))

    def test_the_start_up_index_draws_no_carriage_returns_on_a_stderr_that_is_no_terminal(self):
        write_files(self.docs, {f"extra/{i:02}.md": f"# Note {i}\n\nRejestr numer {i} prowadzi urząd.\n"
                                for i in range(80)})           # three batches of embeddings
        self.stub.embed_delay_s = 0.6               # the index runs past the 1 s progress shows after
        mcp = self.start(env={"EMBED_MOCK": "0", "DOCS_QA_EMBED_MODEL": "stub-embed"})
        mcp.recv_reply(mcp.send("initialize", INIT))
        reply = mcp.recv_reply(mcp.send("tools/call", {"name": "search_docs", "arguments": {"query": "rejestr"}}))
        self.assertIs(reply["result"]["isError"], False)       # answered once the index was built
        self.assertGreaterEqual(self.stub.embed_requests, 3)
        self.assertEqual(mcp.close()[0], 0)
        stderr = mcp.proc.stderr.read().decode()
        self.assertIn("indexed", stderr)
        self.assertNotIn("\r", stderr)

    def test_ask_docs_honours_the_gap_timeout(self):
        self.stub.chat_fault = "hang"
        self.stub.hang_s = HANG_S
        self.stub.chat_reply = "Plik JPK_V7M składa się do 25. dnia miesiąca [jpk.md:5-5]."
        mcp = self.start("--timeout", "0.5")     # the hang never sends a byte
        mcp.recv_reply(mcp.send("initialize", INIT))
        reply = mcp.recv_reply(mcp.send("tools/call", {"name": "ask_docs", "arguments": {
            "question": "do kiedy składam plik JPK"}}))        # recv() allows WAIT_S at most
        envelope = reply["result"]["structuredContent"]
        self.assertEqual(envelope["answer_mode"], "extractive")
        self.assertIn("llm_unavailable", {n["code"] for n in envelope["notes"]})
        self.assertEqual(self.stub.chat_requests, 1)

    def test_query_graph_is_listed_only_with_a_graph_and_described_for_a_model(self):
        graph = os.path.join(self.tmp, "graph.json")
        write_files(self.tmp, {"graph.json": json.dumps({"nodes": [
            {"id": "p1", "type": "person", "name": "Ján Holp"},
            {"id": "t1", "type": "thesis", "title": "Strojový preklad", "year": 2024}],
            "edges": [{"source": "p1", "target": "t1", "type": "authored"}]})})
        for extra, listed in (((), False), (("--graph", graph), True)):
            with self.subTest(graph=listed):
                mcp = self.start(*extra)
                mcp.recv_reply(mcp.send("initialize", INIT))
                tools = {t["name"]: t for t in mcp.recv_reply(mcp.send("tools/list"))["result"]["tools"]}
                self.assertEqual("query_graph" in tools, listed)
                for tool in tools.values():
                    self.assertNotIn("not declared", tool["description"])
                    self.assertIs(tool["annotations"]["readOnlyHint"], True)
                if listed:
                    self.assertIn("thesis", tools["query_graph"]["description"])
                    reply = mcp.recv_reply(mcp.send("tools/call", {"name": "query_graph", "arguments": {
                        "question": "Aký názov práce má Ján Holp?"}}))
                    self.assertEqual(reply["result"]["structuredContent"]["status"], "ok")
                mcp.close()


class NoCacheServerTest(StubServerCase):
    """serve --no-cache: one in-memory index for the server's lifetime, refreshed."""

    def test_serve_without_a_cache_embeds_once_and_refreshes_changed_files(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
        env.update({"EMBED_MOCK": "0", "DOCS_QA_BASE_URL": self.stub.base_url,
                    "DOCS_QA_EMBED_MODEL": "stub-embed", "DOCS_QA_EMBED_LANGUAGES": "all"})   # Polish queries
        proc = subprocess.Popen([sys.executable, os.path.join(REPO, "docs_qa.py"), "serve", "--docs",
                                 self.docs, "--no-cache", "--port", "0", "--fresh-within", str(FRESH_S)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (proc.poll() is None and proc.kill(), proc.wait(), proc.stderr.close()))
        port = None
        while port is None:
            line = proc.stderr.readline()
            self.assertTrue(line, "the server ended before serving")
            match = re.search(r"serving http://[\d.]+:(\d+)", line)
            port = int(match.group(1)) if match else None

        def search(query: str) -> dict:
            return json.loads(http_request(port, "POST", "/search", json.dumps({"query": query}),
                                           {"Content-Type": "application/json"}, WAIT_S)[2])

        after_start = self.stub.embedded_texts
        self.assertGreater(after_start, 3)          # the start-up index embedded every chunk
        self.assertEqual(search("JPK termin")["mode"], "hybrid")
        self.assertEqual(search("faktura korygująca")["mode"], "hybrid")
        self.assertEqual(self.stub.embedded_texts, after_start + 2, "only the two queries were embedded")

        with open(os.path.join(self.docs, "notes.txt"), "a", encoding="utf-8") as fh:
            fh.write("\nRejestr zwolnień z kasy fiskalnej prowadzi urząd skarbowy.\n")
        os.utime(os.path.join(self.docs, "notes.txt"), (time.time() + 5, time.time() + 5))
        time.sleep(FRESH_S)                         # the server's promise: a change this old is seen
        found = search("kasa fiskalna zwolnienie")
        self.assertEqual(found["sources"][0]["document_path"], "notes.txt")
        self.assertLess(self.stub.embedded_texts - after_start - 3, after_start,
                        "only the changed file was embedded again")

        statuses: list = []                         # one index, many threads: none is refused
        threads = [threading.Thread(target=lambda i=i: statuses.extend(
            search(f"VAT termin {i} {j}")["status"] for j in range(4))) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(statuses, ["ok"] * 32)


if __name__ == "__main__":
    unittest.main()
