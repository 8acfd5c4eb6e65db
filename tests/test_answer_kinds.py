"""§14e-14f what a question asks for: a question of duty ('Czy muszę…', 'Do I need…') gets the
units that state the duty or its condition; a sentence that points back ('W tym czasie…',
'This…') is quoted with the sentence it points at; a unit is matched in the language its
fragment was indexed in; the headings over a unit frame it (half a point per question word
they hold that the unit does not); a question about an error gets the units around the
error's description (the fix); a file name in a question is not met by another file's
extension."""
import json
import unittest

from helpers import TempDirTest, docs_qa, run_cli, write_files

SHOP = ("Cash registers in a small shop. Status: 2026-03-15.\n\n"
        "A shop that sells only to other companies and documents every sale with an invoice "
        "usually does not need a cash register.\n\n"
        "The basic exemption applies when sales to consumers stayed below 20 000 in the previous "
        "year. Invoiced sales to companies are not counted.\n\n"
        "Buying a first cash register gives a relief of 90 % of its net price, up to 700.\n\n"
        "Cash registers are serviced by an approved technician every two years.\n")


class ExtractiveTest(TempDirTest):
    """Asks over files written by the test, BM25 only, extractively."""

    def ask(self, files, question):
        write_files(self.docs, files)
        return docs_qa.answer(question, self.settings(use_embeddings=False, extractive=True))


class DutyQuestionTest(ExtractiveTest):
    def test_a_question_of_duty_opens_with_the_condition(self):
        # four units name the register as often; the one that says when it is not needed comes
        # first, not the title (first in the file) nor the ones about its price or its service
        result = self.ask({"shop.txt": SHOP}, "Am I required to have a cash register?")
        first = result.answer.split("\n")[0]
        self.assertIn("usually does not need a cash register", first)

    def test_a_headless_notes_first_line_frames_the_condition_below_it(self):
        # the threshold line names neither 'cash' nor 'register'; the note's first line, alone
        # over a blank line, frames it as a title would, so the exemption is quoted too
        result = self.ask({"shop.txt": SHOP}, "Am I required to have a cash register?")
        self.assertIn("below 20 000", result.answer)
        self.assertIn("[shop.txt:5-5]", result.answer)

    def test_a_first_line_run_into_the_paragraph_frames_nothing(self):
        # the same note with its first line joined to the next paragraph: no title line, so
        # the threshold line holds no question word and is not quoted
        joined = SHOP.replace("2026-03-15.\n\n", "2026-03-15. ", 1)
        result = self.ask({"shop.txt": joined}, "Am I required to have a cash register?")
        self.assertNotIn("below 20 000", result.answer)

    def test_without_a_word_of_duty_the_question_words_decide(self):
        result = self.ask({"shop.txt": SHOP}, "Who services a cash register?")
        self.assertIn("serviced by an approved technician", result.answer.split("\n")[0])


class PointsBackTest(ExtractiveTest):
    def test_a_sentence_that_points_back_is_quoted_with_the_one_before(self):
        text = ("# Limits\n\nAfter sales pass 20 000 the exemption ends two months later. "
                "In this time you must buy a register and report it to the tax office.\n")
        result = self.ask({"l.md": text}, "When must I report the register to the tax office?")
        first = result.answer.split("\n")[0]
        self.assertIn("After sales pass 20 000 the exemption ends two months later. In this time", first)
        self.assertIn("[l.md:3-3]", first)

    def test_the_sentence_before_adds_no_score(self):
        # the second paragraph's first sentence holds as many question words as the pair of the
        # first paragraph would together; only the pointing sentence's own words count, so the
        # sentence that holds both question words on its own comes first
        text = ("# Notes\n\nThe backup runs nightly. This copies the database.\n\n"
                "A nightly backup keeps seven copies.\n")
        result = self.ask({"n.md": text}, "nightly backup copies")
        self.assertTrue(result.answer.startswith("- A nightly backup keeps seven copies. [n.md:5-5]"),
                        result.answer)

    def test_polish_pointing_words(self):
        text = ("# Kasa\n\nPo przekroczeniu limitu 20 000 zł zwolnienie traci moc po dwóch miesiącach. "
                "W tym czasie trzeba kupić kasę i zgłosić ją do urzędu skarbowego.\n")
        result = self.ask({"k.md": text}, "Kiedy trzeba zgłosić kasę do urzędu?")
        self.assertIn("Po przekroczeniu limitu 20 000 zł", result.answer.split("\n")[0])


    def test_a_sentence_saying_it_works_the_same_way_is_quoted_with_what_it_compares(self):
        # 'Tak samo działa urlresolver!' ("the urlresolver works the same way") says nothing alone
        text = ("# Django\n\nListonosz porównuje każdy numer domu z adresem na kopercie. "
                "Tak samo działa urlresolver!\n")
        result = self.ask({"d.md": text}, "jak działa urlresolver")
        self.assertTrue(result.answer.startswith("- Listonosz porównuje każdy numer domu z adresem na kopercie. "
                                                 "Tak samo działa urlresolver!"), result.answer)


class IndexedLanguageTest(ExtractiveTest):
    def test_a_short_unit_is_stemmed_as_its_fragment_was(self):
        # 'Kasy.' alone reads as no language; in a Polish fragment it is stemmed as Polish and
        # so meets 'kasę' of the question
        text = ("Ta notatka jest o tym, jak się prowadzi sprzedaż w sklepie i kto ją sprawdza.\n\n"
                "Kasy.\n")
        result = self.ask({"k.txt": text}, "kasę")
        self.assertIn("- Kasy. [k.txt:3-3]", result.answer)


class FileNameWordTest(ExtractiveTest):
    def test_a_file_name_is_not_met_by_another_files_extension(self):
        text = ("# Files\n\n`django-admin.py` is a script that creates folders and files for you.\n\n"
                "`manage.py` is a script that helps with the management of the site.\n")
        result = self.ask({"f.md": text}, "What is manage.py for?")
        self.assertTrue(result.answer.startswith("- `manage.py` is a script that helps"), result.answer)


class SectionHeadingTest(ExtractiveTest):
    def test_the_heading_over_a_unit_frames_it(self):
        # the second section's sentence holds two question words itself (command, models); the
        # first section's sentence holds none, but its heading holds four: half a point each,
        # and its inline command answers a question asking for one
        text = ("# Guide\n\n## Create the database tables for your models\n\n"
                "Django writes them when you run `python manage.py migrate`.\n\n## Shell\n\n"
                "The shell command lists the models of your app.\n")
        result = self.ask({"g.md": text}, "which command creates the database tables for my models")
        self.assertTrue(result.answer.startswith("- Django writes them when you run `python manage.py migrate`."),
                        result.answer)


    def test_the_pages_title_frames_no_unit_below_a_section(self):
        # both sentences hold 'static files'; the page's title holds 'Django project' too, but it
        # frames every unit of its page alike: the definition on the other page answers
        files = {"project.md": "# Django project static files\n\n## Settings\n\n"
                               "Add the static files folder at the end of the settings.\n",
                 "assets.md": "# Assets\n\nStatic files are your CSS and images.\n"}
        result = self.ask(files, "What counts as static files in a Django project?")
        self.assertTrue(result.answer.startswith("- Static files are your CSS and images. [assets.md:3-3]"),
                        result.answer)


