"""Tests of the metric functions in reports/eval_retrieval.py on hand-computed examples."""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "reports"))
import eval_retrieval as ev  # noqa: E402


class HitRankTest(unittest.TestCase):
    EXPECTED = [{"path": "a.md", "start_line": 20, "end_line": 25}]

    def test_overlap_on_a_shared_boundary_line_counts(self):
        chunks = [("x.md", 1, 5), ("a.md", 10, 20)]
        self.assertEqual(ev.first_hit_rank(chunks, self.EXPECTED), 2)

    def test_same_path_without_overlap_is_not_a_hit(self):
        self.assertIsNone(ev.first_hit_rank([("a.md", 1, 19), ("a.md", 26, 30)], self.EXPECTED))

    def test_hit_at_and_reciprocal_rank(self):
        self.assertEqual(ev.hit_at(5, 5), 1.0)
        self.assertEqual(ev.hit_at(6, 5), 0.0)
        self.assertEqual(ev.hit_at(None, 5), 0.0)
        self.assertEqual(ev.reciprocal_rank(4), 0.25)
        self.assertEqual(ev.reciprocal_rank(11), 0.0)   # MRR@10


class RankingMetricTest(unittest.TestCase):
    def test_document_rank_is_its_best_chunk(self):
        self.assertEqual(ev.doc_ranking(["docs/3.md", "docs/1.md", "docs/3.md"]), ["3", "1"])

    def test_ndcg_with_graded_gains(self):
        # DCG = 0 + 2/log2(3) + 1/log2(4) = 1.26186 + 0.5; IDCG = 2/1 + 1/log2(3) = 2.63093
        value = ev.ndcg_at(["a", "b", "c"], {"b": 2.0, "c": 1.0})
        self.assertAlmostEqual(value, 1.76186 / 2.63093, places=4)

    def test_ndcg_perfect_order_is_one_and_no_relevant_is_zero(self):
        self.assertAlmostEqual(ev.ndcg_at(["b", "c"], {"b": 2.0, "c": 1.0}), 1.0)
        self.assertEqual(ev.ndcg_at(["a"], {}), 0.0)

    def test_ndcg_cuts_at_k(self):
        self.assertEqual(ev.ndcg_at(["a", "b"], {"b": 3.0}, k=1), 0.0)

    def test_recall_at_k(self):
        self.assertEqual(ev.recall_at(["a", "b", "c"], {"c", "d"}, k=2), 0.0)
        self.assertEqual(ev.recall_at(["a", "b", "c"], {"c", "d"}, k=3), 0.5)

    def test_mean_of_nothing_is_zero(self):
        self.assertEqual(ev.mean([]), 0.0)
        self.assertTrue(math.isclose(ev.mean([1.0, 0.0, 0.5]), 0.5))


if __name__ == "__main__":
    unittest.main()
