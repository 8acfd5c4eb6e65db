#!/usr/bin/env python3
"""Run three clients nobody on the project wrote against docs-qa and print what they found.

    python3 reports/check_clients.py VENV [--docs DOCS] [--graph FILE] [--max-examples N]

VENV is a virtual environment OUTSIDE the repository; it is created when missing and given
schemathesis, mcp (the official MCP Python SDK), openapi-spec-validator and jsonschema from
PyPI. docs-qa itself stays standard-library only: nothing here is imported by it or its tests.
When the packages cannot be installed, the script says so and exits 0 (skipped).

Checks, each against a live server started here (EMBED_MOCK=1; the chat server URL points
at a closed port, so /rag and ask_docs answer extractively with an llm_unavailable note):
  1. openapi-spec-validator on GET /openapi.json, without and with a token;
  2. Schemathesis (`schemathesis run --checks all`) on the live /openapi.json, without and
     with a token;
  3. the MCP Python SDK: ClientSession over stdio, initialize, tools/list, every tool called
     with valid and invalid arguments, each structuredContent validated against the tool's
     outputSchema (by jsonschema here, and by the SDK's own check), ping; with and without
     --graph (query_graph must be listed only with it).
The output is Markdown for reports/clients.md.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("schemathesis", "mcp", "openapi-spec-validator", "jsonschema")
TOKEN = "check-clients-token"
CLOSED_CHAT_URL = "http://127.0.0.1:9/v1"      # nothing listens: the chat degrades at once


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("venv", metavar="VENV", help="virtual environment outside the repo (created if missing)")
    parser.add_argument("--docs", default=os.path.join(REPO, "corpus"), help="docs folder (default: corpus)")
    parser.add_argument("--graph", default=os.path.join(REPO, "corpus", "graph.json"),
                        help="graph for query_graph (default: corpus/graph.json)")
    parser.add_argument("--max-examples", type=int, default=50, help="Schemathesis examples per operation")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def ensure_venv(venv: str) -> str | None:
    """Return the venv's python with the packages installed, or None when that fails."""
    if os.path.realpath(venv).startswith(os.path.realpath(REPO) + os.sep):
        sys.exit("check_clients: VENV must be outside the repository")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        if subprocess.run([sys.executable, "-m", "venv", venv]).returncode != 0:
            return None
    probe = subprocess.run([python, "-c", "import schemathesis, mcp, openapi_spec_validator, jsonschema"],
                           capture_output=True)
    if probe.returncode != 0:
        install = subprocess.run([python, "-m", "pip", "install", "-q", *PACKAGES])
        if install.returncode != 0:
            return None
    return python


# -- a live docs-qa ------------------------------------------------------------------

def server_env(token: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCS_QA_")}
    env.update({"EMBED_MOCK": "1", "DOCS_QA_BASE_URL": CLOSED_CHAT_URL})
    if token:
        env["DOCS_QA_TOKEN"] = token
    return env


class Server:
    """`docs_qa.py serve --port 0` in a subprocess; url once it serves."""

    def __init__(self, docs: str, graph: str, cache: str, token: str | None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(REPO, "docs_qa.py"), "serve", "--docs", docs, "--graph", graph,
             "--cache-dir", cache, "--port", "0"], env=server_env(token),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.url = None
        for line in self.proc.stderr:
            match = re.search(r"serving (http://[\d.]+:\d+)", line)
            if match:
                self.url = match.group(1)
                break
        if self.url is None:
            raise SystemExit("check_clients: the server did not start")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.proc.stderr.close()


def fetch_spec(url: str, token: str | None) -> dict:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url + "/openapi.json", headers=headers), timeout=30) as resp:
        return json.loads(resp.read())


# -- 1. openapi-spec-validator -------------------------------------------------------

def check_spec(spec: dict) -> str:
    from openapi_spec_validator import validate
    from openapi_spec_validator.validation.exceptions import OpenAPIValidationError
    try:
        validate(spec)
    except OpenAPIValidationError as exc:
        return f"FAIL: {str(exc).splitlines()[0]}"
    return "valid (OpenAPI 3.1)"


# -- 2. Schemathesis -----------------------------------------------------------------

def run_schemathesis(venv: str, url: str, token: str | None, max_examples: int) -> tuple[int, str]:
    """Return Schemathesis's exit code and the summary part of its output."""
    command = [os.path.join(venv, "bin", "schemathesis"), "run", url + "/openapi.json", "--checks", "all",
               "--max-examples", str(max_examples), "-w", "1", "--no-color"]
    if token:
        command += ["-H", f"Authorization: Bearer {token}"]
    with tempfile.TemporaryDirectory() as scratch:   # its example database stays out of the repo
        proc = subprocess.run(command, capture_output=True, text=True, timeout=1800, cwd=scratch)
    out = proc.stdout + proc.stderr
    start = out.find("=== SUMMARY") if "=== SUMMARY" in out else max(0, len(out) - 3000)
    failures = out[:start] if proc.returncode else ""
    return proc.returncode, (failures[-6000:] + "\n" if failures else "") + out[start:].strip()


# -- 3. MCP Python SDK ---------------------------------------------------------------

