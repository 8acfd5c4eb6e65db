"""Seeded random fuzz of the chunker and the citation parser, checked by invariants,
and of the two wire parsers: raw bytes to a real `serve` subprocess over sockets, and
arbitrary lines to a real `mcp` subprocess.

Each target runs a fixed number of seeds (CHUNK_CASES, CITE_CASES, and
DOCS_QA_FUZZ_WIRE_CASES = 400 inputs per transport), so every run checks the same inputs;
DOCS_QA_FUZZ_SECONDS (split between the two pure targets) and DOCS_QA_FUZZ_WIRE_SECONDS
(per transport) run for that long instead, for a long run. DOCS_QA_FUZZ_SEED replays one
seed. A failure message names the seed and the input, so any failure can be replayed exactly.

"Chunks tile the file's lines", precisely: the file's lines are its text split on
\\r\\n, \\r or \\n (a final line break does not open an empty line); then
  * chunks come in order and do not overlap (each starts after the previous ends),
  * 1 <= start_line <= end_line <= number of lines,
  * chunk.text == "\\n".join(lines[start_line-1:end_line]) exactly,
  * every non-blank line outside the YAML front matter lies in exactly one chunk.
"""
import json
import os
import random
import re
import shutil
import socket
import tempfile
import time
import unittest

from helpers import TAX_CORPUS, ServeProcess, docs_qa, http_exchange, write_files
from test_mcp import McpSession

import retrieval_contract as rc

FUZZ_SECONDS = float(os.environ.get("DOCS_QA_FUZZ_SECONDS") or 0)    # 0: run the fixed counts
CHUNK_CASES = 2000                 # seeds of the chunker fuzz per run
CITE_CASES = 600                   # seeds of the citation fuzz per run
SEED = int(os.environ.get("DOCS_QA_FUZZ_SEED") or 20261130)
_LINES = re.compile(r"\r\n|\r|\n")

# Building blocks of hostile markdown: headers of every depth, fences that open and
# never close, indented code, front matter markers, very long and empty lines, BOM,
# NUL, Unicode separators that are *not* line breaks here, and mixed scripts.
LINE_ATOMS = [
    "# Title", "## Section", "### Sub", "###### Deep", "####### seven hashes", "#NoSpace", "   # three spaces",
    "    # indented code", "\t# tab", "# closing ##", "#", "##   ", "```", "```python", "~~~", "````", "``` ",
    "---", "...", "title: Zebra", "", " ", "\t", "word", "plain words in a short sentence.",
    "Plik JPK składa się do 25. dnia miesiąca.", "Odpoveď som v dokumentoch nenašiel.", "срок 期限 🎉",
    "- item one", "1. first", "| a | b |", "> quote", "\ufeff# bom header", "\x00", "x" * 700, "y " * 400,
    "a\u2028b", "\x0c", "\x85", "[a.md:1-2]",
]
BREAKS = ["\n", "\r\n", "\r"]

CITE_ATOMS = [
    "[", "]", "(", ")", "a.md", "dir/b.txt", "c.markdown", ":", "-", "\u2013", "L", "1", "3", "9", "0", "12",
    "99999999999", " ", ";", ",", "S1 ", "S2=", "\n", ".", "../a.md", "/a.md", "./a.md", "C:\\a.md", "a.md:4-5",
    "[a.md:3-9]", "(dir/b.txt:2)", "[a.md:1-2](http://x)", "http://x/a.md:3", "word", "\x00", "é", "🎉",
]
CITE_CHUNKS = [docs_qa.Chunk("a.md", 3, 9, ("A",), "\n".join(["x"] * 7)),
               docs_qa.Chunk("dir/b.txt", 1, 2, (), "y\nz"),
               docs_qa.Chunk("a.md", 20, 20, ("B",), "w")]


