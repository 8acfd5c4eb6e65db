"""Language (retrieval_contract, shared text): one detector tells Polish, Slovak and English apart with or without
diacritics; the refusal (and the prompt) follow it."""
import unittest

from helpers import TAX_CORPUS, TempDirTest, docs_qa, write_files


class DetectTest(unittest.TestCase):
    CASES = {
        "pl": ["przepis na sernik z rodzynkami", "przepis na sernik z rodzynkami?",
               "do kiedy składam JPK", "do kiedy skladam JPK", "jak dlugo przechowywac faktury",
               "czy musze wystawic fakture korygujaca", "ile wynosi skladka zdrowotna w 2026",
               "kto wygral mistrzostwa swiata w pilce noznej", "Jaki tytuł ma praca Jána Holpa?"],
        "sk": ["kto vyhral majstrovstvá sveta v hokeji", "kto vyhral majstrovstva sveta v hokeji",
               "Kto je vedúci práce Jána Holpa?", "kto je veduci prace Jana Holpa",
               "ako dlho uchovavat faktury", "Aký názov práce má Ján Holp?",
               "kde sa obhajuje diplomova praca"],
        "en": ["when is the deadline", "How does a foreign buyer receive a KSeF invoice?",
               "Who supervised Eva Šimková?", "what is the VAT threshold in Poland"],
    }

    def test_each_language_with_and_without_diacritics(self):
        for language, questions in self.CASES.items():
            for question in questions:
                with self.subTest(question=question):
                    self.assertEqual(docs_qa.text_detect_language(question), language)

    def test_an_english_message_pasted_into_a_question_does_not_make_it_english(self):
        # the frame's stop word comes first ('pri', 'w'); an English question quoting a Polish
        # word is framed in English ('what')
        cases = {"pri vytvarani virtualenvu pise ensurepip is not available": "sk",
                 "w konsoli django dostaje NameError: name 'Post' is not defined": "pl",
                 "na co sluzi subor urls.py": "sk", "do czego sluzy plik urls.py": "pl",
                 "what does 'jak' mean in the code": "en", "Why is the file not in the folder?": "en"}
        for question, language in cases.items():
            with self.subTest(question=question):
                self.assertEqual(docs_qa.text_detect_language(question), language)

    def test_a_code_alone_gives_the_default(self):
        self.assertEqual(docs_qa.text_detect_language("GTU_12"), "en")
        self.assertEqual(docs_qa.text_detect_language("GTU_12", default="sk"), "sk")

    def test_there_is_one_detector(self):
        import graph_store
        for module, name in ((docs_qa, "answer_language"), (docs_qa, "text_language"),
                             (graph_store, "_language")):
            self.assertFalse(hasattr(module, name), name)


class GraphLanguageTest(unittest.TestCase):
    def test_the_graph_answers_in_the_detected_language(self):
        import graph_store
        graph = graph_store.graph_build({"nodes": [{"id": "p", "type": "person", "name": "Ján Holp"}],
                                         "edges": []})
        for question, language in (("jaki tytul ma praca Jana Holpa", "pl"),
                                   ("Jaki tytuł ma praca Jána Holpa?", "pl"),
                                   ("aky nazov prace ma Jan Holp", "sk"),
                                   ("Koľko osôb má prácu v roku 2024?", "sk"),
                                   ("Who supervised Eva Šimková?", "en")):
            with self.subTest(question=question):
                self.assertEqual(docs_qa.text_detect_language(question, "sk"), language)
                self.assertEqual(graph_store.graph_parse_question(question, graph).language, language)

    def test_a_graph_question_that_does_not_tell_is_slovak(self):
        import graph_store
        self.assertEqual(graph_store.ask("Ján Holp?", graph_store.graph_build({"nodes": [], "edges": []})).language,
                         "sk")


