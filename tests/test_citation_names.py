"""Issue 12, defect 2: every file name the walk accepts is cited and parsed back exactly.

Names with spaces, brackets, parentheses, commas, semicolons and colons, a name in NFD
cited in NFC, and `old notes.md` beside `notes.md` (whose line 3 says something close
enough to pass the lexical support check): a citation names a path whole, never a
suffix of it, and an ambiguous one is refused. Checked through the CLI (extractive text
and JSON) and through assistant mode against the chat stand-in.
"""
import json
import random
import unicodedata
import unittest

from helpers import StubServerCase, TempDirTest, docs_qa, run_cli, write_files

NFD_NAME = unicodedata.normalize("NFD", "café notes.md")
NFC_NAME = unicodedata.normalize("NFC", NFD_NAME)
CORPUS = {
    "my notes.md": "Kumquat fee is 41 euros.\n",
    "old notes.md": "# Old\n\nOkapi fee was 12 euros.\n",
    "notes.md": "# Notes\n\nOkapi fee was 95 euros in the new plan.\n",
    "notes (draft).md": "Quince fee is 43 euros.\n",
    "[draft] notes.md": "Papaya fee is 44 euros.\n",
    "a,b.md": "Lychee fee is 45 euros.\n",
    "a;b.md": "Mango fee is 46 euros.\n",
    "a:12.md": "Guava fee is 47 euros.\n",
    "sub/my fees.md": "Durian fee is 48 euros.\n",
    NFD_NAME: "Tamarind fee is 49 euros.\n",
}
# the word that picks each file out, and the line holding it
WORDS = {"my notes.md": ("kumquat", 1), "old notes.md": ("okapi fee was 12", 3),
         "notes (draft).md": ("quince", 1), "[draft] notes.md": ("papaya", 1),
         "a,b.md": ("lychee", 1), "a;b.md": ("mango", 1), "a:12.md": ("guava", 1),
         "sub/my fees.md": ("durian", 1), NFD_NAME: ("tamarind", 1)}
NAMES = list(CORPUS)


def line_of(name: str, number: int) -> str:
    return CORPUS[name].split("\n")[number - 1]


def parsed(text: str, paths=NAMES) -> list[tuple]:
    return [(c.path, c.start_line, c.end_line, c.problem) for c in docs_qa.citation_parse(text, paths)]


