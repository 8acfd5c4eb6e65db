"""Word forms: every Polish and Slovak form of a word finds the others, in the
stemmers (pure) and through search() over a folder the test builds."""

import unittest

from helpers import TempDirTest, write_files
import docs_qa
from docs_qa import text_fold, text_stem, text_stem_polish, text_stem_slovak

# Forms of one word each, as people write them (folded before stemming, as the index folds them)
POLISH_FORMS = [
    "kasa kasy kasę kas kasą kasie kasom kasami kasach",
    "faktura faktury fakturę fakturą fakturom fakturami fakturach",
    "fiskalna fiskalnej fiskalną fiskalne fiskalnych fiskalnymi",
    "Kowalski Kowalskiego Kowalskiemu Kowalskim",
    "Peter Peterem Petrem",
    "Nowak Nowaka Nowakowi Nowakiem",
]
SLOVAK_FORMS = [
    "Ján Jána Jánovi Jánom",
    "hodnotenie hodnotenia hodnotením hodnoteniu",
    "Peter Petra Petrovi Petrom",
    "Novák Nováka Novákovi Novákom Nováková Novákovej Novákovou",
    "príspevok príspevku príspevky príspevkom príspevkov",
    "daňové daňového daňovej daňovým",
]


def stems(stem, forms: str) -> set[str]:
    return {stem(text_fold(word)) for word in forms.split()}


class StemmerFormsTest(unittest.TestCase):
    def test_every_polish_form_gets_one_stem(self):
        for forms in POLISH_FORMS:
            with self.subTest(forms=forms):
                self.assertEqual(len(stems(text_stem_polish, forms)), 1, stems(text_stem_polish, forms))

    def test_every_slovak_form_gets_one_stem(self):
        for forms in SLOVAK_FORMS:
            with self.subTest(forms=forms):
                self.assertEqual(len(stems(text_stem_slovak, forms)), 1, stems(text_stem_slovak, forms))

    def test_text_of_no_clear_language_joins_the_case_forms_of_longer_words(self):
        # its stem keeps four letters (an English 'data' or 'code' stays whole), so kasa and
        # Peter keep theirs; a question meets such a text through this stemmer's stem too
        # (only the endings both languages share that seldom end an English word: -ím, -ým not)
        for forms in (POLISH_FORMS[1], POLISH_FORMS[2], "hodnotenie hodnotenia hodnoteniu", "daňové daňového daňovej"):
            with self.subTest(forms=forms):
                self.assertEqual(len(stems(text_stem, forms)), 1, stems(text_stem, forms))
        self.assertEqual([text_stem(w) for w in ("data", "code", "kasa")], ["data", "code", "kasa"])

    def test_short_words_are_stemmed_where_the_ending_leaves_three_letters(self):
        self.assertEqual(text_stem_polish("kasa"), "kas")       # four letters, -a
        self.assertEqual(text_stem_polish("kot"), "kot")        # three letters are a stem already

    def test_unrelated_words_stay_apart(self):
        # a stem of at least three letters: 'las' (forest) and 'lasso' are not 'la'
        self.assertNotEqual(text_stem_polish("kasa"), text_stem_polish("kawa"))
        self.assertNotEqual(text_stem_slovak("mesto"), text_stem_slovak("mesiac"))
        self.assertEqual(text_stem_polish("20260"), "20260")


class TokenizerLanguageTest(unittest.TestCase):
    def test_a_text_is_stemmed_by_its_own_stop_words(self):
        tokenizer = docs_qa.Tokenizer()
        self.assertEqual(tokenizer.language("Jak długo trzeba przechowywać faktury w firmie?"), "pl")
        self.assertEqual(tokenizer.language("Ako dlho treba uchovávať faktúry vo firme?"), "sk")
        self.assertEqual(tokenizer.language("How long are invoices kept?"), "en")
        self.assertEqual(tokenizer.language("GTU_12 JPK_V7M"), "other")

    def test_modal_verbs_are_function_words_in_polish_and_slovak_only(self):
        # 'Czy muszę mieć ...' asks about the noun: muszę and mieć are not what a page must hold
        # kasę: 'kas' to the Polish and Slovak stemmers, 'kase' to text_stem (a stem keeps four
        # letters); fiskalną, a word of 5 letters or more, also meets a form with a fleeting e
        # before the last of its two closing consonants (fiskalen), as pojmom meets pojem
        self.assertEqual(docs_qa.text_query_terms("Czy muszę mieć kasę fiskalną?"),
                         ["kas", "kase", "fiskaln", "fiskalen"])
        # musím, mať dropped; registračnú and pokladnicu lose their accusative -u
        self.assertEqual(docs_qa.text_query_terms("Musím mať registračnú pokladnicu?"),
                         ["registracn", "registracen", "pokladnic"])
        # English keeps 'mate' and 'mat': they are content words there
        self.assertIn("mate", docs_qa.text_tokens("The mate checks the mat on deck"))


