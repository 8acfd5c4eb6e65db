"""Tests of GET /source (section 18b) through a real server on 127.0.0.1: it serves only
documents the index holds, under the docs folder, clamps the range, says when a file
changed since indexing, and asks for the token like every other endpoint."""

from __future__ import annotations

import json
import os
import unittest

from helpers import LiveDocsServer, write_files

import retrieval_contract as rc

TOKEN = "page-t0ken-for-tests"
JPK_LINE_5 = ("Plik JPK_V7M składa się do 25. dnia miesiąca następującego po okresie "
              "rozliczeniowym.")


class SourceEndpointTest(unittest.TestCase):
    """One indexed server per test class; tests that change files get their own."""

    @classmethod
    def setUpClass(cls):
        cls.live = LiveDocsServer()
        cls.addClassCleanup(cls.live.close)
        # a document outside the docs folder, next to it, that no request may reach
        write_files(cls.live.tmp, {"secret.md": "# Secret\n\nthe outside file\n"})

    def get(self, target: str, live: LiveDocsServer | None = None, **headers: str):
        status, reply_headers, body = (live or self.live).request("GET", target, headers=headers)
        self.assertTrue(reply_headers["content-type"].startswith("application/json"), target)
        return status, json.loads(body)

    def assert_served(self, path: str, live: LiveDocsServer | None = None) -> None:
        """The control for each refusal test: the same server does serve an indexed path."""
        status, data = self.get(f"/source?path={path}&start=1", live)
        self.assertEqual((status, data.get("path")), (200, path))

    def assert_not_found(self, target: str, live: LiveDocsServer | None = None) -> None:
        status, env = self.get(target, live)
        self.assertEqual((status, env["status"], env["reason"]), (404, "error", "not_found"), target)
        self.assertNotIn("secret", json.dumps(env))
        self.assertNotIn("outside", json.dumps(env))

    # -- what it serves ----------------------------------------------------------------
    def test_cited_lines_come_with_context_and_are_marked(self):
        status, data = self.get("/source?path=jpk.md&start=5&end=5")
        self.assertEqual(status, 200)
        self.assertEqual((data["path"], data["start_line"], data["end_line"], data["total_lines"]),
                         ("jpk.md", 5, 5, 9))
        self.assertEqual([line["line"] for line in data["lines"]], [2, 3, 4, 5, 6, 7, 8])
        cited = [line for line in data["lines"] if line["cited"]]
        self.assertEqual(cited, [{"line": 5, "text": JPK_LINE_5, "cited": True}])
        self.assertEqual((data["freshness"], data["clamped"]), ("unchanged", False))

    def test_a_percent_encoded_slash_in_the_query_is_only_encoding(self):
        status, data = self.get("/source?path=faktury%2fkorekta.md&start=1&end=1&context=0")
        self.assertEqual((status, data["path"]), (200, "faktury/korekta.md"))
        self.assertEqual(data["lines"], [{"line": 1, "text": "# Faktura korygująca", "cited": True}])

    # -- paths it refuses --------------------------------------------------------------
    def test_paths_outside_the_index_are_404_envelopes(self):
        self.assert_served("jpk.md")
        write_files(self.live.docs, {"added-later.md": "# Later\n\nnot indexed yet\n",
                                     ".hidden.md": "# Hidden\n"})
        os.symlink(os.path.join(self.live.tmp, "secret.md"), os.path.join(self.live.docs, "link.md"))
        for path in ("nope.md", "added-later.md", ".hidden.md", "link.md", "secret.md", "",
                     "JPK.md", "jpk", "faktury", "faktury/"):
            with self.subTest(path=path):
                self.assert_not_found(f"/source?path={path}&start=1")

    def test_dot_dot_absolute_and_odd_spellings_are_404_envelopes(self):
        self.assert_served("jpk.md")
        absolute = os.path.join(self.live.docs, "jpk.md")
        for path in ("../secret.md", "faktury/../jpk.md", "faktury/../../secret.md", "./jpk.md",
                     "faktury//korekta.md", "faktury/./korekta.md", "/jpk.md", absolute,
                     "/etc/passwd", os.path.join(self.live.tmp, "secret.md"), "faktury\\korekta.md"):
            with self.subTest(path=path):
                self.assert_not_found("/source?path=" + path.replace("&", "%26") + "&start=1")

    def test_percent_encoded_tricks_are_404_envelopes(self):
        self.assert_served("jpk.md")
        for encoded in ("%2e%2e%2fsecret.md", "..%2fsecret.md", "%2E%2E/secret.md",
                        "%2fjpk.md", "%2Fetc%2Fpasswd", "jpk.md%00", "jpk.md%00.txt", "%00",
                        "%252e%252e%252fsecret.md", "jpk.md%0a", "faktury%5ckorekta.md",
                        "%c0%ae%c0%ae/secret.md", "jpk%ff.md", "jpk.md%20"):
            with self.subTest(encoded=encoded):
                self.assert_not_found(f"/source?path={encoded}&start=1")

    def test_the_endpoint_path_itself_is_matched_whole(self):
        self.assert_served("jpk.md")
        for target in ("/%73ource?path=jpk.md&start=1", "/source/?path=jpk.md&start=1",
                       "/source/../source?path=jpk.md&start=1", "/source;x?path=jpk.md&start=1"):
            with self.subTest(target=target):
                status, env = self.get(target)
                self.assertEqual((status, env["reason"]), (404, "not_found"))

    def test_a_folder_swapped_for_a_symlink_after_indexing_is_not_followed(self):
        live = LiveDocsServer()
        self.addCleanup(live.close)
        outside = write_files(os.path.join(live.tmp, "outside"),
                              {"korekta.md": "# Outside\n\nthe outside file\n"})
        self.assert_served("faktury/korekta.md", live)
        os.rename(os.path.join(live.docs, "faktury"), os.path.join(live.tmp, "faktury-moved"))
        os.symlink(outside, os.path.join(live.docs, "faktury"))
        self.assert_not_found("/source?path=faktury/korekta.md&start=1", live)

    # -- ranges --------------------------------------------------------------------------
    def test_a_range_past_the_end_is_clamped(self):
        status, data = self.get("/source?path=jpk.md&start=50&end=60")
        self.assertEqual((status, data["start_line"], data["end_line"], data["clamped"]), (200, 9, 9, True))
        self.assertEqual([line["line"] for line in data["lines"]], [6, 7, 8, 9])
        self.assertEqual([line["line"] for line in data["lines"] if line["cited"]], [9])

    def test_line_zero_and_a_backward_range_are_clamped(self):
        status, data = self.get("/source?path=jpk.md&start=0&end=0&context=0")
        self.assertEqual((status, data["start_line"], data["end_line"], data["clamped"]), (200, 1, 1, True))
        self.assertEqual(data["lines"], [{"line": 1, "text": "# JPK", "cited": True}])
        status, data = self.get("/source?path=jpk.md&start=5&end=2&context=0")
        self.assertEqual((data["start_line"], data["end_line"]), (5, 5))

    def test_end_defaults_to_start_and_context_is_capped(self):
        status, data = self.get("/source?path=notes.txt&start=3&context=999999")
        self.assertEqual((status, data["start_line"], data["end_line"]), (200, 3, 3))
        self.assertEqual(data["lines"][0]["line"], 1)          # all 3 lines, well within the cap

    def test_bad_fields_are_422_envelopes_naming_only_the_field(self):
        cases = {"/source?path=jpk.md": ["start"], "/source?start=1": ["path"],
                 "/source?path=jpk.md&start=x": ["start"], "/source?path=jpk.md&start=-1": ["start"],
                 "/source?path=jpk.md&start=1&end=1e3": ["end"],
                 "/source?path=jpk.md&start=%D9%A3": ["start"],          # an Arabic-Indic digit
                 "/source?path=jpk.md&start=1234567890": ["start"],
                 "/source?path=jpk.md&path=notes.txt&start=1": ["path"],
                 "/source?path=jpk.md&start=1&evil=1": ["evil"]}
        for target, fields in cases.items():
            with self.subTest(target=target):
                status, env = self.get(target)
                self.assertEqual((status, env["reason"], env["fields"]), (422, "invalid_request", fields))
        status, env = self.get("/source?" + "&".join(f"f{i}=1" for i in range(50)))
        self.assertEqual((status, env["reason"]), (422, "invalid_request"))

    def test_other_methods_are_405(self):
        status, headers, body = self.live.request("POST", "/source?path=jpk.md&start=1", b"{}")
        self.assertEqual((status, json.loads(body)["reason"], headers["allow"]),
                         (405, "method_not_allowed", "GET"))

    # -- freshness -----------------------------------------------------------------------
    def test_a_changed_file_is_served_as_it_is_now_and_said_to_have_changed(self):
        live = LiveDocsServer()
        self.addCleanup(live.close)
        path = os.path.join(live.docs, "jpk.md")
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("\nNowy wiersz dopisany po indeksowaniu.\n")
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        status, data = self.get("/source?path=jpk.md&start=11&end=11&context=0", live)
        self.assertEqual((status, data["freshness"], data["total_lines"]), (200, "changed", 11))
        self.assertEqual(data["lines"][0]["text"], "Nowy wiersz dopisany po indeksowaniu.")

    def test_a_touched_but_unchanged_file_is_unchanged(self):
        live = LiveDocsServer()
        self.addCleanup(live.close)
        path = os.path.join(live.docs, "jpk.md")
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        status, data = self.get("/source?path=jpk.md&start=5", live)
        self.assertEqual((status, data["freshness"]), (200, "unchanged"))

    def test_a_file_removed_after_indexing_is_404(self):
        live = LiveDocsServer()
        self.addCleanup(live.close)
        self.assert_served("notes.txt", live)
        os.remove(os.path.join(live.docs, "notes.txt"))
        self.assert_not_found("/source?path=notes.txt&start=1", live)

    def test_without_a_cache_folder_the_in_memory_index_is_used(self):
        live = LiveDocsServer(cache_dir=None)
        self.addCleanup(live.close)
        status, data = self.get("/source?path=jpk.md&start=5&context=0", live)
        self.assertEqual((status, data["freshness"], data["lines"][0]["text"]), (200, "unchanged", JPK_LINE_5))
        self.assert_not_found("/source?path=../secret.md&start=1", live)

    # -- auth and the spec ---------------------------------------------------------------
    def test_the_token_is_required_as_everywhere(self):
        live = LiveDocsServer(token=TOKEN)
        self.addCleanup(live.close)
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
            with self.subTest(headers=headers):
                status, env = self.get("/source?path=jpk.md&start=5", live, **headers)
                self.assertEqual((status, env["reason"]), (401, "unauthorized"))
                self.assertNotIn("JPK_V7M", json.dumps(env))
        status, env = self.get("/source?path=../secret.md&start=1", live)
        self.assertEqual(status, 401)                     # no probing for files without a token
        status, data = self.get("/source?path=jpk.md&start=5", live, Authorization=f"Bearer {TOKEN}")
        self.assertEqual((status, data["lines"][3]["text"]), (200, JPK_LINE_5))

    def test_it_is_in_openapi_without_an_operation_id(self):
        status, spec = self.get("/openapi.json")
        entry = spec["paths"]["/source"]["get"]
        self.assertNotIn("operationId", entry)
        self.assertEqual({p["name"] for p in entry["parameters"]}, {"path", "start", "end", "context"})
        self.assertEqual(entry["responses"]["404"]["content"]["application/json"]["schema"],
                         {"$ref": "#/components/schemas/Error"})
        self.assertEqual(spec["components"]["schemas"]["Error"], rc.error_schema())
        schema = entry["responses"]["200"]["content"]["application/json"]["schema"]
        status, data = self.get("/source?path=jpk.md&start=5")
        self.assertEqual(rc.schema_errors(data, schema), [])
        self.assertNotIn("operationId", spec["paths"]["/"]["get"])


if __name__ == "__main__":
    unittest.main()
