"""The embedding client against a real stand-in server: request shape, prefixes,
batching, degradation to BM25, and the on-disk vector cache."""
import http.server
import json
import math
import random
import re
import socket
import sqlite3
import threading
import unittest

from helpers import StubServerCase, TempDirTest, docs_qa, write_files
import parallel

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process


def closed_port_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/v1"


class EmbeddingClientTest(StubServerCase):

    def live(self, **overrides):
        values = {"embed_mock": False, "base_url": self.stub.base_url, "timeout_s": 0.5, "retries": 1}
        values.update(overrides)
        return self.settings(**values)

    def test_request_shape_nomic_prefixes_and_bearer_token(self):
        result = docs_qa.search("faktura korygująca", self.live(api_key="sekret"))
        self.assertEqual(result.mode, "hybrid")
        inputs = [text for path, body in self.stub.bodies for text in body["input"]]
        self.assertTrue(all(body["model"] == docs_qa.DEFAULT_EMBED_MODEL for _, body in self.stub.bodies))
        self.assertIn("search_query: faktura korygująca", inputs)
        docs = [t for t in inputs if not t.startswith("search_query: ")]
        self.assertTrue(docs and all(t.startswith("search_document: ") for t in docs))
        self.assertTrue(all(h.get("Authorization") == "Bearer sekret" for h in self.stub.headers_seen))

    def test_no_prefix_for_other_models(self):
        docs_qa.search("faktura", self.live(embed_model="all-MiniLM-L6-v2"))
        inputs = [text for _, body in self.stub.bodies for text in body["input"]]
        self.assertFalse(any(t.startswith("search_") for t in inputs))

    def test_batching(self):
        settings = self.live(embed_batch=2)
        vectors = docs_qa.embed_texts(["a b", "c d", "e f", "g h", "i j"], settings)
        self.assertEqual(len(vectors), 5)
        self.assertEqual([len(body["input"]) for _, body in self.stub.bodies], [2, 2, 1])

    def test_each_fault_degrades_to_bm25_with_a_note(self):
        for fault in ("hang", "http_500", "http_503", "http_400", "html", "truncated_json",
                      "wrong_count", "wrong_dim", "nan"):
            with self.subTest(fault=fault):
                self.stub.embed_fault = fault
                self.stub.hang_s = 1.5
                result = docs_qa.search("faktura korygująca", self.live(cache_dir=None))
                self.assertEqual(result.mode, "bm25")
                self.assertIn("embeddings_unavailable", [n.code for n in result.notes])
                self.assertEqual(result.hits[0].chunk.path, "faktury/korekta.md")
                self.assertIsNone(result.hits[0].dense_rank)

    def test_a_question_in_a_language_the_model_is_not_known_to_read_is_ranked_by_bm25(self):
        # the default model (nomic-embed-text v1.5) is taken to read English only: a Polish
        # question is not sent to it, and a note says why
        result = docs_qa.search("Kiedy składa się plik JPK?", self.live(embed_languages="auto"))
        note = [n for n in result.notes if n.code == "embeddings_set_aside"]
        self.assertEqual(len(note), 1, result.notes)
        self.assertIn("not known to read Polish", note[0].message)
        self.assertEqual(result.mode, "bm25")
        self.assertEqual([h.bm25_rank for h in result.hits], list(range(1, len(result.hits) + 1)))
        asked = [text for _, body in self.stub.bodies for text in body["input"]]
        self.assertNotIn("search_query: Kiedy składa się plik JPK?", asked)
        # a report's rankings still get the model's ranking, set aside from the fusion
        rankings = docs_qa.search_rankings("Kiedy składa się plik JPK?", self.live(embed_languages="auto"), 5)
        self.assertTrue(rankings["dense"])
        told = docs_qa.search("Kiedy składa się plik JPK?", self.live(embed_languages="pl"))
        self.assertFalse([n for n in told.notes if "not known to read" in n.message], told.notes)

    def test_connection_refused_degrades(self):
        result = docs_qa.search("faktura", self.settings(embed_mock=False, base_url=closed_port_url()))
        self.assertEqual(result.mode, "bm25")
        self.assertIn("refused", [n for n in result.notes if n.code == "embeddings_unavailable"][0].message)

    def test_second_run_makes_no_embedding_request_and_a_changed_file_redoes_only_its_chunks(self):
        settings = self.live()
        docs_qa.search("faktura korygująca", settings)
        first = self.stub.embedded_texts
        self.assertGreater(first, 1)
        docs_qa.search("faktura korygująca", settings)
        self.assertEqual(self.stub.embedded_texts, first, "an unchanged folder was re-embedded")
        write_files(self.docs, {"faktury/korekta.md": "# Faktura korygująca\n\nNowa treść o korekcie "
                                                      "faktury po zwrocie towaru przez klienta.\n"})
        stats = docs_qa.index_folder(settings)
        self.assertEqual((stats.new, stats.updated, stats.removed), (0, 1, 0))
        self.assertEqual(self.stub.embedded_texts, first + 1, "only the one changed chunk is re-embedded")


    def test_new_chunking_of_unchanged_files_is_embedded_before_dense_search(self):
        # same files, so the same content generation: only the chunking settings differ
        write_files(self.docs, {"long.md": "# Long\n\n" + "".join(
            f"Paragraph {i} about the zebra crossing rules number {i}.\n\n" for i in range(12))})
        docs_qa.search("zebra crossing", self.live(chunk_chars=1200))
        first = self.stub.embedded_texts
        docs_qa.search("zebra crossing", self.live(chunk_chars=1200))
        self.assertEqual(self.stub.embedded_texts, first)
        result = docs_qa.search("zebra crossing", self.live(chunk_chars=120))
        self.assertGreater(self.stub.embedded_texts, first, "the new, smaller chunks were not embedded")
        self.assertTrue(all(h.dense_rank is not None for h in result.hits if h.chunk.path == "long.md"))

    def test_a_chunk_is_embedded_under_the_headings_above_it_and_cited_by_its_own_lines(self):
        write_files(self.docs, {
            "jpk/terminy.md": "# JPK_V7M\n\nPlik składa się za każdy miesiąc osobno.\n\n## Termin\n\n"
                              "Do 25. dnia miesiąca po okresie rozliczeniowym.\n",
            "cit/terminy.md": "# CIT-8\n\nZeznanie roczne składa każda spółka kapitałowa.\n\n## Termin\n\n"
                              "Do 25. dnia miesiąca po okresie rozliczeniowym.\n"})
        result = docs_qa.search("termin", self.live(embed_model="all-MiniLM-L6-v2"))
        inputs = [text for _, body in self.stub.bodies for text in body["input"]]
        # the same lines under two titles are two different things to embed
        section = "## Termin\n\nDo 25. dnia miesiąca po okresie rozliczeniowym."
        self.assertIn("JPK_V7M\n\n" + section, inputs)
        self.assertIn("CIT-8\n\n" + section, inputs)
        # a chunk showing its own heading gets no context line repeating it
        self.assertIn("# CIT-8\n\nZeznanie roczne składa każda spółka kapitałowa.", inputs)
        hit = next(h for h in result.hits if h.chunk.path == "jpk/terminy.md" and h.chunk.start_line == 5)
        self.assertEqual(hit.chunk.text, section)


