"""Bytes and names a downloaded folder holds (issue 12, smaller defects; sections 4 and 5):
UTF-32 files, NUL-filled text, a cache folder inside the docs folder, and invisible
format characters (zero-width space, soft hyphen, ...) inside words. Through the CLI."""

from __future__ import annotations

import json
import os
import sys
import unicodedata
import unittest

from helpers import TempDirTest, run_cli, write_files

import docs_qa


def search(test: TempDirTest, query: str, *extra: str) -> dict:
    """Return the --search --json envelope of query over test.docs."""
    proc = run_cli(query, "--docs", test.docs, "--cache-dir", test.cache, "--search", "--json", *extra)
    test.assertEqual(proc.returncode, 0, proc.stderr)
    test.assertNotIn("Traceback", proc.stderr)
    return json.loads(proc.stdout)


def notes(envelope: dict) -> dict[str, str]:
    return {n["code"]: n["message"] for n in envelope["notes"]}


class Utf32Test(TempDirTest):
    def test_utf32_files_with_a_bom_are_read_as_utf32(self):
        text = "# Zebra\n\nPasiasta zebra żyje na sawannie.\n"
        write_files(self.docs, {"le.md": text.encode("utf-32"),            # BOM + little endian
                                "be.md": b"\x00\x00\xfe\xff" + text.encode("utf-32-be")})
        envelope = search(self, "pasiasta zebra sawanna")
        paths = sorted(s["document_path"] for s in envelope["sources"])
        self.assertEqual(paths, ["be.md", "le.md"])
        for source in envelope["sources"]:
            self.assertIn("Pasiasta zebra", source["text"])
        self.assertNotIn("not_text", notes(envelope))

    def test_a_broken_utf32_file_is_skipped_with_a_note(self):
        write_files(self.docs, {"ok.md": "zebra here\n",
                                "bad.md": b"\xff\xfe\x00\x00" + b"\xff\xff\xff\x7f" * 3})
        envelope = search(self, "zebra")
        self.assertIn("bad.md", notes(envelope).get("not_text", ""))


class NulTextTest(TempDirTest):
    def test_nul_filled_text_is_skipped_as_not_text(self):
        head = "# Log\n\n" + "zebra line of text\n" * 600          # > 8 KiB before the NULs
        write_files(self.docs, {"ok.md": "# Ok\n\nzebra in a clean file\n",
                                "padded.md": head.encode() + b"\0" * 4096,
                                "wide.txt": "zebra\0\0\0\0 w UTF-16\n".encode("utf-16")})
        envelope = search(self, "zebra")
        self.assertEqual([s["document_path"] for s in envelope["sources"]], ["ok.md"])
        skipped = notes(envelope).get("not_text", "")
        self.assertIn("padded.md", skipped)
        self.assertIn("wide.txt", skipped)


class CacheInsideDocsTest(TempDirTest):
    def test_a_cache_folder_inside_the_docs_folder_is_skipped_with_a_note(self):
        self.cache = os.path.join(self.docs, "cache")
        write_files(self.docs, {"a.md": "zebra outside\n", "cache/inside.md": "zebra inside\n"})
        envelope = search(self, "zebra")
        self.assertEqual([s["document_path"] for s in envelope["sources"]], ["a.md"])
        self.assertIn("cache", notes(envelope).get("cache_dir_skipped", ""))
        again = search(self, "zebra")                    # answered from the cache: still said
        self.assertIn("cache_dir_skipped", notes(again))

    def test_a_cache_folder_outside_gives_no_such_note(self):
        write_files(self.docs, {"a.md": "zebra outside\n"})
        self.assertNotIn("cache_dir_skipped", notes(search(self, "zebra")))


