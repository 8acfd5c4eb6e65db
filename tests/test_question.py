"""The Question: a question checked once, at the edge (retrieval_contract.question_make), with
its language and terms. One validator and one language decision for every transport (CLI,
HTTP, MCP, the graph's CLI); the library functions still take plain text."""

from __future__ import annotations

import contextlib
import json
import os
import unittest
from unittest import mock

from helpers import TAX_CORPUS, TempDirTest, run_cli, run_main, write_files   # first: sys.path

import docs_qa
import graph_store as gs
import retrieval_contract as rc

GRAPH = {"version": "t", "nodes": [
    {"id": "p-holp", "type": "person", "name": "Ján Holp"},
    {"id": "t1", "type": "thesis", "title": "Strojový preklad", "year": 2024}],
    "edges": [{"source": "p-holp", "target": "t1", "type": "authored"}]}
TOO_LONG = "termin " + "x" * rc.MAX_QUESTION_CHARS
# not text at all once format characters and controls are set aside, or longer than the cap
BAD_QUESTIONS = {"empty": "", "whitespace": "  \t\n ", "format characters": "\u200b\u2060\u00ad",
                 "controls": "\x01\x02\x7f", "too long": TOO_LONG}


class QuestionMakeTest(unittest.TestCase):
    """question_make is pure: text in, a checked Question out."""

    def test_the_text_is_cleaned_and_the_terms_are_those_of_the_cleaned_text(self):
        question = rc.question_make("  Do kiedy składam J\u200bPK?\x00 ")
        self.assertEqual(question.text, "Do kiedy składam JPK?")    # the format character joins
        self.assertEqual((question.language, question.is_language_told), ("pl", True))
        self.assertEqual(dict(question.terms), rc.text_query_counts("Do kiedy składam JPK?"))
        self.assertEqual(list(question.words), rc.text_query_words("Do kiedy składam JPK?"))
        self.assertIn("jpk", question.terms)

    def test_a_question_whose_words_do_not_tell_its_language_says_so(self):
        question = rc.question_make("GTU_12")
        self.assertEqual((question.language, question.is_language_told), ("en", False))
        self.assertEqual(question.language_or("sk"), "sk")          # the graph's assumption
        self.assertEqual(rc.question_make("Aký názov práce má Ján Holp?").language_or("en"), "sk")

    def test_an_english_contraction_leaves_no_word_behind(self):
        # "What's" and "don't" split at the apostrophe into 'what' + 's', 'don' + 't': the
        # letters would be words that every fragment saying "it's" or "let's" holds
        question = rc.question_make("What's the call? I don't know, I'm lost, we'll see, they've gone")
        self.assertEqual([word for word, _ in question.words], ["call", "know", "lost", "see", "gone"])
        self.assertEqual(question.text, "What's the call? I don't know, I'm lost, we'll see, they've gone")
        self.assertEqual(dict(question.terms), rc.text_query_counts(question.text))
        won = rc.question_make("TestClient won’t import, which package?")     # typographic apostrophe
        self.assertEqual([word for word, _ in won.words], ["TestClient", "import", "package"])
        self.assertEqual([word for word, _ in rc.question_make("Who won the award?").words], ["won", "award"])

    def test_a_question_is_made_once_and_never_changes(self):
        question = rc.question_make("termin JPK")
        self.assertIs(rc.question_make(question), question)
        limited = rc.question_make(question, limit=3)
        self.assertEqual((limited.limit, question.limit, limited.text), (3, None, "termin JPK"))
        with self.assertRaises(TypeError):
            question.terms["termin"] = 5

    def test_bad_questions_raise_invalid_query_naming_the_field(self):
        for name, text in {**BAD_QUESTIONS, "not text": 42}.items():
            with self.subTest(name), self.assertRaises(rc.InvalidQueryError) as caught:
                rc.question_make(text, field_name="query")
            self.assertEqual(caught.exception.field_names, ("query",))
        at_cap = "termin " + "x" * (rc.MAX_QUESTION_CHARS - 7)
        self.assertEqual(rc.question_make(at_cap).text, at_cap)


