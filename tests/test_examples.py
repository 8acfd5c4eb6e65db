"""Every command in examples/ and the runnable commands of the README run as written
on a fresh checkout, with the exit code and envelope status that were recorded."""
import json
import os
import re
import shlex
import sys
import tempfile
import unittest

from helpers import REPO, assert_clean_failure_output
import parallel

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process

sys.path.insert(0, os.path.join(REPO, "examples"))
import regenerate  # noqa: E402


def recorded(name):
    with open(os.path.join(REPO, "examples", f"{name}.md"), encoding="utf-8") as fh:
        text = fh.read()
    code = int(re.search(r"^Exit code: (\d+)$", text, re.M).group(1))
    stdout = text.split("stdout:\n\n```\n", 1)[1].split("\n```", 1)[0]
    return code, stdout


def status_of(stdout):
    try:
        return json.loads(stdout).get("status")
    except ValueError:
        return None


class ExamplesTest(unittest.TestCase):
    """Both tests share one cache folder: the corpus is indexed once, by the first command."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.addClassCleanup(cls._tmp.cleanup)

    def test_each_example_reproduces_its_exit_code_and_status(self):
        for name, _title, command, _what in regenerate.EXAMPLES:
            with self.subTest(example=name):
                code, stdout = recorded(name)
                proc = regenerate.run(command, self._tmp.name)
                self.assertEqual(proc.returncode, code, proc.stderr)
                self.assertEqual(status_of(proc.stdout), status_of(stdout))
                assert_clean_failure_output(self, proc)

    def test_readme_commands_run_as_written(self):
        with open(os.path.join(REPO, "README.md"), encoding="utf-8") as fh:
            blocks = re.findall(r"```bash\n(.*?)```", fh.read(), re.S)
        commands = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
        runnable = [c for c in commands if c.startswith(("python3 docs_qa.py", "python3 graph_store.py"))
                    and "corpus" in c and not re.search(r"\b(DIR|FILE|question)\b", c)
                    and " serve" not in c and " mcp" not in c]
        self.assertGreaterEqual(len(runnable), 2, "the README's main commands were not found")
        for command in runnable:
            with self.subTest(command=command):
                proc = regenerate.run(command, self._tmp.name)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertTrue(proc.stdout.strip())
                assert_clean_failure_output(self, proc)


if __name__ == "__main__":
    unittest.main()