class EmbeddingInputTest(unittest.TestCase):
    def test_headings_the_chunk_does_not_show_come_first(self):
        self.assertEqual(docs_qa.embed_input(("Guide", "Setup"), "## Setup\n\nRun it."),
                         "Guide\n\n## Setup\n\nRun it.")
        self.assertEqual(docs_qa.embed_input(("Guide", "Setup"), "More of the long section."),
                         "Guide > Setup\n\nMore of the long section.")
        self.assertEqual(docs_qa.embed_input(("Guide",), "# Guide\n\nIntro."), "# Guide\n\nIntro.")
        self.assertEqual(docs_qa.embed_input((), "No headings at all."), "No headings at all.")

    def test_a_merged_chunk_shows_both_headings_so_only_the_title_is_added(self):
        text = "## Short\n\n### Deeper\n\nBody."
        self.assertEqual(docs_qa.embed_input(("Title", "Short", "Deeper"), text), "Title\n\n" + text)


TOPICS = ["zebra kangaroo volcano", "glacier violin tractor", "lighthouse cactus submarine",
          "pyramid orchid hurricane", "telescope saxophone penguin", "canyon meteor bamboo",
          "dolphin cathedral lantern", "harbour compass walnut", "avalanche tulip anchor",
          "falcon meadow trumpet", "quarry lagoon sparrow", "bison fountain marble",
          "windmill cobalt pelican", "tundra ferry cinnamon", "oasis beetle chimney",
          "lobster prairie scarf", "monsoon ivory kettle", "puffin granite banjo",
          "cypress dune locomotive", "parrot summit velvet"]


