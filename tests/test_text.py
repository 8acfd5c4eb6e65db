"""Text (retrieval_contract, shared by RAG and the graph): folding, tokens, stop words, language guess, stemmers."""
import unittest

import docs_qa
from docs_qa import text_fold, text_stem, text_stem_english, text_tokens, text_words
import retrieval_contract
from retrieval_contract import _stop_word_language


class FoldTest(unittest.TestCase):
    def test_polish_letters_fold_including_l_stroke(self):
        self.assertEqual(text_fold("Łódź"), "lodz")
        self.assertEqual(text_fold("ŻÓŁW"), "zolw")

    def test_slovak_caron_and_acute_fold(self):
        self.assertEqual(text_fold("Koľko ťažké"), "kolko tazke")

    def test_nfkc_ligature_and_fullwidth_digits(self):
        self.assertEqual(text_fold("ﬁle ２０２６"), "file 2026")

    def test_casefold_sharp_s(self):
        self.assertEqual(text_fold("Straße"), "strasse")

    def test_letters_without_a_decomposition_fold_too(self):
        self.assertEqual(text_fold("Łódź ĐØ Straße"), "lodz do strasse")


class FoldedWordsTest(unittest.TestCase):
    def test_the_fast_split_finds_the_words_of_the_folded_text(self):
        # ASCII by translate and split, other text by \\w+ with underscores as spaces
        for text in ("GTU_12 VAT-26 __init__ a_b", "Tab\tcontrol\x1f\x1cchars and\x0bspaces",
                     "Łódź ŻÓŁW Koľko ťažké", "ﬁle ２０２６ Straße", "zero\u200bwidth soft\u00adhyphen",
                     "e\u0301 q\u0301x", "日本語のテキスト_和", "٣٤ ① ½ ²", "", "___", "a\u0345b"):
            self.assertEqual(docs_qa.text_folded_words(text), docs_qa.TEXT_WORD_RE.findall(text_fold(text)), text)


class WordsTest(unittest.TestCase):
    def test_words_keep_diacritics_and_fold_to_the_tokenizer_words(self):
        self.assertEqual(text_words("Jána Holpová, GTU_12!"), ["jána", "holpová", "gtu", "12"])
        self.assertEqual([text_fold(w) for w in text_words("Koľko ťažké")], ["kolko", "tazke"])

    def test_keep_case_keeps_capitals(self):
        self.assertEqual(text_words("Ján ＨＯＬＰ", keep_case=True), ["Ján", "HOLP"])


class TokenTest(unittest.TestCase):
    def test_polish_question_drops_stop_words_keeps_identifier(self):
        # do, kiedy: stop words; skladam has no known ending; jpk is too short to stem
        self.assertEqual(text_tokens("Do kiedy składam JPK?"), ["sklad", "jpk"])
        # -am, -a and -ać (folded 'ac') are stripped: the verb's forms meet
        self.assertEqual({text_tokens(w)[0] for w in ("składam", "składa", "składać")}, {"sklad"})

    def test_identifiers_split_on_underscore_and_hyphen(self):
        self.assertEqual(text_tokens("GTU_12 VAT-26"), ["gtu", "12", "vat", "26"])

    def test_english_text_is_porter_stemmed(self):
        # the, were: English stop words -> English; invoices -> invoice -> invoic (step 5)
        self.assertEqual(text_tokens("The invoices were issued"), ["invoic", "issu"])

    def test_polish_text_is_not_porter_stemmed(self):
        # Porter would turn 'czas' into 'cza' and 'terminy' into 'termini'
        self.assertEqual(text_tokens("kiedy czas na terminy"), ["czas", "termin"])

    def test_stop_words_hold_all_three_languages(self):
        for word in ("the", "which", "kiedy", "oraz", "alebo", "preco"):
            self.assertIn(word, retrieval_contract.STOP_WORDS)


class LanguageTest(unittest.TestCase):
    def test_english_needs_more_english_than_slavic_stop_words(self):
        self.assertEqual(_stop_word_language(["what", "is", "the", "threshold"]), "en")
        self.assertEqual(_stop_word_language(["jak", "dlugo", "przechowywac", "faktury", "w"]), "other")

    def test_no_stop_words_is_unknown(self):
        self.assertEqual(_stop_word_language(["gtu", "12"]), "unknown")

    def test_words_in_both_lists_do_not_count(self):
        # 'a', 'i', 'to' are function words in English and Polish alike
        self.assertEqual(_stop_word_language(["a", "i", "to"]), "unknown")


