"""§14 answer units: extractive answers quote whole units (sentence, list item with its
nested lines, an introducing line with what it introduces, a heading's example code, a
numbered procedure, a table row with its header, a definition with its term), code stays
code, and a model's code that is not in its cited lines is removed and said so (§17)."""
import json
import unittest

from helpers import StubServerCase, TempDirTest, docs_qa, run_cli, write_files

TLDR = ("# multitail\n\n> Extension of tail.\n> More information: <https://manned.org/multitail>.\n\n"
        "- Tail all files matching a pattern in a single stream:\n\n`multitail -Q 1 '{{pattern}}'`\n\n"
        "- Tail all files in a directory in a single stream:\n\n`multitail -Q 1 '{{path/to/directory}}/*'`\n")
EXAMPLE = ("# Convert-Path\n\nConverts a path from a PowerShell path to a provider path.\n\n"
           "### Example 1: Convert the working directory\n\nThis command converts the current working "
           "directory to a standard file system path.\n\n```powershell\nPS C:\\> Convert-Path .\n"
           "C:\\programs\\PowerShell\n```\n\n### Example 2: Convert a provider path\n\n"
           "This command converts the provider path to a standard registry path.\n\n```powershell\n"
           "PS C:\\> Convert-Path HKLM:\\Software\\Microsoft\nHKEY_LOCAL_MACHINE\\Software\\Microsoft\n```\n")
HOLP = ("# Strojový preklad\n\n## Základné údaje\n\n- Typ práce: bakalárska práca\n- Autor: Ján Holp\n"
        "- Vedúci práce: doc. Ing. Peter Novák, PhD.\n- Rok: 2024\n")


def lines_of(text, first, last):
    return text.split("\n")[first - 1:last]


class UnitKindsTest(TempDirTest):
    def ask(self, files, question):
        write_files(self.docs, files)
        return docs_qa.answer(question, self.settings(use_embeddings=False, extractive=True))

    def test_a_sentence_with_titles_is_quoted_whole(self):
        result = self.ask({"holp.md": HOLP}, "Kto je vedúci práce Jána Holpa?")
        self.assertIn("- Vedúci práce: doc. Ing. Peter Novák, PhD. [holp.md:7-7]", result.answer)

    def test_a_tldr_description_answers_with_its_command_fenced(self):
        result = self.ask({"multitail.md": TLDR}, "Tail all files matching a pattern in a single stream")
        self.assertTrue(result.answer.startswith(
            "- Tail all files matching a pattern in a single stream: [multitail.md:6-8]\n"
            "```\nmultitail -Q 1 '{{pattern}}'\n```"), result.answer)
        self.assertEqual(result.unsupported, [])

    def test_inline_code_in_a_quoted_line_keeps_its_spacing(self):
        text = ("# faker\n\n- Fake addresses of one country (use `locales | cut --delimiter . --fields 1` "
                "to list them):\n\n`faker --lang {{de_DE}} address`\n")
        result = self.ask({"faker.md": text}, "fake addresses of one country")
        self.assertIn("(use `locales | cut --delimiter . --fields 1` to list them): [faker.md:3-5]\n```\n"
                      "faker --lang {{de_DE}} address\n```", result.answer)
        self.assertEqual(result.unsupported, [])

    def test_an_example_heading_answers_with_its_code_block_line_for_line(self):
        result = self.ask({"convert.md": EXAMPLE}, "Convert a provider path to a registry path")
        first = result.answer.split("\n- ")[0]
        self.assertIn("[convert.md:14-21]", first)
        fence = first[first.index("```"):]
        self.assertEqual(fence.split("\n"), lines_of(EXAMPLE, 18, 21))

    def test_a_list_item_keeps_its_nested_lines(self):
        text = "# Kroky\n\n- Zapnite zariadenie:\n  - podržte tlačidlo napájania\n  - počkajte na svetlo\n- Iná položka bez vzťahu\n"
        result = self.ask({"a.md": text}, "ako zapnúť zariadenie tlačidlom")
        self.assertIn("- Zapnite zariadenie: [a.md:3-5]\n    - podržte tlačidlo napájania\n"
                      "    - počkajte na svetlo", result.answer)

    def test_a_numbered_procedure_under_its_heading_is_quoted_as_its_steps(self):
        text = ("# Backup\n\n## To restore a snapshot\n\n1. Stop the service.\n2. Run `restore --latest`.\n"
                "3. Start the service again.\n\n## Other\n\nUnrelated text about quotas and limits.\n")
        result = self.ask({"b.md": text}, "how to restore a snapshot")
        self.assertIn("- To restore a snapshot [b.md:3-7]", result.answer)
        for step in lines_of(text, 5, 7):
            self.assertIn("  " + step, result.answer)

    def test_a_table_row_comes_with_its_header_row(self):
        text = ("# Formularze\n\n| Formularz | Do czego służy |\n| --- | --- |\n| VAT-R | rejestracja |\n"
                "| VAT-26 | zgłoszenie pojazdu firmowego |\n")
        result = self.ask({"f.md": text}, "zgłoszenie pojazdu firmowego")
        self.assertIn("- | Formularz | Do czego służy | [f.md:3-4] [f.md:6-6]\n  | --- | --- |\n"
                      "  | VAT-26 | zgłoszenie pojazdu firmowego |", result.answer)

    def test_a_definition_comes_with_its_term(self):
        text = ("# Słownik\n\nWIS\n: wiążąca informacja stawkowa. Wydaje ją Dyrektor KIS na wniosek.\n\n"
                "Inny akapit o kasach.\n")
        result = self.ask({"s.md": text}, "kto wydaje ją na wniosek")
        self.assertIn("- WIS: wiążąca informacja stawkowa. Wydaje ją Dyrektor KIS na wniosek. [s.md:3-4]",
                      result.answer)

    def test_an_intro_comes_with_the_sentence_before_it_when_that_sentence_says_what_it_is_for(self):
        text = ("# Security\n\nRight now anyone can see the edit button. We hide the edit button from "
                "visitors who are not logged in. Change the link to look like this:\n\n```html\n"
                "{% if user.is_authenticated %}\n<a href=\"/edit\">Edit</a>\n{% endif %}\n```\n\n"
                "The rest of this page is about colours and fonts.\n")
        # the intro alone holds one word of the question ('edit', in the code); the sentence
        # before it holds all five, so together they outscore that sentence alone
        result = self.ask({"s.md": text}, "how do I hide the edit button from visitors who are not logged in")
        self.assertTrue(result.answer.startswith(
            "- We hide the edit button from visitors who are not logged in. Change the link to look "
            "like this: [s.md:3-9]\n```html\n{% if user.is_authenticated %}"), result.answer)

    def test_an_intro_is_quoted_alone_when_the_sentence_before_it_adds_no_word_of_the_question(self):
        text = ("# Server\n\nThe tutorial has many parts. To start the server, run:\n\n```\n"
                "python manage.py runserver\n```\n")
        result = self.ask({"s.md": text}, "how do I start the server")
        self.assertTrue(result.answer.startswith("- To start the server, run: [s.md:3-7]\n```\n"
                                                 "python manage.py runserver\n```"), result.answer)

    def test_a_long_code_block_is_cut_marked_and_cited_for_the_lines_shown(self):
        code = "\n".join(f"step_{n} --run" for n in range(1, 31))
        text = f"# Deploy\n\nRun the deploy script:\n\n```sh\n{code}\n```\n"
        result = self.ask({"d.md": text}, "run the deploy script")
        cut = docs_qa.MAX_QUOTED_LINES
        self.assertIn(f"[d.md:3-{5 + cut}]", result.answer)
        self.assertIn("\n".join(lines_of(text, 5, 5 + cut)) + "\n```\n… (15 more lines not shown)",
                      result.answer)