class FormatCharactersTest(TempDirTest):
    def test_text_fold_drops_every_format_character(self):
        format_chars = [chr(c) for c in range(sys.maxunicode + 1)
                        if unicodedata.category(chr(c)) == "Cf"]
        self.assertGreater(len(format_chars), 100)
        kept = [f"U+{ord(c):04X}" for c in format_chars if docs_qa.text_fold(f"jp{c}k") != "jpk"]
        self.assertEqual(kept, [])
        # beside a character beyond U+FFFF (an emoji, kept), which takes text_fold's other class
        kept = [f"U+{ord(c):04X}" for c in format_chars
                if docs_qa.text_fold(f"\U0001F600 J\u00e9{c}k") != "\U0001F600 jek"]
        self.assertEqual(kept, [])

    def test_a_zero_width_space_in_the_question_does_not_split_the_word(self):
        write_files(self.docs, {"jpk.md": "# JPK\n\nPlik JPK składa się do 25. dnia miesiąca.\n",
                                "other.md": "# PK\n\nJ oraz PK to inne litery w innym pliku.\n"})
        for question in ("J\u200bPK", "J\u200cPK", "J\u200dPK", "J\u2060PK", "J\ufeffPK", "J\u00adPK"):
            with self.subTest(question=ascii(question)):
                envelope = search(self, question)
                self.assertEqual(envelope["sources"][0]["document_path"], "jpk.md")

    def test_format_characters_inside_document_words_are_ignored(self):
        write_files(self.docs, {"a.md": "# Podatek\n\nPlik J\u200bPK i po\u00addatek od nieruchomości.\n",
                                "b.md": "# Inne\n\nZupełnie inny tekst o czymś innym.\n"})
        for question in ("JPK", "podatek"):
            with self.subTest(question=question):
                envelope = search(self, question)
                self.assertEqual(envelope["sources"][0]["document_path"], "a.md")


# Invisible characters a copied question may carry inside a word (issue 30, item 8).
INVISIBLE = ("\u200b", "\u00ad", "\u200c", "\u200d", "\u2060", "\ufeff")


def envelope_without_query(proc) -> dict:
    """Return a CLI run's --json envelope without the echoed question."""
    envelope = json.loads(proc.stdout)
    envelope.pop("query", None)
    return envelope


class InvisibleCharactersInQuestionsTest(TempDirTest):
    """The same question with a zero-width space or a soft hyphen inside a word gets the
    same envelope (answer, sources, notes) from the CLI, for documents and for the graph."""

    def test_a_documents_answer_is_the_same_with_a_format_character_inside_a_word(self):
        write_files(self.docs, {"jpk.md": "# JPK\n\nPlik JPK składa się do 25. dnia miesiąca.\n",
                                "kasy.md": "# Kasy\n\nKasa fiskalna online wysyła dane do CRK.\n"})

        def ask(question: str) -> dict:
            proc = run_cli(question, "--docs", self.docs, "--cache-dir", self.cache,
                           "--extractive", "--json")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            return envelope_without_query(proc)
        plain = ask("do kiedy składam plik JPK")
        self.assertEqual(plain["sources"][0]["document_path"], "jpk.md")
        for char in INVISIBLE:
            with self.subTest(char=ascii(char)):
                self.assertEqual(ask(f"do kie{char}dy skła{char}dam plik JPK"), plain)

    def test_a_graph_answer_is_the_same_with_a_format_character_inside_a_word(self):
        graph = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "corpus", "graph.json")

        def ask(question: str) -> dict:
            proc = run_cli("graph_store.py", question, "--graph", graph, "--json")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            return envelope_without_query(proc)
        for question, split in (("Koľko osôb má prácu v roku 2024?", ("Ko", "ľko")),
                                ("Aký názov práce má Ján Holp?", ("Ho", "lp"))):
            plain = ask(question)
            self.assertEqual(plain["status"], "ok")
            for char in INVISIBLE:
                with self.subTest(question=question, char=ascii(char)):
                    self.assertEqual(ask(question.replace("".join(split), char.join(split))), plain)


if __name__ == "__main__":
    unittest.main()
