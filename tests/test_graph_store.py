"""Tests of graph_store: text keys, load/validate, entity matching, question kinds and
limits, the envelope, the CLI (as a subprocess) and the demo corpus.

The fixture graph (FIXTURE) is small enough to work every expected value out by hand:
    2024: t1 by Holp; t2 by Sloboda + Holp (team); t3 by Holpová  -> 3 persons, 3 theses,
          4 (person, thesis) pairs
    2022: t4 by Eva Malá (no document)
    every thesis is supervised by Peter Novák; t1 has keyword k-mt, t2 and t3 have k-web.
"""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

from helpers import run_cli as run_script   # first: it puts the repository on sys.path

import graph_store as gs
import retrieval_contract as rc

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fixture() -> dict:
    """Return the fixture graph as a fresh dict (tests mutate copies)."""
    return {
        "version": "test-1",
        "nodes": [
            {"id": "p-holp", "type": "person", "name": "Ján Holp", "aliases": ["J. Holp"],
             "document_path": "osoby/holp.md"},
            {"id": "p-holpova", "type": "person", "name": "Mária Holpová"},
            {"id": "p-novak", "type": "person", "name": "Peter Novák"},
            {"id": "p-sloboda", "type": "person", "name": "Peter Sloboda"},
            {"id": "p-mala", "type": "person", "name": "Eva Malá"},
            {"id": "t1", "type": "thesis", "title": "Strojový preklad právnych textov", "year": 2024,
             "document_path": "prace/t1.md", "source_url": "https://example.org/t1"},
            {"id": "t2", "type": "thesis", "title": "Webové rezervácie učební", "year": 2024,
             "document_path": "prace/t2.md"},
            {"id": "t3", "type": "thesis", "title": "Vizualizácia dát miest", "year": 2024,
             "document_path": "prace/t3.md"},
            {"id": "t4", "type": "thesis", "title": "Grafové databázy v praxi", "year": 2022},
            {"id": "k-mt", "type": "keyword", "name": "strojový preklad",
             "aliases": ["machine translation"]},
            {"id": "k-web", "type": "keyword", "name": "webové aplikácie"},
        ],
        "edges": [
            {"source": "p-holp", "target": "t1", "type": "authored"},
            {"source": "p-sloboda", "target": "t2", "type": "authored"},
            {"source": "p-holp", "target": "t2", "type": "authored"},
            {"source": "p-holpova", "target": "t3", "type": "authored"},
            {"source": "p-mala", "target": "t4", "type": "authored"},
            {"source": "t1", "target": "p-novak", "type": "supervised_by"},
            {"source": "t2", "target": "p-novak", "type": "supervised_by"},
            {"source": "t3", "target": "p-novak", "type": "supervised_by"},
            {"source": "t4", "target": "p-novak", "type": "supervised_by"},
            {"source": "t1", "target": "k-mt", "type": "has_keyword"},
            {"source": "t2", "target": "k-web", "type": "has_keyword"},
            {"source": "t3", "target": "k-web", "type": "has_keyword"},
        ],
    }


def graph(data: dict | None = None) -> gs.Graph:
    """Return the built fixture graph (or of data)."""
    return gs.graph_build(data or fixture(), "test-version")


def env_of(question: str, limits: gs.GraphLimits | None = None, data: dict | None = None) -> dict:
    """Return the envelope dict answering question over the fixture."""
    return gs.to_envelope(gs.ask(question, graph(data), limits or gs.GraphLimits())).to_dict()


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """Run graph_store.py ARGS from the repo root (in this process: see helpers.run_cli)."""
    return run_script("graph_store.py", *args)

NAMESAKES = {"p-jan": "Ján Novák", "p-jana": "Jana Nováková",
             "p-peter": "Peter Kováč", "p-petra": "Petra Kováčová"}


def namesakes(*ids: str) -> dict:
    """Return a graph of the given NAMESAKES: each wrote t-<id>, supervised by the next id (a ring)."""
    ids = ids or tuple(NAMESAKES)
    nodes = [{"id": i, "type": "person", "name": NAMESAKES[i]} for i in ids]
    nodes += [{"id": f"t-{i}", "type": "thesis", "title": f"Práca {i}", "year": 2024} for i in ids]
    edges = [{"source": i, "target": f"t-{i}", "type": "authored"} for i in ids]
    edges += [{"source": f"t-{i}", "target": ids[(n + 1) % len(ids)], "type": "supervised_by"}
              for n, i in enumerate(ids)]
    return {"nodes": nodes, "edges": edges}


def resolved(question: str, data: dict) -> tuple[str, str | None, list[str]]:
    """Return (status, reason, entity ids) of the answer to question over data."""
    env = env_of(question, data=data)
    return env["status"], env["reason"], [e["id"] for e in env["entities"]]



# === Names ===