class CaptionFrameTest(ExtractiveTest):
    def test_a_caption_over_code_frames_it_as_a_heading_does(self):
        # the second unit holds 'server' in its text and 'browser' only in the caption over its
        # address; matched as text, the caption put the address before the command that starts
        # the server; as a heading's words, half a point, the command comes first
        text = ("# Server\n\n## Starting the server\n\nIn the console, start the server by running:\n\n"
                "{% filename %}command-line{% endfilename %}\n\n```\n$ python manage.py runserver\n```\n\n"
                "The server then answers at this address:\n\n{% filename %}browser{% endfilename %}\n\n"
                "```\nhttp://127.0.0.1:8000/\n```\n")
        result = self.ask({"s.md": text}, "how do I start the server and see my site in the browser")
        self.assertTrue(result.answer.startswith("- In the console, start the server by running: [s.md:5-11]"),
                        result.answer)


    def test_a_name_of_the_question_in_a_caption_counts_as_the_units_own(self):
        # 'PythonAnywhere' is a name the question writes; the caption over the second command
        # names the place it runs, as a file name names what a listing holds: a full point,
        # where a label such as 'laptop console' frames with half
        text = ("# Deploy\n\n## Run it\n\nRun the helper tool on your laptop like this:\n\n"
                "{% filename %}laptop console{% endfilename %}\n\n```\n$ helper --local\n```\n\n"
                "Use the helper tool there:\n\n{% filename %}PythonAnywhere console{% endfilename %}\n\n"
                "```\n$ pa_autoconfigure_django.py\n```\n")
        result = self.ask({"d.md": text}, "How do I run the helper tool on PythonAnywhere?")
        self.assertTrue(result.answer.startswith("- Use the helper tool there: [d.md:13-19]"), result.answer)


class ReleaseNotesTest(ExtractiveTest):
    def test_a_changelogs_item_gives_way_to_the_page_that_explains(self):
        # the changelog's item holds all four question words (4 points), the guide's sentence
        # three and its heading the fourth (3.5): as history, the item scores half, and the
        # guide comes first
        files = {"CHANGELOG.md": "# Changelog\n\n## v1.4.0\n\n* Clean old builds out of the cache "
                                 "folder faster (#351)\n* Faster installs\n",
                 "guide.md": "# Guide\n\n## Cache\n\nRemove old builds from it with the clean command.\n"}
        result = self.ask(files, "What cleans old builds from the cache?")
        self.assertTrue(result.answer.startswith("- Remove old builds from it with the clean command. [guide.md:5-5]"),
                        result.answer)

    def test_release_headings(self):
        for heading in ("v1.4.0", "Release v2.6.30", "0.61.1", "[1.2.3] - 2019-02-15", "Wersja 2.1",
                        "v2.0.1 (2024-05-01)"):
            self.assertIsNotNone(docs_qa._RELEASE_HEADING.match(heading), heading)
        for heading in ("Version History", "Python 3.10+", "Step 2", "Django 4.2 setup", "1.2 Installation",
                        "2.1 Zakres stosowania", "2024-03-15"):
            self.assertIsNone(docs_qa._RELEASE_HEADING.match(heading), heading)


class OverlapJoinTest(ExtractiveTest):
    def test_two_quotes_sharing_a_sentence_are_one_bullet(self):
        # 'This is why…' is quoted with the sentence it points back to, and again with the next
        # one, which names the command: one bullet of three sentences, not two repeating one
        text = ("# Static files\n\nServers cache static files such as CSS so that pages load fast. "
                "This is why after a change of CSS you run one more command on the server. "
                "Its name is `collectstatic`.\n\nOther notes on templates follow here.\n")
        result = self.ask({"s.md": text}, "I changed the CSS, what command do I run on the server?")
        first = result.answer.split("\n")[0]
        self.assertTrue(first.startswith("- Servers cache static files") and "`collectstatic`" in first, result.answer)
        self.assertEqual(result.answer.count("This is why"), 1, result.answer)


class DefinitionFrameTest(ExtractiveTest):
    def test_the_words_of_what_does_x_mean_are_not_its_topic(self):
        # the second sentence says 'means' as the question does; the first defines pk
        english = ("# Terms\n\nIn Django, pk is short for primary key, the number of each record.\n\n"
                   "`<int:pk>` means that Django expects a number here and passes it on.\n")
        slovak = ("# Pojmy\n\nV Djangu je pk skratka pre primárny kľúč, číslo každého záznamu.\n\n"
                  "`<int:pk>` znamená, že Django tu očakáva číslo a posunie ho ďalej.\n")
        for text, question, first in ((english, "What does pk mean in Django?", "- In Django, pk is short"),
                                      (slovak, "Čo znamená pk v Djangu?", "- V Djangu je pk skratka")):
            result = self.ask({"t.md": text}, question)
            self.assertTrue(result.answer.startswith(first), result.answer)

    def test_a_definition_names_its_term_before_its_copula(self):
        # 'If there is no post with the given pk': a copula and the term among the first words,
        # but the sentence defines nothing; it came first, being earlier
        text = ("# Terms\n\nIf there is no post with the given pk, we show an error page.\n\n"
                "The pk of a post is short for primary key, a number given to each post.\n")
        answer = self.ask({"t.md": text}, "What is the pk of a post?").answer
        self.assertTrue(answer.startswith("- The pk of a post is short for primary key"), answer)


