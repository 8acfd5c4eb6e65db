"""The web page (sections 18b and 21) in a real browser: headless Chromium from the system's
packages (Debian: apt-get install chromium), driven with the standard library only, against
a live server on 127.0.0.1. The page runs a question from its URL (?q=...&cite=1 also opens
the first citation), and the test reads the rendered DOM and saves a screenshot.

Skipped, saying why, when no Chromium binary is found. DOCS_QA_PAGE_SCREENSHOT=FILE.png
keeps the screenshot (otherwise it goes to a temporary folder)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import unittest
import urllib.parse
from html.parser import HTMLParser

from helpers import LiveDocsServer
import parallel

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process

BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER_TIMEOUT_S = 120
VIRTUAL_TIME_BUDGET_MS = 15000     # page-side time for the page's fetches to settle
QUESTION = "do kiedy składa się plik JPK_V7M"
TOKEN = "page-t0ken-for-tests"


GRAPH = {"nodes": [
    {"id": "p-holp", "type": "person", "name": "Ján Holp", "document_path": "osoby/holp.md"},
    {"id": "p-holpova", "type": "person", "name": "Mária Holpová"},
    {"id": "t1", "type": "thesis", "title": "Strojový preklad právnych textov", "year": 2024,
     "document_path": "prace/t1.md"},
    {"id": "t2", "type": "thesis", "title": "Vizualizácia dát miest", "year": 2024}],
    "edges": [{"source": "p-holp", "target": "t1", "type": "authored"},
              {"source": "p-holpova", "target": "t2", "type": "authored"}]}


def find_browser() -> str | None:
    """Return the path of a Chromium-like browser on PATH, or None."""
    return next((path for path in map(shutil.which, BROWSER_NAMES) if path), None)


def run_browser(browser: str, url: str, profile: str, *mode: str) -> subprocess.CompletedProcess:
    """Run headless Chromium on url with a throw-away profile, offline but for 127.0.0.1."""
    return subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--no-first-run", "--no-default-browser-check",
         "--disable-features=Translate,MediaRouter,OptimizationHints", "--hide-scrollbars",
         f"--user-data-dir={profile}", f"--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}", *mode, url],
        capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S, stdin=subprocess.DEVNULL)


class _Dom(HTMLParser):
    """Reads a dumped DOM: the text under each id'd element, the citation links, the
    highlighted lines and which elements are hidden."""

    VOID = {"meta", "link", "input", "br", "img", "hr"}

    def __init__(self) -> None:
        super().__init__()
        self.text: dict[str, str] = {}
        self.hidden: set[str] = set()
        self.cites: list[dict[str, str]] = []
        self.hits: list[tuple[str, str]] = []
        self._stack: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.text.setdefault(attrs["id"], "")
            if "hidden" in attrs:
                self.hidden.add(attrs["id"])
        if tag == "a" and "cite" in (attrs.get("class") or "").split():
            self.cites.append({**attrs, "text": ""})
        if tag == "li" and "hit" in (attrs.get("class") or "").split():
            self.hits.append((attrs.get("value") or "", ""))
        if tag not in self.VOID:
            self._stack.append((tag, attrs))

    def handle_endtag(self, tag):
        while self._stack:
            if self._stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        for tag, attrs in self._stack:
            if attrs.get("id"):
                self.text[attrs["id"]] += data
        if self._stack and self._stack[-1][0] == "a" and self.cites \
                and "cite" in (self._stack[-1][1].get("class") or "").split():
            self.cites[-1]["text"] += data
        if any(tag == "li" and "hit" in (attrs.get("class") or "").split() for tag, attrs in self._stack):
            self.hits[-1] = (self.hits[-1][0], self.hits[-1][1] + data)


@unittest.skipIf(find_browser() is None,
                 "no Chromium binary found on PATH (Debian: apt-get install chromium): "
                 "the page's real-browser test is skipped")
class PageInBrowserTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.browser = find_browser()
        cls.live = LiveDocsServer()
        cls.addClassCleanup(cls.live.close)

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def url(self, live: LiveDocsServer, **params: str) -> str:
        return live.url + "?" + urllib.parse.urlencode(params)

    def dom(self, url: str) -> _Dom:
        proc = run_browser(self.browser, url, os.path.join(self.tmp, "profile"), "--dump-dom")
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        parsed = _Dom()
        parsed.feed(proc.stdout)
        self.assertIn("index-version", parsed.text, proc.stdout[:2000])
        return parsed

    def test_the_answer_its_citations_and_the_cited_lines_are_rendered(self):
        dom = self.dom(self.url(self.live, q=QUESTION, mode="extractive", cite="1"))
        self.assertIn("Plik JPK_V7M składa się do 25. dnia miesiąca", dom.text["answer"])
        self.assertTrue(dom.cites, dom.text["answer"])
        first = dom.cites[0]
        self.assertEqual((first["data-path"], first["data-start"], first["data-end"]), ("jpk.md", "5", "5"))
        self.assertIn("[jpk.md:5-5]", first["text"])
        self.assertIn("jpk.md", dom.text["sources"])
        self.assertIn("JPK › Termin", dom.text["sources"])          # the heading breadcrumb
        self.assertNotIn("viewer", dom.hidden)
        self.assertIn("jpk.md:5-5", dom.text["viewer-title"])
        self.assertEqual(dom.hits, [("5", "cytowany: Plik JPK_V7M składa się do 25. dnia miesiąca "
                                          "następującego po okresie rozliczeniowym.")])
        self.assertIn("## Termin", dom.text["lines"])               # context around the cited line
        self.assertIn("nie zmienił się", dom.text["freshness"])
        self.assertRegex(dom.text["index-version"], r"^docs-[0-9a-f]+")

    def test_without_a_model_the_notes_say_so_in_plain_words(self):
        with socket.socket() as probe:            # a port that refuses: no model server there
            probe.bind(("127.0.0.1", 0))
            closed = probe.getsockname()[1]
        live = LiveDocsServer(base_url=f"http://127.0.0.1:{closed}/v1", retries=0)
        self.addCleanup(live.close)
        dom = self.dom(self.url(live, q=QUESTION, mode="assistant"))
        self.assertIn("Model nie odpowiedział", dom.text["notes"])   # in the question's language
        self.assertIn("Plik JPK_V7M składa się do 25. dnia miesiąca", dom.text["answer"])
        self.assertTrue(dom.cites)

    def test_a_citation_link_opens_its_lines_and_says_when_the_file_changed(self):
        live = LiveDocsServer()
        self.addCleanup(live.close)
        dom = self.dom(self.url(live, path="jpk.md", start="5", end="5"))
        self.assertIn("unchanged since it was indexed", dom.text["freshness"])
        path = os.path.join(live.docs, "jpk.md")
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("\nDopisane po indeksowaniu.\n")
        os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 10**9))
        dom = self.dom(self.url(live, path="jpk.md", start="5", end="5"))
        self.assertIn("changed after it was indexed", dom.text["freshness"])
        self.assertEqual([value for value, _ in dom.hits], ["5"])
        self.assertIn("answer-box", dom.hidden)

    def test_graph_answers_show_the_count_facts_sources_and_candidates(self):
        import graph_store
        live = LiveDocsServer(graph=graph_store.graph_build(GRAPH, "test-graph"))
        self.addCleanup(live.close)
        dom = self.dom(self.url(live, q="Koľko osôb má prácu v roku 2024?", mode="graph"))
        answer = dom.text["answer"]
        self.assertIn("Počet: 2 (presný: spočítalo sa všetko)", answer)
        self.assertIn("Práca „Strojový preklad právnych textov“ (2024) — autor: Ján Holp. — S", answer)
        self.assertIn("prace/t1.md", answer)                          # the fact's source
        self.assertIn("prace/t1.md", dom.text["sources"])
        dom = self.dom(self.url(live, q="Aký názov práce má Holp?", mode="graph"))
        self.assertIn("koho ste mysleli?", dom.text["answer"])
        self.assertIn("Ján Holp", dom.text["answer"])
        self.assertIn("Mária Holpová", dom.text["answer"])

    def test_a_weak_answer_is_shown_under_the_closest_passages_label(self):
        # each file holds one of the question's five words: its confidence is 0.2 (see
        # tests/test_confidence.py), below the default bar
        live = LiveDocsServer({"jablon.md": "Jabłoń lubi słońce i żyzną glebę.\n",
                               "grusza.md": "Grusza daje słodkie owoce jesienią.\n",
                               "sliwa.md": "Śliwa potrzebuje ciepłego stanowiska.\n",
                               "wisnia.md": "Wiśnia ma kwaśne owoce.\n",
                               "wybor.md": "Wybrać trzeba rozważnie, po namyśle.\n"})
        self.addCleanup(live.close)
        dom = self.dom(self.url(live, q="Co wybrać: jabłoń, grusza, śliwa czy wiśnia?", mode="extractive"))
        self.assertTrue(dom.text["answer"].startswith("Najbliższe fragmenty; mogą nie odpowiadać na pytanie:"),
                        dom.text["answer"])
        self.assertTrue(dom.cites)                                  # the quote is still shown, cited
        self.assertIn("Pewność tej odpowiedzi jest niska", dom.text["notes"])
        confident = self.dom(self.url(self.live, q=QUESTION, mode="extractive"))
        self.assertNotIn("Najbliższe fragmenty", confident.text["answer"])

    def test_with_a_token_the_page_asks_for_it_and_shows_no_answer(self):
        live = LiveDocsServer(token=TOKEN)
        self.addCleanup(live.close)
        dom = self.dom(self.url(live, q=QUESTION, mode="extractive"))
        self.assertNotIn("token-box", dom.hidden)
        self.assertIn("Token dostępu", dom.text["token-box"])
        self.assertEqual(dom.cites, [])

    def test_a_failed_request_is_said_in_the_status_line_not_answer_ready(self):
        too_long = "podatek " * 600                                     # over 4,000 characters: 400
        dom = self.dom(self.url(self.live, q=too_long, mode="extractive"))
        self.assertIn("The request failed: invalid_query", dom.text["status"])
        self.assertNotIn("Answer ready", dom.text["status"])
        self.assertIn("invalid_query", dom.text["answer"])

    def test_a_page_whose_name_was_rebound_to_the_server_gets_no_page_and_no_answer(self):
        # DNS rebinding in a real browser: the attacker's name resolves to 127.0.0.1
        port = self.live.port
        url = f"http://rebind.attacker.example:{port}/?" + urllib.parse.urlencode(
            {"q": QUESTION, "mode": "extractive"})
        proc = run_browser(self.browser, url, os.path.join(self.tmp, "profile"),
                           "--host-resolver-rules=MAP rebind.attacker.example 127.0.0.1", "--dump-dom")
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        self.assertIn("forbidden_host", proc.stdout)
        self.assertNotIn("JPK_V7M", proc.stdout)
        self.assertTrue(any("GET /?q=" in line and " 403 " in line for line in self.live.log),
                        self.live.log[-5:])

    def test_a_screenshot_of_the_answered_page_is_saved(self):
        target = os.environ.get("DOCS_QA_PAGE_SCREENSHOT") or os.path.join(self.tmp, "page.png")
        proc = run_browser(self.browser, self.url(self.live, q=QUESTION, mode="extractive", cite="1"),
                           os.path.join(self.tmp, "profile"), "--window-size=1100,900",
                           f"--screenshot={os.path.abspath(target)}")
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        with open(target, "rb") as fh:
            data = fh.read()
        self.assertTrue(data.startswith(b"\x89PNG\r\n\x1a\n"))
        self.assertGreater(len(data), 10000)                 # a blank page is a few KiB


if __name__ == "__main__":
    unittest.main()
