"""Graph answers as people ask (issue 16): the one text renderer through docs_qa.py --graph
and MCP query_graph, what is known when the asked relation is absent, did-you-mean for
typos (never chosen), and the question forms in Slovak (inflected and without diacritics),
English and Polish, all on the demo graph corpus/graph.json."""

import json
import os
import tempfile
import unittest

from helpers import REPO, run_cli
from test_mcp import McpSession

import graph_store as gs

DEMO = os.path.join(REPO, "corpus", "graph.json")


def demo() -> gs.Graph:
    """Return the demo graph, loaded once per process."""
    if not hasattr(demo, "graph"):
        demo.graph = gs.graph_load(DEMO)
    return demo.graph


def raw_edges(edge_type: str) -> list[tuple[str, str]]:
    """Return (source, target) of every edge of a type in the demo file, read directly."""
    with open(DEMO, encoding="utf-8") as f:
        data = json.load(f)
    return [(e["source"], e["target"]) for e in data["edges"] if e["type"] == edge_type]


def ask(question: str, **limits) -> dict:
    """Return the envelope dict of a question on the demo graph."""
    return gs.to_envelope(gs.ask(question, demo(), gs.GraphLimits(**limits))).to_dict()


# === One renderer: docs_qa.py --graph, graph_store.py and MCP show the same evidence ===