class NameKeyTest(unittest.TestCase):
    def test_inflected_upper_and_plain_forms_share_one_key(self):
        for forms in (("Ján", "Jána", "JANA", "jan", "Jánovi"),
                      ("Holp", "Holpa", "HOLPA", "Holpovi", "Holpom"),
                      ("Peter", "Petra", "Petrovi"),
                      ("Andrej", "Andreja", "Andrejovi", "Andrejom", "ANDREJA"),
                      ("Matej", "Mateja", "Matejovi")):
            self.assertEqual({gs.name_key(f) for f in forms}, {gs.name_key(forms[0])}, forms)

    def test_female_surname_collides_with_male_stem(self):
        self.assertEqual(gs.name_key("Holpová"), gs.name_key("Holp"))
        self.assertEqual(gs.name_key("Holpovej"), gs.name_key("Holp"))

    def test_female_surname_typed_without_accents_shares_the_key(self):
        # a keyboard without Slovak letters: Holpova, Holpovu are Holpová, Holpovú
        for plain, accented in (("Holpova", "Holpová"), ("Holpovu", "Holpovú"), ("Kovacova", "Kováčová")):
            self.assertEqual(gs.name_key(plain), gs.name_key(accented), plain)

    def test_stemming_happens_before_folding(self):
        # -ová is stripped as one ending because diacritics are still there when stemming.
        self.assertEqual(rc.text_name_stem("Holpová"), "holp")
        self.assertEqual(gs.name_key("Šťastný"), "stastn")

    def test_keys_fold_as_docs_qa_does(self):
        # one folding for the whole project: letters NFD does not decompose fold too
        self.assertEqual(gs.name_key("Đorđević"), gs.name_key("Dordevic"))
        self.assertEqual(gs.name_key("Łukasz"), gs.name_key("LUKASZ"))
        self.assertFalse(hasattr(gs, "text_fold") or hasattr(gs, "text_stem") or hasattr(gs, "_WORD_RE"))

    def test_short_words_keep_a_stem(self):
        self.assertEqual(gs.name_key("Eva"), gs.name_key("Evy"))
        self.assertTrue(gs.name_key("má"))


# === Load/validate ===

class LoadTest(unittest.TestCase):
    def assert_format_error(self, data, *needles):
        with self.assertRaises(gs.GraphFormatError) as ctx:
            gs.graph_build(data)
        for needle in needles:
            self.assertIn(needle, ctx.exception.message)
        self.assertIsInstance(ctx.exception, rc.RetrievalUnavailableError)

    def test_valid_fixture_builds_both_adjacency_directions(self):
        g = graph()
        self.assertEqual(len(g.nodes), 11)
        self.assertEqual(g.edge_count, 12)
        self.assertEqual(g.out_edges["p-holp"]["authored"], ["t1", "t2"])
        self.assertEqual(g.in_edges["t2"]["authored"], ["p-sloboda", "p-holp"])
        self.assertEqual(sorted(g.year_index[2024]), ["t1", "t2", "t3"])

    def test_duplicate_id_names_the_node(self):
        data = fixture()
        data["nodes"].append({"id": "t1", "type": "thesis", "title": "X", "year": 2020})
        self.assert_format_error(data, "node #11", "duplicate id", "'t1'")

    def test_dangling_edge_names_the_edge(self):
        data = fixture()
        data["edges"].append({"source": "p-holp", "target": "t-missing", "type": "authored"})
        self.assert_format_error(data, "edge #12", "t-missing", "dangling")

    def test_missing_and_wrong_typed_fields_name_the_node(self):
        cases = [
            ({"id": "p-x", "type": "person"}, "name"),
            ({"id": "t-x", "type": "thesis", "title": "T", "year": "2024"}, "year"),
            ({"id": "t-y", "type": "thesis", "title": "T"}, "year"),
            ({"type": "person", "name": "No Id"}, "'id'"),
            ({"id": "p-z", "type": "person", "name": "Z", "aliases": "Z"}, "aliases"),
            ({"id": "p-w", "type": "person", "name": "W", "document_path": "../etc/passwd"},
             "document_path"),
        ]
        for node, needle in cases:
            data = fixture()
            data["nodes"].append(node)
            self.assert_format_error(data, "node #11", needle)

    def test_edge_between_wrong_node_types_is_rejected(self):
        data = fixture()
        data["edges"].append({"source": "t1", "target": "p-holp", "type": "authored"})
        self.assert_format_error(data, "edge #12", "person -> thesis")

    def test_not_an_object_or_missing_lists(self):
        self.assert_format_error([], "JSON object")
        self.assert_format_error({"nodes": []}, "'edges'")

    def test_other_node_and_edge_types_and_unknown_keys_are_kept(self):
        data = fixture()
        data["nodes"].append({"id": "g-ml", "type": "group", "name": "ML skupina", "color": "red"})
        data["edges"].append({"source": "p-novak", "target": "g-ml", "type": "member_of"})
        g = graph(data)
        self.assertEqual(g.out_edges["p-novak"]["member_of"], ["g-ml"])

    def test_graph_load_reports_bad_json_and_versions_content(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "g.json")
            with open(path, "w", encoding="utf-8") as f:
                f.write('{"nodes": [')
            with self.assertRaises(gs.GraphFormatError) as ctx:
                gs.graph_load(path)
            self.assertIn("not valid JSON", ctx.exception.message)
            with self.assertRaises(gs.GraphFormatError):
                gs.graph_load(os.path.join(tmp, "missing.json"))
            versions = []
            for label in ("a", "b"):
                data = fixture()
                data["version"] = label
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(data, f)
                versions.append(gs.graph_load(path).index_version)
            self.assertRegex(versions[0], r"^graph-a\+sha256-[0-9a-f]{12}$")   # a temp dir is no Git checkout
            self.assertNotEqual(versions[0].split("+")[1], versions[1].split("+")[1])


# === Entity matching and question parsing ===

