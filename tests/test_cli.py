"""The CLI as a user runs it: subprocess, stdout/stderr, exit codes, envelopes."""
import json
import os
import subprocess
import sys

from helpers import REPO, StubServerCase, TempDirTest, assert_clean_failure_output, marking_modules, run_cli, write_files
import parallel

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process
import retrieval_contract as rc


class CliTest(TempDirTest):
    def setUp(self):
        super().setUp()
        write_files(self.docs, {
            "a.md": "# Alfa\n\nDokument alfa mówi o podatku od nieruchomości w gminie.\n",
            "b.md": "# Beta\n\nDokument beta również mówi o podatku od nieruchomości rolnych.\n",
        })

    def cli(self, *args, **kw):
        return run_cli(*args, "--docs", self.docs, "--cache-dir", self.cache, **kw)

    def test_limit_one_over_two_matching_documents_proves_truncation(self):
        proc = self.cli("podatek od nieruchomości", "--search", "--json", "--limit", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        env = json.loads(proc.stdout)
        self.assertEqual(len(env["sources"]), 1)
        self.assertTrue(env["truncated"])
        self.assertIn("result_limit", env["truncation_reasons"])
        self.assertIs(env["complete"], False)
        self.assertEqual(env["limits"]["result_limit"], 1)

    def test_everything_fits_is_not_truncated_and_completeness_unknown(self):
        env = json.loads(self.cli("podatek od nieruchomości", "--search", "--json", "--limit", "5").stdout)
        self.assertEqual(len(env["sources"]), 2)
        self.assertEqual((env["truncated"], env["complete"], env["truncation_reasons"]), (False, None, []))
        src = env["sources"][0]
        self.assertEqual(src["source_id"], "S1")
        self.assertIn(src["document_path"], ("a.md", "b.md"))
        self.assertEqual((src["start_line"], src["end_line"]), (1, 3))
        self.assertEqual(src["retrieval"]["bm25"]["rank"], 1)
        self.assertEqual(env["mode"], "hybrid")   # EMBED_MOCK=1 gives mock vectors

    def test_answer_text_lists_answer_sources_and_notes(self):
        proc = run_cli("podatek od nieruchomości", "--docs", self.docs, "--cache-dir", self.cache,
                       env={"EMBED_MOCK": "", "DOCS_QA_BASE_URL": "http://127.0.0.1:9/v1",
                            "DOCS_QA_EMBED_LANGUAGES": "all"})    # a Polish question: ask the model
        self.assertEqual(proc.returncode, 0, proc.stderr)
        answer, rest = proc.stdout.split("\nSources:\n", 1)
        self.assertRegex(answer, r"\[[ab]\.md:3-3\]")
        self.assertIn("Notes:", rest)
        self.assertIn("embeddings_unavailable", rest)
        self.assertIn("llm_unavailable", rest)

    def test_missing_docs_folder_is_one_line_error_exit_1(self):
        proc = run_cli("pytanie", "--docs", os.path.join(self.tmp, "nope"), "--no-cache")
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1)
        assert_clean_failure_output(self, proc)

    def test_json_error_envelope_has_no_path_and_exit_1(self):
        target = os.path.join(self.tmp, "plik.md")
        write_files(self.tmp, {"plik.md": "x"})
        proc = run_cli("pytanie", "--docs", target, "--no-cache", "--json")
        self.assertEqual(proc.returncode, 1)
        env = json.loads(proc.stdout)
        self.assertEqual((env["status"], env["reason"]), ("error", "invalid_request"))
        self.assertEqual(rc.schema_errors(env, rc.error_schema()), [])
        self.assertNotIn(self.tmp, proc.stdout)

    def test_empty_question_is_invalid_query(self):
        proc = self.cli("   ", "--json")
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(json.loads(proc.stdout)["reason"], "invalid_query")

    def test_usage_errors_exit_2(self):
        self.assertEqual(run_cli("pytanie").returncode, 2)            # no --docs
        self.assertEqual(self.cli("pytanie", "--limit", "0").returncode, 2)
        self.assertEqual(self.cli("pytanie", "--bogus").returncode, 2)

    def test_help_exits_0_and_teaches(self):
        proc = run_cli("--help")
        self.assertEqual(proc.returncode, 0)
        for flag in ("--docs", "--search", "--extractive", "--json", "--limit", "--rrf-k", "Exit codes"):
            self.assertIn(flag, proc.stdout)

    def test_index_command_reports_counts(self):
        first = json.loads(self.cli_index("--json").stdout)
        self.assertEqual((first["new"], first["updated"], first["unchanged"], first["removed"]), (2, 0, 0, 0))
        write_files(self.docs, {"a.md": "# Alfa\n\nZmieniony dokument alfa o podatku leśnym.\n"})
        os.remove(os.path.join(self.docs, "b.md"))
        write_files(self.docs, {"c.md": "# Gamma\n\nNowy dokument gamma.\n"})
        second = json.loads(self.cli_index("--json").stdout)
        self.assertEqual((second["new"], second["updated"], second["unchanged"], second["removed"]), (1, 1, 0, 1))
        self.assertNotEqual(first["index_version"], second["index_version"])

    def cli_index(self, *args):
        return run_cli("index", "--docs", self.docs, "--cache-dir", self.cache, *args)


