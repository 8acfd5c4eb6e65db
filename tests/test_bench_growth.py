"""Tests of the folder generator and the growth fit in reports/bench_growth.py (no timing)."""

import contextlib
import io
import os
import random
import re
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "reports"))
import bench_growth as bg  # noqa: E402

TEXT = "\n".join(f"# Title {i}\n\n- Extract the archive into a directory called output:\n\n`tar xf archive.tar`\n"
                 for i in range(60))


class PerturbTest(unittest.TestCase):
    def test_same_seed_same_text_and_lines_kept(self):
        a = bg.perturb(TEXT, random.Random(3))
        self.assertEqual(a, bg.perturb(TEXT, random.Random(3)))
        self.assertNotEqual(a, bg.perturb(TEXT, random.Random(4)))
        self.assertEqual(a.count("\n"), TEXT.count("\n"))
        self.assertEqual(re.sub(r"[A-Za-z]", "", a), re.sub(r"[A-Za-z]", "", TEXT))  # only letters change

    def test_about_the_rate_of_long_words_change(self):
        words = bg.WORD.findall(TEXT)
        changed = sum(x != y for x, y in zip(words, bg.WORD.findall(bg.perturb(TEXT, random.Random(1)))))
        self.assertGreater(changed, 0.5 * bg.PERTURB_RATE * len(words))
        self.assertLess(changed, 1.5 * bg.PERTURB_RATE * len(words))

    def test_new_vocabulary_grows_ever_slower(self):
        seen = set(bg.WORD.findall(TEXT))
        new = []
        for copy in range(1, 9):
            words = set(bg.WORD.findall(bg.perturb(TEXT * 5, random.Random(copy))))
            new.append(len(words - seen))
            seen |= words
        self.assertGreater(new[0], 0)
        self.assertLess(sum(new[4:]), sum(new[:4]))


class NewQuestionsTest(unittest.TestCase):
    def test_each_a_different_example_description_of_the_english_pages_seeded(self):
        with tempfile.TemporaryDirectory() as docs:
            for folder, word in (("pages", "archive"), ("pages.de", "Archiv")):
                for n in range(8):
                    os.makedirs(os.path.join(docs, folder, "common"), exist_ok=True)
                    with open(os.path.join(docs, folder, "common", f"tool{n}.md"), "w", encoding="utf-8") as fh:
                        fh.write(f"# tool{n}\n\n> A tool.\n\n- Extract the {word} number {n} here:\n\n`tool{n} x`\n")
            files = bg.source_files(docs)
            asked = bg.new_questions(docs, files, 5)
            self.assertEqual(len(set(asked)), 5)
            self.assertTrue(all(q.startswith("Extract the archive number ") for q in asked), asked)
            self.assertEqual(asked, bg.new_questions(docs, files, 5))
            self.assertNotEqual(asked, bg.new_questions(docs, files, 5, seed=bg.SEED + 1))


class FolderTest(unittest.TestCase):
    def test_sizes_below_and_above_the_source(self):
        with tempfile.TemporaryDirectory() as root:
            docs = os.path.join(root, "docs")
            os.makedirs(os.path.join(docs, "sub"))
            os.makedirs(os.path.join(docs, ".hidden"))
            for name in ("a.md", "sub/b.md", "sub/c.txt", ".hidden/d.md", "sub/e.png"):
                with open(os.path.join(docs, name), "w") as fh:
                    fh.write(TEXT)
            files = bg.source_files(docs)
            self.assertEqual(files, ["a.md", os.path.join("sub", "b.md"), os.path.join("sub", "c.txt")])
            work = os.path.join(root, "work")
            small = bg.build_folder(docs, files, 2, work)
            self.assertEqual(sum(len(n) for _, _, n in os.walk(small)), 2)
            with contextlib.redirect_stderr(io.StringIO()) as progress:   # not into the suite's output
                large = bg.build_folder(docs, files, 7, work)
            self.assertEqual(progress.getvalue(), "growth: copy 1 of 2 written\ngrowth: copy 2 of 2 written\n")
            found = sorted(os.path.relpath(os.path.join(d, n), large) for d, _, names in os.walk(large) for n in names)
            self.assertEqual(len(found), 7)
            self.assertIn(os.path.join("copy02", "a-c2.md"), found)          # 3 + 3 + the first of copy 2
            self.assertNotIn(os.path.join("copy02", "sub", "b-c2.md"), found)
            with open(os.path.join(large, "copy01", "a-c1.md")) as fh:
                self.assertNotEqual(fh.read(), TEXT)


class FitTest(unittest.TestCase):
    def test_slopes(self):
        self.assertAlmostEqual(bg.loglog_slope([(10, 3.0), (100, 30.0), (1000, 300.0)]), 1.0)
        self.assertAlmostEqual(bg.loglog_slope([(10, 2.0), (1000, 2.0)]), 0.0)
        self.assertEqual(bg.growth_word(0.5), "sub-linear")

    def test_practical_limit_extrapolates_from_the_largest_size(self):
        self.assertEqual(bg._practical_limit([(100, 1.0), (1000, 10.0)], 1.0, 100.0), "≈ 10,000 files")
        self.assertEqual(bg._practical_limit([(100, 1.0), (1000, 10.0)], 1.0, 5.0), "already at 1,000 files")
        self.assertEqual(bg._practical_limit([(100, 1.0), (1000, 1.0)], 0.0, 5.0), "not reached (flat)")


if __name__ == "__main__":
    unittest.main()
