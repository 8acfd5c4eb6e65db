"""Tests of reports/make_shapes.py: the same documents, laid out as a few large files or as
a folder per document (no timing)."""

import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "reports"))
import make_shapes  # noqa: E402

DOCS = {f"d{i % 3}/page{i:02}.md": f"# Page {i}\n\n" + "words of the page " * (i + 1) + "\n" for i in range(10)}
DOCS["d0/last.txt"] = "no newline at the end"
OTHERS = {"d1/image.png": "not a document", ".hidden/x.md": "# hidden\n"}


class MakeShapesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.docs = os.path.join(self.tmp.name, "docs")
        for rel, text in {**DOCS, **OTHERS}.items():
            os.makedirs(os.path.dirname(os.path.join(self.docs, rel)), exist_ok=True)
            with open(os.path.join(self.docs, rel), "w") as fh:
                fh.write(text)
        # what every shape holds: each document once, in path order, ending in a newline
        self.expected = [DOCS[rel] if DOCS[rel].endswith("\n") else DOCS[rel] + "\n" for rel in sorted(DOCS)]

    def run_main(self, *args: str) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(make_shapes.main([self.docs, *args]), 0)
        return out.getvalue()

    def read_all(self, root: str) -> dict[str, str]:
        found = {}
        for folder, _, names in os.walk(root):
            for name in names:
                with open(os.path.join(folder, name)) as fh:
                    found[os.path.relpath(os.path.join(folder, name), root)] = fh.read()
        return found

    def test_large_files_hold_every_document_in_order(self):
        out = os.path.join(self.tmp.name, "large")
        self.assertIn("11 documents -> 3 files", self.run_main(out, "--shape", "large-files", "--files", "3"))
        parts = self.read_all(out)
        self.assertEqual(sorted(parts), ["part000.md", "part001.md", "part002.md"])
        self.assertEqual("".join(parts[name] for name in sorted(parts)), "".join(self.expected))

    def test_a_folder_per_document(self):
        out = os.path.join(self.tmp.name, "deep")
        self.run_main(out, "--shape", "folder-per-document")
        pages = self.read_all(out)
        self.assertEqual(len(pages), len(DOCS))
        self.assertTrue(all(rel.count(os.sep) == 3 and rel.endswith("page.md") for rel in pages))
        by_number = sorted(pages.items(), key=lambda item: int(item[0].split(os.sep)[2]))
        self.assertEqual([text for _, text in by_number], self.expected)

    def test_an_existing_output_is_refused(self):
        with self.assertRaises(SystemExit) as raised, contextlib.redirect_stderr(io.StringIO()):
            make_shapes.main([self.docs, self.docs, "--shape", "large-files"])
        self.assertEqual(raised.exception.code, 2)


if __name__ == "__main__":
    unittest.main()
