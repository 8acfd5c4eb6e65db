"""The web page (sections 18b and 21) in a real browser: headless Chromium from the system's
packages (Debian: apt-get install chromium), driven with the standard library only, against
a live server on 127.0.0.1. The page runs a question from its URL (?q=...&cite=1 also opens
the first citation), and the test reads the rendered DOM and saves a screenshot.

One browser serves the class, driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: JSON messages ended by NUL on its fds 3 and 4); each page opens in
a browser context of its own (nothing shared with the pages before it, as a fresh profile)
and is read once the page's fetches have settled, as --virtual-time-budget does.

Skipped, saying why, when no Chromium binary is found. DOCS_QA_PAGE_SCREENSHOT=FILE.png
keeps the screenshot (otherwise it goes to a temporary folder)."""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest
import urllib.parse
from html.parser import HTMLParser

from helpers import LiveDocsServer
import parallel

load_tests = parallel.in_worker(__name__)   # the whole suite runs this module in a worker process

BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER_TIMEOUT_S = 120            # a guard on one message from the browser, not a bound
VIRTUAL_TIME_BUDGET_MS = 15000     # page-side time for the page's fetches to settle
QUESTION = "do kiedy składa się plik JPK_V7M"
TOKEN = "page-t0ken-for-tests"
REBOUND_NAME = "rebind.attacker.example"   # the browser resolves it to 127.0.0.1 (DNS rebinding)


GRAPH = {"nodes": [
    {"id": "p-holp", "type": "person", "name": "Ján Holp", "document_path": "osoby/holp.md"},
    {"id": "p-holpova", "type": "person", "name": "Mária Holpová"},
    {"id": "t1", "type": "thesis", "title": "Strojový preklad právnych textov", "year": 2024,
     "document_path": "prace/t1.md"},
    {"id": "t2", "type": "thesis", "title": "Vizualizácia dát miest", "year": 2024}],
    "edges": [{"source": "p-holp", "target": "t1", "type": "authored"},
              {"source": "p-holpova", "target": "t2", "type": "authored"}]}


def find_browser() -> str | None:
    """Return the path of a Chromium-like browser on PATH, or None (or on a system without
    POSIX descriptors to hand it its pipe on)."""
    if os.name != "posix":
        return None
    return next((path for path in map(shutil.which, BROWSER_NAMES) if path), None)


LAUNCHER = ("import os, sys\n"                  # the browser's ends of the pipe onto fds 3 and 4
            "read, write = int(sys.argv[1]), int(sys.argv[2])\n"
            "os.dup2(read, 3)\n"
            "os.dup2(write, 4)\n"
            "os.close(read)\n"
            "os.close(write)\n"
            "os.execv(sys.argv[3], sys.argv[3:])\n")


def _above_4(fd: int) -> int:
    """Return a copy of fd numbered 5 or more (closing fd)."""
    import fcntl
    copy = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 5)
    os.close(fd)
    return copy


class BrowserError(AssertionError):
    """The browser failed a command, went silent or ended; the message ends with its stderr."""