class FormsFindEachOtherTest(TempDirTest):
    """A question in any form of a word finds the page that uses another form."""

    PAGES = {
        "pl/kasy.md": "# Kasy rejestrujące\n\nSprzedaż na rzecz konsumentów ewidencjonuje się na kasie "
                      "rejestrującej. Zwolnienie przysługuje, gdy obrót nie przekroczył 20 000 zł.\n",
        "pl/ksef.md": "# KSeF\n\nFaktury ustrukturyzowane wysyła się do systemu KSeF od 2026 roku.\n",
        "sk/holp.md": "# Práca Jána Holpa\n\nBakalársku prácu obhájil v roku 2024 s hodnotením B. "
                      "Vedúcim práce bol Peter Novák.\n",
        "sk/kral.md": "# Práca Márie Kráľovej\n\nDiplomovú prácu viedla Eva Horváthová, obhajoba "
                      "bola v roku 2023.\n",
    }

    def setUp(self) -> None:
        super().setUp()
        write_files(self.docs, self.PAGES)

    def first_page(self, question: str) -> str | None:
        result = docs_qa.search(question, self.settings(use_embeddings=False))
        return result.hits[0].chunk.path if result.hits else None

    def test_each_polish_form_of_kasa_finds_the_page(self):
        for form in "kasa kasy kasę kas kasą kasie kasami".split():
            with self.subTest(form=form):
                self.assertEqual(self.first_page(f"Czy muszę mieć {form} rejestrującą?"), "pl/kasy.md")

    def test_slovak_name_and_noun_forms_find_the_page(self):
        for question in ("Aké hodnotenie dostala práca Jána Holpa?", "Aké hodnotenie mal Ján Holp?",
                         "Ktorú prácu viedol Petrom Novákom?", "Kto je Jánovi Holpovi vedúcim?"):
            with self.subTest(question=question):
                self.assertEqual(self.first_page(question), "sk/holp.md")


class FleetingETest(TempDirTest):
    """A word whose e comes and goes with its case (pojem, pojmom) meets its other forms: the
    Slovak light stemmer keeps the e of one and not of the other."""

    def test_pojmom_finds_the_page_of_the_pojem(self):
        write_files(self.docs, {
            "sk/a-queryset.md": "# QuerySet\n\nQuerySet sa dá filtrovať. QuerySet sa dá zoradiť podľa dátumu.\n",
            "sk/pojem.md": "# Pojem\n\nPojem QuerySet znamená zoznam objektov daného modelu.\n",
            # 'pojmom' as written is in the folder: no slip (§12b) joins it to 'pojem' instead
            "sk/b-ine.md": "# Iné\n\nS týmto pojmom sa stretneme neskôr.\n"})
        result = docs_qa.search("Čo je pod pojmom QuerySet?", self.settings(use_embeddings=False))
        self.assertEqual(result.hits[0].chunk.path, "sk/pojem.md")


