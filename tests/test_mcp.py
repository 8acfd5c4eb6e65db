"""Tests of the MCP server (section 19): a real `docs_qa.py mcp` subprocess spoken to
through its pipes, newline-delimited JSON-RPC 2.0 as in the MCP stdio transport."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import unittest

from helpers import REPO, TAX_CORPUS, write_files

import docs_qa
import retrieval_contract as rc


class McpSession:
    """A docs_qa.py mcp subprocess; send() writes one message, recv() reads one line."""

    def __init__(self, docs: str, cache: str, *extra: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
        env["EMBED_MOCK"] = "1"
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(REPO, "docs_qa.py"), "mcp", "--docs", docs,
             "--cache-dir", cache, *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.next_id = 0

    def send_raw(self, line: bytes) -> None:
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def send(self, method: str, params: dict | None = None, notify: bool = False) -> int | None:
        message: dict = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        self.send_raw(json.dumps(message).encode())
        return message.get("id")

    def recv(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError("server closed stdout; stderr: " + self.proc.stderr.read().decode())
        return json.loads(line)

    def request(self, method: str, params: dict | None = None) -> dict:
        msg_id = self.send(method, params)
        reply = self.recv()
        assert reply["id"] == msg_id, reply
        return reply

    def close(self) -> tuple[int, bytes, bytes]:
        """End stdin (the client is done), wait; return exit code, remaining stdout, stderr."""
        out, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, out, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=30)


class McpSessionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls._tmp = tempfile.TemporaryDirectory()
        cls.docs = write_files(os.path.join(cls._tmp.name, "docs"), TAX_CORPUS)
        cls.cache = os.path.join(cls._tmp.name, "cache")

    @classmethod
    def tearDownClass(cls) -> None:
        cls._tmp.cleanup()

    def session(self) -> McpSession:
        session = McpSession(self.docs, self.cache)
        self.addCleanup(session.kill)
        return session

    def initialized(self, version: str = "2025-06-18") -> tuple[McpSession, dict]:
        session = self.session()
        reply = session.request("initialize", {"protocolVersion": version, "capabilities": {},
                                               "clientInfo": {"name": "test", "version": "0"}})
        session.send("notifications/initialized", notify=True)
        return session, reply

    def test_full_session_initialize_list_and_call_every_tool(self):
        session, init = self.initialized()
        result = init["result"]
        self.assertEqual(result["protocolVersion"], "2025-06-18")
        self.assertEqual(result["serverInfo"]["name"], "docs-qa")
        self.assertIn("tools", result["capabilities"])

        tools = {t["name"]: t for t in session.request("tools/list")["result"]["tools"]}
        self.assertEqual(set(tools), {"search_docs", "ask_docs"})   # no --graph: no query_graph
        for tool in tools.values():
            self.assertIs(tool["annotations"]["readOnlyHint"], True)   # a client may call it unasked
            self.assertEqual(tool["inputSchema"]["type"], "object")
            self.assertEqual(tool["outputSchema"]["type"], "object")
        self.assertEqual(tools["search_docs"]["inputSchema"]["required"], ["query"])
        self.assertEqual(tools["ask_docs"]["inputSchema"]["required"], ["question"])

        found = session.request("tools/call", {"name": "search_docs",
                                               "arguments": {"query": "JPK termin", "limit": 2}})["result"]
        self.assertIs(found["isError"], False)
        env = found["structuredContent"]
        self.assertEqual((env["status"], env["sources"][0]["document_path"]), ("ok", "jpk.md"))
        self.assertEqual(self._schema_errors(tools["search_docs"], env, ok=True), [])
        self.assertEqual(found["content"][0]["type"], "text")
        self.assertIn("[S1] jpk.md:", found["content"][0]["text"])

        asked = session.request("tools/call", {"name": "ask_docs", "arguments": {
            "question": "do kiedy składam JPK", "extractive": True}})["result"]
        env = asked["structuredContent"]
        self.assertEqual((asked["isError"], env["status"], env["answer_mode"]), (False, "ok", "extractive"))
        self.assertTrue(env["citations"] and all(c["valid"] for c in env["citations"]))
        self.assertEqual(self._schema_errors(tools["ask_docs"], env, ok=True), [])
        self.assertTrue(asked["content"][0]["text"].startswith(env["answer"]))

        graph = session.request("tools/call", {"name": "query_graph",
                                               "arguments": {"question": "Kto vedie prácu?"}})
        self.assertEqual(graph["error"]["code"], -32602)      # not listed, so an unknown tool

        self.assertEqual(session.request("ping")["result"], {})
        code, rest, err = session.close()
        self.assertEqual((code, rest), (0, b""))
        self.assertIn(b"indexed", err)    # logs go to stderr

    @staticmethod
    def _schema_errors(tool: dict, envelope: dict, ok: bool) -> list[str]:
        """Check envelope against the ok or the error branch of the tool's outputSchema."""
        ok_schema, error_schema = tool["outputSchema"]["anyOf"]
        return rc.schema_errors(envelope, ok_schema if ok else error_schema)

    def test_invalid_tool_arguments_are_an_error_result_without_values(self):
        session, _ = self.initialized()
        result = session.request("tools/call", {"name": "search_docs", "arguments": {
            "query": "JPK", "limit": 0, "zz_extra": "SECRET-913"}})["result"]
        env = result["structuredContent"]
        self.assertIs(result["isError"], True)
        self.assertEqual((env["reason"], env["fields"]), ("invalid_request", ["limit", "zz_extra"]))
        self.assertNotIn("SECRET-913", json.dumps(result))
        self.assertEqual(rc.schema_errors(env, rc.error_schema()), [])
        empty = session.request("tools/call", {"name": "ask_docs", "arguments": {"question": " "}})
        self.assertEqual(empty["result"]["structuredContent"]["reason"], "invalid_query")

    def test_protocol_faults_are_json_rpc_errors(self):
        session, _ = self.initialized()
        self.assertEqual(session.request("tools/call", {"name": "rm_rf", "arguments": {}})["error"]["code"],
                         -32602)
        self.assertEqual(session.request("tools/call", {"name": "search_docs",
                                                        "arguments": "JPK"})["error"]["code"], -32602)
        self.assertEqual(session.request("resources/list")["error"]["code"], -32601)
        session.send_raw(b'{"jsonrpc": "2.0", "id": 99, "method": ')
        self.assertEqual(session.recv(), {"jsonrpc": "2.0", "id": None,
                                          "error": {"code": -32700, "message": "Parse error"}})
        session.send_raw(b'{"jsonrpc": "1.0", "id": 7, "method": "ping"}')
        self.assertEqual(session.recv()["error"]["code"], -32600)
        session.send_raw(b'[{"jsonrpc": "2.0", "id": 8, "method": "ping"}]')
        self.assertEqual(session.recv()["error"]["code"], -32600)
        self.assertEqual(session.request("ping")["result"], {})   # still alive

    def test_protocol_version_negotiation(self):
        _, older = self.initialized("2025-03-26")
        self.assertEqual(older["result"]["protocolVersion"], "2025-03-26")
        _, unknown = self.initialized("1999-01-01")
        self.assertEqual(unknown["result"]["protocolVersion"], "2025-06-18")

    def test_stdout_carries_only_protocol_messages(self):
        session, _ = self.initialized()
        session.request("tools/call", {"name": "search_docs", "arguments": {"query": "faktura"}})
        session.send("notifications/cancelled", {"requestId": 1}, notify=True)
        code, rest, _ = session.close()
        self.assertEqual((code, rest), (0, b""))   # a notification gets no reply


