"""Live end-to-end test against a real OpenAI-compatible model server (LM Studio or a
stand-in), opt-in: it runs only when DOCS_QA_LIVE_URL holds the server's base URL, e.g.

    DOCS_QA_LIVE_URL=http://127.0.0.1:PORT/v1 python3 -m unittest tests.test_e2e_live -v

and skips with a reason otherwise (so the offline suite never needs a server).

The real CLI runs as subprocesses with DOCS_QA_BASE_URL set to that URL and without the
mock embeddings (EMBED_MOCK is cleared even when the parent sets it, as the README's test
command does). It indexes the repository's `corpus` into a temporary cache, with the
server's embeddings, then asks five questions extractively and, when the server lists a
chat model, in assistant mode, and checks the contract of every answer: exit code 0, a
v1 envelope valid against the operation's schema, hybrid retrieval with no degradation
note, and either citations that are valid (inside a returned source, whose text is the
cited file's lines) or a refusal.

Models, from GET {DOCS_QA_LIVE_URL}/models unless the environment names them:
- embeddings: DOCS_QA_EMBED_MODEL, else the first listed id containing "embed";
- chat: DOCS_QA_CHAT_MODEL, else the first listed id not containing "embed" (the rule
  docs_qa itself uses to pick a chat model); with none, assistant mode is skipped.
"""
import json
import os
import re
import sys
import tempfile
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import REPO, assert_clean_failure_output, docs_qa, run_cli  # noqa: E402

import retrieval_contract as rc  # noqa: E402

LIVE_URL = os.environ.get("DOCS_QA_LIVE_URL", "").strip()
CORPUS = os.path.join(REPO, "corpus")
QUESTIONS = (                                  # the corpus's languages; the last is off-corpus
    "do kiedy składam JPK",
    "faktura korygująca rabat",
    "Kto bol vedúci práce Strojový preklad právnych textov?",
    "What is the annual sales threshold for the VAT exemption in Poland?",
    "What is the boiling point of mercury?",
)
DEGRADED = {"embeddings_unavailable", "embeddings_disabled", "embed_mock", "llm_unavailable",
            "llm_truncated", "cache_unavailable"}
INDEX_TIMEOUT_S = 1800     # a guard, not a bound: a slow CPU embeds a few texts a second
QUESTION_TIMEOUT_S = 600


def listed_models(base_url: str) -> list[str]:
    """Return the model ids the server lists at GET /models."""
    with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=30) as reply:
        data = json.load(reply).get("data", [])
    return [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]


@unittest.skipUnless(LIVE_URL, "live test: set DOCS_QA_LIVE_URL to an OpenAI-compatible server's base "
                               "URL (e.g. http://127.0.0.1:PORT/v1) to run it")
