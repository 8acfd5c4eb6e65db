"""Seeded random fuzz of the chunker and the citation parser, checked by invariants.

Runs for DOCS_QA_FUZZ_SECONDS in total (default 2 s, split between the two targets);
set it higher for a long run, and DOCS_QA_FUZZ_SEED to replay one seed. A failure
message names the seed and the input, so any failure can be replayed exactly.

"Chunks tile the file's lines", precisely: the file's lines are its text split on
\\r\\n, \\r or \\n (a final line break does not open an empty line); then
  * chunks come in order and do not overlap (each starts after the previous ends),
  * 1 <= start_line <= end_line <= number of lines,
  * chunk.text == "\\n".join(lines[start_line-1:end_line]) exactly,
  * every non-blank line outside the YAML front matter lies in exactly one chunk.
"""
import os
import random
import re
import time
import unittest

from helpers import docs_qa

FUZZ_SECONDS = float(os.environ.get("DOCS_QA_FUZZ_SECONDS") or 2.0)
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
    def run_for(self, seconds: float, one_case) -> int:
        """Run one_case(rng, where) on seeds SEED, SEED+1, ... until seconds pass; return count."""
        deadline = time.monotonic() + seconds
        seed = SEED
        while True:
            one_case(random.Random(seed), f"seed={seed}")
            seed += 1
            if time.monotonic() >= deadline:
                return seed - SEED

    def test_chunks_tile_the_files_lines(self):
        def case(rng, where):
            text = random_document(rng)
            max_chars = rng.choice([30, 200, docs_qa.DEFAULT_CHUNK_CHARS])
            check_tiling(self, text, max_chars, f"{where} max_chars={max_chars} text={text!r}")
        self.assertGreater(self.run_for(FUZZ_SECONDS / 2, case), 10)

    def test_citation_parser_never_raises_and_valid_means_inside_a_fragment(self):
        def case(rng, where):
            text = "".join(rng.choice(CITE_ATOMS) for _ in range(rng.randint(0, 80)))
            check_citations(self, text, f"{where} text={text!r}")
            answer_text, citations, _, _ = docs_qa.answer_check(text, _result(CITE_CHUNKS), None)
            presented = docs_qa.citation_validate(docs_qa.citation_parse(answer_text), list(CITE_CHUNKS))
            for cite in presented:            # what is presented re-validates as valid
                self.assertTrue(cite.valid, f"{where} presented={answer_text!r}")
        self.assertGreater(self.run_for(FUZZ_SECONDS / 2, case), 10)

    def test_known_tricky_documents_tile(self):
        for text in ["", "\n", "\r\n\r\n", "---\n", "---\n---\n", "---\ntitle: x\n---\n", "# a\r# b\r",
                     "```\n# x\n", "    # x\n# y\n", "x" * 5000, "a\rb\nc\r\nd", "\ufeff# t\n"]:
            for max_chars in (10, docs_qa.DEFAULT_CHUNK_CHARS):
                check_tiling(self, text, max_chars, repr(text))


def _result(chunks):
    hits = [docs_qa.Hit(c, 1.0) for c in chunks]
    return docs_qa.SearchResult("q", hits, "bm25", None, [], {}, [], docs_qa.IndexStats())


if __name__ == "__main__":
    unittest.main()
