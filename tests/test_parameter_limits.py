"""BM25's k1 and b are checked wherever they enter: the CLI (a usage error, exit 2),
settings_from_env (InvalidRequestError), and HTTP/MCP, whose schemas do not accept them
(issue 12, item 9: division by zero, NaN in --json, b = 5 accepted silently)."""

from __future__ import annotations

import json
import math
import unittest

from helpers import TAX_CORPUS, TempDirTest, run_cli, write_files

import docs_qa
import retrieval_contract as rc


class Bm25ParameterTest(TempDirTest):
    def setUp(self) -> None:
        super().setUp()
        write_files(self.docs, TAX_CORPUS)

    def test_bad_k1_or_b_on_the_command_line_is_a_usage_error(self):
        for flags in (["--k1", "-1", "--b", "0"], ["--k1", "nan"], ["--k1", "inf"], ["--b", "5"],
                      ["--b", "-0.1"], ["--b", "nan"]):
            with self.subTest(flags=flags):
                proc = run_cli("JPK", "--docs", self.docs, "--no-cache", "--search", "--json", *flags)
                self.assertEqual(proc.returncode, 2, proc.stdout)
                self.assertEqual(proc.stdout, "")
                self.assertIn("finite number", proc.stderr)
                self.assertNotIn("Traceback", proc.stderr)

    def test_the_edges_of_the_ranges_are_accepted_and_give_finite_json(self):
        for flags in (["--k1", "0", "--b", "0"], ["--k1", "0", "--b", "1"], ["--k1", "3", "--b", "1"]):
            with self.subTest(flags=flags):
                proc = run_cli("JPK termin", "--docs", self.docs, "--no-cache", "--search", "--json", *flags)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                envelope = json.loads(proc.stdout, parse_constant=lambda name: self.fail(name))
                self.assertEqual(envelope["status"], "ok")

    def test_settings_from_env_refuses_bad_k1_and_b(self):
        for k1, b in ((-1.0, 0.0), (math.nan, 0.5), (1.2, 5.0), (math.inf, 0.5), (1.2, math.nan)):
            with self.subTest(k1=k1, b=b):
                with self.assertRaises(rc.InvalidRequestError):
                    docs_qa.settings_from_env({}, docs_dir=self.docs, k1=k1, b=b)
        self.assertEqual(docs_qa.settings_from_env({}, docs_dir=self.docs, k1=0.0, b=1.0).b, 1.0)

    def test_http_and_mcp_requests_cannot_set_k1_or_b(self):
        for name in ("search", "rag"):
            with self.subTest(operation=name), self.assertRaises(rc.InvalidRequestError):
                docs_qa.operation_validate(docs_qa.OPERATIONS[name], {"query": "JPK", "question": "JPK",
                                                                      "k1": -1, "b": 5})


if __name__ == "__main__":
    unittest.main()
