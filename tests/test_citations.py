"""The one citation parser and validator, and the lexical support score."""
import unittest

from helpers import docs_qa

CHUNKS = [docs_qa.Chunk("a.md", 10, 20, ("A",), "\n".join(f"linia {n}" for n in range(10, 21))),
          docs_qa.Chunk("dir/b.md", 1, 5, (), "\n".join(f"wiersz {n}" for n in range(1, 6)))]


def parsed(text):
    return [(c.path, c.start_line, c.end_line) for c in docs_qa.citation_parse(text)]


class ParserTest(unittest.TestCase):
    def test_forms_models_really_write(self):
        self.assertEqual(parsed("x [a.md:12-18] y"), [("a.md", 12, 18)])
        self.assertEqual(parsed("x [a.md:12]"), [("a.md", 12, 12)])
        self.assertEqual(parsed("x (a.md:12-18)"), [("a.md", 12, 18)])
        self.assertEqual(parsed("x [a.md:12-13; dir/b.md:2]"), [("a.md", 12, 13), ("dir/b.md", 2, 2)])
        self.assertEqual(parsed("x [a.md:L12-L18]"), [("a.md", 12, 18)])
        self.assertEqual(parsed("x a.md:12–14 y"), [("a.md", 12, 14)])
        self.assertEqual(parsed("Answer.\n\nSources:\n- a.md:11-12\n- [dir/b.md:3]"),
                         [("a.md", 11, 12), ("dir/b.md", 3, 3)])

    def test_github_style_line_anchors_are_citations(self):
        # what a model trained on GitHub links writes: path#L3-L5, path#L3
        self.assertEqual(parsed("x [a.md#L12-L18] y"), [("a.md", 12, 18)])
        self.assertEqual(parsed("x a.md#L12 y"), [("a.md", 12, 12)])
        self.assertEqual(parsed("x [a.md#L12-L13; dir/b.md:2]"), [("a.md", 12, 13), ("dir/b.md", 2, 2)])
        # a '#' without L is a heading anchor, not lines
        self.assertEqual(parsed("x [a.md#intro] y"), [])
        with_known = [(c.path, c.start_line, c.end_line)
                      for c in docs_qa.citation_parse("see dir/b.md#L2-L3.", ["dir/b.md"])]
        self.assertEqual(with_known, [("dir/b.md", 2, 3)])

    def test_a_stack_frames_line_and_column_are_no_citation(self):
        # a quoted stack trace's '(file:line:column)': the text between is never cut out as a
        # refused citation; a path with only a line in brackets is still read and refused
        self.assertEqual(parsed("at Module._load (node:internal/modules/cjs/loader:938:12)"), [])
        self.assertEqual(parsed("at Object.<anonymous> (/home/index.js:3:14)"), [])
        self.assertEqual(parsed("x (lib/loader.js:938)"), [("lib/loader.js", 938, 938)])

    def test_plain_brackets_are_not_citations(self):
        self.assertEqual(parsed("see [this note] and (25%) or [1]"), [])

    def test_disguised_link_is_flagged(self):
        cites = docs_qa.citation_parse("[a.md:12-13](https://evil.example)")
        self.assertEqual(cites[0].problem, "link_disguised")


class ValidatorTest(unittest.TestCase):
    def problems(self, text):
        return [(c.valid, c.problem) for c in docs_qa.citation_validate(docs_qa.citation_parse(text), CHUNKS)]

    def test_valid_inside_fragment(self):
        self.assertEqual(self.problems("[a.md:10-20] [dir/b.md:2-3] [./a.md:15]"),
                         [(True, None)] * 3)

    def test_each_problem(self):
        self.assertEqual(self.problems("[c.md:1]"), [(False, "unknown_path")])
        self.assertEqual(self.problems("[a.md:9-12]"), [(False, "out_of_range")])
        self.assertEqual(self.problems("[a.md:15-12]"), [(False, "bad_range")])
        self.assertEqual(self.problems("[../a.md:10]"), [(False, "outside_root")])
        self.assertEqual(self.problems("[/etc/passwd:1-2]"), [(False, "outside_root")])
        self.assertEqual(self.problems("[a.md:10-999999999]"), [(False, "out_of_range")])

    def test_support_score(self):
        self.assertEqual(docs_qa.citation_support("linia jedenaście", "linia jedenaście tutaj"), 1.0)
        self.assertEqual(docs_qa.citation_support("koty psy", "linia tekstu"), 0.0)

    def test_a_short_sentence_is_stemmed_as_the_lines_it_cites(self):
        # a list item quoted from an English page tells no language of its own: stemmed apart
        # ('using', 'operation') it missed the page's Porter stems ('use', 'oper') and was removed
        # from the answer as unsupported (FastAPI's first steps, '* using a get operation')
        lines = ("The decorator tells FastAPI that the function below is in charge of handling the "
                 "requests that go to:\n\n* the path `/`\n* using a <code>get</code> operation")
        self.assertEqual(docs_qa.citation_support("* using a get operation", lines), 1.0)
        self.assertEqual(docs_qa.citation_support("using operations", lines), 1.0)


if __name__ == "__main__":
    unittest.main()
