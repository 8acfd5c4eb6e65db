"""Hostile JSON-RPC against a real `docs_qa.py mcp` subprocess (section 19): lone
surrogates, ids that are not ids, a client's response objects and params of the wrong
type each get the right JSON-RPC error (or, for a response, nothing), and the server
keeps serving without a traceback (issue 12, defects 5 and 9)."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest

from helpers import TAX_CORPUS, write_files
from test_mcp import McpSession

import docs_qa


class McpHardeningTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.mkdtemp()
        cls.docs = write_files(os.path.join(cls.tmp, "docs"), TAX_CORPUS)
        cls.cache = os.path.join(cls.tmp, "cache")

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self) -> None:
        self.mcp = McpSession(self.docs, self.cache)
        self.addCleanup(self.mcp.kill)
        self.mcp.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "t", "version": "0"}})
        self.mcp.send("notifications/initialized", notify=True)

    def raw_reply(self, line: bytes) -> dict:
        self.mcp.send_raw(line)
        return self.mcp.recv()

    def assert_alive_and_clean(self) -> None:
        self.assertEqual(self.mcp.request("ping")["result"], {})
        code, _, stderr = self.mcp.close()
        self.assertEqual(code, 0)
        self.assertNotIn(b"Traceback", stderr)

    def test_a_lone_surrogate_id_is_a_parse_error_and_the_server_lives(self):
        reply = self.raw_reply(b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}')
        self.assertEqual((reply["id"], reply["error"]["code"]), (None, -32700))
        self.assert_alive_and_clean()

    def test_a_lone_surrogate_argument_key_is_a_parse_error_and_the_server_lives(self):
        reply = self.raw_reply(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":'
                               b'"search_docs","arguments":{"query":"JPK","\\udfff":1}}}')
        self.assertEqual(reply["error"]["code"], -32700)
        self.assert_alive_and_clean()

    def test_an_id_that_is_not_a_string_number_or_null_is_not_echoed(self):
        for bad_id in (b'{"a":1}', b"[1]", b"true", b"NaN", b"1e999"):
            with self.subTest(bad_id=bad_id):
                reply = self.raw_reply(b'{"jsonrpc":"2.0","id":' + bad_id + b',"method":"ping"}')
                self.assertEqual((reply["id"], reply["error"]["code"]), (None, -32600))
        self.assert_alive_and_clean()

    def test_a_clients_response_object_gets_no_reply(self):
        self.mcp.send_raw(b'{"jsonrpc":"2.0","id":99,"result":{}}')
        self.mcp.send_raw(b'{"jsonrpc":"2.0","id":98,"error":{"code":-1,"message":"x"}}')
        reply = self.mcp.request("ping")          # the next line is the ping's own reply
        self.assertEqual(reply["result"], {})
        self.assert_alive_and_clean()

    def test_params_of_the_wrong_type_are_invalid_params_not_internal_error(self):
        for params in (b'{"name":["search_docs"]}', b'{"name":{"a":1}}', b'{"name":7}',
                       b'{"name":"search_docs","arguments":[1]}'):
            with self.subTest(params=params):
                reply = self.raw_reply(b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":'
                                       + params + b"}")
                self.assertEqual((reply["id"], reply["error"]["code"]), (5, -32602))
        self.assert_alive_and_clean()


class McpHandleIdTest(unittest.TestCase):
    """mcp_handle() directly: a valid id is echoed as given, numbers and strings alike."""

    def setUp(self) -> None:
        settings = docs_qa.Settings(docs_dir="/nonexistent-docs-qa", cache_dir=None, embed_mock=True)
        self.ctx = docs_qa.ServerContext(docs_qa.OperationContext(settings))

    def test_string_number_and_null_ids_are_echoed(self):
        for msg_id in ("a", 0, -3, 1.5, None):
            reply = docs_qa.mcp_handle({"jsonrpc": "2.0", "id": msg_id, "method": "ping"}, self.ctx)
            self.assertEqual(reply["id"], msg_id)


if __name__ == "__main__":
    unittest.main()