class QuestionTest(unittest.TestCase):
    def test_intents_in_slovak_english_polish(self):
        g = graph()
        cases = {
            "Koľko osôb má prácu v roku 2024?": "count_year",
            "How many persons have a thesis in 2024?": "count_year",
            "Ile osób ma pracę w roku 2024?": "count_year",
            "Aký názov práce má Ján Holp?": "thesis_title",
            "What is the thesis title of Jan Holp?": "thesis_title",
            "Jaki jest tytuł pracy Jana Holpa?": "thesis_title",
            "Kto je vedúci práce Jána Holpa?": "supervisor_of",
            "Who supervised Jan Holp?": "supervisor_of",
            "Ktoré práce viedol Peter Novák?": "supervised_by",
            "Which theses did Peter Novák supervise?": "supervised_by",
            "Ktoré práce majú kľúčové slovo strojový preklad?": "keyword_theses",
            "Kto napísal prácu Webové rezervácie učební?": "author_of_title",
            "Čo vieme o Jánovi Holpovi?": "about",
            "Akú prácu napísal Ján Holp?": "thesis_title",
            "What thesis did Jan Holp write?": "thesis_title",
            "Kto je vedúci práce Jána Holpa v roku 2024?": "supervisor_of",
            "Kto má prácu v roku 2024?": "count_year",
            "Kto był promotorem pracy Jana Holpa?": "supervisor_of",
        }
        for question, kind in cases.items():
            self.assertEqual(gs.graph_parse_question(question, g).kind, kind, question)

    def test_languages(self):
        g = graph()
        self.assertEqual(gs.graph_parse_question("Aky nazov prace ma Holp?", g).language, "sk")
        self.assertEqual(gs.graph_parse_question("Who supervised Jan Holp?", g).language, "en")
        self.assertEqual(gs.graph_parse_question("Jaki jest tytuł pracy Jana Holpa?", g).language, "pl")
        # a Slovak name's diacritics do not make an English question Slovak
        self.assertEqual(gs.graph_parse_question("Who supervised Ján Holp?", g).language, "en")
        self.assertEqual(gs.graph_parse_question("Kto je vedúci práce Jána Holpa?", g).language, "sk")

    def test_unrelated_questions_are_not_claimed(self):
        g = graph()
        # Counts narrowed by supervisor, keyword or author are graph questions, tested in
        # test_graph_questions; these are not.
        for question in ("do kiedy składam JPK", "What is the VAT rate?",
                         "What is known about the weather?", "Aký je termín podania?",
                         "Who is the dean?", "Kto je dekan fakulty?"):
            self.assertIsNone(gs.graph_parse_question(question, g), question)

    def test_count_subject_persons_or_theses(self):
        g = graph()
        self.assertEqual(gs.graph_parse_question("Koľko osôb má prácu v roku 2024?", g).subject, "person")
        self.assertEqual(gs.graph_parse_question("Koľko prác je z roku 2024?", g).subject, "thesis")
        self.assertEqual(gs.graph_parse_question("Kto má prácu v roku 2024?", g).subject, "person")

    def test_empty_question_is_invalid_query(self):
        for question in ("", "   \n"):
            with self.assertRaises(rc.InvalidQueryError):
                gs.ask(question, graph(), gs.GraphLimits())
        with self.assertRaises(rc.InvalidQueryError):
            gs.graph_parse_question("x" * (gs.MAX_QUESTION_CHARS + 1), graph())

    def test_bad_limits_are_invalid_request(self):
        with self.assertRaises(rc.InvalidRequestError) as ctx:
            gs.GraphLimits(fact_limit=0, path_limit=-1)
        self.assertEqual(set(ctx.exception.field_names), {"fact_limit", "path_limit"})


class PersonMatchTest(unittest.TestCase):
    def test_forms_of_a_name_resolve_to_the_same_person(self):
        for question in ("Aký názov práce má Ján Holp?", "Aký názov práce má Jána Holpa?",
                         "Aky nazov prace ma Jana Holpa?", "AKÝ NÁZOV PRÁCE MÁ JÁNA HOLPA?"):
            env = env_of(question)
            self.assertEqual(env["status"], "ok", question)
            self.assertEqual([e["id"] for e in env["entities"]], ["p-holp"], question)
            self.assertEqual(sorted(f["object"] for f in env["facts"]), ["t1", "t2"], question)

    def test_a_genitive_of_a_name_in_ej_resolves(self):
        # Andreja Kubíka is the genitive of Andrej Kubík; both -ej forms stem one way
        data = {"nodes": [{"id": "p-a", "type": "person", "name": "Andrej Kubík"},
                          {"id": "p-s", "type": "person", "name": "Eva Malá"},
                          {"id": "t-a", "type": "thesis", "title": "Bezpečnosť webu", "year": 2021}],
                "edges": [{"source": "p-a", "target": "t-a", "type": "authored"},
                          {"source": "t-a", "target": "p-s", "type": "supervised_by"}]}
        env = env_of("Kto je vedúci práce Andreja Kubíka?", data=data)
        self.assertEqual((env["status"], [f["object"] for f in env["facts"]]), ("ok", ["p-s"]))

    def test_a_female_full_name_without_any_accent_resolves(self):
        env = env_of("Aky nazov prace ma Maria Holpova?")
        self.assertEqual((env["status"], [e["id"] for e in env["entities"]]), ("ok", ["p-holpova"]))

    def test_full_name_beats_the_colliding_female_form_which_is_kept_as_rejected(self):
        env = env_of("Aký názov práce má Jána Holpa?")
        self.assertEqual([c["id"] for c in env["rejected_candidates"]], ["p-holpova"])

    def test_surname_collision_is_ambiguous_with_candidates_and_why(self):
        env = env_of("Aký názov práce má Holpová?")
        self.assertEqual((env["status"], env["reason"]), ("ambiguous", "ambiguous_person"))
        self.assertEqual(sorted(e["id"] for e in env["entities"]), ["p-holp", "p-holpova"])
        self.assertTrue(all("surname" in e["why"] for e in env["entities"]))
        self.assertIs(env["complete"], False)
        self.assertIs(env["truncated"], False)

    def test_first_name_alone_fitting_several_people_is_ambiguous(self):
        env = env_of("Aký názov práce má Peter?")
        self.assertEqual(env["reason"], "ambiguous_person")
        self.assertEqual(sorted(e["id"] for e in env["entities"]), ["p-novak", "p-sloboda"])
        self.assertTrue(all("first name" in e["why"] for e in env["entities"]))

    def test_ambiguous_candidates_obey_entity_limit(self):
        env = env_of("Aký názov práce má Peter?", gs.GraphLimits(entity_limit=1))
        self.assertEqual(len(env["entities"]), 1)
        self.assertEqual(env["truncation_reasons"], ["entity_limit"])

    def test_unknown_person_and_partial_match_with_an_unknown_surname(self):
        env = env_of("Aký názov práce má Zuzana Veselá?")
        self.assertEqual((env["status"], env["reason"]), ("no_answer", "unknown_person"))
        env = env_of("Aký názov práce má Eva Veselá?")
        self.assertEqual(env["reason"], "unknown_person")
        self.assertEqual([c["id"] for c in env["rejected_candidates"]], ["p-mala"])


