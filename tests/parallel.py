"""Runs the slow test modules in worker processes while this process runs the others, all
inside the README's one command, `EMBED_MOCK=1 python3 -m unittest discover -s tests -v`
(standard library only; this file is no test module, so discovery does not load it).

A slow module opts in with one line, `load_tests = parallel.in_worker(__name__)`: unittest's
load_tests protocol hands over the module's tests, and a stand-in suite takes their place.
Once discovery has loaded every module with the line (or, should one fail to import, when
the first stand-in runs), the worker processes start; each claims the next module not yet
claimed, slowest first (SLOW_FIRST), runs exactly the tests this process loaded (so -k
still selects) and writes what its result saw to a file. Each stand-in then reports its
module into this run's result as if the tests had run here: every test's name and outcome
under -v, failures and errors with the worker's traceback, skips with their reasons,
failing subtests, errors of setUpClass and setUpModule, and whatever the module printed. A
worker that dies, or leaves a test unreported, fails those tests; one that exits non-zero
fails the run. A stand-in whose module is not finished yet is reported by the last one, so
this process runs the other modules meanwhile. A module without the line (any new module)
runs here, as before.

DOCS_QA_TEST_PROCESSES=N runs the modules that opt in in N worker processes (0 or 1: all in
this process, as does a pattern that matches one file, -p test_x.py)."""

from __future__ import annotations

import atexit
import fnmatch
import importlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import warnings

HOOK = "\nload_tests = parallel.in_worker(__name__)"   # the line a module opts in with
PROCESSES_ENV = "DOCS_QA_TEST_PROCESSES"
WORKER_ENV = "DOCS_QA_TEST_WORKER"      # set in a worker: there a module's tests run as they are
WORKERS = 4                             # by default: the tests mostly wait (on servers, children);
                                        # with this process, five run at once
HERE = os.path.dirname(os.path.abspath(__file__))
# The modules that opt in, slowest first (wall seconds of each alone, 2 cores, load 8-9), so
# the longest start at once; a module that opts in and is not listed comes after these.
SLOW_FIRST = ("test_freshness",           # 13.5 (a serve process per test, each change waited for)
              "test_chat_stream",         # 11.7 (1 s of CPU: it waits on timeouts)
              "test_concurrent_edits",    # 10.1
              "test_mcp_concurrency",     # 9.5
              "test_cli",                 # 7.2
              "test_index_workers",       # 6.2
              "test_faults_cache",        # 6.2
              "test_examples",            # 6.2
              "test_untrusted_git",       # 5.9
              "test_faults_corpus",       # 5.9
              "test_page_browser",        # 5.8 (one headless Chromium for the module)
              "test_http_hardening",      # 5.4
              "test_faults_backend",      # 5.4
              "test_http",                # 3.4
              "test_cache",               # 3.1
              "test_embeddings")          # 2.8
OUTPUT_TAIL = 4000                      # characters of a dead worker's output shown


class FailedInWorker(AssertionError):
    """A test's failure, carrying the traceback its worker process formatted."""


class ErrorInWorker(Exception):
    """A test's error (or its worker's end), carrying the worker's traceback or account."""


def in_worker(module: str):
    """Return the load_tests function of the named test module: in the whole suite its
    tests run in a worker process; alone (or in a worker) they run as they are."""
    def load_tests(loader: unittest.TestLoader, tests: unittest.TestSuite, pattern: str | None):
        if os.environ.get(WORKER_ENV) or not _runs_parallel(pattern):
            return tests
        pool, cases = _Pool.shared(), list(_cases(tests))
        suite = pool.add(module, tests, cases) if cases else tests
        pool.loaded(module, pattern)
        return suite
    return load_tests


def _opted_in(pattern: str) -> set[str]:
    """Return the names of the test modules matching pattern that opt in (HOOK)."""
    names = set()
    for name in os.listdir(HERE):
        if name.endswith(".py") and fnmatch.fnmatch(name, pattern):
            try:
                with open(os.path.join(HERE, name), encoding="utf-8") as fh:
                    if HOOK in fh.read():
                        names.add(name[:-3])
            except (OSError, UnicodeDecodeError):
                pass                             # the loader reports what it cannot import
    return names


def _cases(suite: unittest.TestSuite):
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            yield from _cases(test)
        else:
            yield test


def _processes() -> int:
    text = os.environ.get(PROCESSES_ENV, "").strip()
    return int(text) if text.isdigit() else WORKERS