class TroubleshootingTest(ExtractiveTest):
    """A question quoting or naming an error gets the fix next to the error's description."""

    def test_the_fix_after_the_symptom_in_one_paragraph(self):
        text = ("# Templates\n\nIf you still get the error `TemplateDoesNotExist`, restart the server. "
                "Stop it with Ctrl+C and start it again with `python manage.py runserver`.\n\n"
                "Templates live in the templates folder of the app and the error page lists them.\n")
        result = self.ask({"t.md": text}, "I get TemplateDoesNotExist although the template file exists")
        self.assertIn("Stop it with Ctrl+C and start it again with `python manage.py runserver`.",
                      result.answer.split("\n")[0])

    def test_the_fix_before_the_symptom(self):
        text = ("# Lookups\n\nNote: there are two underscore characters between title and contains. "
                "With only one you get an error like FieldError: Cannot resolve keyword title_contains.\n\n"
                "You can also list all published posts with a filter on the keyword date.\n")
        result = self.ask({"l.md": text}, "The shell says FieldError: Cannot resolve keyword title_contains")
        self.assertTrue(result.answer.startswith("- Note: there are two underscore characters"), result.answer)

    def test_an_error_shown_as_output_is_followed_by_its_explanation(self):
        text = ("# Shell\n\nList the posts:\n\n```python\n>>> Post.objects.all()\n"
                "NameError: name 'Post' is not defined\n```\n\n"
                "We forgot to import it first: `from blog.models import Post`.\n\n"
                "The shell also shows every post and its name when you list the posts again.\n")
        result = self.ask({"s.md": text}, "NameError: name 'Post' is not defined in the shell")
        self.assertTrue(result.answer.startswith("- We forgot to import it first: `from blog.models import Post`."),
                        result.answer)

    def test_the_fix_a_few_short_sentences_after_the_error(self):
        # four short sentences stand between the error and the command that fixes it; they
        # are three lines from the error, so the command is still its fix
        text = ("# Shell\n\nList the posts:\n\n```python\n>>> Post.objects.all()\n"
                "NameError: name 'Post' is not defined\n```\n\n"
                "Oops! An error. It says there is no such thing. Right, we forgot something first!\n\n"
                "```python\n>>> from blog.models import Post\n```\n")
        result = self.ask({"s.md": text}, "NameError: name 'Post' is not defined in the shell")
        self.assertIn("from blog.models import Post", result.answer.split("\n- ")[0])

    def test_the_fix_after_an_error_quoted_in_a_note_across_blank_lines(self):
        # the error is indented code inside a quoted note; two blank lines (one of them '> ')
        # stand between it and the sentence that introduces the fix, which ends with its
        # caption ('…: {% filename %}command-line{% endfilename %}'): the fix is quoted as a
        # command under its caption, not the note's text again nor the paragraph before it
        text = ("# Virtual environment\n\nCall it `myvenv`. Keep the name short and lowercase.\n\n"
                "> **NOTE:** Some versions of Debian show this error:\n>\n"
                "> {% filename %}command-line{% endfilename %}\n>\n"
                ">     The virtual environment was not created because ensurepip is not available.\n"
                ">     \n\n"
                "In this case install the package `python3-venv`: {% filename %}command-line{% endfilename %}\n\n"
                "    $ sudo apt install python3-venv\n")
        result = self.ask({"v.md": text}, "creating the virtualenv says ensurepip is not available")
        first = result.answer.split("\n- ")[0]
        self.assertTrue(first.startswith("- In this case install the package `python3-venv`: [v.md:12-14]"),
                        result.answer)
        self.assertIn("  command-line\n", first)
        self.assertIn("$ sudo apt install python3-venv", first)
        self.assertNotIn("{% filename %}", first)

    def test_what_is_wrong_asks_for_the_fix(self):
        # the question pastes the error and asks what is wrong, naming no error: the sentence
        # after the error explains it, and is quoted before the sentences that only share the
        # question's words (without 'wrong' as an error word it was not quoted at all)
        text = ("# Path parameters\n\nDeclare the type of a path parameter such as item_id in the function.\n\n"
                "## Data validation\n\nIf you open /items/foo in the browser you get this error:\n\n"
                "```JSON\n{\"detail\": [{\"type\": \"int_parsing\", \"loc\": [\"path\", \"item_id\"], "
                "\"msg\": \"Input should be a valid integer\", \"input\": \"foo\"}]}\n```\n\n"
                "That is because the path parameter had the value foo, which is not an int.\n\n"
                "## Documentation\n\nThe items path and its item_id parameter are documented for you. "
                "The detail of every path is shown in the browser.\n\n## Types\n\nAn int parameter such as "
                "item_id gets its type from the path. A valid integer in the path is given to the function as an int.\n")
        result = self.ask({"p.md": text}, 'Opening /items/foo gives me {"detail":[{"type":"int_parsing","loc":'
                          '["path","item_id"],"msg":"Input should be a valid integer"}]}. What is wrong?')
        self.assertIn("- That is because the path parameter had the value foo, which is not an int. [p.md:13-13]",
                      result.answer)

    def test_a_question_without_an_error_is_not_widened(self):
        text = ("# Shell\n\nThe shell lists posts with a query. Stop it with Ctrl+D.\n")
        result = self.ask({"s.md": text}, "how does the shell list posts with a query")
        self.assertTrue(result.answer.startswith("- The shell lists posts with a query."), result.answer)


class DateTest(unittest.TestCase):
    """What counts as a date, and as a deadline, in the three languages (text_has_date,
    text_has_deadline): a number alone is neither."""

    def test_dates_in_three_languages(self):
        for text in ("do 20 maja", "płaci je do 20. dnia następnego miesiąca", "w 2026 r.", "15.03.2026",
                     "2026-03-15", "do 31. decembra", "v piatok", "by March 15", "the 20th of April",
                     "do końca lutego", "until the end of the month", "due in May", "od maja", "runs at 02:00",
                     "o 14:30", "at 2 pm"):
            self.assertTrue(docs_qa.text_has_date(text), text)

    def test_amounts_versions_and_a_verb_like_a_month_are_no_date(self):
        for text in ("do 60 000 zł przychodu — 498,35 zł miesięcznie", "version 4.9.1", "from 2000 zł",
                     "Oni mają 5 kotów", "march on", "VAT-26 i JPK_V7", "9% dochodu", "127.0.0.1:8000",
                     "host:8080", "ratio 3:2:1", "12:30:45.5 s"):
            self.assertFalse(docs_qa.text_has_date(text), text)

    def test_a_deadline_is_a_date_or_a_duration_after_a_word_of_time_limit(self):
        for text in ("płaci je do 20. dnia następnego miesiąca", "Termin: 30 kwietnia", "no later than 15 March",
                     "w terminie 7 dni od dnia zlecenia", "within 14 days of the invoice", "najneskôr do 25. marca",
                     "składa VAT-R przed dniem wykonania pierwszej czynności", "before the first sale"):
            self.assertTrue(docs_qa.text_has_deadline(text), text)
        for text in ("do 60 000 zł", "Od 2022 r. zależy od formy", "Przez pierwsze 6 miesięcy działalności",
                     "do limitu (w 2026 r. 14 100 zł", "on 2026-03-15"):
            self.assertFalse(docs_qa.text_has_deadline(text), text)


class HowLongTest(ExtractiveTest):
    """'Jak długo…', 'Ako dlho…', 'How long…' ask for a span of time; the frame's 'długo' is no
    topic word (its stem is that of 'długi', debts)."""

    FILES = {"dlugi.md": "# Ulga na złe długi\n\nUlga na złe długi pozwala odzyskać VAT z faktury, "
                         "której nabywca nie zapłacił.\n",
             "ksef.md": "# KSeF\n\n## Wystawianie\n\nFaktury w KSeF wystawia się w formacie XML i "
                        "przechowuje w systemie.\n\n## Archiwum\n\nFaktury w KSeF są dostępne przez 10 lat "
                        "od końca roku wystawienia.\n",
             "vat.md": "# VAT\n\nStawka VAT wynosi 23 %.\n"}

    def test_a_how_long_question_quotes_the_span_of_time_first(self):
        result = self.ask(self.FILES, "Jak długo przechowywać faktury w KSeF?")
        first = result.answer.split("\n")[0]
        self.assertIn("przez 10 lat", first)      # once the 'długi' page's line, holding 'dlug' too

    def test_durations_in_three_languages(self):
        for text in ("przez 10 lat", "z upływem 5 lat", "within 14 days", "30 dni", "na 2 roky"):
            self.assertTrue(docs_qa.text_has_duration(text), text)
        for text in ("w 2026 r.", "10 zł", "version 3"):
            self.assertFalse(docs_qa.text_has_duration(text), text)


