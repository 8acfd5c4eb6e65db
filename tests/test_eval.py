"""Tests of the metric functions in reports/eval_retrieval.py on hand-computed examples."""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "reports"))
import eval_retrieval as ev  # noqa: E402
import eval_answers  # noqa: E402


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


class ConfidenceAucTest(unittest.TestCase):
    @staticmethod
    def row(score, keys, kind="code", status="ok"):
        return {"kind": kind, "status": status, "keys": keys, "confidence": {"score": score, "level": "high"}}

    def test_every_right_answer_above_every_wrong_one_is_one_and_ties_count_half(self):
        rows = [self.row(0.9, True), self.row(0.8, True), self.row(0.3, False)]
        self.assertEqual(eval_answers.confidence_auc(rows), (1.0, 2, 1))
        self.assertEqual(eval_answers.confidence_auc([self.row(0.5, True), self.row(0.5, False)])[0], 0.5)
        # one pair of four in order: 0.25
        rows = [self.row(0.2, True), self.row(0.6, True), self.row(0.4, False), self.row(0.8, False)]
        self.assertEqual(eval_answers.confidence_auc(rows)[0], 0.25)

    def test_refusals_off_topic_questions_and_one_sided_sets_do_not_count(self):
        rows = [self.row(0.9, True), self.row(0.1, False, kind="none"), self.row(0.1, False, status="no_answer")]
        self.assertEqual(eval_answers.confidence_auc(rows), (None, 1, 0))


class KeysInSourcesTest(unittest.TestCase):
    def test_a_key_counts_when_one_returned_fragment_holds_it_whitespace_folded(self):
        envelope = {"sources": [{"text": "Run:\n\n    python  manage.py\n    runserver\n"}, {"text": "other"}]}
        self.assertTrue(eval_answers.keys_in_sources(envelope, ["python manage.py runserver"]))
        # every key must be found, each in some fragment; none found, or no keys, is False
        self.assertFalse(eval_answers.keys_in_sources(envelope, ["python manage.py runserver", "migrate"]))
        self.assertFalse(eval_answers.keys_in_sources({"sources": []}, ["other"]))
        self.assertFalse(eval_answers.keys_in_sources(envelope, []))


if __name__ == "__main__":
    unittest.main()


class SearchRankingsTest(unittest.TestCase):
    """docs_qa.search_rankings, the evaluation's data source, on a two-file corpus (mock vectors)."""

    def setUp(self):
        import tempfile
        import docs_qa
        self.docs_qa = docs_qa
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        for name, text in (("a.md", "# Koty\n\nKot pije mleko codziennie rano.\n"),
                           ("b.md", "# Psy\n\nPies biega po parku wieczorem.\n")):
            with open(os.path.join(self.tmp.name, name), "w", encoding="utf-8") as fh:
                fh.write(text)
        self.settings = docs_qa.Settings(docs_dir=self.tmp.name, embed_mock=True, limit=1)

    def test_each_method_ranks_and_bm25_puts_the_matching_file_first(self):
        ranked = self.docs_qa.search_rankings("kot mleko", self.settings, depth=5)
        self.assertEqual(set(ranked), {"bm25", "dense", "rrf"})
        self.assertEqual([c.path for c in ranked["bm25"]], ["a.md"])   # only a.md has the terms
        self.assertEqual(len(ranked["dense"]), 2)                      # dense ranks every chunk
        self.assertEqual(ranked["rrf"][0].path, "a.md")

    def test_no_matching_term_gives_no_fused_result(self):
        ranked = self.docs_qa.search_rankings("zebra", self.settings, depth=5)
        self.assertEqual(ranked["bm25"], [])
        self.assertEqual(ranked["rrf"], [])

    def test_rrf_is_the_order_search_returns(self):
        settings = self.docs_qa.Settings(docs_dir=self.tmp.name, embed_mock=True, limit=2, min_coverage=0.0)
        ranked = self.docs_qa.search_rankings("kot pies", settings, depth=5)
        hits = self.docs_qa.search("kot pies", settings).hits
        self.assertEqual([(c.path, c.start_line) for c in ranked["rrf"]],
                         [(h.chunk.path, h.chunk.start_line) for h in hits])
