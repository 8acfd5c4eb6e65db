#!/usr/bin/env python3
"""Run docs_qa.py against a stand-in chat model that always gives one fixed reply.

Usage: python3 examples/with_model_reply.py REPLY_FILE -- QUESTION --docs DIR [docs_qa.py flags]

Shows what the answer check does to a model's reply without a model server: a local
OpenAI-compatible server on 127.0.0.1 (any free port) answers /models and /chat/completions
with the text of REPLY_FILE, and docs_qa.py is run with --base-url pointing at it.
"""
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    with open(sys.argv[1], encoding="utf-8") as fh:
        reply = fh.read()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def send(self, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self.send({"object": "list", "data": [{"id": "stand-in-chat", "object": "model"}]})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send({"choices": [{"index": 0, "message": {"role": "assistant", "content": reply}}]})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        return subprocess.run([sys.executable, os.path.join(ROOT, "docs_qa.py"), *sys.argv[3:],
                               "--base-url", url, "--chat-model", "stand-in-chat"]).returncode
    finally:
        server.shutdown()


if __name__ == "__main__":
    sys.exit(main())