class MainEntryPointTextTest(unittest.TestCase):
    """docs_qa.py --graph prints the graph's facts, their [S1] sources and candidates."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.cache = cls._tmp.name

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def run_main(self, question: str, *extra: str):
        return run_cli(question, "--docs", os.path.join(REPO, "corpus"), "--graph", DEMO,
                       "--no-embed", "--cache-dir", self.cache, *extra)

    def test_facts_with_their_sources(self):
        proc = self.run_main("Ako sa volá práca Jána Holpa?")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("„Strojový preklad právnych textov“ (2024)", proc.stdout)
        self.assertIn("  - Práca „Strojový preklad právnych textov“ (2024) — autor: Ján Holp. [S1]",
                      proc.stdout)
        self.assertIn("  [S1] wiki/prace/2024-holp.md", proc.stdout)
        self.assertIn("tool: graph", proc.stdout)

    def test_same_text_as_graph_store_cli(self):
        question = "Who supervised Eva Šimková?"
        main = self.run_main(question, "--limit", "4")
        graph_cli = run_cli("graph_store.py", question, "--graph", DEMO, "--limit", "4")
        self.assertEqual(main.stdout, graph_cli.stdout)

    def test_ambiguous_answer_lists_candidates(self):
        proc = self.run_main("Kto je Peter?")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for line in ("  ? Peter Novák (p-novak):", "  ? Peter Lukáč (p-peter-lukac):",
                     "  ? Peter Sloboda (p-peter-sloboda):"):
            self.assertIn(line, proc.stdout)
        self.assertIn("status: ambiguous (ambiguous_person)", proc.stdout)

    def test_count_shows_aggregation_and_limits_speak_of_facts(self):
        proc = self.run_main("Koľko osôb má prácu v roku 2024?", "--limit", "2")
        self.assertIn("Počet: 16 (počítané: person; úplné: true)", proc.stdout)
        self.assertIn("Dosiahnuté limity: fact_limit, path_limit (faktov a ciest je viac", proc.stdout)
        self.assertNotIn("fragments", proc.stdout)
        self.assertEqual(proc.stdout.count(" — autor: "), 2)

    def test_not_understood_falls_back_and_says_which_tool(self):
        proc = self.run_main("Aký je termín podania?", "--search", "--json")
        env = json.loads(proc.stdout)
        self.assertEqual(env["tool"], "search")
        self.assertEqual(env["notes"][0]["code"], "graph_not_applicable")
        text = self.run_main("Aký je termín podania?", "--search").stdout
        self.assertIn("graph_not_applicable", text)

    def test_did_you_mean_through_the_main_entry_point(self):
        proc = self.run_main("Who is Jan Hlop?", "--json")
        env = json.loads(proc.stdout)
        self.assertEqual((env["tool"], env["status"], env["reason"]), ("graph", "no_answer", "unknown_person"))
        self.assertIn("Did you mean Ján Holp?", self.run_main("Who is Jan Hlop?").stdout)


class McpQueryGraphTextTest(unittest.TestCase):
    """MCP query_graph's text content is the same renderer's output."""

    def test_text_has_facts_sources_and_candidates(self):
        with tempfile.TemporaryDirectory() as tmp:
            session = McpSession(os.path.join(REPO, "corpus"), tmp, "--graph", DEMO, "--no-embed")
            try:
                session.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                               "clientInfo": {"name": "t", "version": "0"}})
                session.send("notifications/initialized", notify=True)
                facts = session.request("tools/call", {"name": "query_graph", "arguments": {
                    "question": "Kto je vedúci práce Jána Holpa?"}})["result"]
                ambiguous = session.request("tools/call", {"name": "query_graph", "arguments": {
                    "question": "Who is Peter?"}})["result"]
            finally:
                session.close()
        text = facts["content"][0]["text"]
        self.assertIn("Peter Novák", text.splitlines()[0])
        self.assertIn("  - Práca „Strojový preklad právnych textov“ (2024) — vedúci: Peter Novák. [S1]", text)
        self.assertIn("  [S1] wiki/prace/2024-holp.md", text)
        self.assertEqual(text, gs.format_answer_text(facts["structuredContent"]))
        text = ambiguous["content"][0]["text"]
        self.assertIn("Candidates:", text)
        self.assertIn("  ? Peter Lukáč (p-peter-lukac):", text)


# === What is known when the asked relation is absent ===

class AbsentRelationTest(unittest.TestCase):
    def test_supervisor_who_wrote_nothing(self):
        env = ask("Who supervised Eva Šimková?")
        supervised = [t for t, p in raw_edges("supervised_by") if p == "p-simkova"]
        self.assertEqual((env["status"], env["reason"]), ("no_answer", "no_matching_facts"))
        self.assertTrue(env["answer"].startswith(
            f"Eva Šimková wrote no thesis in the graph; the graph has: theses supervised "
            f"({len(supervised)}): „Automatická kontrola pravopisu slovenských textov“ (2020)"),
            env["answer"])
        self.assertEqual({f["subject"] for f in env["facts"]}, set(supervised))
        self.assertTrue(all(f["source_id"] for f in env["facts"]))

    def test_slovak_and_supervised_nothing(self):
        env = ask("Ktoré práce viedol Ján Holp?")
        self.assertTrue(env["answer"].startswith("Osoba Ján Holp neviedla v grafe žiadnu prácu; "
                                                 "v grafe je: napísané práce (1): „Strojový preklad"),
                        env["answer"])

    def test_keyword_without_thesis_in_the_asked_year(self):
        env = ask("Ktoré práce s kľúčovým slovom robotika sú z roku 2023?")
        tagged = [t for t, k in raw_edges("has_keyword") if k == "k-rob"]
        self.assertEqual(env["status"], "no_answer")
        self.assertIn("Žiadna práca s kľúčovým slovom robotika nie je z roku 2023; v grafe je: "
                      f"práce s týmto kľúčovým slovom ({len(tagged)}):", env["answer"])
        self.assertIn("(2019)", env["answer"])

    def test_keyword_with_a_thesis_in_the_asked_year_is_filtered(self):
        env = ask("Ktoré práce s kľúčovým slovom robotika sú z roku 2024?")
        self.assertEqual(env["status"], "ok")
        self.assertEqual([f["subject"] for f in env["facts"]], ["t-2024-beno"])

    def test_entity_with_no_edges(self):
        self.assertEqual(ask("Kto je Igor Dlhý?")["answer"],
                         "Igor Dlhý (Ing. Igor Dlhý, PhD.) je v grafe, ale nespája ho s ničím žiadna hrana.")
        env = ask("Which theses have the keyword quantum computing?")
        self.assertEqual(env["answer"], "No thesis in the graph has the keyword kvantové výpočty; "
                                        "the graph has no other facts about it.")


# === Did you mean: names of similar spelling, offered and never chosen ===

class DidYouMeanTest(unittest.TestCase):
    def assert_offered(self, question: str, names: list[str], reason: str = "unknown_person"):
        env = ask(question)
        self.assertEqual((env["status"], env["reason"]), ("no_answer", reason), question)
        offered = [c["name"] for c in env["rejected_candidates"] if c["why"] == "similar spelling"]
        self.assertEqual(offered, names, question)
        return env

    def test_one_letter_typos(self):
        for question in ("Aký názov práce má Jan Holpp?", "Who is Jan Hlp?", "Kto je Eva Simkva?",
                         "Aký názov práce má Ján Hlop?"):     # a swap of neighbours is one edit
            self.assert_offered(question, ["Eva Šimková"] if "Simkva" in question else ["Ján Holp"])
        self.assert_offered("Aký názov práce má Ján Xyzwq?", [])     # far names are not offered

    def test_two_letter_typos(self):
        self.assert_offered("Aký názov práce má Jan Hlopp?", ["Ján Holp"])
        self.assert_offered("Who supervised Eva Simkoova?", ["Eva Šimková"])

    def test_keyword_and_title_typos(self):
        self.assert_offered("Ktoré práce majú kľúčové slovo robotka?", ["robotika"], "unknown_keyword")
        self.assert_offered("Kto napísal prácu Penetracne testovanei univerzitnej?",
                            ["Penetračné testovanie univerzitnej siete"], "unknown_title")

    def test_text_asks_in_the_question_language(self):
        self.assertIn("Did you mean Ján Holp?", ask("Who is Jan Holpp?")["answer"])
        self.assertIn("Mysleli ste Ján Holp?", ask("Kto je Ján Hlop?")["answer"])
        self.assertIn("Czy chodziło o Ján Holp?", ask("Jaki jest tytuł pracy Jana Hlopa?")["answer"])
        text = gs.format_answer_text(ask("Who is Jan Holpp?"))
        self.assertIn("  - Ján Holp (p-jan-holp): similar spelling", text)

    def test_a_typo_is_never_chosen(self):
        # even the only, one-edit-away candidate is asked about, not answered for
        env = self.assert_offered("Aký názov práce má Jan Holpp?", ["Ján Holp"])
        self.assertEqual((env["entities"], env["facts"], env["sources"]), ([], [], []))
        self.assertNotIn("Strojový preklad", env["answer"])
        self.assertEqual(env["rejected_candidates"][0]["distance"], 1)



class NamesakesTest(unittest.TestCase):
    """Thousands of namesakes are rejected lazily: shown up to entity_limit, counted exactly."""

    def setUp(self):
        nodes = [{"id": "p-holp", "type": "person", "name": "Ján Holp"},
                 {"id": "t-holp", "type": "thesis", "title": "Strojový preklad", "year": 2024}]
        nodes += [{"id": f"p{i:03}", "type": "person", "name": f"Ján Kováč{i}"} for i in range(30)]
        edges = [{"source": "p-holp", "target": "t-holp", "type": "authored"}]
        self.graph = gs.graph_build({"nodes": nodes, "edges": edges})

    def test_full_match_among_namesakes(self):
        result = gs.ask("Aký názov práce má Ján Holp?", self.graph, gs.GraphLimits(entity_limit=5))
        self.assertEqual([e["id"] for e in result.entities], ["p-holp"])
        self.assertEqual([c["id"] for c in result.rejected_candidates], ["p000", "p001", "p002", "p003", "p004"])
        self.assertIn("25 further rejected candidates are not listed (entity_limit)", result.reasons)

    def test_typo_among_namesakes(self):
        result = gs.ask("Aký názov práce má Ján Hlopp?", self.graph, gs.GraphLimits(entity_limit=5))
        self.assertEqual(result.status, "no_answer")
        self.assertEqual([(c["id"], c["why"]) for c in result.rejected_candidates[:2]],
                         [("p-holp", "similar spelling"),
                          ("p000", "the question names a word this person's name lacks")])
        self.assertIn("26 further rejected candidates are not listed (entity_limit)", result.reasons)

    def test_namesakes_read_past_the_first_sorted_batch_stay_in_order(self):
        # 150 namesakes in shuffled file order (more than ORDERED_READ_AHEAD): the one hit by
        # two words comes first, then every other one in id order, on both paths
        ids = [f"p{(i * 37) % 150:03}" for i in range(150)]
        nodes = [{"id": "p-holp", "type": "person", "name": "Ján Holp"},
                 {"id": "p-zz", "type": "person", "name": "Ján Mrkva Holp"},
                 {"id": "t-holp", "type": "thesis", "title": "Strojový preklad", "year": 2024}]
        nodes += [{"id": i, "type": "person", "name": f"Ján Kováč{i}"} for i in ids]
        edges = [{"source": "p-holp", "target": "t-holp", "type": "authored"}]
        graph = gs.graph_build({"nodes": nodes, "edges": edges})
        limits = gs.GraphLimits(entity_limit=200)
        full = gs.ask("Aký názov práce má Ján Holp?", graph, limits)
        self.assertEqual([c["id"] for c in full.rejected_candidates], ["p-zz"] + sorted(ids))
        typo = gs.ask("Aký názov práce má Ján Hlopp?", graph, limits)
        self.assertEqual([c["id"] for c in typo.rejected_candidates],
                         ["p-holp", "p-zz"] + sorted(ids))


# === Question forms: >= 3 phrasings each (Slovak inflected, without diacritics, English, Polish) ===

class QuestionFormsTest(unittest.TestCase):
    def assert_form(self, questions: list[str], kind: str, check) -> None:
        for question in questions:
            with self.subTest(question=question):
                env = ask(question)
                self.assertEqual((env["intent"], env["status"]), (kind, "ok"), env["answer"])
                check(env)

    def test_name_of_the_work(self):
        def check(env):
            self.assertEqual([f["object"] for f in env["facts"]], ["t-2024-holp"])
        self.assert_form(["Ako sa volá práca Jána Holpa?", "Ako sa vola praca Jana Holpa?",
                          "What is Jan Holp's thesis called?", "Jak się nazywa praca Jana Holpa?"],
                         "thesis_title", check)

    def test_who_is(self):
        def check(env):
            self.assertEqual(env["entities"][0]["id"], "p-jan-holp")
            self.assertIn("(1): „Strojový preklad právnych textov“ (2024)", env["answer"])
            self.assertIn("Ján Holp → " + {"en": "thesis", "pl": "praca"}.get(env["language"], "práca")
                          + ": „Strojový preklad právnych textov“ (2024) → "
                          + {"en": "supervisor", "pl": "promotor"}.get(env["language"], "vedúci")
                          + ": Peter Novák", [p["text"] for p in env["paths"]])
        self.assert_form(["Kto je Ján Holp?", "Kto je Jan Holp?", "Who is Jan Holp?",
                          "Kim jest Jan Holp?"], "who_is", check)
        for question in ("Who is the dean?", "Kto je dekan fakulty?", "When is the deadline?"):
            self.assertIsNone(gs.graph_parse_question(question, demo()), question)   # left to search

    def test_who_is_a_supervisor_sums_up_exactly(self):
        env = ask("Kto je Petra Nováka?")   # an inflected form, as in "Kto je (ten) Petra Nováka"
        supervised = [t for t, p in raw_edges("supervised_by") if p == "p-novak"]
        self.assertIn(f"vedené práce ({len(supervised)})", env["answer"])
        self.assertIn("doc. Ing. Peter Novák, PhD.", env["answer"])

    def test_who_is_ambiguous_first_name(self):
        for question in ("Kto je Peter?", "Kto je Petr?", "Who is Peter?"):
            env = ask(question)
            self.assertEqual((env["status"], env["intent"]), ("ambiguous", "who_is"), question)
            self.assertEqual(len(env["entities"]), 3)

    def test_years(self):
        def check(env):
            self.assertIn("2024", env["answer"])
            self.assertEqual([f["object"] for f in env["facts"]], ["t-2024-holp"])
        self.assert_form(["V ktorom roku obhájil Ján Holp?", "V ktorom roku obhajil Jan Holp?",
                          "When did Jan Holp defend his thesis?", "W którym roku obronił Jan Holp?",
                          "Kedy obhájil prácu Jána Holpa?"], "thesis_year", check)

    def test_co_supervisors(self):
        def check(env):
            self.assertIn("Eva Šimková", env["answer"])
            self.assertEqual(env["paths"][0]["nodes"], ["p-novak", "t-2024-stastny", "p-simkova"])
        self.assert_form(["Kto viedol práce spolu s Petrom Novákom?",
                          "Kto viedol prace spolu s Petrom Novakom?",
                          "Who co-supervised theses with Peter Novák?"], "co_supervisors", check)

    def test_polish_case_forms_of_names(self):
        # a Slovak name in a Polish sentence: instrumental (z Peterem Novákiem, z Evą Šimkovą),
        # locative (o Janie Holpie) and genitive/dative of -ová (o Marii Holpowej)
        def check_novak(env):
            self.assertEqual(env["entities"][0]["id"], "p-novak")
            self.assertIn("Eva Šimková", env["answer"])
        self.assert_form(["Kto prowadził prace wspólnie z Peterem Novákiem?",
                          "Kto prowadzil prace wspolnie z Peterem Novakiem?",
                          "Jakie prace prowadził razem z Peterem Novákiem?"], "co_supervisors", check_novak)

        def check_simkova(env):
            self.assertEqual(env["entities"][0]["id"], "p-simkova")
        self.assert_form(["Kto prowadził prace wspólnie z Evą Šimkovą?",
                          "Kto prowadzil prace wspolnie z Eva Simkova?",
                          "Kto prowadził prace razem z Evą Šimkową?"], "co_supervisors", check_simkova)
        for question, kind, person in (("Jaki tytuł ma praca napisana z Janem Holpem?", "thesis_title", "p-jan-holp"),
                                       ("Kto był promotorem pracy napisanej z Janem Holpem?", "supervisor_of",
                                        "p-jan-holp"),
                                       ("Co wiadomo o Janie Holpie?", "about", "p-jan-holp"),
                                       ("Co wiadomo o Marii Holpowej?", "about", "p-maria-holpova")):
            with self.subTest(question=question):
                env = ask(question)
                self.assertEqual((env["intent"], env["status"]), (kind, "ok"), env["answer"])
                self.assertEqual([e["id"] for e in env["entities"]], [person])

    def test_a_polish_form_names_what_the_graph_knows(self):
        # Peter Novák wrote nothing: "theses written with him" says what he supervised
        env = ask("Prace napisane z Peterem Novákiem")
        self.assertEqual((env["intent"], env["reason"]), ("thesis_title", "no_matching_facts"))
        supervised = [t for t, p in raw_edges("supervised_by") if p == "p-novak"]
        self.assertIn(f"({len(supervised)})", env["answer"])

    def test_co_supervised_theses(self):
        by_thesis: dict[str, int] = {}
        for t, _ in raw_edges("supervised_by"):
            by_thesis[t] = by_thesis.get(t, 0) + 1
        expected = sum(n > 1 for n in by_thesis.values())

        def check(env):
            self.assertEqual(env["aggregation"]["count"], expected)
            self.assertIs(env["aggregation"]["complete"], True)
        self.assert_form(["Ktoré práce mali dvoch vedúcich?", "Ktore prace mali dvoch veducich?",
                          "Which theses have more than one supervisor?",
                          "Ktoré práce mali viacerých vedúcich?"], "co_supervised", check)

    def test_supervisor_lists(self):
        expected = len({p for _, p in raw_edges("supervised_by")})

        def check(env):
            self.assertEqual(env["aggregation"]["count"], expected)
            self.assertIn("Eva Šimková (6)", env["answer"])
        self.assert_form(["Vymenuj všetkých vedúcich prác.", "Vymenuj vsetkych veducich prac.",
                          "List all supervisors.", "Kto sú vedúci prác?"], "supervisor_list", check)

    def test_supervisor_list_of_a_year(self):
        env = ask("Kto viedol práce v roku 2024?")
        self.assertEqual(env["intent"], "supervisor_list")
        self.assertIn("Peter Novák (3)", env["answer"])

    def test_count_narrowed_by_supervisor_and_year(self):
        years = {t: int(t.split("-")[1]) for t, _ in raw_edges("supervised_by")}
        expected = sum(1 for t, p in raw_edges("supervised_by") if p == "p-novak" and years[t] == 2024)

        def check(env):
            self.assertEqual(env["aggregation"], {
                "complete": True, "year": 2024, "counted": "thesis", "supervisor": "p-novak",
                "count": expected, "filters": [{"field": "year", "op": "eq", "value": 2024},
                                               {"field": "supervisor", "op": "eq", "value": "p-novak"}]})
            self.assertTrue(env["truncated"])      # evidence cut at 1, the count stays exact
        for question in ("Koľko prác viedol Peter Novák v roku 2024?",
                         "Kolko prac viedol Peter Novak v roku 2024?",
                         "How many theses did Peter Novák supervise in 2024?",
                         "Ile prac prowadził Peter Novák w roku 2024?"):
            with self.subTest(question=question):
                env = ask(question, fact_limit=1, path_limit=1)
                self.assertEqual(env["intent"], "count_filtered")
                check(env)

    def test_count_narrowed_by_keyword(self):
        tagged = {t for t, k in raw_edges("has_keyword") if k == "k-ml"}
        expected = sum(1 for t in tagged if t.startswith("t-2024-"))

        def check(env):
            self.assertEqual((env["aggregation"]["count"], env["aggregation"]["keyword"]),
                             (expected, ["k-ml"]))
        self.assert_form(["Koľko prác s kľúčovým slovom strojové učenie je z roku 2024?",
                          "Kolko prac s klucovym slovom strojove ucenie je z roku 2024?",
                          "How many theses with the keyword machine learning are from 2024?"],
                         "count_filtered", check)

    def test_count_without_a_year(self):
        supervised = [t for t, p in raw_edges("supervised_by") if p == "p-simkova"]
        env = ask("Koľko prác viedla Eva Šimková?")
        self.assertEqual(env["aggregation"]["count"], len(supervised))
        self.assertEqual(ask("Koľko prác napísala Katarína Vargová?")["aggregation"]["count"], 2)
        # a misspelt author is asked about; a count of unnamed supervisors stays with search
        self.assertIn("Did you mean Ján Holp or Mária Holpová?", ask("How many theses did Hlop write?")["answer"])
        self.assertIsNone(gs.graph_parse_question("Koľko vedúcich viedlo práce v roku 2024?", demo()))


# === Issue 32: every word accounted for, filters that combine, rankings, relations the graph lacks ===

def demo_data() -> dict:
    """Return the demo graph's raw JSON, read directly (the truth the answers are checked against)."""
    with open(DEMO, encoding="utf-8") as f:
        return json.load(f)