VALID = {
    "search_docs": [{"query": "do kiedy składam JPK"}, {"query": "VAT", "limit": 2}],
    "ask_docs": [{"question": "do kiedy składam JPK"}, {"question": "What is JPK?", "extractive": True, "limit": 3}],
    "query_graph": [{"question": "Aký názov práce má Ján Holp?"}, {"question": "Koľko osôb má prácu v roku 2024?"}],
}
INVALID = [{}, {"question": ""}, {"query": 5}, {"question": "x", "limit": 0}, {"question": "x", "limit": "2"},
           {"question": "x", "unknown": True}, {"query": "x" * 5000}]


async def mcp_session(docs: str, graph: str | None, cache: str) -> list[str]:
    """Return one line per check made through the SDK's ClientSession."""
    import jsonschema
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    args = [os.path.join(REPO, "docs_qa.py"), "mcp", "--docs", docs, "--cache-dir", cache]
    if graph:
        args += ["--graph", graph]
    params = StdioServerParameters(command=sys.executable, args=args, env=server_env(None))
    lines: list[str] = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            lines.append(f"initialize: protocol {field(init, 'protocol_version')}, "
                         f"server {field(init, 'server_info').name}")
            await session.send_ping()
            lines.append("ping: ok")
            tools = (await session.list_tools()).tools
            names = [t.name for t in tools]
            lines.append(f"tools/list: {', '.join(names)}")
            for tool in tools:
                validator = jsonschema.Draft202012Validator(field(tool, "output_schema"))
                for kind, cases in (("valid", VALID.get(tool.name, [])), ("invalid", INVALID)):
                    for arguments in cases:
                        lines.append(await call_one(session, tool.name, arguments, kind, validator))
    return lines


def field(obj, snake: str):
    """Return an SDK model's field by its snake_case name (mcp 2.x) or camelCase (1.x)."""
    if hasattr(obj, snake):
        return getattr(obj, snake)
    head, *rest = snake.split("_")
    return getattr(obj, head + "".join(part.capitalize() for part in rest))


async def call_one(session, name: str, arguments: dict, kind: str, validator) -> str:
    """Return the outcome of one tool call: status, isError, schema errors."""
    shown = json.dumps(arguments, ensure_ascii=False)
    shown = shown if len(shown) < 60 else shown[:57] + "..."
    try:
        result = await session.call_tool(name, arguments)
    except Exception as exc:  # the SDK's own validation (or a protocol error) failing
        return f"FAIL {name} {kind} {shown}: SDK raised {type(exc).__name__}: {str(exc)[:200]}"
    content, is_error = field(result, "structured_content"), field(result, "is_error")
    if content is None:
        return f"FAIL {name} {kind} {shown}: no structuredContent"
    errors = [e.message for e in validator.iter_errors(content)]
    expected_error = kind == "invalid"
    ok = not errors and bool(is_error) == expected_error
    verdict = "ok  " if ok else "FAIL"
    return (f"{verdict} {name} {kind} {shown}: status={content.get('status')} "
            f"reason={content.get('reason')} isError={is_error}"
            + (f" schema errors: {errors[:2]}" if errors else ""))


# -- main ----------------------------------------------------------------------------

def inner(args: argparse.Namespace) -> int:
    import openapi_spec_validator
    import schemathesis
    import mcp
    from importlib.metadata import version
    print("## Versions\n")
    for name in PACKAGES:
        print(f"- {name} {version(name)}")
    print(f"- Python {sys.version.split()[0]}\n")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for token in (None, TOKEN):
            label = "with a token" if token else "without a token"
            server = Server(args.docs, args.graph, os.path.join(tmp, "cache"), token)
            try:
                spec = fetch_spec(server.url, token)
                verdict = check_spec(spec)
                failed |= verdict.startswith("FAIL")
                print(f"## openapi-spec-validator, {label}\n\n{verdict}\n")
                code, summary = run_schemathesis(args.venv, server.url, token, args.max_examples)
                failed |= code != 0
                print(f"## Schemathesis, {label} (exit {code})\n\n```\n{summary}\n```\n")
            finally:
                server.close()
        for graph in (args.graph, None):
            lines = asyncio.run(mcp_session(args.docs, graph, os.path.join(tmp, "cache")))
            failed |= any(line.startswith("FAIL") for line in lines)
            listed = any("query_graph" in line for line in lines if line.startswith("tools/list"))
            if listed != bool(graph):
                failed = True
                lines.append("FAIL query_graph listed without a graph (or missing with one)")
            print(f"## MCP Python SDK, {'with' if graph else 'without'} --graph\n\n```\n"
                  + "\n".join(lines) + "\n```\n")
    print(f"Overall: {'FAILURES (see above)' if failed else 'no failures'}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.inner:
        return inner(args)
    python = ensure_venv(args.venv)
    if python is None:
        print(f"check_clients: skipped: cannot install {', '.join(PACKAGES)} into {args.venv}")
        return 0
    return subprocess.run([python, os.path.abspath(__file__), "--inner", *sys.argv[1:]]).returncode


if __name__ == "__main__":
    sys.exit(main())
