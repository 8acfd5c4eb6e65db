"""Fault battery, part 1: messy docs folders and hostile questions.

Every case ends in a clear answer: an envelope with a documented status and reason,
exit code 0 (ok/no_answer), 1 (error) or 2 (usage), no traceback, and no absolute
path or exception text in the envelope.
"""
import json
import os
import sys
import time
import unittest
from unittest import mock

from helpers import LiveDocsServer, TempDirTest, assert_clean_failure_output, docs_qa, run_cli, write_files
import parallel

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def cpu_seconds() -> float:
    """Return the CPU seconds of this process and of its children that ended (the parse
    workers an index starts are stopped and waited for before it returns)."""
    import resource
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


class CliCase(TempDirTest):
    """Runs the CLI with --json and checks the universal promises of the battery."""

    def ask(self, question: str, *extra: str, docs: str | None = None, code: int = 0) -> dict:
        proc = run_cli(question, "--docs", docs or self.docs, "--cache-dir", self.cache,
                       "--json", "--no-embed", *extra)
        assert_clean_failure_output(self, proc)
        self.assertEqual(proc.returncode, code, proc.stderr)
        envelope = json.loads(proc.stdout)
        self.assertNotIn(self.tmp, proc.stdout, "an absolute path leaked into the envelope")
        if envelope["status"] == "error":
            self.assertIsNone(envelope["index_version"])
            self.assertEqual(envelope["sources"], [])
        return envelope

    def notes(self, envelope: dict) -> dict[str, str]:
        return {n["code"]: n["message"] for n in envelope.get("notes", [])}

    def paths(self, envelope: dict) -> list[str]:
        return [s["document_path"] for s in envelope["sources"]]