class NamesakeTest(unittest.TestCase):
    """Ján Novák / Jana Nováková and Peter Kováč / Petra Kováčová share every folded stem
    (jan, novak, petr, kovac); only the words' exact forms and diacritics tell them apart."""

    def test_the_person_whose_name_takes_the_exact_form_is_chosen(self):
        # Jany/Novákovej are forms of Jana Nováková only; Jána/Nováka of Ján Novák only;
        # Petra is Peter's genitive and Petra's nominative, so there the surname decides.
        cases = {"Kto je vedúci práce Jany Novákovej?": "p-jana",
                 "Kto je vedúci práce Jána Nováka?": "p-jan",
                 "Aké práce vedie Ján Novák?": "p-jan",
                 "Aké práce vedie Jana Nováková?": "p-jana",
                 "Aké práce vedie Petra Kováčová?": "p-petra",
                 "Aké práce vedie Peter Kováč?": "p-peter",
                 "Kto je vedúci práce Petra Kováča?": "p-peter",
                 "Kto je vedúci práce Petry Kováčovej?": "p-petra"}
        for question, person in cases.items():
            self.assertEqual(resolved(question, namesakes()), ("ok", None, [person]), question)

    def test_the_look_alike_is_kept_as_rejected_and_the_facts_are_the_chosen_persons(self):
        env = env_of("Kto je vedúci práce Jany Novákovej?", data=namesakes())
        self.assertEqual([c["id"] for c in env["rejected_candidates"]], ["p-jan"])
        # the ring: p-jana's thesis is supervised by the next id, p-peter
        self.assertEqual([(f["subject"], f["object"]) for f in env["facts"]], [("t-p-jana", "p-peter")])

    def test_only_folded_evidence_is_ambiguous_with_both_and_why(self):
        env = env_of("Aké práce vedie Jan Novak?", data=namesakes())
        self.assertEqual((env["status"], env["reason"]), ("ambiguous", "ambiguous_person"))
        self.assertEqual(sorted(e["id"] for e in env["entities"]), ["p-jan", "p-jana"])
        self.assertTrue(all("folding" in e["why"] for e in env["entities"]), env["entities"])

    def test_a_form_of_an_absent_namesake_is_unknown_not_its_look_alike(self):
        men, women = namesakes("p-jan", "p-peter"), namesakes("p-jana", "p-petra")
        for question, data, look_alike in (
                ("Kto je vedúci práce Jany Novákovej?", men, "p-jan"),
                ("Aké práce vedie Petra Kováčová?", men, "p-peter"),
                ("Aké práce vedie Ján Novák?", women, "p-jana"),
                ("Kto je vedúci práce Petra Kováča?", women, "p-petra")):
            env = env_of(question, data=data)
            self.assertEqual((env["status"], env["reason"]), ("no_answer", "unknown_person"), question)
            self.assertEqual([c["id"] for c in env["rejected_candidates"]], [look_alike], question)
            self.assertIn("form", env["rejected_candidates"][0]["why"])

    def test_a_short_alias_does_not_rescue_a_person_the_full_name_rules_out(self):
        men = namesakes("p-jan", "p-peter")
        men["nodes"][1]["aliases"] = ["P. Kováč"]       # one surname word: a partial name
        self.assertEqual(resolved("Aké práce vedie Petra Kováčová?", men),
                         ("no_answer", "unknown_person", []))

    def test_folded_words_still_find_the_only_fitting_person(self):
        self.assertEqual(resolved("Aké práce vedie Jan Novak?", namesakes("p-jan", "p-peter")),
                         ("ok", None, ["p-jan"]))
        self.assertEqual(resolved("Kto je vedúci práce Petry Kovacovej?", namesakes("p-jana", "p-petra")),
                         ("ok", None, ["p-petra"]))

    def test_a_first_name_alone_in_a_form_only_one_namesake_takes(self):
        self.assertEqual(resolved("Kto je vedúci práce Jany?", namesakes()), ("ok", None, ["p-jana"]))
        # Petra is both Peter's genitive and Petra's nominative: still ambiguous
        status, reason, ids = resolved("Kto je vedúci práce Petra?", namesakes())
        self.assertEqual((status, reason, sorted(ids)), ("ambiguous", "ambiguous_person",
                                                         ["p-peter", "p-petra"]))


    def test_polish_case_forms_never_name_the_other_gender(self):
        # Janem, Novákiem, Peterem are male forms; Janą, Novákową, Petrą, Kováčovą female ones
        men, women = namesakes("p-jan", "p-peter"), namesakes("p-jana", "p-petra")
        for question, person in (("Kto prowadził prace wspólnie z Janem Novákiem?", "p-jan"),
                                 ("Kto prowadził prace wspólnie z Janą Novákową?", "p-jana"),
                                 ("Kto był promotorem pracy napisanej z Peterem Kováčem?", "p-peter"),
                                 ("Kto był promotorem pracy napisanej z Petrą Kováčovą?", "p-petra")):
            with self.subTest(question=question):
                self.assertEqual(resolved(question, namesakes())[2], [person])
                alone = men if person in ("p-jan", "p-peter") else women
                look_alikes = women if alone is men else men
                self.assertEqual(resolved(question, alone)[2], [person])
                self.assertEqual(resolved(question, look_alikes), ("no_answer", "unknown_person", []))

    def test_polish_endings_share_the_key_of_the_name(self):
        for forms in (("Ján", "Janem", "Janowi"), ("Novák", "Novákiem", "Nováku", "Novákowi"),
                      ("Peter", "Peterem"), ("Holp", "Holpem", "Holpie"), ("Jana", "Janą", "Janę"),
                      ("Nováková", "Novákową", "Novákowej", "Novákovą"), ("Mária", "Marią"),
                      ("Dlhý", "Dlhym", "Dlhego")):
            self.assertEqual({gs.name_key(f) for f in forms}, {gs.name_key(forms[0])}, forms)