class RefusalLanguageTest(TempDirTest):
    def test_off_corpus_questions_typed_without_diacritics_are_refused_in_their_language(self):
        write_files(self.docs, TAX_CORPUS)
        for question, language in (("przepis na sernik z rodzynkami", "pl"),
                                   ("kto vyhral majstrovstva sveta v hokeji", "sk")):
            with self.subTest(question=question):
                result = docs_qa.answer(question, self.settings(use_embeddings=False, extractive=True))
                self.assertEqual(result.status, "no_answer")
                self.assertEqual(result.answer, docs_qa.REFUSALS[language])




class LanguageTableTest(unittest.TestCase):
    """One LANGUAGES table: every language the detector can return has every entry."""

    def test_every_detectable_language_has_every_entry(self):
        import dataclasses
        import retrieval_contract as rc
        detected = {rc.text_detect_language(q) for q in ("What is the deadline?", "Do kiedy składam JPK?",
                                                          "Dokedy podám daňové priznanie?", "GTU_12")}
        self.assertEqual(detected, {"en", "pl", "sk"})
        self.assertEqual(set(rc.LANGUAGES), detected)
        for code, language in rc.LANGUAGES.items():
            with self.subTest(language=code):
                self.assertEqual(language.code, code)
                for entry in dataclasses.fields(language):
                    self.assertTrue(getattr(language, entry.name), entry.name)
                self.assertEqual(language.stem("abc1"), "abc1")          # a stemmer, callable
        # the page's texts use the same codes
        self.assertEqual(set(docs_qa.PAGE_TEXTS), set(rc.LANGUAGES))

    def test_stop_words_of_polish_and_slovak_are_kept_apart(self):
        import retrieval_contract as rc
        self.assertIn("przez", rc.LANGUAGES["pl"].stop_words)
        self.assertNotIn("przez", rc.LANGUAGES["sk"].stop_words)
        self.assertIn("alebo", rc.LANGUAGES["sk"].stop_words)
        self.assertNotIn("alebo", rc.LANGUAGES["pl"].stop_words)


class NameFormsTest(TempDirTest):
    """A personal name in a Polish or Slovak question meets its other forms in the documents,
    the fleeting e included ('s Petrom' meets 'Peter', 'Marka' meets 'Marek'), by the rule the
    graph matches names with; an English question's capitalised words keep their own terms."""

    DOCS = {"novak.md": "# Semináre\n\nDocent Peter Novák vedie semináre strojového prekladu.\n",
            "holp.md": "# Korpusy\n\nJán Holp napísal prácu o korpusoch a anotácii.\n"}

    def test_an_oblique_form_with_a_fleeting_e_finds_the_nominative(self):
        # 'Petrom' stems to 'petr', the page writes 'Peter': before, the name counted as one the
        # documents never mention and the question was refused
        write_files(self.docs, self.DOCS)
        result = docs_qa.search("Kto konzultoval s Petrom Novákom?", self.settings(use_embeddings=False))
        self.assertEqual([h.chunk.path for h in result.hits][:1], ["novak.md"], result.notes)

    def test_the_forms_with_and_without_the_fleeting_e_are_terms(self):
        for question, forms in (("Kto konzultoval s Petrom Novákom?", {"petr", "peter"}),
                                ("Czy Peter Novák prowadzi seminarium?", {"petr", "peter"}),
                                ("O czym pisał Marka Wiśniewskiego kolega?", {"mark", "marek"})):
            with self.subTest(question=question):
                self.assertLessEqual(forms, set(docs_qa.question_make(question).terms))
        terms = docs_qa.question_make("Who proved the Chinese Remainder theorem?").terms
        self.assertFalse({"remained", "chins"} & set(terms), terms)

    def test_the_graph_matches_names_by_the_same_rule(self):
        import graph_store
        import retrieval_contract as rc
        self.assertFalse(hasattr(graph_store, "_drop_fleeting_e") or hasattr(graph_store, "_insert_fleeting_e"))
        self.assertEqual(graph_store.name_key("Petrom"), graph_store.name_key("Peter"))
        self.assertEqual(rc.text_insert_fleeting_e(graph_store.name_key("Petra")), "peter")


if __name__ == "__main__":
    unittest.main()
