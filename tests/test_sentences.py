"""Sentences (retrieval_contract, shared text): the one splitter never cuts at an abbreviation, a title, an ordinal or a
date, a decimal, an ellipsis inside a sentence, a URL or a file name; it does cut real
sentence ends (the same splitter serves extractive answers, the support check and the
model-reply parser)."""
import unittest

from helpers import docs_qa

# Real Polish, Slovak and English sentences with abbreviations, one sentence each, by class.
ONE_SENTENCE = {
    "titles": [
        "Vedúci práce: doc. Ing. Peter Novák, PhD.",
        "Vedúcim práce Jána Holpa je doc. Ing. Peter Novák, PhD. [wiki/prace/2024-holp.md:10-10]",
        "Vedúci práce: Mgr. Zuzana Baková, PhD.",
        "Oponentom bol prof. RNDr. Ján Kováč, DrSc. z Katedry informatiky.",
        "Posudok napísal Ing. Tomáš Bielik, PhD. a odovzdal ho v termíne.",
        "Konzultantkou bola doc. Mgr. Eva Šimková, PhD. z oddelenia jazykových technológií.",
        "Wniosek podpisał dr hab. inż. Jan Kowalski, prof. PW, jako promotor.",
        "Promotorem pracy był prof. dr hab. Adam Nowak z Wydziału Prawa.",
        "Recenzję przygotowała mgr Anna Wiśniewska oraz dr Piotr Zieliński.",
        "The report was reviewed by Dr. Smith and Prof. Jones before publication.",
        "Mr. Brown asked Mrs. Green and Ms. White to sign the form.",
        "Please contact St. Mary's office or Dr. Adams for details.",
        "Dokument podpisał J. Kowalski w imieniu zarządu.",
    ],
    "introducers": [
        "Ulgę można stosować w wielu przypadkach, np. Przy zakupie kasy fiskalnej online.",
        "Przy skali można rozliczać się wspólnie z małżonkiem i korzystać z ulg (np. ulgi na dzieci).",
        "Płatnicy składek będący osobami prawnymi (np. Spółki z o.o.) płacą składkę inaczej.",
        "Kody GTU oznaczają określone grupy towarów, tzn. Towary wrażliwe wymienione w rozporządzeniu.",
        "Do obowiązków podatnika należą m.in. Rejestracja, ewidencja i składanie deklaracji.",
        "Pojazd wykorzystywany jest do działalności i do celów prywatnych (tzw. Użytek mieszany).",
        "Podatník môže uplatniť odpočet, napr. Pri kúpe služobného vozidla na podnikanie.",
        "Práca hodnotí kvalitu prekladu metrikami, t. j. BLEU a chrF, aj ľudským hodnotením.",
        "Výsledky sú dostupné v archíve, tj. V systéme katedry, na požiadanie.",
        "Use a lightweight format, e.g. Markdown or reStructuredText, for the notes.",
        "The command reads one file, i.e. The first argument, and prints it.",
        "Compare BM25 vs. Dense retrieval on the same questions.",
        "Stawki obniżone obejmują m.in. książki i niektóre produkty spożywcze.",
    ],
    "legal": [
        "Zgodnie z art. 106j ust. 1 ustawy o VAT podatnik wystawia fakturę korygującą.",
        "Obowiązek wynika z art. 111 ust. 1 ustawy o podatku od towarów i usług.",
        "Rozporządzenie (Dz. U. z 2024 r. poz. 1234) określa zwolnienia z obowiązku.",
        "Oznaczenia wynikają z § 10 ust. 3 pkt 1 rozporządzenia w sprawie JPK.",
        "Podľa § 19 ods. 2 zákona č. 222/2004 Z. z. vzniká daňová povinnosť dodaním tovaru.",
        "Zákon č. 595/2003 Z. z. o dani z príjmov upravuje aj paušálne výdavky.",
        "Obowiązuje ono od 1 stycznia 2025 r. do 31 grudnia 2027 r. dla wszystkich podatników.",
        "Do końca 2025 r. limit dla samochodów innych niż elektryczne wynosił 150 000 zł.",
        "Za 2025 r. zeznania PIT-36 i PIT-28 składa się do 30 kwietnia 2026 r.",
        "See Fig. 3 and Sec. 4.2 of the specification for the full list.",
    ],
    "names, offices and languages": [
        # from pl-poquad's Polish Wikipedia paragraphs, each cut in two before
        "Był członkiem Klubu Jagiellońskiego i działał w Centrum im. Mirosława Dzielskiego w Krakowie.",
        "Zagrał rolę Kubusia w spektaklu w reż. Zbigniewa Bogdańskiego w Teatrze Powszechnym.",
        "Pełniła funkcję członkini Komisji ds. Prawodawstwa i Kwestii Sądowo-Prawnych.",
        "Okręt, dowodzony przez kpt. mar. Cezarego Gnozę, operował w zespole osłony.",
        "Program nazwano Let's Move! (pol. Ruszajmy się!) i ogłoszono w lutym.",
        "Mechanizm rozpoznawania adresów (ang. Resolver) wybiera widok dla adresu.",
    ],
    "ordinals and dates": [
        "W latach 80. XX wieku sieć kolejowa w regionie zaczęła się kurczyć.",
        "Plik JPK_V7M składa się do 25. dnia miesiąca następującego po okresie rozliczeniowym.",
        "Práca bola obhájená 18. 6. 2024 pred komisiou katedry s hodnotením B.",
        "Dátum obhajoby: 1. 1. 2026 o 9.00 hod. v miestnosti A.",
        "Lehota uplynie 31. 12. 2025 a podanie po nej je oneskorené.",
        "Zaliczkę za kwiecień trzeba wpłacić do 20. maja, a za maj do 20. czerwca.",
        "Termín je 25. deň mesiaca nasledujúceho po skončení obdobia.",
    ],
    "decimals and numbers": [
        "Składka wynosiła 314,96 zł, a stawka 4.9 procent dochodu.",
        "The threshold rose from 1.5 to 2.0 million after version 3.11.7 was released.",
        "Sadzba dane je 23 %, znížená sadzba 19.5 % platí pre potraviny.",
    ],
    "ellipses": [
        "Wpisz kody GTU_01... GTU_13 w odpowiednich polach ewidencji.",
        "The list continues … and ends with the last entry.",
        "Zoznam obsahuje položky a, b, c... a ďalšie podľa potreby.",
    ],
    "urls and file names": [
        "Wniosek składa się przez https://www.podatki.gov.pl/e-deklaracje. w zakładce formularzy.",
        "Konfigurację zapisuje plik config.yaml w katalogu domowym użytkownika.",
        "Edit ~/.bashrc and then run source ~/.bashrc to reload it.",
        "Download it from https://example.com/docs/v2.1/index.html and unpack it.",
        "Súbor README.md obsahuje návod a súbor setup.py inštaláciu.",
        "The script reads ./data/input.v2.csv and writes out.json next to it.",
    ],
}