class LetterCaseTest(unittest.TestCase):
    """Capitals mark the words that are names; an all-caps or all-lowercase question has
    no such mark, and must still not put a namesake in place of an unknown person."""

    @staticmethod
    def kovacova() -> dict:
        """Return a graph with Mária Kováčová (t-k, supervised by Peter Novák) and no Holp."""
        return {"nodes": [{"id": "p-kovacova", "type": "person", "name": "Mária Kováčová"},
                          {"id": "p-novak", "type": "person", "name": "Peter Novák"},
                          {"id": "t-k", "type": "thesis", "title": "Práca K", "year": 2024}],
                "edges": [{"source": "p-kovacova", "target": "t-k", "type": "authored"},
                          {"source": "t-k", "target": "p-novak", "type": "supervised_by"}]}

    def test_the_answer_does_not_depend_on_letter_case(self):
        cases = [  # (question, graph, expected) with the expected worked out from the graph
            # Mária Kováčová is not Mária Holpová: Holpovej is a name word her name lacks
            ("Kto je vedúci práce Márie Holpovej?", self.kovacova(), ("no_answer", "unknown_person", [])),
            # Eva Malá is not Eva Veselá
            ("Aký názov práce má Eva Veselá?", fixture(), ("no_answer", "unknown_person", [])),
            ("Kto je vedúci práce Márie Holpovej?", fixture(), ("ok", None, ["p-holpova"])),
            ("Kto je vedúci práce Jany Novákovej?", namesakes(), ("ok", None, ["p-jana"])),
            ("Aký názov práce má Jána Holpa?", fixture(), ("ok", None, ["p-holp"])),
        ]
        for question, data, expected in cases:
            for form in (question, question.upper(), question.lower()):
                self.assertEqual(resolved(form, data), expected, form)

    def test_a_name_typed_in_lower_case_inside_a_normal_question_counts_as_a_name(self):
        self.assertEqual(resolved("Aký názov práce má eva veselá?", fixture()),
                         ("no_answer", "unknown_person", []))
        self.assertEqual(resolved("Aký názov práce má EVA VESELÁ?", fixture()),
                         ("no_answer", "unknown_person", []))

    def test_uncased_count_and_ambiguous_questions_keep_their_answers(self):
        for question in ("KOĽKO OSÔB MÁ PRÁCU V ROKU 2024?", "koľko osôb má prácu v roku 2024?"):
            self.assertEqual(env_of(question)["aggregation"]["count"], 3, question)
        for question in ("AKÝ NÁZOV PRÁCE MÁ PETER?", "aký názov práce má holpová?"):
            self.assertEqual(resolved(question, fixture())[:2], ("ambiguous", "ambiguous_person"), question)


def look_alike_titles() -> dict:
    """Return a graph of four theses whose titles and keywords overlap, one author each:
    A "Webová aplikácia pre knižnicu" [databáza], B "Webová aplikácia pre školu" [databázy],
    C "Strojový preklad" [robotika], D "Strojový preklad právnych textov" [optimalizácia]."""
    theses = {"A": ("Webová aplikácia pre knižnicu", "databáza"),
              "B": ("Webová aplikácia pre školu", "databázy"),
              "C": ("Strojový preklad", "robotika"),
              "D": ("Strojový preklad právnych textov", "optimalizácia")}
    nodes, edges = [], []
    for letter, (title, keyword) in theses.items():
        nodes += [{"id": f"t-{letter}", "type": "thesis", "title": title, "year": 2024},
                  {"id": f"p-{letter}", "type": "person", "name": f"Autor {letter}"},
                  {"id": f"k-{letter}", "type": "keyword", "name": keyword}]
        edges += [{"source": f"p-{letter}", "target": f"t-{letter}", "type": "authored"},
                  {"source": f"t-{letter}", "target": f"k-{letter}", "type": "has_keyword"}]
    return {"nodes": nodes, "edges": edges}