class Browser:
    """Headless Chromium, offline but for 127.0.0.1, driven over its DevTools pipe."""

    def __init__(self, path: str, folder: str) -> None:
        # a small launcher moves the browser's ends onto fds 3 and 4 (so they must be others)
        to_browser, self._commands, self._replies, from_browser = (
            _above_4(fd) for fd in (*os.pipe(), *os.pipe()))
        self._stderr_path = os.path.join(folder, "browser.err")
        with open(self._stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", LAUNCHER, str(to_browser), str(from_browser), path,
                 "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-extensions", "--no-first-run", "--no-default-browser-check",
                 "--disable-features=Translate,MediaRouter,OptimizationHints", "--hide-scrollbars",
                 f"--host-resolver-rules=MAP {REBOUND_NAME} 127.0.0.1",
                 f"--user-data-dir={os.path.join(folder, 'profile')}", "--remote-debugging-pipe",
                 "about:blank"],
                pass_fds=(to_browser, from_browser), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=err)
        os.close(to_browser)
        os.close(from_browser)
        self._buffer, self._last_id, self._events = b"", 0, []

    def stderr(self) -> str:
        with open(self._stderr_path, encoding="utf-8", errors="replace") as fh:
            return fh.read()[-2000:]

    def _message(self) -> dict:
        while b"\0" not in self._buffer:
            if not select.select([self._replies], [], [], BROWSER_TIMEOUT_S)[0]:
                raise BrowserError(f"the browser sent nothing for {BROWSER_TIMEOUT_S} s:\n{self.stderr()}")
            data = os.read(self._replies, 1 << 20)
            if not data:
                raise BrowserError(f"the browser ended (exit code {self.proc.poll()}):\n{self.stderr()}")
            self._buffer += data
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Return the result of one command (of a page's session, if given)."""
        self._last_id += 1
        message = {"id": self._last_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        try:
            os.write(self._commands, json.dumps(message).encode() + b"\0")
        except BrokenPipeError:
            raise BrowserError(f"the browser ended (exit code {self.proc.poll()}):\n{self.stderr()}") from None
        while (reply := self._message()).get("id") != self._last_id:
            self._events.append(reply)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}\n{self.stderr()}")
        return reply["result"]

    def _event(self, method: str, session: str) -> dict:
        """Return the next event of that name from the page's session."""
        def wanted(message: dict) -> bool:
            return message.get("method") == method and message.get("sessionId") == session
        for number, message in enumerate(self._events):
            if wanted(message):
                return self._events.pop(number)
        while not wanted(message := self._message()):
            self._events.append(message)
        return message

    def _open(self, url: str, width: int | None, height: int | None) -> tuple[str, str, str]:
        """Open url in a new browser context once its fetches have settled (virtual time runs
        only while none is pending, up to VIRTUAL_TIME_BUDGET_MS); return (context, target, session)."""
        context = self.send("Target.createBrowserContext")["browserContextId"]
        target = self.send("Target.createTarget", {"url": "about:blank", "browserContextId": context})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        if width:
            self.send("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session)
        self.send("Emulation.setVirtualTimePolicy", {"policy": "pause"}, session)
        self.send("Page.navigate", {"url": url}, session)
        self.send("Emulation.setVirtualTimePolicy", {"policy": "pauseIfNetworkFetchesPending",
                                                     "budget": VIRTUAL_TIME_BUDGET_MS}, session)
        self._event("Emulation.virtualTimeBudgetExpired", session)
        self._events = [m for m in self._events if m.get("sessionId") != session]
        return context, target, session

    def _close(self, context: str, target: str) -> None:
        self.send("Target.closeTarget", {"targetId": target})
        self.send("Target.disposeBrowserContext", {"browserContextId": context})

    def dom(self, url: str) -> str:
        """Return the page's DOM as HTML, as --dump-dom prints it."""
        context, target, session = self._open(url, None, None)
        try:
            return self.send("Runtime.evaluate", {"expression": "document.documentElement.outerHTML",
                                                  "returnByValue": True}, session)["result"]["value"]
        finally:
            self._close(context, target)

    def screenshot(self, url: str, width: int, height: int) -> bytes:
        """Return a PNG of the page in a window of that size, as --screenshot saves it."""
        context, target, session = self._open(url, width, height)
        try:
            return base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"}, session)["data"])
        finally:
            self._close(context, target)

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except BrowserError:
            pass
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._commands)
        os.close(self._replies)


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
        cls.folder = tempfile.mkdtemp()
        cls.addClassCleanup(shutil.rmtree, cls.folder, True)
        cls.browser = Browser(find_browser(), cls.folder)
        cls.addClassCleanup(cls.browser.close)
        cls.live = LiveDocsServer()
        cls.addClassCleanup(cls.live.close)

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def url(self, live: LiveDocsServer, **params: str) -> str:
        return live.url + "?" + urllib.parse.urlencode(params)

    def dom(self, url: str) -> _Dom:
        html = self.browser.dom(url)
        parsed = _Dom()
        parsed.feed(html)
        self.assertIn("index-version", parsed.text, html[:2000])
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
        url = f"http://{REBOUND_NAME}:{port}/?" + urllib.parse.urlencode({"q": QUESTION, "mode": "extractive"})
        html = self.browser.dom(url)
        self.assertIn("forbidden_host", html)
        self.assertNotIn("JPK_V7M", html)
        self.assertTrue(any("GET /?q=" in line and " 403 " in line for line in self.live.log),
                        self.live.log[-5:])

    def test_a_screenshot_of_the_answered_page_is_saved(self):
        target = os.environ.get("DOCS_QA_PAGE_SCREENSHOT") or os.path.join(self.tmp, "page.png")
        png = self.browser.screenshot(self.url(self.live, q=QUESTION, mode="extractive", cite="1"), 1100, 900)
        with open(target, "wb") as fh:
            fh.write(png)
        with open(target, "rb") as fh:
            data = fh.read()
        self.assertTrue(data.startswith(b"\x89PNG\r\n\x1a\n"))
        self.assertGreater(len(data), 10000)                 # a blank page is a few KiB


if __name__ == "__main__":
    unittest.main()