class LiveEndToEndTest(unittest.TestCase):
    """One temporary cache for the class: the corpus is indexed (and embedded) once."""

    @classmethod
    def setUpClass(cls):
        models = listed_models(LIVE_URL)
        cls.embed_model = os.environ.get("DOCS_QA_EMBED_MODEL") or next(
            (m for m in models if "embed" in m.lower()), docs_qa.DEFAULT_EMBED_MODEL)
        cls.chat_model = os.environ.get("DOCS_QA_CHAT_MODEL") or next(
            (m for m in models if "embed" not in m.lower()), None)
        tmp = tempfile.TemporaryDirectory()
        cls.addClassCleanup(tmp.cleanup)
        cls.cache = os.path.join(tmp.name, "cache")
        # run_cli drops the parent's DOCS_QA_* variables; EMBED_MOCK="" turns the mock off
        # (it would default to 1), and in_process=False makes each run a real process.
        cls.env = {"EMBED_MOCK": "", "DOCS_QA_BASE_URL": LIVE_URL, "DOCS_QA_EMBED_MODEL": cls.embed_model,
                   "DOCS_QA_EMBED_LANGUAGES": "all"}   # the corpus is Polish and Slovak: use the model
        if os.environ.get("DOCS_QA_API_KEY"):
            cls.env["DOCS_QA_API_KEY"] = os.environ["DOCS_QA_API_KEY"]
        cls.corpus_before = cls.corpus_listing()
        cls.index = run_cli("index", "--docs", CORPUS, "--cache-dir", cls.cache, "--json",
                            env=cls.env, in_process=False, timeout=INDEX_TIMEOUT_S)

    @staticmethod
    def corpus_listing() -> list[tuple[str, int, int]]:
        return sorted((os.path.relpath(os.path.join(d, f), CORPUS), st.st_size, st.st_mtime_ns)
                      for d, _, files in os.walk(CORPUS) for f in files
                      for st in [os.stat(os.path.join(d, f))])

    def ask(self, question: str, *extra: str) -> dict:
        proc = run_cli(question, "--docs", CORPUS, "--cache-dir", self.cache, "--json", *extra,
                       env=self.env, in_process=False, timeout=QUESTION_TIMEOUT_S)
        assert_clean_failure_output(self, proc)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def test_1_index_embeds_the_corpus_with_the_server(self):
        self.assertEqual(self.index.returncode, 0, self.index.stderr)
        counts = json.loads(self.index.stdout)
        self.assertGreater(counts["new"] + counts["unchanged"], 0)
        self.assertGreater(counts["chunks"], 0)
        codes = {n["code"] for n in counts["notes"]}
        self.assertFalse(codes & DEGRADED, counts["notes"])

    def test_2_extractive_answers_keep_the_contract(self):
        for question in QUESTIONS:
            with self.subTest(question=question):
                self.check_answer(self.ask(question, "--extractive"), "extractive")

    def test_3_assistant_answers_keep_the_contract(self):
        if self.chat_model is None:
            self.skipTest(f"the server lists no chat model (every id names 'embed'); "
                          f"assistant mode not tested; set DOCS_QA_CHAT_MODEL to name one")
        for question in QUESTIONS:
            with self.subTest(question=question):
                self.check_answer(self.ask(question, "--chat-model", self.chat_model), "assistant")

    def test_4_text_output_exits_0(self):
        proc = run_cli(QUESTIONS[0], "--docs", CORPUS, "--cache-dir", self.cache, "--extractive",
                       env=self.env, in_process=False, timeout=QUESTION_TIMEOUT_S)
        assert_clean_failure_output(self, proc)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(proc.stdout.strip())

    def test_5_the_corpus_was_not_written(self):
        self.assertEqual(self.corpus_listing(), self.corpus_before)

    def check_answer(self, env: dict, mode: str) -> None:
        """Assert an answer envelope keeps the contract: valid against the schema, hybrid
        retrieval undegraded, and valid citations or a refusal."""
        self.assertEqual(rc.schema_errors(env, docs_qa.OPERATIONS["rag"].response_schema), [])
        self.assertEqual(env["mode"], "hybrid")
        self.assertFalse({n["code"] for n in env["notes"]} & DEGRADED, env["notes"])
        refusals = set(docs_qa.REFUSALS.values())
        if env["status"] == "no_answer":
            self.assertEqual((env["reason"], env["sources"], env["citations"], env["answer_mode"]),
                             ("no_matching_sources", [], [], "none"))
            self.assertIn(env["answer"], refusals)
            return
        self.assertEqual((env["status"], env["answer_mode"]), ("ok", mode))
        self.assertTrue(any(s["retrieval"]["dense"] for s in env["sources"]),
                        "no source was ranked by the embeddings")
        for source in env["sources"]:
            self.assertEqual(source["text"], self.file_lines(source["document_path"],
                                                             source["start_line"], source["end_line"]))
        shown = {(c.path, c.start_line, c.end_line)
                 for c in docs_qa.citation_parse(env["answer"], [s["document_path"] for s in env["sources"]])}
        if env["answer"] in refusals:              # every claim removed (see `unsupported`), or none made
            self.assertEqual(shown, set())
            return
        self.assertTrue(shown, "an answer that is not the refusal shows no citation")
        valid = [c for c in env["citations"] if c["valid"]]
        self.assertLessEqual(shown, {(c["path"], c["start_line"], c["end_line"]) for c in valid})
        for cite in valid:
            self.assertTrue(any(s["document_path"] == cite["path"] and
                                s["start_line"] <= cite["start_line"] <= cite["end_line"] <= s["end_line"]
                                for s in env["sources"]), cite)

    @staticmethod
    def file_lines(path: str, start: int, end: int) -> str:
        with open(os.path.join(CORPUS, *path.split("/")), encoding="utf-8-sig", newline="") as fh:
            lines = re.split(r"\r\n|\r|\n", fh.read())
        assert end <= len(lines), f"{path} has {len(lines)} lines, cited up to {end}"
        return "\n".join(lines[start - 1:end])


if __name__ == "__main__":
    unittest.main()