def _runs_parallel(pattern: str | None) -> bool:
    """Return whether this loading discovers more than one test file with workers allowed
    (on POSIX: the workers are read with select() on pipes)."""
    if pattern is None or _processes() <= 1 or os.name != "posix":
        return False
    return sum(fnmatch.fnmatch(name, pattern) for name in os.listdir(HERE) if name.endswith(".py")) > 1


class _Named:
    """Stands for a test this process has no object of: a class or module fixture's error,
    a subtest, a test the worker ran under another name."""

    failureException = AssertionError

    def __init__(self, test_id: str, text: str | None = None, description: str | None = None) -> None:
        self._id, self._text, self._description = test_id, text or test_id, description

    def id(self) -> str:
        return self._id

    def __str__(self) -> str:
        return self._text

    def shortDescription(self) -> str | None:
        return self._description


class _NamedSubTest(_Named, unittest.case._SubTest):
    """Stands for a subtest of a test (a result prints it indented, as it prints its own)."""

    def __init__(self, test, sub_id: str, text: str, description: str | None) -> None:
        unittest.case._SubTest.__init__(self, test, text, {})
        _Named.__init__(self, sub_id, text, description)


class _WorkerSuite(unittest.TestSuite):
    """A module's tests, run by a worker process and reported here."""

    def __init__(self, pool: "_Pool", module: str, tests: unittest.TestSuite, cases: list) -> None:
        super().__init__([tests])
        self.pool, self.module, self.cases = pool, module, cases

    def run(self, result: unittest.TestResult, debug: bool = False) -> unittest.TestResult:
        self.pool.report(self, result)
        return result

    def debug(self) -> None:
        raise RuntimeError("a worker's module cannot be debugged in this process: "
                           f"run it alone with -p {self.module}.py")


