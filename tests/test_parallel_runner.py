"""Tests of tests/parallel.py, the worker processes inside `python3 -m unittest discover -s
tests -v`: a folder of small test modules is run by that very command, in worker processes
and in one process, and both runs must tell the same story: every test's name and outcome,
the tracebacks of failures and errors, skips with their reasons, failing subtests, a
setUpClass error, what a module printed, and a failing exit code."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))

HOOK = "import parallel\nload_tests = parallel.in_worker(__name__)\n"

MODULES = {
    # opted in: every kind of outcome
    "test_mixed.py": HOOK + '''import sys, unittest

class MixedTest(unittest.TestCase):
    def test_passes(self):
        """A one-line description."""
        self.assertTrue(True)

    def test_fails(self):
        self.assertEqual(1, 2, "marker-of-the-failure")

    def test_errors(self):
        raise KeyError("marker-of-the-error")

    @unittest.skip("marker-of-the-skip reason")
    def test_skipped(self):
        pass

    def test_subtests(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertNotEqual(i, 1, "marker-of-the-subtest")

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(1, 2)

    def test_prints(self):
        print("marker-of-the-output", file=sys.stderr)
''',
    # opted in: a class whose setUpClass fails, next to one that passes
    "test_fixture.py": HOOK + '''import unittest

class BrokenFixtureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("marker-of-setupclass")

    def test_never_runs(self):
        pass

class FineTest(unittest.TestCase):
    def test_fine(self):
        pass
''',
    # not opted in: runs in the parent, as any new module does
    "test_plain.py": '''import unittest

class PlainTest(unittest.TestCase):
    def test_plain(self):
        self.assertEqual(2, 2)
''',
}

CRASH = HOOK + '''import os, unittest

class CrashTest(unittest.TestCase):
    def test_a_before(self):
        pass

    def test_b_crash(self):
        os._exit(3)

    def test_c_after(self):
        pass
'''

STATUS = re.compile(r"^(test\w+ \([\w.]+\)|setUpClass \([\w.]+\))(?: \[.*?\])?.*? \.\.\. (.*)$", re.M)


class ParallelRunnerTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.folder, True)
        self.tests = os.path.join(self.folder, "tests")
        os.makedirs(self.tests)
        shutil.copy(os.path.join(HERE, "parallel.py"), self.tests)

    def write(self, modules: dict[str, str]) -> None:
        for name, text in modules.items():
            with open(os.path.join(self.tests, name), "w", encoding="utf-8") as fh:
                fh.write(text)

    def discover(self, processes: str, *extra: str) -> subprocess.CompletedProcess:
        """Run the README's test command on the folder with that many worker processes."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_TEST_")}
        env["DOCS_QA_TEST_PROCESSES"] = processes
        return subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests", "-v", *extra],
                              cwd=self.folder, env=env, capture_output=True, text=True, timeout=120)

    @staticmethod
    def statuses(output: str) -> dict[str, str]:
        """Return {test: its status} (but test_prints, whose output a serial run puts mid-line)."""
        return {test: status for test, status in STATUS.findall(output) if "test_prints" not in test}

    def test_workers_report_what_one_process_reports(self):
        self.write(MODULES)
        serial, parallel = self.discover("1"), self.discover("2")
        for proc in (serial, parallel):
            self.assertEqual(proc.returncode, 1, proc.stderr)
            self.assertIn("Ran 9 tests", proc.stderr)      # setUpClass failed: one never ran
            self.assertIn("FAILED (failures=2, errors=2, skipped=1, expected failures=1)", proc.stderr)
        self.assertEqual(self.statuses(parallel.stderr), self.statuses(serial.stderr))
        statuses = self.statuses(parallel.stderr)
        self.assertEqual(statuses["test_skipped (test_mixed.MixedTest.test_skipped)"],
                         "skipped 'marker-of-the-skip reason'")
        self.assertEqual(statuses["test_plain (test_plain.PlainTest.test_plain)"], "ok")
        self.assertEqual(statuses["setUpClass (test_fixture.BrokenFixtureTest)"], "ERROR")
        self.assertIn("A one-line description.", parallel.stderr)
        for marker in ("marker-of-the-failure", "marker-of-the-error", "marker-of-the-subtest",
                       "marker-of-setupclass", "marker-of-the-output", "(i=1)"):
            self.assertIn(marker, parallel.stderr)
        # a failure's traceback names the line that failed, from the worker process
        self.assertRegex(parallel.stderr, r'File ".*test_mixed\.py", line \d+, in test_fails')
        self.assertIn("in a worker process", parallel.stderr)
        self.assertNotIn("in a worker process", serial.stderr)

    def test_a_test_name_pattern_selects_in_the_workers_too(self):
        self.write(MODULES)
        proc = self.discover("2", "-k", "test_passes", "-k", "test_plain")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("Ran 2 tests", proc.stderr)

    def test_a_worker_that_dies_fails_its_test_and_those_it_did_not_run(self):
        self.write({**MODULES, "test_crash.py": CRASH})
        proc = self.discover("2")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("Ran 12 tests", proc.stderr)
        statuses = self.statuses(proc.stderr)
        self.assertEqual(statuses["test_a_before (test_crash.CrashTest.test_a_before)"], "ok")
        self.assertEqual(statuses["test_b_crash (test_crash.CrashTest.test_b_crash)"], "ERROR")
        self.assertEqual(statuses["test_c_after (test_crash.CrashTest.test_c_after)"], "ERROR")
        self.assertIn("ended (exit code 3) before the module's tests did", proc.stderr)
        self.assertRegex(proc.stderr, r"\nERROR: worker process \d\n")      # and the run says it died
        self.assertRegex(proc.stderr, r"FAILED \(failures=2, errors=5, skipped=1, expected failures=1\)")

    def test_the_workers_start_before_this_process_runs_its_first_module(self):
        # the module that runs here first waits for one a worker runs: had the workers
        # started with the first stand-in to run (test_b_worker's, after it), it would wait
        # in vain. This test holds the pipe open, so what the worker writes stays in it
        # whichever side opens it first
        fifo = os.path.join(self.folder, "started")
        os.mkfifo(fifo)
        held = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
        self.addCleanup(os.close, held)
        self.write({"test_a_first.py": f'''import os, select, unittest

class FirstTest(unittest.TestCase):
    def test_a_worker_runs_meanwhile(self):
        fd = os.open({fifo!r}, os.O_RDONLY | os.O_NONBLOCK)
        try:
            self.assertTrue(select.select([fd], [], [], 30)[0], "no worker ran meanwhile")
            self.assertEqual(os.read(fd, 1), b"x")
        finally:
            os.close(fd)
''', "test_b_worker.py": HOOK + f'''import os, unittest

class WorkerTest(unittest.TestCase):
    def test_says_it_runs(self):
        fd = os.open({fifo!r}, os.O_WRONLY)
        os.write(fd, b"x")
        os.close(fd)
'''})
        proc = self.discover("2")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("Ran 2 tests", proc.stderr)


class SlowListTest(unittest.TestCase):
    def test_every_module_of_the_slow_list_opts_in(self):
        import parallel
        self.assertTrue(parallel.SLOW_FIRST)
        for module in parallel.SLOW_FIRST:
            with self.subTest(module=module), open(os.path.join(HERE, module + ".py"), encoding="utf-8") as fh:
                self.assertIn("\nload_tests = parallel.in_worker(__name__)", fh.read())


if __name__ == "__main__":
    unittest.main()