def file_lines(text: str) -> list[str]:
    lines = _LINES.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def random_document(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(0, 50)):
        line = rng.choice(LINE_ATOMS)
        if rng.random() < 0.2:
            line += " " + rng.choice(LINE_ATOMS)
        parts.append(line + rng.choice(BREAKS))
    text = "".join(parts)
    if rng.random() < 0.3:
        text = text.rstrip("\r\n")
    if rng.random() < 0.2:
        text = "---" + rng.choice(BREAKS) + "title: T" + rng.choice(BREAKS) + "---\n" + text
    return text


def check_tiling(test: unittest.TestCase, text: str, max_chars: int, where: str) -> None:
    lines = file_lines(text)
    chunks = docs_qa.chunk_text("f.md", text, max_chars)
    front = docs_qa._front_matter_end(lines)
    covered: list[int] = []
    previous_end = 0
    for chunk in chunks:
        test.assertGreater(chunk.start_line, previous_end, where)
        test.assertLessEqual(chunk.start_line, chunk.end_line, where)
        test.assertLessEqual(chunk.end_line, len(lines), where)
        test.assertEqual(chunk.text, "\n".join(lines[chunk.start_line - 1:chunk.end_line]), where)
        covered.extend(range(chunk.start_line, chunk.end_line + 1))
        previous_end = chunk.end_line
    test.assertEqual(len(covered), len(set(covered)), where)
    needed = {n for n, line in enumerate(lines, 1) if n > front and line.strip()}
    test.assertEqual(needed - set(covered), set(), where)


def check_citations(test: unittest.TestCase, text: str, where: str) -> None:
    citations = docs_qa.citation_validate(docs_qa.citation_parse(text), list(CITE_CHUNKS))
    for cite in citations:
        test.assertEqual(cite.valid, cite.problem is None, where)
        test.assertTrue(0 <= cite.span[0] < cite.span[1] <= len(text), where)
        if cite.valid:
            test.assertTrue(any(c.path == cite.path and c.start_line <= cite.start_line
                                <= cite.end_line <= c.end_line for c in CITE_CHUNKS), where)
            test.assertFalse(cite.path.startswith("/") or ".." in cite.path.split("/"), where)


class FuzzTest(unittest.TestCase):
    def run_for(self, cases: int, one_case) -> int:
        """Run one_case(rng, where) on seeds SEED .. SEED+cases-1 (with DOCS_QA_FUZZ_SECONDS
        set: on seeds from SEED on until half of it has passed); return the count."""
        deadline = time.monotonic() + FUZZ_SECONDS / 2
        seed = SEED
        while True:
            one_case(random.Random(seed), f"seed={seed}")
            seed += 1
            if (time.monotonic() >= deadline) if FUZZ_SECONDS else seed - SEED >= cases:
                return seed - SEED

    def test_chunks_tile_the_files_lines(self):
        def case(rng, where):
            text = random_document(rng)
            max_chars = rng.choice([30, 200, docs_qa.DEFAULT_CHUNK_CHARS])
            check_tiling(self, text, max_chars, f"{where} max_chars={max_chars} text={text!r}")
        self.assertGreater(self.run_for(CHUNK_CASES, case), 10)

    def test_citation_parser_never_raises_and_valid_means_inside_a_fragment(self):
        def case(rng, where):
            text = "".join(rng.choice(CITE_ATOMS) for _ in range(rng.randint(0, 80)))
            check_citations(self, text, f"{where} text={text!r}")
            answer_text, citations, _, _ = docs_qa.answer_check(text, _result(CITE_CHUNKS), None)
            presented = docs_qa.citation_validate(docs_qa.citation_parse(answer_text), list(CITE_CHUNKS))
            for cite in presented:            # what is presented re-validates as valid
                self.assertTrue(cite.valid, f"{where} presented={answer_text!r}")
        self.assertGreater(self.run_for(CITE_CASES, case), 10)

    def test_known_tricky_documents_tile(self):
        for text in ["", "\n", "\r\n\r\n", "---\n", "---\n---\n", "---\ntitle: x\n---\n", "# a\r# b\r",
                     "```\n# x\n", "    # x\n# y\n", "x" * 5000, "a\rb\nc\r\nd", "\ufeff# t\n"]:
            for max_chars in (10, docs_qa.DEFAULT_CHUNK_CHARS):
                check_tiling(self, text, max_chars, repr(text))