def topic_text(topic: str) -> str:
    return f"The {topic} note tells about {topic} habits in the wild, with {topic} facts."


class DensePrefilterTest(StubServerCase):
    """Above settings.dense_exact_max vectors, only the chunks whose sign bits are nearest
    the question's are scored exactly (here 11 of 20). The stub's vectors are centred so
    that their sign bits say something; an identical text has Hamming distance 0 and
    cosine 1, and three words of its own keep each note's vector apart from the others."""

    corpus = {f"notes/{topic.split()[0]}.txt": topic_text(topic) + "\n" for topic in TOPICS}

    def setUp(self):
        super().setUp()
        self.stub.dim, self.stub.centered = 256, True

    def settings(self, **overrides):
        """Return the settings of the base class with dense_rescore 1: the prefilter rescores
        only pool + 1 = 11 chunks."""
        return super().settings(dense_rescore=1, **overrides)

    def dense_top(self, question: str, prefilter: bool) -> str:
        settings = self.settings(embed_mock=False, base_url=self.stub.base_url,
                                 embed_model="stub-embed", dense_exact_max=0 if prefilter else 10**9)
        return docs_qa.search_rankings(question, settings, 5)["dense"][0].path

    def signature_state(self) -> str:
        conn = sqlite3.connect(docs_qa.cache_path(self.cache, self.docs))
        try:
            return conn.execute("SELECT state FROM signatures").fetchone()[0]
        finally:
            conn.close()

    def test_sign_bits_follow_the_definition(self):
        rng = random.Random(3)
        for dim in (1, 7, 8, 64, 384, 768):
            vec = [rng.uniform(-1, 1) for _ in range(dim)]
            expected = sum(1 << i for i, x in enumerate(vec) if x < 0)
            self.assertEqual(docs_qa.embed_sign_bits(docs_qa.array.array("f", vec).tobytes()), expected)

    def test_prefilter_and_exact_scoring_find_the_same_identical_chunk(self):
        for topic in (TOPICS[0], TOPICS[6], TOPICS[19]):
            question, word = topic_text(topic), topic.split()[0]
            with self.subTest(word=word):
                self.assertEqual(self.dense_top(question, prefilter=False), f"notes/{word}.txt")
                self.assertEqual(self.dense_top(question, prefilter=True), f"notes/{word}.txt")

    def test_dense_score_of_an_identical_text_is_its_cosine_one_in_both_paths(self):
        question = topic_text(TOPICS[3])
        for prefilter in (False, True):
            settings = self.settings(embed_mock=False, base_url=self.stub.base_url, embed_model="stub-embed",
                                     dense_exact_max=0 if prefilter else 10**9)
            best = max(docs_qa.search(question, settings).hits, key=lambda h: h.dense_score or -1)
            self.assertEqual(best.chunk.path, "notes/pyramid.txt")
            self.assertAlmostEqual(best.dense_score, 1.0, places=6)

    def test_signatures_follow_new_files_but_not_new_questions(self):
        self.dense_top("zebra habits", prefilter=True)
        state = self.signature_state()
        self.dense_top("volcano facts", prefilter=True)     # a new question's vector is cached too
        self.assertEqual(self.signature_state(), state)
        text = topic_text("quokka wombat platypus")
        write_files(self.docs, {"notes/quokka.txt": text + "\n"})
        self.assertEqual(self.dense_top(text, prefilter=True), "notes/quokka.txt")
        self.assertNotEqual(self.signature_state(), state)

    def test_the_store_counts_chunk_vectors_and_drops_signatures_for_reports(self):
        # reports read and reset the store through these calls, never through SQL of their own
        self.dense_top("zebra habits", prefilter=True)
        self.dense_top("volcano facts", prefilter=True)     # two questions' vectors are stored too
        conn = docs_qa.cache_open(docs_qa.cache_path(self.cache, self.docs))
        self.addCleanup(conn.close)
        self.assertEqual(docs_qa.cache_vector_count(conn), len(TOPICS))   # 20 notes, 20 texts
        docs_qa.cache_drop_signatures(conn)
        self.assertIsNone(conn.execute("SELECT state FROM signatures").fetchone())
        self.assertEqual(self.dense_top(topic_text(TOPICS[6]), prefilter=True),
                         f"notes/{TOPICS[6].split()[0]}.txt")            # built again, and found
        self.assertIsNotNone(conn.execute("SELECT state FROM signatures").fetchone())


