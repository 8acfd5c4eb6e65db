"""Untrusted Git metadata (issue 12, defect 1; section 10b): docs-qa reads a checkout's
.git as files (HEAD, loose refs, packed-refs, a worktree's gitdir/commondir, the index)
and never runs git, so no program named by a folder's Git config or hooks ever runs.

The test itself runs the system git to build real repositories; git is never run once a
repository is armed, except by the canary that proves the arming works."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

from helpers import REPO, ServeProcess, http_request, run_cli, write_files
import parallel

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process

import docs_qa
import retrieval_contract as rc

GIT = shutil.which("git")
GRAPH_QUESTION = "Koľko osôb má prácu v roku 2024?"

# Every Git config key we know of whose value is a program (or makes git run one).
PROGRAM_KEYS = (
    "core.fsmonitor", "core.pager", "pager.status", "pager.log", "pager.diff", "core.editor",
    "sequence.editor", "core.sshCommand", "core.askPass", "core.gitProxy",
    "core.alternateRefsCommand", "diff.external", "diff.x.command", "diff.x.textconv",
    "filter.x.clean", "filter.x.smudge", "filter.x.process", "merge.x.driver",
    "credential.helper", "gpg.program", "gpg.ssh.program", "gpg.x509.program",
    "gpg.ssh.defaultKeyCommand", "uploadpack.packObjectsHook", "remote.origin.uploadpack",
    "remote.origin.receivepack", "mergetool.x.cmd", "difftool.x.cmd", "browser.x.cmd",
    "man.x.cmd", "sendemail.sendmailcmd", "submodule.x.update", "alias.st",
)
HOOKS = (
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
    "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout",
    "post-merge", "pre-push", "pre-receive", "update", "proc-receive", "post-receive",
    "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite",
    "sendemail-validate", "fsmonitor-watchman", "post-index-change", "p4-changelist",
    "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit",
)


def git(cwd: str, *args: str) -> str:
    """Run the system git for the test's own set-up, isolated from the user's config."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "HOME": cwd, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    env = {k: v for k, v in env.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    done = subprocess.run(["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false",
                           *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def make_repo(root: str, files: dict[str, str]) -> str:
    """Return a fresh repository at root holding files in one commit."""
    os.makedirs(root)
    git(root, "init", "-q")
    write_files(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    return root


def cli_json(*args: str) -> dict:
    """Run docs_qa.py with --json and return the parsed output (asserting a clean exit)."""
    proc = run_cli(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


@unittest.skipIf(GIT is None, "git is not installed: no repository can be built")
class HostileCheckoutTest(unittest.TestCase):
    """A checkout whose config and hooks name a marker-writing script under every key."""

    @classmethod
    def setUpClass(cls) -> None:
        cls._tmp = tempfile.TemporaryDirectory()
        tmp = cls._tmp.name
        with open(os.path.join(REPO, "corpus", "graph.json"), encoding="utf-8") as fh:
            graph = fh.read()
        cls.repo = make_repo(os.path.join(tmp, "repo"), {
            "a.md": "# A\n\nzebra here, with stripes\n", "graph.json": graph,
            ".gitattributes": "* filter=x diff=x merge=x\n"})
        cls.rev = git(cls.repo, "rev-parse", "HEAD")
        cls.marker = os.path.join(tmp, "ran")
        cls.cache = os.path.join(tmp, "cache")
        cls._arm(tmp)

    @classmethod
    def tearDownClass(cls) -> None:
        cls._tmp.cleanup()

    @classmethod
    def _arm(cls, tmp: str) -> None:
        """Point every program key and hook at a script that records its name, then prove
        with git itself (the canary) that the checkout now runs it."""
        script = os.path.join(tmp, "mark.sh")
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(f"#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{cls.marker}'\nexit 1\n")
        os.chmod(script, stat.S_IRWXU)
        for key in PROGRAM_KEYS:
            value = f"!{script} {key}" if key in ("alias.st", "submodule.x.update") else f"{script} {key}"
            git(cls.repo, "config", key, value)
        git(cls.repo, "config", "remote.origin.url", "ext::" + script + " remote")
        git(cls.repo, "config", "protocol.ext.allow", "always")
        included = os.path.join(tmp, "included.config")
        with open(included, "w", encoding="utf-8") as fh:
            fh.write(f"[core]\n\tpager = {script} include.path\n")
        git(cls.repo, "config", "include.path", included)
        hooks_path = os.path.join(tmp, "hooks")
        os.makedirs(hooks_path)
        for folder in (hooks_path, os.path.join(cls.repo, ".git", "hooks")):
            for hook in HOOKS:
                path = os.path.join(folder, hook)
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(f"#!/bin/sh\nexec {script} hook-{hook}\n")
                os.chmod(path, stat.S_IRWXU)
        git(cls.repo, "config", "core.hooksPath", hooks_path)
        subprocess.run(["git", "-C", cls.repo, "status", "--porcelain"], capture_output=True,
                       env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})
        assert os.path.exists(cls.marker), "canary: git status did not run the planted fsmonitor"
        os.remove(cls.marker)

    def assertNothingRan(self, where: str) -> None:
        if os.path.exists(self.marker):
            with open(self.marker, encoding="utf-8") as fh:
                ran = fh.read().split()
            os.remove(self.marker)
            self.fail(f"{where} ran programs the checkout names: {ran}")

    def expected_git(self) -> str:
        return "+git-" + self.rev[:12]

    def test_cli_search_runs_nothing_and_reads_the_revision(self):
        env = cli_json("zebra", "--docs", self.repo, "--search", "--cache-dir", self.cache)
        self.assertNothingRan("docs_qa.py --search")
        self.assertRegex(env["index_version"], r"^docs-[0-9a-f]{12}\+git-[0-9a-f]{12}$")
        self.assertTrue(env["index_version"].endswith(self.expected_git()), env["index_version"])

    def test_cli_index_and_answer_run_nothing(self):
        counts = cli_json("index", "--docs", self.repo, "--cache-dir", self.cache)
        self.assertNothingRan("docs_qa.py index")
        self.assertTrue(counts["index_version"].endswith(self.expected_git()))
        cli_json("zebra", "--docs", self.repo, "--extractive", "--cache-dir", self.cache)
        self.assertNothingRan("docs_qa.py (answer)")

    def test_graph_entry_points_run_nothing_and_share_the_format(self):
        graph = os.path.join(self.repo, "graph.json")
        env = cli_json(GRAPH_QUESTION, "--docs", self.repo, "--graph", graph, "--cache-dir", self.cache)
        self.assertNothingRan("docs_qa.py --graph")
        self.assertRegex(env["index_version"],
                         r"^graph-2025-07-01\+sha256-[0-9a-f]{12}\+git-[0-9a-f]{12}$")
        self.assertTrue(env["index_version"].endswith(self.expected_git()))
        alone = cli_json("graph_store.py", GRAPH_QUESTION, "--graph", graph)
        self.assertNothingRan("graph_store.py")
        self.assertEqual(alone["index_version"], env["index_version"])

    def test_serve_runs_nothing(self):
        server = ServeProcess(self.repo, "--graph", os.path.join(self.repo, "graph.json"),
                              "--cache-dir", self.cache)
        try:
            versions = {}
            for route, body in (("/search", {"query": "zebra"}), ("/rag", {"question": "zebra"}),
                                ("/graph", {"question": GRAPH_QUESTION})):
                status, _, data = http_request(server.port, "POST", route, json.dumps(body).encode(),
                                               {"Content-Type": "application/json"}, timeout=60)
                self.assertEqual(status, 200, route)
                versions[route] = json.loads(data)["index_version"]
        finally:
            server.close()
        self.assertNothingRan("docs_qa.py serve")
        for route, version in versions.items():
            self.assertTrue(version.endswith(self.expected_git()), (route, version))

    def test_mcp_runs_nothing(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
        env["EMBED_MOCK"] = "1"
        lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "t", "version": "0"}}},
                 {"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "search_docs", "arguments": {"query": "zebra"}}},
                 {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                  "params": {"name": "query_graph", "arguments": {"question": GRAPH_QUESTION}}}]
        proc = subprocess.run([sys.executable, os.path.join(REPO, "docs_qa.py"), "mcp", "--docs",
                               self.repo, "--graph", os.path.join(self.repo, "graph.json"),
                               "--cache-dir", self.cache],
                              input="".join(json.dumps(m) + "\n" for m in lines), env=env,
                              capture_output=True, text=True, timeout=120)
        self.assertNothingRan("docs_qa.py mcp")
        replies = {r["id"]: r for r in map(json.loads, proc.stdout.splitlines())}
        for msg_id in (2, 3):
            envelope = replies[msg_id]["result"]["structuredContent"]
            self.assertTrue(envelope["index_version"].endswith(self.expected_git()), envelope)