class FragmentBoundaryTest(TempDirTest):
    def test_a_command_in_the_next_fragment_is_quoted_with_its_description(self):
        text = ("# tiles\n\n> Draw tiles.\n\n- Make a checkerboard pattern from square tiles:\n\n"
                "`tiles --checker 8 out.png`\n\n- Draw a striped pattern with wide horizontal bands:\n\n"
                "`tiles --stripes 4 out.png`\n")
        write_files(self.docs, {"t.md": text})
        settings = self.settings(use_embeddings=False, chunk_chars=60, extractive=True)
        self.assertEqual([c.label for c in docs_qa.chunk_text("t.md", text, 60)][:2], ["t.md:1-5", "t.md:7-11"])
        result = docs_qa.answer("make a checkerboard pattern from square tiles", settings)
        self.assertTrue(result.answer.startswith(
            "- Make a checkerboard pattern from square tiles: [t.md:5-5] [t.md:7-7]\n"
            "```\ntiles --checker 8 out.png\n```"), result.answer)
        self.assertTrue(all(c.valid for c in result.citations))


    def test_a_paragraph_repeated_on_two_pages_is_quoted_once(self):
        # tutorials repeat their deploy steps on every page; the copy added nothing to the answer
        # and kept out the sentence that did
        repeated = "Then, in a widget console, pull the new code of the widget site."
        write_files(self.docs, {
            "a.md": f"# Deploy A\n\n{repeated}\n",
            "b.md": f"# Deploy B\n\n{repeated}\n",
            "c.md": "# Reload\n\nFinally, reload the widget site in the widget console.\n"})
        answer = docs_qa.answer("how do I pull the new code of the widget site in the widget console",
                                self.settings(use_embeddings=False, extractive=True)).answer
        self.assertEqual(answer.count(repeated), 1, answer)
        self.assertIn("Finally, reload the widget site in the widget console.", answer)

    def test_a_line_introducing_code_is_never_paired_with_the_sentence_before_it_in_reverse(self):
        # the intro ('It will look like this:') was paired with the unit that widens it by the
        # sentence before, giving 'It will look like this: We can create… It will look like
        # this:' cited for the intro's lines only; the check then cut it down to a bare line
        text = ("# Setup\n\nWe can create a `widgetenv` on both Linux and macOS by running "
                "`widget -m env mine`.\nIt will look like this:\n\n```\n$ widget -m env mine\n```\n")
        write_files(self.docs, {"s.md": text})
        result = docs_qa.answer("create a widgetenv on Linux and macOS", self.settings(use_embeddings=False, extractive=True))
        self.assertEqual(result.unsupported, [])
        self.assertNotIn("It will look like this: We can", result.answer)
        self.assertTrue(all(line.startswith(("- ", "  ", "```", "$")) for line in result.answer.split("\n")), result.answer)