def expected_theses(data: dict, level: str | None = None, years=None, keyword: str | None = None,
                    supervisor: str | None = None, author: str | None = None) -> set[str]:
    """Return the thesis ids of the raw data that pass every given filter (years: a set)."""
    levels = {"bachelor": "bakalárska", "master": "diplomová"}
    edges = {(e["source"], e["type"], e["target"]) for e in data["edges"]}
    return {n["id"] for n in data["nodes"] if n["type"] == "thesis"
            and (level is None or n.get("kind") == levels[level])
            and (years is None or n["year"] in years)
            and (keyword is None or (n["id"], "has_keyword", keyword) in edges)
            and (supervisor is None or (n["id"], "supervised_by", supervisor) in edges)
            and (author is None or (author, "authored", n["id"]) in edges)}


def polish_graph() -> gs.Graph:
    """Return the demo graph with Polish aliases on two keywords (a department that has them)."""
    if not hasattr(polish_graph, "graph"):
        data = demo_data()
        for node in data["nodes"]:
            if node["id"] == "k-ml":
                node["aliases"].append("uczenie maszynowe")
            if node["id"] == "k-asr":
                node["aliases"].append("rozpoznawanie mowy")
        polish_graph.graph = gs.graph_build(data)
    return polish_graph.graph


def ask_pl(question: str, **limits) -> dict:
    return gs.to_envelope(gs.ask(question, polish_graph(), gs.GraphLimits(**limits))).to_dict()


