"""Tests of reports/svg_charts.py: well-formed, self-contained SVG whose marks match the
data given, escaped labels, and missing values shown as missing, never drawn as numbers."""

import json
import os
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "reports"))
import svg_charts  # noqa: E402

NS = "{http://www.w3.org/2000/svg}"


def _parse(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == f"{NS}svg"
    return root


def _marks(root: ET.Element) -> list[ET.Element]:
    """Return the data marks: shapes that carry a <title> (legend markers included)."""
    return [e for e in root.iter() if e.tag in (f"{NS}circle", f"{NS}rect", f"{NS}polygon")
            and e.find(f"{NS}title") is not None]


class SvgChartTest(unittest.TestCase):

    def test_rank_chart_has_one_mark_per_query_and_method(self):
        text = svg_charts.rank_chart(["q1 a <b> & c", "q2"], {"BM25": [1, None], "RRF": [3, 100]},
                                     100, "Ranks")
        root = _parse(text)
        titles = [m.find(f"{NS}title").text for m in _marks(root)]
        self.assertEqual(len(titles), 2 + 4)                 # legend + 2 queries x 2 methods
        self.assertIn("q1 a <b> & c: BM25 rank 1", titles)
        self.assertIn("q2: BM25 not found", titles)
        self.assertIn("q2: RRF rank 100", titles)
        self.assertIn("&lt;b&gt; &amp; c", text)
        self.assertEqual(root.find(f"{NS}title").text, "Ranks")
        self.assertNotRegex(text, r"<script|href=|@import|url\(")

    def test_grouped_bars_label_values_and_mark_what_did_not_run(self):
        text = svg_charts.grouped_bar_chart(["adi", "cranfield"], {"BM25": [0.5, 0.377],
                                                                   "RRF": [None, 0.417]},
                                            "nDCG@10", "nDCG@10")
        root = _parse(text)
        bars = [m.find(f"{NS}title").text for m in _marks(root)
                if m.tag == f"{NS}rect" and ":" in m.find(f"{NS}title").text]     # not the legend
        self.assertEqual(sorted(bars), ["adi, BM25: 0.500", "cranfield, BM25: 0.377", "cranfield, RRF: 0.417"])
        labels = [t.text for t in root.iter(f"{NS}text")]
        self.assertIn("not run", labels)
        self.assertIn("0.417", labels)

    def test_line_chart_without_data_says_so(self):
        root = _parse(svg_charts.line_chart({}, "Index growth", "files", "seconds"))
        self.assertIn("no measurements yet", [t.text for t in root.iter(f"{NS}text")])
        root = _parse(svg_charts.line_chart({"cold": [(1000, 2.0), (10000, 21.5)]}, "Index growth",
                                            "files", "seconds", log_x=True))
        self.assertEqual(len(root.findall(f".//{NS}polyline")), 1)

    def test_ndcg_data_accumulates_across_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            svg_charts.save_ndcg_chart(tmp, "adi", {"BM25 only": {"nDCG@10": 0.4}}, "none")
            svg_charts.save_ndcg_chart(tmp, "cranfield", {"BM25 only": {"nDCG@10": 0.377},
                                                          "bm25s": {"nDCG@10": float("nan")}}, "none")
            with open(os.path.join(tmp, "ndcg-by-collection.json"), encoding="utf-8") as fh:
                data = json.load(fh)
            self.assertEqual(data, {"adi": {"embeddings": "none", "nDCG@10": {"BM25 only": 0.4}},
                                    "cranfield": {"embeddings": "none", "nDCG@10": {"BM25 only": 0.377}}})
            with open(os.path.join(tmp, "ndcg-by-collection.svg"), encoding="utf-8") as fh:
                root = _parse(fh.read())
            self.assertEqual(len([m for m in _marks(root) if m.tag == f"{NS}rect"
                                  and ":" in m.find(f"{NS}title").text]), 2)


if __name__ == "__main__":
    unittest.main()
