"""Ranking (issue 15): BM25 with query-term frequency and title weight, fusion that keeps
BM25's sure hits, and the IDF-weighted no-answer gate, through public functions and the CLI."""
import math
import os
import random
import unittest
from dataclasses import replace

from helpers import TempDirTest, docs_qa, run_cli, write_files


class QueryTermFrequencyTest(unittest.TestCase):
    def test_a_repeated_word_counts_with_its_frequency(self):
        self.assertEqual(docs_qa.text_query_counts("kot kot na pies"), {"kot": 2, "pies": 1})

    def test_request_boilerplate_is_dropped_from_questions(self):
        self.assertEqual(docs_qa.text_query_counts("I am interested in associative stores"),
                         {"associ": 1, "store": 1})
        self.assertEqual(docs_qa.text_query_counts("interesuje mnie faktura"), {"faktur": 1})

    def test_an_instruction_to_answer_in_a_language_names_no_topic(self):
        # 'Odpowiedz po polsku.' is for a model; 'polsku' met every 'polski' of Polish tax notes
        self.assertNotIn("polsk", docs_qa.text_query_counts("Co to jest KSeF? Odpowiedz po polsku."))
        self.assertNotIn("angielsk", docs_qa.text_query_counts("Co to jest KSeF? Odpowiedz po angielsku."))

    def test_a_phrase_asking_how_to_answer_names_no_topic(self):
        # 'in plain words' met a code editor's page on plain text and Word, ranked first
        for asked, topic in (("So what is a QuerySet, in plain words?", "What is a QuerySet?"),
                             ("Czy uptime wypisze czas ładniej, po ludzku?", "Czy uptime wypisze czas ładniej?"),
                             ("Čo je Django, jednoduchými slovami?", "Čo je Django?"),
                             ("In short, what is Django?", "What is Django?")):
            self.assertEqual(docs_qa.text_query_counts(asked), docs_qa.text_query_counts(topic), asked)
        # ... but 'in short' before more words is a topic's ('in short running time facilities')
        self.assertIn("short", docs_qa.text_query_counts("tunnels for use in short running time facilities"))

    def test_an_abbreviation_such_as_np_names_no_topic(self):
        # 'np.' (for example) was a question word, held by every page that gives an example
        for asked, bare in (("Jak pokazać pamięć, np. w gigabajtach?", "Jak pokazać pamięć w gigabajtach?"),
                            ("Ako zobraziť pamäť, napr. v gigabajtoch?", "Ako zobraziť pamäť v gigabajtoch?"),
                            ("pliki, katalogi itd.", "pliki, katalogi")):
            self.assertEqual(docs_qa.text_query_counts(asked), docs_qa.text_query_counts(bare), asked)

    def test_ok_names_no_topic(self):
        # 'are my build tools OK?': in capitals, OK weighed as a code word three times a rare
        # word, and a folder that never writes it refused the question for it
        self.assertEqual(docs_qa.text_query_counts("are my build tools OK?"), docs_qa.text_query_counts("build tools"))
        self.assertEqual(docs_qa.text_query_counts("czy to jest okay"), {})

    def test_the_verbs_of_what_do_i_do_are_dropped_in_slovak_and_polish_as_in_english(self):
        # 'čo musím spraviť' / 'co mam zrobic' frame the question; a note's 'toto musíš spraviť
        # len raz' is no answer to it
        self.assertEqual(docs_qa.text_query_counts("čo musím spraviť pre CSS"), {"css": 1})
        self.assertEqual(docs_qa.text_query_counts("ako spravím zálohu"), docs_qa.text_query_counts("ako zálohu"))
        self.assertEqual(docs_qa.text_query_counts("co zrobię z fakturą"), docs_qa.text_query_counts("co z fakturą"))
        # 'jak sprawić, żeby…' (how to make it so that…): refused over man pages for 'sprawić'
        self.assertEqual(docs_qa.text_query_counts("jak sprawić, żeby free odświeżało wynik"),
                         docs_qa.text_query_counts("jak free odświeżało wynik"))

    def test_capitals_of_an_all_caps_question_do_not_make_code_words(self):
        # mixed case: WIS is a code word and also gets its light stem; all caps: Porter only
        self.assertIn("wis", docs_qa.text_query_counts("fee for WIS"))
        self.assertEqual(docs_qa.text_query_counts("FEE FOR RULINGS"), {"fee": 1, "rule": 1})

    def test_query_weight_is_robertsons_k3_saturation(self):
        self.assertEqual(docs_qa.bm25_query_weight(1, 8.0), 1.0)
        self.assertAlmostEqual(docs_qa.bm25_query_weight(2, 8.0), 18 / 10)   # (8+1)*2/(8+2)
        self.assertAlmostEqual(docs_qa.bm25_query_weight(3, 8.0), 27 / 11)

    def test_bm25_by_hand_with_a_repeated_query_word(self):
        # N=3, df=1 each: idf = ln(1 + 2.5/1.5) = ln(8/3); k1=1.2, b=0.75, len = avg = 4:
        # kot (tf 2, said twice): 1.8 * idf * 2 * 2.2 / (2 + 1.2) ; pies (tf 1, once): idf * 2.2 / 2.2
        postings = {"kot": [(1, 2, 4)], "pies": [(2, 1, 4)]}
        scores = docs_qa.bm25_scores(postings, 3, 4.0, k1=1.2, b=0.75,
                                     query_weights={"kot": 1.8, "pies": 1.0})
        idf = math.log(8 / 3)
        self.assertAlmostEqual(scores[1], 1.8 * idf * 4.4 / 3.2)
        self.assertAlmostEqual(scores[2], idf)

    def test_tf_units_rescale_term_frequency_only(self):
        plain = docs_qa.bm25_scores({"x": [(1, 2, 6)]}, 4, 5.0)
        halves = docs_qa.bm25_scores({"x": [(1, 4, 12)]}, 4, 10.0, tf_units=2)
        self.assertAlmostEqual(plain[1], halves[1])

    def test_title_words_weigh_one_and_a_half(self):
        counts, length = docs_qa.bm25_term_counts("# Kot\n\nkot pies\n", docs_qa.Tokenizer())
        # body: kot 2 x 2 units, pies 1 x 2 units; the title's kot adds 3 - 2 = 1 unit
        self.assertEqual(dict(counts), {"kot": 5, "pies": 2})
        self.assertEqual(length, 7)


class RepeatedWordSearchTest(TempDirTest):
    def test_the_word_a_question_repeats_decides_between_two_equal_documents(self):
        write_files(self.docs, {"a.md": "alpha gamma delta\n", "b.md": "beta gamma delta\n"})
        settings = self.settings(use_embeddings=False, min_coverage=0.0)
        self.assertEqual(docs_qa.search("beta beta alpha", settings).hits[0].chunk.path, "b.md")
        self.assertEqual(docs_qa.search("alpha alpha beta", settings).hits[0].chunk.path, "a.md")


class SectionHeadingTest(TempDirTest):
    def test_a_section_repeating_the_pages_title_does_not_outrank_the_one_that_answers(self):
        # both sections hold 'VAT return' once; the quarterly one only in its heading, which
        # repeats the title's words: those frame every section alike and weigh as body words
        page = ("# VAT returns and payments — deadlines\n\nWhen a VAT return is due, and when the tax is paid.\n\n"
                "## The basic deadline: the 25th\n\nA monthly VAT return is filed by the 25th day of the next month.\n\n"
                "## VAT returns — quarterly\n\nA quarterly taxpayer files every month as well, "
                "with the summary part for the whole quarter.\n")
        write_files(self.docs, {"vat.md": page, "invoices.md": "# Invoices\n\nAn invoice is issued within 15 days.\n"})
        hits = docs_qa.search("by when is a VAT return filed", self.settings(use_embeddings=False)).hits
        self.assertEqual((hits[0].chunk.path, hits[0].chunk.start_line), ("vat.md", 5))