def plain(text: str) -> str:
    """Return text without diacritics, as typed on a keyboard without Slovak or Polish letters."""
    import unicodedata
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c)) \
        .replace("ł", "l").replace("Ł", "L")


# Each filter as a phrase per language: (Slovak, English, Polish), and its expected_theses argument.
LEVELS = {"bachelor": ("bakalárskych", "bachelor", "licencjackich"),
          "master": ("diplomových", "master's", "magisterskich")}
YEARS = {  # phrase, the years it keeps (of 2019-2025)
    "eq": (("v roku 2024", "in 2024", "w roku 2024"), {2024}),
    "from": (("od roku 2021", "since 2021", "od 2021"), set(range(2021, 2026))),
    "after": (("po roku 2020", "after 2020", "po roku 2020"), set(range(2021, 2026))),
    "before": (("pred rokom 2022", "before 2022", "przed 2022"), set(range(2019, 2022))),
    "between": (("medzi rokmi 2020 a 2022", "between 2020 and 2022", "w latach 2021–2023"),
                None),  # Polish differs: set per language below
    "span": (("v rokoch 2021–2023", "from 2021 to 2023", "od 2021 do 2023"), set(range(2021, 2024))),
}
BETWEEN = ({2020, 2021, 2022}, {2020, 2021, 2022}, {2021, 2022, 2023})
TOPICS = {"k-ml": ("o strojovom učení", "about machine learning", "na temat uczenia maszynowego"),
          "k-asr": ("o rozpoznávaní reči", "about speech recognition", "o rozpoznawaniu mowy")}
