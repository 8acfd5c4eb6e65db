"""Tests of the test helpers themselves: the clean-output check fails on what it promises
to catch, and a CLI run in this process gives what the same run in a real process gives."""
import os
import subprocess
import sys
import unittest

from helpers import (REPO, TAX_CORPUS, TempDirTest, assert_clean_failure_output, run_cli,
                     write_files)


def completed(stdout: str = "", stderr: str = "", args=("docs_qa.main",)) -> subprocess.CompletedProcess:
    return subprocess.CompletedProcess(list(args), 1, stdout, stderr)


class CleanOutputCheckTest(unittest.TestCase):
    def assert_caught(self, proc: subprocess.CompletedProcess) -> None:
        with self.assertRaises(AssertionError):
            assert_clean_failure_output(self, proc)

    def test_a_traceback_exception_text_or_machine_path_is_caught(self):
        self.assert_caught(completed(stderr="Traceback (most recent call last):\n  x\n"))
        self.assert_caught(completed(stderr='  File "docs_qa.py", line 3, in main\n'))
        self.assert_caught(completed(stdout="docs_qa: error: KeyError: 'limit'\n"))
        self.assert_caught(completed(stderr="docs_qa: error: [Errno 13] Permission denied\n"))
        self.assert_caught(completed(stderr="<docs_qa.Settings object at 0x7f00aa>\n"))
        self.assert_caught(completed(stderr=f"docs_qa: error: bad file {REPO}/docs_qa.py\n"))
        self.assert_caught(completed(stdout=f'{{"path": "{sys.prefix}/lib/x.py"}}\n'))
        import tempfile
        self.assert_caught(completed(stderr=f"cannot read {tempfile.gettempdir()}/other/file\n"))

    def test_the_path_the_command_line_named_may_be_named_back(self):
        import tempfile
        missing = os.path.join(tempfile.gettempdir(), "no-such-docs")
        assert_clean_failure_output(self, completed(
            stderr=f"docs_qa: error: docs folder does not exist: {missing}\n",
            args=("docs_qa.main", "q", "--docs", missing)))
        assert_clean_failure_output(self, completed(
            stderr="docs_qa: error: internal error (KeyError); run with --debug for the traceback\n"))


class InProcessRunTest(TempDirTest):
    """run_cli runs a question in this process; the same run as a real process agrees."""

    def test_in_process_and_subprocess_runs_agree(self):
        write_files(self.docs, TAX_CORPUS)
        cases = [("do kiedy składam JPK", "--docs", self.docs, "--no-cache", "--json", "--extractive"),
                 ("faktura korygująca", "--docs", self.docs, "--no-cache", "--extractive"),
                 ("termin", "--docs", os.path.join(self.tmp, "nope"), "--json"),
                 ("termin", "--docs", self.docs, "--limit", "zero"),
                 ("index", "--docs", self.docs, "--no-cache")]
        graph = os.path.join(REPO, "corpus", "graph.json")
        cases += [("graph_store.py", "Kto je Peter?", "--graph", graph),
                  ("graph_store.py", "Kto?", "--graph", os.path.join(self.tmp, "nope.json"), "--json")]
        for args in cases:
            with self.subTest(args=args[:2]):
                inside = run_cli(*args)
                outside = run_cli(*args, in_process=False)
                self.assertIn(inside.args[0], ("docs_qa.main", "graph_store.main"))   # in-process
                self.assertEqual((inside.returncode, inside.stdout, inside.stderr),
                                 (outside.returncode, outside.stdout, outside.stderr))

    def test_an_environment_a_process_would_see_differently_runs_a_process(self):
        proc = run_cli("--help", env={"HOME": self.tmp})
        self.assertNotEqual(proc.args[0], "docs_qa.main")
        self.assertEqual(proc.returncode, 0)


if __name__ == "__main__":
    unittest.main()
