"""BM25 and RRF checked against small examples worked out by hand."""
import math
import unittest

from helpers import docs_qa


class Bm25Test(unittest.TestCase):
    def test_idf_is_lucene_style_and_never_negative(self):
        self.assertAlmostEqual(docs_qa.bm25_idf(3, 2), math.log(1.6))
        self.assertGreater(docs_qa.bm25_idf(10, 10), 0.0)

    def test_scores_match_hand_computation(self):
        # N=3 chunks of lengths 4, 2, 3 (avg 3); "kot" occurs twice in chunk 1, once in chunk 2.
        # idf = ln(1 + 1.5/2.5) = ln 1.6
        # chunk 1: 2*2.2 / (2 + 1.2*(0.25 + 0.75*4/3)) = 4.4/3.5
        # chunk 2: 1*2.2 / (1 + 1.2*(0.25 + 0.75*2/3)) = 2.2/1.9
        scores = docs_qa.bm25_scores({"kot": [(1, 2, 4), (2, 1, 2)]}, n_docs=3, avg_len=3.0,
                                    k1=1.2, b=0.75)
        self.assertAlmostEqual(scores[1], math.log(1.6) * 4.4 / 3.5)
        self.assertAlmostEqual(scores[2], math.log(1.6) * 2.2 / 1.9)
        self.assertNotIn(3, scores)

    def test_b_zero_ignores_length(self):
        scores = docs_qa.bm25_scores({"x": [(1, 1, 100), (2, 1, 1)]}, 5, 10.0, k1=1.2, b=0.0)
        self.assertAlmostEqual(scores[1], scores[2])


class PooledFormsTest(unittest.TestCase):
    # ten chunks of equal length; chunk 1 says one question word in two forms ('kasa' as kas and
    # kase), chunk 2 says that word once and the other question word ('fiskal', in 3 chunks)
    POSTINGS = {"kas": [(1, 1, 10), (2, 1, 10)], "kase": [(1, 1, 10)],
                "fiskal": [(2, 1, 10), (3, 1, 10), (4, 1, 10)]}

    def test_a_words_forms_are_one_term_tf_summed_df_of_any(self):
        pooled, weights = docs_qa.bm25_pooled_forms(self.POSTINGS, [("kas", "kase"), ("fiskal",)],
                                                    {"kas": 1.0, "kase": 1.5, "fiskal": 1.0})
        key = next(k for k in pooled if k != "fiskal")
        self.assertEqual(sorted(pooled[key]), [(1, 2, 10), (2, 1, 10)])
        self.assertEqual((weights[key], pooled["fiskal"], weights["fiskal"]), (1.5, self.POSTINGS["fiskal"], 1.0))

    def test_a_word_in_two_forms_counts_once_against_two_words(self):
        # by hand (k1 1.2, b 0.75, lengths at the mean): a tf of 1 scores 1 * idf, of 2 scores
        # 1.375 * idf; idf(df 1) = ln 7.33, idf(df 2) = ln 4.4, idf(df 3) = ln 3.14
        apart = docs_qa.bm25_scores(self.POSTINGS, 10, 10.0, 1.2, 0.75)
        self.assertGreater(apart[1], apart[2])                 # ln 4.4 + ln 7.33 > ln 4.4 + ln 3.14
        postings, _ = docs_qa.bm25_pooled_forms(self.POSTINGS, [("kas", "kase")], {})
        pooled = docs_qa.bm25_scores(postings, 10, 10.0, 1.2, 0.75)
        self.assertAlmostEqual(pooled[1], 1.375 * math.log(1 + 8.5 / 2.5))
        self.assertAlmostEqual(pooled[2], math.log(1 + 8.5 / 2.5) + math.log(1 + 7.5 / 3.5))
        self.assertGreater(pooled[2], pooled[1])

    def test_a_term_of_two_words_is_pooled_with_the_first_and_a_lone_form_stays(self):
        pooled, _ = docs_qa.bm25_pooled_forms(self.POSTINGS, [("kas", "kase"), ("kase", "fiskal"), ("zebra",)], {})
        self.assertEqual(len(pooled), 2)                       # kas+kase, and fiskal on its own
        self.assertIn("fiskal", pooled)