SUPERVISORS = {"p-simkova": ("viedla Eva Šimková", "supervised by Eva Šimková",
                             "prowadzonych przez Evę Šimkovą"),
               "p-novak": ("viedol Peter Novák", "supervised by Peter Novák",
                           "prowadzonych przez Petera Nováka")}


def count_question(lang: int, level: str = "", topic: str = "", who: str = "", when: str = "") -> str:
    """Return a count question in one language (0 sk, 1 en, 2 pl) from its filter phrases."""
    parts = (["Koľko", level, "prác", topic, who, when], ["How many", level, "theses", topic, who, when],
             ["Ile", level, "prac", topic, who, when])[lang]
    return " ".join(p for p in parts if p) + "?"


def list_question(lang: int, level: str = "", topic: str = "", who: str = "", when: str = "") -> str:
    """Return a list question in one language (0 sk, 1 en, 2 pl) from its filter phrases."""
    level = (level.replace("ých", "é").replace("ych", "e"), level,
             level.replace("ich", "ie"))[lang] if level else ""
    parts = (["Ktoré", level, "práce", topic, who, when], ["Which", level, "theses are", topic, who, when],
             ["Jakie", level, "prace", topic, who, when])[lang]
    return " ".join(p for p in parts if p) + "?"


class FiltersCombineTest(unittest.TestCase):
    """Level, year (one, ranges, from/after/before), keyword by topic and supervisor combine
    exactly, in counts and lists, in three languages, with and without diacritics."""

    def combinations(self):
        data = demo_data()
        for lang in range(3):
            for level in (None, *LEVELS):
                for year_rule, (phrases, years) in YEARS.items():
                    years = BETWEEN[lang] if year_rule == "between" else years
                    for topic in (None, "k-ml"):
                        for person in (None, "p-simkova"):
                            if (level, topic, person).count(None) < 1 and year_rule not in ("eq", "from"):
                                continue      # every pair and triple, all four only with two year forms
                            want = expected_theses(data, level, years, topic, person)
                            yield lang, dict(level=LEVELS[level][lang] if level else "",
                                             topic=TOPICS[topic][lang] if topic else "",
                                             who=SUPERVISORS[person][lang] if person else "",
                                             when=phrases[lang]), want

    def test_counts(self):
        for lang, pieces, want in self.combinations():
            for question in {count_question(lang, **pieces), plain(count_question(lang, **pieces))}:
                with self.subTest(question=question):
                    env = ask_pl(question)
                    self.assertEqual(env["status"], "ok", env["answer"])
                    self.assertEqual(env["aggregation"]["count"], len(want), env["answer"])
                    self.assertIs(env["aggregation"]["complete"], True)

    def test_lists(self):
        for lang, pieces, want in self.combinations():
            for question in {list_question(lang, **pieces), plain(list_question(lang, **pieces))}:
                with self.subTest(question=question):
                    env = ask_pl(question, fact_limit=100, path_limit=100)
                    if not want and env["status"] == "no_answer":
                        continue      # an empty list may say what the graph knows instead
                    self.assertEqual(env["status"], "ok", env["answer"])
                    shown = {f["object"] if f["predicate"] in ("authored",) else f["subject"]
                             for f in env["facts"]}
                    self.assertEqual(shown, want, env["answer"])

    def test_filters_are_listed_as_field_op_value(self):
        env = ask("Koľko bakalárskych prác o strojovom učení viedla Eva Šimková od roku 2021?")
        self.assertEqual(env["aggregation"]["filters"], [
            {"field": "year", "op": "gte", "value": 2021},
            {"field": "kind", "op": "eq", "value": "bachelor"},
            {"field": "supervisor", "op": "eq", "value": "p-simkova"},
            {"field": "keyword", "op": "eq", "value": "k-ml"}])
        env = ask("How many theses between 2020 and 2022?")
        self.assertEqual(env["aggregation"]["filters"], [{"field": "year", "op": "between", "value": [2020, 2022]}])

    def test_issue_examples(self):
        data = demo_data()
        cases = (("Koľko bakalárskych prác bolo obhájených v roku 2024?", expected_theses(data, "bachelor", {2024})),
                 ("How many bachelor theses are from 2024?", expected_theses(data, "bachelor", {2024})),
                 ("Ile prac magisterskich obroniono w 2024?", expected_theses(data, "master", {2024})),
                 ("Ktoré práce o strojovom učení vznikli v roku 2024?", expected_theses(data, None, {2024}, "k-ml")),
                 ("Which theses are about speech recognition?", expected_theses(data, keyword="k-asr")))
        for question, want in cases:
            with self.subTest(question=question):
                env = ask(question)
                self.assertEqual((env["status"], env["aggregation"]["count"]), ("ok", len(want)), env["answer"])
        self.assertNotEqual(len(expected_theses(data, "bachelor", {2024})), len(expected_theses(data, years={2024})))


