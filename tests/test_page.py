"""Tests of the web page at GET / (section 18b) through a real server on 127.0.0.1: one
self-contained document under a strict nonce-based Content-Security-Policy, texts in the
question's language, open without a token while its data calls are not, and its URL printed
by `serve`. What it renders in a browser is tests/test_page_browser.py's part."""

from __future__ import annotations

import json
import os
import re
import tempfile
import unittest
import urllib.parse
from html.parser import HTMLParser

from helpers import TAX_CORPUS, LiveDocsServer, ServeProcess, write_files

import docs_qa

TOKEN = "page-t0ken-for-tests"


class _Elements(HTMLParser):
    """Collects every start tag as (tag, attributes) and the text inside <script>/<style>."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.inline: list[tuple[str, dict[str, str | None], str]] = []
        self._open: tuple[str, dict] | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._open = (tag, dict(attrs))

    def handle_data(self, data):
        if self._open is not None:
            self.inline.append((*self._open, data))

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._open = None


def _policy(header: str) -> dict[str, list[str]]:
    """Return a Content-Security-Policy as {directive: [sources]}."""
    out = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


class PageTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.live = LiveDocsServer()
        cls.addClassCleanup(cls.live.close)

    def page(self, target: str = "/", live: LiveDocsServer | None = None, **headers: str):
        status, reply_headers, body = (live or self.live).request("GET", target, headers=headers)
        self.assertEqual(status, 200, target)
        return reply_headers, body.decode("utf-8")

    def test_the_page_is_html_under_a_strict_nonce_policy(self):
        headers, text = self.page()
        self.assertEqual(headers["content-type"], "text/html; charset=utf-8")
        policy = _policy(headers["content-security-policy"])
        self.assertEqual(policy["default-src"], ["'none'"])
        self.assertEqual(policy["connect-src"], ["'self'"])
        self.assertEqual((policy["base-uri"], policy["frame-ancestors"]), (["'none'"], ["'none'"]))
        self.assertEqual(policy["require-trusted-types-for"], ["'script'"])
        nonce = re.fullmatch(r"'nonce-([A-Za-z0-9_-]{20,})'", policy["script-src"][0]).group(1)
        self.assertEqual(policy["script-src"], [f"'nonce-{nonce}'"])
        self.assertEqual(policy["style-src"], [f"'nonce-{nonce}'"])
        self.assertNotIn("unsafe", headers["content-security-policy"])
        self.assertEqual((headers["x-content-type-options"], headers["cache-control"]), ("nosniff", "no-store"))
        parsed = _Elements()
        parsed.feed(text)
        runnable = [(tag, attrs) for tag, attrs, _ in parsed.inline
                    if not (tag == "script" and attrs.get("type") == "application/json")]
        self.assertEqual({tag for tag, _ in runnable}, {"script", "style"})
        for tag, attrs in runnable:
            self.assertEqual(attrs.get("nonce"), nonce, tag)
        _, again = self.page()
        self.assertNotIn(nonce, again)                      # a fresh nonce per response

    def test_the_page_loads_nothing_from_anywhere(self):
        _, text = self.page()
        parsed = _Elements()
        parsed.feed(text)
        for tag, attrs in parsed.tags:
            for name in ("src", "href", "action"):
                value = attrs.get(name)
                if value is not None:
                    self.assertRegex(value, r"^(#[\w-]+|/)$", f"<{tag} {name}={value}>")
            self.assertNotIn("style", attrs, tag)         # inline style attributes would need unsafe-inline
            self.assertFalse([a for a in attrs if a.startswith("on")], tag)
        self.assertNotRegex(text, r"https?://|//cdn|@import|url\(")

    def test_document_text_never_goes_through_an_html_sink(self):
        _, text = self.page()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                     "new Function"):
            self.assertNotIn(sink, text)
        self.assertIn("textContent", text)

    def test_the_token_lives_in_session_storage_and_a_header_never_a_url(self):
        _, text = self.page()
        self.assertIn("sessionStorage", text)
        self.assertIn('"Authorization"', text)
        self.assertNotIn("localStorage", text)
        self.assertNotRegex(text, r"[?&]token=")

    def test_the_page_needs_no_token_but_its_data_calls_do(self):
        live = LiveDocsServer(token=TOKEN)
        self.addCleanup(live.close)
        headers, text = self.page("/?q=JPK", live)
        self.assertIn('id="token-form"', text)
        self.assertNotIn(TOKEN, text)
        for method, target in (("POST", "/rag"), ("GET", "/source?path=jpk.md&start=1")):
            status, _, _ = live.request(method, target, b'{"question": "JPK"}' if method == "POST" else None)
            self.assertEqual(status, 401, target)

    def test_texts_follow_the_question_language_as_refusals_do(self):
        cases = {"/?q=do%20kiedy%20sk%C5%82adam%20JPK": ("pl", "Twoje pytanie"),
                 "/?q=Ak%C3%BD%20n%C3%A1zov%20pr%C3%A1ce%20m%C3%A1%20J%C3%A1n%20Holp%3F": ("sk", "Vaša otázka"),
                 "/?q=when%20is%20the%20JPK%20due": ("en", "Your question")}
        for target, (language, label) in cases.items():
            with self.subTest(target=target):
                headers, text = self.page(target)
                self.assertEqual(docs_qa.page_language(target[2:], None), language)
                self.assertIn(f'<html lang="{language}">', text)
                self.assertIn(label, text)
                self.assertEqual(headers["content-language"], language)

    def test_a_weak_answers_label_is_in_every_language_and_the_script_shows_it(self):
        self.assertEqual(set(docs_qa.WEAK_ANSWER_LABELS), set(docs_qa.PAGE_TEXTS))
        for language, texts in docs_qa.PAGE_TEXTS.items():
            self.assertEqual(texts["weak_answer"], docs_qa.WEAK_ANSWER_LABELS[language])
            self.assertTrue(texts["note_codes"]["weak_answer"])
        _, text = self.page("/?q=" + urllib.parse.quote("do kiedy składam JPK"))
        ui = text.split('<script type="application/json" id="ui">', 1)[1].split("</script>", 1)[0]
        self.assertEqual(json.loads(ui)["texts"]["weak_answer"],
                         "Najbliższe fragmenty; mogą nie odpowiadać na pytanie:")
        # the script puts T.weak_answer above an answer whose envelope says level low (what a
        # browser shows: tests/test_page_browser.py)
        self.assertRegex(docs_qa._PAGE_JS, r'env\.confidence\.level === "low"[^\n]*\n[^\n]*T\.weak_answer')

    def test_without_a_question_the_browser_language_is_used(self):
        _, text = self.page("/", **{"Accept-Language": "sk-SK,sk;q=0.9,en;q=0.5"})
        self.assertIn('<html lang="sk">', text)
        _, text = self.page("/", **{"Accept-Language": "de-DE"})
        self.assertIn('<html lang="en">', text)

    def test_a_question_in_the_url_is_never_written_into_the_html(self):
        _, text = self.page("/?q=%3Cscript%3Ealert(1)%3C%2Fscript%3Eunique-marker-42")
        self.assertNotIn("unique-marker-42", text)

    def test_the_graph_choice_appears_only_with_a_graph(self):
        _, text = self.page()
        self.assertNotIn('value="graph"', text)
        live = LiveDocsServer(graph=object())
        self.addCleanup(live.close)
        _, text = self.page("/", live)
        self.assertIn('value="graph"', text)

    def test_the_form_is_labelled_and_the_answer_is_a_live_region(self):
        _, text = self.page()
        parsed = _Elements()
        parsed.feed(text)
        labels = {attrs.get("for") for tag, attrs in parsed.tags if tag == "label"}
        inputs = [attrs for tag, attrs in parsed.tags if tag == "input" and attrs.get("type") != "radio"]
        self.assertTrue(inputs)
        for attrs in inputs:
            self.assertIn(attrs["id"], labels)
        live = {attrs.get("id") for tag, attrs in parsed.tags if attrs.get("aria-live") == "polite"}
        self.assertEqual(live, {"status", "answer"})
        self.assertIn('name="viewport"', text)

    def test_head_gets_the_headers_without_a_body(self):
        status, headers, body = self.live.request("HEAD", "/")
        self.assertEqual((status, body), (200, b""))
        self.assertIn("nonce-", headers["content-security-policy"])


class ServeCommandTest(unittest.TestCase):

    def test_serve_prints_the_page_url_on_start(self):
        with tempfile.TemporaryDirectory() as tmp:
            docs = write_files(os.path.join(tmp, "docs"), TAX_CORPUS)
            server = ServeProcess(docs, env={"XDG_CACHE_HOME": os.path.join(tmp, "cache")})
            try:
                url = f"http://127.0.0.1:{server.port}/"
                # the page line is logged right after the 'serving' line ServeProcess waits for
                self.assertTrue(server.wait_for_line(f"docs_qa: page: {url}"), server.stderr)
                import urllib.request
                with urllib.request.urlopen(url, timeout=30) as reply:
                    self.assertIn("<!doctype html>", reply.read().decode("utf-8"))
            finally:
                server.close()

    def test_an_ipv6_address_is_bracketed(self):
        self.assertEqual(docs_qa.page_url("::1", 8000), "http://[::1]:8000/")
        self.assertEqual(docs_qa.page_url("127.0.0.1", 8000), "http://127.0.0.1:8000/")


if __name__ == "__main__":
    unittest.main()