class ScriptRerunTest(TempDirTest):
    """`python3 docs_qa.py index|serve|mcp` goes on in an interpreter that imports the module
    (a script's syntax tree is kept until it ends): with the same interpreter options,
    arguments and exit codes, the script's folder first on the path and never the working
    folder. A question stays in the script's process."""

    def run_script(self, *args: str, cwd: str = REPO) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
        return subprocess.run([sys.executable, "-X", "importtime", os.path.join(REPO, "docs_qa.py"), *args],
                              cwd=cwd, env={**env, "EMBED_MOCK": "1"}, capture_output=True, text=True,
                              timeout=60)

    @staticmethod
    def imported(proc: subprocess.CompletedProcess) -> set[str]:
        """Return the modules -X importtime says the process imported."""
        return {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")}

    def test_index_goes_on_imported_with_the_same_options_and_exit_codes(self):
        write_files(self.docs, {"a.md": "# Alfa\n\nDokument alfa.\n"})
        proc = self.run_script("index", "--docs", self.docs, "--cache-dir", self.cache, "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads(proc.stdout)["new"], 1)
        self.assertIn("docs_qa", self.imported(proc))          # -X importtime was passed on
        self.assertEqual(self.run_script("index").returncode, 2)                     # no --docs
        missing = self.run_script("index", "--docs", os.path.join(self.tmp, "nope"), "--no-cache")
        self.assertEqual(missing.returncode, 1)
        self.assertIn("usage: docs_qa.py index", self.run_script("index", "--help").stdout)

    def test_a_question_stays_in_the_script(self):
        write_files(self.docs, {"a.md": "# Alfa\n\nDokument alfa.\n"})
        proc = self.run_script("alfa", "--docs", self.docs, "--cache-dir", self.cache, "--search", "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads(proc.stdout)["sources"][0]["document_path"], "a.md")
        self.assertNotIn("docs_qa", self.imported(proc))

    def test_a_script_run_by_another_program_stays_in_its_process(self):
        # a runner in the manner of pdb, trace or coverage (python -m RUNNER SCRIPT ARGS)
        # executes the script itself, and keeps control after it
        runner = ("import os, sys\n"
                  "path = sys.argv[1]\n"
                  "sys.path.insert(0, os.path.dirname(path))\n"
                  "sys.argv = sys.argv[1:]\n"
                  "try:\n"
                  "    exec(compile(open(path).read(), path, 'exec'), {'__name__': '__main__', '__file__': path})\n"
                  "except SystemExit as exc:\n"
                  "    print('runner still here', exc.code)\n")
        folder = os.path.join(self.tmp, "runner")
        write_files(folder, {"run_script.py": runner})
        write_files(self.docs, {"a.md": "# Alfa\n\nDokument alfa.\n"})
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
        proc = subprocess.run([sys.executable, "-m", "run_script", os.path.join(REPO, "docs_qa.py"), "index",
                               "--docs", self.docs, "--no-cache"], cwd=folder, env={**env, "EMBED_MOCK": "1"},
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("indexed: 1 new", proc.stdout)
        self.assertEqual(proc.stdout.splitlines()[-1], "runner still here 0")

    def test_index_run_from_a_docs_folder_imports_no_module_from_it(self):
        marks = os.path.join(self.tmp, "marks")
        os.mkdir(marks)
        planted = marking_modules(marks, ("argparse", "json", "re", "docs_qa", "retrieval_contract"))
        write_files(self.docs, {**planted, "a.md": "# Alfa\n\nDokument alfa.\n"})
        proc = self.run_script("index", "--docs", ".", "--cache-dir", self.cache, cwd=self.docs)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("docs_qa", self.imported(proc))
        self.assertEqual(os.listdir(marks), [])


class ModuleRunTest(TempDirTest):
    """`python3 -m docs_qa`, run from the project folder (the README's form for many
    questions: a module runs from its bytecode cache, a script is compiled each time), is
    the same program as the script: the same envelope, exit codes and usage, and the same
    index."""

    def start(self, form: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        base = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
        command = [sys.executable, "-m", "docs_qa"] if form == "module" else \
            [sys.executable, os.path.join(REPO, "docs_qa.py")]
        return subprocess.run([*command, *args], cwd=REPO, env={**base, "EMBED_MOCK": "1", **(env or {})},
                              capture_output=True, text=True, timeout=120)

    def test_a_question_gives_the_scripts_envelope_and_exit_codes(self):
        write_files(self.docs, {"a.md": "# Alfa\n\nDokument alfa mówi o podatku.\n",
                                "b.md": "# Beta\n\nDokument beta mówi o lesie.\n"})
        ask = ("podatek alfa", "--docs", self.docs, "--cache-dir", self.cache, "--extractive", "--json")
        script, module = self.start("script", *ask), self.start("module", *ask)
        self.assertEqual((script.returncode, module.returncode), (0, 0), module.stderr)
        self.assertEqual(module.stdout, script.stdout)
        self.assertEqual(json.loads(module.stdout)["sources"][0]["document_path"], "a.md")
        usage = self.start("module", "alfa")                                     # no --docs
        self.assertEqual(usage.returncode, 2)
        self.assertIn("usage: docs_qa.py", usage.stderr)
        nowhere = ("alfa", "--docs", os.path.join(self.tmp, "nope"), "--no-cache")
        missing = self.start("module", *nowhere)
        self.assertEqual((missing.returncode, missing.stderr), (1, self.start("script", *nowhere).stderr))

    def test_index_writes_the_index_the_script_writes(self):
        # two files of 1.2 MB pass INDEX_PARALLEL_MIN_BYTES, so both runs take the parallel
        # path, whose workers import the file __file__ names (under -m too)
        para = "Zdanie o podatku od nieruchomości numer {} i o lesie.\n\n"
        write_files(self.docs, {f"{name}.md": "".join(para.format(i) for i in range(24000))
                                for name in ("a", "b")})
        runs = {}
        for form in ("module", "script"):
            runs[form] = self.start(form, "index", "--docs", self.docs, "--cache-dir",
                                  os.path.join(self.tmp, form), "--no-embed", "--json",
                                  env={"DOCS_QA_INDEX_WORKERS": "2"})
            self.assertEqual(runs[form].returncode, 0, runs[form].stderr)
        module, script = (json.loads(runs[form].stdout) for form in ("module", "script"))
        self.assertEqual(module["new"], 2)
        self.assertEqual((module["chunks"], module["index_version"]), (script["chunks"], script["index_version"]))


class GraphRoutingTest(TempDirTest):
    """docs_qa.py --graph: questions the graph understands are answered from it."""

    def setUp(self):
        super().setUp()
        write_files(self.docs, {"prace/a.md": "# Práca A\n\nStrojový preklad právnych textov, 2024.\n",
                                "jpk.md": "# JPK\n\nPlik JPK_V7M składa się do 25. dnia miesiąca.\n"})
        graph = {"nodes": [
            {"id": "p1", "type": "person", "name": "Ján Holp"},
            {"id": "p2", "type": "person", "name": "Eva Malá"},
            {"id": "p3", "type": "person", "name": "Peter Novák"},
            {"id": "t1", "type": "thesis", "title": "Strojový preklad", "year": 2024,
             "document_path": "prace/a.md"},
            {"id": "t2", "type": "thesis", "title": "Rozpoznávanie reči", "year": 2024}],
            "edges": [{"source": "p1", "target": "t1", "type": "authored"},
                      {"source": "p2", "target": "t2", "type": "authored"},
                      {"source": "t1", "target": "p3", "type": "supervised_by"}]}
        self.graph = os.path.join(self.tmp, "graph.json")
        with open(self.graph, "w", encoding="utf-8") as fh:
            json.dump(graph, fh)

    def ask(self, question, *extra):
        proc = run_cli(question, "--docs", self.docs, "--graph", self.graph, "--no-cache", "--json", *extra)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def test_count_question_is_answered_by_the_graph_with_the_exact_count(self):
        # two persons (Ján Holp, Eva Malá) authored a thesis in 2024
        for limit in ("1", "100"):
            env = self.ask("Koľko osôb má prácu v roku 2024?", "--limit", limit)
            self.assertEqual(env["tool"], "graph")
            self.assertEqual(env["aggregation"]["count"], 2)
            self.assertIs(env["aggregation"]["complete"], True)
        self.assertTrue(env["truncated"] is False)
        truncated = self.ask("Koľko osôb má prácu v roku 2024?", "--limit", "1")
        self.assertEqual((truncated["truncated"], truncated["complete"]), (True, False))

    def test_other_questions_go_to_rag(self):
        env = self.ask("do kiedy składam JPK_V7M", "--no-embed", "--extractive")
        self.assertEqual(env["tool"], "rag")
        self.assertEqual(env["sources"][0]["document_path"], "jpk.md")

    def test_broken_graph_file_is_an_error_envelope(self):
        with open(self.graph, "w", encoding="utf-8") as fh:
            fh.write("{not json")
        proc = run_cli("Koľko osôb má prácu v roku 2024?", "--docs", self.docs, "--graph", self.graph,
                       "--no-cache", "--json")
        self.assertEqual(proc.returncode, 1)
        env = json.loads(proc.stdout)
        self.assertEqual(env["reason"], "retrieval_unavailable")
        self.assertNotIn(self.tmp, proc.stdout)
        assert_clean_failure_output(self, proc)


class GitIndexVersionTest(TempDirTest):
    """index_version names the Git revision (and a dirty mark) of a docs folder in a checkout."""

    def git(self, *args):
        import subprocess
        subprocess.run(["git", "-C", self.docs, *args], check=True, capture_output=True,
                       env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})

    def version(self):
        from helpers import docs_qa
        return docs_qa.search("podatek", self.settings(use_embeddings=False)).index_version

    def test_revision_dirty_mark_and_new_commit(self):
        import shutil
        if shutil.which("git") is None:
            self.skipTest("git is not installed")
        write_files(self.docs, {"a.md": "# A\n\nPodatek od nieruchomości w gminie.\n"})
        self.git("init", "-q")
        self.git("add", "a.md")
        self.git("commit", "-qm", "one")
        clean = self.version()
        self.assertRegex(clean, r"^docs-[0-9a-f]{12}\+git-[0-9a-f]{12}$")
        from unittest import mock
        from helpers import docs_qa
        with mock.patch.object(docs_qa, "git_is_dirty", wraps=docs_qa.git_is_dirty) as probe:
            self.assertEqual(self.version(), clean)      # nothing changed: answered from meta
        self.assertEqual(probe.call_count, 0)
        write_files(self.docs, {"a.md": "# A\n\nPodatek od nieruchomości w gminie, zmieniony.\n"})
        dirty = self.version()
        self.assertTrue(dirty.endswith("-dirty"), dirty)
        self.git("commit", "-qam", "two")
        committed = self.version()
        self.assertFalse(committed.endswith("-dirty"), committed)
        self.assertNotEqual(committed.split("+")[1], clean.split("+")[1])


    def test_a_dirty_checkout_stays_dirty_by_the_document_that_made_it_so(self):
        # after the first dirty answer, another edit is answered by one stat of the document
        # found differing (still as it was), not by comparing every document with the git
        # index; once that document is restored, the whole comparison decides again
        import shutil
        from unittest import mock
        from helpers import docs_qa
        if shutil.which("git") is None:
            self.skipTest("git is not installed")
        write_files(self.docs, {"a.md": "# A\n\nPodatek od nieruchomości.\n",
                                "b.md": "# B\n\nPodatek rolny.\n"})
        self.git("init", "-q")
        self.git("add", "a.md", "b.md")
        self.git("commit", "-qm", "one")
        revision = self.version().split("+git-")[1]            # the Git part of index_version

        def mark() -> str:
            return self.version().split("+git-")[1]
        write_files(self.docs, {"a.md": "# A\n\nPodatek od nieruchomości, zmieniony.\n"})
        self.assertEqual(mark(), revision + "-dirty")
        with mock.patch.object(docs_qa, "git_is_dirty", wraps=docs_qa.git_is_dirty) as probe:
            write_files(self.docs, {"b.md": "# B\n\nPodatek rolny, zmieniony.\n"})
            self.assertEqual(mark(), revision + "-dirty")
            self.assertEqual(probe.call_count, 0)              # a.md still differs: one stat
            self.git("checkout", "--", "a.md")
            self.assertEqual(mark(), revision + "-dirty")   # b.md does
            self.assertEqual(probe.call_count, 1)
            self.git("checkout", "--", "b.md")
            self.assertEqual(mark(), revision)
            self.assertEqual(probe.call_count, 2)


class SettingsFromEnvTest(TempDirTest):
    """settings_from_env is the one reader of the environment: every transport gets the
    chat model, chat timeout, token and browser origins from the Settings it returns."""

    def test_chat_token_and_origins_come_from_the_environment_and_flags_win(self):
        from helpers import docs_qa
        environ = {"DOCS_QA_CHAT_MODEL": "m1", "DOCS_QA_CHAT_TIMEOUT": "12.5", "DOCS_QA_TOKEN": " t ",
                   "DOCS_QA_CORS_ORIGINS": "http://a:1/, http://b:2 http://a:1"}
        settings = docs_qa.settings_from_env(environ, docs_dir=self.tmp)
        self.assertEqual((settings.chat_model, settings.chat_timeout_s, settings.token, settings.cors_origins),
                         ("m1", 12.5, " t ", ("http://a:1", "http://b:2")))
        self.assertNotIn(" t ", repr(settings))            # the token never shows in a repr
        flagged = docs_qa.settings_from_env(environ, docs_dir=self.tmp, chat_model="m2", chat_timeout_s=3.0,
                                            extractive=True, cors_origins=["http://c:3/"])
        self.assertEqual((flagged.chat_model, flagged.chat_timeout_s, flagged.extractive, flagged.cors_origins),
                         ("m2", 3.0, True, ("http://c:3",)))

    def test_a_bad_chat_timeout_is_refused_unless_a_flag_overrides_it(self):
        from helpers import docs_qa
        for value in ("soon", "0", "-1", "nan", "inf"):
            with self.subTest(value=value), self.assertRaises(rc.InvalidRequestError) as caught:
                docs_qa.settings_from_env({"DOCS_QA_CHAT_TIMEOUT": value}, docs_dir=self.tmp)
            self.assertEqual(caught.exception.field_names, ("chat_timeout",))
        self.assertEqual(docs_qa.settings_from_env({"DOCS_QA_CHAT_TIMEOUT": "soon"}, docs_dir=self.tmp,
                                                   chat_timeout_s=4.0).chat_timeout_s, 4.0)

    def test_only_settings_from_env_and_the_cache_default_read_the_environment(self):
        import ast
        import inspect
        from helpers import docs_qa
        readers = set()
        for node in ast.walk(ast.parse(inspect.getsource(docs_qa))):
            if isinstance(node, ast.FunctionDef):
                body = ast.unparse(node)
                if "environ.get(" in body or "environ[" in body or "getenv(" in body:
                    readers.add(node.name)
        self.assertEqual(readers, {"settings_from_env", "default_cache_dir"})


class ErrorBoundaryTest(TempDirTest):
    """Every transport turns a failure into the error envelope at one boundary: an untyped
    error is logged with its traceback and answered internal_error; --debug re-raises it."""

    def setUp(self) -> None:
        super().setUp()
        from helpers import docs_qa
        self.docs_qa = docs_qa
        self.docs = write_files(os.path.join(self.tmp, "docs"), {"a.md": "# Alfa\n\nDokument alfa o podatku.\n"})

    def ctx(self, debug: bool, log: list):
        dq = self.docs_qa
        settings = dq.Settings(docs_dir=self.docs, cache_dir=None, embed_mock=True)
        return dq.ServerContext(dq.OperationContext(settings), debug=debug, log=log.append)

    def test_http_and_mcp_answer_internal_error_and_log_the_traceback_or_reraise_under_debug(self):
        from unittest import mock
        dq = self.docs_qa
        body = json.dumps({"query": "alfa"}).encode()
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "search_docs", "arguments": {"query": "alfa"}}}
        with mock.patch.object(dq, "search", side_effect=RuntimeError("secret /srv/x")):
            log: list = []
            status, _, data = dq.handle_request("POST", "/search", {}, body, self.ctx(False, log))
            self.assertEqual((status, json.loads(data)["reason"]), (500, "internal_error"))
            reply = dq.mcp_handle(call, self.ctx(False, log))
            self.assertEqual(reply["result"]["structuredContent"]["reason"], "internal_error")
            self.assertEqual([("Traceback" in line, "secret" in line) for line in log], [(True, True)] * 2)
            self.assertNotIn("secret", data.decode() + json.dumps(reply))
            for run in (lambda ctx: dq.handle_request("POST", "/search", {}, body, ctx),
                        lambda ctx: dq.mcp_handle(call, ctx)):
                with self.assertRaises(RuntimeError):
                    run(self.ctx(True, []))
        log = []
        status, _, data = dq.handle_request("POST", "/search", {}, b"{", self.ctx(False, log))
        self.assertEqual((status, json.loads(data)["reason"], log), (400, "invalid_query", []))   # typed: not logged

    def test_the_cli_prints_one_line_and_exits_1_or_reraises_under_debug(self):
        import contextlib
        import io
        from unittest import mock
        dq = self.docs_qa
        argv = ["alfa", "--docs", self.docs, "--no-cache", "--search", "--json"]
        out, err = io.StringIO(), io.StringIO()
        with mock.patch.object(dq, "search", side_effect=RuntimeError("secret /srv/x")), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            self.assertEqual(dq.main(argv, {"EMBED_MOCK": "1"}), 1)
            with self.assertRaises(RuntimeError):
                dq.main(argv + ["--debug"], {"EMBED_MOCK": "1"})
        self.assertEqual(json.loads(out.getvalue())["reason"], "internal_error")
        self.assertEqual(err.getvalue(), "docs_qa: error: internal error (RuntimeError); "
                                         "run with --debug for the traceback\n")


class IndexProgressTest(StubServerCase):
    """`index` draws its \\r progress line only on a terminal: a log or a pipe gets the summary."""

    def test_an_index_that_takes_seconds_writes_no_carriage_return_to_a_pipe(self):
        write_files(self.docs, {f"extra/{i:02}.md": f"# Note {i}\n\nRejestr numer {i} prowadzi urząd.\n"
                                for i in range(80)})
        self.stub.embed_delay_s = 0.6               # several batches: past the 1 s progress waits for
        proc = run_cli("index", "--docs", self.docs, "--cache-dir", self.cache, in_process=False,
                       env={"EMBED_MOCK": "0", "DOCS_QA_BASE_URL": self.stub.base_url,
                            "DOCS_QA_EMBED_MODEL": "stub-embed"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertGreaterEqual(self.stub.embed_requests, 3)
        self.assertIn("indexed:", proc.stdout)
        # (text mode reads a \r as a line end, so the progress line itself is looked for)
        self.assertNotIn("embed: ", proc.stderr)