@unittest.skipIf(GIT is None, "git is not installed: no repository can be built")
class GitRevisionTest(unittest.TestCase):
    """index_version names the commit `git rev-parse HEAD` names, read from files, in
    each layout git writes, and `-dirty` exactly when a document differs from the index."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)
        self.tmp = self._tmp.name
        self.repo = make_repo(os.path.join(self.tmp, "repo"), {
            "docs/a.md": "# A\n\nzebra one\n", "docs/sub/b.txt": "zebra two\n", "README": "x\n"})
        write_files(self.repo, {"docs/a.md": "# A\n\nzebra one, again\n"})
        git(self.repo, "commit", "-qam", "two")
        self.docs = os.path.join(self.repo, "docs")

    def version(self, docs: str | None = None) -> str:
        cache = os.path.join(self.tmp, "cache")
        return cli_json("index", "--docs", docs or self.docs, "--cache-dir", cache)["index_version"]

    def assertRevision(self, version: str, repo: str, dirty: bool = False) -> None:
        rev = git(repo, "rev-parse", "HEAD")
        self.assertRegex(version, r"^docs-[0-9a-f]{12}\+git-[0-9a-f]{12}(-dirty)?$")
        self.assertEqual(version.split("+git-")[1], rev[:12] + ("-dirty" if dirty else ""))

    def test_branch(self):
        self.assertRevision(self.version(), self.repo)
        self.assertEqual(docs_qa.git_head(docs_qa.git_checkout(self.docs)),
                         git(self.repo, "rev-parse", "HEAD"))

    def test_detached_head(self):
        git(self.repo, "checkout", "-q", "--detach", "HEAD~1")
        with open(os.path.join(self.repo, ".git", "HEAD"), encoding="utf-8") as fh:
            self.assertNotIn("ref:", fh.read())
        self.assertRevision(self.version(), self.repo)

    def test_packed_refs_only(self):
        git(self.repo, "pack-refs", "--all", "--prune")
        self.assertFalse(os.path.exists(os.path.join(self.repo, ".git", "refs", "heads", "main")))
        self.assertRevision(self.version(), self.repo)

    def test_worktree(self):
        other = os.path.join(self.tmp, "other")
        git(self.repo, "worktree", "add", "-q", "-b", "side", other)
        write_files(other, {"docs/a.md": "# A\n\nzebra on the side\n"})
        git(other, "commit", "-qam", "side")
        git(self.repo, "pack-refs", "--all", "--prune")
        self.assertNotEqual(git(other, "rev-parse", "HEAD"), git(self.repo, "rev-parse", "HEAD"))
        self.assertRevision(self.version(os.path.join(other, "docs")), other)
        self.assertRevision(self.version(), self.repo)

    def test_not_a_checkout_and_unborn_branch(self):
        plain = write_files(os.path.join(self.tmp, "plain"), {"a.md": "zebra\n"})
        self.assertRegex(self.version(plain), r"^docs-[0-9a-f]{12}$")
        unborn = write_files(os.path.join(self.tmp, "unborn"), {"a.md": "zebra\n"})
        git(unborn, "init", "-q")
        self.assertRegex(self.version(unborn), r"^docs-[0-9a-f]{12}$")

    def test_dirty_marks(self):
        self.assertRevision(self.version(), self.repo)
        with self.subTest("a tracked non-document outside the folder changed: clean"):
            write_files(self.repo, {"README": "changed\n"})
            self.assertRevision(self.version(), self.repo)
        with self.subTest("a document changed"):
            write_files(self.docs, {"sub/b.txt": "zebra two, edited\n"})
            self.assertRevision(self.version(), self.repo, dirty=True)
            git(self.repo, "checkout", "--", "docs/sub/b.txt")
            self.assertRevision(self.version(), self.repo)
        with self.subTest("an untracked document"):
            write_files(self.docs, {"new.md": "zebra new\n"})
            self.assertRevision(self.version(), self.repo, dirty=True)
            os.remove(os.path.join(self.docs, "new.md"))
        with self.subTest("a tracked document deleted"):
            os.remove(os.path.join(self.docs, "sub", "b.txt"))
            self.assertRevision(self.version(), self.repo, dirty=True)
            git(self.repo, "checkout", "--", "docs/sub/b.txt")
        with self.subTest("touched, same content: clean"):
            os.utime(os.path.join(self.docs, "a.md"), ns=(1, 1))
            self.assertRevision(self.version(), self.repo)
        with self.subTest("intent to add (index v3 extended flags)"):
            write_files(self.docs, {"later.md": "zebra later\n"})
            git(self.repo, "add", "-N", "docs/later.md")
            self.assertRevision(self.version(), self.repo, dirty=True)

    def test_staged_changes_against_head(self):
        with self.subTest("a document changed and staged"):
            write_files(self.docs, {"sub/b.txt": "zebra two, staged\n"})
            git(self.repo, "add", "docs/sub/b.txt")
            self.assertRevision(self.version(), self.repo, dirty=True)
            git(self.repo, "commit", "-qm", "three")
            self.assertRevision(self.version(), self.repo)
        with self.subTest("a document deleted and staged"):
            git(self.repo, "rm", "-q", "docs/sub/b.txt")
            self.assertRevision(self.version(), self.repo, dirty=True)
            git(self.repo, "commit", "-qm", "four")
            self.assertRevision(self.version(), self.repo)
        with self.subTest("a new document staged, then unstaged and removed"):
            write_files(self.docs, {"sub/c.md": "zebra three\n"})
            git(self.repo, "add", "docs/sub/c.md")
            self.assertRevision(self.version(), self.repo, dirty=True)
            git(self.repo, "rm", "-q", "--cached", "docs/sub/c.md")
            os.remove(os.path.join(self.docs, "sub", "c.md"))
            self.assertRevision(self.version(), self.repo)
        with self.subTest("a staged file that is no document, or outside the folder: clean"):
            write_files(self.repo, {"docs/image.png": "not text", "README": "staged elsewhere\n"})
            git(self.repo, "add", "docs/image.png", "README")
            self.assertRevision(self.version(), self.repo)

    def test_packed_objects_and_deltas(self):
        write_files(self.docs, {f"sub/page-{n:02d}.md": f"zebra page {n}\n" for n in range(40)})
        git(self.repo, "add", "-A")                  # trees big enough for git to store deltas
        for n in range(4):
            write_files(self.docs, {"sub/b.txt": f"zebra two, version {n}\n"})
            git(self.repo, "commit", "-qam", f"v{n}")
        git(self.repo, "gc", "-q", "--aggressive")
        checkout = docs_qa.git_checkout(self.docs)
        listing = git(self.repo, "verify-pack", "-v", *[
            os.path.join(self.repo, ".git", "objects", "pack", n)
            for n in os.listdir(os.path.join(self.repo, ".git", "objects", "pack")) if n.endswith(".idx")])
        trees = [line.split() for line in listing.splitlines() if line.split()[1:2] == ["tree"]]
        self.assertTrue(any(len(t) > 5 for t in trees), "no tree was stored as a delta")
        with docs_qa._GitObjects(checkout, 20) as objects:
            for tree in trees:
                raw = subprocess.run(["git", "-C", self.repo, "cat-file", "tree", tree[0]],
                                     capture_output=True, check=True).stdout
                self.assertEqual(objects.read(bytes.fromhex(tree[0])), (2, raw), tree)
        git(self.repo, "checkout", "-q", "--detach", "HEAD~2")
        self.assertRevision(self.version(), self.repo)
        write_files(self.docs, {"sub/b.txt": "zebra two, staged on a packed tree\n"})
        git(self.repo, "add", "docs/sub/b.txt")
        self.assertRevision(self.version(), self.repo, dirty=True)

    def test_index_v4(self):
        git(self.repo, "update-index", "--index-version", "4")
        self.assertRevision(self.version(), self.repo)
        write_files(self.docs, {"sub/b.txt": "zebra two, edited\n"})
        self.assertRevision(self.version(), self.repo, dirty=True)

    def test_sha256_repository(self):
        repo = os.path.join(self.tmp, "sha256")
        os.makedirs(repo)
        try:
            git(repo, "init", "-q", "--object-format=sha256")
        except subprocess.CalledProcessError:
            self.skipTest("this git cannot make SHA-256 repositories")
        write_files(repo, {"a.md": "zebra\n"})
        git(repo, "add", "a.md")
        git(repo, "commit", "-qm", "one")
        self.assertRevision(self.version(repo), repo)
        write_files(repo, {"a.md": "zebra edited\n"})
        self.assertRevision(self.version(repo), repo, dirty=True)

    def test_planted_fifo_and_hostile_head_do_not_hang_or_escape(self):
        git(self.repo, "pack-refs", "--all", "--prune")
        packed = os.path.join(self.repo, ".git", "packed-refs")
        os.remove(packed)
        os.mkfifo(packed)                 # a blocking read would hang the run
        self.assertRegex(self.version(), r"^docs-[0-9a-f]{12}$")
        with open(os.path.join(self.repo, ".git", "HEAD"), "w", encoding="utf-8") as fh:
            fh.write("ref: refs/../../../../etc/passwd\n")
        self.assertRegex(self.version(), r"^docs-[0-9a-f]{12}$")

    def test_graph_file_revision_and_dirty(self):
        with open(os.path.join(REPO, "corpus", "graph.json"), encoding="utf-8") as fh:
            write_files(self.docs, {"graph.json": fh.read()})
        git(self.repo, "add", "docs/graph.json")
        git(self.repo, "commit", "-qm", "graph")
        graph = os.path.join(self.docs, "graph.json")
        version = cli_json("graph_store.py", GRAPH_QUESTION, "--graph", graph)["index_version"]
        self.assertEqual(version.split("+git-")[1], git(self.repo, "rev-parse", "HEAD")[:12])
        with open(graph, "a", encoding="utf-8") as fh:
            fh.write("\n")
        version = cli_json("graph_store.py", GRAPH_QUESTION, "--graph", graph)["index_version"]
        self.assertTrue(version.endswith("-dirty"), version)


class IndexVersionFormatTest(unittest.TestCase):
    """One spelling for RAG and the graph (retrieval_contract)."""

    def test_spelling(self):
        rev = "0123456789abcdef" * 2 + "01234567"
        self.assertEqual(rc.index_version_docs("abcdef0123456789"), "docs-abcdef012345")
        self.assertEqual(rc.index_version_docs("abcdef012345", rev, True),
                         "docs-abcdef012345+git-0123456789ab-dirty")
        self.assertEqual(rc.index_version_graph("2025-07-01", "f" * 64, rev),
                         "graph-2025-07-01+sha256-ffffffffffff+git-0123456789ab")
        self.assertEqual(rc.index_version_graph(None, "0" * 64), "graph-unversioned+sha256-000000000000")
        self.assertEqual(rc.index_version_graph("a+b c/ď", "0" * 64), "graph-a_b_c__+sha256-000000000000")


if __name__ == "__main__":
    unittest.main()
