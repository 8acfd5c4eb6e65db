"""Tests of the HTTP tool server (section 18): a real ThreadingHTTPServer on 127.0.0.1:0,
plus handle_request() called directly. Every response received is checked against the
server's own /openapi.json: exactly the properties its schema declares."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import tempfile
import threading
import time
import unittest
from unittest import mock

from helpers import SERVE_POLL_S, TAX_CORPUS, REPO, http_request, run_cli, write_files
import parallel

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process

import docs_qa
import retrieval_contract as rc

TOKEN = "t0ken-for-tests-42"


class _LiveServer:
    """A docs-qa HTTP server over its own copy of TAX_CORPUS, serving in a thread."""

    def __init__(self, token: str | None = None) -> None:
        self.tmp = tempfile.mkdtemp()
        self.docs = write_files(os.path.join(self.tmp, "docs"), TAX_CORPUS)
        settings = docs_qa.Settings(docs_dir=self.docs, cache_dir=os.path.join(self.tmp, "cache"),
                                    embed_mock=True)
        docs_qa.index_folder(settings)
        self.log: list[str] = []
        self.ctx = docs_qa.ServerContext(docs_qa.OperationContext(settings), token=token,
                                         log=self.log.append)
        self.server = docs_qa.http_server(self.ctx, "127.0.0.1", 0)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(SERVE_POLL_S,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _resolve(spec: dict, schema: dict) -> dict:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    node: dict = spec
    for part in ref.lstrip("#/").split("/"):
        node = node[part]
    return node


class HttpServerTest(unittest.TestCase):
    """One server without a token and one with; OpenAPI fetched once and used to check all."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.open = _LiveServer()
        cls.locked = _LiveServer(token=TOKEN)
        cls.open.ctx.ops.graph = object()    # the spec lists /graph only with a graph loaded
        try:
            status, _, body = cls._raw(cls.open.port, "GET", "/openapi.json")
        finally:
            cls.open.ctx.ops.graph = None
        assert status == 200, status
        cls.spec = json.loads(body)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.open.close()
        cls.locked.close()

    @staticmethod
    def _raw(port: int, method: str, path: str, body: bytes | None = None,
             headers: dict | None = None) -> tuple[int, dict, bytes]:
        return http_request(port, method, path, body, headers)

    def call(self, method: str, path: str, payload=None, raw: bytes | None = None,
             server: _LiveServer | None = None, headers: dict | None = None) -> tuple[int, dict, dict]:
        """Send a request; assert the reply is JSON fitting the spec's schema for it."""
        body = raw if raw is not None else (None if payload is None else json.dumps(payload).encode())
        status, reply_headers, data = self._raw((server or self.open).port, method, path, body,
                                                {"Content-Type": "application/json", **(headers or {})})
        self.assertTrue(reply_headers["content-type"].startswith("application/json"))
        envelope = json.loads(data)
        self.assertEqual(rc.schema_errors(envelope, self._schema_for(method, path, status)), [],
                         f"{method} {path} -> {status}: {envelope}")
        if status >= 400:
            self.assertEqual(envelope["status"], "error")
            self.assertIsNone(envelope["index_version"])
            self.assertNotIn("Traceback", data.decode())
        return status, reply_headers, envelope

    def _schema_for(self, method: str, path: str, status: int) -> dict:
        operation = self.spec["paths"].get(path.split("?")[0], {}).get(method.lower())
        if operation is None:   # unknown path or method: the error envelope
            return _resolve(self.spec, {"$ref": "#/components/schemas/Error"})
        responses = operation["responses"]
        reply = responses.get(str(status), responses.get("default"))
        self.assertIsNotNone(reply, f"{method} {path}: status {status} is not documented")
        return _resolve(self.spec, reply["content"]["application/json"]["schema"])

    # -- success -------------------------------------------------------------------
    def test_health_needs_no_token_and_reports_the_operations(self):
        for server in (self.open, self.locked):
            status, _, body = self.call("GET", "/health", server=server)
            self.assertEqual(status, 200)
            self.assertEqual(body["operations"], ["search", "rag", "graph"])
            self.assertIs(body["graph_loaded"], False)

    def test_search_finds_the_jpk_deadline_fragment(self):
        # "termin" is a heading and "JPK" occurs only in jpk.md: that file must rank first,
        # and its fragment must hold line 5, the deadline sentence.
        status, _, env = self.call("POST", "/search", {"query": "JPK termin", "limit": 1})
        self.assertEqual((status, env["status"], env["tool"]), (200, "ok", "search"))
        self.assertEqual(len(env["sources"]), 1)
        top = env["sources"][0]
        self.assertEqual((top["source_id"], top["document_path"]), ("S1", "jpk.md"))
        self.assertLessEqual(top["start_line"], 5)
        self.assertGreaterEqual(top["end_line"], 5)
        self.assertEqual(env["limits"]["result_limit"], 1)

    def test_search_without_a_match_is_no_answer_not_an_error(self):
        status, _, env = self.call("POST", "/search", {"query": "kwazarowy zzyzx"})
        self.assertEqual((status, env["status"], env["reason"]), (200, "no_answer", "no_matching_sources"))
        self.assertEqual(env["sources"], [])

    def test_rag_extractive_cites_valid_lines_of_jpk(self):
        status, _, env = self.call("POST", "/rag", {"question": "do kiedy składam JPK",
                                                    "extractive": True, "limit": 3})
        self.assertEqual((status, env["status"], env["tool"], env["answer_mode"]),
                         (200, "ok", "rag", "extractive"))
        self.assertTrue(env["citations"])
        self.assertTrue(all(c["valid"] for c in env["citations"]))
        self.assertIn("jpk.md", {c["path"] for c in env["citations"]})
        self.assertIn("25", env["answer"])

    def test_query_string_is_ignored_when_routing(self):
        status, _, _ = self.call("GET", "/health?verbose=1")
        self.assertEqual(status, 200)

    def test_concurrent_requests_share_the_index_and_agree(self):
        results: list = []

        def worker() -> None:
            results.append(self._raw(self.open.port, "POST", "/search",
                                     json.dumps({"query": "faktura korygująca rabat"}).encode()))

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(len(results), 8)
        envs = [json.loads(body) for _, _, body in results]
        self.assertEqual({status for status, _, _ in results}, {200})
        self.assertEqual({e["sources"][0]["document_path"] for e in envs}, {"faktury/korekta.md"})
        self.assertEqual(len({e["index_version"] for e in envs}), 1)

    def test_index_is_not_rebuilt_until_the_folder_changes(self):
        server = _LiveServer()
        self.addCleanup(server.close)
        _, _, first = self.call("POST", "/search", {"query": "kontrahenta"}, server=server)
        _, _, again = self.call("POST", "/search", {"query": "kontrahenta"}, server=server)
        self.assertEqual(first["index_version"], again["index_version"])
        write_files(server.docs, {"nowy.md": "# Kwazar\n\nKwazary świecą jaśniej niż galaktyki całe.\n"})
        _, _, changed = self.call("POST", "/search", {"query": "kwazary"}, server=server)
        self.assertNotEqual(changed["index_version"], first["index_version"])
        self.assertEqual(changed["sources"][0]["document_path"], "nowy.md")

    # -- 400 invalid_query -----------------------------------------------------------
    def test_malformed_json_empty_oversized_or_missing_question_is_400(self):
        cases = {
            "malformed": b'{"query": "JPK',
            "not utf-8": b'{"query": "\xff\xfe"}',
            "not an object": b'["JPK"]',
            "empty": json.dumps({"query": "   "}).encode(),
            "oversized": json.dumps({"query": "a" * (docs_qa.MAX_QUESTION_CHARS + 1)}).encode(),
            "missing": json.dumps({"limit": 2}).encode(),   # contract: a missing question is invalid_query
            "no body": b"",
        }
        for name, raw in cases.items():
            with self.subTest(name):
                status, _, env = self.call("POST", "/search", raw=raw)
                self.assertEqual((status, env["reason"]), (400, "invalid_query"))
                self.assertEqual(env["detail"], rc.ERROR_DETAILS["invalid_query"])

    def test_a_question_of_format_characters_only_is_400_naming_its_own_field(self):
        # zero-width space, word joiner, soft hyphen: invisible, so no question at all
        for path, field in (("/search", "query"), ("/rag", "question")):
            with self.subTest(path=path):
                status, _, env = self.call("POST", path, {field: "\u200b\u2060\u00ad"})
                self.assertEqual((status, env["reason"], env["fields"]), (400, "invalid_query", [field]))

    def test_body_over_one_mib_is_refused_with_413_before_it_is_read(self):
        # Only the headers are sent: a server that tried to read the body would hang here.
        with socket.create_connection(("127.0.0.1", self.open.port), timeout=10) as sock:
            sock.sendall(b"POST /rag HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % (docs_qa.HTTP_MAX_BODY_BYTES + 1))
            data = _read_until_closed(sock)
        head, _, body = data.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 413"), head)
        self.assertIn(b"connection: close", head.lower())
        env = json.loads(body)
        self.assertEqual((env["status"], env["reason"]), ("error", "invalid_query"))
        self.assertEqual(rc.schema_errors(env, rc.error_schema()), [])

    def test_body_of_exactly_one_mib_is_read(self):
        raw = json.dumps({"query": "JPK"}).encode()
        raw += b" " * (docs_qa.HTTP_MAX_BODY_BYTES - len(raw))
        status, _, env = self.call("POST", "/search", raw=raw)
        self.assertEqual((status, env["status"]), (200, "ok"))

    # -- 422 invalid_request ---------------------------------------------------------
    def test_bad_fields_are_422_naming_fields_but_never_their_values(self):
        cases = [
            ({"query": "JPK", "limit": 0}, ["limit"]),
            ({"query": "JPK", "limit": docs_qa.MAX_LIMIT + 1}, ["limit"]),
            ({"query": "JPK", "limit": "SECRET-LIMIT-913"}, ["limit"]),
            ({"query": "JPK", "limit": True}, ["limit"]),
            ({"query": "JPK", "zz_unknown": "SECRET-VALUE-771"}, ["zz_unknown"]),
            ({"query": ["SECRET-LIST-552"]}, ["query"]),
            ({"query": "JPK", "x.y[0]": 1}, ["x.y[0]"]),      # a key is named whole, dots and all
            ({"query": "JPK", "x": {"y": [1]}, "limit[0]": 1}, ["limit[0]", "x"]),
        ]
        for payload, fields in cases:
            with self.subTest(payload=payload):
                status, _, env = self.call("POST", "/search", payload)
                self.assertEqual((status, env["reason"], env["fields"]), (422, "invalid_request", fields))
                text = json.dumps(env)
                self.assertNotRegex(text, r"SECRET-|913|771|552")
        status, _, env = self.call("POST", "/rag", {"question": "JPK", "extractive": "SECRET-yes"})
        self.assertEqual((status, env["fields"]), (422, ["extractive"]))
        self.assertNotIn("SECRET-yes", json.dumps(env))

    # -- 404 / 405 -------------------------------------------------------------------
    def test_unknown_path_is_404_envelope(self):
        for method in ("GET", "POST"):
            status, _, env = self.call(method, "/nope", {"query": "x"} if method == "POST" else None)
            self.assertEqual((status, env["reason"]), (404, "not_found"))

    def test_wrong_method_is_405_envelope_with_allow(self):
        status, headers, env = self.call("GET", "/search")
        self.assertEqual((status, env["reason"], headers["allow"]), (405, "method_not_allowed", "POST"))
        status, headers, env = self.call("POST", "/health", {})
        self.assertEqual((status, headers["allow"]), (405, "GET"))
        status, _, env = self.call("DELETE", "/rag")
        self.assertEqual(status, 405)

    # -- 503 / 500 -------------------------------------------------------------------
    def test_graph_without_a_loaded_graph_is_503(self):
        status, _, env = self.call("POST", "/graph", {"question": "Aký názov práce má Ján Holp?"})
        self.assertEqual((status, env["reason"]), (503, "retrieval_unavailable"))
        self.assertEqual(env["detail"], rc.ERROR_DETAILS["retrieval_unavailable"])

    def test_graph_with_a_loaded_graph_answers_its_envelope(self):
        # graph_store is another module's job: a stand-in with its API checks the route, that
        # the request's limit travels in the Question (graph_store.ask applies it) and that the
        # open graph schema admits the graph's own fields.
        import sys
        import types

        asked = []
        fake = types.ModuleType("graph_store")
        fake.ask = lambda question, graph, limits=None: asked.append((question, limits)) or "result"
        fake.to_envelope = lambda result: rc.Envelope(
            status="ok", sources=[rc.Source("S1", "wiki/osoby/jan-holp.md", extra={"node_id": "p-holp"})],
            index_version="graph-1", complete=True,
            extra={"tool": "graph", "facts": [{"title": "Strojový preklad"}], "aggregation": None})
        self.open.ctx.ops.graph = object()
        self.addCleanup(setattr, self.open.ctx.ops, "graph", None)
        with mock.patch.dict(sys.modules, {"graph_store": fake}):
            status, _, env = self.call("POST", "/graph", {"question": "Aký názov práce má Ján Holp?",
                                                          "limit": 2})
        self.assertEqual((status, env["status"], env["facts"]), (200, "ok", [{"title": "Strojový preklad"}]))
        self.assertEqual(asked, [(rc.question_make("Aký názov práce má Ján Holp?", limit=2), None)])
        self.assertEqual((asked[0][0].language, asked[0][0].limit), ("sk", 2))

    def test_head_gets_headers_only(self):
        status, headers, data = self._raw(self.open.port, "HEAD", "/health")
        self.assertEqual((status, data), (200, b""))
        self.assertGreater(int(headers["content-length"]), 0)
        status, _, data = self._raw(self.open.port, "HEAD", "/search")
        self.assertEqual((status, data), (405, b""))

    def test_unreadable_index_is_503(self):
        with mock.patch.object(docs_qa, "search",
                               side_effect=rc.RetrievalUnavailableError("/secret/cache.sqlite gone")):
            status, _, env = self.call("POST", "/search", {"query": "JPK"})
        self.assertEqual((status, env["reason"]), (503, "retrieval_unavailable"))
        self.assertNotIn("secret", json.dumps(env))

    def test_unexpected_exception_is_500_without_its_text_and_is_logged(self):
        boom = RuntimeError("password=hunter2 in /home/alice/.ssh")
        with mock.patch.object(docs_qa, "search", side_effect=boom):
            status, _, env = self.call("POST", "/search", {"query": "JPK"})
        self.assertEqual((status, env["reason"]), (500, "internal_error"))
        self.assertNotRegex(json.dumps(env), "hunter2|alice|RuntimeError")
        self.assertTrue(any("RuntimeError" in line for line in self.open.log))

    # -- 401 -------------------------------------------------------------------------
    def test_token_is_required_everywhere_but_health(self):
        wrong = {"no header": {}, "wrong token": {"Authorization": "Bearer nope"},
                 "token prefix": {"Authorization": f"Bearer {TOKEN[:-1]}"},
                 "basic scheme": {"Authorization": f"Basic {TOKEN}"}}
        for name, headers in wrong.items():
            for method, path in (("POST", "/search"), ("GET", "/openapi.json"), ("POST", "/nope")):
                with self.subTest(name, path=path):
                    status, reply_headers, env = self.call(method, path, {"query": "JPK"},
                                                           server=self.locked, headers=headers)
                    self.assertEqual((status, env["reason"]), (401, "unauthorized"))
                    self.assertTrue(reply_headers["www-authenticate"].startswith("Bearer"))
                    self.assertNotIn(TOKEN, json.dumps(env))

    def test_right_token_is_accepted(self):
        status, _, env = self.call("POST", "/search", {"query": "JPK"}, server=self.locked,
                                   headers={"Authorization": f"Bearer {TOKEN}"})
        self.assertEqual((status, env["status"]), (200, "ok"))
        status, _, data = self._raw(self.locked.port, "GET", "/openapi.json",
                                    headers={"Authorization": f"bearer {TOKEN}"})
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(data)["security"], [{"bearer": []}])

    # -- OpenAPI ---------------------------------------------------------------------
    def test_openapi_is_built_from_the_operations(self):
        self.assertEqual(self.spec["openapi"], "3.1.0")
        for name, op in docs_qa.OPERATIONS.items():
            post = self.spec["paths"][f"/{name}"]["post"]
            self.assertEqual(post["operationId"], op.tool)
            self.assertEqual(post["requestBody"]["content"]["application/json"]["schema"],
                             op.request_schema)
            for code in ("400", "401", "403", "413", "422", "500", "503", "default"):
                schema = _resolve(self.spec, post["responses"][code]["content"]["application/json"]["schema"])
                self.assertEqual(schema, rc.error_schema())
        self.assertNotIn("security", self.spec)   # no token: nothing to declare

    def test_openapi_lists_the_graph_tool_only_with_a_graph(self):
        # as MCP's tools/list: without a graph every /graph call is 503, so it is no tool
        status, _, body = self._raw(self.open.port, "GET", "/openapi.json")
        spec = json.loads(body)
        self.assertEqual(status, 200)
        self.assertNotIn("/graph", spec["paths"])
        self.assertNotIn("GraphEnvelope", spec["components"]["schemas"])
        self.assertEqual({p["post"]["operationId"] for p in spec["paths"].values() if "post" in p},
                         {"search_docs", "ask_docs"})
        self.assertIn("/graph", self.spec["paths"])       # fetched with a graph loaded
        self.assertEqual(self.spec["paths"]["/graph"]["post"]["operationId"], "query_graph")

    # -- slow clients ----------------------------------------------------------------
    def test_a_client_dripping_its_body_is_disconnected_by_the_body_deadline(self):
        # each byte comes well within the socket timeout, but the body would take ~8 s in all;
        # the socket timeout (20 s) cuts only after 20 s of silence, so a cut sooner than
        # that can only be the 1 s body deadline's, however late a loaded machine sends a byte
        socket_timeout_s, started = 20.0, time.monotonic()
        with mock.patch.object(self.open.ctx, "socket_timeout_s", socket_timeout_s), \
                mock.patch.object(docs_qa, "HTTP_BODY_DEADLINE_S", 1.0):
            with socket.create_connection(("127.0.0.1", self.open.port), timeout=60) as sock:
                sock.sendall(b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 40\r\n\r\n")
                closed = False
                for _ in range(40):
                    try:
                        sock.sendall(b"x")
                    except OSError:
                        closed = True
                        break
                    time.sleep(0.2)
                data = b"" if closed else _read_until_closed(sock)
                cut_after_s = time.monotonic() - started
        self.assertTrue(closed, "the server waited for the whole body")   # cut near 1 s of ~8 s
        self.assertEqual(data, b"")
        self.assertGreaterEqual(cut_after_s, 1.0)                 # not before the deadline
        self.assertLess(cut_after_s, socket_timeout_s)            # so not by the socket timeout

    def test_a_stuck_client_is_disconnected_by_the_socket_timeout(self):
        with mock.patch.object(self.open.ctx, "socket_timeout_s", 0.5):
            # the client's own 10 s timeout would raise if the server kept the connection
            with socket.create_connection(("127.0.0.1", self.open.port), timeout=10) as sock:
                sock.sendall(b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 40\r\n\r\n{\"qu")
                data = _read_until_closed(sock)
        self.assertEqual(data, b"")   # closed without a reply, the thread freed


def _read_until_closed(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        part = sock.recv(65536)
        if not part:
            return b"".join(chunks)
        chunks.append(part)


class HandleRequestTest(unittest.TestCase):
    """handle_request() is pure: no socket needed."""

    def setUp(self) -> None:
        settings = docs_qa.Settings(docs_dir="/nonexistent-docs-qa", cache_dir=None, embed_mock=True)
        self.ctx = docs_qa.ServerContext(docs_qa.OperationContext(settings))

    def test_reply_is_json_with_length_free_headers(self):
        status, headers, body = docs_qa.handle_request("GET", "/health", {}, b"", self.ctx)
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"], "application/json; charset=utf-8")
        self.assertEqual(json.loads(body)["status"], "ok")

    def test_declared_oversize_length_is_413_even_with_an_empty_body(self):
        headers = {"content-length": str(docs_qa.HTTP_MAX_BODY_BYTES + 1)}
        status, _, body = docs_qa.handle_request("POST", "/rag", headers, b"", self.ctx)
        self.assertEqual((status, json.loads(body)["reason"]), (413, "invalid_query"))

    def test_a_missing_docs_folder_is_an_envelope_not_the_path(self):
        status, _, body = docs_qa.handle_request("POST", "/search", {}, b'{"query": "JPK"}', self.ctx)
        self.assertEqual(status, 422)
        self.assertNotIn("nonexistent", body.decode())

    def test_debug_re_raises_unexpected_errors(self):
        self.ctx.debug = True
        with mock.patch.object(docs_qa, "search", side_effect=RuntimeError("boom")):
            with self.assertRaises(RuntimeError):
                docs_qa.handle_request("POST", "/search", {}, b'{"query": "JPK"}', self.ctx)

    def test_loopback_detection(self):
        for host in ("127.0.0.1", "127.5.0.1", "::1", "localhost"):
            self.assertTrue(docs_qa.http_is_loopback(host), host)
        for host in ("0.0.0.0", "", "::", "192.168.1.4", "example.com"):
            self.assertFalse(docs_qa.http_is_loopback(host), host)


class ServeCommandTest(unittest.TestCase):
    def test_non_loopback_bind_without_token_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc = run_cli("serve", "--docs", tmp, "--host", "0.0.0.0", "--port", "0")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("DOCS_QA_TOKEN", proc.stderr)
        self.assertEqual(proc.stdout, "")

    def test_serve_subprocess_answers_and_logs_to_stderr_only(self):
        import subprocess
        import sys
        with tempfile.TemporaryDirectory() as tmp:
            docs = write_files(os.path.join(tmp, "docs"), TAX_CORPUS)
            env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
            env.update({"EMBED_MOCK": "1", "XDG_CACHE_HOME": os.path.join(tmp, "cache")})
            proc = subprocess.Popen([sys.executable, os.path.join(REPO, "docs_qa.py"), "serve",
                                     "--docs", docs, "--port", "0"], env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            try:
                port = None
                for line in proc.stderr:
                    found = re.search(r"serving http://127\.0\.0\.1:(\d+)", line)
                    if found:
                        port = int(found.group(1))
                        break
                self.assertIsNotNone(port)
                status, _, body = HttpServerTest._raw(port, "POST", "/search",
                                                      json.dumps({"query": "biała lista"}).encode())
                self.assertEqual(status, 200)
                self.assertEqual(json.loads(body)["sources"][0]["document_path"], "notes.txt")
            finally:
                proc.terminate()
                out, _ = proc.communicate(timeout=10)
            self.assertEqual(out, "")


if __name__ == "__main__":
    unittest.main()