class QueryTermsTest(unittest.TestCase):
    def test_undecided_query_carries_both_stems(self):
        # light stemmer: zebra -> zebr; Porter leaves zebra; either may be what a doc indexed
        self.assertEqual(docs_qa.text_query_terms("zebra"), ["zebr", "zebra"])

    def test_decided_query_carries_one_stem_each(self):
        self.assertEqual(docs_qa.text_query_terms("the zebras"), ["zebra"])
        self.assertEqual(docs_qa.text_query_terms("kiedy terminy"), ["termin"])

    def test_undecided_text_is_indexed_with_the_light_stemmer(self):
        self.assertEqual(text_tokens("zebra"), ["zebr"])


class TermRulesTest(unittest.TestCase):
    """What a report switches off is passed in (QueryRules, the Tokenizer's stemmers), never patched."""

    def test_request_boilerplate_is_dropped_unless_the_rules_keep_it(self):
        rules = retrieval_contract.QUERY_RULES._replace(request_stop_words=frozenset())
        self.assertEqual(docs_qa.text_query_counts("I am interested in invoices"), {"invoic": 1})
        self.assertEqual(docs_qa.text_query_counts("I am interested in invoices", rules),
                         {"interest": 1, "invoic": 1})
        question = retrieval_contract.question_make("I am interested in invoices", rules=rules)
        self.assertEqual([word for word, _ in question.words], ["interested", "invoices"])

    def test_the_words_that_frame_a_question_are_dropped_from_it(self):
        # 'did anyone else discover…' (Cranfield): 'anyone' and 'else' name no topic, and as words
        # no document holds they weighed as the rarest and let the gate refuse the question
        self.assertEqual(docs_qa.text_query_counts("did anyone else discover whether skin friction varies"),
                         docs_qa.text_query_counts("did discover skin friction varies"))
        self.assertEqual(docs_qa.text_query_counts("whose posts should somebody bother to read"),
                         docs_qa.text_query_counts("posts should read"))

    def test_capitals_of_a_question_in_capitals_make_a_code_word_only_without_the_rule(self):
        # Porter makes WIS 'wi'; as a code word it also keeps the light stem 'wis'
        self.assertEqual(docs_qa.text_query_counts("where is the WIS form"), {"wi": 1, "form": 1, "wis": 1})
        self.assertEqual(docs_qa.text_query_counts("WHERE IS THE WIS FORM"), {"wi": 1, "form": 1})
        rules = retrieval_contract.QUERY_RULES._replace(all_caps_rule=False)
        self.assertEqual(docs_qa.text_query_counts("WHERE IS THE WIS FORM", rules), {"wi": 1, "form": 1, "wis": 1})

    def test_a_tokenizer_stems_with_the_stemmers_it_is_given(self):
        self.assertEqual(docs_qa.Tokenizer().tokens("the invoices were filed"), ["invoic", "file"])
        unstemmed = dict.fromkeys(retrieval_contract.STEMMERS, str)
        self.assertEqual(docs_qa.Tokenizer(unstemmed).tokens("the invoices were filed"), ["invoices", "filed"])

    def test_a_bounded_memo_starts_again_when_full_and_stems_as_before(self):
        tokenizer = retrieval_contract.Tokenizer(memo_limit=3)
        text = "invoices were filed, payments booked and receipts kept"
        self.assertEqual(tokenizer.tokens(text, "en"), retrieval_contract.Tokenizer().tokens(text, "en"))
        self.assertLessEqual(max(len(memo) for memo in tokenizer._memo.values()), 3)

    def test_questions_share_one_tokenizer_with_a_bounded_memo(self):
        shared = retrieval_contract.shared_tokenizer()
        self.assertIs(shared, retrieval_contract.shared_tokenizer())
        self.assertEqual({memo.limit for memo in shared._memo.values()}, {retrieval_contract.STEM_MEMO_MAX})


