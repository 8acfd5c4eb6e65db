"""The supervisors of one year (issue 16, graph scale): the per-year ranking, built once per
loaded graph and year, equals a brute-force count over the raw edges of corpus/graph.json,
on the first question of a year and on every repeat."""

import json
import os
import unittest

from helpers import REPO

import graph_store as gs

DEMO = os.path.join(REPO, "corpus", "graph.json")
REPEATS = 2            # the first question builds the year's ranking, the second reads it
WIDE_FACT_LIMIT = 1000  # more than the demo graph's supervisors, so no name is cut


def brute_force_items(year: int) -> tuple[int, str]:
    """Return the number of supervisors of a year's theses and their 'Name (n)' list, ranked
    most theses first, then by name, counted directly from the file."""
    with open(DEMO, encoding="utf-8") as f:
        data = json.load(f)
    nodes = {n["id"]: n for n in data["nodes"]}
    counts: dict[str, int] = {}
    for e in data["edges"]:
        if e["type"] == "supervised_by" and nodes[e["source"]].get("year") == year:
            counts[e["target"]] = counts.get(e["target"], 0) + 1
    ranked = sorted(counts, key=lambda p: (-counts[p], nodes[p]["name"]))
    return len(counts), "; ".join(f"{nodes[p]['name']} ({counts[p]})" for p in ranked)


def demo_years() -> list[int]:
    """Return every thesis year of the demo file."""
    with open(DEMO, encoding="utf-8") as f:
        data = json.load(f)
    return sorted({n["year"] for n in data["nodes"] if n["type"] == "thesis"})


class SupervisorsOfAYearTest(unittest.TestCase):
    """Every year's supervisor list matches the raw edges, asked again and again."""

    def test_every_year_matches_a_brute_force_count(self):
        graph = gs.graph_load(DEMO)
        limits = gs.GraphLimits(fact_limit=WIDE_FACT_LIMIT)
        for year in demo_years():
            count, items = brute_force_items(year)
            for _ in range(REPEATS):
                with self.subTest(year=year):
                    env = gs.to_envelope(gs.ask(f"Kto viedol práce v roku {year}?", graph, limits)).to_dict()
                    self.assertEqual(env["intent"], "supervisor_list")
                    self.assertEqual(env["aggregation"], {
                        "count": count, "complete": True, "year": year, "counted": "supervisor",
                        "filters": [{"field": "year", "op": "eq", "value": year}]})
                    self.assertIn(f"({count}): {items}.", env["answer"])

    def test_a_year_without_theses_lists_none(self):
        graph = gs.graph_load(DEMO)
        for _ in range(REPEATS):
            env = gs.to_envelope(gs.ask("Kto viedol práce v roku 2010?", graph)).to_dict()
            self.assertEqual(env["intent"], "supervisor_list")
            self.assertEqual(env["aggregation"]["count"], 0)


if __name__ == "__main__":
    unittest.main()
