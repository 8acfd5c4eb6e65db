"""Tests of reports/make_check_sets.py: the check sets' folders built from where the software
installed its documentation (fake sources here), their questions, and the text a rendered
manual page becomes (no timing)."""

import contextlib
import gzip
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "reports"))
import make_check_sets  # noqa: E402

# the fields reports/eval_answers.py reads from a question
FIELDS = {"id", "question", "kind", "answers", "keys"}


class MakeCheckSetsTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.root = tmp.name
        self.out = os.path.join(self.root, "out")

    def write(self, rel: str, text: str) -> str:
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return path

    def run_main(self, *args: str) -> tuple[int, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = make_check_sets.main([self.out, *args])
        return code, out.getvalue()

    def test_every_sets_questions_are_what_eval_answers_reads(self):
        for name, language in make_check_sets.SETS.items():
            with open(os.path.join(make_check_sets.QUESTIONS, name + ".jsonl"), encoding="utf-8") as fh:
                questions = [json.loads(line) for line in fh]
            self.assertTrue(questions, name)
            for question in questions:
                self.assertEqual(set(question), FIELDS, question)
                answerable = question["kind"] != "none"
                self.assertEqual(bool(question["answers"]), answerable, question["id"])
                self.assertEqual(bool(question["keys"]), answerable, question["id"])
            self.assertEqual(len({q["id"] for q in questions}), len(questions), name)

    def test_pyenv_and_npm_are_copied_with_their_questions(self):
        pyenv = os.path.dirname(self.write("pyenv/README.md", "# pyenv\n"))
        self.write("pyenv/plugins/pyenv-update/README.md", "# update\n")
        self.write("pyenv/notes.txt", "not a documentation file of the set\n")
        npm = os.path.dirname(os.path.dirname(self.write("npm/commands/npm-ci.md", "---\ntitle: npm-ci\n---\n")))
        self.write("npm/using-npm/scope.md", "# scope\n")
        code, printed = self.run_main("--sets", "pyenv", "npm", "--pyenv-root", pyenv, "--npm-docs", npm)
        self.assertEqual(code, 0, printed)
        self.assertEqual(sorted(os.listdir(os.path.join(self.out, "pyenv", "en", "docs"))), ["README.md", "plugins"])
        self.assertTrue(os.path.isfile(os.path.join(self.out, "npm", "en", "docs", "using-npm", "scope.md")))
        for name in ("pyenv", "npm"):
            with open(os.path.join(self.out, name, "en", "questions.jsonl"), encoding="utf-8") as fh, \
                    open(os.path.join(make_check_sets.QUESTIONS, name + ".jsonl"), encoding="utf-8") as shipped:
                self.assertEqual(fh.read(), shipped.read())

    def test_a_missing_source_is_skipped_and_an_existing_target_untouched(self):
        code, printed = self.run_main("--sets", "npm", "--npm-docs", os.path.join(self.root, "nowhere"))
        self.assertEqual(code, 0)
        self.assertIn("npm: skipped", printed)
        self.assertFalse(os.path.exists(os.path.join(self.out, "npm")))
        os.makedirs(os.path.join(self.out, "npm"))
        code, printed = self.run_main("--sets", "npm")
        self.assertEqual(code, 2)
        self.assertIn("exists", printed)

    def test_a_rendered_manual_page_becomes_headings_and_prose(self):
        rendered = ("FREE(1)            Polecenia            FREE(1)\n\n\nNAZWA\n       free - pamięć\n\n"
                    "OPCJE\n       -h, --human\n              Wyświetlanie   czytelne.\n\n\n\n"
                    "procps-ng            2022-06-25            FREE(1)\n")
        # the running heads go, each title becomes a heading with a blank line each side (the
        # blank lines groff leaves around it kept to two in a row), the indents and the repeated
        # spaces go; the line numbers the questions cite are those of this text
        self.assertEqual(make_check_sets.man_text(rendered, "free.1"),
                         "# free.1\n\n\n## Nazwa\n\nfree - pamięć\n\n## Opcje\n\n-h, --human\n"
                         "Wyświetlanie czytelne.\n\n\n")

    @unittest.skipIf(shutil.which("groff") is None, "groff is not installed: the manual pages are not rendered")
    def test_polish_manual_pages_are_rendered_in_utf8(self):
        page = os.path.join(self.root, "man", "man1", "zz.1.gz")
        os.makedirs(os.path.dirname(page))
        with gzip.open(page, "wb") as fh:
            fh.write(".TH ZZ 1\n.SH NAZWA\nzz \\- wyświetla ilość pamięci\n".encode("utf-8"))
        code, printed = self.run_main("--sets", "plman", "--man-pl", os.path.join(self.root, "man"))
        self.assertEqual(code, 0, printed)
        with open(os.path.join(self.out, "plman", "pl", "docs", "zz.1.md"), encoding="utf-8") as fh:
            text = fh.read()
        self.assertTrue(text.startswith("# zz.1\n"), text)
        self.assertIn("## Nazwa", text)
        self.assertIn("zz - wyświetla ilość pamięci", text)


    @unittest.skipIf(shutil.which("groff") is None, "groff is not installed: the manual pages are not rendered")
    def test_the_english_set_takes_its_listed_pages_only(self):
        for name, section in (("du", "1"), ("useradd", "8"), ("zz", "1")):      # zz is not listed
            page = os.path.join(self.root, "man", "man" + section, f"{name}.{section}.gz")
            os.makedirs(os.path.dirname(page), exist_ok=True)
            with gzip.open(page, "wb") as fh:
                fh.write(f".TH {name.upper()} {section}\n.SH NAME\n{name} \\- does a thing\n".encode("utf-8"))
        code, printed = self.run_main("--sets", "enman", "--man-en", os.path.join(self.root, "man"))
        self.assertEqual(code, 0, printed)
        docs = os.path.join(self.out, "enman", "en", "docs")
        self.assertEqual(sorted(os.listdir(docs)), ["du.1.md", "useradd.8.md"])
        with open(os.path.join(docs, "du.1.md"), encoding="utf-8") as fh:
            self.assertIn("du - does a thing", fh.read())
        code, printed = self.run_main("--sets", "enman", "--man-en", os.path.join(self.root, "nowhere"))
        self.assertEqual(code, 2)       # the first run's folder is there: untouched

if __name__ == "__main__":
    unittest.main()