class ParseNamesTest(unittest.TestCase):
    """The one parser, called directly, on every awkward name."""

    def test_every_name_parses_back_whole_in_each_written_form(self):
        for name in NAMES:
            for form in (f"[{name}:2-3]", f'["{name}":2-3]', f"[`{name}`:2-3]", f'"{name}":2-3',
                         f"x [S1: {name}:2-3] y", f"[{docs_qa.citation_format(name, 2, 3)}]",
                         docs_qa.citation_format(name, 2, 3)):
                with self.subTest(name=name, form=form):
                    self.assertEqual(parsed(form), [(name, 2, 3, None)])

    def test_a_path_is_matched_whole_never_by_a_suffix(self):
        self.assertEqual(parsed("x [old notes.md:3]"), [("old notes.md", 3, 3, None)])
        self.assertEqual(parsed("x [notes.md:3]"), [("notes.md", 3, 3, None)])
        self.assertEqual(parsed("[a;b.md:1; notes.md:3, a,b.md:1]"),
                         [("a;b.md", 1, 1, None), ("notes.md", 3, 3, None), ("a,b.md", 1, 1, None)])
        # only notes.md was returned: "[old notes.md:3]" may name another file, so it is refused
        self.assertEqual(parsed("x [old notes.md:3]", ["notes.md"]),
                         [("notes.md", 3, 3, "ambiguous")])

    def test_a_citation_wrapped_whole_in_quotes_names_the_whole_text_never_a_tail(self):
        # issue 30, item 6: `sub/my fees.md:3` cites sub/my fees.md, never fees.md
        for paths in (["sub/my fees.md", "fees.md"], ["fees.md"], []):
            for form in ("`sub/my fees.md:3`", '"sub/my fees.md:3"', "[`sub/my fees.md:3`]"):
                with self.subTest(paths=paths, form=form):
                    got = docs_qa.citation_parse(f"Durian fee {form}.", paths)
                    self.assertEqual([(c.path, c.start_line, c.problem) for c in got],
                                     [("sub/my fees.md", 3, None)])
                    self.assertEqual(got[0].span, (11, 11 + len(form)))      # the quotes go too
        # bare, the word before holding a '/' may be part of the name: refused, not read as fees.md
        self.assertEqual(parsed("Durian fee sub/my fees.md:3.", ["fees.md"]), [("fees.md", 3, 3, "ambiguous")])

    def test_quoted_text_that_names_no_document_stays_text(self):
        self.assertEqual(parsed("Port `:8080`, `host:8080` and \"host:8080\" [notes.md:3]."),
                         [("notes.md", 3, 3, None)])

    def test_a_line_reference_after_a_closing_quote_needs_a_quoted_document_name(self):
        # FastAPI's CORS page: the backtick before ':80' closes no name; the quoted text before
        # it ('OPTIONS` request to the ') is two code spans, and the quote before ':8080' ends a
        # URL: read as citations, the text between was cut out of the quoted sentence
        text = ("Then, the browser will send an HTTP `OPTIONS` request to the `:80`-backend, from "
                "this origin (`http://localhost:8080`) then the `:8080`-browser lets it [notes.md:3].")
        self.assertEqual(parsed(text), [("notes.md", 3, 3, None)])
        # a quoted document's name before the reference is still a citation, known or not
        self.assertEqual(parsed('See "my notes.md":3 and "old notes.md":4.', ["my notes.md"]),
                         [("my notes.md", 3, 3, None), ("old notes.md", 4, 4, None)])

    def test_an_ambiguous_bare_citation_is_refused_not_guessed(self):
        cites = docs_qa.citation_validate(docs_qa.citation_parse("see old notes.md:3", NAMES), [
            docs_qa.Chunk("old notes.md", 1, 3, (), CORPUS["old notes.md"].rstrip("\n")),
            docs_qa.Chunk("notes.md", 1, 3, (), CORPUS["notes.md"].rstrip("\n"))])
        self.assertEqual([(c.valid, c.problem) for c in cites], [(False, "ambiguous")])

    def test_nfc_and_nfd_name_the_same_file(self):
        self.assertEqual(parsed(f"[{NFC_NAME}:1]"), [(NFD_NAME, 1, 1, None)])
        chunk = docs_qa.Chunk(NFD_NAME, 1, 1, (), "x")
        cites = docs_qa.citation_validate(docs_qa.citation_parse(f'"{NFC_NAME}":1'), [chunk])
        self.assertEqual([(c.path, c.valid) for c in cites], [(NFD_NAME, True)])

    def test_a_colon_name_is_not_a_windows_drive_but_a_drive_still_is(self):
        chunks = [docs_qa.Chunk("a:12.md", 1, 2, (), "x\ny")]
        self.assertEqual([(c.valid, c.problem) for c in docs_qa.citation_validate(
            docs_qa.citation_parse("[a:12.md:2] [C:/a.md:1] [C:\\a.md:1]", ["a:12.md"]), chunks)],
            [(True, None), (False, "outside_root"), (False, "outside_root")])

    def test_text_output_quotes_awkward_names_only(self):
        self.assertEqual(docs_qa.citation_format("dir/jpk_v7.md", 1, 2), "dir/jpk_v7.md:1-2")
        self.assertEqual(docs_qa.citation_format("my notes.md", 1, 2), '"my notes.md":1-2')
        self.assertEqual(docs_qa.citation_format('say "hi".md', 1, 2), '`say "hi".md`:1-2')