class TransportCase(TempDirTest):
    def setUp(self) -> None:
        super().setUp()
        write_files(self.docs, TAX_CORPUS)
        self.graph_file = os.path.join(self.tmp, "graph.json")
        with open(self.graph_file, "w", encoding="utf-8") as fh:
            json.dump(GRAPH, fh)

    def server(self, **overrides) -> docs_qa.ServerContext:
        settings = self.settings(cache_dir=None, use_embeddings=False, extractive=True, **overrides)
        ops = docs_qa.OperationContext(settings, graph=gs.graph_load(self.graph_file))
        return docs_qa.ServerContext(ops)

    def http(self, path: str, payload: dict, ctx: docs_qa.ServerContext) -> tuple[int, dict]:
        status, _, body = docs_qa.handle_request("POST", path, {}, json.dumps(payload).encode(), ctx)
        return status, json.loads(body)

    def mcp(self, tool: str, arguments: dict, ctx: docs_qa.ServerContext) -> dict:
        return docs_qa.mcp_handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                   "params": {"name": tool, "arguments": arguments}}, ctx)["result"]


class OneValidatorTest(TransportCase):
    """Every transport refuses a bad question with the same envelope, from the one validator."""

    @staticmethod
    def refusal(field: str) -> dict:
        return rc.error_result(rc.InvalidQueryError("", (field,))).to_dict()

    def test_every_transport_gives_one_envelope_for_an_empty_blank_or_long_question(self):
        ctx = self.server()
        for name, text in BAD_QUESTIONS.items():
            with self.subTest(name):
                got = {
                    "cli": json.loads(run_cli(text, "--docs", self.docs, "--no-cache", "--json").stdout),
                    "cli --search": json.loads(run_cli(text, "--docs", self.docs, "--no-cache", "--search",
                                                       "--json").stdout),
                    "cli --graph": json.loads(run_cli(text, "--docs", self.docs, "--no-cache", "--graph",
                                                      self.graph_file, "--json").stdout),
                    "graph cli": json.loads(run_cli("graph_store.py", text, "--graph", self.graph_file,
                                                    "--json").stdout),
                    "http /rag": self.http("/rag", {"question": text}, ctx),
                    "http /search": self.http("/search", {"query": text}, ctx),
                    "http /graph": self.http("/graph", {"question": text}, ctx),
                    "mcp ask_docs": self.mcp("ask_docs", {"question": text}, ctx)["structuredContent"],
                    "mcp search_docs": self.mcp("search_docs", {"query": text}, ctx)["structuredContent"],
                    "mcp query_graph": self.mcp("query_graph", {"question": text}, ctx)["structuredContent"],
                }
                for transport, envelope in got.items():
                    if transport.startswith("http"):
                        status, envelope = envelope
                        self.assertEqual(status, 400, transport)
                    field = "query" if "search" in transport else "question"
                    self.assertEqual(envelope, self.refusal(field), transport)

    def test_the_cli_and_the_graph_cli_say_the_same_in_one_line(self):
        docs = run_cli(TOO_LONG, "--docs", self.docs, "--no-cache")
        graph = run_cli("graph_store.py", TOO_LONG, "--graph", self.graph_file)
        self.assertEqual((docs.returncode, graph.returncode), (1, 1))
        expected = f"the question is longer than {rc.MAX_QUESTION_CHARS} characters"
        self.assertEqual(docs.stderr.strip(), f"docs_qa: error: {expected}")
        self.assertEqual(graph.stderr.strip(), f"graph_store: {expected}")