class ModelCodeTest(StubServerCase):
    corpus = {"multitail.md": TLDR}

    def ask(self, reply):
        self.stub.chat_reply = reply
        settings = self.settings(base_url=self.stub.base_url, timeout_s=2, retries=0, use_embeddings=False,
                                 chat_timeout_s=2)
        return docs_qa.answer("tail all files matching a pattern", settings)

    def test_a_command_with_a_flag_not_in_the_cited_lines_is_removed_with_a_reason(self):
        result = self.ask("Run `multitail -Q 1 --follow-all '{{pattern}}'` [multitail.md:6-8].\n"
                          "Use `multitail -Q 1 '{{pattern}}'` [multitail.md:6-8].")
        self.assertNotIn("--follow-all", result.answer)
        self.assertIn("Use `multitail -Q 1 '{{pattern}}'`. [multitail.md:6-8]", result.answer)
        self.assertEqual([u["problem"] for u in result.unsupported], ["code_not_in_cited_lines"])
        text = docs_qa.format_answer_text(docs_qa.to_envelope(result).to_dict())
        self.assertIn("1 sentence removed: its code \"multitail -Q 1 --follow-all '{{pattern}}'\" "
                      "is not in the cited lines multitail.md:6-8", text)

    def test_a_fenced_block_must_be_verbatim_in_its_cited_lines(self):
        good = self.ask("Tail by pattern: [multitail.md:6-8]\n```\nmultitail -Q 1 '{{pattern}}'\n```")
        self.assertIn("```\nmultitail -Q 1 '{{pattern}}'\n```", good.answer)
        bad = self.ask("Tail by pattern: [multitail.md:6-8]\n```\nmultitail -Q 1 -f '{{pattern}}'\n```")
        self.assertNotIn("-f '", bad.answer)
        self.assertIn("code_not_in_cited_lines", [u["problem"] for u in bad.unsupported])

    def test_unsupported_lists_only_claims(self):
        result = self.ask("## Odpowiedź\n\nŹródła:\n1.\nNie znalazłem odpowiedzi w dokumentach.\n"
                          "Kary wynoszą milion złotych [multitail.md:6-8].")
        self.assertEqual([u["sentence"] for u in result.unsupported], ["Kary wynoszą milion złotych."])

    def test_text_output_names_removed_sentences_and_refused_citations(self):
        result = self.ask("Tail all files matching a pattern in a single stream [multitail.md:6-6]. "
                          "The pattern is a regular expression [multitail.md:40-41]. "
                          "It also sends e-mail reports [multitail.md:6-6].")
        text = docs_qa.format_answer_text(docs_qa.to_envelope(result).to_dict())
        self.assertIn("1 sentence removed: its citation multitail.md:40-41 is outside the fragments "
                      "shown: \"The pattern is a regular expression.\"", text)
        self.assertIn("1 sentence removed: not supported by the cited lines: "
                      "\"It also sends e-mail reports.\"", text)
        self.assertIn("1 citation refused: multitail.md:40-41 (outside the lines of the fragments shown)", text)

    def test_the_prompt_asks_for_commands_verbatim(self):
        result = self.ask("x")
        self.assertIn("Copy commands, code, paths and flags verbatim", result.prompt["instructions"])


class ModelTitlesTest(StubServerCase):
    corpus = {"holp.md": HOLP}

    def test_a_reply_with_titles_is_one_sentence_and_kept_whole(self):
        self.stub.chat_reply = ("Vedúcim práce Jána Holpa je doc. Ing. Peter Novák, PhD. [holp.md:7-7] "
                                "Práca je bakalárska [holp.md:5-5].")
        settings = self.settings(base_url=self.stub.base_url, timeout_s=2, retries=0, use_embeddings=False,
                                 chat_timeout_s=2)
        result = docs_qa.answer("Kto je vedúci práce Jána Holpa?", settings)
        self.assertEqual(result.answer.split("\n"), [
            "Vedúcim práce Jána Holpa je doc. Ing. Peter Novák, PhD. [holp.md:7-7]",
            "Práca je bakalárska. [holp.md:5-5]"])
        self.assertEqual(result.unsupported, [])