class _Pool:
    """The worker processes of one run and the files they write in its folder."""

    _shared: "_Pool | None" = None

    @classmethod
    def shared(cls) -> "_Pool":
        if cls._shared is None:
            cls._shared = cls()
        return cls._shared

    def __init__(self) -> None:
        self.suites: list[_WorkerSuite] = []     # in the order unittest loaded them
        self.deferred: list[_WorkerSuite] = []
        self.procs: list[subprocess.Popen] = []
        self.exit_codes: dict[int, int] = {}     # pid -> exit code of the workers that ended
        self.done: set[str] = set()
        self.expected: set[str] | None = None    # the modules that opt in, and those loaded
        self.seen: set[str] = set()
        self.folder: str | None = None
        self._lines: dict[int, bytes] = {}

    def add(self, module: str, tests: unittest.TestSuite, cases: list) -> _WorkerSuite:
        suite = _WorkerSuite(self, module, tests, cases)
        self.suites.append(suite)
        return suite

    def loaded(self, module: str, pattern: str) -> None:
        """Note that a module that opts in was loaded; once all were, start the workers, so
        they run while discovery ends and this process runs its first modules (else the
        first stand-in to run starts them: a module that failed to import never loads)."""
        if self.expected is None:
            self.expected = _opted_in(pattern)
        self.seen.add(module)
        if self.expected <= self.seen:
            self.start()

    # -- the workers ---------------------------------------------------------------
    def start(self) -> None:
        if self.folder is not None:
            return
        self.folder = tempfile.mkdtemp(prefix="docs-qa-tests-")
        atexit.register(self.close)
        modules = [s.module for s in self.suites]
        order = sorted(modules, key=lambda m: (SLOW_FIRST.index(m) if m in SLOW_FIRST else len(SLOW_FIRST),
                                               modules.index(m)))
        with open(os.path.join(self.folder, "plan.json"), "w", encoding="utf-8") as fh:
            json.dump({"order": order, "ids": {s.module: [c.id() for c in s.cases] for s in self.suites}}, fh)
        code = "import sys; sys.path.insert(0, sys.argv[1]); import parallel; parallel.worker_main(sys.argv[2])"
        env = dict(os.environ, **{WORKER_ENV: "1"})
        for number in range(min(_processes(), len(order))):
            with open(os.path.join(self.folder, f"worker{number}.err"), "wb") as err:
                self.procs.append(subprocess.Popen(
                    [sys.executable, *(f"-W{w}" for w in sys.warnoptions), "-c", code, HERE, self.folder],
                    env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err))

    def _read(self, timeout_s: float | None) -> None:
        """Take in the modules the workers finished (one name a line on their stdout) and
        the end of workers, waiting up to timeout_s for the first of either."""
        running = {p.stdout.fileno(): p for p in self.procs if p.pid not in self.exit_codes}
        if not running:
            return
        ready = select.select(list(running), [], [], timeout_s)[0]
        for fd in ready:
            data = os.read(fd, 65536)
            if not data:
                proc = running[fd]
                self.exit_codes[proc.pid] = proc.wait()
                proc.stdout.close()
                continue
            *lines, self._lines[fd] = (self._lines.get(fd, b"") + data).split(b"\n")
            self.done.update(line.decode() for line in lines)

    def _finished(self, module: str) -> bool:
        """Return whether the module's results are all in: done, or its worker ended."""
        if module in self.done:
            return True
        if len(self.exit_codes) == len(self.procs):
            return True
        try:
            with open(os.path.join(self.folder, module + ".claim"), encoding="ascii") as fh:
                pid = int(fh.read() or 0)
        except (OSError, ValueError):
            return False
        return pid in self.exit_codes

    def report(self, suite: _WorkerSuite, result: unittest.TestResult) -> None:
        """Report the suite's module into result now if it is finished; else leave it to
        the last suite, which reports every module left as each finishes."""
        self.start()
        self._read(0)
        if suite is not self.suites[-1]:
            if self._finished(suite.module):
                self._replay(suite, result)
            else:
                self.deferred.append(suite)
            return
        waiting = self.deferred + [suite]
        while waiting and not result.shouldStop:
            ready = [s for s in waiting if self._finished(s.module)]
            if not ready:
                self._read(None)
                continue
            for each in ready:
                self._replay(each, result)
                waiting.remove(each)
        if result.shouldStop:                    # failfast or Ctrl-C: the workers' rest is not wanted
            self.close()
        else:
            self._end(result)

    def _end(self, result: unittest.TestResult) -> None:
        """Wait for the workers (each ends when no module is left to claim); a worker that
        exits non-zero is an error of the run."""
        while len(self.exit_codes) < len(self.procs):
            self._read(None)
        for number, proc in enumerate(self.procs):
            if proc.returncode:
                output = _tail(os.path.join(self.folder, f"worker{number}.err"))
                result.addError(_Named(f"worker process {number}"), _err(
                    ErrorInWorker, f"the worker process ended with exit code {proc.returncode}:\n{output}"))
        self.close()

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout and not proc.stdout.closed:
                proc.stdout.close()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    # -- a module's results ----------------------------------------------------------
    def _replay(self, suite: _WorkerSuite, result: unittest.TestResult) -> None:
        """Report into result what the worker's result saw of the suite's module."""
        path = os.path.join(self.folder, suite.module)
        by_id = {case.id(): case for case in suite.cases}
        seen, current, ended = set(), None, False
        for event in _events(path + ".events"):
            if result.shouldStop:
                return
            kind = event["event"]
            if kind == "end":
                ended = True
                continue
            test = by_id.get(event["id"]) or _Named(event["id"], event.get("str"), event.get("description"))
            if kind == "start":
                seen.add(event["id"])
                current = test
                result.startTest(test)
            elif kind == "stop":
                current = None
                result.stopTest(test)
            elif kind == "success":
                result.addSuccess(test)
            elif kind == "failure":
                result.addFailure(test, _err(FailedInWorker, event["text"]))
            elif kind == "error":
                result.addError(test, _err(ErrorInWorker, event["text"]))
            elif kind == "skip":
                result.addSkip(test, event["reason"])
            elif kind == "expected_failure":
                result.addExpectedFailure(test, _err(FailedInWorker, event["text"]))
            elif kind == "unexpected_success":
                result.addUnexpectedSuccess(test)
            elif kind in ("subtest_failure", "subtest_error"):
                subtest = _NamedSubTest(test, event["sub_id"], event["sub_str"], event.get("sub_description"))
                result.addSubTest(test, subtest, _err(
                    FailedInWorker if kind == "subtest_failure" else ErrorInWorker, event["text"]))
            elif kind == "duration" and hasattr(result, "addDuration"):
                result.addDuration(test, event["elapsed"])
        output = _tail(path + ".out", None)
        if not ended:      # (if it did, it reported all: what it did not start, a fixture's failure skipped)
            claim = _tail(path + ".claim").strip()
            number = next((n for n, p in enumerate(self.procs) if str(p.pid) == claim), None)
            code = None if number is None else self.procs[number].returncode
            errors = "" if number is None else _tail(os.path.join(self.folder, f"worker{number}.err"))
            why = (f"the worker process running {suite.module} ended (exit code {code}) before "
                   f"the module's tests did; the end of its output:\n{output[-OUTPUT_TAIL:]}{errors}")
            if current is not None:
                result.addError(current, _err(ErrorInWorker, why))
                result.stopTest(current)
            for case in suite.cases:
                if case.id() not in seen and not result.shouldStop:
                    result.startTest(case)
                    result.addError(case, _err(ErrorInWorker, why))
                    result.stopTest(case)
        if output:                               # what the module printed, as a serial run shows it
            sys.stderr.write(output)
            sys.stderr.flush()