class PageEvidenceTest(TempDirTest):
    """Of two pages whose best fragments score alike, the one where a second fragment matches
    the question too comes first (its best fragment does), the scores unchanged."""

    NOTES = "# Release notes\n\n- 2.1: snapshots of a backup restore faster.\n- 2.0: restore a snapshot of a backup from another host.\n"
    BACKUPS = ("# Backups\n\n## Restoring\n\nStop the service first. To restore a backup snapshot, run `tool restore "
               "--snapshot ID` and wait for it to finish before you start the service again; the tool checks the "
               "files it writes and tells you when the data is whole.\n\n## Snapshots\n\nA backup snapshot is taken "
               "every night at two; list them with `tool snapshots` before you restore one.\n")
    QUESTION = "how do I restore a backup snapshot"

    def test_the_page_with_a_second_matching_fragment_leads(self):
        write_files(self.docs, {"release-notes.md": self.NOTES, "backups.md": self.BACKUPS})
        hits = docs_qa.search(self.QUESTION, self.settings(use_embeddings=False)).hits
        self.assertEqual([(h.chunk.path, h.chunk.start_line) for h in hits],
                         [("backups.md", 7), ("release-notes.md", 1), ("backups.md", 1)])
        # the notes' line scores higher alone: the order, not BM25's scores, is what changed
        self.assertGreater(hits[1].bm25_score, hits[0].bm25_score)
        self.assertGreater(hits[0].bm25_score, hits[2].bm25_score)

    def test_a_page_matching_once_keeps_its_place(self):
        alone = self.BACKUPS.split("## Snapshots")[0]      # the same page without its second match
        write_files(self.docs, {"release-notes.md": self.NOTES, "backups.md": alone})
        hits = docs_qa.search(self.QUESTION, self.settings(use_embeddings=False)).hits
        self.assertEqual([h.chunk.path for h in hits], ["release-notes.md", "backups.md"])

    def test_a_fragment_saying_what_the_question_says_stays_first(self):
        # the notes' line holds the question's words in its order: the known item asked for
        said = self.NOTES.replace("snapshots of a backup restore faster", "restore a backup snapshot faster")
        write_files(self.docs, {"release-notes.md": said, "backups.md": self.BACKUPS})
        hits = docs_qa.search(self.QUESTION, self.settings(use_embeddings=False)).hits
        self.assertEqual([h.chunk.path for h in hits], ["release-notes.md", "backups.md", "backups.md"])
        question = docs_qa.question_make(self.QUESTION)
        self.assertTrue(docs_qa._says_the_question(["fix", "restor", "backup", "snapshot"], question))
        self.assertFalse(docs_qa._says_the_question(["restor", "a", "backup", "snapshot"], question))
        self.assertFalse(docs_qa._says_the_question(["snapshot", "backup", "restor"], question))

    def test_only_the_first_place_moves(self):
        top = [(1, 10.0), (2, 9.0), (3, 8.0), (4, 7.0), (5, 1.0)]
        page = {1: "a.md", 2: "b.md", 3: "c.md", 4: "b.md", 5: "a.md"}
        places = lambda ids: {i: (page[i], ()) for i in ids}    # noqa: E731
        # b: 9 + 0.3 * 7 = 11.1 against a: 10 + 0.3 * 1 = 10.3
        self.assertEqual(docs_qa._pages_by_evidence(top, places), [(2, 9.0), (1, 10.0), (3, 8.0), (4, 7.0), (5, 1.0)])
        self.assertEqual(docs_qa._pages_by_evidence(top[:1], places), top[:1])
        page[4] = "d.md"                                      # b matches once: nothing moves
        self.assertEqual(docs_qa._pages_by_evidence(top, places), top)

    def test_a_changelogs_entries_lend_their_page_nothing(self):
        top = [(1, 10.0), (2, 9.0), (3, 8.0)]
        where = {1: ("guide.md", ("Backups",)), 2: ("CHANGELOG.md", ("Changes", "v1.2.0")),
                 3: ("CHANGELOG.md", ("Changes", "v1.1.0"))}
        places = lambda ids: {i: where[i] for i in ids}      # noqa: E731
        # 9 + 0.3 * 8 = 11.4 would lead 10, but the second is a release's entry
        self.assertEqual(docs_qa._pages_by_evidence(top, places), top)
        where[3] = ("CHANGELOG.md", ("Changes", "How to upgrade"))
        self.assertEqual([cid for cid, _ in docs_qa._pages_by_evidence(top, places)], [2, 1, 3])


class FeedbackTest(TempDirTest):
    """RM3: an English question whose best fragment holds its subject is ranked again with
    that fragment's words, so a fragment that shares them moves up among those the question
    found (c.md says 'speed' twice, b.md once but with the best fragment's other words)."""

    def setUp(self):
        super().setUp()
        write_files(self.docs, {"a.md": "# Wing flutter\n\nWing flutter speed with supersonic damping.\n",
                                "b.md": "Supersonic damping of thin panels at low speed.\n",
                                "c.md": "Speed of a pasta boat in tomato sauce: speed matters.\n"})

    def bm25_paths(self, question: str, **overrides) -> list[str]:
        settings = self.settings(use_embeddings=False, **overrides)
        return [c.path for c in docs_qa.search_rankings(question, settings, 5)["bm25"]]

    def test_a_confident_english_question_borrows_the_words_of_its_best_fragment(self):
        self.assertEqual(self.bm25_paths("what is the wing flutter speed"), ["a.md", "b.md", "c.md"])

    def test_no_second_pass_when_switched_off_or_for_an_identifier(self):
        self.assertEqual(self.bm25_paths("what is the wing flutter speed", feedback_min_share=1.01),
                         ["a.md", "c.md", "b.md"])
        self.assertEqual(self.bm25_paths("what is the WF-12 wing flutter speed"), ["a.md", "c.md", "b.md"])

    def test_no_second_pass_for_a_short_question(self):
        self.assertEqual(self.bm25_paths("flutter speed"), ["a.md", "c.md", "b.md"])


class DenseAgreementTest(unittest.TestCase):
    """An embedding ranking is fused only when at least half of its best ten are among BM25's
    candidates (DENSE_AGREEMENT_MIN of DENSE_AGREEMENT_TOP)."""

    def test_half_of_the_best_ten_among_bm25s_candidates_agrees(self):
        bm25 = list(range(100, 140))
        five_shared = [100, 101, 102, 103, 104, 1, 2, 3, 4, 5, 106]      # 5 of the first 10
        four_shared = [100, 101, 102, 103, 1, 2, 3, 4, 5, 6, 104]        # 4 of the first 10
        self.assertTrue(docs_qa._dense_agrees({"bm25": bm25, "dense": five_shared}))
        self.assertFalse(docs_qa._dense_agrees({"bm25": bm25, "dense": four_shared}))

    def test_a_model_made_for_the_language_needs_a_fifth_of_the_best_ten(self):
        bm25 = list(range(100, 140))
        two_shared = [100, 1, 2, 3, 4, 5, 6, 7, 8, 101]                   # 2 of the first 10
        one_shared = [100, 1, 2, 3, 4, 5, 6, 7, 8, 9, 101]               # 1 of the first 10
        self.assertTrue(docs_qa._dense_agrees({"bm25": bm25, "dense": two_shared}, docs_qa.DENSE_AGREEMENT_MIN_NAMED))
        self.assertFalse(docs_qa._dense_agrees({"bm25": bm25, "dense": one_shared}, docs_qa.DENSE_AGREEMENT_MIN_NAMED))
        self.assertFalse(docs_qa._dense_agrees({"bm25": bm25, "dense": two_shared}))

    def test_without_bm25_candidates_the_embedding_ranking_stays(self):
        # a paraphrase whose words the folder lacks: the embeddings are all there is
        self.assertTrue(docs_qa._dense_agrees({"bm25": [], "dense": [1, 2, 3]}))
        self.assertTrue(docs_qa._dense_agrees({"bm25": [1, 2]}))


class EmbeddingLanguagesTest(unittest.TestCase):
    """An embedding model is fused only for the question languages it is taken to read."""

    def reads(self, language, model=docs_qa.DEFAULT_EMBED_MODEL, languages="auto"):
        settings = docs_qa.Settings(docs_dir=".", embed_model=model, embed_languages=languages)
        return docs_qa.embeddings_read(settings, language)

    def test_auto_reads_english_only_unless_the_models_name_says_multilingual(self):
        self.assertEqual([self.reads(lang) for lang in ("en", "pl", "sk")], [True, False, False])
        for model in ("text-embedding-multilingual-e5-small", "text-embedding-bge-m3"):
            with self.subTest(model=model):
                self.assertEqual([self.reads(lang, model) for lang in ("en", "pl", "sk")], [True] * 3)

    def test_a_model_is_made_for_english_and_by_its_name_for_more(self):
        # what the user's --embed-languages adds is read, but the model is not made for it
        named = docs_qa._model_named_for
        mini = docs_qa.Settings(docs_dir=".", embed_model="all-MiniLM-L6-v2", embed_languages="all")
        self.assertEqual([named(mini, lang) for lang in ("en", "pl", "sk")], [True, False, False])
        self.assertTrue(docs_qa.embeddings_read(mini, "pl"))
        self.assertTrue(named(docs_qa.Settings(docs_dir=".", embed_model="bge-m3"), "sk"))

    def test_a_list_names_the_languages_read_and_all_reads_every_one(self):
        self.assertEqual([self.reads(lang, languages="pl,sk") for lang in ("en", "pl", "sk")],
                         [False, True, True])
        self.assertTrue(self.reads("pl", languages="all"))

    def test_values_are_normalised_and_an_unknown_code_is_refused(self):
        self.assertEqual(docs_qa.embed_languages_parse(" EN, pl pl "), "en,pl")
        self.assertEqual(docs_qa.embed_languages_parse("All"), "all")
        for bad in ("de", "", "en,xx"):
            with self.subTest(bad=bad), self.assertRaises(docs_qa.InvalidRequestError):
                docs_qa.embed_languages_parse(bad)

    def test_cli_refuses_an_unknown_language_as_a_usage_error(self):
        result = run_cli("q", "--docs", ".", "--embed-languages", "de")
        self.assertEqual(result.returncode, 2)
        self.assertIn("embed_languages must be auto, all, or language codes", result.stderr)