class TextOutputTest(TempDirTest):
    def test_the_limits_line_is_plain_words_and_the_json_keeps_the_codes(self):
        write_files(self.docs, {f"d{n}.md": f"# Doc {n}\n\nKasa fiskalna numer {n} działa online.\n"
                                for n in range(4)})
        args = ("kasa fiskalna online", "--docs", self.docs, "--no-cache", "--no-embed",
                "--extractive", "--limit", "2")
        text = run_cli(*args)
        self.assertIn("Limits: showing the 2 best of at least 3 matching fragments (--limit shows more).",
                      text.stdout)
        self.assertNotIn("result_limit", text.stdout)
        envelope = json.loads(run_cli(*args, "--json").stdout)
        self.assertIn("result_limit", envelope["truncation_reasons"])


if __name__ == "__main__":
    unittest.main()


class MarkupViewTest(TempDirTest):
    """Documentation markup is a view: the quote shows what the rendered page shows, and its
    citations cover exactly the file lines shown."""

    def ask(self, files, question):
        write_files(self.docs, files)
        return docs_qa.answer(question, self.settings(use_embeddings=False, extractive=True))

    def assert_opens_with(self, files, question, expected):
        """Ask; the answer must open with expected, every citation valid; return the result."""
        result = self.ask(files, question)
        self.assertTrue(result.answer.startswith(expected), result.answer)
        self.assertTrue(all(c.valid for c in result.citations), result.citations)
        return result

    def test_a_links_target_is_no_word_the_unit_says(self):
        # the page shows 'this page' and the image's alt text, not the words of their targets
        text = ("# Tokens\n\nRead [this page](https://example.com/deploy/token-setup) first.\n\n"
                "![Account page](images/deploy-token.png)\n\n"
                "The deploy token is made on the Account page.\n")
        self.assert_opens_with({"t.md": text}, "Where do I find the deploy token?",
                               "- The deploy token is made on the Account page. [t.md:7-7]")

    def test_a_file_name_caption_between_a_line_and_its_code_is_shown_as_the_name(self):
        text = ("# Serwer\n\nAby uruchomić serwer, wpisz w konsoli:\n\n"
                "{% filename %}command-line{% endfilename %}\n\n"
                "```\n(myvenv) ~$ python manage.py runserver\n```\n\nInny akapit o czymś innym.\n")
        result = self.assert_opens_with({"s.md": text}, "jak uruchomić serwer w konsoli", (
            "- Aby uruchomić serwer, wpisz w konsoli: [s.md:3-9]\n  command-line\n"
            "```\n(myvenv) ~$ python manage.py runserver\n```"))
        self.assertNotIn("{%", result.answer)

    def test_a_file_name_caption_inside_a_line_under_a_heading_is_shown_as_the_name(self):
        # a heading quoted with the paragraph and the code under it: the paragraph's last line
        # ends in the caption, which showed as template tags
        text = ("# Szablony\n\n## Link do szczegółów wpisu\n\nOtwórz plik w edytorze. Plik wygląda tak: "
                "{% filename %}blog/post_list.html{% endfilename %}\n\n```html\n{% block content %}\n```\n")
        result = self.assert_opens_with({"t.md": text}, "link do szczegółów wpisu", "- Link do szczegółów wpisu [t.md:3-9]\n")
        self.assertIn("Plik wygląda tak: blog/post_list.html\n```html\n{% block content %}\n```", result.answer)
        self.assertNotIn("filename", result.answer)

    def test_markup_lines_are_neither_quoted_nor_cited(self):
        text = ("# Install\n\nTo install the tool, run:\n\n<div class=\"termy\">\n\n"
                "```console\n$ pip install widget-tool\n```\n\n</div>\n")
        # line 5 (<div>) is skipped, and so are the blank lines around it: the introducing
        # line and the code are cited apart, each with exactly the lines shown
        result = self.assert_opens_with({"i.md": text}, "how do I install the tool", (
            "- To install the tool, run: [i.md:3-3] [i.md:7-9]\n```console\n$ pip install widget-tool\n```"))
        self.assertNotIn("div", result.answer)

    def test_a_collapsible_sections_title_frames_what_it_holds(self):
        # the same line introduces each system's command; only the section's title, shown as
        # the fold's label, says which system it is for (GitHub's <details>, HonKit's sec)
        folds = {"details": ("<details>\n<summary>{}</summary>\n", "</details>\n"),
                 "sec": ('<!--sec data-title="Install: {}" data-id="x"\ndata-collapse=true ces-->\n', "<!--endsec-->\n")}
        for kind, (opener, closer) in folds.items():
            text = "# Install\n\n" + "\n".join(
                f"{opener.format(system)}\nOpen a terminal and run the installer:\n\n```\n{command}\n```\n\n{closer}"
                for system, command in (("Linux", "./install.sh"), ("Windows", "install.bat")))
            with self.subTest(kind):
                result = self.ask({"readme.md": text}, "how do I run the installer on Windows?")
                first = result.answer.split("\n- ")[0]
                self.assertIn("install.bat", first)
                self.assertNotIn("install.sh", first)

    def test_a_blank_line_between_markup_lines_is_never_cited_alone(self):
        # a Docusaurus admonition's ':::' (line 5) and a tab's '<Tabs>' (7-8) hid the lines around
        # line 6, which showed nothing and was cited as '[a.md:6-6]'
        text = ("# Cache\n\n:::tip Restart order\nRestart the replicas first with "
                "`cachectl restart --replicas-first`.\n:::\n\n<Tabs>\n<TabItem value=\"linux\" label=\"Linux\">\n\n"
                "```bash\nsudo systemctl restart cachectl\n```\n\n</TabItem>\n</Tabs>\n")
        result = self.assert_opens_with({"a.md": text}, "in which order do I restart the replicas", (
            "- Restart the replicas first with `cachectl restart --replicas-first`. [a.md:4-4] [a.md:10-12]\n"))
        lines = text.split("\n")
        for citation in result.citations:
            self.assertTrue(lines[citation.start_line - 1].strip() and lines[citation.end_line - 1].strip(), citation)

    def test_a_code_block_that_only_includes_a_file_shows_the_files_name_not_the_marker(self):
        # MkDocs snippets and FastAPI's includes: the rendered page shows the included code
        for marker in ("{!../../docs_src/app/routers/users.py!}", "{* ../../docs_src/app/routers/users.py hl[6] *}",
                       '--8<-- "../../docs_src/app/routers/users.py"'):
            text = ("# Routers\n\nUse the router the same way you would use the main class:\n\n"
                    f"```Python title=\"users.py\"\n{marker}\n```\n\nThen add it to the app.\n")
            with self.subTest(marker):
                result = self.assert_opens_with({"r.md": text}, "how do I use the router like the main class", (
                    "- Use the router the same way you would use the main class: [r.md:3-7]\n"
                    "  ../../docs_src/app/routers/users.py\n"))
                self.assertNotIn("```", result.answer)
                self.assertEqual(result.unsupported, [])

    def test_an_include_marker_alone_on_its_line_is_what_the_line_before_introduces(self):
        # FastAPI's pages write the marker unfenced; read as hidden markup, the line ending in ':'
        # took the next paragraph as what it introduces, and that paragraph, scoring as well,
        # then pushed the intro out of the quote
        for marker, name in (("{* ../../docs_src/handlers/tutorial003.py hl[5:7] *}", "../../docs_src/handlers/tutorial003.py"),
                             ('--8<-- "docs_src/handlers/tutorial003.py"', "docs_src/handlers/tutorial003.py")):
            text = ("# Handlers\n\nYou want to handle your own exception globally.\n\n"
                    "Register a global exception handler for it with `@app.exception_handler()`:\n\n"
                    f"{marker}\n\nHere, a request to `/unicorns/yolo` will raise your exception.\n")
            with self.subTest(marker):
                result = self.assert_opens_with({"h.md": text}, "how do I register a global handler for my exception", (
                    "- Register a global exception handler for it with `@app.exception_handler()`: [h.md:5-7]\n"
                    f"  {name}\n"))
                self.assertNotIn("{*", result.answer)
                self.assertNotIn("--8<--", result.answer)
                self.assertEqual(result.unsupported, [])

    def test_a_json_block_with_quoted_keys_before_numbers_is_quoted_whole(self):
        # '"price": 62' looked like a quoted file name and a line number: the parser read it as
        # a citation of 'price', refused it, and the whole JSON block was removed from the answer
        text = ('# Items\n\nSend the item as JSON in the body:\n\n```json\n{\n    "name": "Foo",\n'
                '    "price": 62,\n    "tax": 20\n}\n```\n')
        result = self.assert_opens_with({"items.md": text}, "how do I send the item as JSON in the body", (
            '- Send the item as JSON in the body: [items.md:3-11]\n```json\n{\n    "name": "Foo",\n'
            '    "price": 62,\n    "tax": 20\n}\n```'))
        self.assertEqual(result.unsupported, [])
        self.assertEqual([c.path for c in result.citations], ["items.md"])

    def test_a_setext_heading_frames_its_section_and_is_not_quoted_as_text(self):
        # 'Widget Guide' over '====' was a paragraph, quoted as 'Widget Guide ====' among the bullets
        text = ("Widget Guide\n============\n\nInstalling\n----------\n\nInstall the widget with:\n\n"
                "    pip install widget\n\nConfiguring\n-----------\n\n"
                "Set the WIDGET_HOME variable to the folder of your widgets.\n")
        answer = self.ask({"g.md": text}, "how do I install the widget").answer
        self.assertNotIn("===", answer)
        self.assertNotIn("---", answer)
        self.assertIn("pip install widget", answer.split("\n- ")[0])
        home = self.ask({"g.md": text}, "which variable holds the folder of the widgets").answer
        self.assertTrue(home.startswith("- Set the WIDGET_HOME variable to the folder of your widgets. [g.md:14-14]"), home)
        self.assertNotIn("===", home)

    def test_an_html_tables_rows_read_as_table_rows_under_their_header(self):
        # READMEs lay out tables in HTML; each row was quoted as its tags
        text = ("# Limits\n\nThe widget plans differ in speed.\n\n<table>\n"
                "  <tr><th>Plan</th><th>Requests per minute</th></tr>\n"
                "  <tr><td>Free</td><td>60</td></tr>\n  <tr><td><b>Pro</b></td><td>600</td></tr>\n</table>\n")
        answer = self.ask({"l.md": text}, "how many requests per minute does the Pro plan allow").answer
        self.assertIn("- | **Plan** | **Requests per minute** | [l.md:6-6] [l.md:8-8]\n  | Pro | 600 |", answer)
        self.assertNotIn("<td>", answer)
        # a paragraph wrapped in a block tag on its line, as READMEs centre a line
        logo = self.ask({"p.md": '# Logo\n\n<p align="center">The widget logo is blue.</p>\n'},
                        "what colour is the widget logo").answer
        self.assertTrue(logo.startswith("- The widget logo is blue. [p.md:3-3]"), logo)

    def test_a_highlight_tag_is_shown_as_the_fenced_code_it_stands_for(self):
        # Jekyll/Liquid and Hugo write code blocks as template tags: the rendered page shows code,
        # in the tag's language, where the quote once showed the command as a line of prose
        for opener, closer in (("{% highlight shell %}", "{% endhighlight %}"),
                               ("{{< highlight shell >}}", "{{< /highlight >}}"),
                               ('{{< code lang="shell" >}}', "{{< /code >}}")):
            text = (f"# Jekyll\n\nInstall the gems of the bundle first:\n\n{opener}\n"
                    f"bundle install --path vendor/bundle\n{closer}\n\nThen serve the site.\n")
            with self.subTest(opener):
                result = self.assert_opens_with({"j.md": text}, "how do I install the gems of the bundle", (
                    "- Install the gems of the bundle first: [j.md:3-7]\n```shell\n"
                    "bundle install --path vendor/bundle\n```"))
                self.assertNotIn("highlight", result.answer)
                self.assertEqual(result.unsupported, [])

    def test_a_summary_tag_and_a_captions_template_variable_are_not_shown(self):
        text = ("# Docker\n\n<details>\n<summary>Dockerfile preview for the app</summary>\n\n"
                "Copy the app folder into the image:\n\n{% filename %}{{ warning_icon }} Dockerfile{% endfilename %}\n"
                "```\nCOPY ./app /code/app\n```\n\n</details>\n")
        result = self.assert_opens_with({"d.md": text}, "how do I copy the app folder into the image", (
            "- Copy the app folder into the image: [d.md:6-11]\n  Dockerfile\n```\nCOPY ./app /code/app\n```"))
        self.assertNotIn("{{", result.answer)
        preview = self.ask({"d.md": text}, "dockerfile preview").answer
        self.assertIn("Dockerfile preview for the app", preview)
        self.assertNotIn("<summary>", preview)

    def test_a_terminal_transcripts_colour_tags_are_not_shown_but_html_code_keeps_its_tags(self):
        text = ("# Run\n\nTo run your app in development mode with auto-reload, use:\n\n<div class=\"termy\">\n\n"
                "```console\n$ <font color=\"#4E9A06\">fastapi</font> dev <u style=\"text-decoration-style:solid\">"
                "main.py</u>\n<span style=\"color: green;\">INFO</span>:     Uvicorn running\n```\n\n</div>\n\n"
                "Bold text in a page is written like this:\n\n```html\n<b>bold</b>\n```\n")
        result = self.assert_opens_with({"r.md": text}, "How do I run my app in development mode with auto-reload?", (
            "- To run your app in development mode with auto-reload, use: [r.md:3-3] [r.md:7-10]\n"
            "```console\n$ fastapi dev main.py\nINFO:     Uvicorn running\n```"))
        self.assertEqual(result.unsupported, [])
        bold = self.ask({"r.md": text}, "how is bold text written in a page").answer
        self.assertIn("```html\n<b>bold</b>\n```", bold)

    def test_inline_raw_tags_are_not_shown(self):
        text = "# Forms\n\nShow the form with {% raw %}`{{ form.as_p }}`{% endraw %} inside the page.\n"
        result = self.ask({"f.md": text}, "how do I show the form inside the page")
        self.assertIn("- Show the form with `{{ form.as_p }}` inside the page. [f.md:3-3]", result.answer)

    def test_an_indented_code_block_is_code(self):
        text = ("# Setup\n\nCheck which version you have with this command:\n\n"
                "    $ python3 --version\n    Python 3.6.1\n\nThe rest of the page is about editors.\n")
        self.assert_opens_with({"p.md": text}, "how do I check the python version", (
            "- Check which version you have with this command: [p.md:3-6]\n"
            "```\n$ python3 --version\nPython 3.6.1\n```"))

    def test_a_how_question_gets_the_sentence_that_gives_the_command(self):
        text = ("# Admin\n\nTo log in you need an administrator account (a superuser) with full access. "
                "Go back to the terminal, type `python manage.py createsuperuser` and press enter.\n\n"
                "The admin account also sees every post.\n")
        result = self.ask({"a.md": text}, "how do I create an administrator account")
        self.assertIn("`python manage.py createsuperuser`", result.answer.split("\n")[0])

    def test_a_blockquote_is_read_as_its_content(self):
        text = ("# Install\n\n> **Note:** On Windows the install may hang. If it does, run instead:\n>\n"
                ">     C:\\> python -m pip install -r requirements.txt\n>\n> Then try again.\n")
        self.assert_opens_with({"w.md": text}, "the install hangs on Windows, what do I run instead", (
            "- **Note:** On Windows the install may hang. If it does, run instead: [w.md:3-5]\n```\n"
            "C:\\> python -m pip install -r requirements.txt\n```"))      # 'it' named by the sentence before

    def test_a_short_reply_is_quoted_with_the_heading_it_answers(self):
        text = ("# FAQ\n\n## Do private customers' invoices go to the registry?\n\n"
                "No. Invoices for consumers may be issued outside the registry.\n\n"
                "## Other\n\nUnrelated text about quotas.\n")
        self.assert_opens_with({"faq.md": text}, "do invoices for private customers go to the registry", (
            "- Do private customers' invoices go to the registry? No. Invoices for consumers may be "
            "issued outside the registry. [faq.md:3-5]"))

    def test_an_admonition_body_is_prose_and_its_opener_is_not_quoted(self):
        text = ("# Setup\n\n!!! note\n    The widget server needs port 8443 open in the firewall.\n\n"
                "Other text about colours.\n")
        self.assert_opens_with({"a.md": text}, "which port does the widget server need", (
            "- The widget server needs port 8443 open in the firewall. [a.md:4-4]"))

    def test_a_content_tab_label_is_a_heading_over_its_code(self):
        text = ('# Install\n\n=== "Linux"\n\n    Run the installer with sudo:\n\n'
                '        sudo widgetctl install\n\n=== "Windows"\n\n    Run the installer as administrator:\n\n'
                '        widgetctl.exe install\n')
        result = self.assert_opens_with({"t.md": text}, "how do I install the widget on Windows", (
            "- Windows [t.md:9-13]\n  Run the installer as administrator:\n```\nwidgetctl.exe install\n```"))
        self.assertNotIn("===", result.answer)
        linux = self.ask({"t.md": text}, "how do I install the widget with sudo").answer
        self.assertTrue(linux.startswith("- Run the installer with sudo: [t.md:5-7]\n```\nsudo widgetctl install\n```"),
                        linux)

    def test_pymdown_slash_blocks_read_as_a_caption_over_code_and_a_heading_over_prose(self):
        # FastAPI's pages: '//// tab | Python 3.10+' between a line and its code, '/// note | Title'
        # over a note; the bodies are not indented and a line of slashes alone closes them
        text = ("# Deprecating\n\nThen pass the parameter `deprecated=True` to the widget query:\n\n"
                "//// tab | Python 3.10+\n\n```Python\nq = Query(deprecated=True)\n```\n\n////\n\n"
                "/// note | Technical Details\n\nThe widget schema marks the parameter as deprecated.\n\n///\n")
        result = self.assert_opens_with({"d.md": text}, "how do I pass deprecated to the widget query", (
            "- Then pass the parameter `deprecated=True` to the widget query: [d.md:3-9]\n  Python 3.10+\n"
            "```Python\nq = Query(deprecated=True)\n```"))
        self.assertNotIn("//", result.answer)
        self.assertEqual(result.unsupported, [])
        note = self.ask({"d.md": text}, "what does the widget schema mark as deprecated").answer
        self.assertTrue(note.startswith("- The widget schema marks the parameter as deprecated. [d.md:15-15]"), note)
        self.assertNotIn("//", note)
        included = text.replace("q = Query(deprecated=True)", "{!> ../docs_src/widget_query.py!}")
        result = self.assert_opens_with({"d.md": included}, "how do I pass deprecated to the widget query", (
            "- Then pass the parameter `deprecated=True` to the widget query: [d.md:3-9]\n  Python 3.10+\n"
            "  ../docs_src/widget_query.py\n"))

    def test_a_content_tab_over_code_is_a_caption_under_the_line_that_introduces_it(self):
        # MkDocs Material: the tab's label shows over the code, and the line before the tabs
        # introduces that code (as a heading, the label cut the line off from its code)
        text = ('# Install\n\nInstall the widget package with:\n\n=== "Linux"\n\n    ```\n'
                '    sudo apt install widget\n    ```\n\n=== "Windows"\n\n    ```\n    winget install widget\n    ```\n')
        result = self.assert_opens_with({"t.md": text}, "how do I install the widget package", (
            "- Install the widget package with: [t.md:3-9]\n  Linux\n```\nsudo apt install widget\n```"))
        self.assertNotIn("===", result.answer)
        self.assertEqual(result.unsupported, [])

    def test_docusaurus_fences_and_obsidian_marks_are_not_shown(self):
        text = (":::warning\nThe widget cache must be emptied after every upgrade.\n:::\n\n"
                "> [!tip] Faster upgrades\n> Use `widgetctl upgrade --keep-cache` to keep the widget cache.\n\n"
                "See [[Upgrading the widget|the upgrade notes]] and ![[diagram.png]] for the widget layout.\n")
        result = self.assert_opens_with({"o.md": text}, "what must be done with the widget cache after an upgrade", (
            "- The widget cache must be emptied after every upgrade. [o.md:2-2]"))
        for mark in (":::", "[!tip]", "[[", "![["):
            self.assertNotIn(mark, result.answer)
        notes = self.ask({"o.md": text}, "where are the widget upgrade notes").answer
        self.assertIn("See the upgrade notes and for the widget layout. [o.md:8-8]", notes)
        self.assertIn("Use `widgetctl upgrade --keep-cache` to keep the widget cache. [o.md:6-6]", notes)

    def test_quote_marks_without_a_space_and_html_comments_are_not_shown(self):
        text = ("# Editor\n\n>To activate the environment in the editor's terminal, run:\n>\n>```\n"
                ">$ . myvenv/Scripts/activate.ps1\n>```\n\n<!--endsec-->\n")
        result = self.assert_opens_with({"e.md": text}, "how do I activate the environment in the editor terminal", (
            "- To activate the environment in the editor's terminal, run: [e.md:3-7]\n```\n"
            "$ . myvenv/Scripts/activate.ps1\n```"))
        self.assertNotIn("endsec", result.answer)

    def test_a_comment_over_two_lines_is_not_shown(self):
        # a GitBook section marker is an HTML comment split over two lines: a reader never sees it,
        # though it holds the question's words
        text = ("# Setup\n\n<!--sec data-title=\"Setup on Windows\" data-id=\"setup_windows\"\n"
                "data-collapse=true ces-->\n\nRun the installer from the console:\n\n"
                "    setup.exe --install\n\n<!--endsec-->\n")
        result = self.assert_opens_with({"s.md": text}, "How do I run the setup on Windows?", (
            "- Run the installer from the console: [s.md:6-8]\n```\nsetup.exe --install\n```"))
        self.assertNotIn("data-title", result.answer)

    def test_inline_html_and_attribute_lists_show_as_their_text_but_not_inside_code(self):
        text = ("# Testing { #testing }\n\nTo use the test client, first install "
                "<a href=\"https://example.org/httpx\" class=\"external-link\" target=\"_blank\">`httpx`</a> "
                "in a [virtual environment](venv.md){.internal-link target=_blank}.\n\n"
                "Then change `<a href=\"\">{{ post.title }}</a>` in the test client page.\n")
        result = self.ask({"t.md": text}, "Which package does the test client need installed first?")
        self.assertTrue(result.answer.startswith(
            "- To use the test client, first install `httpx` in a [virtual environment](venv.md). [t.md:3-3]"),
            result.answer)
        self.assertIn("`<a href=\"\">{{ post.title }}</a>`", result.answer)     # code is shown as written
        self.assertEqual(result.unsupported, [])
        self.assertTrue(all(c.valid for c in result.citations), result.citations)

    def test_a_word_said_twice_in_the_question_counts_once(self):
        # 'one' twice must not outweigh 'router' and 'another' (both sentences hold two words)
        text = ("# Routers\n\nJust one tag, one of many.\n\n"
                "You can include a router in another router with `router.include_router(other)`.\n")
        result = self.assert_opens_with({"r.md": text}, "Can I put one router inside another one?",
                                        "- You can include a router in another router")
        self.assertNotIn("Just one tag", result.answer.split("\n")[0])

    def test_raw_tags_in_an_introduced_list_are_not_shown(self):
        text = ("# Forms\n\nTo make a form work we need several things:\n\n"
                "- We display the form with {% raw %}`{{ form.as_p }}`{% endraw %}.\n- We need a Save button.\n")
        result = self.assert_opens_with({"f.md": text}, "what do we need to make a form work", (
            "- To make a form work we need several things: [f.md:3-6]\n"
            "  - We display the form with `{{ form.as_p }}`.\n  - We need a Save button."))
        self.assertNotIn("{% raw", result.answer)

    def test_a_prompt_in_fenced_code_is_no_blockquote(self):
        text = ("# Shell\n\nList every post in the console:\n\n```python\n>>> Post.objects.all()\n"
                "> continued line\n```\n")
        result = self.ask({"s.md": text}, "how do I list every post in the console")
        self.assertIn("```python\n>>> Post.objects.all()\n> continued line\n```", result.answer)
        self.assertTrue(all(c.valid for c in result.citations))