class LanguageDecidedOnceTest(TransportCase):
    """A question's language is decided when its Question is made, and nowhere below: the
    ranking, the second pass, the prompt, the refusal, the extractive quote, the confidence,
    the weak-answer label and the graph all read it from the Question."""

    QUESTION = "Do kiedy składa się plik JPK i fakturę?"   # each content word is in TAX_CORPUS

    def counted(self):
        """Return (calls, patch): a patch that counts every language decision, wherever the
        module that makes it imported the detector from."""
        calls: list[str] = []
        real = rc.text_detect_language

        def counting(text, *args, **kwargs):
            calls.append(text)
            return real(text, *args, **kwargs)
        stack = contextlib.ExitStack()
        for module in (rc, docs_qa):
            stack.enter_context(mock.patch.object(module, "text_detect_language", counting))
        return calls, stack

    def assert_once(self, run):
        """Return what run returns, asserting that it decided the question's language once."""
        calls, patched = self.counted()
        with patched:
            shown = run()
        self.assertEqual(calls, [self.QUESTION])
        return shown

    def test_once_through_the_cli(self):
        weak = docs_qa.WEAK_ANSWER_LABELS["pl"]
        for flags in (["--extractive", "--min-confidence", "1"], ["--extractive", "--json"], ["--search"],
                      ["--extractive", "--graph", self.graph_file]):
            with self.subTest(flags=flags):
                proc = self.assert_once(lambda: run_main([self.QUESTION, "--docs", self.docs, "--no-cache",
                                                          "--no-embed", *flags], {}))
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertIn("jpk.md", proc.stdout)
                if "--min-confidence" in flags:           # the weak-answer label is in Polish
                    self.assertTrue(proc.stdout.startswith(weak), proc.stdout[:200])

    def test_once_for_a_question_the_graph_answers(self):
        calls, patched = self.counted()
        with patched:
            proc = run_main(["Aký názov práce má Ján Holp?", "--docs", self.docs, "--no-cache", "--no-embed",
                             "--graph", self.graph_file, "--json"], {})
        self.assertEqual(json.loads(proc.stdout)["tool"], "graph", proc.stderr)
        self.assertEqual(calls, ["Aký názov práce má Ján Holp?"])

    def test_once_through_http(self):
        ctx = self.server()
        for path, payload in (("/rag", {"question": self.QUESTION}), ("/search", {"query": self.QUESTION})):
            with self.subTest(path):
                status, envelope = self.assert_once(lambda: self.http(path, payload, ctx))
                self.assertEqual((status, envelope["status"]), (200, "ok"))

    def test_once_through_mcp_with_the_weak_answer_label(self):
        ctx = self.server(min_confidence=1.0)
        result = self.assert_once(lambda: self.mcp("ask_docs", {"question": self.QUESTION}, ctx))
        self.assertEqual(result["structuredContent"]["confidence"]["level"], "low")
        self.assertTrue(result["content"][0]["text"].startswith(docs_qa.WEAK_ANSWER_LABELS["pl"]))


class PlainTextStillWorksTest(TempDirTest):
    """The library's own edges take plain text and make the Question there."""

    def setUp(self) -> None:
        super().setUp()
        write_files(self.docs, TAX_CORPUS)

    def test_search_and_answer_take_text_as_before(self):
        settings = self.settings(use_embeddings=False, extractive=True)
        by_text = docs_qa.search("termin JPK", settings)
        by_question = docs_qa.search(rc.question_make("termin JPK"), settings)
        self.assertEqual(by_text.hits[0].chunk.path, "jpk.md")
        self.assertEqual([h.chunk for h in by_text.hits], [h.chunk for h in by_question.hits])
        self.assertEqual(by_text.query, "termin JPK")
        self.assertIn("jpk.md", docs_qa.answer("termin JPK", settings).answer)
        with self.assertRaises(rc.InvalidQueryError):
            docs_qa.search("   ", settings)

    def test_a_questions_limit_is_the_result_limit(self):
        settings = self.settings(use_embeddings=False, limit=5)
        result = docs_qa.search(rc.question_make("faktura JPK VAT", limit=1), settings)
        self.assertEqual((len(result.hits), result.limits["result_limit"]), (1, 1))
        self.assertEqual(docs_qa.search("faktura JPK VAT", settings).limits["result_limit"], 5)


if __name__ == "__main__":
    unittest.main()