WIRE_SECONDS = float(os.environ.get("DOCS_QA_FUZZ_WIRE_SECONDS") or 0)   # 0: run the count
WIRE_MAX_CASES = int(os.environ.get("DOCS_QA_FUZZ_WIRE_CASES") or 400)


def wire_goes_on(seed: int, deadline: float) -> bool:
    """Return whether a transport fuzz runs seed: WIRE_MAX_CASES seeds in all, or with
    DOCS_QA_FUZZ_WIRE_SECONDS set, seeds until its deadline (at least one)."""
    if WIRE_SECONDS:
        return seed == SEED or time.monotonic() < deadline
    return seed < SEED + WIRE_MAX_CASES

# Pieces of HTTP requests: methods, targets, versions, header lines (framing, auth, odd
# bytes), line ends and bodies (JSON, broken JSON, lone surrogates, deep nesting, binary).
HTTP_METHODS = [b"GET", b"POST", b"HEAD", b"PUT", b"BREW", b"", b"get", b"POST\x00", b"\xff\xfe"]
HTTP_TARGETS = [b"/health", b"/search", b"/graph", b"/rag", b"/openapi.json", b"/nope", b"//[", b"*",
                b"/search?x=1#f", b"http://h/search", b"/%00", b"/" + b"a" * 300, b"", b"/\xc3\x28"]
HTTP_VERSIONS = [b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0", b"HTTP/0.9", b"HTTP/1.1x", b"", b"HTTP/1.10"]
HTTP_HEADERS = [
    b"Host: localhost", b"Host: evil.example", b"Content-Length: 0", b"Content-Length: 16", b"Content-Length: 5", b"Content-Length: \xb2",
    b"Content-Length: -1", b"Content-Length: 99999999999999999999999", b"Content-Length: 5, 6",
    b"Content-Length: 0x10", b"Content-Length: 1048577", b"Transfer-Encoding: chunked",
    b"Transfer-Encoding: gzip", b"Expect: 100-continue", b"Connection: close", b"Connection: keep-alive",
    b"Authorization: Bearer \xff", b"Authorization: Basic", b"X: \x00\x1b[8m", b" folded", b"NoColon",
    b": empty", b"X-Long: " + b"y" * 2000, b"Content-Type: application/json",
]
HTTP_ENDS = [b"\r\n", b"\n", b"\r", b""]
HTTP_BODIES = [
    b'{"query": "JPK"}', b'{"query": "JPK", "limit": 2}', b'{"query":"JPK","\\ud800":1}',
    b'{"query":"\\udfff"}', b'{"query": "\\ud83d\\ude00 JPK"}', b'{"question": "JPK", "extractive": true}',
    b'{"question": "Kto je ved\\u00faci pr\\u00e1ce?"}', b"[" * 5000, b'{"query": ' * 3000, b"{", b"",
    b"null", b"[]", b'{"query": NaN}', b'{"query": 1e999}', b"\xc3\x28", b"\x00" * 20,
    b'{"query": "' + b"x" * 5000 + b'"}', b"5\r\nhello\r\n0\r\n\r\n",
]


def random_http_request(rng: random.Random) -> bytes:
    """Return a request-like byte string: mostly well-formed enough to reach deep code."""
    if rng.random() < 0.15:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))
    end = b"\r\n" if rng.random() < 0.8 else rng.choice(HTTP_ENDS)
    words = [rng.choice(HTTP_METHODS), rng.choice(HTTP_TARGETS), rng.choice(HTTP_VERSIONS)]
    if rng.random() < 0.1:
        words = words[:rng.randint(0, 3)] + [rng.choice(HTTP_TARGETS)]
    head = [b" ".join(words)] + [rng.choice(HTTP_HEADERS) for _ in range(rng.randint(0, 6))]
    body = rng.choice(HTTP_BODIES)
    if rng.random() < 0.5:
        head.append(b"Content-Length: " + str(len(body)).encode())
    data = end.join(head) + end + end + body
    if rng.random() < 0.2:           # a second request on the same connection
        data += b"GET /health HTTP/1.1\r\n\r\n"
    if rng.random() < 0.1:           # cut anywhere
        data = data[:rng.randint(0, len(data))]
    if rng.random() < 0.15 and data:  # a few bytes flipped or inserted anywhere
        buffer = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(buffer))
            if rng.random() < 0.5:
                buffer[at] = rng.randrange(256)
            else:
                buffer.insert(at, rng.choice(b"\r\n :\x00\\\"{["))
        data = bytes(buffer)
    return data