class NameFuzzTest(unittest.TestCase):
    """Seeded random names built from the characters that easily break a citation parser,
    each with every tail of it that starts after a space, bracket, separator or quote also known."""

    ALPHABET = list("ab .,;:()[]\"`'-_/é\t") + ["\u0301", "S1 ", ":1", ":2-3", "md"]

    def test_a_formatted_citation_parses_back_to_its_name_and_never_to_a_tail(self):
        rng = random.Random(20261201)
        checked = 0
        while checked < 1500:
            name = "".join(rng.choice(self.ALPHABET) for _ in range(rng.randint(1, 12))) + ".md"
            parts = name.split("/")
            if any(p in ("", ".", "..") or p.startswith(".") for p in parts):
                continue
            checked += 1
            tails = {name[i:] for i in range(1, len(name)) if name[i - 1] in " [(,;\"`/\t"}
            known = [name] + sorted(tails)
            # the formatted forms always read back (a name holding both kinds of quote may
            # be refused as ambiguous); the unquoted form may be refused, never misread
            both_quotes = '"' in name and "`" in name
            for text, must_read_back in ((f"Claim [{docs_qa.citation_format(name, 1, 2)}].", not both_quotes),
                                         (f"x {docs_qa.citation_format(name, 1, 2)} y", not both_quotes),
                                         (f"Claim [{name}:1-2].", False),
                                         (f"x {name}:1-2 y", False)) + tuple(
                    # wrapped whole in a quote the name does not hold (one it holds cannot wrap it)
                    (f"x {q}{name}:1-2{q} y", True) for q in docs_qa._CITE_QUOTES if q not in name):
                got = parsed(text, known)
                where = f"name={name!r} text={text!r} got={got}"
                self.assertFalse([g for g in got if g[3] is None and g[0] != name and g[0] in known], where)
                if must_read_back:
                    self.assertEqual(got, [(name, 1, 2, None)], where)


class ExtractiveNamesCliTest(TempDirTest):
    """Extractive answers over the awkward names, through the CLI, text and JSON."""

    def setUp(self):
        super().setUp()
        write_files(self.docs, CORPUS)

    def cli(self, question: str, *flags: str):
        proc = run_cli(question, "--docs", self.docs, "--cache-dir", self.cache, "--extractive",
                       "--no-embed", "--limit", "10", *flags)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc.stdout

    def test_each_name_is_cited_exactly_in_json_and_text(self):
        for name, (words, number) in WORDS.items():
            with self.subTest(name=name):
                envelope = json.loads(self.cli(words, "--json"))
                cites = envelope["citations"]
                self.assertTrue(cites and all(c["valid"] for c in cites), cites)
                self.assertIn((name, number, number), [(c["path"], c["start_line"], c["end_line"])
                                                       for c in cites])
                for cite in cites:          # every cited line is the sentence it is attached to
                    self.assertIn(line_of(cite["path"], cite["start_line"]), envelope["answer"])
                text = self.cli(words)
                self.assertIn(f"[{docs_qa.citation_format(name, number, number)}]", text)
                found = {(p, s, e) for p, s, e, problem in parsed(text) if problem is None}
                self.assertIn((name, number, number), found)
                for src in envelope["sources"]:     # each source line copies back exactly
                    self.assertIn((src["document_path"], src["start_line"], src["end_line"]), found)

    def test_old_notes_is_never_cited_as_notes(self):
        envelope = json.loads(self.cli("okapi fee was 12", "--json"))
        by_line = {(c["path"], c["start_line"]) for c in envelope["citations"]}
        self.assertIn(("old notes.md", 3), by_line)
        self.assertIn("Okapi fee was 12 euros.", envelope["answer"])
        self.assertNotIn("[notes.md:3-3]", envelope["answer"].split("Okapi fee was 12 euros.")[1]
                         .split("\n")[0])


