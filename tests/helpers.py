"""Shared test helpers: corpus builders, a CLI runner, and a real OpenAI-compatible
stand-in server on 127.0.0.1 that can also misbehave on purpose."""

from __future__ import annotations

import json
import math
import os
import queue
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import docs_qa  # noqa: E402

SERVE_POLL_S = 0.05    # how often a test server's serve_forever looks for shutdown() (default 0.5 s)


def write_files(root: str, files: dict[str, str | bytes]) -> str:
    """Write {relative path: text or bytes} under root; return root."""
    for rel, content in files.items():
        path = os.path.join(root, *rel.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(path, mode, **({} if mode == "wb" else {"encoding": "utf-8", "newline": ""})) as fh:
            fh.write(content)
    return root


def marking_modules(marks: str, names: tuple[str, ...]) -> dict[str, str]:
    """Return write_files' files for modules named like names (argparse.py, ...) that, when
    imported, leave an empty file of their name in the folder marks."""
    return {f"{name}.py": f"open({os.path.join(marks, name)!r}, 'w').close()\n" for name in names}


TAX_CORPUS = {
    "jpk.md": "# JPK\n\n## Termin\n\nPlik JPK_V7M składa się do 25. dnia miesiąca następującego "
              "po okresie rozliczeniowym.\n\n## Kara\n\nZa spóźnienie grozi kara z kodeksu karnego "
              "skarbowego dla podatnika.\n",
    "faktury/korekta.md": "# Faktura korygująca\n\nFakturę korygującą wystawia się, gdy po "
                          "wystawieniu faktury udzielono rabatu lub zwrócono towar.\n",
    "notes.txt": "Biała lista podatników VAT pozwala sprawdzić rachunek kontrahenta.\n\n"
                 "Mechanizm podzielonej płatności dotyczy faktur powyżej 15 000 zł.\n",
}


class TempDirTest(unittest.TestCase):
    """A test with its own docs folder and cache folder, removed afterwards."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name
        self.docs = os.path.join(self.tmp, "docs")
        self.cache = os.path.join(self.tmp, "cache")
        os.makedirs(self.docs)
        self.addCleanup(self._tmp.cleanup)

    def settings(self, **overrides) -> "docs_qa.Settings":
        # the stand-in embedding servers read every language: the corpora here are Polish
        values = {"docs_dir": self.docs, "cache_dir": self.cache, "embed_mock": True, "embed_languages": "all"}
        values.update(overrides)
        return docs_qa.Settings(**values)


# Variables main() reads through its `environ` argument; a run whose environment differs
# from this process's in any other variable (PATH, HOME, GIT_*, ...) needs a real process.
IN_PROCESS_ENV = ("DOCS_QA_", "EMBED_MOCK", "XDG_CACHE_HOME")


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60,
            stdin: str | None = None, in_process: bool | None = None) -> subprocess.CompletedProcess:
    """Run `docs_qa.py ARGS` (or another script given as args[0] ending in .py); return its
    exit code, stdout and stderr. A docs_qa question or `index` run, or a graph_store.py
    run, whose environment only sets IN_PROCESS_ENV variables runs in this process through
    the module's main() (see run_main) unless in_process is False; everything else is a
    real subprocess."""
    script = args[0] if args and args[0].endswith(".py") else "docs_qa.py"
    rest = list(args[1:] if script == args[0] else args)
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
    full_env.setdefault("EMBED_MOCK", "1")
    full_env.update(env or {})
    if in_process is None:
        in_process = (script in ("docs_qa.py", "graph_store.py") and stdin is None
                      and not (script == "docs_qa.py" and rest and rest[0] in docs_qa.SUBCOMMANDS
                               and rest[0] != "index")
                      and all(v == os.environ.get(k) or k.startswith(IN_PROCESS_ENV)
                              for k, v in full_env.items())
                      and all(k in full_env or k.startswith(IN_PROCESS_ENV) for k in os.environ))
    if in_process:
        return run_main(rest, full_env, timeout, script)
    return subprocess.run([sys.executable, os.path.join(REPO, script), *rest], cwd=REPO,
                          env=full_env, capture_output=True, text=True, timeout=timeout,
                          input=stdin)


def run_main(argv: list[str], environ: dict[str, str], timeout: float = 60,
             script: str = "docs_qa.py") -> subprocess.CompletedProcess:
    """Run docs_qa.main(argv, environ) (with script graph_store.py: graph_store.main(argv) with
    the script's Git probe; it reads no environment) in this process, from the repository folder, with
    stdout and stderr captured as bytes and decoded as `text=True` decodes a subprocess's;
    an escaping exception is a traceback on stderr and exit code 1, as in a process, and a
    run still going after `timeout` seconds ends the whole test run with every stack dumped."""
    import contextlib
    import faulthandler
    import io
    import traceback
    out, err = io.BytesIO(), io.BytesIO()
    streams = [io.TextIOWrapper(buf, encoding="utf-8", errors="backslashreplace"
                                if buf is err else "strict", write_through=True) for buf in (out, err)]
    cwd = os.getcwd()
    os.chdir(REPO)
    faulthandler.dump_traceback_later(timeout, exit=True)
    try:
        with contextlib.redirect_stdout(streams[0]), contextlib.redirect_stderr(streams[1]):
            try:
                if script == "graph_store.py":
                    import graph_store
                    code = graph_store.main(list(argv), git_probe=docs_qa.git_probe_file)   # as the script
                else:
                    code = docs_qa.main(list(argv), dict(environ))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except Exception:
                traceback.print_exc()
                code = 1
    finally:
        faulthandler.cancel_dump_traceback_later()
        os.chdir(cwd)
    text = [io.TextIOWrapper(io.BytesIO(buf.getvalue()), encoding="utf-8").read() for buf in (out, err)]
    return subprocess.CompletedProcess([script.replace(".py", ".main"), *argv], code, text[0], text[1])


# Machine paths an error message must not show (where the code, the interpreter, the
# temporary files and the home folder live), and text that comes only from an exception.
_LEAK_PATHS = tuple(dict.fromkeys(p for p in (REPO, os.path.realpath(REPO), sys.prefix,
                                              tempfile.gettempdir(), os.path.expanduser("~"))
                                  if p and p != os.sep))
_LEAK_TEXT = re.compile(r"Traceback \(most recent call last\)|^\s*File \"|\[Errno \d+\]|"
                        r"\b[A-Z]\w*(?:Error|Exception|Interrupt|Exit)\b: |<[\w.]+ object at 0x",
                        re.MULTILINE)


def assert_clean_failure_output(test: unittest.TestCase, proc: subprocess.CompletedProcess) -> None:
    """Assert stdout and stderr show no traceback, no exception text (an `XxxError: message`
    line, an errno, an object repr) and no absolute path of this machine (the repository,
    the interpreter, the temporary folder, the home folder) other than the paths the
    command line itself named (a missing --docs folder is named back to its user)."""
    given = [part for arg in proc.args[1:] for part in str(arg).split("=")
             if os.path.isabs(part) and not part.startswith(REPO)]
    for name, text in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        for value in sorted(given, key=len, reverse=True):
            text = text.replace(value, "GIVEN")
        leak = _LEAK_TEXT.search(text)
        test.assertIsNone(leak, f"exception text in {name}: {text!r}")
        for path in _LEAK_PATHS:
            test.assertNotIn(path, text, f"absolute path in {name}: {text!r}")


class StubModelServer:
    """A real OpenAI-compatible server on 127.0.0.1:0 for /embeddings and /chat/completions.

    Set `embed_fault` / `chat_fault` to one of FAULTS to make it misbehave, `chat_reply`
    to the text the chat model answers, `chat_hook` to a function run (with the request
    body) before it answers, `embed_delay_s` to slow every embedding reply, `dim` for
    vector size. Counts requests, embedded texts and the connections a client closed while
    the server kept silent (`chat_closed`), and keeps the request bodies; wait_for() waits
    on those counts without polling.
    """

    FAULTS = ("refuse_body", "hang", "http_400", "http_404", "http_429", "http_500", "http_503",
              "html", "truncated_json", "wrong_count", "wrong_dim", "changing_dim", "nan",
              "empty_choices", "huge", "no_content",
              # chat only: how a streamed reply misbehaves (see _chat_stream); silent: the
              # request is read and never answered, until the client closes the connection
              "hang_mid", "slow", "length", "no_stream", "refuse_then_ok", "silent",
              "cut", "cut_close", "stop_no_done", "done_only")
    MAX_EVENTS = 256         # a streamed reply is sent in at most this many events

    def __init__(self) -> None:
        self.reset()
        self._lock = threading.Condition()   # held to change a count; notified after each
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                if self.path.endswith("/models") and stub.models is not None:
                    stub._send(self, 200, {"object": "list", "data": [
                        {"id": m, "object": "model"} for m in stub.models]})
                else:
                    stub._send(self, 404, {"error": "not found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with stub._lock:
                    stub.bodies.append((self.path, body))
                    stub.headers_seen.append(dict(self.headers))
                    stub._lock.notify_all()
                if self.path.endswith("/embeddings"):
                    stub._embeddings(self, body)
                elif self.path.endswith("/chat/completions"):
                    stub._chat(self, body)
                else:
                    stub._send(self, 404, {"error": "not found"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(SERVE_POLL_S,), daemon=True)

    def reset(self) -> None:
        """Restore the default behaviour and zero the counters (between tests)."""
        self.embed_fault: str | None = None
        self.chat_fault: str | None = None
        self.chat_reply = "OK"
        self.chat_hook = None    # called with the request body before the chat reply is sent
        self.models: list[str] | None = ["text-embedding-stub", "stub-chat-7b"]   # None: no /models
        self.dim = 8
        self.centered = False    # subtract each vector's mean: dense, signed, like real embeddings
        self.hang_s = 3.0
        self.embed_delay_s = 0.0  # each embedding reply waits this long (release ends it)
        previous = getattr(self, "release", None)
        if previous is not None:
            previous.set()           # free any handler still hanging from the last test
        self.release = threading.Event()   # set: every hang ends at once
        self.chat_stream = True  # answer "stream": true with server-sent events
        self.token_gap_s = 0.05  # between streamed tokens when chat_fault == "slow"
        self.fail_first = 0      # chat_fault "refuse_then_ok": this many 503s first
        self.streamed_tokens = 0
        self.embed_requests = 0
        self.embedded_texts = 0
        self.chat_requests = 0
        self.chat_closed = 0     # silent chat connections the client closed
        self.bodies: list[tuple[str, dict]] = []
        self.headers_seen: list[dict[str, str]] = []

    def wait_for(self, condition, timeout_s: float = 30.0) -> bool:
        """Return once condition() holds (re-checked whenever a count changes), or False
        after timeout_s: a guard against a client that never calls, not a bound."""
        with self._lock:
            return self._lock.wait_for(condition, timeout_s)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "StubModelServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    # -- replies -------------------------------------------------------------------
    @staticmethod
    def _send(handler, status: int, payload, raw: bytes | None = None,
              content_type: str = "application/json", headers: dict | None = None) -> None:
        data = raw if raw is not None else json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        try:
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _common_fault(self, handler, fault: str | None) -> bool:
        """Send the reply for a fault shared by both endpoints; return True if sent."""
        if fault is None:
            return False
        if fault == "hang":
            self.release.wait(self.hang_s)
            self._send(handler, 200, {})
        elif fault.startswith("http_"):
            code = int(fault[5:])
            self._send(handler, code, {"error": {"message": "stub fault"}},
                       headers={"Retry-After": "0"} if code == 429 else None)
        elif fault == "html":
            self._send(handler, 200, None, raw=b"<html><body>Bad gateway</body></html>",
                       content_type="text/html")
        elif fault == "truncated_json":
            self._send(handler, 200, None, raw=b'{"data": [{"index": 0, "embedding": [0.1, ')
        elif fault == "huge":
            self._send(handler, 200, None, raw=b'{"pad": "' + b"x" * (5 * 1024 * 1024) + b'"}')
        elif fault == "refuse_body":
            handler.send_response(200)
            handler.send_header("Content-Length", "1000")
            handler.end_headers()
            handler.wfile.write(b'{"data": ')
            handler.wfile.flush()
            self.release.wait(self.hang_s)
        else:
            return False
        return True

    def _embeddings(self, handler, body: dict) -> None:
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        with self._lock:
            self.embed_requests += 1
            self.embedded_texts += len(texts)
            count = self.embed_requests
            self._lock.notify_all()
        fault = self.embed_fault
        if self._common_fault(handler, fault):
            return
        self.release.wait(self.embed_delay_s)
        vectors = [docs_qa.embed_mock_vector(t, self.dim) for t in texts]
        if self.centered:
            vectors = [[x - sum(v) / len(v) for x in v] for v in vectors]
        if fault == "wrong_count":
            vectors = vectors[:-1] if len(vectors) > 1 else vectors * 2
        elif fault == "wrong_dim":
            vectors = [v[:-1] if i == 0 else v for i, v in enumerate(vectors)] if len(vectors) > 1 \
                else [v + [0.0] for v in vectors]
        elif fault == "changing_dim":
            vectors = [v + [0.0] * (count % 2) for v in vectors]
        elif fault == "nan":
            vectors = [[math.nan] + v[1:] for v in vectors]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        raw = json.dumps({"object": "list", "data": data, "model": body.get("model")}).replace(
            "NaN", "NaN").encode()
        self._send(handler, 200, None, raw=raw)

    def _chat(self, handler, body: dict) -> None:
        with self._lock:
            self.chat_requests += 1
            count = self.chat_requests
            self._lock.notify_all()
        if self.chat_hook is not None:
            self.chat_hook(body)
        fault = self.chat_fault
        if fault == "refuse_then_ok":
            if count <= self.fail_first:
                self._send(handler, 503, {"error": {"message": "loading"}}, headers={"Retry-After": "0"})
                return
            fault = None
        if self._common_fault(handler, fault):
            return
        if fault == "silent":
            self._silent(handler)
            return
        if body.get("stream") and self.chat_stream and fault not in ("empty_choices", "no_content",
                                                                     "no_stream"):
            self._chat_stream(handler, fault, body.get("model"))
            return
        if fault == "length":
            self._send(handler, 200, {"choices": [{"index": 0, "finish_reason": "length", "message": {
                "role": "assistant", "content": self.chat_reply}}]})
            return
        if fault == "empty_choices":
            self._send(handler, 200, {"choices": []})
        elif fault == "no_content":
            self._send(handler, 200, {"choices": [{"message": {"role": "assistant"}}]})
        else:
            self._send(handler, 200, {"choices": [{"index": 0, "message": {
                "role": "assistant", "content": self.chat_reply}}]})


    def _silent(self, handler) -> None:
        """Send nothing until the client closes the connection (counted in chat_closed)
        or release is set."""
        import select
        sock = handler.connection
        while not self.release.is_set():
            if select.select([sock], [], [], SERVE_POLL_S)[0]:
                try:
                    closed = not sock.recv(1)
                except OSError:
                    closed = True
                if closed:
                    with self._lock:
                        self.chat_closed += 1
                        self._lock.notify_all()
                    return

    def _chat_stream(self, handler, fault: str | None, model: str | None) -> None:
        """Send chat_reply as server-sent events, one word per event, chunked like
        llama.cpp and vLLM; hang_mid stops after two words, slow spaces every word by
        token_gap_s, length ends with finish_reason 'length'. How the stream ends: cut
        ends the body cleanly after half the words, with neither a finish_reason nor [DONE]
        (a server that died mid-reply); cut_close drops the connection there without the
        last chunk; stop_no_done sends finish_reason 'stop' but no [DONE] (some servers
        omit it); done_only sends [DONE] without any finish_reason."""
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()

        def chunk(data: bytes) -> None:
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            handler.wfile.flush()

        def event(delta: dict, finish: str | None = None) -> None:
            payload = {"object": "chat.completion.chunk", "model": model,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

        words = self.chat_reply.split(" ")
        if len(words) > self.MAX_EVENTS:      # a huge reply: words in groups, MAX_EVENTS events
            size = -(-len(words) // self.MAX_EVENTS)
            words = [" ".join(words[i:i + size]) for i in range(0, len(words), size)]
        try:
            chunk(b": keep-alive comment\n\n")
            event({"role": "assistant"})
            for i, word in enumerate(words):
                if fault == "hang_mid" and i == 2:
                    self.release.wait(self.hang_s)
                    return
                if fault in ("cut", "cut_close") and i == max(len(words) // 2, 1):
                    if fault == "cut":
                        chunk(b"")
                    handler.close_connection = True
                    return
                if fault == "slow":
                    time.sleep(self.token_gap_s)
                event({"content": word if i == 0 else " " + word})
                with self._lock:
                    self.streamed_tokens += 1
                    self._lock.notify_all()
            if fault != "done_only":
                event({}, "length" if fault == "length" else "stop")
            if fault != "stop_no_done":
                chunk(b"data: [DONE]\n\n")
            chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            pass


class StubServerCase(TempDirTest):
    """A test class sharing one StubModelServer (started once per class), reset before
    each test, with `corpus` (TAX_CORPUS unless a subclass says otherwise) in its docs folder."""

    corpus: dict[str, str | bytes] = TAX_CORPUS

    @classmethod
    def setUpClass(cls):
        cls.stub = StubModelServer().__enter__()
        cls.addClassCleanup(cls.stub.__exit__)

    def setUp(self):
        super().setUp()
        write_files(self.docs, self.corpus)
        self.stub.reset()


class LiveDocsServer:
    """A docs-qa HTTP server (docs_qa.http_server) on 127.0.0.1:0, serving in a thread over
    its own indexed copy of a corpus (TAX_CORPUS by default); .docs and .settings are its
    folder and settings, .request() sends a raw request target exactly as given."""

    def __init__(self, corpus: dict[str, str | bytes] | None = None, token: str | None = None,
                 graph=None, **settings) -> None:
        import shutil
        self._cleanup = shutil.rmtree
        self.tmp = tempfile.mkdtemp()
        self.docs = write_files(os.path.join(self.tmp, "docs"), TAX_CORPUS if corpus is None else corpus)
        settings.setdefault("cache_dir", os.path.join(self.tmp, "cache"))
        self.settings = docs_qa.Settings(docs_dir=self.docs, embed_mock=True, **settings)
        docs_qa.index_folder(self.settings)
        self.log: list[str] = []
        self.ctx = docs_qa.ServerContext(docs_qa.OperationContext(self.settings, graph=graph),
                                         token=token, log=self.log.append)
        self.server = docs_qa.http_server(self.ctx, "127.0.0.1", 0)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(SERVE_POLL_S,), daemon=True)
        self.thread.start()

    def request(self, method: str, target: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        """Return (status, lower-cased headers, body) of one request (see http_request)."""
        return http_request(self.port, method, target, body, headers)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._cleanup(self.tmp, ignore_errors=True)


class ServeProcess:
    """A real `docs_qa.py serve --port 0` subprocess; its stderr is collected in a thread
    (so it never blocks) and `port` is read from the 'serving http://...' line."""

    def __init__(self, docs: str, *extra: str, env: dict[str, str] | None = None) -> None:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
        full_env["EMBED_MOCK"] = "1"
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(REPO, "docs_qa.py"), "serve", "--docs", docs,
             "--port", "0", *extra], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=full_env)
        self.lines: list[str] = []
        self._changed = threading.Condition()   # notified on each new line and at EOF
        self._ready = threading.Event()
        self.port = 0
        self._collector = threading.Thread(target=self._collect, daemon=True)
        self._collector.start()
        self._ready.wait(60)
        if not self.port:
            self.close()
            raise AssertionError("serve did not start; stderr: " + self.stderr)

    def _collect(self) -> None:
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace")
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
            if not self.port and "serving http://" in line:
                self.port = int(line.split("serving http://", 1)[1].split()[0].rsplit(":", 1)[1])
                self._ready.set()
        with self._changed:
            self._eof = True
            self._changed.notify_all()
        self._ready.set()

    _eof = False

    def wait_for_line(self, text: str, timeout_s: float = 30.0) -> bool:
        """Return whether stderr has a line containing text, waiting for it until the
        process closes stderr (or timeout_s passes: a guard, not a bound)."""
        with self._changed:
            self._changed.wait_for(lambda: self._eof or any(text in line for line in self.lines),
                                   timeout_s)
            return any(text in line for line in self.lines)

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def close(self) -> str:
        """Stop the server; return everything it wrote to stderr."""
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(30)
        self._collector.join(30)     # it ends at EOF; closing the pipe under it would race
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.stderr


def http_request(port: int, method: str, target: str, body: bytes | str | None = None,
                 headers: dict[str, str] | None = None, timeout: float = 30
                 ) -> tuple[int, dict[str, str], bytes]:
    """Return (status, lower-cased headers, body) of one request to 127.0.0.1:port sent with
    http.client on a connection of its own."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, target, body=body, headers=headers or {})
        reply = conn.getresponse()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
    finally:
        conn.close()


def http_exchange(port: int, data: bytes, timeout: float = 30) -> bytes:
    """Send raw bytes to 127.0.0.1:port, end the sending side, and return every byte
    the server sent until it closed (b"" when it closed without a reply)."""
    chunks = []
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:                # the server may close first (a refused header, ...)
            pass
        try:
            while True:
                part = sock.recv(65536)
                if not part:
                    break
                chunks.append(part)
        except ConnectionResetError:
            pass
    return b"".join(chunks)


def http_parse_reply(data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Return (status, headers with lower-case names, body) of the first reply in data."""
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", len(rest)))
    return status, headers, rest[:length]


WAIT_S = 15.0                      # the longest any single MCP reply may take in a test


class McpProcess:
    """A docs_qa.py mcp subprocess with a reader thread: recv() waits at most WAIT_S."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
        full_env.update(env)
        self.proc = subprocess.Popen([sys.executable, os.path.join(REPO, "docs_qa.py"), "mcp", *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=full_env)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def send(self, method: str, params: dict | None = None, notify: bool = False) -> int | None:
        message: dict = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        return message.get("id")

    def recv(self, timeout_s: float = WAIT_S) -> dict:
        message = self.lines.get(timeout=timeout_s)
        if message is None:
            raise AssertionError("the server closed stdout")
        return message

    def recv_reply(self, msg_id: int, notes: list | None = None) -> dict:
        """Return the reply to msg_id; notifications met on the way go to notes."""
        while True:
            message = self.recv()
            if message.get("id") == msg_id and "method" not in message:
                return message
            if notes is not None and "method" in message:
                notes.append(message)

    def close(self) -> tuple[int, list[dict]]:
        """End stdin; return the exit code and the messages written after that."""
        self.proc.stdin.close()
        self.proc.wait(timeout=WAIT_S * 2)
        rest = []
        while (message := self.lines.get(timeout=WAIT_S)) is not None:
            rest.append(message)
        return self.proc.returncode, rest

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except (OSError, ValueError):
                pass


INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