def _err(kind: type, text: str) -> tuple:
    """Return an exc_info triple a result formats as the worker's text."""
    return kind, kind("in a worker process:\n" + text.rstrip("\n")), None


def _tail(path: str, limit: int | None = OUTPUT_TAIL) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return ""
    return text if limit is None else text[-limit:]


def _events(path: str):
    """Yield the events of a results file; a line a dying worker left half written ends them."""
    try:
        fh = open(path, encoding="utf-8")
    except OSError:
        return
    with fh:
        for line in fh:
            try:
                yield json.loads(line)
            except ValueError:
                return


# -- in a worker process -------------------------------------------------------------------
class _EventResult(unittest.TestResult):
    """A result that writes each event as one JSON line (see _Pool._replay)."""

    def __init__(self, stream) -> None:
        super().__init__()
        self.stream = stream

    def _send(self, kind: str, test, **fields) -> None:
        self.stream.write(json.dumps({"event": kind, "id": test.id(), "str": str(test),
                                      "description": test.shortDescription(), **fields}) + "\n")
        self.stream.flush()

    def startTest(self, test) -> None:
        super().startTest(test)
        self._send("start", test)

    def stopTest(self, test) -> None:
        super().stopTest(test)
        self._send("stop", test)

    def addSuccess(self, test) -> None:
        self._send("success", test)

    def addFailure(self, test, err) -> None:
        self._send("failure", test, text=self._exc_info_to_string(err, test))

    def addError(self, test, err) -> None:
        self._send("error", test, text=self._exc_info_to_string(err, test))

    def addSkip(self, test, reason) -> None:
        self._send("skip", test, reason=reason)

    def addExpectedFailure(self, test, err) -> None:
        self._send("expected_failure", test, text=self._exc_info_to_string(err, test))

    def addUnexpectedSuccess(self, test) -> None:
        self._send("unexpected_success", test)

    def addSubTest(self, test, subtest, err) -> None:
        if err is not None:
            kind = "subtest_failure" if issubclass(err[0], test.failureException) else "subtest_error"
            self._send(kind, test, sub_id=subtest.id(), sub_str=str(subtest),
                       sub_description=subtest.shortDescription(), text=self._exc_info_to_string(err, test))

    def addDuration(self, test, elapsed) -> None:
        self._send("duration", test, elapsed=elapsed)


def _only(suite: unittest.TestSuite, ids: set[str]) -> unittest.TestSuite:
    """Return the suite with only the tests of the given ids, its nesting kept."""
    kept = unittest.TestSuite()
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            inner = _only(test, ids)
            if inner.countTestCases():
                kept.addTest(inner)
        elif test.id() in ids:
            kept.addTest(test)
    return kept


def worker_main(folder: str) -> None:
    """Claim and run modules of the plan until none is left: each module's events go to
    its .events file, its output (fds 1 and 2) to its .out file, its name, once done, to
    this process's stdout."""
    with open(os.path.join(folder, "plan.json"), encoding="utf-8") as fh:
        plan = json.load(fh)
    notify = os.fdopen(os.dup(1), "w", buffering=1)
    parent = os.getppid()
    for module in plan["order"]:
        if os.getppid() != parent:               # the run was killed: stop
            break
        try:
            claim = os.open(os.path.join(folder, module + ".claim"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            continue
        os.write(claim, str(os.getpid()).encode())
        os.close(claim)
        _run_module(module, set(plan["ids"][module]), os.path.join(folder, module))
        notify.write(module + "\n")


def _run_module(module: str, ids: set[str], path: str) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    output = os.open(path + ".out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(output)
    try:
        with open(path + ".events", "w", encoding="utf-8") as events:
            result = _EventResult(events)
            try:
                suite = unittest.TestSuite([_only(unittest.defaultTestLoader.loadTestsFromModule(
                    importlib.import_module(module)), ids)])
            except Exception:                    # reported as the loader reports it
                result.addError(_Named(f"{module} (imported in a worker process)"), sys.exc_info())
                suite = unittest.TestSuite()
            for missing in sorted(ids - {case.id() for case in _cases(suite)}):
                result.addError(_Named(missing), (LookupError, LookupError(
                    "the worker process loaded no such test"), None))
            with warnings.catch_warnings():
                if not sys.warnoptions:          # as unittest's runner does
                    warnings.simplefilter("default")
                started = time.perf_counter()
                suite.run(result)
            events.write(json.dumps({"event": "end", "seconds": time.perf_counter() - started}) + "\n")
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