class TitleKeywordTieTest(unittest.TestCase):
    def ask(self, question: str) -> dict:
        return env_of(question, data=look_alike_titles())

    def assert_ambiguous(self, env: dict, ids: list[str]) -> None:
        # the reason names what was ambiguous: theses (t-*) or keywords (k-*)
        reason = {"t": "ambiguous_title", "k": "ambiguous_keyword"}[ids[0][0]]
        self.assertEqual((env["status"], env["reason"]), ("ambiguous", reason))
        self.assertEqual(sorted(e["id"] for e in env["entities"]), ids)
        self.assertTrue(all(e["why"] for e in env["entities"]))
        self.assertEqual((env["facts"], env["complete"]), ([], False))
        self.assertEqual(rc.schema_errors(env, rc.envelope_schema(
            gs.GRAPH_EXTRA_SCHEMA, {"node_id": {"type": "string"}})), [])

    def test_a_title_fragment_that_fits_two_titles_equally_is_ambiguous(self):
        # "Webová aplikácia" covers 2 of the 3 content words of both A and B (67% >= 60%)
        self.assert_ambiguous(self.ask("Kto napísal prácu Webová aplikácia?"), ["t-A", "t-B"])
        self.assert_ambiguous(self.ask("Čo vieme o práci Webová aplikácia?"), ["t-A", "t-B"])

    def test_the_whole_title_wins_over_a_title_it_contains(self):
        # both C (2/2 words) and D (4/4) are fully covered; D matches more of the question
        env = self.ask("Kto napísal prácu Strojový preklad právnych textov?")
        self.assertEqual((env["status"], [f["subject"] for f in env["facts"]]), ("ok", ["p-D"]))
        env = self.ask("Kto napísal prácu Strojový preklad?")     # D: only 2 of 4 words
        self.assertEqual((env["status"], [f["subject"] for f in env["facts"]]), ("ok", ["p-C"]))
        env = self.ask("Kto napísal prácu Webová aplikácia pre knižnicu?")
        self.assertEqual((env["status"], [f["subject"] for f in env["facts"]]), ("ok", ["p-A"]))

    def test_one_question_word_fitting_two_keywords_is_ambiguous(self):
        # databáza and databázy are two keywords with one key; the question names one of them
        self.assert_ambiguous(self.ask("Ktoré práce majú kľúčové slovo databázy?"), ["k-A", "k-B"])

    def test_what_is_known_about_two_named_keywords_is_ambiguous(self):
        # 'about' follows one entity: with two named, the question is ambiguous, never
        # silently about the first
        self.assert_ambiguous(self.ask("Čo vieme o robotike a optimalizácii?"), ["k-C", "k-D"])

    def test_keywords_named_by_different_words_list_all_their_theses(self):
        env = self.ask("Ktoré práce majú kľúčové slová robotika a optimalizácia?")
        self.assertEqual(env["status"], "ok")
        self.assertEqual(sorted(e["id"] for e in env["entities"]), ["k-C", "k-D"])
        self.assertEqual(sorted(f["subject"] for f in env["facts"]), ["t-C", "t-D"])


# === Question kinds and limits ===

class CountTest(unittest.TestCase):
    Q = "Koľko osôb má prácu v roku 2024?"

    def test_count_is_exact_at_any_limit(self):
        for limit in (1, 2, 100):
            env = env_of(self.Q, gs.GraphLimits(fact_limit=limit, path_limit=limit))
            self.assertEqual(env["aggregation"]["count"], 3, limit)
            self.assertIs(env["aggregation"]["complete"], True)
            self.assertEqual(env["status"], "ok")

    def test_limit_one_truncates_evidence_but_not_the_count(self):
        env = env_of(self.Q, gs.GraphLimits(fact_limit=1, path_limit=1))
        self.assertEqual(len(env["facts"]), 1)
        self.assertEqual(len(env["paths"]), 1)
        self.assertIs(env["truncated"], True)
        self.assertEqual(env["truncation_reasons"], ["fact_limit", "path_limit"])
        self.assertIs(env["complete"], False)
        self.assertIn("3", env["answer"])

    def test_a_questions_limit_bounds_the_facts_and_paths_shown(self):
        # the caller's limit travels in the Question (as /graph and the CLI's --limit send it)
        # and takes the place of the fact and path limits given, not of the others
        question = rc.question_make(self.Q, limit=1)
        env = env_of(question, gs.GraphLimits(fact_limit=5, path_limit=5, evidence_limit=7))
        self.assertEqual((len(env["facts"]), len(env["paths"])), (1, 1))
        self.assertEqual(env["truncation_reasons"], ["fact_limit", "path_limit"])
        self.assertEqual(env["aggregation"]["count"], 3)
        self.assertEqual(env_of(rc.question_make(self.Q), gs.GraphLimits(fact_limit=4, path_limit=4))["truncated"],
                         False)

    def test_limit_equal_to_the_item_count_is_not_truncation(self):
        # 4 (person, thesis) pairs in 2024: a limit of 4 shows all, 3 is proven short.
        env = env_of(self.Q, gs.GraphLimits(fact_limit=4, path_limit=4))
        self.assertEqual((len(env["facts"]), env["truncated"], env["complete"]), (4, False, True))
        env = env_of(self.Q, gs.GraphLimits(fact_limit=3, path_limit=4))
        self.assertEqual(env["truncation_reasons"], ["fact_limit"])

    def test_theses_count_and_zero_count(self):
        self.assertEqual(env_of("Koľko prác je z roku 2024?")["aggregation"]["count"], 3)
        env = env_of("How many persons have a thesis in 2023?")
        self.assertEqual((env["status"], env["reason"]), ("ok", None))
        self.assertEqual(env["aggregation"], {"count": 0, "complete": True, "year": 2023,
                                              "counted": "person",
                                              "filters": [{"field": "year", "op": "eq", "value": 2023}]})
        self.assertEqual(env["sources"], [])
        self.assertIs(env["complete"], True)

    def test_evidence_limit_caps_documents_and_leaves_later_facts_unsourced(self):
        env = env_of(self.Q, gs.GraphLimits(evidence_limit=2))
        self.assertEqual(len(env["documents"]), 2)      # t1, t2 shown; t3 proves the cut
        self.assertEqual(env["truncation_reasons"], ["evidence_limit"])
        last = [f for f in env["facts"] if f["object"] == "t3"][0]
        self.assertIsNone(last["source_id"])