class HowMuchTest(ExtractiveTest):
    """'Ile kosztuje…', 'Koľko…', 'How much…', 'stawka…' ask for an amount: a number with a
    currency or a percent."""

    def test_a_how_much_question_quotes_the_amount_first(self):
        files = {"wis.md": "# WIS\n\nWniosek o WIS składa się elektronicznie przez PUESC.\n\n"
                           "Od wniosku o WIS pobiera się opłatę 40 zł.\n",
                 "vat.md": "# VAT\n\nFaktury wystawia się w KSeF.\n"}
        for question in ("Ile kosztuje wniosek o WIS?", "Jaka jest opłata za wniosek o WIS?"):
            first = self.ask(files, question).answer.split("\n")[0]
            self.assertIn("40 zł", first, question)

    def test_a_limit_or_threshold_asks_for_the_amount(self):
        # both sentences hold 'ryczałt' and 'przychody'; only the second says how much
        files = {"ryczalt.md": "# Ryczałt\n\nRyczałt od przychodów to uproszczona forma opodatkowania.\n\n"
                               "Ryczałt mogą wybrać osoby, których przychody w poprzednim roku nie "
                               "przekroczyły 2 000 000 euro.\n"}
        for question in ("Jaki jest limit przychodów dla ryczałtu?", "Jaki jest próg przychodów dla ryczałtu?"):
            first = self.ask(files, question).answer.split("\n")[0]
            self.assertIn("2 000 000 euro", first, question)

    def test_the_verb_of_the_frame_is_not_a_word_of_the_topic(self):
        # 'wynosi' of 'Ile wynosi…' asks how much; a sentence saying 'wynosi' without an amount
        # held one word more than the one giving the rate, and came first
        files = {"vat.md": "# VAT\n\nStawka podstawowa VAT wynosi tyle, ile stanowi ustawa.\n\n"
                           "Stawka podstawowa VAT: 23 % od 2011 r.\n",
                 "ksef.md": "# KSeF\n\nFaktury wystawia się w KSeF.\n"}
        first = self.ask(files, "Ile wynosi stawka podstawowa VAT?").answer.split("\n")[0]
        self.assertIn("23 %", first)

    def test_amounts_in_three_languages(self):
        for text in ("opłatę 40 zł", "498,35 zł miesięcznie", "stawka 23 %", "€40", "poplatok 10 eur",
                     "9% dochodu", "stojí 100 Kč", "10 €"):
            self.assertTrue(docs_qa.text_has_amount(text), text)
        for text in ("w 2026 r.", "3 miesiące", "version 4.9", "10 posts per page"):
            self.assertFalse(docs_qa.text_has_amount(text), text)

    def test_a_number_without_a_currency_is_no_amount(self):
        # both sentences hold 'wniosek' and 'WIS'; '3 miesięcy' is a span of time, not a price,
        # so the earlier sentence keeps first place
        files = {"wis.md": "# WIS\n\nWniosek o WIS składa się elektronicznie przez PUESC.\n\n"
                           "Wniosek o WIS rozpatruje się w 3 miesiące.\n",
                 "vat.md": "# VAT\n\nFaktury wystawia się w KSeF.\n"}
        first = self.ask(files, "Ile kosztuje wniosek o WIS?").answer.split("\n")[0]
        self.assertIn("elektronicznie", first)


class WhoTest(ExtractiveTest):
    def test_a_who_question_quotes_the_line_naming_a_person_first(self):
        # both sentences hold 'projekt' and 'Atlas'; only the second names a person, and the
        # earlier one came first on a tie
        files = {"atlas.md": "# Projekty\n\nProjekt Atlas beží na serveroch katedry.\n\n"
                             "Za projekt Atlas zodpovedá doc. Peter Novák.\n",
                 "ine.md": "# Iná práca\n\nKľúčové slová: rozpoznávanie reči\n"}
        first = self.ask(files, "Kto vedie projekt Atlas?").answer.split("\n")[0]
        self.assertIn("Peter Novák", first)


class ExampleParagraphTest(ExtractiveTest):
    def test_a_paragraph_giving_an_example_is_quoted_with_the_sentence_it_exemplifies(self):
        # one paragraph named the package, the next ('E.g. …') the command: each alone held half
        # of the question, and a page on another package's install quoted first
        files = {"models.md": "# Response model\n\nYou can declare a model with an email field.\n\n"
                              "To use `EmailStr`, first install `email_validator`.\n\n"
                              "E.g. `pip install email-validator` or `pip install pydantic[email]`.\n",
                 "forms.md": "# Forms\n\nThe `python-multipart` package is installed with the framework when "
                             "you run `pip install framework`.\n\nA model can hold form fields.\n"}
        first = self.ask(files, "EmailStr in my user model doesn't work, what package do I have to install?"
                         ).answer.split("\n- ")[0]
        self.assertIn("first install `email_validator`. E.g. `pip install email-validator`", first)
        self.assertIn("[models.md:5-7]", first)
        # in Polish too: 'Np.' opens the example
        files = {"n.md": "# Poczta\n\nAby wysłać pocztę, zainstaluj pakiet `mailer`.\n\nNp. `pip install mailer`.\n\n"
                         "Pakiet `mailer` wysyła też wiadomości z załącznikami.\n"}
        first = self.ask(files, "Jak zainstalować pakiet do wysyłania poczty?").answer.split("\n- ")[0]
        self.assertIn("zainstaluj pakiet `mailer`. Np. `pip install mailer`.", first)


class WhereTest(ExtractiveTest):
    NOHUP = {"nohup.md": "# nohup\n\nRun COMMAND, ignoring hangup signals.\n\nIf standard input is a terminal, "
                         "redirect it from an unreadable file. If standard output is a terminal, append output to "
                         "'nohup.out' if possible. If standard error is a terminal, redirect it to standard output.\n",
             "tee.md": "# tee\n\nCopy standard input to each FILE, and also to standard output.\n"}

    def test_a_where_question_opens_with_the_sentence_naming_a_place(self):
        # three sentences hold 'terminal', 'redirect' or 'output' as often; the one naming the
        # file the output goes to answers 'where', and the one about standard error came first
        first = self.ask(self.NOHUP, "started a job with nohup from my terminal and didn't redirect anything. "
                                     "where did its output go?").answer.split("\n")[0]
        self.assertIn("nohup.out", first)

    def test_where_to_click_gets_what_to_click_not_a_file_named_in_passing(self):
        # the intro of a list of errors, naming setup.py, earned a place's point as if it said where
        # to click, and was quoted with the whole list
        files = {"token.md": "# Signing up\n\nWhen you have signed up, open your Account page.\n\n"
                             "Then select the tab named API token and hit the button Create new API token.\n",
                 "errors.md": "# Errors\n\nIf you see an error while running the `setup.py` script, here are a few "
                              "common causes:\n\n- Forgetting to create your API token.\n- A mistake in your URL.\n",
                 "web.md": "# Web\n\nClick through to the Web page to get a link to your site.\n"}
        answer = self.ask(files, "Where do I click to get an API token?").answer
        self.assertIn("select the tab named API token", answer)
        self.assertNotIn("[errors.md:3-6]", answer)     # the intro naming setup.py earned a place's point

    def test_where_asks_for_a_place_only_as_a_question_word(self):
        for asked in ("Where do I click to get an API token?", "Gdzie są zapisywane logi?", "kde nájdem nastavenia",
                      "So where does the config go?", "In which file is the port set?"):
            self.assertTrue(docs_qa._question_wants(asked).place, asked)
        for relative in ("Which variable changes the folder where pyenv keeps versions?",
                         "can cp skip files where the copy is as recent?"):
            self.assertFalse(docs_qa._question_wants(relative).place, relative)
        for place in ("append output to 'nohup.out'", "installed under /usr/lib/node_modules", "see ~/.npmrc",
                      "open https://example.org"):
            self.assertTrue(docs_qa.text_has_place(place), place)
        for click in ("select the tab named API token", "kliknij przycisk Zapisz", "stlač tlačidlo Reload"):
            self.assertTrue(docs_qa.text_has_place(click, click=True), click)
            self.assertFalse(docs_qa.text_has_place(click), click)     # a where-question not about clicking
        self.assertTrue(docs_qa._question_wants("Where do I click to get an API token?").click)
        self.assertFalse(docs_qa._question_wants("Where does the output go?").click)
        for other in ("e.g. this one", "version 4.2.5 is out", "Django is a framework."):
            self.assertFalse(docs_qa.text_has_place(other), other)


