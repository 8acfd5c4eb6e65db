"""Tests of retrieval_contract: envelope shape, error_result safety, schemas."""
import json
import unittest

import retrieval_contract as rc


class ErrorResultTest(unittest.TestCase):
    def test_untyped_exception_becomes_internal_error_without_its_text(self):
        env = rc.error_result(RuntimeError("password=hunter2 at /home/me/secret.db")).to_dict()
        self.assertEqual(env["status"], "error")
        self.assertEqual(env["reason"], "internal_error")
        text = json.dumps(env)
        self.assertNotIn("hunter2", text)
        self.assertNotIn("/home/me", text)
        self.assertIsNone(env["index_version"])
        self.assertIs(env["complete"], False)
        self.assertEqual(env["sources"], [])

    def test_typed_error_keeps_reason_status_and_field_names_not_message(self):
        exc = rc.InvalidRequestError("limit=-5 is bad for /srv/x", field_names=["limit", "limit"])
        env = rc.error_result(exc).to_dict()
        self.assertEqual((env["reason"], exc.http_status), ("invalid_request", 422))
        self.assertEqual(env["fields"], ["limit"])
        self.assertNotIn("-5", json.dumps(env))
        self.assertNotIn("/srv", json.dumps(env))

    def test_every_error_reason_maps_to_its_http_code(self):
        expected = {rc.InvalidQueryError: 400, rc.UnauthorizedError: 401, rc.NotFoundError: 404,
                    rc.MethodNotAllowedError: 405, rc.InvalidRequestError: 422,
                    rc.RetrievalUnavailableError: 503, rc.InternalError: 500}
        for cls, code in expected.items():
            self.assertEqual(cls().http_status, code, cls.__name__)
            self.assertEqual(rc.error_result(cls()).to_dict()["reason"], cls.reason)

    def test_error_envelope_matches_error_schema(self):
        env = rc.error_result(rc.RetrievalUnavailableError()).to_dict()
        self.assertEqual(rc.schema_errors(env, rc.error_schema()), [])


class EnvelopeTest(unittest.TestCase):
    def test_unknown_status_or_reason_is_refused(self):
        with self.assertRaises(ValueError):
            rc.Envelope(status="fine")
        with self.assertRaises(ValueError):
            rc.Envelope(status="no_answer", reason="nothing_here")

    def test_extra_cannot_override_common_field(self):
        with self.assertRaises(ValueError):
            rc.Envelope(status="ok", extra={"status": "error"}).to_dict()

    def test_sources_serialise_with_their_extras(self):
        env = rc.Envelope(status="ok", sources=[rc.Source("S1", "a/b.md", extra={"start_line": 3})])
        self.assertEqual(env.to_dict()["sources"],
                         [{"source_id": "S1", "document_path": "a/b.md", "source_url": None,
                           "title": None, "start_line": 3}])


class SchemaTest(unittest.TestCase):
    def test_schema_declares_exactly_the_common_fields_plus_extras(self):
        schema = rc.envelope_schema({"mode": {"type": "string"}})
        self.assertEqual(set(schema["properties"]), {
            "status", "reason", "sources", "index_version", "complete", "truncated",
            "truncation_reasons", "mode"})
        self.assertFalse(schema["additionalProperties"])

    def test_schema_errors_finds_undeclared_missing_and_mistyped(self):
        schema = rc.envelope_schema({"mode": {"type": "string"}})
        good = rc.Envelope(status="ok", extra={"mode": "bm25"}).to_dict()
        self.assertEqual(rc.schema_errors(good, schema), [])
        self.assertEqual(rc.schema_errors({**good, "surprise": 1}, schema), ["$.surprise"])
        missing = dict(good)
        del missing["mode"]
        self.assertEqual(rc.schema_errors(missing, schema), ["$.mode"])
        self.assertEqual(rc.schema_errors({**good, "truncated": "no"}, schema), ["$.truncated"])
        self.assertEqual(rc.schema_errors({**good, "complete": 1}, schema), ["$.complete"])

    def test_bool_is_not_an_integer(self):
        self.assertEqual(rc.schema_errors(True, {"type": "integer"}), ["$"])
        self.assertEqual(rc.schema_errors(3, {"type": "integer", "minimum": 1, "maximum": 2}), ["$"])


if __name__ == "__main__":
    unittest.main()


class ModuleSurfaceTest(unittest.TestCase):
    """The public surface and the map of each module: __all__ lists every public name and
    nothing else; the docstring's table of contents names every section banner."""

    MODULES = ("docs_qa", "retrieval_contract")

    def public_names(self, module) -> set[str]:
        import ast
        import inspect
        tree = ast.parse(inspect.getsource(module))
        names = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name)
                             and not t.id.isupper() and t.id != "__all__")
        return {name for name in names if not name.startswith("_")}

    def test_all_lists_every_public_function_class_and_type_and_only_names_that_exist(self):
        import importlib
        for name in self.MODULES:
            module = importlib.import_module(name)
            with self.subTest(module=name):
                self.assertEqual(sorted(self.public_names(module) - set(module.__all__)), [])
                self.assertEqual([n for n in module.__all__ if not hasattr(module, n)], [])

    def test_docs_qa_table_of_contents_names_every_section_banner(self):
        import re
        import docs_qa
        with open(docs_qa.__file__, encoding="utf-8") as f:
            source = f.read()
        banners = re.findall(r"^# (?:===|---) (\d+[a-z]?)\. ", source, re.M)
        listed = re.findall(r"^ {4,}(\d+[a-z]?)\. ", docs_qa.__doc__, re.M)
        self.assertEqual(banners, listed)
