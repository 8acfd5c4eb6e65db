"""A hostile or huge graph file (graph_store's load/validate) and the graph's question
length, through the docs_qa CLI and a real `serve --graph` subprocess: each is refused
by a format error naming the place, before it is read where size is the problem, and
the server still starts (issue 12, defects 6 and 9)."""

from __future__ import annotations

import json
import os
import tempfile
import unittest

from helpers import TAX_CORPUS, ServeProcess, http_exchange, http_parse_reply, run_cli, write_files
from test_graph_store import fixture

import docs_qa
import graph_store as gs


class GraphFileTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)
        self.tmp = self._tmp.name
        self.docs = write_files(os.path.join(self.tmp, "docs"), TAX_CORPUS)

    def graph_file(self, text: str, name: str = "graph.json") -> str:
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return path

    def ask_cli(self, graph: str, question: str = "Kto je vedúci práce Jána Holpa?"):
        return run_cli(question, "--docs", self.docs, "--no-cache", "--graph", graph, "--json")

    def assert_format_error(self, graph: str, *words: str) -> None:
        proc = self.ask_cli(graph)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual(json.loads(proc.stdout)["reason"], "retrieval_unavailable")
        self.assertNotIn("Traceback", proc.stderr)
        self.assertNotIn("internal error", proc.stderr)
        for word in words:
            self.assertIn(word, proc.stderr)

    def test_deeply_nested_arrays_are_a_format_error_naming_the_place(self):
        graph = self.graph_file('{"nodes": [], "edges": ' + "[" * 100000)
        self.assert_format_error(graph, "nested too deeply", "line 1, column")

    def test_a_5000_digit_year_is_a_format_error_naming_the_node(self):
        data = fixture()
        text = json.dumps(data).replace('"year": 2022', '"year": ' + "9" * 5000)
        self.assert_format_error(self.graph_file(text), "node #8 (id 't4')", "'year' has 5000 digits")

    def test_a_long_integer_id_is_refused_like_a_short_one(self):
        text = json.dumps(fixture()).replace('"id": "p-mala"', '"id": ' + "7" * 30)
        self.assert_format_error(self.graph_file(text), "node #4: 'id' must be a non-empty string")

    def test_dev_zero_and_other_non_regular_files_are_refused_unread(self):
        fifo = os.path.join(self.tmp, "fifo.json")
        os.mkfifo(fifo)                      # reading it would wait for a writer forever
        for path in ("/dev/zero", fifo, self.tmp):
            with self.subTest(path=path):
                self.assert_format_error(path, "must be a regular file")

    def test_a_graph_file_over_the_size_limit_is_refused_before_it_is_read(self):
        path = os.path.join(self.tmp, "huge.json")
        with open(path, "wb") as handle:     # sparse: no disk space, and reading it would be slow
            handle.truncate(gs.GRAPH_MAX_BYTES + 1)
        self.assert_format_error(path, "over the limit")

    def test_serve_starts_with_a_bad_graph_and_graph_answers_503(self):
        graph = self.graph_file('{"nodes": [], "edges": ' + "[" * 100000)
        server = ServeProcess(self.docs, "--no-cache", "--graph", graph)
        try:
            health = http_exchange(server.port, b"GET /health HTTP/1.1\r\n\r\n")
            self.assertEqual(http_parse_reply(health)[0], 200)
            body = b'{"question": "Kto je ved\\u00faci pr\\u00e1ce J\\u00e1na Holpa?"}'
            reply = http_exchange(server.port, b"POST /graph HTTP/1.1\r\nContent-Length: "
                                  + str(len(body)).encode() + b"\r\n\r\n" + body)
            self.assertEqual(http_parse_reply(reply)[0], 503)
        finally:
            stderr = server.close()
        self.assertIn("graph not loaded", stderr)
        self.assertNotIn("Traceback", stderr)

    def test_a_repeated_edge_gives_each_fact_once(self):
        data = fixture()
        data["edges"] += [dict(data["edges"][5]), dict(data["edges"][0])]   # t1->novak, holp->t1
        proc = self.ask_cli(self.graph_file(json.dumps(data)))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        facts = [f["text"] for f in json.loads(proc.stdout)["facts"]]
        self.assertEqual(len(facts), len(set(facts)), facts)
        self.assertEqual(gs.graph_build(data).edge_count, len(fixture()["edges"]))


class GraphQuestionLengthTest(unittest.TestCase):
    def test_the_graphs_question_limit_is_the_schemas(self):
        self.assertEqual(gs.MAX_QUESTION_CHARS, docs_qa.MAX_QUESTION_CHARS)
        self.assertEqual(docs_qa.OPERATIONS["graph"].request_schema["properties"]["question"]["maxLength"],
                         gs.MAX_QUESTION_CHARS)

    def test_a_long_question_the_graph_does_not_claim_falls_back_to_search(self):
        with tempfile.TemporaryDirectory() as tmp:
            docs = write_files(os.path.join(tmp, "docs"), TAX_CORPUS)
            graph = os.path.join(tmp, "graph.json")
            with open(graph, "w", encoding="utf-8") as handle:
                json.dump(fixture(), handle)
            question = "Termin JPK " + "x " * 1005          # 2,021 characters
            proc = run_cli(question, "--docs", docs, "--no-cache", "--graph", graph, "--search", "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads(proc.stdout)["tool"], "search")

    def test_graph_answers_a_question_between_2000_and_4000_characters(self):
        question = "Kto je vedúci práce Jána Holpa? " + "a" * 2500
        result = gs.ask(question, gs.graph_build(fixture()))
        self.assertEqual(result.status, "ok")


if __name__ == "__main__":
    unittest.main()