class WhoMustTest(ExtractiveTest):
    def test_who_must_asks_for_a_kind_of_party_not_a_name(self):
        # 'Kto musi…' is answered by who is obliged (a taxpayer who…); a sentence naming an
        # office ('Urząd Skarbowy') is no person, and it came first as one
        files = {"vatr.md": "# VAT-R\n\nVAT-R złożyć powinien podatnik czynny.\n\n"
                            "VAT-R można złożyć w okienku, które prowadzi Urząd Skarbowy Warszawa.\n",
                 "ine.md": "# Inne\n\nFaktury wystawia się w KSeF.\n"}
        first = self.ask(files, "Kto musi złożyć VAT-R?").answer.split("\n")[0]
        self.assertIn("powinien podatnik czynny", first)


class JoinedCodeTest(ExtractiveTest):
    """A code joined by '-' or '_' (VAT-R, GTU_12, post_detail) is held by a unit only where
    its parts stand together, not by a unit holding one of them."""

    def test_a_joined_code_is_not_held_by_its_parts_apart(self):
        # the first sentence holds 'VAT' and the 'r' of '2026 r.'; the second names VAT-R
        files = {"vat.md": "# VAT\n\nLimit zwolnienia z VAT wynosi od 2026 r. 240 000 zł.\n\n"
                           "Zgłoszenie VAT-R składa się do urzędu skarbowego.\n",
                 "ksef.md": "# KSeF\n\nFaktury wystawia się w KSeF.\n"}
        first = self.ask(files, "VAT-R").answer.split("\n")[0]
        self.assertIn("Zgłoszenie VAT-R", first)

    def test_a_path_is_held_only_where_its_folders_and_name_stand_together(self):
        # 'blog/urls.py' holds 'urls' but is not 'mysite/urls.py'; it came first, on the
        # strength of its other words
        files = {"urls.md": "# URL\n\nDo súboru `blog/urls.py` pridaj riadok pre aplikáciu blog:\n\n"
                            "```python\npath('', views.post_list),\n```\n\n"
                            "Súbor `mysite/urls.py` pre aplikáciu blog má vyzerať takto:\n\n"
                            "```python\npath('', include('blog.urls')),\n```\n",
                 "ine.md": "# Iné\n\nŠablóny sú v priečinku templates.\n"}
        first = self.ask(files, "Čo mám dopísať do mysite/urls.py pre aplikáciu blog?").answer.split("\n")[0]
        self.assertIn("mysite/urls.py", first)

    def test_a_code_in_a_table_row_is_held_only_by_its_own_row(self):
        files = {"gtu.md": "# GTU\n\n| Sytuacja | Oznaczenie |\n| --- | --- |\n| usługi księgowe | GTU_12 |\n"
                           "| transport drogowy | GTU_13 |\n",
                 "vat.md": "# VAT\n\nStawka VAT wynosi 23 %.\n"}
        answer = self.ask(files, "GTU_12").answer
        self.assertIn("GTU_12", answer)
        self.assertNotIn("GTU_13", answer)


class CorpusRegressionTest(TempDirTest):
    def ask_corpus(self, question: str, *flags: str, env: dict | None = None) -> dict:
        """Return the envelope of the CLI asked question over the repo's corpus, extractively."""
        run = run_cli(question, "--docs", "corpus", "--cache-dir", self.cache, "--extractive", "--json",
                      *flags, env=env)
        return json.loads(run.stdout)

    def test_the_fiscal_register_question_cites_its_threshold(self):
        """The repo's corpus: 'Czy muszę mieć kasę fiskalną?' once opened with 'Nie muszą.' (a
        reply about KSeF) and showed no threshold; it must cite kasy-fiskalne.txt with the
        20 000 zł limit."""
        envelope = self.ask_corpus("Czy muszę mieć kasę fiskalną?", env={"EMBED_MOCK": "1"})
        self.assertEqual(envelope["status"], "ok", envelope)
        lines = [line for line in envelope["answer"].split("\n") if "20 000 zł" in line]
        self.assertTrue(any("[podatki/kasy-fiskalne.txt:" in line for line in lines), envelope["answer"])
        self.assertFalse(envelope["answer"].startswith("- Nie muszą."), envelope["answer"])

    def test_the_readmes_first_question_quotes_the_monthly_deadline(self):
        """'do kiedy składam JPK', the README's first command, with BM25 alone: the section
        'Termin podstawowy: 25. dzień następnego miesiąca' answers it. When every heading's
        words weighed as a title's, the sibling section 'JPK_V7K — rozliczenie kwartalne'
        (the title's JPK_V7K) pushed it out of the five sources."""
        envelope = self.ask_corpus("do kiedy składam JPK", "--no-embed")
        self.assertTrue(envelope["answer"].startswith("- JPK_V7M składa się co miesiąc, do 25. dnia "
                                                      "miesiąca następującego"), envelope["answer"])
        self.assertIn("[podatki/jpk-v7-terminy.md:22-22]", envelope["answer"])

    def test_the_health_contribution_deadline_is_quoted(self):
        """'Do kiedy muszę zapłacić składkę zdrowotną?' (issue 31) once quoted a table of amounts
        (any number counted as a date) and left out the section '## Terminy', whose line 40
        says 'płaci je do 20. dnia następnego miesiąca': three other sections of the page,
        repeating the question's words, filled its three places among the sources."""
        envelope = self.ask_corpus("Do kiedy muszę zapłacić składkę zdrowotną?", "--no-embed")
        self.assertIn("płaci je do 20. dnia następnego miesiąca. [podatki/skladka-zdrowotna.md:40-40]",
                      envelope["answer"])
        self.assertNotIn("| do 60 000 zł | 498,35 zł |", envelope["answer"])

    def test_a_question_opening_with_aku_is_not_refused_for_it(self):
        """'Akú známku dostal Dominik Švec?': 'akú', a form of the question word 'aký' the
        stop words lacked, weighed as a word no page holds, and with 'známku' it took the
        question under the gate; the thesis page names its author."""
        envelope = self.ask_corpus("Akú známku dostal Dominik Švec?", "--no-embed")
        self.assertEqual(envelope["status"], "ok", envelope)
        self.assertIn("[wiki/prace/2021-svec.md:", envelope["answer"])
        self.assertNotIn("aku", docs_qa.text_query_counts("Akú známku dostal Dominik Švec?"))

    def test_the_thesis_grade_question_cites_the_grade(self):
        """'Aké hodnotenie dostala práca Jána Holpa?' (issue 33): the grade, 'hodnotením B', is
        in the thesis page's section 'Obhajoba', which names neither Holp nor the thesis; the
        page names its author in another section."""
        envelope = self.ask_corpus("Aké hodnotenie dostala práca Jána Holpa?", "--no-embed")
        first = envelope["answer"].split("\n")[0]
        self.assertIn("hodnotením B", first)
        self.assertIn("[wiki/prace/2024-holp.md:19-19]", first)

    def test_the_fiscal_register_question_cites_its_threshold_with_bm25_alone(self):
        """As the README's first command runs it with no model server: BM25 alone ranks
        other pages' 'kasy fiskalnej' above the note's later paragraphs, and the 20 000 zł
        line, which names no word of the question, is quoted under the note's first line."""
        envelope = self.ask_corpus("Czy muszę mieć kasę fiskalną?", "--no-embed")
        self.assertEqual(envelope["status"], "ok", envelope)
        lines = [line for line in envelope["answer"].split("\n") if "20 000 zł" in line]
        self.assertTrue(any("[podatki/kasy-fiskalne.txt:" in line for line in lines), envelope["answer"])


