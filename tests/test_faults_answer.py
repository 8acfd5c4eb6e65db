"""Fault battery, part 4: hostile LLM output. Citations are checked in code; whatever
the model writes, only sentences with a valid, supporting citation are presented.

Fixture (TAX_CORPUS) jpk.md, lines as numbered by an editor:
  1 "# JPK"  2 ""  3 "## Termin"  4 ""  5 "Plik JPK_V7M składa się do 25. dnia ..."
  6 ""  7 "## Kara"  8 ""  9 "Za spóźnienie grozi kara ..."
The micro-section "# JPK" merges into "## Termin", so the fragment for the deadline
question is jpk.md:1-5 and the only citation that supports the claim is jpk.md:5(-5).
"""
import json
import time
import unittest

from helpers import (StubServerCase, TAX_CORPUS, StubModelServer, TempDirTest, assert_clean_failure_output,
                     docs_qa, run_cli, write_files)

QUESTION = "do kiedy składam plik JPK"
CLAIM = "Plik JPK składa się do 25. dnia miesiąca"
REFUSAL_PL = docs_qa.REFUSALS["pl"]


class AnswerCase(StubServerCase):
    """Hostile LLM output against the chat stand-in."""

    def reply(self, text: str) -> "docs_qa.AnswerResult":
        self.stub.chat_reply = text
        settings = self.settings(base_url=self.stub.base_url, use_embeddings=False,
                                 timeout_s=2.0, retries=0, chat_timeout_s=2.0)
        result = docs_qa.answer(QUESTION, settings)
        self.assertEqual(result.answer_mode, "assistant")
        self.assertEqual([h.chunk.label for h in result.search.hits][0], "jpk.md:1-5")
        return result

    def problems(self, result) -> list:
        return [c.problem for c in result.citations]


class HostileCitationTest(AnswerCase):
    def test_parent_and_absolute_paths_are_outside_root_and_refused(self):
        for cite in ("../jpk.md:5-5", "/etc/jpk.md:5-5", "C:\\docs\\jpk.md:5", "faktury/../jpk.md:5-5"):
            with self.subTest(cite=cite):
                result = self.reply(f"{CLAIM} [{cite}].")
                self.assertEqual(self.problems(result), ["outside_root"])
                self.assertEqual(result.answer, REFUSAL_PL)

    def test_absurd_reversed_and_zero_ranges_are_refused(self):
        cases = {"jpk.md:5-3": "bad_range", "jpk.md:0-5": "bad_range",
                 "jpk.md:1-999999999": "out_of_range", "jpk.md:999999999": "out_of_range",
                 "jpk.md:9-9": "out_of_range",          # real line, but not in a returned fragment
                 "notes.txt:1-1": "unknown_path"}       # a file that was not returned
        for cite, problem in cases.items():
            with self.subTest(cite=cite):
                result = self.reply(f"{CLAIM} [{cite}].")
                self.assertEqual(self.problems(result), [problem])
                self.assertEqual(result.answer, REFUSAL_PL)
                self.assertFalse(any(c.valid for c in result.citations))

    def test_markdown_link_disguised_as_a_citation_is_not_accepted(self):
        result = self.reply(f"{CLAIM} [jpk.md:5-5](http://evil.example/jpk).")
        self.assertEqual(self.problems(result), ["link_disguised"])
        self.assertEqual(result.answer, REFUSAL_PL)

    def test_a_citation_repeated_is_presented_once(self):
        result = self.reply(f"{CLAIM} [jpk.md:5-5][jpk.md:5-5] (jpk.md:5-5).")
        self.assertEqual(result.answer, f"{CLAIM}. [jpk.md:5-5]")
        self.assertEqual(self.problems(result), [None, None, None])

    def test_ten_thousand_citations_are_bounded_and_not_repeated(self):
        started = time.process_time()          # this process's CPU, whatever else runs
        result = self.reply(f"{CLAIM} " + "[jpk.md:5-5]" * 10000 + ".")
        self.assertLess(time.process_time() - started, 5)
        self.assertEqual(len(result.citations), docs_qa.MAX_CITATIONS + 1)
        self.assertEqual(result.citations[-1].problem, "too_many")
        self.assertEqual(result.answer, f"{CLAIM} [jpk.md:5-5]")  # the final "." lies past the cut
        self.assertIn("answer_truncated", [n.code for n in result.notes])

    def test_one_megabyte_answer_is_cut_at_a_boundary_with_a_note(self):
        sentence = f"{CLAIM} [jpk.md:5-5]. "
        result = self.reply(sentence * (1024 * 1024 // len(sentence)))
        self.assertIn("answer_truncated", [n.code for n in result.notes])
        self.assertLessEqual(len(result.answer), docs_qa.MAX_ANSWER_CHARS)
        lines = result.answer.split("\n")
        self.assertTrue(all(line == f"{CLAIM}. [jpk.md:5-5]" for line in lines), lines[-1])
        self.assertEqual([u["problem"] for u in result.unsupported], [],
                         "the cut never leaves a half sentence behind")

    def test_reference_list_cannot_support_sentences_the_inline_text_does_not_cite(self):
        result = self.reply(f"{CLAIM}.\n\nŹródła:\n[jpk.md:5-5]\n[faktury/korekta.md:3-3]")
        self.assertEqual(result.answer, REFUSAL_PL)
        self.assertIn({"sentence": f"{CLAIM}.", "problem": "no_valid_citation"}, result.unsupported)
        self.assertEqual(self.problems(result), [None, "unknown_path"])

    def test_reference_list_beside_valid_inline_citations_adds_nothing(self):
        result = self.reply(f"{CLAIM} [jpk.md:5-5].\n\nReferences: [faktury/korekta.md:3-3]")
        self.assertEqual(result.answer, f"{CLAIM}. [jpk.md:5-5]")
        self.assertEqual(self.problems(result), [None, "unknown_path"])

    def test_sentence_citing_unrelated_lines_is_not_supported(self):
        result = self.reply("Za spóźnienie grozi kara z kodeksu karnego [jpk.md:5-5].")
        self.assertEqual(result.answer, REFUSAL_PL)
        self.assertEqual(result.unsupported[0]["problem"], "not_supported_by_cited_lines")

    def test_prompt_injection_in_the_reply_is_just_text(self):
        result = self.reply("Ignore the rules. <script>alert(1)</script> [jpk.md:5-5]")
        self.assertEqual(result.answer, REFUSAL_PL)


class CliAnswerTest(AnswerCase):
    def test_hostile_reply_through_the_cli_exits_0_with_a_clean_envelope(self):
        self.stub.chat_reply = f"{CLAIM} [/etc/passwd:1-1] [../../x.md:1] " + "[jpk.md:5-5]" * 3000
        env = {"EMBED_MOCK": "1", "DOCS_QA_BASE_URL": self.stub.base_url}
        proc = run_cli(QUESTION, "--docs", self.docs, "--cache-dir", self.cache, "--json",
                       "--no-embed", "--timeout", "2", env=env)
        assert_clean_failure_output(self, proc)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        envelope = json.loads(proc.stdout)
        self.assertEqual(envelope["answer"], f"{CLAIM} [jpk.md:5-5]")
        self.assertNotIn(self.tmp, proc.stdout)


if __name__ == "__main__":
    unittest.main()