class EveryWordAccountedTest(unittest.TestCase):
    """A word of the question the graph cannot use never yields the count of the question without it."""

    BASES = ("Koľko prác je z roku 2024?", "Koľko prác viedol Peter Novák v roku 2024?",
             "How many theses are from 2024?", "How many theses did Peter Novák supervise?",
             "Ile prac jest z roku 2024?", "Ile prac prowadził Peter Novák w roku 2024?",
             "Koľko bakalárskych prác je z roku 2024?", "Which theses are about machine learning?",
             "Ktoré práce viedla Eva Šimková?", "Who supervised the most theses?")
    # qualifier words: nationality, status, quality, place, language of the thesis
    QUALIFIERS = ("slovenských", "externých", "ocenených", "anglických", "English", "external",
                  "awarded", "part-time", "zagranicznych", "wyróżnionych", "najlepších", "Brno",
                  "online", "rigoróznych", "zahraničných", "spoločných")

    def test_one_extra_qualifier_never_gives_the_unqualified_count(self):
        for base in self.BASES:
            truth = ask(base)
            self.assertEqual(truth["status"], "ok", base)
            count = truth["aggregation"]["count"] if truth["aggregation"] else len(truth["facts"])
            words = base.rstrip("?").split(" ")
            for qualifier in self.QUALIFIERS:
                for question in (" ".join(words[:2] + [qualifier] + words[2:]) + "?",
                                 " ".join(words + [qualifier]) + "?"):
                    for variant in (question, plain(question)):
                        with self.subTest(question=variant):
                            env = ask(variant)
                            agg = env["aggregation"] or {}
                            same = (env["status"] == "ok" and agg.get("complete") is not False
                                    and agg.get("count", len(env["facts"])) == count)
                            self.assertFalse(same, f"{variant!r} answered as {base!r}: {env['answer']}")

    def test_the_left_over_words_are_named(self):
        for question, word, lang_word in (("Koľko slovenských prác je z roku 2024?", "slovenských", "slová"),
                                          ("How many English theses are from 2024?", "English", "words"),
                                          ("Ile prac zagranicznych jest z roku 2024?", "zagranicznych", "słowa")):
            with self.subTest(question=question):
                env = ask(question)
                self.assertEqual((env["status"], env["reason"]), ("no_answer", "unsupported_question"))
                self.assertIn(f"„{word}“", env["answer"])
                self.assertIn(lang_word, env["answer"])
                self.assertIsNone(gs.graph_parse_question(question, demo()))   # --docs: on to the documents