if __name__ == "__main__":
    unittest.main()


class CommandQuestionTest(ExtractiveTest):
    def test_a_command_is_code_with_words_not_a_name_in_backticks(self):
        # both sentences hold 'create' and 'environment' and name something in backticks; only
        # the second names a command, which a "how do I" question asks for
        text = ("# Environment\n\nChoose the folder where you want to create the `venv` environment.\n\n"
                "To create the environment, run `python -m venv myvenv` in that folder.\n")
        result = self.ask({"e.md": text}, "How do I create the environment?")
        self.assertIn("python -m venv myvenv", result.answer.split("\n")[0])

    def test_a_line_ending_in_a_colon_inside_raw_tags_introduces_its_code(self):
        # '{% raw %}...:{% endraw %}' ends with a colon as the page shows it: the code below it
        # (under a file-name caption) is quoted with it
        text = ("# Links\n\n{% raw %}Change the title so that it links to the detail page:{% endraw %}\n\n"
                "{% filename %}post_list.html{% endfilename %}\n\n"
                "```html\n<a href=\"{% url 'post_detail' pk=post.pk %}\">{{ post.title }}</a>\n```\n")
        result = self.ask({"l.md": text}, "how do I link the title to the detail page")
        first_unit = result.answer.split("\n- ")[0]
        self.assertIn("{% url 'post_detail' pk=post.pk %}", first_unit)
        self.assertNotIn("{% raw %}", first_unit)


class WhyQuestionTest(ExtractiveTest):
    def test_a_why_question_gets_the_reason_not_the_command(self):
        # both units hold the three question words; 'command' would ask for code, but 'why'
        # asks for the reason, which the sentence with 'because' gives
        text = ("# Start\n\nType the command with a dot at its end:\n\n"
                "    django-admin startproject mysite .\n\n"
                "The dot at the end matters because it tells the command to use the current folder.\n")
        result = self.ask({"s.md": text}, "Why is there a dot at the end of the command?")
        self.assertIn("because it tells the command", result.answer.split("\n")[0])

    def test_a_reason_after_the_command_it_explains_is_quoted_in_other_words(self):
        # the reason says 'period', not 'dot': it holds no question word, but it follows the
        # command the question names, blank line and code between (a quoted note, as in the tutorials)
        for why, intro, reason in (
                ("Why is there a dot at the end of the widget command?",
                 "In the console run the widget command. Don't forget the dot at the end:",
                 "> The period is needed because it tells the tool to use the current folder."),
                ("Dlaczego na końcu polecenia widget jest kropka?",
                 "W konsoli uruchom polecenie widget. Nie zapomnij o kropce na końcu polecenia:",
                 "> Ten znak jest potrzebny, ponieważ każe użyć bieżącego katalogu.")):
            text = f"# Start\n\n{intro}\n\n```\nwidget init .\n```\n\n{reason}\n"
            with self.subTest(why):
                answer = self.ask({"s.md": text}, why).answer
                self.assertIn(reason[2:], answer)

    # a topic sentence, the reason or purpose after it in words the question does not use, three
    # sentences that hold the question's words as well, and the reason's text
    CACHE_EN = ("Let's create a widget cache first. It keeps the downloads of every project apart. Neat, right?",
                ("Creating the widget cache may fail on old systems.", "The widget cache is created in your home folder.",
                 "If the widget cache cannot be created, delete the old folder."),
                "It keeps the downloads of every project apart.")
    CACHE_PL = ("Najpierw utworzymy pamięć podręczną widżetu. Oddziela ona pobrane pliki każdego projektu. Sprytne?",
                ("Utworzenie pamięci podręcznej widżetu może się nie udać.",
                 "Pamięć podręczna widżetu leży w katalogu domowym.",
                 "Jeśli pamięci podręcznej widżetu nie da się utworzyć, usuń stary katalog."),
                "Oddziela ona pobrane pliki każdego projektu.")
    CACHE_SK = ("Najprv vytvoríme vyrovnávaciu pamäť widgetu. Oddelí stiahnuté súbory každého projektu. Šikovné?",
                ("Vytvorenie vyrovnávacej pamäte widgetu môže zlyhať.",
                 "Vyrovnávacia pamäť widgetu leží v domovskom priečinku.",
                 "Ak sa vyrovnávacia pamäť widgetu nedá vytvoriť, zmaž starý priečinok."),
                "Oddelí stiahnuté súbory každého projektu.")

    def assert_reason_among_the_bullets(self, cases):
        for (topic, others, reason), question in cases:
            text = "# Cache\n\n" + topic + "\n\n" + "\n\n".join(others) + "\n"
            with self.subTest(question):
                bullets = self.ask({"c.md": text}, question).answer.split("\n")
                self.assertIn(reason, "\n".join(bullets[:3]))

    def test_a_why_question_gets_the_sentence_after_the_one_naming_its_topic(self):
        # the reason names no question word and says no 'because'; it follows the sentence
        # that names the topic, in the same paragraph (en, pl: one rule)
        self.assert_reason_among_the_bullets(((self.CACHE_EN, "Why should I create a widget cache at all?"),
                                              (self.CACHE_PL, "Dlaczego mam utworzyć pamięć podręczną widżetu?")))

    def test_a_what_for_question_gets_the_sentence_after_the_one_naming_its_topic(self):
        # 'po co', 'načo', 'what is X for' ask for a purpose, which prose gives as it gives a reason
        self.assert_reason_among_the_bullets(((self.CACHE_PL, "Po co mi pamięć podręczna widżetu?"),
                                              (self.CACHE_SK, "Načo je vyrovnávacia pamäť widgetu?")))

    def test_the_sentence_after_an_open_quotation_is_not_taken_for_the_reason(self):
        # the letter's next sentence goes on quoting; the explanation of the widget cache comes later
        text = ('# Cache\n\nYou send a letter: "Dear widget, please create a widget cache for me. Send it soon!"\n\n'
                "The widget cache keeps the downloads of every project apart.\n\n"
                "Creating a widget cache takes a second.\n")
        answer = self.ask({"c.md": text}, "Why should I create a widget cache?").answer
        self.assertNotIn("- Send it soon!", answer)


class HowItWorksTest(ExtractiveTest):
    def test_how_does_it_work_asks_for_an_explanation_and_works_is_not_its_topic(self):
        # 'jak działa', 'ako funguje', 'how does X work' open with 'how' but ask for an
        # explanation: a sentence that only says 'działa' beside the name does not outscore the
        # one that explains it (before, 'works' counted as a topic word and the code unit
        # scored a bonus, and the explanation was quoted last)
        cases = (("Urlresolver porównuje adres z listą wzorców i wybiera widok.",
                  "Tak samo działa urlresolver w każdym projekcie.",
                  "Aby sprawdzić urlresolver, wpisz:", "Jak działa urlresolver?"),
                 ("Urlresolver porovná adresu so zoznamom vzorov a vyberie view.",
                  "Rovnako funguje urlresolver v každom projekte.",
                  "Ak chceš skontrolovať urlresolver, napíš:", "Ako funguje urlresolver?"),
                 ("The urlresolver compares the address with a list of patterns and picks a view.",
                  "The urlresolver works the same way in every project.",
                  "To check the urlresolver, type:", "How does the urlresolver work?"))
        for explains, says_works, intro, question in cases:
            text = (f"# URL\n\n{intro}\n\n```\npython manage.py check urlresolver\n```\n\n"
                    f"{explains}\n\n{says_works}\n")
            with self.subTest(question):
                answer = self.ask({"u.md": text}, question).answer
                self.assertIn(explains, answer)
                self.assertLess(answer.index(explains), answer.index(says_works) if says_works in answer else len(answer))


