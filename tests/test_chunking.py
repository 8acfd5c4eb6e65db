"""Chunking: exact line ranges, headers, fences, front matter, bounded splits, merging."""
import unittest

from helpers import docs_qa


def file_lines(text):
    return docs_qa._split_lines(text)


class ChunkingTest(unittest.TestCase):
    def assert_exact(self, text, chunks):
        lines = file_lines(text)
        last_end = 0
        for chunk in chunks:
            self.assertEqual(chunk.text, "\n".join(lines[chunk.start_line - 1:chunk.end_line]))
            self.assertGreater(chunk.start_line, last_end, "chunks overlap or go backwards")
            last_end = chunk.end_line

    def test_headers_split_with_breadcrumbs_and_exact_lines(self):
        text = ("# Podatki\n\nWstęp o podatkach dla firm w Polsce i terminach.\n\n"
                "## VAT\n\nStawka podstawowa VAT wynosi 23 procent dla większości towarów.\n\n"
                "### Korekta\n\nFaktura korygująca zmienia podstawę opodatkowania po wystawieniu.\n")
        chunks = docs_qa.chunk_text("a.md", text)
        self.assert_exact(text, chunks)
        self.assertEqual([(c.start_line, c.end_line) for c in chunks], [(1, 3), (5, 7), (9, 11)])
        self.assertEqual(chunks[2].sections, ("Podatki", "VAT", "Korekta"))

    def test_header_inside_fenced_code_does_not_split(self):
        text = ("# Skrypt\n\nPrzykład skryptu do wysyłki plików JPK na serwer:\n\n```bash\n"
                "# to jest komentarz, nie nagłówek\necho wysyłka\n```\n\nKoniec opisu skryptu tutaj.\n")
        chunks = docs_qa.chunk_text("s.md", text)
        self.assertEqual(len(chunks), 1)
        self.assertEqual((chunks[0].start_line, chunks[0].end_line), (1, 10))
        self.assert_exact(text, chunks)

    def test_setext_headings_split_like_hash_headings(self):
        # CommonMark's 'Title' over '=====' (level 1) or '-----' (level 2), with CRLF line ends;
        # an underline in a fence, a rule after a blank line and front matter are no headings
        text = ("---\r\nsource: x\r\n---\r\nPodatki firmy\r\n=============\r\n\r\n"
                "Wstęp o podatkach dla firm w Polsce i terminach ich płacenia.\r\n\r\n"
                "Faktury VAT\r\n-----------\r\n\r\nFaktura korygująca zmienia podstawę opodatkowania.\r\n\r\n"
                "```\r\nPost\r\n----\r\n```\r\n\r\n---\r\n\r\nKoniec rozdziału o fakturach i korektach.\r\n")
        parsed = docs_qa.chunk_parse("s.md", text)
        self.assert_exact(text, parsed.chunks)
        self.assertEqual([(c.start_line, c.end_line, c.sections) for c in parsed.chunks],
                         [(4, 7, ("Podatki firmy",)), (9, 21, ("Podatki firmy", "Faktury VAT"))])
        self.assertEqual(parsed.title, "Podatki firmy")

    def test_indented_hash_is_not_a_header(self):
        text = "# Tytuł sekcji pierwszej tutaj\n\nTekst akapitu pierwszego tutaj.\n\n    # kod wcięty w akapicie\n"
        self.assertEqual(len(docs_qa.chunk_text("i.md", text)), 1)

    def test_front_matter_is_skipped_and_gives_the_title(self):
        text = "---\ntitle: Moja strona\nurl: https://example.org/x\n---\nTreść dokumentu ma kilka słów więcej tutaj.\n"
        chunks = docs_qa.chunk_text("f.md", text)
        self.assertEqual((chunks[0].start_line, chunks[0].end_line), (5, 5))
        self.assertEqual(docs_qa._document_title(text), ("Moja strona", "https://example.org/x"))

    def test_headerless_text_is_split_on_blank_lines_into_bounded_chunks(self):
        paragraphs = [f"Akapit numer {i} opisuje zasady rozliczania podatku w firmie." for i in range(12)]
        text = "\n\n".join(paragraphs) + "\n"
        chunks = docs_qa.chunk_text("p.txt", text, max_chars=150)
        self.assert_exact(text, chunks)
        self.assertGreater(len(chunks), 3)
        self.assertTrue(all(len(c.text) <= 150 for c in chunks))
        covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
        for n, line in enumerate(file_lines(text), 1):
            if line.strip():
                self.assertIn(n, covered)

    def test_lone_header_merges_into_next_section_covering_exactly_its_lines(self):
        text = "# Tytuł\n\n## Sekcja\n\nTreść sekcji zawiera wystarczająco dużo słów do osobnego fragmentu.\n"
        chunks = docs_qa.chunk_text("m.md", text)
        self.assertEqual([(c.start_line, c.end_line) for c in chunks], [(1, 5)])
        self.assertEqual(chunks[0].sections, ("Tytuł", "Sekcja"))
        self.assert_exact(text, chunks)

    def test_crlf_and_lone_cr_count_as_line_breaks(self):
        text = "# A\r\n\r\nPierwsza linia tekstu z kilkoma słowami.\rDruga linia tekstu też ma słowa.\r\n"
        chunks = docs_qa.chunk_text("c.md", text)
        self.assertEqual((chunks[0].start_line, chunks[0].end_line), (1, 4))
        self.assertEqual(chunks[0].text.split("\n")[3], "Druga linia tekstu też ma słowa.")


class ChunkParseTest(unittest.TestCase):
    """chunk_parse (the indexer's one pass) gives what chunk_text, _document_title and a
    per-chunk heading scan give apart."""

    TEXTS = [
        "---\ntitle: Z front matter\nurl: https://example.org/a\n---\n# Nagłówek\n\nTreść strony o podatkach.\n",
        "# Pierwszy\n\nAkapit pierwszy ma kilka słów w sobie.\n\n# Drugi\n\nAkapit drugi też ma kilka słów.\n",
        # a fenced block longer than a chunk: its lines are split across chunks, and a
        # '# comment' inside it looks like a title to a chunk that starts inside the fence
        "# Skrypt\n\n```bash\n" + "".join(f"# krok {i}\necho linia numer {i} z kilkoma slowami\n"
                                          for i in range(60)) + "```\n\n# Koniec\n\nOstatni akapit tekstu.\n",
        "Bez nagłówków.\n\nDrugi akapit bez nagłówka, tylko tekst.\n",
    ]

    def test_same_chunks_title_and_heading_weights(self):
        tokenizer = docs_qa.Tokenizer()
        for text in self.TEXTS:
            for max_chars in (120, docs_qa.DEFAULT_CHUNK_CHARS):
                parsed = docs_qa.chunk_parse("p.md", text, max_chars)
                self.assertEqual(parsed.chunks, docs_qa.chunk_text("p.md", text, max_chars))
                self.assertEqual((parsed.title, parsed.url), docs_qa._document_title(text))
                for chunk, heads in zip(parsed.chunks, parsed.heads):
                    self.assertEqual(docs_qa.bm25_term_counts(chunk.text, tokenizer, heads),
                                     docs_qa.bm25_term_counts(chunk.text, tokenizer), chunk.label)

    def test_a_chunk_starting_inside_a_fence_scans_itself(self):
        parsed = docs_qa.chunk_parse("p.md", self.TEXTS[2], 120)
        self.assertIn(None, parsed.heads)


if __name__ == "__main__":
    unittest.main()