class RankingTest(unittest.TestCase):
    """Rankings are exact, ties are shown as ties, complete only when the whole ranking is shown."""

    def supervisor_counts(self, years=None) -> dict[str, int]:
        data = demo_data()
        year = {n["id"]: n.get("year") for n in data["nodes"]}
        counts: dict[str, int] = {}
        for t, p in raw_edges("supervised_by"):
            if years is None or year[t] in years:
                counts[p] = counts.get(p, 0) + 1
        return counts

    def test_who_supervised_the_most(self):
        counts = self.supervisor_counts()
        best = max(counts.values())
        winners = {p for p, n in counts.items() if n == best}
        for question in ("Who supervised the most theses?", "Kto viedol najviac prác?",
                         "Kto viedol najviac prac?", "Kto prowadził najwięcej prac?",
                         "Kto prowadzil najwiecej prac?"):
            with self.subTest(question=question):
                env = ask(question)
                self.assertEqual((env["status"], env["intent"]), ("ok", "ranking"), env["answer"])
                agg = env["aggregation"]
                self.assertEqual({r["id"] for r in agg["ranking"]}, winners)
                self.assertEqual({r["count"] for r in agg["ranking"]}, {best})
                self.assertEqual((agg["ties"], agg["complete"]), (len(winners) > 1, True))

    def test_top_three_of_a_year_keeps_the_ties(self):
        counts = self.supervisor_counts({2023})
        third = sorted(counts.values(), reverse=True)[2]
        want = {p for p, n in counts.items() if n >= third}
        for question in ("top 3 supervisors in 2023", "Prvých 3 vedúcich s najviac prácami v roku 2023",
                         "3 promotorów z najwięcej pracami w roku 2023"):
            with self.subTest(question=question):
                agg = ask(question, fact_limit=50)["aggregation"]
                self.assertEqual({r["id"] for r in agg["ranking"]}, want)
                self.assertIs(agg["complete"], True)
        agg = ask("top 3 supervisors in 2023", fact_limit=2)["aggregation"]
        self.assertIs(agg["complete"], len(want) <= 2)

    def test_most_common_keyword(self):
        counts: dict[str, int] = {}
        for _, k in raw_edges("has_keyword"):
            counts[k] = counts.get(k, 0) + 1
        best = max(counts.values())
        for question in ("Which keyword is most common?", "Ktoré kľúčové slovo je najčastejšie?",
                         "Ktore klucove slovo je najcastejsie?", "Które słowo kluczowe jest najczęstsze?"):
            with self.subTest(question=question):
                agg = ask(question)["aggregation"]
                self.assertEqual({r["id"] for r in agg["ranking"]},
                                 {k for k, n in counts.items() if n == best})