def check_http_reply(test: unittest.TestCase, request: bytes, raw: bytes, where: str) -> None:
    """Assert raw is a clean close (b"") or starts with one reply whose body is JSON
    (an error envelope for every error status)."""
    while raw.startswith(b"HTTP/1.1 100 "):      # "go on" to an Expect: 100-continue
        raw = raw.partition(b"\r\n\r\n")[2]
    if not raw:                      # closed: the request was incomplete or cut by a limit
        return
    test.assertTrue(raw.startswith(b"HTTP/1.1 "), f"{where}: {raw[:300]!r}")   # never HTTP/0.9's bare body
    head, _, rest = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = re.search(rb"\r\nContent-Length: (\d+)", head)
    test.assertIsNotNone(length, where)
    test.assertIn(b"Content-Type: application/json", head, where)
    if request.lstrip().startswith(b"HEAD "):
        return                       # a HEAD reply has no body: what follows is the next reply
    body = rest[:int(length.group(1))]
    try:
        payload = json.loads(body)
    except ValueError:
        test.fail(f"{where}: reply body is not JSON: {raw[:300]!r}")
    test.assertIsInstance(payload, dict, where)
    if status >= 400:
        test.assertEqual(payload.get("status"), "error", where)
        test.assertEqual(rc.schema_errors(payload, rc.error_schema()), [], where)


# Pieces of JSON-RPC lines: ids of every JSON type (and lone surrogates), methods,
# params, arguments; whole lines of broken JSON and raw bytes.
RPC_IDS = [b"1", b'"a"', b"null", b"1.5", b"-7", b"true", b'{"x":1}', b"[1]", b'"\\ud800"', b"1e999",
           b"9" * 400, b"9" * 5000]
RPC_METHODS = [b'"ping"', b'"tools/list"', b'"tools/call"', b'"initialize"', b'"nope"', b"7", b"null",
               b'"notifications/initialized"', b'"\\udc00"']
RPC_PARAMS = [b"{}", b"[]", b'"x"', b"null", b'{"name":"search_docs","arguments":{"query":"JPK"}}',
              b'{"name":"search_docs","arguments":{"query":"JPK","\\ud800":1}}',
              b'{"name":["search_docs"]}', b'{"name":{"a":1}}', b'{"name":"query_graph","arguments":{"question":"x"}}',
              b'{"name":"ask_docs","arguments":{"question":"JPK","extractive":true}}',
              b'{"name":"search_docs","arguments":[]}', b'{"name":"search_docs","arguments":{"limit":"x"}}',
              b'{"protocolVersion":{"a":1}}', b'{"protocolVersion":"2025-06-18"}']
RPC_LINES = [b"", b" ", b"{", b"[]", b"[" * 3000, b"\xff\xfe", b"\x00", b'{"jsonrpc":"2.0"}', b"null",
             b'{"jsonrpc":"2.0","id":3,"result":{}}', b'{"jsonrpc":"2.0","error":{}}', b"\r", b"1"]


def random_rpc_line(rng: random.Random) -> bytes:
    """Return one line for the MCP server: mostly a JSON-RPC message with odd parts."""
    roll = rng.random()
    if roll < 0.1:
        return bytes(rng.choice(range(1, 256)) for _ in range(rng.randint(0, 60))).replace(b"\n", b"")
    if roll < 0.25:
        return rng.choice(RPC_LINES)
    parts = [b'"jsonrpc":' + rng.choice([b'"2.0"', b'"2.0"', b'"2.0"', b'"1.0"', b"2"])]
    for key, pool, chance in ((b"id", RPC_IDS, 0.8), (b"method", RPC_METHODS, 0.9),
                              (b"params", RPC_PARAMS, 0.7), (b"result", [b"{}"], 0.05)):
        if rng.random() < chance:
            parts.append(b'"' + key + b'":' + rng.choice(pool))
    rng.shuffle(parts)
    line = b"{" + b",".join(parts) + b"}"
    if rng.random() < 0.1:
        line = line[:rng.randint(0, len(line))]
    return line