class AssistantNamesTest(StubServerCase):
    """Model replies citing the awkward names, validated and presented by the CLI."""

    corpus = CORPUS

    def ask(self, reply: str) -> dict:
        self.stub.chat_reply = reply
        proc = run_cli("fee euros", "--docs", self.docs, "--cache-dir", self.cache, "--no-embed",
                       "--limit", "10", "--chat-model", "stub-chat-7b", "--json",
                       env={"DOCS_QA_BASE_URL": self.stub.base_url, "EMBED_MOCK": "0"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        envelope = json.loads(proc.stdout)
        self.assertEqual(envelope["answer_mode"], "assistant")
        return envelope

    def test_replies_citing_awkward_names_are_verified_and_presented_exactly(self):
        lines = {"my notes.md": "[my notes.md:1]", "notes (draft).md": '["notes (draft).md":1-1]',
                 "[draft] notes.md": "[[draft] notes.md:1]", "a,b.md": "[`a,b.md`:1]",
                 "a;b.md": "(a;b.md:1)", "a:12.md": "[a:12.md:1-1]", "sub/my fees.md": "[sub/my fees.md:1]",
                 NFD_NAME: f"[{NFC_NAME}:1]"}
        reply = "\n".join(line_of(name, 1).rstrip(".") + f" {cite}." for name, cite in lines.items())
        envelope = self.ask(reply)
        self.assertEqual([(c["path"], c["valid"]) for c in envelope["citations"]],
                         [(name, True) for name in lines])
        for name in lines:
            self.assertIn(f"{line_of(name, 1).rstrip('.')}. [{docs_qa.citation_format(name, 1, 1)}]",
                          envelope["answer"])
        self.assertEqual(envelope["unsupported"], [])

    def test_a_suffix_of_a_name_never_cites_another_file(self):
        envelope = self.ask("Okapi fee was 12 euros [old notes.md:3].")
        self.assertEqual([(c["path"], c["valid"]) for c in envelope["citations"]], [("old notes.md", True)])
        self.assertEqual(envelope["answer"], 'Okapi fee was 12 euros. ["old notes.md":3-3]')

    def test_an_ambiguous_citation_is_refused(self):
        envelope = self.ask("Okapi fee was 12 euros, see old notes.md:3")
        self.assertEqual([(c["valid"], c["problem"]) for c in envelope["citations"]], [(False, "ambiguous")])
        self.assertNotIn("12 euros", envelope["answer"])

    def test_the_prompt_labels_fragments_as_they_must_be_cited(self):
        self.ask("OK")
        context = self.stub.bodies[-1][1]["messages"][1]["content"]
        self.assertIn('["my notes.md":1-1]\nKumquat fee is 41 euros.', context)
        self.assertIn('["my notes.md":3-5]', self.stub.bodies[-1][1]["messages"][0]["content"])


class WrappedCitationCliTest(StubServerCase):
    """Issue 30, item 6, through the CLI: a model reply citing `sub/my fees.md:1` in
    backticks is a citation of sub/my fees.md, never of fees.md beside it."""

    corpus = {"sub/my fees.md": "Durian fee is 48 euros.\n",
              "fees.md": "Durian fee is 48 euros, the shop says on `host:8080`.\n"}

    def ask(self, reply: str) -> dict:
        self.stub.chat_reply = reply
        proc = run_cli("durian fee euros", "--docs", self.docs, "--cache-dir", self.cache,
                       "--no-embed", "--chat-model", "stub-chat-7b", "--json",
                       env={"DOCS_QA_BASE_URL": self.stub.base_url, "EMBED_MOCK": "0"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        envelope = json.loads(proc.stdout)
        self.assertEqual(envelope["answer_mode"], "assistant")
        self.assertEqual(sorted(s["document_path"] for s in envelope["sources"]), ["fees.md", "sub/my fees.md"])
        return envelope

    def test_a_backticked_or_quoted_citation_names_the_whole_path(self):
        for cite in ("`sub/my fees.md:1`", '"sub/my fees.md:1"'):
            with self.subTest(cite=cite):
                envelope = self.ask(f"Durian fee is 48 euros {cite}.")
                self.assertEqual([(c["path"], c["valid"]) for c in envelope["citations"]],
                                 [("sub/my fees.md", True)])
                self.assertEqual(envelope["answer"], 'Durian fee is 48 euros. ["sub/my fees.md":1-1]')

    def test_backticked_text_that_is_no_citation_stays_in_the_answer(self):
        envelope = self.ask("Durian fee is 48 euros, the shop says on `host:8080` [fees.md:1].")
        self.assertEqual([(c["path"], c["valid"]) for c in envelope["citations"]], [("fees.md", True)])
        self.assertEqual(envelope["answer"],
                         "Durian fee is 48 euros, the shop says on `host:8080`. [fees.md:1-1]")


if __name__ == "__main__":
    unittest.main()