class UnsupportedRelationTest(unittest.TestCase):
    """A relation the graph lacks is said to be missing, with the relations it has; never ok."""

    def test_missing_relations_in_three_languages(self):
        for question, relation in (("Kto bol oponentom práce Jána Holpa?", "opponent"),
                                   ("Kto bol oponentom prace Jana Holpa?", "opponent"),
                                   ("Who reviewed Ján Holp's thesis?", "opponent"),
                                   ("Kto był recenzentem pracy Jana Holpa?", "opponent"),
                                   ("Akú známku dostal Ján Holp?", "grade"),
                                   ("What grade did Jan Holp get?", "grade"),
                                   ("Jaką ocenę dostał Jan Holp?", "grade"),
                                   ("Kto bol v komisii pri obhajobe Jána Holpa?", "committee"),
                                   ("What is the e-mail of Peter Novák?", "email"),
                                   ("Jaki jest e-mail Petera Nováka?", "email")):
            with self.subTest(question=question):
                env = ask(question)
                self.assertEqual((env["status"], env["reason"]), ("no_answer", "unsupported_relation"))
                self.assertIn(f"'{relation}'", env["reasons"][0])
                for has in ("authored", "supervised_by", "has_keyword"):
                    self.assertIn(has, env["reasons"][0])
                self.assertEqual(env["facts"], [])

    def test_with_documents_the_question_goes_on_to_them(self):
        with tempfile.TemporaryDirectory() as cache:
            proc = run_cli("Kto bol oponentom práce Jána Holpa?", "--docs", os.path.join(REPO, "corpus"),
                           "--graph", DEMO, "--no-embed", "--cache-dir", cache, "--search", "--json")
        env = json.loads(proc.stdout)
        self.assertEqual(env["tool"], "search")
        self.assertEqual(env["notes"][0]["code"], "graph_not_applicable")


class QuestionFormRegistryTest(unittest.TestCase):
    def test_every_intent_is_a_registered_form_and_parsers_speak_three_languages(self):
        for question in ("Kto je Ján Holp?", "Koľko prác je z roku 2024?", "Who supervised the most theses?",
                         "Which theses are about speech recognition?", "Koľko bakalárskych prác?"):
            self.assertIn(gs.graph_parse_question(question, demo()).kind, gs.QUESTION_FORMS)
        for form in gs.QUESTION_FORMS.values():
            if form.parse:
                self.assertEqual(set(form.patterns), {"sk", "en", "pl"}, form.name)


class ReadableTextTest(unittest.TestCase):
    def test_no_edge_arrows_in_prose(self):
        for question in ("Kto je vedúci práce Jána Holpa?", "Ktoré práce viedol Peter Novák?",
                         "Kto je Ján Holp?", "Koľko osôb má prácu v roku 2024?"):
            with self.subTest(question=question):
                text = gs.format_answer_text(ask(question))
                self.assertNotRegex(text, r"-(authored|supervised_by|has_keyword)->|<-\w+-")

    def test_reasons_and_candidates_speak_the_question_language(self):
        questions = ("Aký názov práce má Holp?", "Aký názov práce má Jan Holpp?", "Kto je Peter?",
                     "Who supervised Eva Šimková?", "Kto bol oponentom práce Jána Holpa?",
                     "Koľko slovenských prác je z roku 2024?", "Jaki tytuł ma praca Holpa?",
                     "Kim jest Peter?", "Kto był recenzentem pracy Jana Holpa?",
                     "Ile prac zagranicznych jest z roku 2024?", "Jaki jest tytuł pracy Jana Hlopa?")
        for question in questions:
            for variant in (question, plain(question)):
                with self.subTest(question=variant):
                    env = ask(variant)
                    lines = list(zip(env["reasons"], env["reasons_text"])) + [
                        (c["why"], c["why_text"]) for c in env["entities"] + env["rejected_candidates"]
                        if c.get("why")]
                    self.assertTrue(lines)
                    for english, shown in lines:
                        self.assertEqual(shown == english, env["language"] == "en", (english, shown))
                    text = gs.format_answer_text(env)
                    for heading in ("Reasons:", "Candidates:", "Not chosen:", "Facts:", "Sources:"):
                        self.assertEqual(heading in text, env["language"] == "en" and heading in text)

    def test_a_cut_list_says_which_and_how_many_more(self):
        supervised = [t for t, p in raw_edges("supervised_by") if p == "p-novak"]
        env = ask("Ktoré práce viedol Peter Novák?", fact_limit=2)
        self.assertIn(f"zoznam faktov: zobrazených 2 z {len(supervised)}, ďalších {len(supervised) - 2}",
                      env["answer"])
        theses = expected_theses(demo_data(), years={2024})
        env = ask("Which theses are from 2024?", fact_limit=3)
        self.assertIn(f"the list of theses: 3 of {len(theses)} shown, {len(theses) - 3} more not listed",
                      env["answer"])



if __name__ == "__main__":
    unittest.main()