class DocsFolderTest(CliCase):
    def test_missing_folder_is_invalid_request_exit_1(self):
        env = self.ask("termin", docs=os.path.join(self.tmp, "nope"), code=1)
        self.assertEqual((env["status"], env["reason"], env["fields"]), ("error", "invalid_request", ["docs"]))

    def test_file_instead_of_folder_is_invalid_request_exit_1(self):
        write_files(self.tmp, {"plain.md": "# x\n"})
        env = self.ask("termin", docs=os.path.join(self.tmp, "plain.md"), code=1)
        self.assertEqual((env["reason"], env["fields"]), ("invalid_request", ["docs"]))

    def test_empty_folder_is_no_answer_exit_0(self):
        env = self.ask("termin")
        self.assertEqual((env["status"], env["reason"]), ("no_answer", "no_matching_sources"))

    def test_usage_error_exits_2_without_traceback(self):
        proc = run_cli("termin")             # --docs missing
        self.assertEqual(proc.returncode, 2)
        self.assertNotIn("Traceback", proc.stderr)

    def test_symlink_loop_and_link_out_of_root_are_not_followed(self):
        outside = os.path.join(self.tmp, "outside")
        write_files(outside, {"secret.md": "# Secret\n\nThe zebra password is kept outside the docs root.\n"})
        write_files(self.docs, {"inside.md": "# Inside\n\nA zebra lives inside the documents folder.\n"})
        os.symlink(outside, os.path.join(self.docs, "out_dir"))
        os.symlink(os.path.join(outside, "secret.md"), os.path.join(self.docs, "out_file.md"))
        os.makedirs(os.path.join(self.docs, "loop"))
        os.symlink(self.docs, os.path.join(self.docs, "loop", "again"))
        env = self.ask("zebra", "--search")
        self.assertEqual(self.paths(env), ["inside.md"])
        self.assertIn("did not follow 3 symbolic link(s)", self.notes(env)["symlink_skipped"])

    def test_unreadable_subfolder_is_skipped_with_a_note(self):
        write_files(self.docs, {"ok.md": "# Ok\n\nThe zebra document can be read fine.\n",
                                "locked/hidden.md": "# Locked\n\nzebra text nobody can read.\n"})
        locked = os.path.join(self.docs, "locked")
        if IS_ROOT:
            # root ignores permission bits: make scandir fail on that one folder instead.
            real_scandir = os.scandir

            def scandir(path):
                if os.path.abspath(path) == locked:
                    raise PermissionError(13, "Permission denied")
                return real_scandir(path)
            with mock.patch.object(docs_qa.os, "scandir", scandir):
                files, notes = docs_qa.corpus_walk(self.docs)
            self.assertEqual([f.rel_path for f in files], ["ok.md"])
            self.assertEqual([n.code for n in notes], ["unreadable_folder"])
            self.assertIn("(locked)", notes[0].message)
            return
        os.chmod(locked, 0)
        self.addCleanup(os.chmod, locked, 0o755)
        env = self.ask("zebra", "--search")
        self.assertEqual(self.paths(env), ["ok.md"])
        self.assertIn("unreadable_folder", self.notes(env))

    def test_ten_thousand_tiny_files_index_in_seconds(self):
        for group in range(20):
            os.makedirs(os.path.join(self.docs, f"d{group}"))
        for i in range(10000):
            fd = os.open(os.path.join(self.docs, f"d{i // 500}", f"f{i}.md"), os.O_WRONLY | os.O_CREAT)
            os.write(fd, f"# Note {i}\n\nmarker{i} alpha beta gamma\n".encode())
            os.close(fd)
        started = cpu_seconds()                # CPU, not wall: the load of others adds nothing
        result = docs_qa.search("marker7777", self.settings(use_embeddings=False))
        self.assertLess(cpu_seconds() - started, 30)   # the parse workers' CPU counted too
        self.assertEqual([h.chunk.label for h in result.hits], ["d15/f7777.md:1-3"])
        self.assertEqual((result.stats.new, result.stats.chunks), (10000, 10000))

    def test_fifty_megabyte_file_is_skipped_with_a_note_not_read(self):
        write_files(self.docs, {"small.md": "# Small\n\nThe zebra fits under the cap easily.\n"})
        with open(os.path.join(self.docs, "big.md"), "wb") as fh:
            block = b"zebra lorem ipsum dolor sit amet\n" * 32768       # 1 MiB
            for _ in range(50):
                fh.write(block)
        env = self.ask("zebra", "--search")
        self.assertEqual(self.paths(env), ["small.md"])
        self.assertIn("larger than the size cap (big.md)", self.notes(env)["file_too_large"])

    def test_size_cap_setting_is_respected_in_the_library(self):
        write_files(self.docs, {"a.md": "# A\n\n" + "zebra words " * 200 + "\n",
                                "b.md": "# B\n\nzebra small file with enough words\n"})
        result = docs_qa.search("zebra", self.settings(max_file_bytes=1000, use_embeddings=False))
        self.assertEqual([h.chunk.path for h in result.hits], ["b.md"])
        self.assertIn("file_too_large", [n.code for n in result.notes])

    def test_binary_and_invalid_utf8_are_skipped_utf16_and_line_endings_are_read(self):
        write_files(self.docs, {
            "image.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR zebra",
            "latin1.md": "# Zebra\n\nzebra in Latin-1: café\n".encode("latin-1"),
            "utf16.md": "# Zebra\n\nzebra stored as UTF-16 with a BOM\n".encode("utf-16"),
            "bom.md": b"\xef\xbb\xbf# Zebra\n\nzebra with a UTF-8 BOM first\n",
            "crlf.md": b"# Zebra\r\n\r\nzebra with Windows line ends here\r\n",
            "cr.md": b"# Zebra\r\rzebra with old Mac line ends only\r",
        })
        env = self.ask("zebra", "--search", "--limit", "10")
        self.assertEqual(sorted(self.paths(env)), ["bom.md", "cr.md", "crlf.md", "utf16.md"])
        self.assertIn("skipped 2 file(s)", self.notes(env)["not_text"])
        by_path = {s["document_path"]: s for s in env["sources"]}
        # "# Zebra", "", text: three lines whatever the line ends; no \r survives.
        for path in ("bom.md", "crlf.md", "cr.md", "utf16.md"):
            self.assertEqual((by_path[path]["start_line"], by_path[path]["end_line"]), (1, 3), path)
            self.assertNotIn("\r", by_path[path]["text"])
            self.assertTrue(by_path[path]["text"].startswith("# Zebra"), path)

    def test_file_name_that_is_not_utf8_is_skipped_with_a_note(self):
        write_files(self.docs, {"ok.md": "# Ok\n\nThe zebra file has a proper name.\n"})
        with open(os.path.join(os.fsencode(self.docs), b"bad\xffname.md"), "w") as fh:
            fh.write("# Bad\n\nThe zebra file has a name in Latin-1 bytes.\n")
        env = self.ask("zebra", "--search")
        self.assertEqual(self.paths(env), ["ok.md"])
        self.assertEqual(self.notes(env)["bad_name"],
                         "skipped 1 file(s) whose names are not valid UTF-8 or hold control "
                         "characters (bad\ufffdname.md)")

    def test_file_name_with_a_newline_is_skipped_with_a_note_that_keeps_to_one_line(self):
        # a citation [zwrot\nfake.md:1-3] could never be parsed back, so the file could
        # only ever be shown, never cited; it is skipped like an undecodable name
        write_files(self.docs, {"ok.md": "# Ok\n\nThe zebra file has a proper name.\n",
                                "zebra\nfake.md": "# Fake\n\nThe zebra file with a newline name.\n"})
        env = self.ask("zebra", "--search")
        self.assertEqual(self.paths(env), ["ok.md"])
        self.assertEqual(self.notes(env)["bad_name"],
                         "skipped 1 file(s) whose names are not valid UTF-8 or hold control "
                         "characters (zebra\\x0afake.md)")
        proc = run_cli("zebra", "--docs", self.docs, "--no-cache", "--search")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("fake.md", proc.stdout.replace("zebra\\x0afake.md", ""))

    def test_named_pipe_with_a_doc_name_is_skipped_not_read(self):
        write_files(self.docs, {"ok.md": "# Ok\n\nThe zebra file is a regular file.\n"})
        os.mkfifo(os.path.join(self.docs, "pipe.md"))     # opening it would block forever
        proc = run_cli("zebra", "--docs", self.docs, "--no-cache", "--json", "--search", timeout=20)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        env = json.loads(proc.stdout)
        self.assertEqual(self.paths(env), ["ok.md"])
        self.assertIn("(pipe.md)", self.notes(env)["not_regular"])

    def test_one_megabyte_single_line_is_one_chunk_with_line_1(self):
        write_files(self.docs, {"line.md": "zebra " * (1024 * 1024 // 6)})
        env = self.ask("zebra", "--search")
        self.assertEqual([(s["start_line"], s["end_line"]) for s in env["sources"]], [(1, 1)])

    def test_many_short_lines_chunk_in_linear_time(self):
        # 400 KB of one-letter lines; a size cap of 10 MiB allows 5 million of them, so
        # chunking must not be quadratic in the lines of a paragraph.
        # the last non-blank line: 200000 in the first text, 2*100000 - 1 in the second
        for text, last_line in (("a\n" * 200000, 200000), ("a\n\n" * 100000, 199999)):
            started = time.process_time()      # CPU of this process, whatever else runs
            chunks = docs_qa.chunk_text("short.md", text)
            self.assertLess(time.process_time() - started, 6.0)   # linear: ~0.7 s; quadratic would be ~13 s
            self.assertEqual(chunks[0].start_line, 1)
            self.assertEqual(chunks[-1].end_line, last_line)
            self.assertTrue(all(len(c.text) <= docs_qa.DEFAULT_CHUNK_CHARS for c in chunks))

    def test_only_front_matter_gives_no_chunks(self):
        write_files(self.docs, {"fm.md": "---\ntitle: Zebra\ntags: zebra\n---\n"})
        self.assertEqual(docs_qa.chunk_text("fm.md", "---\ntitle: Zebra\n---\n"), [])
        env = self.ask("zebra")
        self.assertEqual(env["status"], "no_answer")

    def test_only_headers_and_deep_nesting_keep_exact_lines(self):
        text = "# a\n## b\n### c\n#### d\n##### e\n###### f\n####### not a header\n"
        chunks = docs_qa.chunk_text("h.md", text)
        # all micro-sections merge into one chunk covering all 7 lines; the breadcrumb is
        # the deepest one, a..f; the 7-hash line is text, not a header.
        self.assertEqual([(c.start_line, c.end_line) for c in chunks], [(1, 7)])
        self.assertEqual(chunks[0].sections, ("a", "b", "c", "d", "e", "f"))

    def test_headers_in_fenced_or_indented_code_do_not_split(self):
        body = " ".join(["word"] * 8)
        text = (f"# Real\n\n{body}\n\n```\n# not a header in a fence\n```\n\n"
                f"    # indented code, not a header\n\n{body}\n\n## Second\n\n{body}\n")
        chunks = docs_qa.chunk_text("c.md", text)
        self.assertEqual([c.sections for c in chunks], [("Real",), ("Real", "Second")])
        self.assertEqual((chunks[0].start_line, chunks[0].end_line), (1, 11))


class NoSupportedDocumentTest(CliCase):
    """A folder of files docs-qa does not read says so, with the skipped files by type."""

    OTHERS = {"a.pdf": b"%PDF-1.4 stawka VAT", "b.PDF": b"%PDF-1.4", "report.docx": b"PK\x03\x04",
              "sub/page.html": "<p>stawka VAT 23%</p>", "sub/LICENSE": "text", ".hidden.pdf": b"%PDF"}
    EXPECTED = ("the folder holds no readable document of the supported types (.md, .markdown, .txt); "
                "skipped 5 file(s) of other types: 2 .pdf, 1 .docx, 1 .html, 1 no extension")

    def setUp(self):
        super().setUp()
        write_files(self.docs, self.OTHERS)

    def test_json_names_the_skipped_types_instead_of_a_coverage_share(self):
        env = self.ask("Jaka jest stawka VAT?")
        self.assertEqual((env["status"], env["reason"]), ("no_answer", "no_matching_sources"))
        self.assertEqual(self.notes(env)["no_documents"], self.EXPECTED)
        self.assertNotIn("no_plausible_match", self.notes(env))

    def test_text_output_of_a_real_process_says_so(self):
        proc = run_cli("Jaka jest stawka VAT?", "--docs", self.docs, "--cache-dir", self.cache,
                       "--no-embed", in_process=False)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"! no_documents: {self.EXPECTED}", proc.stdout)
        self.assertNotIn("%", proc.stdout)

    def test_index_command_says_so_too(self):
        proc = run_cli("index", "--docs", self.docs, "--cache-dir", self.cache, "--no-embed")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"! no_documents: {self.EXPECTED}", proc.stdout + proc.stderr)

    def test_http_search_carries_the_same_note(self):
        live = LiveDocsServer(self.OTHERS)
        self.addCleanup(live.close)
        status, _, body = live.request("POST", "/search", json.dumps({"query": "stawka VAT"}).encode(),
                                       {"Content-Type": "application/json"})
        env = json.loads(body)
        self.assertEqual((status, env["status"], env["sources"]), (200, "no_answer", []))
        self.assertEqual(self.notes(env)["no_documents"], self.EXPECTED)

    def test_a_folder_of_empty_documents_reports_zero_not_minus_zero_percent(self):
        write_files(self.docs, {"empty.md": "", "blank.txt": "\n\n"})
        message = self.notes(self.ask("Jaka jest stawka VAT?"))["no_plausible_match"]
        self.assertIn("holds only 0% of the question's words", message)
        self.assertIn("the folder 0%", message)


class QuestionTest(CliCase):
    def setUp(self):
        super().setUp()
        write_files(self.docs, {"jpk.md": "# JPK\n\n## Termin\n\nPlik JPK składa się do 25. dnia "
                                          "miesiąca po okresie rozliczeniowym.\n"})

    def test_empty_and_whitespace_questions_are_invalid_query(self):
        for question in ("", "   \t  ", "\x01\x02\x7f"):
            env = self.ask(question, code=1)
            self.assertEqual((env["reason"], env["fields"]), ("invalid_query", ["question"]), repr(question))

    def test_only_stop_words_or_punctuation_is_no_answer(self):
        for question in ("the and of is", "?!...;:", "czy jak jest"):
            env = self.ask(question)
            self.assertEqual((env["status"], env["reason"]), ("no_answer", "no_matching_sources"), question)

    def test_question_over_the_documented_cap_is_invalid_query(self):
        env = self.ask("termin " * (100000 // 7 + 1), code=1)
        self.assertEqual(env["reason"], "invalid_query")
        at_cap = "termin " + "x" * (docs_qa.MAX_QUESTION_CHARS - 7)
        self.assertEqual(len(at_cap), docs_qa.MAX_QUESTION_CHARS)
        self.assertEqual(self.ask(at_cap, "--search")["status"], "ok")

    def test_control_characters_and_nul_are_cleaned_in_the_library(self):
        result = docs_qa.search("\x00termin\x1b[31m JPK\x00", self.settings(use_embeddings=False))
        self.assertNotIn("\x00", result.query)
        self.assertNotIn("31m", result.query)     # a terminal's colour sequence, whole, not its ESC alone
        self.assertEqual([h.chunk.path for h in result.hits], ["jpk.md"])
        self.assertEqual(docs_qa.search("\x1b]0;JPK\x07termin", self.settings(use_embeddings=False)).query, "termin")

    def test_mixed_scripts_and_emoji_do_not_break_anything(self):
        env = self.ask("JPK 🎉 срок 期限 termin ✅", "--extractive")
        self.assertEqual(env["status"], "ok")
        self.assertIn("[jpk.md:5-5]", env["answer"])
        env = self.ask("🎉🎉🎉")
        self.assertEqual(env["status"], "no_answer")


if __name__ == "__main__":
    unittest.main()