class TermCountsTest(unittest.TestCase):
    def test_a_title_word_counts_heading_units_and_a_body_word_tf_units(self):
        # 'zebra' once in the title, once in the body; 'grass' once in the body (TF_UNITS 2 each)
        text, tokenizer = "# Zebra\n\nzebra grass", docs_qa.Tokenizer()
        units, title = docs_qa.TF_UNITS, docs_qa.HEADING_TF_UNITS
        self.assertEqual(docs_qa.bm25_term_counts(text, tokenizer), ({"zebr": title + units, "gras": units},
                                                                     2 * units + title))
        self.assertEqual(docs_qa.bm25_term_counts(text, tokenizer, heading_units=units),
                         ({"zebr": 2 * units, "gras": units}, 3 * units))

    def test_a_section_headings_words_count_as_a_titles_do(self):
        # a section's heading names what its text is about, as a title names the page
        text, tokenizer = "## Zebra\n\nzebra grass", docs_qa.Tokenizer()
        units, title = docs_qa.TF_UNITS, docs_qa.HEADING_TF_UNITS
        self.assertEqual(docs_qa.bm25_term_counts(text, tokenizer), ({"zebr": title + units, "gras": units},
                                                                     2 * units + title))
        parsed = docs_qa.chunk_parse("z.md", "# Animals\n\nIntro.\n\n## Zebra\n\nzebra grass\n", max_chars=20)
        self.assertEqual(parsed.heads, ["Animals\nZebra"])      # what the indexer weighs

    def test_a_front_matters_title_and_description_weigh_as_a_heading_of_the_first_chunk(self):
        # the rendered page shows 'title:' as its heading; the first chunk's lines start after
        # the front matter, so neither 'whoami' nor 'username' was indexed anywhere
        text = ("---\ntitle: npm-whoami\ndescription: Display npm username\n---\n\n"
                "### Synopsis\n\nnpm whoami\n\n### Description\n\nPrints the logged-in user.\n")
        parsed = docs_qa.chunk_parse("w.md", text)
        self.assertEqual(parsed.lead, "npm-whoami\nDisplay npm username")
        self.assertNotIn("username", parsed.chunks[0].text)      # the lines stay the file's lines
        tokenizer, heading = docs_qa.Tokenizer(), docs_qa.HEADING_TF_UNITS
        counts, _ = docs_qa.bm25_term_counts(parsed.chunks[0].text, tokenizer, parsed.heads[0], lead=parsed.lead)
        username, = tokenizer.tokens("username")
        self.assertEqual(counts[username], heading)
        self.assertEqual(docs_qa.chunk_parse("n.md", "# Title\n\ntext\n").lead, "")

    def test_a_section_heading_weighs_only_the_words_its_pages_title_lacks(self):
        # the title's words frame every section of the page alike: in 'VAT returns — quarterly'
        # under the title 'VAT returns', only 'quarterly' names what the section is about
        tokenizer = docs_qa.Tokenizer()
        units, heading = docs_qa.TF_UNITS, docs_qa.HEADING_TF_UNITS
        vat, quarterly = tokenizer.tokens("VAT quarterly")
        section, _ = docs_qa.bm25_term_counts("## VAT returns — quarterly\n\nfiled", tokenizer,
                                              heads="VAT returns — quarterly", title="VAT returns")
        self.assertEqual((section[vat], section[quarterly]), (units, heading))
        first, _ = docs_qa.bm25_term_counts("# VAT returns\n\nfiled", tokenizer,
                                            heads="VAT returns", title="VAT returns")
        self.assertEqual(first[vat], heading)                        # the title's own line weighs as a title


class RrfTest(unittest.TestCase):
    def test_order_matches_hand_computation(self):
        fused = docs_qa.rrf_fuse({"bm25": [10, 20, 30], "dense": [30, 10]}, rrf_k=60)
        self.assertEqual([i for i, _ in fused], [10, 30, 20])
        self.assertAlmostEqual(fused[0][1], 1 / 61 + 1 / 62)
        self.assertAlmostEqual(fused[1][1], 1 / 63 + 1 / 61)
        self.assertAlmostEqual(fused[2][1], 1 / 62)

    def test_ties_go_by_positions_never_by_id_or_dict_order(self):
        # 1 and 2 tie on score and best rank: the better rank in the method named first wins
        self.assertEqual([i for i, _ in docs_qa.rrf_fuse({"a": [2, 1], "b": [1, 2]})], [2, 1])
        self.assertEqual([i for i, _ in docs_qa.rrf_fuse({"b": [1, 2], "a": [2, 1]})], [2, 1])
        self.assertEqual([i for i, _ in docs_qa.rrf_fuse({"a": [1, 2], "b": [2, 1]})], [1, 2])
        # 4 is in both lists; 9 and 5 tie, each first in one list: a is named first
        self.assertEqual([i for i, _ in docs_qa.rrf_fuse({"b": [5, 4], "a": [9, 4]})], [4, 9, 5])


if __name__ == "__main__":
    unittest.main()
