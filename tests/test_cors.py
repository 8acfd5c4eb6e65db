"""Tests of what browser-based and OpenAPI tool clients (OpenWebUI) need from the HTTP
server (section 18): CORS preflight and headers for listed origins only, the wildcard
refused beside a token, /health outside the tool list, and integral floats as integers."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import unittest

from helpers import SERVE_POLL_S, TAX_CORPUS, http_request, run_cli, write_files

import docs_qa

OPENWEBUI = "http://localhost:3000"
PREFLIGHT = {"Origin": OPENWEBUI, "Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "authorization, content-type"}


class CorsServerTest(unittest.TestCase):
    """A real server that allows OPENWEBUI and requires a token."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.mkdtemp()
        docs = write_files(os.path.join(cls.tmp, "docs"), TAX_CORPUS)
        settings = docs_qa.Settings(docs_dir=docs, cache_dir=os.path.join(cls.tmp, "cache"), embed_mock=True)
        cls.ctx = docs_qa.ServerContext(docs_qa.OperationContext(settings), token="s3cret",
                                        log=lambda line: None, cors_origins=(OPENWEBUI,))
        cls.server = docs_qa.http_server(cls.ctx, "127.0.0.1", 0)
        threading.Thread(target=cls.server.serve_forever, args=(SERVE_POLL_S,), daemon=True).start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.shutdown()
        cls.server.server_close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def request(self, method: str, path: str, headers: dict, body: bytes | None = None
                ) -> tuple[int, dict[str, str], bytes]:
        return http_request(self.server.server_address[1], method, path, body, headers)

    def test_preflight_from_a_listed_origin_is_204_with_the_allow_headers(self):
        for path, methods in (("/rag", "POST"), ("/search", "POST"), ("/openapi.json", "GET, HEAD")):
            with self.subTest(path=path):
                status, headers, body = self.request("OPTIONS", path, PREFLIGHT)
                self.assertEqual((status, body), (204, b""))        # no token needed for a preflight
                self.assertEqual(headers["access-control-allow-origin"], OPENWEBUI)
                self.assertEqual(headers["access-control-allow-methods"], methods)
                allowed = {h.strip().lower() for h in headers["access-control-allow-headers"].split(",")}
                self.assertLessEqual({"authorization", "content-type"}, allowed)
                self.assertEqual(headers["vary"], "Origin")
                self.assertNotIn("content-length", headers)

    def test_preflight_from_an_unlisted_origin_gets_no_allow_header(self):
        for origin in ("http://evil.example", OPENWEBUI + ".evil.example", "null"):
            with self.subTest(origin=origin):
                status, headers, _ = self.request("OPTIONS", "/rag", {**PREFLIGHT, "Origin": origin})
                self.assertEqual(status, 204)
                self.assertNotIn("access-control-allow-origin", headers)
                self.assertNotIn("access-control-allow-headers", headers)

    def test_the_actual_request_echoes_only_a_listed_origin(self):
        body = json.dumps({"query": "JPK"}).encode()
        auth = {"Authorization": "Bearer s3cret", "Content-Type": "application/json"}
        status, headers, _ = self.request("POST", "/search", {**auth, "Origin": OPENWEBUI}, body)
        self.assertEqual((status, headers["access-control-allow-origin"]), (200, OPENWEBUI))
        status, headers, data = self.request("POST", "/search", {**auth, "Origin": "http://evil.example"}, body)
        self.assertEqual((status, json.loads(data)["reason"]), (403, "forbidden_host"))   # an unlisted page
        self.assertNotIn("access-control-allow-origin", headers)
        status, headers, _ = self.request("POST", "/search", {"Origin": OPENWEBUI}, body)
        self.assertEqual((status, headers["access-control-allow-origin"]), (401, OPENWEBUI))

    def test_options_without_a_preflight_is_still_not_allowed(self):
        status, _, _ = self.request("OPTIONS", "/rag", {"Authorization": "Bearer s3cret"})
        self.assertEqual(status, 405)


class CorsStartupTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        write_files(self.tmp, {"a.md": "# A\n\nalpha beta gamma delta epsilon zeta\n"})

    def test_a_wildcard_origin_is_refused_when_a_token_is_set(self):
        for args, env in ((("--cors-origin", "*"), {}), ((), {"DOCS_QA_CORS_ORIGINS": "http://a.example, *"})):
            with self.subTest(args=args, env=env):
                proc = run_cli("serve", "--docs", self.tmp, "--no-cache", "--port", "0", *args,
                               env={"DOCS_QA_TOKEN": "s3cret", **env}, timeout=30)
                self.assertEqual(proc.returncode, 2)
                self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
                self.assertIn("refusing --cors-origin '*'", proc.stderr)
                self.assertNotIn("s3cret", proc.stderr)

    def test_a_malformed_origin_is_refused(self):
        proc = run_cli("serve", "--docs", self.tmp, "--no-cache", "--port", "0",
                       "--cors-origin", "localhost:3000/path", timeout=30)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("not an origin", proc.stderr)

    def test_origins_come_from_flags_or_the_environment(self):
        environ = {"DOCS_QA_CORS_ORIGINS": "http://a:1/, http://b:2 http://a:1"}
        self.assertEqual(docs_qa.settings_from_env(environ, docs_dir=self.tmp).cors_origins,
                         ("http://a:1", "http://b:2"))
        self.assertEqual(docs_qa.settings_from_env({"DOCS_QA_CORS_ORIGINS": "http://a:1"}, docs_dir=self.tmp,
                                                   cors_origins=["http://c:3"]).cors_origins,
                         ("http://c:3",))

    def test_a_wildcard_without_a_token_allows_any_origin(self):
        settings = docs_qa.Settings(docs_dir=self.tmp, cache_dir=None, embed_mock=True)
        ctx = docs_qa.ServerContext(docs_qa.OperationContext(settings), cors_origins=("*",))
        status, headers, _ = docs_qa.handle_request("OPTIONS", "/search", PREFLIGHT, b"", ctx)
        self.assertEqual((status, headers["Access-Control-Allow-Origin"]), (204, "*"))


class OpenApiClientTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        write_files(self.tmp, TAX_CORPUS)
        settings = docs_qa.Settings(docs_dir=self.tmp, cache_dir=None, embed_mock=True)
        self.ctx = docs_qa.ServerContext(docs_qa.OperationContext(settings))

    def test_health_and_the_page_are_no_tools_and_need_no_token(self):
        spec = docs_qa.http_openapi(with_auth=True)
        health = spec["paths"]["/health"]["get"]
        self.assertNotIn("operationId", health)
        self.assertEqual(health["security"], [])
        self.assertEqual(spec["paths"]["/"]["get"]["security"], [])       # the page needs none either
        self.assertNotIn("security", spec["paths"]["/source"]["get"])     # its data calls do
        tools = [op["operationId"] for path in spec["paths"].values() for op in path.values()
                 if "operationId" in op]
        self.assertEqual(tools, ["search_docs", "ask_docs", "query_graph"])
        for path in spec["paths"].values():
            for op in path.values():
                self.assertNotIn("not declared", op.get("description", "") + op["summary"])

    def test_an_integral_float_limit_is_an_integer(self):
        body = json.dumps({"query": "JPK", "limit": 2.0}).encode()
        status, _, data = docs_qa.handle_request("POST", "/search", {}, body, self.ctx)
        self.assertEqual(status, 200, data)
        self.assertEqual(json.loads(data)["limits"]["result_limit"], 2)
        for bad in (2.5, True, "2"):
            with self.subTest(limit=bad):
                body = json.dumps({"query": "JPK", "limit": bad}).encode()
                status, _, data = docs_qa.handle_request("POST", "/search", {}, body, self.ctx)
                self.assertEqual((status, json.loads(data)["reason"]), (422, "invalid_request"))


if __name__ == "__main__":
    unittest.main()