class FusionTest(unittest.TestCase):
    # BM25's rank-1 chunk 9 is one the embeddings never return; chunks 1-4 are ranked by both
    RANKINGS = {"bm25": [9, 1, 2, 3, 4], "dense": [1, 2, 3, 4, 5, 6, 7]}

    def test_plain_rrf_would_push_the_bm25_rank_1_hit_to_fifth(self):
        self.assertEqual([i for i, _ in docs_qa.rrf_fuse(self.RANKINGS)].index(9), 4)

    def test_a_rank_1_bm25_code_hit_stays_in_the_top_3(self):
        fused = docs_qa._fuse("termin GTU_12", self.RANKINGS, docs_qa.Settings(docs_dir="."))
        self.assertIn(9, [i for i, _ in fused[:3]])

    def test_bm25_weighs_more_than_the_embeddings(self):
        # 1.5/(60+1) for BM25's first beats 1/(60+1) for the embeddings' first
        fused = docs_qa.rrf_fuse({"bm25": [7], "dense": [8]}, 60, docs_qa.FUSION_WEIGHTS)
        self.assertEqual(fused[0], (7, 1.5 / 61))

    def test_floor_moves_protected_ids_first_and_keeps_the_rest_in_order(self):
        fused = [(1, 0.5), (2, 0.4), (3, 0.3), (9, 0.1)]
        self.assertEqual([i for i, _ in docs_qa.rrf_floor(fused, {"bm25": [9, 3]}, {"bm25": 1})],
                         [9, 1, 2, 3])


class PageLeadTest(TempDirTest):
    """In a fused ranking, BM25's best fragment leads its document's fragments: the fusion
    ranks the pages, BM25 the fragment within one."""

    USERADD = ("# useradd\n\n## Synopsis\n\nuseradd creates a user. The user gets a home folder and files when "
               "asked. " + "The user and the home and the files. " * 3 + "\n\n## Home\n\nThe home folder of the "
               "user holds the user files; the home of each user is made from files. " + "User home files. " * 3 +
               "\n\n## Options\n\n-m, --create-home\nCreate the skeleton home directory.\n\n## Files\n\nThe files "
               "of the user and the home folder of the user, and more files for the user home. " + "User files home. " * 3 + "\n")

    def test_bm25s_best_fragment_is_not_fused_out_of_its_page(self):
        # the mock embeddings rank the option's short fragment fifth (it shares few words); past
        # the per-document limit of two, the page's wordier fragments kept its place and the one
        # holding 'skeleton' and the flag was dropped
        write_files(self.docs, {"useradd.md": self.USERADD,
                                "usermod.md": "# usermod\n\nusermod changes a user: the home folder, the files "
                                              "and the groups of the user.\n",
                                "other.md": "# other\n\nThe user may keep files in the home folder.\n"})
        result = docs_qa.search("which flag creates the skeleton home folder for the user files",
                                self.settings(per_document_limit=2, limit=3))
        self.assertEqual(result.mode, "hybrid")
        first = result.hits[0]
        self.assertEqual((first.chunk.path, first.bm25_rank), ("useradd.md", 1))
        self.assertIn("--create-home", first.chunk.text)
        self.assertEqual([hit.chunk.path for hit in result.hits], ["useradd.md", "useradd.md", "other.md"])

    def test_pages_keep_their_places(self):
        fused = [(1, 0.5), (2, 0.4), (3, 0.3), (9, 0.1)]
        page = {1: "a.md", 2: "b.md", 3: "a.md", 9: "b.md"}
        self.assertEqual([i for i, _ in docs_qa.rrf_page_lead(fused, 9, page)], [1, 9, 2, 3])
        self.assertEqual(docs_qa.rrf_page_lead(fused, 1, page), fused)     # it leads already
        self.assertEqual(docs_qa.rrf_page_lead(fused, 7, page), fused)     # not among them


BEES = {
    "varroa.md": "# Varroa\n\nVarroa destructor is a parasitic mite of honey bees.\n",
    "pollination.md": "# Pollination\n\nHoney bees pollinate apple orchards and rapeseed fields.\n",
    "hive.md": "# The hive\n\nA hive of honey bees holds a queen, drones and workers.\n",
    "wax.md": "# Wax\n\nWorker bees make wax from glands on their abdomen to build the comb.\n",
    "swarm.md": "# Swarming\n\nIn spring a colony of bees may swarm when the hive gets crowded.\n",
}


class TieOrderTest(TempDirTest):
    """Equal scores are listed by path and line, never by the ids an index's history gave."""
    TEXT = "# Quokka\n\nThe quokka sleeps in the shade of the scrub.\n"

    def labels(self, **overrides) -> list[str]:
        result = docs_qa.search("quokka shade", self.settings(**overrides))
        return [h.chunk.label for h in result.hits]

    def test_a_file_added_to_a_cache_takes_its_place_among_equals_by_path(self):
        write_files(self.docs, {"m.md": self.TEXT, "y.md": self.TEXT, "z.md": self.TEXT,
                                "other.md": "# Other\n\nNothing about marsupials here.\n"})
        for embeddings in (False, True):
            with self.subTest(embeddings=embeddings):
                self.labels(use_embeddings=embeddings)              # the cache numbers m, y, z first
                write_files(self.docs, {"a.md": self.TEXT})          # and a.md after them
                cached = self.labels(use_embeddings=embeddings)
                self.assertEqual(cached[:4], ["a.md:1-3", "m.md:1-3", "y.md:1-3", "z.md:1-3"])
                self.assertEqual(cached, self.labels(use_embeddings=embeddings, cache_dir=None))
                # a cut inside the tie (a pool of one) still takes the first by path
                self.assertEqual(self.labels(use_embeddings=embeddings, limit=1, pool_factor=1),
                                 ["a.md:1-3"])
                os.remove(os.path.join(self.docs, "a.md"))