class KindsTest(unittest.TestCase):
    def test_supervisor_of_a_person_goes_through_each_thesis(self):
        env = env_of("Kto je vedúci práce Jána Holpa?")
        self.assertEqual([(f["subject"], f["object"]) for f in env["facts"]],
                         [("t1", "p-novak"), ("t2", "p-novak")])
        self.assertEqual(env["paths"][0]["nodes"], ["p-holp", "t1", "p-novak"])
        self.assertIn("Peter Novák", env["answer"])

    def test_theses_supervised_by_someone(self):
        env = env_of("Which theses did Peter Novák supervise?")
        self.assertEqual(sorted(f["subject"] for f in env["facts"]), ["t1", "t2", "t3", "t4"])
        self.assertTrue(env["answer"].startswith("Theses supervised by Peter Novák"))

    def test_keyword_by_name_or_alias_and_unknown_keyword(self):
        env = env_of("Which theses have the keyword machine translation?")
        self.assertEqual([f["subject"] for f in env["facts"]], ["t1"])
        env = env_of("Ktoré práce majú kľúčové slovo webové aplikácie?")
        self.assertEqual(sorted(f["subject"] for f in env["facts"]), ["t2", "t3"])
        env = env_of("Ktoré práce majú kľúčové slovo kvantová chémia?")
        self.assertEqual((env["status"], env["reason"]), ("no_answer", "unknown_keyword"))

    def test_author_of_title_and_unknown_title(self):
        env = env_of("Kto napísal prácu Webové rezervácie učební?")
        self.assertEqual(sorted(f["subject"] for f in env["facts"]), ["p-holp", "p-sloboda"])
        env = env_of("Who wrote the thesis Quantum soup cooking?")
        self.assertEqual((env["status"], env["reason"]), ("no_answer", "unknown_title"))

    def test_person_without_such_facts_is_no_matching_facts(self):
        env = env_of("Aký názov práce má Peter Novák?")   # he supervises, wrote nothing
        self.assertEqual((env["status"], env["reason"]), ("no_answer", "no_matching_facts"))
        self.assertEqual([e["id"] for e in env["entities"]], ["p-novak"])

    def test_about_walks_paths_up_to_the_configured_length(self):
        # Novák: 4 paths of length 1 (t1..t4) and 8 of length 2 (see module docstring).
        q = "Čo vieme o Petrovi Novákovi?"
        env = env_of(q, gs.GraphLimits(path_limit=12))
        self.assertEqual((len(env["paths"]), env["truncated"]), (12, False))
        self.assertEqual(max(len(p["edges"]) for p in env["paths"]), 2)
        env = env_of(q, gs.GraphLimits(path_limit=11))
        self.assertEqual(env["truncation_reasons"], ["path_limit"])
        # 5 stops inside the second level: still proven by the sixth path.
        env = env_of(q, gs.GraphLimits(path_limit=5))
        self.assertEqual((len(env["paths"]), env["truncation_reasons"]), (5, ["path_limit"]))
        env = env_of(q, gs.GraphLimits(path_limit=100, max_path_length=1))
        self.assertEqual((len(env["paths"]), env["truncated"]), (4, False))

    def test_unsupported_question_in_ask_is_no_matching_facts(self):
        env = env_of("What is the VAT rate?")
        self.assertEqual((env["status"], env["reason"], env["intent"]),
                         ("no_answer", "no_matching_facts", None))


class _NoScanDict(dict):
    """A dict that fails any whole-collection walk: lookups by key only."""

    def _refuse(self, *args):
        raise AssertionError("a query scanned a whole index")

    __iter__ = keys = values = items = _refuse


class IndexOnlyTest(unittest.TestCase):
    def test_queries_use_indexes_not_whole_graph_scans(self):
        g = graph()
        g.nodes = _NoScanDict(g.nodes)
        g.out_edges, g.in_edges = _NoScanDict(g.out_edges), _NoScanDict(g.in_edges)
        g.token_index = _NoScanDict({t: _NoScanDict(ix) for t, ix in g.token_index.items()})
        g.year_index = _NoScanDict(g.year_index)
        for question in ("Koľko osôb má prácu v roku 2024?", "Aký názov práce má Jána Holpa?",
                         "Kto je vedúci práce Jána Holpa?", "Ktoré práce viedol Peter Novák?",
                         "Which theses have the keyword machine translation?",
                         "Kto napísal prácu Webové rezervácie učební?", "Čo vieme o Jánovi Holpovi?"):
            self.assertEqual(gs.ask(question, g, gs.GraphLimits()).status, "ok", question)


# === Envelope ===

class EnvelopeTest(unittest.TestCase):
    def schema(self):
        return rc.envelope_schema(gs.GRAPH_EXTRA_SCHEMA, {"node_id": {"type": "string"}})

    def test_envelopes_of_every_status_match_the_schema(self):
        for question in ("Koľko osôb má prácu v roku 2024?", "Aký názov práce má Peter?",
                         "Aký názov práce má Zuzana Veselá?", "Čo vieme o Jánovi Holpovi?"):
            env = env_of(question, gs.GraphLimits(fact_limit=1, path_limit=1))
            self.assertEqual(rc.schema_errors(env, self.schema()), [], question)
            self.assertEqual(env["index_version"], "test-version")

    def test_sources_point_at_documents_without_guessing(self):
        env = env_of("Aký názov práce má Ján Holp?")
        self.assertEqual([s["source_id"] for s in env["sources"]], ["S1", "S2"])
        s1, s2 = env["sources"]
        self.assertEqual((s1["document_path"], s1["source_url"], s1["title"]),
                         ("prace/t1.md", "https://example.org/t1", "Strojový preklad právnych textov"))
        self.assertEqual(s2["source_url"], None)
        self.assertEqual({f["source_id"] for f in env["facts"]}, {"S1", "S2"})

    def test_fact_without_a_document_has_no_source(self):
        env = env_of("Aký názov práce má Eva Malá?")
        self.assertEqual(env["sources"], [])
        self.assertIsNone(env["facts"][0]["source_id"])


# === CLI ===

class CliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "graph.json")
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump(fixture(), f)

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, text: str) -> str:
        path = os.path.join(self.tmp.name, "bad.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_count_json_same_at_limit_1_and_100(self):
        envs = {}
        for limit in ("1", "100"):
            done = run_cli("Koľko osôb má prácu v roku 2024?", "--graph", self.path,
                           "--limit", limit, "--json")
            self.assertEqual(done.returncode, 0, done.stderr)
            envs[limit] = json.loads(done.stdout)
        self.assertEqual(envs["1"]["aggregation"]["count"], 3)
        self.assertEqual(envs["100"]["aggregation"]["count"], 3)
        self.assertEqual((envs["1"]["truncated"], envs["1"]["complete"]), (True, False))
        self.assertEqual(envs["1"]["truncation_reasons"], ["fact_limit", "path_limit"])
        self.assertEqual((envs["100"]["truncated"], envs["100"]["complete"]), (False, True))

    def test_text_output_is_readable(self):
        done = run_cli("Aký názov práce má Jána Holpa?", "--graph", self.path)
        self.assertEqual(done.returncode, 0)
        self.assertIn("Strojový preklad právnych textov", done.stdout)
        self.assertIn("[S1] prace/t1.md", done.stdout)
        self.assertIn("status: ok", done.stdout)

    def test_malformed_graphs_give_exit_1_and_a_clean_error_envelope(self):
        dangling = fixture()
        dangling["edges"].append({"source": "p-holp", "target": "nope", "type": "authored"})
        duplicate = fixture()
        duplicate["nodes"].append(dict(duplicate["nodes"][0]))
        for text in ('{"nodes": [', json.dumps(dangling), json.dumps(duplicate)):
            path = self.write(text)
            done = run_cli("Koľko osôb má prácu v roku 2024?", "--graph", path, "--json")
            self.assertEqual(done.returncode, 1)
            env = json.loads(done.stdout)
            self.assertEqual(rc.schema_errors(env, rc.error_schema()), [])
            self.assertEqual((env["status"], env["reason"]), ("error", "retrieval_unavailable"))
            for leak in ("Traceback", self.tmp.name, "bad.json", "nope", "p-holp", "JSON ("):
                self.assertNotIn(leak, done.stdout)
            self.assertNotIn("Traceback", done.stderr)
            self.assertIn("graph_store:", done.stderr)

    def test_error_in_text_mode_names_the_place_on_stderr(self):
        dangling = fixture()
        dangling["edges"].append({"source": "p-holp", "target": "nope", "type": "authored"})
        done = run_cli("Koľko osôb?", "--graph", self.write(json.dumps(dangling)))
        self.assertEqual((done.returncode, done.stdout), (1, ""))
        self.assertIn("edge #12", done.stderr)

    def test_empty_question_is_exit_1_invalid_query(self):
        done = run_cli("  ", "--graph", self.path, "--json")
        self.assertEqual(done.returncode, 1)
        self.assertEqual(json.loads(done.stdout)["reason"], "invalid_query")

    def test_usage_errors_exit_2(self):
        self.assertEqual(run_cli("Koľko osôb?").returncode, 2)
        self.assertEqual(run_cli("q", "--graph", self.path, "--limit", "0").returncode, 2)

    def test_unexpected_exception_becomes_internal_error_and_debug_reraises(self):
        def broken(*args, **kwargs):
            raise RuntimeError("secret /srv/path detail")
        original = gs.ask
        gs.ask = broken
        try:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = gs.main(["Koľko osôb má prácu v roku 2024?", "--graph", self.path, "--json"])
            self.assertEqual(code, 1)
            env = json.loads(out.getvalue())
            self.assertEqual(env["reason"], "internal_error")
            self.assertNotIn("secret", out.getvalue() + err.getvalue())
            with self.assertRaises(RuntimeError), contextlib.redirect_stdout(io.StringIO()):
                gs.main(["Koľko osôb?", "--graph", self.path, "--debug"])
        finally:
            gs.ask = original

    def test_import_is_inert(self):
        done = subprocess.run([sys.executable, "-c", "import graph_store"], cwd=REPO,
                              capture_output=True, text=True, timeout=60)
        self.assertEqual((done.returncode, done.stdout, done.stderr), (0, "", ""))


# === Demo corpus ===

class DemoCorpusTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.path = os.path.join(REPO, "corpus", "graph.json")
        with open(cls.path, encoding="utf-8") as f:
            cls.raw = json.load(f)
        cls.graph = gs.graph_load(cls.path)

    def test_size_years_and_documents_exist(self):
        persons = [n for n in self.raw["nodes"] if n["type"] == "person"]
        theses = [n for n in self.raw["nodes"] if n["type"] == "thesis"]
        self.assertGreaterEqual(len(persons), 40)
        self.assertEqual({t["year"] for t in theses}, set(range(2019, 2026)))
        for thesis in theses:
            page = os.path.join(REPO, "corpus", thesis["document_path"])
            self.assertTrue(os.path.isfile(page), thesis["id"])

    def test_2024_count_matches_the_raw_edges(self):
        theses_2024 = {n["id"] for n in self.raw["nodes"]
                       if n["type"] == "thesis" and n["year"] == 2024}
        expected = len({e["source"] for e in self.raw["edges"]
                        if e["type"] == "authored" and e["target"] in theses_2024})
        self.assertGreaterEqual(expected, 15)
        for limit in (1, 100):
            limits = gs.GraphLimits(fact_limit=limit, path_limit=limit)
            env = gs.to_envelope(gs.ask("Koľko osôb má prácu v roku 2024?", self.graph, limits)).to_dict()
            self.assertEqual(env["aggregation"], {"count": expected, "complete": True,
                                                  "year": 2024, "counted": "person",
                                                  "filters": [{"field": "year", "op": "eq", "value": 2024}]})
            self.assertEqual(env["complete"], limit == 100)

    def test_demo_collisions_are_ambiguous(self):
        for question in ("Aký názov práce má Holp?", "Aký názov práce má Peter?"):
            result = gs.ask(question, self.graph, gs.GraphLimits())
            self.assertEqual((result.status, result.reason), ("ambiguous", "ambiguous_person"))
        result = gs.ask("Aký názov práce má Jána Holpa?", self.graph, gs.GraphLimits())
        self.assertEqual([e["id"] for e in result.entities], ["p-jan-holp"])


if __name__ == "__main__":
    unittest.main()