class OneSentenceTest(unittest.TestCase):
    def test_no_split_inside_a_sentence_per_abbreviation_class(self):
        total = 0
        for kind, sentences in ONE_SENTENCE.items():
            for sentence in sentences:
                total += 1
                with self.subTest(kind=kind, sentence=sentence):
                    self.assertEqual(docs_qa.text_sentences(sentence), [(0, len(sentence))])
        self.assertGreaterEqual(total, 50)


class SplitTest(unittest.TestCase):
    def split(self, text):
        return [text[a:b] for a, b in docs_qa.text_sentences(text)]

    def test_real_sentence_ends_are_cut(self):
        self.assertEqual(self.split("Kasa działa online. Dane trafiają do CRK."),
                         ["Kasa działa online.", "Dane trafiają do CRK."])
        self.assertEqual(self.split("Does it work? Yes! It does."), ["Does it work?", "Yes!", "It does."])
        self.assertEqual(self.split("Obowiązuje od 2026 r. Termin mija później."),
                         ["Obowiązuje od 2026 r.", "Termin mija później."])

    def test_a_statutes_numbered_paragraph_starts_its_sentence(self):
        # Polish statutes number their paragraphs inside a line: 'Art. 106j. 1. … 2. …'; the
        # number went with the sentence before it, and the article's heading was cut off
        self.assertEqual(self.split("Art. 106j. 1. Podatnik wystawia fakturę korygującą. 2. Faktura zawiera "
                                    "wyrazy FAKTURA KORYGUJĄCA."),
                         ["Art. 106j. 1. Podatnik wystawia fakturę korygującą.",
                          "2. Faktura zawiera wyrazy FAKTURA KORYGUJĄCA."])
        self.assertEqual(self.split("§ 5. 1. Kasę fiskalizuje się przed ewidencją. 2. Podatnik zgłasza kasę."),
                         ["§ 5.", "1. Kasę fiskalizuje się przed ewidencją.", "2. Podatnik zgłasza kasę."])
        # Slovak and Czech number them in brackets, Polish points with a bracket
        self.assertEqual(self.split("(1) Daňovník podá priznanie. (2) Lehota je tri mesiace."),
                         ["(1) Daňovník podá priznanie.", "(2) Lehota je tri mesiace."])
        self.assertEqual(self.split("Podatnik składa deklarację. 1) Termin mija 25. dnia miesiąca."),
                         ["Podatnik składa deklarację.", "1) Termin mija 25. dnia miesiąca."])

    def test_a_number_before_a_capital_still_ends_a_sentence(self):
        self.assertEqual(self.split("Była rozstawiona z numerem 2. W II rundzie wygrała."),
                         ["Była rozstawiona z numerem 2.", "W II rundzie wygrała."])

    def test_a_citation_after_the_stop_stays_with_its_sentence(self):
        self.assertEqual(self.split("Je to doc. Ing. Peter Novák, PhD. [a.md:1-1] Ďalší je Mgr. Kováč [b.md:2]."),
                         ["Je to doc. Ing. Peter Novák, PhD. [a.md:1-1]", "Ďalší je Mgr. Kováč [b.md:2]."])

    def test_an_ellipsis_before_a_capital_ends_a_sentence_and_a_line_break_always(self):
        self.assertEqual(self.split("Czekaj... Potem zapisz."), ["Czekaj...", "Potem zapisz."])
        self.assertEqual(self.split("first line\nsecond line"), ["first line", "second line"])

    def test_a_list_number_is_no_sentence_end_only_at_the_start_of_its_line(self):
        self.assertEqual(self.split("1. Stop the service."), ["1. Stop the service."])
        self.assertEqual(self.split("  - 2. Restart it."), ["- 2. Restart it."])
        self.assertEqual(self.split("Intro\n3. Check it."), ["Intro", "3. Check it."])
        # mid-line, or 4 digits, or a bullet with no blank after it: a sentence ends
        self.assertEqual(self.split("Run step 1. Then stop."), ["Run step 1.", "Then stop."])
        self.assertEqual(self.split("2026. Then stop."), ["2026.", "Then stop."])
        self.assertEqual(self.split("-2. Then stop."), ["-2.", "Then stop."])

    def test_the_word_before_a_stop_is_read_whole_however_long(self):
        # the last 64 characters alone would look like dotted initials (a.b.c.), the word does not
        long_word = "abcdefgh" + "a.b." * 20 + "c"
        self.assertEqual(self.split(f"See {long_word}. Next one."), [f"See {long_word}.", "Next one."])
        self.assertEqual(self.split("See " + "a.b." * 20 + "c. Next one."), ["See " + "a.b." * 20 + "c. Next one."])

    def test_closing_quotes_and_brackets_stay_with_the_sentence(self):
        self.assertEqual(self.split('Napisał: "Koniec." Potem wyszedł.'), ['Napisał: "Koniec."', "Potem wyszedł."])
        self.assertEqual(self.split("(To jest uwaga.) Dalej tekst."), ["(To jest uwaga.)", "Dalej tekst."])


if __name__ == "__main__":
    unittest.main()
