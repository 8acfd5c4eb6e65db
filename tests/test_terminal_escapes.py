"""Issue 12, defect 8: text output never hands a terminal a control sequence.

A document line or a graph name holding a title change (OSC 0), hidden text (SGR 8), a
clipboard write (OSC 52), a one-byte C1 CSI or a bidi override is
shown with those characters made visible (\\x1b, \\u202e, ...) by the text output of
docs_qa and graph_store, while --json keeps the exact text.
"""
import json
import os
import socket
import threading
import unittest

import retrieval_contract as rc
from helpers import SERVE_POLL_S, TempDirTest, docs_qa, run_cli, write_files

HOSTILE = ("Zebra title \x1b]0;owned\x07 hidden \x1b[8msecret\x1b[0m clip \x1b]52;c;cm0gLXJm\x07 "
           "csi \x9b31m bell \x07 rlo \u202egpj.exe\u202c iso \u2066x\u2069 end")
RAW = ("\x1b", "\x07", "\x9b", "\r", "\u202e", "\u202c", "\u2066", "\u2069")


class VisibleTextTest(unittest.TestCase):
    def test_controls_and_bidi_are_made_visible_tab_and_newline_kept(self):
        self.assertEqual(rc.visible_text("a\x1b[8mb\tc\nd\u202ee\x9bf\x7f\x00\r"),
                         "a\\x1b[8mb\tc\nd\\u202ee\\x9bf\\x7f\\x00\\x0d")
        self.assertEqual(rc.visible_text("Žltý kôň 🎉"), "Žltý kôň 🎉")


class DocsQaTextTest(TempDirTest):
    def setUp(self):
        super().setUp()
        write_files(self.docs, {"hostile.md": f"# Zebra \x1b]0;t\x07\n\n{HOSTILE}\n",
                                "zebra \u202egpj.md": "Zebra in a reversed name here.\n"})

    def cli(self, *flags: str):
        proc = run_cli("zebra", "--docs", self.docs, "--cache-dir", self.cache, "--no-embed", *flags)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc.stdout

    def assert_no_raw(self, text: str) -> None:
        for char in RAW:
            self.assertNotIn(char, text, repr(char))

    def test_search_and_answer_text_show_escapes_visibly(self):
        for flags in (["--search"], ["--extractive"]):
            with self.subTest(flags=flags):
                out = self.cli(*flags)
                self.assert_no_raw(out)
                self.assertIn("\\x1b]0;", out)
                self.assertIn("zebra \\u202egpj.md", out)
        self.assertIn("\\x1b]52;c;cm0gLXJm\\x07", self.cli("--search"))

    def test_json_keeps_the_exact_text(self):
        envelope = json.loads(self.cli("--search", "--json"))
        texts = {s["document_path"]: s["text"] for s in envelope["sources"]}
        self.assertIn(HOSTILE, texts["hostile.md"])
        self.assertIn("zebra \u202egpj.md", texts)


class ServerLogTest(TempDirTest):
    def test_a_request_line_with_escapes_is_logged_visibly(self):
        settings = self.settings(use_embeddings=False)
        log: list[str] = []
        ctx = docs_qa.ServerContext(docs_qa.OperationContext(settings), log=log.append)
        server = docs_qa.http_server(ctx, "127.0.0.1", 0)
        thread = threading.Thread(target=server.serve_forever, args=(SERVE_POLL_S,), daemon=True)
        thread.start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=10) as sock:
            sock.sendall(b"GET /\x1b]0;owned\x07\xc2\x9b31m HTTP/1.0\r\n\r\n")
            while sock.recv(65536):
                pass
        server.shutdown()
        logged = "".join(log)
        self.assertIn("\\x1b]0;owned", logged)
        for char in ("\x1b", "\x07", "\x9b"):
            self.assertNotIn(char, logged, repr(char))


class GraphTextTest(TempDirTest):
    def setUp(self):
        super().setUp()
        graph = {"nodes": [
            {"id": "p1", "type": "person", "name": "Ján Holp", "document_path": "osoby/\u202eholp.md"},
            {"id": "t1", "type": "thesis", "title": "Preklad \x1b]52;c;cm0gLXJm\x07 textov \u202eevil",
             "year": 2024, "source_url": "https://x.example/\x1b[8m"}],
            "edges": [{"source": "p1", "target": "t1", "type": "authored"}]}
        self.graph = os.path.join(self.tmp, "graph.json")
        with open(self.graph, "w", encoding="utf-8") as fh:
            json.dump(graph, fh)

    def test_graph_store_text_shows_escapes_visibly_and_json_keeps_them(self):
        question = "Aký názov práce má Ján Holp?"
        proc = run_cli("graph_store.py", question, "--graph", self.graph)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for char in RAW:
            self.assertNotIn(char, proc.stdout, repr(char))
        self.assertIn("\\x1b]52;c;cm0gLXJm\\x07", proc.stdout)
        self.assertIn("\\u202eholp.md", proc.stdout)
        exact = run_cli("graph_store.py", question, "--graph", self.graph, "--json")
        self.assertIn("\x1b]52;c;cm0gLXJm\x07", json.loads(exact.stdout)["answer"])

    def test_docs_qa_graph_text_shows_escapes_visibly(self):
        proc = run_cli("Aký názov práce má Ján Holp?", "--docs", self.docs, "--graph", self.graph,
                       "--no-cache")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for char in RAW:
            self.assertNotIn(char, proc.stdout, repr(char))
        self.assertIn("\\x1b]52;c;", proc.stdout)


if __name__ == "__main__":
    unittest.main()