class McpHandleTest(unittest.TestCase):
    """mcp_handle() is pure: messages in, replies out."""

    def setUp(self) -> None:
        settings = docs_qa.Settings(docs_dir="/nonexistent-docs-qa", cache_dir=None, embed_mock=True)
        self.ctx = docs_qa.ServerContext(docs_qa.OperationContext(settings))

    def test_tools_come_from_operations(self):
        names = [t["name"] for t in docs_qa.mcp_tools()]
        self.assertEqual(names, [op.tool for op in docs_qa.OPERATIONS.values()])

    def test_notification_gets_no_reply(self):
        self.assertIsNone(docs_qa.mcp_handle({"jsonrpc": "2.0", "method": "notifications/initialized"},
                                             self.ctx))

    def test_unexpected_tool_failure_is_internal_error_result(self):
        from unittest import mock
        with mock.patch.object(docs_qa, "search", side_effect=RuntimeError("hunter2")):
            reply = docs_qa.mcp_handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "search_docs", "arguments": {"query": "JPK"}}}, self.ctx)
        self.assertIs(reply["result"]["isError"], True)
        self.assertEqual(reply["result"]["structuredContent"]["reason"], "internal_error")
        self.assertNotIn("hunter2", json.dumps(reply))


if __name__ == "__main__":
    unittest.main()