class FolderTreeTest(ExtractiveTest):
    def test_a_folder_tree_is_not_the_command_a_how_question_asks_for(self):
        # the tree's intro holds one more question word; as code it scored the bonus a
        # command gets, and was quoted before the command
        text = ("# App\n\nTo create the app, run:\n\n```\nwidget startapp blog\n```\n\n"
                "Creating the new widget app makes this folder:\n\n```\nblog\n├── widget_app.py\n"
                "└── widget_config.py\n```\n")
        answer = self.ask({"a.md": text}, "how do I create a new widget app").answer
        self.assertTrue(answer.startswith("- To create the app, run: [a.md:3-7]\n```\nwidget startapp blog\n```"), answer)


class OutputShownTest(ExtractiveTest):
    def test_an_output_the_reader_will_see_is_not_the_code_a_how_question_asks_for(self):
        # the error's intro and block hold four question words and took the bonus a command
        # gets: one point more than the sentence that says what to write, and quoted first
        for intro in ("If you open /items/foo, you will see an error:", "If you open /items/foo, you'll get:"):
            text = (f"# Numbers\n\n## Validation\n\n{intro}\n\n```json\n"
                    '{"detail": "item_id should be an integer of at least 1"}\n```\n\n'
                    "To validate it, declare `ge=1`: item_id must then be an integer of at least 1.\n")
            with self.subTest(intro):
                answer = self.ask({"n.md": text}, "How do I validate that item_id is an integer of at least 1?").answer
                self.assertTrue(answer.startswith("- To validate it, declare `ge=1`"), answer)
        # an intro that says what to type keeps its bonus
        text = ("# Numbers\n\n## Validation\n\nTo make item_id an integer of at least 1, your file should look like:\n\n"
                "```python\nitem_id: int = Path(ge=1)\n```\n\n"
                "To validate item_id as an integer of at least 1, mind the types.\n")
        answer = self.ask({"n.md": text}, "How do I validate that item_id is an integer of at least 1?").answer
        self.assertLess(answer.index("Path(ge=1)"), answer.index("mind the types"), answer)


class WholeParagraphIntroTest(ExtractiveTest):
    def test_a_how_question_gets_the_code_whose_paragraph_says_what_it_is_for(self):
        # the first sentence holds the question's words, the last introduces the code; the
        # sentence between says neither: the code came without what it is for, or not at all
        text = ("# Forms\n\nWe add an if tag, which shows the add link only to users who are logged in. "
                "Right now, that is just you! Change the element to look like this:\n\n"
                "```html\n{% if user.is_authenticated %}<a href=\"/new\">+</a>{% endif %}\n```\n\n"
                "The add link opens the form.\n")
        answer = self.ask({"f.md": text}, "How do I hide the add link from visitors who are not logged in?").answer
        self.assertTrue(answer.startswith("- We add an if tag, which shows the add link only to users who are logged in. "
                                          "Right now, that is just you! Change the element to look like this: [f.md:3-7]\n"
                                          "```html\n{% if user.is_authenticated %}"), answer)
        # a question asking for no code keeps the sentence alone
        answer = self.ask({"f.md": text}, "What does the add link open?").answer
        self.assertTrue(answer.startswith("- The add link opens the form."), answer)


class CodeFollowsTest(ExtractiveTest):
    def test_the_variant_right_after_a_quoted_command_comes_with_it(self):
        # the reversed order is asked for in words the second intro and its code do not use
        text = ("# Shell\n\n## Ordering\n\nLet's sort the entries by the time they were made:\n\n"
                "```python\n>>> Post.objects.order_by('created_date')\n```\n\n"
                "Reverse it by adding `-` at the start:\n\n"
                "```python\n>>> Post.objects.order_by('-created_date')\n```\n\n"
                "## Output\n\nYou will see a list:\n\n```\n<QuerySet [<Hello>]>\n```\n")
        answer = self.ask({"s.md": text}, "How do I sort the entries by the time they were made, newest first?").answer
        self.assertIn("order_by('-created_date')", answer)
        # the output shown under the next heading is no variant of the command
        self.assertNotIn("QuerySet", answer)


class StepsTest(ExtractiveTest):
    RECAP = ("# Deploy\n\n## Deploy again\n\nHere is a recap of the steps to get your changes live:\n\n"
             "* First, push your code\n\n```\n$ git push\n```\n\n* Then, log in to the server and run:\n\n"
             "```\n$ git pull\n```\n\n(Use your own folder name.)\n\n* Finally, hit **Reload** on the Web page.\n\n"
             "## Other\n\nYour changes are live after a reload.\n")

    def test_a_question_asking_for_steps_gets_the_run_of_steps_in_one_quote(self):
        # the intro and the first step were quoted, and the steps after the first code block lost
        for question in ("What are the steps to get my changes live?", "Walk me through getting my changes live"):
            with self.subTest(question):
                first = self.ask({"d.md": self.RECAP}, question).answer.split("\n- ")[0]
                self.assertTrue(first.startswith("- Here is a recap of the steps to get your changes live: [d.md:5-21]"), first)
                self.assertLess(first.index("git push"), first.index("git pull"))
                self.assertLess(first.index("git pull"), first.index("Reload"))

    def test_four_space_code_after_a_caption_is_a_step_of_the_run(self):
        # the Django Girls way: '* step', a file-name caption at the margin (the list has ended),
        # then four-space code whose last line keeps its spaces; the run broke at that code, so
        # only single steps were quoted
        text = ("# Deploy\n\nHere is a recap of the steps to get your changes live:\n\n* First, push your code\n\n"
                "{% filename %}command-line{% endfilename %}\n\n    $ git push\n    \n\n"
                "* Then, log in to the server and run:\n\n{% filename %}server{% endfilename %}\n\n"
                "    $ git pull\n    \n\n(Use your own folder name.)\n\n* Finally, hit **Reload** on the Web page.\n")
        first = self.ask({"d.md": text}, "What are the steps to get my changes live?").answer.split("\n- ")[0]
        self.assertLess(first.index("git push"), first.index("git pull"))
        self.assertLess(first.index("git pull"), first.index("Reload"))
        # lines 10 and 17, spaces only, are not cited, nor the blank lines 11 and 18 after them
        self.assertIn("[d.md:3-9] [d.md:12-16] [d.md:19-21]", first)

    def test_a_question_asking_for_one_command_gets_no_run(self):
        answer = self.ask({"d.md": self.RECAP}, "How do I push my code?").answer
        self.assertNotIn("git pull", answer)

    def test_a_run_with_a_long_code_block_is_not_quoted_as_one(self):
        # the block would be cut at the lines a quote shows, and the run's citation would
        # cover the lines not shown
        long_code = "\n".join(f"$ step {n}" for n in range(30))
        text = (f"# Deploy\n\nHere is a recap of the steps to get your changes live:\n\n* First, run\n\n"
                f"```\n{long_code}\n```\n\n* Then, hit **Reload**.\n")
        first = self.ask({"d.md": text}, "What are the steps to get my changes live?").answer.split("\n- ")[0]
        self.assertFalse("more lines not shown" in first and "Reload" in first, first)

    def test_steps_written_as_lines_of_prose_are_one_quote(self):
        # each step is a paragraph of one short sentence; a story told in short sentences
        # ('And you have…', 'We can use…') is none
        text = ("# Testing\n\n## Using the client\n\nImport `TestClient`.\n\n"
                "Create a `TestClient` by passing your app to it.\n\n"
                "Create functions with a name that starts with `test_`.\n\n"
                "Write simple `assert` statements.\n\n## Story\n\nAnd you have a frontend in another domain.\n\n"
                "We can use tokens for the frontend.\n\nThe frontend asks for a token first.\n")
        first = self.ask({"t.md": text}, "Walk me through writing a first test with the client").answer.split("\n- ")[0]
        self.assertTrue(first.startswith("- Import `TestClient`. [t.md:5-11]"), first)
        self.assertIn("starts with `test_`", first)
        story = self.ask({"t.md": text}, "What are the steps for the frontend to get a token?").answer
        self.assertNotIn("[t.md:15-19]", story)

    def test_what_are_the_steps_asks_for_no_definition(self):
        # 'what are' opens a definition question ('What are migrations?'), not 'What are the steps…'
        self.assertTrue(docs_qa._question_wants("What are migrations?").definition)
        wants = docs_qa._question_wants("What are the steps to allow cross-origin requests?")
        self.assertEqual((wants.steps, wants.definition), (True, False))

    def test_what_to_do_asks_for_steps_and_a_picture_is_no_step(self):
        for asked in ("Zmenila som CSS, čo musím spraviť na serveri?", "Co zrobić, żeby wpisy dało się dodawać?",
                      "What do I need to do to get my changes live?", "Čo všetko treba pridať?"):
            self.assertTrue(docs_qa._question_wants(asked).steps, asked)
        self.assertFalse(docs_qa._question_wants("What does the server do with my changes?").steps)
        # a paragraph that is only a picture is no step written as a line of prose
        text = ("# Edit\n\n## The button\n\nClick the edit button.\n\n![Edit button](images/edit.png)\n\n"
                "Change the title and save.\n")
        answer = self.ask({"e.md": text}, "What do I need to do to edit a post title?").answer
        self.assertNotIn("[e.md:5-9]", answer)

    def test_code_nested_in_a_step_is_not_cut_out_of_it(self):
        # four spaces under '1.' continue the step: a run of steps taking them as a code block
        # of its own showed a fence inside a fence, and the answer lost the unit
        text = ("# Plugin\n\n## Installing\n\nThe steps to install the plugin:\n\n1. **Check out the plugin**\n\n"
                "    ```bash\n    git clone https://example.org/plugin.git\n    ```\n\n"
                "    For the Fish shell:\n\n    ```fish\n    git clone https://example.org/plugin.git\n    ```\n\n"
                "2. **Add the plugin to your shell**\n")
        result = self.ask({"p.md": text}, "What are the steps to install the plugin?")
        self.assertEqual(result.unsupported, [])
        self.assertEqual([c for c in result.citations if not c.valid], [])