class MockVectorTest(unittest.TestCase):
    def test_mock_vectors_are_deterministic_unit_vectors(self):
        a = docs_qa.embed_mock_vector("faktura korygująca")
        self.assertEqual(a, docs_qa.embed_mock_vector("faktura korygująca"))
        self.assertAlmostEqual(sum(x * x for x in a), 1.0)
        self.assertAlmostEqual(docs_qa.embed_cosine(a, a), 1.0)


if __name__ == "__main__":
    unittest.main()


class _ChosenVectors(http.server.BaseHTTPRequestHandler):
    """An embedding server whose vectors are chosen per document: a text naming 'docNN' gets
    the cosine SIMILARITY[NN] to the question (every other text), in a dimension of its own."""

    SIMILARITY: dict[int, float] = {}

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = []
        for index, text in enumerate(body["input"]):
            found = re.search(r"doc(\d\d)", text)
            vector = [0.0] * 32
            if found:
                number = int(found.group(1))
                share = self.SIMILARITY[number]
                vector[0], vector[number] = share, math.sqrt(1 - share * share)
            else:
                vector[0] = 1.0
            data.append({"index": index, "embedding": vector})
        payload = json.dumps({"object": "list", "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


class DenseAgreementBarTest(TempDirTest):
    """An embedding ranking that shares few of BM25's candidates is fused when the model is made
    for the question's language (a paraphrase BM25 misses), and set aside when only the user's
    --embed-languages says it reads it: there, disagreement means it does not."""

    SAID = {"en": "The account you are logged in with is kept in the file number {n}.",
            "pl": "Konto, na które jesteś zalogowany, jest zapisane w pliku numer {n}."}

    def setUp(self):
        super().setUp()
        similarity = {1: 0.95, **{n: 0.9 - 0.001 * n for n in range(8, 14)}, 2: 0.8, 3: 0.79, 4: 0.78,
                      5: 0.5, 6: 0.49, 7: 0.48}
        handler = type("Vectors", (_ChosenVectors,), {"SIMILARITY": similarity})
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)

    def write(self, language):
        # doc01 says 'whoami' for what the question asks in other words; doc02-07 hold the
        # question's words (BM25's candidates); doc08-13 hold none. The embeddings rank doc01
        # first, then doc08-13, then doc02-04: 3 of their best 10 among BM25's candidates
        files = {"doc01.md": "# whoami\n\ndoc01 Display the npm username.\n"}
        for n in range(2, 8):
            files[f"doc{n:02}.md"] = f"# Page {n}\n\ndoc{n:02} {self.SAID[language].format(n=n)}\n"
        for n in range(8, 14):
            files[f"doc{n:02}.md"] = f"# Other {n}\n\ndoc{n:02} Cache folders and tarballs, item {n}.\n"
        write_files(self.docs, files)

    def search(self, question, languages):
        self.write(docs_qa.question_make(question).language)
        settings = self.settings(embed_mock=False, embed_model="all-MiniLM-L6-v2", embed_languages=languages,
                                 base_url=f"http://127.0.0.1:{self.server.server_address[1]}/v1", limit=10)
        return docs_qa.search(question, settings)

    def test_a_model_made_for_english_is_fused_on_an_english_paraphrase(self):
        result = self.search("Which account am I logged in with?", "auto")
        self.assertEqual(result.mode, "hybrid")
        self.assertNotIn("embeddings_set_aside", [n.code for n in result.notes])
        self.assertIn("doc01.md", [hit.chunk.path for hit in result.hits])    # found by the embeddings alone

    def test_a_language_only_the_user_says_the_model_reads_keeps_the_higher_bar(self):
        result = self.search("Na które konto jestem zalogowany?", "all")
        self.assertIn("embeddings_set_aside", [n.code for n in result.notes])
        self.assertNotIn("doc01.md", [hit.chunk.path for hit in result.hits])