class LightStemTest(unittest.TestCase):
    def test_polish_case_forms_share_a_stem(self):
        forms = ["faktura", "faktury", "fakturami", "fakturach", "fakturom"]
        self.assertEqual({text_stem(w) for w in forms}, {"faktur"})

    def test_polish_verb_forms_share_a_stem(self):
        # an -yć verb conjugates as an -ić one, y after cz, rz, sz and ż: zobaczyć, zobaczysz,
        # zobaczymy, zobacz (as zrobić, zrobisz, zrobimy -> zrob)
        stem = retrieval_contract.text_stem_polish
        self.assertEqual({stem(w) for w in ["zobaczyc", "zobaczysz", "zobaczymy", "zobacz"]}, {"zobacz"})
        self.assertEqual({stem(w) for w in ["policzyc", "policzymy", "policz"]}, {"policz"})
        self.assertEqual({stem(w) for w in ["zrobic", "zrobisz", "zrobimy"]}, {"zrob"})
        # a noun's locative in -ycie (Madryt, Madrycie) is no verb form
        self.assertEqual(stem("madrycie"), "madryc")

    def test_slovak_forms_share_a_stem(self):
        # daňové, daňového: a text of no clear language keeps a stem of four letters
        self.assertEqual({text_stem("danove"), text_stem("danoveho")}, {"danov"})
        self.assertEqual({text_stem("priznanie"), text_stem("priznania")}, {"priznan"})

    def test_short_words_and_numbers_are_kept(self):
        # three letters are a stem already; an English -s needs a stem of four
        self.assertEqual(text_stem("kas"), "kas")
        self.assertEqual(text_stem("czas"), "czas")
        self.assertEqual(text_stem("20260"), "20260")


class PorterTest(unittest.TestCase):
    # Examples from Porter (1980), worked through the steps by hand.
    def test_step1a_plurals(self):
        self.assertEqual(text_stem_english("caresses"), "caress")
        self.assertEqual(text_stem_english("ponies"), "poni")
        self.assertEqual(text_stem_english("cats"), "cat")
        self.assertEqual(text_stem_english("caress"), "caress")

    def test_step1b_ed_ing_with_tidying(self):
        self.assertEqual(text_stem_english("agreed"), "agre")      # eed -> ee, then step 5 e
        self.assertEqual(text_stem_english("plastered"), "plaster")
        self.assertEqual(text_stem_english("bled"), "bled")        # no vowel before -ed
        self.assertEqual(text_stem_english("hopping"), "hop")      # undouble
        self.assertEqual(text_stem_english("falling"), "fall")     # ll is kept
        self.assertEqual(text_stem_english("filing"), "file")      # m=1 and cvc: add e
        self.assertEqual(text_stem_english("sized"), "size")       # m=1 and cvc: add e

    def test_step1c_y(self):
        self.assertEqual(text_stem_english("happy"), "happi")
        self.assertEqual(text_stem_english("sky"), "sky")
        self.assertEqual(text_stem_english("toys"), "toi")          # y after a vowel is a consonant
        self.assertEqual(text_stem_english("enjoying"), "enjoi")    # m("enjoy") = 2: no e added

    def test_steps_2_to_5(self):
        self.assertEqual(text_stem_english("relational"), "relat")  # ational->ate, ate dropped
        self.assertEqual(text_stem_english("hopefulness"), "hope")  # fulness->ful->'' , e kept
        self.assertEqual(text_stem_english("adoption"), "adopt")    # -ion after t
        self.assertEqual(text_stem_english("replacement"), "replac")
        self.assertEqual(text_stem_english("rate"), "rate")         # m=1 and cvc: e kept
        self.assertEqual(text_stem_english("controll"), "control")

    def test_singular_and_plural_meet(self):
        self.assertEqual(text_stem_english("deadlines"), text_stem_english("deadline"))
        self.assertEqual(text_stem_english("invoices"), text_stem_english("invoice"))

    def test_numbers_and_short_words_are_kept(self):
        self.assertEqual(text_stem_english("v7m"), "v7m")
        self.assertEqual(text_stem_english("is"), "is")

    def test_y_is_a_vowel_only_after_a_consonant(self):
        # the stems of the first implementation, which tested each letter in turn
        for word, stem in (("yelling", "yell"), ("crying", "cry"), ("enjoy", "enjoi"),
                           ("syzygy", "syzygi"), ("yyyy", "yyyi"), ("toying", "toi"),
                           ("bayonets", "bayonet"), ("generalization", "gener"),
                           ("abilities", "abil"), ("ableness", "abl")):
            self.assertEqual(text_stem_english(word), stem, word)


if __name__ == "__main__":
    unittest.main()