class CommandHeadingTest(ExtractiveTest):
    REFERENCE = ("# Commands\n\n## `widget rehash`\n\nInstalls shims for all binaries known to widget.\n\n"
                 "Run this command after you install a package that provides binaries.\n\n"
                 "## `widget local`\n\nSets the local version of a folder.\n")

    def test_a_sentence_under_a_command_heading_is_quoted_with_the_command(self):
        # the page never names the command in the sentence that answers: 'Run this command…'
        answer = self.ask({"c.md": self.REFERENCE},
                          "My binaries are not found after I install a package, what should I run?").answer
        self.assertTrue(answer.startswith("- `widget rehash` [c.md:3-3] [c.md:7-7]\n"
                                          "  Run this command after you install a package"), answer)

    def test_a_question_asking_for_no_command_gets_the_sentence_alone(self):
        answer = self.ask({"c.md": self.REFERENCE}, "Why are binaries not found after a package is installed?").answer
        self.assertNotIn("`widget rehash` [c.md:3-3]", answer)


class OptionLineTest(ExtractiveTest):
    """A manual page's option ('-t, --total' and its description) is what a how-to question
    asks for: it names what to type."""

    MANUAL = ("# tally\n\ntally prints the sizes of the files in a folder, one line per file.\n\n"
              "## Options\n\n-b, --bytes\nPrint the sizes in bytes.\n\n"
              "-t, --total\nPrint a last line with the sum of the sizes.\n\n"
              "-q, --quiet\nPrint nothing but errors.\n")

    def assert_opens_with(self, files, question, expected):
        """Ask extractively; the answer must open with expected; return the answer."""
        answer = self.ask(files, question).answer
        self.assertTrue(answer.startswith(expected), answer)
        return answer

    def test_a_how_to_question_opens_with_the_option(self):
        # the page's opening line holds three of the question's words ('tally', 'prints',
        # 'sizes') as the option does ('Print', 'sum', 'sizes'): the option's code point
        # decides, it is what to type
        self.assert_opens_with({"tally.1.md": self.MANUAL}, "How do I print the sum of the sizes with tally?",
                               "- -t, --total Print a last line with the sum of the sizes. [tally.1.md:10-11]")

    def test_a_later_sentence_of_an_options_paragraph_is_shown_under_the_option(self):
        # the sentence that answers names no option: the paragraph it is in describes -m; the
        # paragraph after the blank line is the command's again
        manual = ("# adduser\n\nadduser creates accounts.\n\n-m, --make-home\n"
                  "Create the account's home folder. The starter files are copied into the new folder.\n\n"
                  "The starter files are kept in /etc/starter.\n")
        answer = self.assert_opens_with({"adduser.8.md": manual}, "How do I get the starter files copied into a new home folder?",
                                        "- -m, --make-home [adduser.8.md:5-5] [adduser.8.md:6-6]\n"
                                        "  The starter files are copied into the new folder.")
        self.assertIn("- The starter files are kept in /etc/starter. [adduser.8.md:8-8]", answer)

    def test_an_options_line_ending_in_an_ellipsis_is_one_entry_with_what_it_does(self):
        # 'part...' (the part may be repeated) read as a sentence's end: the option's line and
        # its description were two units, the option scoring nothing of the question
        manual = ("# split\n\n-s, --split archive\nSplits a package into parts.\n\n"
                  "-j, --join part...\nJoins the parts of a package back into the original file.\n\n"
                  "The parts may be given in any order.\n")
        self.assert_opens_with({"split.1.md": manual}, "how do I join the parts of a package back together?",
                               "- -j, --join part... Joins the parts of a package back into the original file. "
                               "[split.1.md:6-7]\n")

    def test_a_question_asking_for_a_flag_asks_for_what_to_type(self):
        for question in ("Which tally flag prints the sum?", "which switch prints the sum", "Jaka opcja wypisuje sumę?",
                         "Ktorý prepínač vypíše súčet?"):
            self.assertTrue(docs_qa._question_wants(question).code, question)
        for question in ("Is the sum optional?", "Czy suma jest opcjonalna?"):     # no option asked for
            self.assertFalse(docs_qa._question_wants(question).code, question)

    def test_a_line_opening_with_a_dash_and_a_space_is_no_option(self):
        answer = self.ask({"n.md": "# Note\n\n- Nie muszą, jeśli sprzedają tylko firmom.\n"},
                          "Czy muszą mieć kasę, jeśli sprzedają tylko firmom?").answer
        self.assertFalse(docs_qa._OPTION_NAMES.match("- Nie muszą, jeśli sprzedają tylko firmom."))
        self.assertIn("Nie muszą", answer)