class WireFuzzTest(unittest.TestCase):
    """Seeded bytes against a real `serve` and a real `mcp` subprocess."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.mkdtemp()
        cls.docs = write_files(os.path.join(cls.tmp, "docs"), TAX_CORPUS)
        cls.closed = socket.socket()         # bound, never listening: a model server that refuses
        cls.closed.bind(("127.0.0.1", 0))
        cls.base_url = f"http://127.0.0.1:{cls.closed.getsockname()[1]}/v1"

    @classmethod
    def tearDownClass(cls) -> None:
        cls.closed.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_http_every_input_gets_an_envelope_or_a_clean_close(self):
        server = ServeProcess(self.docs, "--cache-dir", os.path.join(self.tmp, "cache-http"),
                              "--base-url", self.base_url)
        try:
            deadline, seed = time.monotonic() + WIRE_SECONDS, SEED
            while wire_goes_on(seed, deadline):
                rng = random.Random(seed)
                request = random_http_request(rng)
                where = f"seed={seed} request={request[:300]!r}"
                check_http_reply(self, request, http_exchange(server.port, request), where)
                seed += 1
            reply = http_exchange(server.port, b"GET /health HTTP/1.1\r\n\r\n")
            self.assertTrue(reply.startswith(b"HTTP/1.1 200 "), reply[:200])
        finally:
            stderr = server.close()
        self.assertNotIn("Traceback", stderr)
        self.assertGreater(seed - SEED, 10)

    def test_mcp_every_line_gets_a_json_rpc_reply_or_none_and_the_server_lives(self):
        session = McpSession(self.docs, os.path.join(self.tmp, "cache-mcp"), "--base-url", self.base_url)
        try:
            deadline, seed = time.monotonic() + WIRE_SECONDS, SEED
            while wire_goes_on(seed, deadline):
                line = random_rpc_line(random.Random(seed))
                session.send_raw(line)
                session.send_raw(b'{"jsonrpc":"2.0","id":"fz-%d","method":"ping"}' % seed)
                self.read_until_ping(session, f"fz-{seed}", f"seed={seed} line={line[:300]!r}")
                seed += 1
            code, _, stderr = session.close()
        finally:
            session.kill()
        self.assertEqual(code, 0)
        self.assertNotIn(b"Traceback", stderr)
        self.assertGreater(seed - SEED, 10)

    def read_until_ping(self, session: McpSession, ping_id: str, where: str) -> None:
        """Read replies until the ping's: each one a JSON-RPC 2.0 response with a valid id."""
        while True:
            line = session.proc.stdout.readline()
            self.assertTrue(line, f"{where}: the server closed stdout")
            try:                     # strict JSON: NaN or Infinity would break a client
                reply = json.loads(line, parse_constant=lambda name: 1 / 0)
            except (ValueError, ZeroDivisionError):
                self.fail(f"{where}: not a JSON reply: {line[:300]!r}")
            self.assertEqual(reply.get("jsonrpc"), "2.0", where)
            self.assertTrue(("result" in reply) != ("error" in reply), where)
            self.assertTrue(reply["id"] is None or isinstance(reply["id"], (str, int, float))
                            and not isinstance(reply["id"], bool), where)
            if reply["id"] == ping_id:
                self.assertEqual(reply["result"], {}, where)
                return


def _result(chunks):
    hits = [docs_qa.Hit(c, 1.0) for c in chunks]
    return docs_qa.SearchResult("q", hits, "bm25", None, [], {}, [], docs_qa.IndexStats())


if __name__ == "__main__":
    unittest.main()