class GateTest(TempDirTest):
    """The no-answer gate over five small English documents, with mock embeddings."""

    def setUp(self):
        super().setUp()
        write_files(self.docs, BEES)

    def test_the_honeybee_question_is_answered_from_varroa(self):
        # parasite (in varroa only), honeybees (written 'honey bees'), harms (nowhere):
        # 33% of the words, but the rare ones, held by one fragment
        result = docs_qa.search("Which parasite harms honeybees?", self.settings())
        self.assertEqual(result.hits[0].chunk.path, "varroa.md")
        self.assertLessEqual(result.hits[0].chunk.start_line, 3)
        self.assertGreaterEqual(result.hits[0].chunk.end_line, 3)

    def test_a_compound_counts_only_where_its_halves_are_side_by_side(self):
        # 'honeycomb' is no word of the folder; store.md writes 'honey' and 'comb' apart
        write_files(self.docs, {"store.md": "# Store\n\nBees keep honey in cells of the wax comb.\n"})
        apart = docs_qa.search_gate_signals("Where is the honeycomb?", self.settings())
        self.assertEqual(apart.folder_coverage, 0.0)
        self.assertEqual(docs_qa.search("Where is the honeycomb?", self.settings()).hits, [])
        write_files(self.docs, {"store.md": "# Store\n\nBees keep honey in the honey comb of wax.\n"})
        together = docs_qa.search_gate_signals("Where is the honeycomb?", self.settings())
        self.assertEqual(together.folder_coverage, 1.0)

    def test_a_question_sharing_one_common_word_is_refused(self):
        # 'bees' is in every document (half the words, but nearly no weight); 'swim' is in none
        result = docs_qa.search("Can bees swim?", self.settings())
        self.assertEqual(result.hits, [])
        self.assertIn("no_plausible_match", [n.code for n in result.notes])

    def test_cli_refuses_it_and_the_threshold_can_be_lowered(self):
        proc = run_cli("Can bees swim?", "--docs", self.docs, "--no-cache", "--search", "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn('"status": "no_answer"', proc.stdout)
        proc = run_cli("Can bees swim?", "--docs", self.docs, "--no-cache", "--search", "--json",
                       "--min-coverage", "0")
        self.assertIn('"status": "ok"', proc.stdout)
        proc = run_cli("Can bees swim?", "--docs", self.docs, "--no-cache", "--search", "--json",
                       env={"DOCS_QA_MIN_COVERAGE": "0"})
        self.assertIn('"status": "ok"', proc.stdout)

    def test_a_bad_threshold_is_a_usage_error(self):
        proc = run_cli("bees", "--docs", self.docs, "--no-cache", "--min-coverage", "2")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--min-coverage", proc.stderr)

    def test_gate_signals_are_public_for_calibration(self):
        signals = docs_qa.search_gate_signals("Can bees swim?", self.settings())
        self.assertLess(signals.coverage, docs_qa.DEFAULT_MIN_COVERAGE)
        self.assertLess(signals.folder_coverage, docs_qa.DEFAULT_MIN_FOLDER_COVERAGE)
        self.assertIsNotNone(signals.similarity)


class MockNoteTest(TempDirTest):
    def test_mock_vectors_are_announced(self):
        write_files(self.docs, BEES)
        result = docs_qa.search("varroa mite", self.settings())
        self.assertEqual(result.mode, "hybrid")
        self.assertIn("embed_mock", [n.code for n in result.notes])
        live_off = docs_qa.search("varroa mite", self.settings(use_embeddings=False))
        self.assertNotIn("embed_mock", [n.code for n in live_off.notes])


if __name__ == "__main__":
    unittest.main()


class IdentifierGateTest(TempDirTest):
    """A question naming an identifier the folder writes the same way, in fewer than half its
    fragments, passes the gate however few of its other words the folder has."""

    QUESTION = "fee for binding rate information WIS"   # English, over Polish pages

    def setUp(self):
        super().setUp()
        write_files(self.docs, {
            "wis.md": "# Wiążąca informacja\n\nOd wniosku o wydanie WIS pobiera się opłatę 40 zł.\n",
            "jpk.md": "# JPK\n\nPlik JPK składa się do 25. dnia miesiąca.\n",
            "ksef.md": "# KSeF\n\nFaktury wystawia się w Krajowym Systemie e-Faktur.\n",
            "cit.md": "# CIT\n\nZeznanie CIT-8 składa się do końca marca.\n"})

    def test_an_english_question_over_polish_pages_is_carried_by_its_identifier(self):
        # WIS (weight 3 x idf) against four words the folder lacks: coverage 0.43 < 0.45
        signals = docs_qa.search_gate_signals(self.QUESTION, self.settings(use_embeddings=False))
        self.assertLess(signals.coverage, docs_qa.DEFAULT_MIN_COVERAGE)
        self.assertEqual(signals.identifier, "WIS")
        result = docs_qa.search(self.QUESTION, self.settings(use_embeddings=False))
        self.assertEqual(result.hits[0].chunk.path, "wis.md")
        result = docs_qa.search(self.QUESTION, self.settings())      # mock embeddings: the same
        self.assertEqual(result.hits[0].chunk.path, "wis.md")

    def test_the_identifier_signal_can_be_switched_off(self):
        result = docs_qa.search(self.QUESTION, self.settings(use_embeddings=False, identifier_gate=False))
        self.assertEqual(result.hits, [])
        self.assertIn("no_plausible_match", [n.code for n in result.notes])

    def test_only_the_identifier_as_written_counts(self):
        # 'Wis' and 'WISE' are not WIS; a plain number (2022) is no identifier
        for question in ("fee for binding rate information Wis", "fee for binding rate information WISE"):
            self.assertIsNone(docs_qa.search_gate_signals(
                question, self.settings(use_embeddings=False)).identifier, question)
        self.assertEqual(docs_qa.search(self.QUESTION, self.settings(use_embeddings=False)).hits[0].chunk.path,
                         "wis.md")

    def test_an_identifier_in_most_fragments_does_not_carry_a_question(self):
        write_files(self.docs, {name: f"# {name}\n\nWIS {body}\n" for name, body in
                                (("a.md", "alfa beta"), ("b.md", "gamma delta"), ("c.md", "epsilon zeta"))})
        signals = docs_qa.search_gate_signals(self.QUESTION, self.settings(use_embeddings=False))
        self.assertIsNone(signals.identifier)     # WIS in 4 of 7 fragments: IDF not positive
        self.assertEqual(docs_qa.search(self.QUESTION, self.settings(use_embeddings=False)).hits, [])

    def test_an_identifier_on_most_pages_does_not_carry_a_question(self):
        # a product name: WIS is on wis.md and opens a.md, b.md and c.md, whose three sections
        # (a fragment each) never name it: 4 of 16 fragments (rare among fragments), but 4 of
        # the 7 pages
        section = "\n\n## {0}\n\n" + " ".join(["Pole {0} opisuje zwykłe dane formularza."] * 40) + "\n"
        write_files(self.docs, {f"{name}.md": f"# {name}\n\nWIS {name} omawia tę część.\n"
                                + "".join(section.format(f"{name}{k}") for k in range(3))
                                for name in ("a", "b", "c")})
        settings = self.settings(use_embeddings=False)
        self.assertEqual(docs_qa.index_folder(settings).chunks, 4 + 3 * 4)
        signals = docs_qa.search_gate_signals(self.QUESTION, settings)
        self.assertIsNone(signals.identifier)
        self.assertEqual(docs_qa.search(self.QUESTION, settings).hits, [])

    def test_cli_answers_it(self):
        proc = run_cli(self.QUESTION, "--docs", self.docs, "--no-cache", "--search", "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn('"status": "ok"', proc.stdout)
        self.assertIn("wis.md", proc.stdout)


class SlipGateTest(TempDirTest):
    """A word the folder lacks that is one slip from a word of the fragment holding the
    question's other words best counts as held there, and the ranking and the answer read it
    as that word; a slip of a word found only elsewhere counts as absent."""

    DOCS = {"editor.md": "# Editor kódu\n\nPrečo inštalujeme špeciálny editor kódu namiesto toho, aby "
                         "sme použili niečo ako Word alebo Notepad.\n",
            "deploy.md": "# Nasadenie\n\nBlog nasadíme na PythonAnywhere cez git a konzolu.\n",
            "tools.md": "# Nástroje\n\nKontajnery Docker a Kubernetes tu nepoužívame.\n"}

    def coverage(self, question):
        return docs_qa.search_gate_signals(question, self.settings(use_embeddings=False)).coverage

    def setUp(self):
        super().setUp()
        write_files(self.docs, self.DOCS)

    def test_a_slip_of_a_word_in_the_best_fragment_counts_there(self):
        # 'Wrode' (Word, in a case, letters swapped) beside 'Notepade': the editor page holds both
        question = "Prečo nemôžem písať kód vo Wrode alebo Notepade?"
        self.assertGreater(self.coverage(question), self.coverage(question.replace("Wrode", "Qxyvz")))
        self.assertTrue(docs_qa.search(question, self.settings(use_embeddings=False)).hits)

    def test_the_ranking_and_the_answer_read_a_slip_as_the_fragments_word(self):
        # both pages hold 'filter' and 'šablóne' (the second twice each, and it sorts first); only
        # 'linebreakbr' read as linebreaksbr puts the filter's own page first and quotes it
        write_files(self.docs, {
            "a-filtre.md": "# Filtre v šablóne\n\nFilter upper v šablóne mení písmená na veľké. Filter "
                           "lower v šablóne mení písmená na malé.\n",
            "filtre.md": "# Filtre\n\nFilter linebreaksbr v šablóne mení zalomenia riadkov na odstavce.\n"})
        result = docs_qa.answer("Čo robí filter linebreakbr v šablóne?",
                                self.settings(use_embeddings=False, extractive=True))
        self.assertEqual(result.search.hits[0].chunk.path, "filtre.md")
        self.assertTrue(result.answer.startswith("- Filter linebreaksbr v šablóne mení zalomenia riadkov "
                                                 "na odstavce. [filtre.md:3-3]"), result.answer)

    def test_terms_one_edit_away_keep_the_first_letter_and_come_most_held_first(self):
        write_files(self.docs, {"w.md": "# Words\n\nword word words wood cord ward world\n",
                                "v.md": "# More\n\nward wardx\n"})
        settings = self.settings(use_embeddings=False)
        docs_qa.index_folder(settings)
        conn = docs_qa.cache_open(docs_qa.cache_path(settings.cache_dir, self.docs))
        try:
            near = docs_qa.cache_terms_one_edit(conn, "wrod")      # a swap; the index stems as Porter does
        finally:
            conn.close()
        terms = [term for term, _ in near]
        self.assertIn("word", terms)
        self.assertNotIn("cord", terms)                             # the first letter differs
        self.assertEqual(near, sorted(near, key=lambda row: (-row[1], row[0])))

    def test_a_word_longer_than_a_slip_is_not_read_as_one(self):
        # one letter from a folder word, but too long to be tried (its spellings one edit away
        # would be thousands of lookups per question)
        long_word = "konfiguracny" * 4                                   # 48 letters
        write_files(self.docs, {"editor.md": self.DOCS["editor.md"].replace("Notepad.", f"Notepad a {long_word}.")})
        question = f"Prečo nemôžem písať kód vo {long_word[:-1]}x alebo Notepade?"
        self.assertGreater(len(long_word), docs_qa.SLIP_MAX_LETTERS)
        self.assertEqual(self.coverage(question), self.coverage(question.replace(long_word[:-1] + "x", "Qxyvz")))

    def test_a_short_stem_is_a_slip_only_by_two_letters_swapped(self):
        # 'strefę' has the stem 'strf' (its e dropped as a fleeting one), one letter from 'strn'
        # ('stronie'): read as that, "Jak zmienić strefę czasową w systemie?" passed over Polish
        # manual pages as held by a fragment about pages, shown confident
        write_files(self.docs, {"strony.md": "# Strony\n\nNa tej stronie zmienisz czas w systemie.\n"})
        question = "Jak zmienić strefę czasową w systemie?"
        self.assertEqual(self.coverage(question), self.coverage(question.replace("strefę", "qxyzwę")))
        self.assertLess(len("strf"), docs_qa.SLIP_SUBSTITUTION_MIN_TERM)

    def test_a_joined_code_is_not_read_as_a_slip_of_one_of_its_parts(self):
        # 'Node.js': its part 'node' is one edit from 'note' on the page holding the question's
        # other words, but a code joined by a dot is written as it is meant (read as 'note', it
        # let "Can pyenv manage Node.js versions?" through over pyenv's documentation)
        write_files(self.docs, {"notes.md": "# Notes\n\nKeep a short note in Notepad or Word before you "
                                            "commit the code.\n"})
        question = "Can I keep code in Notepad or Word with Node.js?"
        self.assertEqual(self.coverage(question), self.coverage(question.replace("Node.js", "Qxyz.js")))

    def test_a_slip_of_a_word_found_only_elsewhere_counts_as_absent(self):
        # 'Dockre' is one edit from the tools page's Docker, but the deploy page holds the rest
        question = "Ako nasadím blog cez Dockre?"
        self.assertEqual(self.coverage(question), self.coverage(question.replace("Dockre", "Qxyzvw")))


class SlipNameTest(TempDirTest):
    """A misspelt name (capitalised inside the question, letters only) is read as a long folder
    term one edit away wherever it stands, when the fragment holding it then holds the question
    best; a lowercase word, or a shorter term, is not (off-topic words would pass as slips)."""

    DOCS = {"upadek.md": "# Upadek miasta\n\nJesienią 1452 roku wojska tureckie wtargnęły na Peloponez "
                         "i uderzyły na braci cesarza.\n",
            "imperium.md": "# Imperium\n\nWojska Imperium weszły do stolicy latem.\n",
            "flota.md": "# Flota\n\nOkręty tureckie panowały na morzu przez całą zimę.\n"}

    def setUp(self):
        super().setUp()
        write_files(self.docs, self.DOCS)

    def coverage(self, question):
        return docs_qa.search_gate_signals(question, self.settings(use_embeddings=False)).coverage

    def test_a_misspelt_name_is_read_as_the_folder_name_one_edit_away(self):
        # without the reading, the Imperium page holds the question's other words best (weszły is
        # on one page, tureckie on two) and the name counts as absent; read as Peloponez, the page
        # naming it holds the question best and comes first
        question = "Kiedy wojska tureckie weszły na Peleponez?"
        self.assertGreater(self.coverage(question), self.coverage(question.replace("Peleponez", "Qxyzvwkp")))
        hits = docs_qa.search(question, self.settings(use_embeddings=False)).hits
        self.assertEqual(hits[0].chunk.path, "upadek.md")

    def test_a_lowercase_word_is_not_read_as_a_term_elsewhere(self):
        question = "Kiedy wojska tureckie weszły na peleponez?"
        self.assertEqual(self.coverage(question), self.coverage(question.replace("peleponez", "qxyzvwkp")))

    def test_a_name_near_a_short_term_only_is_not_read(self):
        write_files(self.docs, {"flota.md": self.DOCS["flota.md"].replace("morzu", "morzu Mesel")})
        question = "Kiedy wojska tureckie weszły na Mesell?"     # one edit from mesel: five letters
        self.assertLess(len("mesel"), docs_qa.SLIP_NAME_MIN_TERM)
        self.assertEqual(self.coverage(question), self.coverage(question.replace("Mesell", "Qxyzvw")))


class FrontMatterTest(TempDirTest):
    """A page's front matter title and description are what the rendered page shows as its
    heading: a question in their words finds the page, and cites its lines, not the front
    matter's."""

    def test_a_question_in_the_words_of_a_pages_description_finds_it(self):
        write_files(self.docs, {
            "whoami.md": "---\ntitle: npm-whoami\ndescription: Display npm username\n---\n\n"
                         "### Synopsis\n\n```bash\nnpm whoami\n```\n",
            "config.md": "# Config\n\nThe npm config sets the registry and the cache folder.\n",
            "logging.md": "# Logging\n\nnpm writes a debug log; the log level is set in the config.\n"})
        hits = docs_qa.search("How do I display my npm username?", self.settings(use_embeddings=False)).hits
        self.assertEqual((hits[0].chunk.path, hits[0].chunk.start_line), ("whoami.md", 6))


class AcronymTest(TempDirTest):
    """An acronym the folder never writes (UJ) is read as the capitalised words that spell it
    out in the fragments holding the question's other words (Uniwersytet Jagielloński): the
    gate counts it held, and the ranking finds those words; an acronym nothing spells out
    stays absent, and the refusal names it."""

    DOCS = {"uczelnia.md": "# Uczelnia\n\nRektor Uniwersytetu Jagiellońskiego podpisał umowę o "
                           "współpracy w marcu 2021 roku.\n",
            "urzad.md": "# Urząd\n\nBurmistrz podpisał umowę najmu lokalu w styczniu.\n",
            "szkola.md": "# Szkoła\n\nDyrektor szkoły podpisał umowę z wydawnictwem.\n"}

    def setUp(self):
        super().setUp()
        write_files(self.docs, self.DOCS)

    def search(self, question):
        return docs_qa.search(question, self.settings(use_embeddings=False))

    def test_an_acronym_is_read_as_the_words_that_spell_it(self):
        # without the reading, 'UJ' weighs as a word no fragment holds, more than half the
        # question's weight, and the gate refuses; read, it finds the university's page
        result = self.search("Kiedy rektor UJ podpisał umowę?")
        self.assertTrue(result.hits, result.notes)
        self.assertEqual(result.hits[0].chunk.path, "uczelnia.md")

    def test_an_acronym_spelt_out_nowhere_stays_absent(self):
        result = self.search("Kiedy rektor AGH podpisał umowę?")
        self.assertFalse(result.hits)
        self.assertIn("AGH", " ".join(note.message for note in result.notes))

    def test_lowercase_initials_or_words_out_of_order_do_not_spell_it(self):
        # 'JU' is not 'Uniwersytetu Jagiellońskiego'; a lowercase 'uj' is a word, not an acronym
        for question in ("Kiedy rektor JU podpisał umowę?", "Kiedy rektor uj podpisał umowę?"):
            coverage = docs_qa.search_gate_signals(question, self.settings(use_embeddings=False)).coverage
            absent = docs_qa.search_gate_signals(question.replace("JU", "QX").replace("uj", "qx"),
                                                 self.settings(use_embeddings=False)).coverage
            self.assertEqual(coverage, absent, question)


class BestChunkWeightTest(unittest.TestCase):
    """The gate's best-fragment weight, summed per class of fragments holding the same question
    words (and per fragment past COVERAGE_CLASSES_MAX classes), is exactly the largest sum, in
    word order, of the weights of the words one fragment holds."""

    @staticmethod
    def by_chunk(held):
        earned = {}
        for weight, ids in held:
            for chunk in ids:
                earned[chunk] = earned.get(chunk, 0.0) + weight
        best = max(earned.values(), default=0.0)
        return best, {chunk for chunk, total in earned.items() if total == best and best}

    def test_equal_to_the_sum_per_fragment_for_short_and_long_questions(self):
        rng = random.Random(7)
        for words in (1, 3, 8, 40, 120):            # 40 and 120 words pass the class limit
            for _ in range(20):
                held = [(rng.uniform(0.1, 9.0), set(rng.sample(range(3000), rng.randint(0, 600))))
                        for _ in range(words)]
                with self.subTest(words=words):
                    self.assertEqual(docs_qa._best_chunk_weight(held, want_chunks=True), self.by_chunk(held))
                    self.assertEqual(docs_qa._best_chunk_weight(held), (self.by_chunk(held)[0], set()))
        self.assertEqual(docs_qa._best_chunk_weight([], want_chunks=True), (0.0, set()))


class PastedErrorGateTest(TempDirTest):
    """A question pasting an error whose type the folder never names (RuntimeError) is judged
    by its message: the type weighs nothing in the no-answer gate."""

    DOCS = {"forms.md": "# Form data\n\nWhen you need to receive form fields instead of JSON, use Form.\n\n"
                        "To use forms, first install python-multipart in your environment.\n",
            "files.md": "# Request files\n\nYou can define files to be uploaded by the client using File.\n",
            "body.md": "# Request body\n\nA request body is data sent by the client to your API as JSON.\n",
            "events.md": "# Events\n\nYou can define code that runs at startup and at shutdown of the application.\n"}

    def test_an_unknown_error_type_does_not_refuse_its_message(self):
        # with RuntimeError weighing three rare words, the best fragment held 44 % of the question
        # (under the 45 % bar) and it was refused; the message's words are on forms.md
        write_files(self.docs, self.DOCS)
        question = ('My uvicorn server fails with RuntimeError: Form data requires "python-multipart" '
                    'to be installed. What should I do?')
        result = docs_qa.search(question, self.settings(use_embeddings=False))
        self.assertEqual([h.chunk.path for h in result.hits][:1], ["forms.md"], result.notes)

    def test_an_unknown_code_like_word_that_is_no_error_type_still_counts(self):
        # KafkaStreams is written like RuntimeError (CamelCase) but names no error: it counts
        write_files(self.docs, self.DOCS)
        signals = docs_qa.search_gate_signals("form data KafkaStreams",
                                              self.settings(use_embeddings=False))
        self.assertLess(signals.folder_coverage, 1.0)


class AbsentNameGateTest(TempDirTest):
    """A question naming something the folder never mentions (Docker, in a folder about
    PythonAnywhere) is refused, naming it, when much of its weight occurs nowhere, even when
    an identifier of the folder would open the gate; a name one letter from a folder word is
    a misspelling of it, and a long question naming one unknown thing among many known ones
    still passes."""

    DOCS = {"deploy.md": "# Deploy\n\nTo deploy the blog on PythonAnywhere, pull the code from GitHub "
                         "and reload the WSGI web app.\n",
            "static.md": "# Static files\n\nRun collectstatic on PythonAnywhere after you change the "
                         "CSS of the blog.\n",
            "admin.md": "# Admin\n\nCreate a superuser to log in to the admin of the blog.\n",
            **{f"note{n}.md": f"# Note {n}\n\nThe blog shows post {n}{' over WSGI' if n < 2 else ''}.\n"
               for n in range(5)}}
    QUESTION = "Does WSGI work under Docker or Kubernetes?"

    def setUp(self):
        super().setUp()
        write_files(self.docs, self.DOCS)

    def test_a_question_about_names_the_folder_never_mentions_is_refused_naming_them(self):
        settings = self.settings(use_embeddings=False)
        signals = docs_qa.search_gate_signals(self.QUESTION, settings)
        # WSGI is in 3 of 8 pages: an identifier, which alone opens the gate; Docker and
        # Kubernetes (and 'work') are in none, most of the question's weight
        self.assertEqual(signals.identifier, "WSGI")
        self.assertGreaterEqual(1 - signals.folder_coverage, docs_qa.ABSENT_NAME_MIN_SHARE)
        self.assertTrue(docs_qa.search(self.QUESTION, replace(settings, absent_name_gate=False)).hits)
        result = docs_qa.search(self.QUESTION, settings)
        self.assertEqual(result.hits, [])
        note = next(n for n in result.notes if n.code == "no_plausible_match")
        self.assertTrue(note.message.startswith("the documents never mention Docker, Kubernetes"), note.message)

    def test_an_unknown_name_in_a_question_otherwise_on_one_page_is_refused_at_a_lower_share(self):
        # 'reload' and 'app' are on deploy.md alone; Docker, nowhere, is a third of the weight:
        # under ABSENT_NAME_MIN_SHARE, but the rest of the question is the folder's topic
        question = "How do I reload the app in Docker?"
        settings = self.settings(use_embeddings=False)
        signals = docs_qa.search_gate_signals(question, settings)
        self.assertLess(1 - signals.folder_coverage, docs_qa.ABSENT_NAME_MIN_SHARE)
        self.assertGreaterEqual(1 - signals.folder_coverage, docs_qa.ABSENT_NAME_ON_TOPIC_SHARE)
        self.assertEqual(signals.coverage, signals.folder_coverage)      # deploy.md holds the rest
        result = docs_qa.search(question, settings)
        self.assertEqual(result.hits, [])
        self.assertIn("the documents never mention Docker", result.notes[-1].message)
        # the same share, the rest spread over two pages: the question passes as before
        spread = "How do I reload collectstatic in Docker?"
        signals = docs_qa.search_gate_signals(spread, settings)
        self.assertLess(signals.coverage, docs_qa.ABSENT_NAME_REST_HELD * signals.folder_coverage)
        self.assertTrue(docs_qa.search(spread, replace(settings, min_folder_coverage=0.0)).hits)

    def test_min_coverage_zero_lets_a_question_naming_an_unknown_thing_through(self):
        # --help says 0 lets every question through; the refusal says how to see the closest
        proc = run_cli(self.QUESTION, "--docs", self.docs, "--no-cache", "--no-embed", "--search", "--json")
        self.assertIn('"status": "no_answer"', proc.stdout)
        self.assertIn("--min-coverage 0 shows the closest anyway", proc.stdout)
        proc = run_cli(self.QUESTION, "--docs", self.docs, "--no-cache", "--no-embed", "--search", "--json",
                       "--min-coverage", "0")
        self.assertIn('"status": "ok"', proc.stdout)

    def test_a_misspelt_name_of_the_folder_is_no_unknown_name(self):
        # PythonAnywhere, two letters left out: two edits, so no slip (SlipNameTest reads a name
        # one edit away), yet close enough for a name this long to be the folder's, not unknown
        question = "Which post shows over WSGI on PythonAnyere?"
        settings = self.settings(use_embeddings=False)
        self.assertGreaterEqual(1 - docs_qa.search_gate_signals(question, settings).folder_coverage,
                                docs_qa.ABSENT_NAME_MIN_SHARE)
        self.assertTrue(docs_qa.search(question, settings).hits)     # WSGI opens the gate; nothing unknown

    def test_one_unknown_name_among_many_known_words_passes(self):
        question = "deploy the blog on PythonAnywhere: pull the code from GitHub, reload the web app, Kubernetes"
        settings = self.settings(use_embeddings=False)
        self.assertLess(1 - docs_qa.search_gate_signals(question, settings).folder_coverage,
                        docs_qa.ABSENT_NAME_MIN_SHARE)
        self.assertEqual(docs_qa.search(question, settings).hits[0].chunk.path, "deploy.md")

    def test_a_refusal_names_the_words_the_documents_never_mention(self):
        result = docs_qa.search("Can bloggers swim faster underwater?", self.settings(use_embeddings=False))
        self.assertEqual(result.hits, [])
        note = next(n for n in result.notes if n.code == "no_plausible_match")
        self.assertIn("never mention bloggers, swim, faster, underwater", note.message)


class AbsentNameStemTest(TempDirTest):
    """A name's stem one edit from a short folder word is no misspelling of that word."""

    DOCS = {"nasadenie.md": "# Nasadenie\n\nBlog nasadíte na PythonAnywhere, keď stiahnete kód z GitHubu "
                            "a znova načítate webovú aplikáciu.\n",
            "pristav.md": "# Prístav\n\nLoď stojí pri móle, anglicky dock.\n",
            **{f"poznamka{n}.md": f"# Poznámka {n}\n\nBlog ukazuje príspevok {n}.\n" for n in range(5)}}

    def test_docker_stemmed_as_slovak_is_not_the_folders_dock(self):
        write_files(self.docs, self.DOCS)
        question = "Ako nasadím blog v Docker?"
        self.assertIn("dockr", docs_qa.question_make(question).words[-1][1])   # one edit from 'dock'
        result = docs_qa.search(question, self.settings(use_embeddings=False))
        self.assertEqual(result.hits, [])
        self.assertIn("the documents never mention Docker", result.notes[-1].message)


class QuantityTest(TempDirTest):
    """A number with a unit or an ordinal's ending (500MB, 5th) is a value the asker supplies,
    not a name the documents should write: it neither refuses a question as an unknown name nor
    weighs as an identifier."""

    DOCS = {"find.md": "# find\n\nfind searches every directory of a hierarchy for files.\n\n-size n\n"
                       "Matches a file bigger than n units of space. Use M for megabytes.\n\n-name pattern\n"
                       "Base of file name matches the shell pattern.\n",
            "du.md": "# du\n\ndu estimates file space usage.\n\n-s, --summarize\nDisplay only a total for each argument.\n",
            "ls.md": "# ls\n\nls lists directory contents.\n\n-l\nUse a long listing format.\n"}

    def test_a_size_the_folder_never_writes_does_not_refuse_the_question(self):
        write_files(self.docs, self.DOCS)
        result = docs_qa.search("find every file bigger than 500MB", self.settings(use_embeddings=False))
        self.assertEqual(result.hits[0].chunk.path, "find.md")
        for word in ("500MB", "4.2G", "5th", "30s", "3am"):
            self.assertFalse(docs_qa.text_is_code_word(word), word)
            self.assertNotIn(word, docs_qa.text_name_words(f"find it with {word} please"))
        for word in ("ext4", "GTU_12", "106j", "2FA", "x86"):     # names and identifiers stay
            self.assertTrue(docs_qa.text_is_code_word(word), word)

    def test_a_number_the_folder_never_writes_weighs_nothing_in_the_gate(self):
        # 'got a unix timestamp 1700000000': the number weighed as the rarest word of the
        # question and, absent, pulled the folder's share under the bar
        write_files(self.docs, self.DOCS)
        settings = self.settings(use_embeddings=False)
        bare = docs_qa.search_gate_signals("find a file bigger than n units", settings)
        for value in ("1700000000", "500MB", "5th"):
            signals = docs_qa.search_gate_signals(f"find a file bigger than {value} units", settings)
            self.assertEqual((signals.coverage, signals.folder_coverage), (bare.coverage, bare.folder_coverage), value)
        # a number the folder writes is still evidence: it weighs as any word
        write_files(self.docs, {"du.md": self.DOCS["du.md"] + "\nThe default block is 512 bytes.\n"})
        self.assertLess(docs_qa.search_gate_signals("find 512 units", settings).coverage,
                        docs_qa.search_gate_signals("find units", settings).coverage)


class SuppliedValueTest(TempDirTest):
    """Words a question supplies rather than asks about, which the folder need not write: an
    example list's ('ext4, xfs, tmpfs etc.'), a command option's arguments ('-G docker alice'),
    a word shouted as a program prints it ('one hunk FAILED')."""

    DOCS = {"df.md": "# df\n\ndf reports file system space usage.\n\n-T, --print-type\nprint file system type\n",
            "usermod.md": "# usermod\n\nusermod modifies a user account.\n\n-a, --append\nRun it with -G to add the "
                          "user to supplementary groups; without it the user is removed from every other group.\n",
            "patch.md": "# patch\n\npatch applies a diff file. A hunk that failed to apply is saved in a .rej file.\n",
            **{f"note{n}.md": f"# Note {n}\n\nThe system keeps user {n} in a group.\n" for n in range(4)}}

    def test_values_the_question_supplies_do_not_refuse_it(self):
        write_files(self.docs, self.DOCS)
        settings = self.settings(use_embeddings=False)
        for question, page in (("can df tell me whether each mount is ext4, xfs, tmpfs etc?", "df.md"),
                               ("can df tell me whether each mount is ext4, xfs, tmpfs...?", "df.md"),
                               ("can df tell me whether each mount is (ext4, xfs, tmpfs…)", "df.md"),
                               ("can df print the type of a mount, e.g. ext4 or xfs?", "df.md"),
                               ("patch said one hunk FAILED. where is the part it could not apply?", "patch.md")):
            result = docs_qa.search(question, settings)
            self.assertEqual([hit.chunk.path for hit in result.hits][:1], [page], (question, result.notes))
        # an example after a preposition ('np. w gigabajtach', 'e.g. in ext4') is one too
        self.assertEqual(docs_qa.search_gate_signals("can df print the type, e.g. in ext4", settings).folder_coverage,
                         docs_qa.search_gate_signals("can df print the type", settings).folder_coverage)
        # an option's arguments weigh nothing when the folder lacks them: nothing else is absent
        signals = docs_qa.search_gate_signals("usermod -G docker alice removed her from the other groups", settings)
        self.assertEqual(signals.folder_coverage, 1.0)

    def test_a_quoted_command_line_or_message_is_the_askers_own(self):
        # 'python3 worker.py' is what the asker ran, which no manual writes; quoted, it weighs
        # nothing in the gate. A single quoted word or a backticked span is no such value: it
        # is often what the question asks about.
        write_files(self.docs, {"pgrep.md": "# pgrep\n\npgrep looks up processes by name. When it finds nothing, "
                                            "the process may really have another name.\n\n-f, --full\n"
                                            "The pattern is matched against the full command line.\n",
                                **{f"note{n}.md": f"# Note {n}\n\nA process {n} has a name.\n" for n in range(4)}})
        settings = self.settings(use_embeddings=False)
        quoted = "pgrep finds nothing because the process is really 'python3 worker.py'. how do I match the full line?"
        self.assertEqual(docs_qa.search_gate_signals(quoted, settings).folder_coverage, 1.0)
        self.assertEqual([hit.chunk.path for hit in docs_qa.search(quoted, settings).hits][:1], ["pgrep.md"])
        for marks in ("\u201e\u201d", "\u201e\u201c", "\u201c\u201d", '""'):   # Polish, Slovak, English quotes
            with self.subTest(marks):
                self.assertEqual(docs_qa._supplied_values(f"the process is really {marks[0]}python3 worker.py{marks[1]}."),
                                 {"python3", "worker.py"})
        for held in ("pgrep finds nothing because the process is really `python3 worker.py`",
                     "pgrep finds nothing because the process is really 'worker'"):
            with self.subTest(held):
                self.assertLess(docs_qa.search_gate_signals(held, settings).folder_coverage, 1.0)

    def test_a_value_the_folder_lacks_still_lowers_the_answers_confidence(self):
        # the gate lets the question through, but no page says anything of ext4 or xfs: the
        # answer may not answer all of it
        write_files(self.docs, self.DOCS)
        settings = self.settings(use_embeddings=False)
        bare = docs_qa.search("can df print the type of a mount?", settings)
        listed = docs_qa.search("can df print the type of a mount, such as ext4 or xfs?", settings)
        self.assertEqual([hit.chunk.path for hit in listed.hits][:1], ["df.md"])
        self.assertLess(listed.coverage, bare.coverage)       # the confidence's share of the question
        self.assertEqual(docs_qa.search_gate_signals("can df print the type of a mount, such as ext4 or xfs?",
                                                     settings).coverage, bare.coverage)   # the gate's

    def test_a_thing_asked_about_is_still_a_name_the_folder_never_mentions(self):
        # outside a list or an option's arguments, an unknown name counts against answering
        write_files(self.docs, self.DOCS)
        result = docs_qa.search("how do I add a user to the docker group in Kubernetes?",
                                self.settings(use_embeddings=False))
        self.assertEqual(result.hits, [])
        self.assertIn("Kubernetes", result.notes[-1].message)


class HeldNameTest(TempDirTest):
    """A name the question writes with a capital and the folder writes rarely ('Hyrkania')
    opens the gate as an identifier does, when the folder lacks none of the question's names:
    an encyclopedia's question about what it names, in words its page does not use."""

    DOCS = {"artabanus.md": "# Artabanus II\n\nHyrkania, z której wywodził się Artabanus, stanowiła jeden z "
                            "bastionów jego rządów, tak samo jak sąsiednia Partia oraz Karmania.\n",
            "partia.md": "# Partia\n\nPartia leżała na wschód od Medii; jej władcy bili własną monetę.\n",
            "medowie.md": "# Medowie\n\nMedowie zamieszkiwali ziemie na zachód od Partii i zakładali tam miasta.\n",
            "sakowie.md": "# Sakowie\n\nSakowie byli koczownikami, którzy walczyli konno na stepach.\n"}

    def test_a_rare_name_the_folder_holds_opens_the_gate(self):
        write_files(self.docs, self.DOCS)
        settings = self.settings(use_embeddings=False)
        # 'wszystkimi krainami graniczy' occurs nowhere: a quarter of the question is held
        question = "Z jakimi wszystkimi krainami graniczy Hyrkania?"
        self.assertEqual(docs_qa.search_gate_signals(question, settings).identifier, "Hyrkania")
        self.assertEqual([hit.chunk.path for hit in docs_qa.search(question, settings).hits][:1], ["artabanus.md"])

    def test_not_when_the_question_names_something_the_folder_lacks(self):
        write_files(self.docs, self.DOCS)
        settings = self.settings(use_embeddings=False)
        for question in ("Z jakimi krainami graniczy Hyrkania według Strabona?",    # Strabo: never named
                         "z jakimi krainami graniczy hyrkania?"):                    # no capitals tell a name
            with self.subTest(question):
                self.assertIsNone(docs_qa.search_gate_signals(question, settings).identifier)
                self.assertEqual(docs_qa.search(question, settings).hits, [])


class LackedNameTest(TempDirTest):
    """An identifier the folder writes rarely ('PythonAnywhere') opens the gate only when the
    question names nothing the folder never mentions: 'a domain and HTTPS on PythonAnywhere' asks about
    HTTPS, which no page mentions. A two-letter acronym ('JS') is no such name: the folder may
    write it out. Every word but HTTPS and JS is in the folder, spread over three pages, so
    the best fragment holds a third of the question and the folder two thirds: neither share
    opens the gate, nor do the missing words weigh enough to refuse for an unknown name alone."""

    DOCS = {"deploy.md": "# Deploy\n\nCreate an account on PythonAnywhere and upload your code there.\n",
            "names.md": "# Names\n\nA domain is a name that points at a server.\n",
            "server.md": "# Server\n\nTurn the server on before you open the blog.\n",
            **{f"note{n}.md": f"# Note {n}\n\nThe blog keeps post {n} in the list.\n" for n in range(1, 6)}}

    def ask(self, question):
        settings = self.settings(use_embeddings=False)
        return docs_qa.search_gate_signals(question, settings), docs_qa.search(question, settings)

    def test_a_question_naming_what_the_folder_lacks_is_refused(self):
        write_files(self.docs, self.DOCS)
        signals, result = self.ask("How do I point my domain at PythonAnywhere and turn on HTTPS?")
        self.assertEqual((round(signals.coverage, 2), round(signals.folder_coverage, 2)), (0.33, 0.67))
        self.assertEqual(signals.identifier, "PythonAnywhere")
        self.assertEqual(result.hits, [])
        self.assertIn("never mention HTTPS", next(n.message for n in result.notes if n.code == "no_plausible_match"))
        # the switch for questions naming what the folder never mentions turns this off too
        settings = self.settings(use_embeddings=False, absent_name_gate=False)
        self.assertTrue(docs_qa.search("How do I point my domain at PythonAnywhere and turn on HTTPS?", settings).hits)

    def test_the_identifier_opens_it_otherwise(self):
        write_files(self.docs, self.DOCS)
        for question in ("How do I point my domain at PythonAnywhere and turn on JS?",
                         "How do I point my domain at PythonAnywhere and turn on the server?"):
            with self.subTest(question):
                signals, result = self.ask(question)
                self.assertEqual(signals.identifier, "PythonAnywhere")
                self.assertEqual([hit.chunk.path for hit in result.hits][:1], ["names.md"])


class IrregularFormTest(TempDirTest):
    """An irregular English form the folder lacks ('ran', 'got', 'indices') is read as its
    lemma, which Porter's rules cannot reach: by the gate and by the ranking."""

    DOCS = {"usermod.md": "# usermod\n\nRun usermod with -a -G to add the user to a group and keep the others.\n",
            "index.md": "# Index\n\nEach index maps a term to its postings.\n",
            **{f"note{n}.md": f"# Note {n}\n\nThe group holds user {n} and a term.\n" for n in range(4)}}

    def test_a_past_form_meets_the_pages_lemma(self):
        write_files(self.docs, self.DOCS)
        settings = self.settings(use_embeddings=False)
        signals = docs_qa.search_gate_signals("I ran usermod", settings)
        self.assertEqual(signals.folder_coverage, 1.0)      # 'ran' read as run: nothing is absent
        result = docs_qa.search("the indices", settings)
        self.assertEqual([hit.chunk.path for hit in result.hits][:1], ["index.md"], result.notes)

    def test_only_a_form_the_folder_lacks_is_read_as_its_lemma(self):
        # a folder writing 'indices' keeps its own word: the lemma is no second term
        write_files(self.docs, {**self.DOCS, "idx.md": "# Indices\n\nThe indices are rebuilt nightly.\n"})
        result = docs_qa.search("the indices", self.settings(use_embeddings=False))
        self.assertEqual([hit.chunk.path for hit in result.hits], ["idx.md"])
        self.assertIsNone(docs_qa.text_english_lemma_term("left"))     # the side, not leave
        self.assertEqual(docs_qa.text_english_lemma_term("Ran"), "run")


class UnwrittenAcronymTest(TempDirTest):
    """An acronym the folder writes only in small letters is another word: 'REST' is not 'the
    rest of'."""

    DOCS = {"views.md": "# Views\n\nAdd the view with the rest of the imports at the top of views.py.\n",
            "deploy.md": "# Deploy\n\nReload the web app after each change.\n",
            **{f"note{n}.md": f"# Note {n}\n\nThe blog shows post {n}.\n" for n in range(4)}}

    def test_an_acronym_written_only_in_small_letters_is_named_as_never_mentioned(self):
        write_files(self.docs, self.DOCS)
        result = docs_qa.search("How do I add a REST view?", self.settings(use_embeddings=False))
        self.assertEqual(result.hits, [])
        self.assertIn("the documents never mention REST", result.notes[-1].message)
        # written in capitals on one page, it is the folder's word again
        write_files(self.docs, {"api.md": "# API\n\nA REST view returns JSON.\n"})
        result = docs_qa.search("How do I add a REST view?", self.settings(use_embeddings=False))
        self.assertIn("api.md", [hit.chunk.path for hit in result.hits])

    def test_a_question_in_capitals_only_tells_no_acronym(self):
        write_files(self.docs, self.DOCS)
        result = docs_qa.search("HOW DO I ADD THE REST OF THE IMPORTS TO A VIEW", self.settings(use_embeddings=False))
        self.assertEqual(result.hits[0].chunk.path, "views.md")


class PointerFragmentTest(TempDirTest):
    """A fragment that only includes another document is not a source: the document is."""

    def test_an_include_of_a_document_under_a_heading_is_no_hit(self):
        write_files(self.docs, {
            "index.md": "# Installation\n\n## Set up a virtual environment\n\n{% include \"/venv/steps.md\" %}\n\n"
                        "## Install Git\n\n{% include \"/git/install.md\" %}\n",
            "venv/steps.md": "# Virtual environment\n\nBefore we install Django we set up a virtual environment: "
                             "it keeps the packages of each project apart.\n",
            "code.md": "# Code\n\n## Set up the app\n\n{* ../src/app.py hl[3] *}\n"})
        settings = self.settings(use_embeddings=False)
        paths = [hit.chunk.path for hit in docs_qa.search("Why set up a virtual environment?", settings).hits]
        self.assertEqual(paths[0], "venv/steps.md")
        self.assertNotIn("index.md", paths)
        # code included from a file is what that page shows: it stays a source
        paths = [hit.chunk.path for hit in docs_qa.search("How do I set up the app?", settings).hits]
        self.assertIn("code.md", paths)


class EditDistanceTest(unittest.TestCase):
    def test_swaps_count_one_and_the_limit_stops_early(self):
        self.assertEqual(docs_qa.text_edit_distance("wrod", "word", 2), 1)        # a swap of neighbours
        self.assertEqual(docs_qa.text_edit_distance("pythonanywere", "pythonanywhere", 2), 1)
        self.assertEqual(docs_qa.text_edit_distance("kitten", "sitting", 5), 3)   # k->s, e->i, +g
        self.assertEqual(docs_qa.text_edit_distance("kitten", "sitting", 1), 2)   # over the limit: limit + 1
        self.assertEqual(docs_qa.text_edit_distance("abc", "abc", 0), 0)