class NameFormsFindTheNominativeTest(TempDirTest):
    """A name in a case its language's stemmer does not join to the nominative still finds the
    page: the stemmers leave 'Andrejovi' as andrejov/andrj against the page's andr, 'Máriou' as
    mari/mario against mar, and a Polish page's 'Kováč' is kov. Each page has a twin with
    another name that sorts first, so a question whose name is missed gets the twin."""

    PAGES = {
        "sk/a-posudok.md": "# Posudok\n\nPosudok k tejto práci napísal Juraj Kollár a je veľmi dobrý.\n",
        "sk/posudok.md": "# Posudok\n\nPosudok k tejto práci napísal Andrej Hrivnák a je veľmi dobrý.\n",
        "sk/a-konzultacia.md": "# Konzultácia\n\nKonzultáciu k tejto práci viedla Zuzana Bieliková a bola veľmi dobrá.\n",
        "sk/konzultacia.md": "# Konzultácia\n\nKonzultáciu k tejto práci viedla Mária Kráľová a bola veľmi dobrá.\n",
        "pl/a-recenzja.md": "# Recenzja\n\nRecenzję tej pracy napisał Tomasz Nowak i jest ona bardzo dobra.\n",
        "pl/recenzja.md": "# Recenzja\n\nRecenzję tej pracy napisał Marek Kováč i jest ona bardzo dobra.\n",
        "pl/a-promotor.md": "# Promotor\n\nPromotorem tej pracy była Anna Zielińska i jest ona bardzo dobra.\n",
        "pl/promotor.md": "# Promotor\n\nPromotorem tej pracy była Ewa Šimková i jest ona bardzo dobra.\n",
    }

    def test_the_name_picks_its_page_from_its_twin(self):
        write_files(self.docs, self.PAGES)
        for question, page in (("Kto poslal posudok Andrejovi?", "sk/posudok.md"),
                               ("Kto napísal posudok s Andrejom?", "sk/posudok.md"),
                               ("Kto viedol konzultáciu s Máriou?", "sk/konzultacia.md"),
                               ("Kto napisał recenzję z Kováčem?", "pl/recenzja.md"),
                               ("Gdzie jest recenzja Kováča?", "pl/recenzja.md"),
                               ("Kto był promotorem pracy z Šimkową?", "pl/promotor.md")):
            with self.subTest(question=question):
                result = docs_qa.search(question, self.settings(use_embeddings=False))
                self.assertEqual(result.hits[0].chunk.path if result.hits else None, page)


class PageNamesTest(TempDirTest):
    """A personal name tells whose page it is: a thesis page names its author once, in its
    first section, and the grade is in another. Each page has a twin that sorts first, with
    another author and grade, so a question whose name counts only where it is written gets
    the twin's grade."""

    @staticmethod
    def thesis(title: str, author: str, grade: str) -> str:
        return (f"# {title}\n\n## Základné údaje\n\n- Autor: {author}\n- Rok: 2024\n\n"
                f"## Anotácia\n\nPráca skúma strojový preklad a výsledky hodnotí metrikami BLEU "
                f"a ľudským hodnotením na slovenských textoch.\n\n"
                f"## Obhajoba\n\nPráca bola obhájená pred komisiou katedry s hodnotením {grade}.\n")

    def setUp(self) -> None:
        super().setUp()
        write_files(self.docs, {"a-kralova.md": self.thesis("Preklad zmlúv", "Mária Kráľová", "A"),
                                "z-holp.md": self.thesis("Preklad zákonov", "Ján Holp", "C")})

    def test_the_grade_in_another_section_of_the_named_persons_page_is_found_and_quoted(self):
        result = docs_qa.answer("Aké hodnotenie dostala práca Jána Holpa?",
                                self.settings(use_embeddings=False, extractive=True))
        first = result.answer.split("\n")[0]
        self.assertIn("s hodnotením C.", first)
        self.assertIn("[z-holp.md:", first)

    def test_a_name_on_more_pages_than_the_bound_names_no_page(self):
        # the author on as many more pages as the bound, so on one page too many: the name
        # tells no page, and of the two grade sections (line 12) the twin's, first by path,
        # ranks first, as it would without page names. Other pages keep the name rare enough;
        # the gate is off, since a name on most pages carries no question.
        write_files(self.docs, {**{f"b-{n}.md": f"# Poznámka {n}\n\nJán Holp mal prednášku o preklade.\n"
                                   for n in range(docs_qa.PAGE_NAME_MAX_PAGES)},
                                **{f"c-{n}.md": f"# Iná poznámka {n}\n\nKatedra pripravila seminár číslo {n}.\n"
                                   for n in range(6)}})
        hits = docs_qa.search("Aké hodnotenie dostala práca Jána Holpa?",
                              self.settings(use_embeddings=False, min_coverage=0.0)).hits
        self.assertEqual([hit.chunk.path for hit in hits if hit.chunk.start_line == 12][0], "a-kralova.md")


if __name__ == "__main__":
    unittest.main()
