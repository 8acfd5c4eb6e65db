"""graph_store — GraphRAG over a JSON knowledge graph, answering in the v1 envelope.

The graph (persons, theses, keywords, typed edges) is loaded from one JSON file into
memory, validated, and indexed once: adjacency lists in both directions by edge type,
a name/title token index per node type, and a year index. Questions in Slovak,
English or Polish are mapped to a fixed set of parameterised traversals (no generated
queries); every displayed list obeys a limit that is proven by fetching one item past
it, and aggregations count everything regardless of display limits.

Sections
    1. Constants      -- defaults, limits, the graph format, question words and patterns
    2. Types          -- Node, Graph, GraphLimits, Intent, Fact, GraphPath, GraphResult
    3. Errors         -- GraphFormatError (a RetrievalUnavailableError)
    4. Names          -- name morphology: a stem that keeps diacritics, match keys, the
                         Slovak and Polish case forms of a name; general text (folding,
                         words, stop words, language) comes from retrieval_contract
    5. Load/validate  -- graph_load (the only file I/O), graph_build (pure), indexes
    6. Entity matching-- persons via the token index (full names, then partial ones)
         6a. Keywords and titles
         6b. Did you mean  -- names of similar spelling for a typo (offered, never chosen)
    7. Questions      -- graph_parse_question: language, intent, year
    8. Answers        -- evidence within the limits, no-answer and ambiguous results; _absent
                         says what is known when the asked relation is missing
         8a. Kinds about a person, keyword or title -- one function per kind
         8b. Kinds about supervision and counts, ask() -- the dispatch
         8c. Counts, lists and rankings under any filters; the question form registry
    9. Envelope       -- to_envelope: GraphResult -> retrieval_contract.Envelope
   10. CLI            -- format_answer_text (the one text renderer of a graph answer, also
                         used by docs_qa.py's CLI and MCP), main
   11. Assets         -- the answer sentences in each language
         11a. Relation and step names, diagnostic lines, text headings

Public API
    graph_load(path, max_bytes, git_probe) -> Graph graph_build(data, index_version) -> Graph
    graph_parse_question(q, graph) -> Intent | None
    ask(q, graph, limits) -> GraphResult to_envelope(result) -> Envelope
    GraphLimits, Graph, Intent, GraphResult, GraphFormatError, GRAPH_EXTRA_SCHEMA
    format_answer_text(envelope_dict) -> str, main(argv=None) -> int
    name_key(word) -> str, QUESTION_WORDS
"""

from __future__ import annotations

import argparse
import bisect
import gc
import hashlib
import heapq
import itertools
import json
import os
import re
import stat
import sys
import unicodedata
from dataclasses import asdict, dataclass, field, replace
from collections import Counter
from collections.abc import Sequence
from typing import Any, Callable, Iterable, Iterator

import retrieval_contract as rc

__all__ = [
    "DEFAULT_ENTITY_LIMIT", "DEFAULT_EVIDENCE_LIMIT", "DEFAULT_FACT_LIMIT",
    "DEFAULT_PATH_LIMIT", "DEFAULT_MAX_PATH_LENGTH", "GRAPH_EXTRA_SCHEMA",
    "Node", "Graph", "GraphLimits", "Intent", "Fact", "GraphPath", "GraphResult",
    "GraphFormatError",
    "QUESTION_WORDS", "name_key",
    "graph_load", "graph_build",
    "graph_parse_question", "ask", "to_envelope",
    "format_answer_text", "main",
]


# === 1. Constants — defaults, limits, the graph format, the question words and patterns ===

DEFAULT_ENTITY_LIMIT = 20
DEFAULT_EVIDENCE_LIMIT = 20
DEFAULT_FACT_LIMIT = 10
DEFAULT_PATH_LIMIT = 10
DEFAULT_MAX_PATH_LENGTH = 2
MAX_QUESTION_CHARS = rc.MAX_QUESTION_CHARS   # /graph's schema and the CLI agree
GRAPH_MAX_BYTES = 256 * 1024 * 1024   # a larger graph file is refused unread (500k edges: ~41 MB)
GRAPH_MAX_INT_DIGITS = 18     # a longer integer (e.g. a 5,000-digit year) is a format error
DEFAULT_LANGUAGE = "sk"       # a question whose words do not tell its language (a name alone)
MIN_STEM_CHARS = rc.NAME_MIN_STEM_CHARS   # a name stem never gets shorter than this
MIN_CONTENT_CHARS = 3         # title/keyword words shorter than this are ignored
TITLE_MIN_COVERAGE = 0.6      # share of a title's words the question must contain

PERSON, THESIS, KEYWORD = "person", "thesis", "keyword"
AUTHORED, SUPERVISED_BY, HAS_KEYWORD = "authored", "supervised_by", "has_keyword"
# Known edge types and the node types their ends must have.
EDGE_ENDS = {AUTHORED: (PERSON, THESIS), SUPERVISED_BY: (THESIS, PERSON),
             HAS_KEYWORD: (THESIS, KEYWORD)}
NAMED_TYPES = (PERSON, KEYWORD)   # these need `name`; theses need `title` and `year`
OPTIONAL_STRINGS = ("document_path", "source_url", "title", "kind", "name")

# Singular case endings of name words, by the nominative's ending (see _name_forms): the
# Slovak ones, then the Polish ones a Slovak name takes in a Polish sentence. A question
# word that is one of a name word's forms, diacritics included, is exact evidence; a form
# of the other gender's name on the same stem (Jany or Janą for Ján, Novákovej for Novák,
# Janem for Jana) is not.
MASC_ENDINGS = ("", "a", "ovi", "om",                 # Ján, Jána, Jánovi, Jánom
                "em", "iem", "owi", "u", "ie")        # Janem, Novákiem, Janowi, Nováku, Janie
MASC_A_ENDINGS = ("a", "u", "ovi", "om",              # Sloboda, Slobodu, Slobodovi, Slobodom
                  "y", "ę", "ą")                      # Slobody, Slobodę, Slobodą
MASC_O_ENDINGS = ("o", "a", "ovi", "om")              # Šimko, Šimka, Šimkovi, Šimkom
MASC_ADJ_ENDINGS = ("ý", "ého", "ému", "om", "ým",    # Malý, Malého, Malému, Malom, Malým
                    "ego", "emu", "ym")               # Dlhego, Dlhemu, Dlhym
FEM_A_ENDINGS = ("a", "y", "e", "u", "ou",            # Jana, Jany, Jane, Janu, Janou
                 "ą", "ę", "ie")                      # Janą, Janę, Janie
FEM_IA_ENDINGS = ("ia", "ie", "ii", "iu", "iou",      # Mária, Márie, Márii, Máriu, Máriou
                  "ią", "ię")                         # Marią, Marię
FEM_OVA_ENDINGS = ("ová", "ovej", "ovú", "ovou",      # Nováková, Novákovej, Novákovú, Novákovou
                   "ową", "owej", "ovą")              # Novákową, Novákowej, Novákovą
FEM_ADJ_ENDINGS = ("á", "ej", "ú", "ou", "ą")         # Malá, Malej, Malú, Malou, Malą
MALE_OF_OVA_ENDINGS = ("", "a", "u", "o", "ovi", "om",  # the male surname behind an -ová form
                       "em", "iem", "owi", "ie")
# How a question word relates to a name word with the same key, best first (see _word_relation).
EXACT, FOLDED, GENDER, CLASH = "exact", "folded", "gender", "clash"
RELATION_ORDER = (EXACT, FOLDED, GENDER, CLASH)             # best first
# A person's fit over its label and aliases, best first: a full name wins, and evidence that
# the question names someone else outweighs a partial fit of a short alias (P. Kováč).
FIT_ORDER = ("full", CLASH, GENDER, "partial")

# Intent patterns over the folded, lower-case question (diacritics removed).
RE_YEAR = re.compile(r"\b(19[5-9]\d|20\d\d)\b")
RE_COUNT = re.compile(r"\b(kolko|how many|ile|number of|pocet|count)\b")
RE_WHO_LIST = re.compile(r"^\s*(kto|ktori|ktore|ktorych|who|which|list|wymien|vymenuj)\b")
RE_WHO = re.compile(r"^\s*(kto|ktori|who|kim)\b")   # asks for persons
RE_THESIS_WORD = re.compile(r"\b(prac\w*|thes[ie]s|diplom\w*|bakalar\w*|dissertation)\b")
RE_PERSON_WORD = re.compile(r"\b(osob\w*|persons?|people|students?|student\w*|autor\w*|"
                            r"authors?|ludi|ludzi)\b")
RE_AUTHOR_OF = re.compile(r"\b(kto napisal|kto je autor\w*|kto jest autor\w*|kto napisala|"
                          r"who wrote|who is the author|who authored|author of|autor\w* prac\w*)\b")
RE_ABOUT = re.compile(r"\b(co vieme o|co je zname o|co viete o|co wiadomo o|what is known about|"
                      r"what do you know about|what do we know about|tell me about|"
                      r"informacie o|povedz mi o)\b")
RE_SUPERVISE = re.compile(r"\b(veduc\w*|skolitel\w*|supervis\w*|viedol|viedla|vedie|"
                          r"promotor\w*|opiekun\w*|pod vedenim|prowadz\w*|spoluvie\w*)\b")
RE_SUPERVISED_BY = re.compile(r"(^\s*(ktore|ktorych|ake|which|what|list|jakie|vymenuj)\b)|"
                              r"\b(supervised by|pod vedenim|theses of supervisor)\b")
RE_KEYWORD = re.compile(r"\b(klucov\w*|keywords?|kluczow\w*|tagom|tag)\b")
RE_WROTE = re.compile(r"\b(napisal|napisala|napisan\w*|wrote|write|written|obhajil|obhajila)\b")
RE_TITLE = re.compile(r"\b(nazov|nazvom|title|titled|tytul\w*|tema|temu|temat\w*)\b")
RE_CALLED = re.compile(r"\b(ako sa vola|ako znie|called|named|jak sie nazywa|jak brzmi)\b")
RE_WHEN = re.compile(r"\b(v ktorom roku|ktorom roku|kedy|when|which year|what year|"
                     r"w ktorym roku|kiedy)\b")
RE_DEFEND = re.compile(r"\b(obhaj\w*|defen[cds]\w*|obroni\w*|finish\w*|graduat\w*|"
                       r"dokoncil\w*|skoncil\w*|ukonczyl\w*)\b")
RE_WHO_IS = re.compile(r"^\s*(kto je|kto bol|kto bola|kto to je|who is|who s|who was|"
                       r"kim jest|kim byl\w*|kto jest)\b")
RE_COSUPERVISE = re.compile(
    r"\b(spoluved\w*|spoluvie\w*|spolu s|spolocne s|co ?supervis\w*|together with|jointly|wspolnie z|"
    r"razem z|wspolpromotor\w*|dvoch veduc\w*|dvaja veduci|viac(?:erych)? veduc\w*|"
    r"viacer\w* veduc\w*|two supervisors|several supervisors|more than one supervisor|"
    r"multiple supervisors|dwoch promotor\w*|kilku promotor\w*|dwoma promotor\w*)\b")
RE_LIST_ALL = re.compile(r"\b(vsetk\w*|vsetci|all|every|list|vymenuj|wymien|wszys\w*|"
                         r"kto su|who are|ktori|ktorzy|zoznam)\b")

# Words of a question that never name an entity: the stop words, plus the words of the
# graph's question forms (thesis, supervisor, year, count, ...) and the function words
# those forms use that are not stop words (k, s, zo, ktori, ile): rc.LANGUAGES' graph_words.
QUESTION_WORDS = rc.STOP_WORDS.union(*(language.graph_words for language in rc.LANGUAGES.values()))

# The words of filtered counts, lists and rankings, and of the relations the graph lacks,
# one table per language: each entry is a tuple of regex fragments over the folded, lower-case
# question (diacritics removed), matched as whole words. Every question is read with all three
# tables (questions mix languages, and a short one may be told the wrong language); the split
# keeps each language's words together. Y in a year entry stands for a year.
SET_WORDS_SK: dict[str, tuple[str, ...]] = {
    "level_bachelor": (r"bakalar\w*",),
    "level_master": (r"diplom\w*", r"magistersk\w*", r"inziniersk\w*"),
    "level_doctoral": (r"dizertac\w*", r"doktorand\w*", r"doktorsk\w*"),
    "list": (r"ktore", r"ktora", r"ake", r"aka", r"vymenuj", r"ukaz", r"zoznam\w*", r"napis",
             r"ktorych", r"akych"),
    "rank": (r"najviac", r"najcastejs\w*", r"najcastejsie", r"najpocetnejs\w*",
             r"najpopularnejs\w*", r"najvacs\w* pocet\w*"),
    "top": (r"prv\w*",),
    "year_from": (r"od", r"pocnuc", r"pocnuc rokom"),
    "year_after": (r"po", r"neskor ako", r"neskor nez"),
    "year_to": (r"do", r"az do"),
    "year_before": (r"pred", r"skor ako", r"skor nez"),
    "year_between": (r"medzi",),
    "year_during": (r"v rokoch", r"v obdobi", r"z rokov", r"za roky"),
    "year_and": (r"a", r"alebo"),
    "year_through": (r"az", r"do", r"az do"),
    "year_noun": (r"roku", r"rokom", r"rok", r"rokmi", r"rokoch"),
    "topic": (r"o", r"na temu", r"na tému", r"s temou", r"tyka\w* sa", r"tykajuc\w*",
              r"zameran\w* na", r"v oblasti", r"z oblasti", r"venovan\w*"),
    "ranked_year": (r"ktory rok", r"v ktorom roku", r"ktorom roku", r"rok"),
    "ranked_keyword": (r"tema", r"temy", r"temou", r"oblast\w*"),
    "filler": (r"vznikl\w*", r"obhajen\w*", r"obhaj\w*", r"odovzdan\w*", r"napisan\w*",
               r"zaverecn\w*", r"celkovo", r"celkom", r"spolu", r"katedr\w*", r"fakult\w*",
               r"nasej", r"nasa", r"nase", r"existuj\w*", r"evidovan\w*", r"grafe?", r"mame",
               r"mate", r"maju", r"mali", r"mal", r"mala", r"bolo", r"boli", r"bol", r"bola",
               r"vsetk\w*", r"vedenych", r"vedene", r"vedena", r"kolko", r"pocet",
               r"kluc\w*", r"slov(?:o|a|om|ami|ach|u)?", r"kto", r"ktori", r"veduc\w*", r"vyskytuj\w*",
               r"objavuj\w*", r"pouzit\w*", r"pouziva\w*", r"casto", r"studentov", r"studenti",
               r"spomedzi", r"medzi"),
    "relation_opponent": (r"oponent\w*", r"recenzent\w*", r"posud\w*", r"oponovan\w*"),
    "relation_grade": (r"znamk\w*", r"hodnoten\w*", r"klasifik\w*", r"hodnotil\w*", r"bodov"),
    "relation_committee": (r"komisi\w*", r"clen\w* komisie", r"predsed\w*"),
    "relation_email": (r"e ?mail\w*", r"mail\w*", r"telefon\w*", r"kontakt\w*"),
}
SET_WORDS_EN: dict[str, tuple[str, ...]] = {
    "level_bachelor": (r"bachelor\w*", r"bsc", r"undergraduate"),
    "level_master": (r"master\w*", r"msc", r"diploma"),
    "level_doctoral": (r"doctoral", r"doctorate", r"phd\w*", r"dissertations?"),
    "list": (r"which", r"what", r"list", r"show", r"name"),
    "rank": (r"most", r"most common", r"most frequent", r"most often", r"most popular",
             r"the most", r"top", r"largest number"),
    "top": (r"top", r"first"),
    "year_from": (r"since", r"from Y on", r"from Y onwards?", r"starting in", r"starting from",
                  r"starting with", r"Y and later", r"Y or later", r"Y onwards?"),
    "year_after": (r"after", r"later than"),
    "year_to": (r"until", r"till", r"up to", r"up until", r"through", r"Y or earlier",
               r"Y and earlier"),
    "year_before": (r"before", r"earlier than", r"prior to"),
    "year_between": (r"between",),
    "year_during": (r"in the years", r"in years", r"during", r"from", r"over"),
    "year_and": (r"and", r"or"),
    "year_through": (r"to", r"until", r"till", r"through"),
    "year_noun": (r"the year", r"year", r"years", r"the years"),
    "topic": (r"about", r"on", r"on the topic of", r"regarding", r"concerning", r"dealing with",
              r"in the area of", r"in the field of", r"related to", r"focused on"),
    "ranked_year": (r"which year", r"what year", r"year"),
    "ranked_keyword": (r"topics?", r"areas?", r"subjects?"),
    "filler": (r"defended", r"written", r"submitted", r"completed", r"finished", r"created",
               r"produced", r"there", r"total", r"in total", r"overall", r"altogether",
               r"department", r"faculty", r"exist", r"recorded", r"graph", r"our", r"common",
               r"frequent", r"often", r"popular", r"used", r"appear\w*", r"theses", r"thesis",
               r"works?", r"final", r"many", r"how", r"number", r"count", r"keywords?", r"tags?",
               r"supervis\w*", r"authors?", r"wrote", r"who", r"did", r"do", r"does", r"have",
               r"has", r"had", r"were", r"was", r"are", r"is", r"students?", r"all", r"among",
               r"of all", r"ones?"),
    "relation_opponent": (r"opponents?", r"reviewers?", r"reviewed", r"examiners?", r"referees?",
                          r"second readers?", r"review"),
    "relation_grade": (r"grades?", r"graded", r"marks?", r"scores?", r"scored"),
    "relation_committee": (r"committee\w*", r"jury"),
    "relation_email": (r"e ?mail\w*", r"mail\w*", r"phone\w*", r"contact\w*"),
}
SET_WORDS_PL: dict[str, tuple[str, ...]] = {
    "level_bachelor": (r"licencjack\w*", r"inzynier\w*", r"bakalar\w*"),
    "level_master": (r"magister\w*", r"magisterk\w*", r"dyplomow\w*"),
    "level_doctoral": (r"doktorsk\w*", r"doktorat\w*", r"rozpraw\w* doktorsk\w*"),
    "list": (r"jakie", r"ktore", r"wymien", r"pokaz", r"lista", r"ktorych", r"jakich"),
    "rank": (r"najwiecej", r"najczest\w*", r"najczesciej", r"najpopularniejsz\w*",
             r"najwieksz\w* liczb\w*"),
    "top": (r"pierwsz\w*",),
    "year_from": (r"od", r"poczawszy od", r"poczynajac od"),
    "year_after": (r"po", r"pozniej niz", r"pozniej niz w"),
    "year_to": (r"do", r"az do"),
    "year_before": (r"przed", r"wczesniej niz"),
    "year_between": (r"miedzy", r"pomiedzy"),
    "year_during": (r"w latach", r"latach", r"w okresie", r"z lat", r"za lata"),
    "year_and": (r"i", r"a", r"lub", r"oraz", r"albo"),
    "year_through": (r"do",),
    "year_noun": (r"roku", r"rokiem", r"rok", r"latami", r"roce"),
    "topic": (r"o", r"na temat", r"dotyczac\w*", r"z zakresu", r"z dziedziny", r"w dziedzinie",
              r"poswiecon\w*", r"o tematyce", r"w obszarze"),
    "ranked_year": (r"ktory rok", r"w ktorym roku", r"rok"),
    "ranked_keyword": (r"temat\w*", r"tematyk\w*", r"dziedzin\w*"),
    "filler": (r"powsta\w*", r"obronion\w*", r"obron\w*", r"napisan\w*", r"zlozon\w*",
               r"lacznie", r"w sumie", r"razem", r"katedr\w*", r"wydzia\w*", r"istniej\w*",
               r"jest", r"sa", r"bylo", r"byly", r"zostalo", r"zostaly", r"zosta\w*",
               r"ile", r"liczba", r"kluczow\w*", r"slow(?:o|a|em|ami|ach|ie)?", r"kto", r"promotor\w*",
               r"prowadz\w*", r"prowadzil\w*", r"wystepuj\w*", r"uzywan\w*", r"czesto",
               r"studentow", r"studenci", r"wszystki\w*", r"mial\w*", r"ma", r"maja",
               r"dyplomow\w*", r"koncow\w*", r"wsrod", r"sposrod"),
    "relation_opponent": (r"recenzent\w*", r"recenzj\w*", r"opiniujac\w*"),
    "relation_grade": (r"ocen\w*", r"punktow"),
    "relation_committee": (r"komisj\w*", r"przewodniczac\w*"),
    "relation_email": (r"e ?mail\w*", r"mail\w*", r"telefon\w*", r"kontakt\w*", r"adres\w*"),
}
SET_WORDS = {"sk": SET_WORDS_SK, "en": SET_WORDS_EN, "pl": SET_WORDS_PL}
YEAR = r"(19[5-9]\d|20\d\d)"
RANKING_CACHE_SIZE = 256          # rankings kept per loaded graph (by what is ranked and filters)
LEVELS = ("bachelor", "master", "doctoral")
# The relations a graph may be asked about but this graph format does not hold.
MISSING_RELATIONS = ("opponent", "grade", "committee", "email")


def _alternatives(key: str) -> str:
    """Return the fragments of a SET_WORDS entry in all three languages as one alternation
    (longest first)."""
    fragments = sorted({f for table in SET_WORDS.values() for f in table.get(key, ())},
                       key=len, reverse=True)
    return "(?:" + "|".join(fragments) + ")"


def _set_pattern(key: str) -> re.Pattern:
    """Return the regex of a SET_WORDS entry over all three languages, as whole words."""
    return re.compile(r"\b" + _alternatives(key) + r"\b")


RE_LEVEL = {level: _set_pattern(f"level_{level}") for level in LEVELS}
RE_SET_LIST = _set_pattern("list")
RE_RANK = _set_pattern("rank")
RE_FILLER = _set_pattern("filler")
RE_TOPIC = _set_pattern("topic")
RE_RANKED_YEAR = _set_pattern("ranked_year")
RE_RANKED_KEYWORD = _set_pattern("ranked_keyword")
RE_MISSING = {rel: _set_pattern(f"relation_{rel}") for rel in MISSING_RELATIONS}
RE_SMALL_NUMBER = re.compile(r"\b(\d{1,3})\b")
RE_TOP_N = re.compile(r"\b(?:top|" + "|".join(
    f for t in SET_WORDS.values() for f in t["top"]) + r") (\d{1,3})\b|\b(\d{1,3}) (?=" +
    RE_RANK.pattern[2:] + ")")

# Which absent_* sentence says that the asked relation is missing, by question kind.
ABSENT = {"thesis_title": "absent_authored", "thesis_year": "absent_authored",
          "supervisor_of": "absent_supervisor", "supervised_by": "absent_supervised",
          "co_supervisors": "absent_co_supervised", "keyword_theses": "absent_keyword",
          "author_of_title": "absent_authors", "who_is": "absent_any", "about": "absent_any"}

# Did you mean: the largest folded edit distance offered, by the length of the typed word.
SUGGEST_MAX_DISTANCE = ((4, 1), (10**9, 2))   # up to 4 letters: 1 edit; longer: 2
SUGGEST_LIMIT = 3                              # names offered at most
SUGGEST_MIN_CHARS = 3                          # shorter typed words are never corrected
SIMILAR_SPELLING = "similar spelling"

# An ambiguous answer by the type of its candidates: (answer sentence, reason, reasons line).
AMBIGUOUS = {PERSON: ("ambiguous_person", "ambiguous_person", "persons fit the name in the question"),
             THESIS: ("ambiguous_title", "ambiguous_title", "theses fit the title in the question equally well"),
             KEYWORD: ("ambiguous_keyword", "ambiguous_keyword", "keywords fit the same words of the question")}

# JSON Schema of the tool fields to_envelope adds (for rc.envelope_schema).
_LIST = {"type": "array"}
GRAPH_EXTRA_SCHEMA: dict[str, Any] = {
    "tool": {"const": "graph"},
    "intent": {"type": ["string", "null"]},
    "entities": _LIST, "facts": _LIST, "paths": _LIST, "documents": _LIST,
    "aggregation": {"type": ["object", "null"]},
    "reasons": {"type": "array", "items": {"type": "string"}},
    "reasons_text": {"type": "array", "items": {"type": "string"}},   # reasons in `language`
    "rejected_candidates": _LIST,
    "answer": {"type": "string"},
    "language": {"enum": ["sk", "en", "pl"]},     # of the question: the answer's and the text's
    "limits": {"type": "object"},
}


# === 2. Types — nodes, the indexed graph, limits, intents and results ===

@dataclass(frozen=True, slots=True)
class Node:
    """One graph node; `label` is its name (person, keyword) or title (thesis)."""

    node_id: str
    node_type: str
    label: str
    aliases: tuple[str, ...] = ()
    year: int | None = None
    document_path: str | None = None
    source_url: str | None = None
    title: str | None = None        # the node's `title` as given; the source title, never guessed
    kind: str | None = None         # a thesis's `kind` as given (bakalárska, master, ...)


@dataclass
class Graph:
    """The loaded graph and its indexes, all built once by graph_build.

    out_edges[a][t] lists targets b of edges a -t-> b; in_edges[b][t] lists sources a.
    Both keep file order. token_index[node_type][key] is the set of node ids whose
    label or alias contains that word key (name_key); year_index[y] lists thesis ids.
    name_variants[id] holds the key sets of a node's label and aliases (a thesis: its
    title's content keys only), so matching never re-stems a name.
    """

    nodes: dict[str, Node]
    out_edges: dict[str, dict[str, list[str]]]
    in_edges: dict[str, dict[str, list[str]]]
    token_index: dict[str, dict[str, set[str]]]
    year_index: dict[int, list[str]]
    name_variants: dict[str, tuple[frozenset[str], ...]]   # label keys, then each alias's
    edge_count: int
    index_version: str | None = None
    # key -> persons whose label is that one word; built on first use by _one_word_labels
    one_word_labels: dict[str, set[str]] | None = None
    # theses with more than one supervisor, in year order; built on first use (_co_supervised)
    co_supervised: list[str] | None = None
    # supervisor -> theses supervised over all years, and the supervisors ranked by it (most
    # first, then by name); built on first use (_supervisor_ranking)
    supervisor_counts: tuple[Counter, list[str]] | None = None
    # year -> the same for that year's theses; each built on the first question of its year
    year_supervisor_counts: dict[int, tuple[Counter, list[str]]] = field(default_factory=dict)
    # node type -> word length -> [(key, its letters)]; built on the first typo (_spelling_index)
    spelling: dict[str, dict[int, list[tuple[str, frozenset[str]]]]] = field(default_factory=dict)
    # (node type, key) -> the ids of that token index entry in id order; built on first use
    # (the namesakes of a common first name are listed in this order, see _match_persons)
    sorted_ids: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    # thesis level (bachelor, master, doctoral; else the folded `kind`) -> thesis ids, file order
    kind_index: dict[str, list[str]] = field(default_factory=dict)
    kind_levels: dict[str, str] = field(default_factory=dict)     # a `kind` text -> its level
    # (what is ranked, filters) -> (counts, ranked ids); at most RANKING_CACHE_SIZE entries
    rankings: dict[tuple, tuple[Counter, list[str]]] = field(default_factory=dict)
    # the edge types and thesis attributes the graph holds; built on first use (_graph_relations)
    relations: list[str] | None = None


@dataclass
class GraphLimits:
    """Display limits; each is proven by fetching one item past it."""

    entity_limit: int = DEFAULT_ENTITY_LIMIT
    evidence_limit: int = DEFAULT_EVIDENCE_LIMIT
    fact_limit: int = DEFAULT_FACT_LIMIT
    path_limit: int = DEFAULT_PATH_LIMIT
    max_path_length: int = DEFAULT_MAX_PATH_LENGTH

    def __post_init__(self) -> None:
        bad = [k for k, v in asdict(self).items()
               if not isinstance(v, int) or isinstance(v, bool) or v < 1]
        if bad:
            raise rc.InvalidRequestError("limits must be positive integers", field_names=bad)


@dataclass
class Intent:
    """What a question asks: its kind, language, year (if any) and counted subject."""

    kind: str
    language: str
    keys: tuple[str, ...]        # keys of every word of the question except a year
    name_keys: tuple[str, ...] = ()  # keys of the words that are likely names (_name_keys)
    year: int | None = None
    subject: str = PERSON       # for year questions: count persons or theses
    words: tuple[str, ...] = ()  # the casefolded words behind keys, diacritics kept
    filters: tuple[str, ...] = ()  # the entities filtering a count, list or ranking: "supervisor",
                                   # "author" and/or "keyword", found in the graph when answered
    target: tuple | None = None    # about/who_is: (chosen ids, match) found while parsing
    where: tuple = ()              # Filter conditions on year and level known from the words alone
    ranked: str | None = None      # ranking: supervisor, author, keyword or year
    top: int | None = None         # ranking: the first N places (None: all)
    person: Any = None             # the _Match of the person a count, list or ranking names


@dataclass
class Fact:
    """One edge shown as evidence; `document_node` is the node whose page supports it."""

    subject: str
    predicate: str
    obj: str
    text: str
    document_node: str | None


@dataclass
class GraphPath:
    """A path of node ids; steps[i] is (edge_type, direction) between nodes[i] and nodes[i+1]."""

    nodes: list[str]
    steps: list[tuple[str, str]]
    text: str


@dataclass
class GraphResult:
    """The outcome of ask(): status, evidence and the limits that were hit."""

    status: str
    reason: str | None
    intent: str | None
    language: str
    answer: str
    entities: list[dict] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    paths: list[GraphPath] = field(default_factory=list)
    documents: list[Node] = field(default_factory=list)
    aggregation: dict | None = None
    reasons: list[str] = field(default_factory=list)
    rejected_candidates: list[dict] = field(default_factory=list)
    truncation_reasons: list[str] = field(default_factory=list)
    limits: GraphLimits = field(default_factory=GraphLimits)
    index_version: str | None = None


# === 3. Errors — a malformed graph is a RetrievalUnavailableError that names the place ===

class GraphFormatError(rc.RetrievalUnavailableError):
    """The graph file is unreadable, not JSON, or invalid; the message names the node/edge."""


# === 4. Names — the gender and case forms of a name; its stem (the endings, the fleeting
# e) is the one rule retrieval shares: text_name_stem in retrieval_contract ===

def name_key(word: str) -> str:
    """Return the match key of one word of a name, title or keyword: stemmed first, then
    folded (rc.text_fold)."""
    return rc.text_fold(rc.text_name_stem(word))


def _is_question_word(word: str) -> bool:
    """Return True for a word that never names an entity (see QUESTION_WORDS)."""
    return rc.text_fold(word) in QUESTION_WORDS


def _affixed(bases: Iterable[str], endings: Iterable[str]) -> set[str]:
    """Return every base followed by every ending."""
    return {b + e for b in bases for e in endings}


def _name_forms(word: str, is_first: bool) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """Return a name word's own case forms, its other-gender surname forms and other-gender
    first-name forms (the last two diacritic-folded), by the ending of its nominative.

    is_first says the word is the first of a several-word name: a first name ending in -a
    is then female (Jana), a surname ending in -a male (Sloboda). Unknown shapes get no
    other forms, so they never count against a person.
    """
    w = unicodedata.normalize("NFC", word.casefold())
    own, pair, other = {w}, set(), set()
    if w.endswith("ová"):
        own |= _affixed([w[:-3]], FEM_OVA_ENDINGS)
        pair = _affixed([w[:-3]], MALE_OF_OVA_ENDINGS)
    elif w.endswith(("á", "ý")):
        mine, theirs = ((FEM_ADJ_ENDINGS, MASC_ADJ_ENDINGS) if w.endswith("á")
                        else (MASC_ADJ_ENDINGS, FEM_ADJ_ENDINGS))
        own |= _affixed([w[:-1]], mine)
        pair = _affixed([w[:-1]], theirs)
    elif w.endswith("ia"):
        own |= _affixed([w[:-2]], FEM_IA_ENDINGS)
    elif w.endswith("a") and is_first:
        base = w[:-1]
        own |= _affixed([base], FEM_A_ENDINGS)
        other = _affixed({base, rc.text_insert_fleeting_e(base)}, MASC_ENDINGS)
    elif w.endswith(("a", "o")):
        own |= _affixed([w[:-1]], MASC_A_ENDINGS if w.endswith("a") else MASC_O_ENDINGS)
        pair = _affixed([w[:-1]], FEM_OVA_ENDINGS)
    elif w[-1:].isalpha() and w[-1] not in rc.NAME_VOWELS:
        bases = {w, rc.text_drop_fleeting_e(w)}
        own |= _affixed(bases, MASC_ENDINGS)
        if is_first:
            other = _affixed(bases, FEM_A_ENDINGS)
        else:
            pair = _affixed(bases, FEM_OVA_ENDINGS)
    return (frozenset(own), frozenset(rc.text_fold(f) for f in pair),
            frozenset(rc.text_fold(f) for f in other))


def _word_relation(question_word: str, name_word: str, is_first: bool) -> str:
    """Return how a question word relates to a name word with the same key: EXACT (one of
    its forms, diacritics included), FOLDED (a form once diacritics are folded, the bare
    stem, or an ending not known here), GENDER (the other-gender form of a surname) or
    CLASH (a form of the other gender's first name)."""
    q, folded = question_word, rc.text_fold(question_word)
    own, pair, other = _name_forms(name_word, is_first)
    stem = rc.text_name_stem(name_word)
    if q in own:
        return EXACT
    if folded in {rc.text_fold(f) for f in own} or q == stem or q == folded == rc.text_fold(stem):
        return FOLDED
    if folded in pair:
        return GENDER
    if folded in other:
        return CLASH
    return EXACT if q != folded and rc.text_name_stem(q) == stem else FOLDED


# === 5. Load/validate — the only file I/O; graph_build is pure ===

def graph_load(path: str, max_bytes: int = GRAPH_MAX_BYTES,
               git_probe: Callable[[str], Any] | None = None) -> Graph:
    """Return the validated, indexed graph in the JSON file at path; raise GraphFormatError
    (also for a file that is not regular, e.g. /dev/zero or a pipe, or over max_bytes).
    git_probe: the caller's Git probe (docs_qa.git_probe_file, which reads .git as files and
    never runs git), whose rev and dirty flag join index_version; None: no Git part."""
    raw = _graph_read(path, max_bytes)
    # Parsing and indexing create millions of acyclic objects; the cyclic GC would rescan
    # them again and again (about 40% of load time at 500k edges), so pause it meanwhile.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _graph_parse(path, raw, git_probe)
    finally:
        if gc_was_enabled:
            gc.enable()


def _graph_read(path: str, max_bytes: int) -> bytes:
    """Return the bytes of the regular file at path, checked by size before reading;
    raise GraphFormatError. O_NONBLOCK: opening a FIFO must not wait for a writer."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise GraphFormatError(f"cannot read the graph file {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise GraphFormatError(f"{path}: the graph must be a regular file")
        if info.st_size > max_bytes:
            raise GraphFormatError(f"{path}: the graph file is {info.st_size} bytes, over the "
                                   f"limit of {max_bytes}")
        with os.fdopen(os.dup(fd), "rb") as handle:
            raw = handle.read(max_bytes + 1)     # the file may have grown since fstat
    except OSError as exc:
        raise GraphFormatError(f"cannot read the graph file {path}: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(raw) > max_bytes:
        raise GraphFormatError(f"{path}: the graph file is over the limit of {max_bytes} bytes")
    return raw


class _LongInteger:
    """A JSON integer of more than GRAPH_MAX_INT_DIGITS digits: only its digit count is
    kept (it is no int and no str, so every type check refuses it)."""

    __slots__ = ("digits",)

    def __init__(self, text: str) -> None:
        self.digits = len(text.lstrip("-"))


def _parse_int(text: str) -> int | _LongInteger:
    """Return a JSON integer; a very long one stays text, so the check names its place
    (int() would refuse past 4,300 digits with no place, and nothing needs such numbers)."""
    return int(text) if len(text.lstrip("-")) <= GRAPH_MAX_INT_DIGITS else _LongInteger(text)


def _graph_parse(path: str, raw: bytes, git_probe: Callable[[str], Any] | None) -> Graph:
    """Return the Graph of the raw file bytes; raise GraphFormatError naming the problem."""
    try:
        text = raw.decode("utf-8-sig")
        data = json.loads(text, parse_int=_parse_int)
    except UnicodeDecodeError:
        raise GraphFormatError(f"{path}: the graph file is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise GraphFormatError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        line, column = _deep_place(text)
        raise GraphFormatError(f"{path}: arrays/objects nested too deeply "
                               f"(line {line}, column {column})") from None
    label = data.get("version") if isinstance(data, dict) else None
    git = git_probe(path) if git_probe is not None else None
    version = rc.index_version_graph(label if isinstance(label, str) else None,
                                     hashlib.sha256(raw).hexdigest(),
                                     git.rev if git else None, bool(git and git.is_dirty))
    return graph_build(data, version)


def _deep_place(text: str) -> tuple[int, int]:
    """Return (line, column), 1-based, of the bracket where the nesting is deepest (the
    slow path, after the parser gave up: strings are skipped, escapes honoured)."""
    depth = best = best_at = 0
    in_string = escaped = False
    for i, char in enumerate(text):
        if in_string:
            in_string, escaped = (char != '"' or escaped), (char == "\\" and not escaped)
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > best:
                best, best_at = depth, i
        elif char in "]}":
            depth -= 1
    line = text.count("\n", 0, best_at) + 1
    return line, best_at - text.rfind("\n", 0, best_at)


def graph_build(data: Any, index_version: str | None = None) -> Graph:
    """Return the indexed Graph for parsed JSON data; raise GraphFormatError naming the place."""
    if not isinstance(data, dict):
        raise GraphFormatError("the graph must be a JSON object with 'nodes' and 'edges'")
    for key in ("nodes", "edges"):
        if not isinstance(data.get(key), list):
            raise GraphFormatError(f"the graph needs a '{key}' list")
    nodes: dict[str, Node] = {}
    for i, raw in enumerate(data["nodes"]):
        node = _node_parse(i, raw)
        if node.node_id in nodes:
            raise GraphFormatError(f"node #{i}: duplicate id {node.node_id!r}")
        nodes[node.node_id] = node
    graph = Graph(nodes=nodes, out_edges={}, in_edges={}, token_index={}, year_index={},
                  name_variants={}, edge_count=0, index_version=index_version)
    _edges_index(graph, data["edges"])
    _index_tokens(graph)
    return graph


def _node_parse(i: int, raw: Any) -> Node:
    """Return the Node for the i-th raw node; raise GraphFormatError on a bad field."""
    if not isinstance(raw, dict):
        raise GraphFormatError(f"node #{i}: must be an object")
    node_id, node_type = raw.get("id"), raw.get("type")
    where = f"node #{i}" + (f" (id {node_id!r})" if isinstance(node_id, str) else "")
    for key, value in (("id", node_id), ("type", node_type)):
        if not isinstance(value, str) or not value.strip():
            raise GraphFormatError(f"{where}: '{key}' must be a non-empty string")
    for key in OPTIONAL_STRINGS:
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise GraphFormatError(f"{where}: '{key}' must be a string or null")
    aliases = raw.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise GraphFormatError(f"{where}: 'aliases' must be a list of strings")
    year = raw.get("year")
    if isinstance(year, _LongInteger):
        raise GraphFormatError(f"{where}: 'year' has {year.digits} digits, "
                               f"more than {GRAPH_MAX_INT_DIGITS}")
    if year is not None and (not isinstance(year, int) or isinstance(year, bool)):
        raise GraphFormatError(f"{where}: 'year' must be an integer")
    _node_check_required(where, node_type, raw)
    doc = raw.get("document_path")
    if doc is not None and (doc.startswith(("/", "\\")) or ".." in doc.replace("\\", "/").split("/")):
        raise GraphFormatError(f"{where}: 'document_path' must be relative, without '..'")
    label = raw.get("title") if node_type == THESIS else raw.get("name") or raw.get("title")
    return Node(node_id=node_id, node_type=node_type, label=label or node_id,
                aliases=tuple(aliases), year=year, document_path=doc,
                source_url=raw.get("source_url"), title=raw.get("title"),
                kind=raw.get("kind") if node_type == THESIS else None)


def _node_check_required(where: str, node_type: str, raw: dict) -> None:
    """Raise GraphFormatError when a person/keyword lacks a name or a thesis a title/year."""
    if node_type in NAMED_TYPES and not (raw.get("name") or "").strip():
        raise GraphFormatError(f"{where}: a {node_type} needs a non-empty 'name'")
    if node_type == THESIS:
        if not (raw.get("title") or "").strip():
            raise GraphFormatError(f"{where}: a thesis needs a non-empty 'title'")
        if raw.get("year") is None:
            raise GraphFormatError(f"{where}: a thesis needs an integer 'year'")


def _edges_index(graph: Graph, raw_edges: list) -> None:
    """Validate every raw edge and add it to both adjacency maps (a hot loop: kept lean);
    an edge repeated (same source, type, target) is kept once, see _drop_repeats."""
    nodes, out_edges, in_edges = graph.nodes, graph.out_edges, graph.in_edges
    for i, raw in enumerate(raw_edges):
        src, dst, edge_type = _edge_check(nodes, i, raw)
        _adjacency_append(out_edges, src, edge_type, dst)
        _adjacency_append(in_edges, dst, edge_type, src)
    repeats = _drop_repeats(out_edges)
    if repeats:                      # the same edges, seen from their other end
        _drop_repeats(in_edges)
    graph.edge_count = len(raw_edges) - repeats


def _drop_repeats(adjacency: dict[str, dict[str, list[str]]]) -> int:
    """Keep the first of each repeated neighbour, in file order; return how many were dropped.

    A repeated edge adds no fact, it only repeats one; exports built by joining several
    sources often hold some, so they are merged rather than refused (which would make
    the whole graph unusable for a harmless redundancy).
    """
    dropped = 0
    for by_type in adjacency.values():
        for edge_type, targets in by_type.items():
            if len(targets) > 1 and len(set(targets)) != len(targets):
                unique = list(dict.fromkeys(targets))
                dropped += len(targets) - len(unique)
                by_type[edge_type] = unique
    return dropped


def _edge_check(nodes: dict[str, Node], i: int, raw: Any) -> tuple[str, str, str]:
    """Return (source, target, type) of the i-th raw edge; raise GraphFormatError naming it."""
    if isinstance(raw, dict):
        src, dst, edge_type = raw.get("source"), raw.get("target"), raw.get("type")
        src_node = nodes.get(src) if isinstance(src, str) else None
        dst_node = nodes.get(dst) if isinstance(dst, str) else None
        if src_node and dst_node and isinstance(edge_type, str) and edge_type.strip():
            ends = EDGE_ENDS.get(edge_type)
            if not ends or (src_node.node_type, dst_node.node_type) == ends:
                return src, dst, edge_type
    raise GraphFormatError(_edge_problem(nodes, i, raw))


def _edge_problem(nodes: dict[str, Node], i: int, raw: Any) -> str:
    """Return the message naming what is wrong with the i-th raw edge (the slow path)."""
    if not isinstance(raw, dict):
        return f"edge #{i}: must be an object"
    src, dst, edge_type = raw.get("source"), raw.get("target"), raw.get("type")
    for key, value in (("source", src), ("target", dst), ("type", edge_type)):
        if not isinstance(value, str) or not value.strip():
            return f"edge #{i}: '{key}' must be a non-empty string"
    where = f"edge #{i} ({src} -{edge_type}-> {dst})"
    for key, value in (("source", src), ("target", dst)):
        if value not in nodes:
            return f"{where}: {key} {value!r} is not a node id (dangling edge)"
    ends = EDGE_ENDS[edge_type]
    return f"{where}: a '{edge_type}' edge must go {ends[0]} -> {ends[1]}"


def _adjacency_append(adjacency: dict[str, dict[str, list[str]]], a: str, edge_type: str,
                      b: str) -> None:
    """Append b to adjacency[a][edge_type] without building throw-away containers."""
    by_type = adjacency.get(a)
    if by_type is None:
        adjacency[a] = {edge_type: [b]}
        return
    targets = by_type.get(edge_type)
    if targets is None:
        by_type[edge_type] = [b]
    else:
        targets.append(b)


def _index_tokens(graph: Graph) -> None:
    """Fill the token index, each node's name-variant keys and the thesis year index.

    Each word's key, and whether it is a question word, is memoised per build (names and
    title words repeat a lot).
    """
    memo: dict[str, tuple[str, bool]] = {}
    levels = graph.kind_levels

    def keys_of(text: str, min_chars: int, drop_stop: bool) -> frozenset[str]:
        out = set()
        for word in rc.text_words(text):
            found = memo.get(word)
            if found is None:
                found = memo[word] = (name_key(word), _is_question_word(word))
            key, is_question_word = found
            if drop_stop and is_question_word:
                continue
            if len(key) >= min_chars or key.isdigit():
                out.add(key)
        return frozenset(out)

    for node in graph.nodes.values():
        index = graph.token_index.setdefault(node.node_type, {})
        if node.node_type == THESIS:
            variants = (keys_of(node.label, MIN_CONTENT_CHARS, True),)
        else:   # names keep every word: a surname may look like a stop word (Malá)
            variants = ((keys_of(node.label, MIN_STEM_CHARS, False),)
                        + tuple(keys_of(a, MIN_STEM_CHARS, False) for a in node.aliases))
        graph.name_variants[node.node_id] = variants
        for key in frozenset().union(*variants):
            ids = index.get(key)
            if ids is None:
                index[key] = {node.node_id}
            else:
                ids.add(node.node_id)
        if node.node_type == THESIS and node.year is not None:
            graph.year_index.setdefault(node.year, []).append(node.node_id)
        if node.node_type == THESIS and node.kind:
            level = levels.get(node.kind)
            if level is None:
                level = levels[node.kind] = _thesis_level(node.kind)
            graph.kind_index.setdefault(level, []).append(node.node_id)


def _neighbours(graph: Graph, node_id: str, edge_type: str, outgoing: bool = True) -> list[str]:
    """Return the ids joined to node_id by edge_type, following or against the edges."""
    adjacency = graph.out_edges if outgoing else graph.in_edges
    return adjacency.get(node_id, {}).get(edge_type, [])


# === 6. Entity matching — persons through the token index, full names before partial ones ===

@dataclass
class _Match:
    """The outcome of matching one entity type: chosen ids, candidates and rejections."""

    chosen: list[str]
    candidates: list[dict]
    rejected: list[dict]
    is_ambiguous: bool = False   # the chosen ones compete for the same words of the question


class _Ordered:
    """Ids in a fixed order: `first` as given, then the ids of `runs` (lists in id order, one
    per question word) merged in id order, without those in `skip`. The runs hold the
    namesakes a common first name brings, often thousands; they are merged only as far as
    they are read. `size` is how many ids the merged runs give."""

    def __init__(self, first: list[str], runs: list[list[str]], skip: set[str], size: int) -> None:
        self.first, self.runs, self.skip, self.size = first, runs, skip, size
        self._merged: list[str] = []
        self._merging = (i for i in heapq.merge(*runs) if i not in skip)

    def __len__(self) -> int:
        return len(self.first) + self.size

    def at(self, i: int) -> str:
        """Return the i-th id (0 <= i < len)."""
        if i < len(self.first):
            return self.first[i]
        i -= len(self.first)
        self._merged += itertools.islice(self._merging, i + 1 - len(self._merged))
        return self._merged[i]

    def all(self) -> list[str]:
        """Return every id, in order."""
        self._merged += self._merging
        return self.first + self._merged

    def without(self, ids: set[str]) -> "_Ordered":
        """Return these ids except ids, still merged lazily."""
        in_runs = {i for i in ids if i not in self.skip and any(_in_sorted(run, i) for run in self.runs)}
        return _Ordered([i for i in self.first if i not in ids], self.runs, self.skip | ids,
                        self.size - len(in_runs))


def _in_sorted(items: list[str], item: str) -> bool:
    """Return True when item is in the sorted list items."""
    at = bisect.bisect_left(items, item)
    return at < len(items) and items[at] == item


class _Records(Sequence):
    """A list of rejected-candidate records whose tail is built only when read: namesakes
    can be thousands, while an answer shows entity_limit of them and counts the rest."""

    def __init__(self, head: list[dict], tail: _Ordered, build: Callable[[str], dict]) -> None:
        self.head, self.tail, self.build = head, tail, build

    def __len__(self) -> int:
        return len(self.head) + len(self.tail)

    def without(self, ids: set[str], first: list[dict]) -> "_Records":
        """Return first, then these records except those of ids, still built lazily."""
        return _Records(first + [c for c in self.head if c.get("id") not in ids],
                        self.tail.without(ids), self.build)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.head[i] if i < len(self.head) else self.build(self.tail.at(i - len(self.head)))


def _full_name_variants(graph: Graph, node_id: str) -> list[frozenset[str]]:
    """Return the key sets that name a person fully: the label, and aliases of 2+ words."""
    label, *aliases = graph.name_variants[node_id]
    return [label] + [a for a in aliases if len(a) >= 2]


def _hits(graph: Graph, node_type: str, keys: Iterable[str]) -> dict[str, frozenset[str]]:
    """Return node id -> the question keys that hit it, via the token index only."""
    return _hits_overlap(graph, node_type, keys)[0]


def _hits_overlap(graph: Graph, node_type: str,
                  keys: Iterable[str]) -> tuple[dict[str, frozenset[str]], set[str]]:
    """Return node id -> the question keys that hit it, and the ids hit by more than one key.

    The largest index entry (a common first name) is taken whole; only the others are
    walked id by id, so thousands of namesakes cost one dict.fromkeys.
    """
    index = graph.token_index.get(node_type, {})
    entries = sorted(((key, index[key]) for key in dict.fromkeys(keys) if key in index),
                     key=lambda kv: -len(kv[1]))
    if not entries:
        return {}, set()
    hits: dict[str, frozenset[str]] = dict.fromkeys(entries[0][1], frozenset((entries[0][0],)))
    overlap: set[str] = set()
    for key, ids in entries[1:]:
        single = frozenset((key,))
        for node_id in ids:
            found = hits.get(node_id)
            if found is None:
                hits[node_id] = single
            else:
                hits[node_id] = found | single
                overlap.add(node_id)
    return hits, overlap


@dataclass
class _PersonFit:
    """How the question's words fit a person's name: a verdict, exact words and why."""

    verdict: str       # "full", "partial", GENDER (someone else's full name) or CLASH
    exact: int = 0     # name words the question gives in an exact form (full matches)
    note: str = ""     # why, naming the words behind the verdict


def _memo_key(word: str, memo: dict[tuple, str]) -> str:
    """Return name_key(word), memoised for one question (first names repeat across candidates)."""
    found = memo.get((word,))
    if found is None:
        found = memo[(word,)] = name_key(word)
    return found


def _relation(question_word: str, name_word: str, is_first: bool, memo: dict[tuple, str]) -> str:
    """Return _word_relation, memoised for one question (names repeat across candidates)."""
    key = (question_word, name_word, is_first)
    found = memo.get(key)
    if found is None:
        found = memo[key] = _word_relation(question_word, name_word, is_first)
    return found


def _variant_fit(text: str, is_label: bool, by_key: dict[str, list[str]],
                 memo: dict[tuple, str]) -> _PersonFit | None:
    """Return how the question's words fit one name (label or alias); None if none is asked."""
    keyed = [(w, _memo_key(w, memo)) for w in rc.text_words(text)]
    names = [(w, k) for w, k in keyed if len(k) >= MIN_STEM_CHARS]
    asked = []                                 # (relation, question word, name word)
    for pos, (name, key) in enumerate(names):
        is_first = pos == 0 and len(names) > 1
        pairs = [(_relation(q, name, is_first, memo), q) for q in by_key.get(key, ())]
        if pairs:
            relation, q = min(pairs, key=lambda rq: RELATION_ORDER.index(rq[0]))
            asked.append((relation, q, name))
    if not asked:
        return None
    for relation, q, name in asked:
        if relation == CLASH:
            return _PersonFit(CLASH, note=f"'{q}' is a form of another first name than '{name}'")
    if len(asked) < len(names) or not (is_label or len(names) >= 2):
        return _PersonFit("partial")
    for relation, q, name in asked:
        if relation == GENDER:
            return _PersonFit(GENDER, note=f"'{q}' is the other gender's form of the surname "
                                           f"'{name}': the question names someone else")
    folded = [f"{q} ~ {name}" for relation, q, name in asked if relation != EXACT]
    note = ("full name matches" if not folded else "full name matches only after folding "
            "diacritics or endings (" + ", ".join(folded) + ")")
    return _PersonFit("full", exact=len(asked) - len(folded), note=note)


def _person_fit(graph: Graph, node_id: str, by_key: dict[str, list[str]],
                memo: dict[tuple, str]) -> _PersonFit:
    """Return the best fit of the question's words over a person's label and aliases."""
    node = graph.nodes[node_id]
    fits = [_variant_fit(text, i == 0, by_key, memo)
            for i, text in enumerate((node.label, *node.aliases))]
    return min((f for f in fits if f), key=lambda f: (FIT_ORDER.index(f.verdict), -f.exact),
               default=_PersonFit("partial"))


def _first_name_clash(graph: Graph, node_id: str, by_key: dict[str, list[str]],
                      memo: dict[tuple, str]) -> str | None:
    """Return why a person is ruled out by a form of the other gender's first name, or None.

    The cheap check for partial matches (often thousands sharing a first name): only the
    first word of a name of 2+ words can clash, and a word of 2+ letters keeps a key.
    """
    node = graph.nodes[node_id]
    for text in (node.label, *node.aliases):
        names = [w for w in rc.text_words(text) if len(w) >= MIN_STEM_CHARS]
        if len(names) < 2:
            continue
        for q in by_key.get(_memo_key(names[0], memo), ()):
            if _relation(q, names[0], True, memo) == CLASH:
                return f"'{q}' is a form of another first name than '{names[0]}'"
    return None


def _partial_why(node: Node, matched: set[str]) -> str:
    """Return why a partial name match was considered (first name, surname or its form)."""
    words = [w for w in rc.text_words(node.label) if len(w) > 1]
    parts = []
    for pos, word in enumerate(words):
        if name_key(word) in matched:
            role = "first name" if pos == 0 and len(words) > 1 else "surname"
            parts.append(f"{role} '{word}' shares the stem '{name_key(word)}'")
    return "; ".join(parts) or "an alias word matches"


def _choose_full(full: list[str], fits: dict[str, _PersonFit], partial: _Ordered,
                 why: Callable[[str, str], dict], rejected: list[dict]) -> _Match:
    """Return the full-name matches with the most exact words; the rest are rejected."""
    best = max(fits[n].exact for n in full)
    chosen = [n for n in full if fits[n].exact == best]
    rejected += [why(n, "fewer of the question's words are exact forms of this name "
                        "(diacritics included) than of the chosen person's")
                 for n in full if fits[n].exact < best]
    partial_why = "only part of the name matches; a full-name match exists"
    return _Match(chosen, [why(n, fits[n].note) for n in chosen],
                  _Records(rejected, partial, lambda n: why(n, partial_why)), len(chosen) > 1)


def _choose_partial(graph: Graph, partial: _Ordered, hits: dict[str, frozenset[str]],
                    name_keys: set[str], why: Callable[[str, str], dict], rejected: list[dict],
                    clash: Callable[[str], str | None]) -> _Match:
    """Return the best partial matches (most name words hit); several best are ambiguous."""
    index = graph.token_index.get(PERSON, {})
    if any(key not in index for key in name_keys):
        # a name word no person has: every candidate is ruled out, each record says why
        lacks = "the question names a word this person's name lacks"
        return _Match([], [], _Records(rejected, partial, lambda n: why(n, clash(n) or lacks)))
    partial = partial.all()
    clashing = {n: note for n in partial for note in (clash(n),) if note}
    rejected += [why(n, note) for n, note in clashing.items()]
    partial = [n for n in partial if n not in clashing]
    unexplained = {n for n in partial if name_keys - frozenset().union(*graph.name_variants[n])}
    rejected += [why(n, "the question names a word this person's name lacks")
                 for n in partial if n in unexplained]
    partial = [n for n in partial if n not in unexplained]
    best = max((len(hits[n]) for n in partial), default=0)
    chosen = [n for n in partial if len(hits[n]) == best]
    rejected += [why(n, "fewer name words match than the best candidate")
                 for n in partial if len(hits[n]) < best]
    return _Match(chosen, [why(n, _partial_why(graph.nodes[n], hits[n])) for n in chosen], rejected,
                  len(chosen) > 1)


def _match_persons(graph: Graph, words: Iterable[str], name_keys: Iterable[str] = ()) -> _Match:
    """Return the persons the question's words name: full-name matches beat partial ones.

    Keys find the candidates; then each name word is checked against the question word
    with its key (_word_relation). A form of the other gender's first name (Jany for Ján)
    rules a person out; a full name whose surname is the other gender's form (Petra
    Kováčová for Peter Kováč) names someone else. Among full matches, the person with
    more words in an exact form (diacritics included) wins; equal ones are ambiguous. A
    partial match is a surname or first name alone (or a stem both a male surname and its
    female -ová form share); several best partial matches are ambiguous. A partial match
    is rejected when the question names another word its name lacks (Jozef Mrkvička is
    not Jozef Kráľ).
    """
    by_key: dict[str, list[str]] = {}
    for word in words:
        by_key.setdefault(name_key(word), []).append(word)
    hits, overlap = _hits_overlap(graph, PERSON, by_key)
    memo: dict[tuple, str] = {}

    def why(node_id: str, kind: str) -> dict:
        return {"id": node_id, "name": graph.nodes[node_id].label,
                "matched_keys": sorted(hits[node_id]), "why": kind}
    # A full name needs all its words: a person hit by one word only is a full match only
    # if that word is their whole label. The rest (namesakes, often thousands) hit by one
    # word only are partial; they are rejected lazily, in id order, never looked at one by
    # one unless no full match exists and every name word of the question is known.
    one_word = _one_word_labels(graph)
    may_be_full = sorted(n for n in overlap.union(*(one_word.get(key, ()) for key in by_key)) if n in hits)
    fits = {n: _person_fit(graph, n, by_key, memo) for n in may_be_full
            if any(v and v <= hits[n] for v in _full_name_variants(graph, n))}
    rejected = [why(n, f.note) for n, f in fits.items() if f.verdict in (GENDER, CLASH)]
    several = ([n for n in may_be_full if n not in fits]
               + [n for n, f in fits.items() if f.verdict == "partial"])
    several.sort(key=lambda n: -len(hits[n]))     # stable: best rejected first, then by id
    runs = [_sorted_ids(graph, PERSON, key) for key in by_key if key in graph.token_index.get(PERSON, {})]
    partial = _Ordered(several, runs, set(may_be_full), len(hits) - len(may_be_full))
    full = [n for n, f in fits.items() if f.verdict == "full"]
    if full:
        return _choose_full(full, fits, partial, why, rejected)
    return _choose_partial(graph, partial, hits, set(name_keys), why, rejected,
                           lambda n: _first_name_clash(graph, n, by_key, memo))


def _sorted_ids(graph: Graph, node_type: str, key: str) -> list[str]:
    """Return the ids of a token index entry in id order (sorted once per loaded graph)."""
    found = graph.sorted_ids.get((node_type, key))
    if found is None:
        found = graph.sorted_ids[(node_type, key)] = sorted(graph.token_index[node_type][key])
    return found


def _one_word_labels(graph: Graph) -> dict[str, set[str]]:
    """Return key -> the persons whose label is that one word (built once per graph)."""
    if graph.one_word_labels is None:
        index: dict[str, set[str]] = {}
        for node_id, variants in graph.name_variants.items():
            if len(variants[0]) == 1 and graph.nodes[node_id].node_type == PERSON:
                index.setdefault(next(iter(variants[0])), set()).add(node_id)
        graph.one_word_labels = index
    return graph.one_word_labels


# --- 6a. Keywords and titles — every word of a keyword; the best-covered title

def _match_keywords(graph: Graph, keys: Iterable[str]) -> _Match:
    """Return the keywords whose every word is in the question, longest first.

    Several equally long keywords are all chosen: named by different words ("robotika a
    optimalizácia"), the question asks for each; fitting the very same words (databáza,
    databázy), it is ambiguous.
    """
    hits = _hits(graph, KEYWORD, keys)
    full: dict[str, frozenset[str]] = {}     # keyword -> its longest variant in the question
    rejected = []
    for node_id in sorted(hits):
        inside = [v for v in graph.name_variants[node_id] if v and v <= hits[node_id]]
        if inside:
            full[node_id] = max(inside, key=len)
        else:
            rejected.append({"id": node_id, "name": graph.nodes[node_id].label,
                             "matched_keys": sorted(hits[node_id]),
                             "why": "only some words of the keyword are in the question"})
    best = max((len(v) for v in full.values()), default=0)
    chosen = [n for n, v in full.items() if len(v) == best]
    rejected += [{"id": n, "name": graph.nodes[n].label, "matched_keys": sorted(hits[n]),
                  "why": "a longer keyword matches"} for n, v in full.items() if len(v) < best]
    words = [full[n] for n in chosen]
    is_ambiguous = len(set(words)) < len(words)
    why = "the same words of the question fit another keyword" if is_ambiguous else "keyword matches"
    return _Match(chosen, [{"id": n, "name": graph.nodes[n].label, "matched_keys": sorted(full[n]),
                            "why": why} for n in chosen], rejected, is_ambiguous)


def _title_candidate(graph: Graph, node_id: str, matched: set[str]) -> dict:
    """Return the candidate record of a chosen title: how many of its words the question has."""
    total = len(graph.name_variants[node_id][0])
    return {"id": node_id, "name": graph.nodes[node_id].label, "matched_keys": sorted(matched),
            "why": f"title matches: {len(matched)} of its {total} words are in the question"}


def _match_titles(graph: Graph, keys: Iterable[str]) -> _Match:
    """Return the theses whose title words the question covers best (>= TITLE_MIN_COVERAGE);
    of equal coverage, the one with more words in the question (a whole title beats a
    shorter title inside it); several still equal are ambiguous."""
    hits = _hits(graph, THESIS, set(keys))
    scored = []
    for node_id, matched in hits.items():
        title_keys = graph.name_variants[node_id][0]
        scored.append((len(matched) / max(len(title_keys), 1), len(matched), node_id))
    best = max(((c, m) for c, m, _ in scored if c >= TITLE_MIN_COVERAGE), default=None)
    chosen = sorted(n for c, m, n in scored if (c, m) == best)
    rejected = [{"id": n, "name": graph.nodes[n].label, "coverage": round(c, 2),
                 "why": ("too few title words are in the question" if c < TITLE_MIN_COVERAGE
                         else "another title fits more words of the question")}
                for c, m, n in sorted(scored, key=lambda cmn: (-cmn[0], -cmn[1], cmn[2]))
                if n not in chosen]
    return _Match(chosen, [_title_candidate(graph, n, hits[n]) for n in chosen], rejected,
                  len(chosen) > 1)


# --- 6b. Did you mean — names within a few edits of a typed word, offered and never chosen

def _max_distance(key: str) -> int:
    """Return how many edits a typed word of this length may be away from a suggestion."""
    return next(d for length, d in SUGGEST_MAX_DISTANCE if len(key) <= length)


def _near_keys(graph: Graph, node_type: str, typed: Iterable[str]) -> dict[str, tuple[str, int]]:
    """Return index key -> (typed key, distance) for the index keys of node_type within a
    typed word's edit budget; typed words the index knows, or too short, are not corrected.

    A cheap letter-set test skips most keys: one edit changes at most two distinct letters.
    """
    index = graph.token_index.get(node_type, {})
    near: dict[str, tuple[str, int]] = {}
    for key in dict.fromkeys(typed):
        if key in index or len(key) < SUGGEST_MIN_CHARS or key.isdigit():
            continue
        cap, letters = _max_distance(key), set(key)
        by_length = _spelling_index(graph, node_type)
        for length in range(len(key) - cap, len(key) + cap + 1):
            for other, other_letters in by_length.get(length, ()):
                if len(letters ^ other_letters) > 2 * cap:
                    continue
                dist = rc.text_edit_distance(key, other, cap)
                if dist <= cap and dist < near.get(other, ("", cap + 1))[1]:
                    near[other] = (key, dist)
    return near


def _spelling_index(graph: Graph, node_type: str) -> dict[int, list[tuple[str, frozenset[str]]]]:
    """Return the index keys of node_type by length, with their letters (built once per type)."""
    found = graph.spelling.get(node_type)
    if found is None:
        found = {}
        for key in graph.token_index.get(node_type, {}):
            found.setdefault(len(key), []).append((key, frozenset(key)))
        graph.spelling[node_type] = found
    return found


def _suggestion(graph: Graph, node_id: str, typed: list[str], dist: int) -> dict:
    """Return the rejected-candidate record of a name offered for a typo."""
    return {"id": node_id, "type": graph.nodes[node_id].node_type, "name": graph.nodes[node_id].label,
            "typed": typed, "distance": dist, "why": SIMILAR_SPELLING}


def _suggest_persons(graph: Graph, typed: Iterable[str]) -> list[dict]:
    """Return the persons whose names are nearest the typed name words (never chosen).

    A person's score is (typed words its name leaves unexplained, total edits); only
    persons reached through a corrected word count, and only the best score is offered.
    """
    typed = list(dict.fromkeys(typed))
    near = _near_keys(graph, PERSON, typed)
    index = graph.token_index.get(PERSON, {})
    scored = []
    for node_id in {n for key in near for n in index.get(key, ())}:
        own = frozenset().union(*graph.name_variants[node_id])
        dists = [0 if t in own else min((d for k, (t2, d) in near.items() if t2 == t and k in own),
                                        default=None) for t in typed]
        missing = sum(d is None for d in dists)
        scored.append((missing, sum(d or 0 for d in dists), graph.nodes[node_id].label, node_id))
    return _best_suggestions(graph, scored, typed)


def _best_suggestions(graph: Graph, scored: list[tuple], typed: list[str]) -> list[dict]:
    """Return the records of the best-scored (score, edits, label, id) entries, at most SUGGEST_LIMIT."""
    if not scored:
        return []
    best = min(s[:2] for s in scored)
    return [_suggestion(graph, node_id, typed, dist)
            for _, dist, _, node_id in sorted(s for s in scored if s[:2] == best)[:SUGGEST_LIMIT]]


def _suggest_keywords(graph: Graph, typed: Iterable[str]) -> list[dict]:
    """Return the keywords every word of which is typed or nearly typed (never chosen)."""
    typed = [k for k in dict.fromkeys(typed) if len(k) >= SUGGEST_MIN_CHARS]
    near = _near_keys(graph, KEYWORD, typed)
    index = graph.token_index.get(KEYWORD, {})
    scored = []
    for node_id in {n for key in near for n in index.get(key, ())}:
        for variant in graph.name_variants[node_id]:
            dists = [0 if k in typed else near[k][1] if k in near else None for k in variant]
            if variant and None not in dists:
                scored.append((-len(variant), sum(dists), graph.nodes[node_id].label, node_id))
    return _best_suggestions(graph, scored, typed)


def _suggest_titles(graph: Graph, typed: Iterable[str]) -> list[dict]:
    """Return the theses whose titles match once typos in the question are corrected."""
    typed = list(dict.fromkeys(typed))
    near = _near_keys(graph, THESIS, typed)
    if not near:
        return []
    match = _match_titles(graph, set(typed) | set(near))
    dist = {n: sum(d for k, (_, d) in near.items() if k in graph.name_variants[n][0])
            for n in match.chosen}
    return _best_suggestions(graph, [(0, dist[n], graph.nodes[n].label, n) for n in match.chosen
                                     if dist[n]], typed)


# === 7. Questions — language, intent and year; conservative: None when unsure ===

def _kind(folded: str, year: int | None) -> str | None:
    """Return the intent kind of a folded, lower-case question, or None.

    "How many ... in YEAR" wins over everything; "who/which ... in YEAR" only when no
    other kind claims the question (so "Kto je vedúci práce X v roku 2024?" asks for a
    supervisor, not a list).
    """
    about_year = year is not None and bool(RE_THESIS_WORD.search(folded)
                                           or RE_PERSON_WORD.search(folded))
    counting = bool(RE_COUNT.search(folded)) and bool(RE_THESIS_WORD.search(folded)
                                                      or RE_PERSON_WORD.search(folded))
    if counting and (RE_SUPERVISE.search(folded) or RE_KEYWORD.search(folded)
                     or RE_WROTE.search(folded)):
        return "count_filtered"
    if about_year and RE_COUNT.search(folded):
        return "count_year"
    kind = _kind_by_words(folded)
    if kind is None and about_year and RE_WHO_LIST.search(folded):
        return "count_year"
    return kind


def _kind_by_words(folded: str) -> str | None:
    """Return the intent kind named by the question's words (no year rules), or None."""
    if RE_AUTHOR_OF.search(folded):
        return "author_of_title"
    if RE_ABOUT.search(folded):
        return "about"
    supervising = RE_SUPERVISE.search(folded) or re.search(r"spoluve|spoluvi|supervis|promotor",
                                                           folded)
    if RE_COSUPERVISE.search(folded) and supervising:
        return "co_supervision"      # co_supervisors of a person, or co_supervised theses
    if RE_WHEN.search(folded) and not supervising and (
            RE_DEFEND.search(folded) or RE_WROTE.search(folded) or RE_THESIS_WORD.search(folded)):
        return "thesis_year"
    if RE_SUPERVISE.search(folded):
        return "supervised_by" if RE_SUPERVISED_BY.search(folded) else "supervisor_of"
    if RE_KEYWORD.search(folded):
        return "keyword_theses"
    if ((RE_TITLE.search(folded) or RE_WROTE.search(folded) or RE_CALLED.search(folded))
            and RE_THESIS_WORD.search(folded)):
        return "thesis_title"
    if RE_WHO_IS.search(folded):
        return "who_is"
    return None


def graph_parse_question(question: str | rc.Question, graph: Graph) -> Intent | None:
    """Return the question's Intent, or None when it is not a question the graph answers
    exactly (a relation it lacks, a word it cannot use: see _parse).

    Raises InvalidQueryError for an empty or over-long question (rc.question_make).
    """
    return _parse(rc.question_make(question), graph)[0]


def _parse(asked: rc.Question, graph: Graph) -> tuple[Intent | None, tuple[str, Any] | None]:
    """Return the question's Intent, or None and why: ("unsupported_relation", relation) or
    ("unsupported_question", the words left over), or None for any other question."""
    question = asked.text
    folded = " ".join(rc.text_fold(w) for w in rc.text_words(question))
    year_match = RE_YEAR.search(folded)
    year = int(year_match.group(1)) if year_match else None
    words = _question_words(question)
    missing = _missing_relation(words, graph)
    if missing is not None:
        return None, ("unsupported_relation", missing)
    name_keys = _name_keys(question, graph)
    kind = _kind(folded, year)
    if kind is not None:
        kind = _kind_refined(kind, folded, year, graph, name_keys)[0]
    language = asked.language_or(DEFAULT_LANGUAGE)
    ctx = _Parse(question, graph, words, folded, kind, year, language, name_keys)
    intent = _form_intent(ctx)
    if intent is not None or ctx.refusal is not None:
        return intent, ctx.refusal
    if kind is None or kind in ("count_year", "count_filtered", "supervised_by", "keyword_theses",
                                "supervisor_list"):
        return None, None     # a count or list the form parsers did not take is not the graph's
    words = tuple(w for w in rc.text_words(question) if not RE_YEAR.fullmatch(w))
    keys = tuple(name_key(w) for w in words)
    target = _about_target(graph, words, name_keys) if kind in ("about", "who_is") else None
    if target is not None and not target[0] and not (name_keys and _suggest_persons(graph, name_keys)):
        return None, None   # "who is / what is known about X" with no graph entity: leave it to RAG
    return Intent(kind=kind, language=language, keys=keys, name_keys=name_keys, year=year,
                  words=words, target=target), None


def _refusal(graph: Graph, intent: Intent, limits: GraphLimits, reason: str, detail: Any) -> GraphResult:
    """Return the no_answer of a question the graph cannot answer exactly: the relation it
    lacks, with the relations it has, or the words of the question it could not use."""
    lang = intent.language
    result = _no_answer(intent, limits, reason, [], [], graph=graph)
    if reason == "unsupported_relation":
        has = [ANSWERS.get((f"relation_{r}", lang), r) for r in _graph_relations(graph)]
        result.answer = ANSWERS[(reason, lang)].format(
            relation=ANSWERS[(f"relation_{detail}", lang)], relations=", ".join(has))
        result.reasons = [f"the graph has no '{detail}' relation; it has: "
                          + ", ".join(_graph_relations(graph))]
    else:
        result.answer = ANSWERS[(reason, lang)].format(words=", ".join(f"„{w}“" for w in detail))
        result.reasons = ["words of the question that no filter, entity or question form uses: "
                          + ", ".join(detail)]
    return result


def _graph_relations(graph: Graph) -> list[str]:
    """Return the relations the graph holds: its edge types, then the thesis attributes year
    and kind (when some thesis has one); read once per loaded graph."""
    if graph.relations is None:
        types = {t for by_type in graph.out_edges.values() for t in by_type}
        graph.relations = ([t for t in EDGE_ENDS if t in types] + sorted(types - set(EDGE_ENDS))
                           + ["year"] * bool(graph.year_index) + ["kind"] * bool(graph.kind_index))
    return graph.relations


def _kind_refined(kind: str, folded: str, year: int | None, graph: Graph,
                  name_keys: tuple[str, ...]) -> tuple[str | None, tuple[str, ...]]:
    """Return the kind once the graph is consulted, and a count's filters.

    A year count naming a person, keyword or supervisor is a filtered count; a filtered
    count with nothing to filter by is not a graph question. Co-supervision with a person
    asks for their co-supervisors, without one for the co-supervised theses. A supervisor
    question that names no one (no capitalised word, no person's word) lists supervisors.
    """
    person_index = graph.token_index.get(PERSON, {})
    named = any(k in person_index for k in name_keys)
    if kind == "count_year" and (RE_KEYWORD.search(folded) or RE_SUPERVISE.search(folded) or named):
        kind = "count_filtered"
    if kind == "count_filtered":
        supervising = bool(RE_SUPERVISE.search(folded))
        filters = tuple(f for f, on in (
            ("supervisor", supervising and bool(name_keys)),
            ("author", not supervising and (named or bool(RE_WROTE.search(folded) and name_keys))),
            ("keyword", bool(RE_KEYWORD.search(folded)))) if on)
        if supervising and "supervisor" not in filters:
            return None, ()      # how many supervisors, or by someone unnamed: left to search
        if not filters:
            return ("count_year" if year is not None else None), ()
        return kind, filters
    if kind == "co_supervision":
        return ("co_supervisors" if name_keys else "co_supervised"), ()
    if kind in ("supervisor_of", "supervised_by") and not name_keys \
            and (RE_LIST_ALL.search(folded) or year is not None):
        return "supervisor_list", ()
    return kind, ()


def _name_keys(question: str, graph: Graph) -> tuple[str, ...]:
    """Return the keys of the question's likely name words: the capitalised ones, or when
    capitals mark none (all-caps or lower-case names), the runs that hold a person's name word."""
    return _capitalised_keys(question) or _name_run_keys(question, graph)


def _capitalised_keys(question: str) -> tuple[str, ...]:
    """Return the keys of capitalised non-stop words after the first word (likely names)."""
    words = rc.text_words(question, keep_case=True)[1:]
    return tuple(name_key(w) for w in words
                 if w[:1].isupper() and len(w) > 1 and not _is_question_word(w)
                 and not w.isupper())     # all-caps words carry no name signal


def _name_run_keys(question: str, graph: Graph) -> tuple[str, ...]:
    """Return the keys of each run of adjacent non-stop words holding a word of some person's
    name ("eva veselá": Veselá is named with Eva even if no one is called Veselá)."""
    index = graph.token_index.get(PERSON, {})
    keys: list[str] = []
    run: list[str] = []
    for word in rc.text_words(question) + [""]:          # the empty word ends the last run
        if len(word) > 1 and not word.isdigit() and not _is_question_word(word):
            run.append(name_key(word))
            continue
        if any(key in index for key in run):
            keys += run
        run = []
    return tuple(dict.fromkeys(keys))


# --- 7a. Filters, rankings and the words a question leaves over

@dataclass(frozen=True)
class Filter:
    """One condition on the theses a count, list or ranking reads (aggregation.filters):
    field kind, year, keyword, supervisor or author; op eq, in, gte, lte or between."""

    field: str
    op: str
    value: Any

    def as_dict(self) -> dict:
        return {"field": self.field, "op": self.op, "value": self.value}


@dataclass
class _Words:
    """A question split for accounting: its words, their folded forms, the folded text (one
    space between words; a dash kept only between two numbers, as in 2021–2023), each word's
    span in that text, and the words some part of the parse has used."""

    raw: list[str]
    folded: list[str]
    text: str
    spans: list[tuple[int, int]]
    used: set[int] = field(default_factory=set)

    def mark(self, pattern: re.Pattern, text: str | None = None) -> list[re.Match]:
        """Return pattern's matches in the folded text, marking the words they cover used."""
        found = list(pattern.finditer(self.text if text is None else text))
        for m in found:
            self.used.update(self.covered(m.start(), m.end()))
        return found

    def covered(self, start: int, end: int) -> list[int]:
        return [i for i, (a, b) in enumerate(self.spans) if a < end and b > start]

    def unused(self) -> list[str]:
        """Return the content words no part of the parse used (stop and question words aside)."""
        return [w for i, (w, f) in enumerate(zip(self.raw, self.folded))
                if i not in self.used and f not in QUESTION_WORDS]


RE_RAW_TOKEN = re.compile(r"\w+|[-–—]")


def _question_words(question: str) -> _Words:
    """Return the question split for accounting (see _Words); format characters (a zero-width
    space or soft hyphen inside a word) are dropped first, as retrieval_contract's words drop them."""
    tokens = RE_RAW_TOKEN.findall("".join(c for c in question if unicodedata.category(c) != "Cf"))
    raw, folded, parts, spans, pos = [], [], [], [], 0
    for i, token in enumerate(tokens):
        if not token[0].isalnum() and token[0] != "_":
            if (0 < i < len(tokens) - 1 and tokens[i - 1].isdigit() and tokens[i + 1].isdigit()):
                parts.append("-")
                pos += 2
            continue
        word = rc.text_fold(token)
        raw.append(token)
        folded.append(word)
        parts.append(word)
        spans.append((pos, pos + len(word)))
        pos += len(word) + 1
    return _Words(raw, folded, " ".join(parts), spans)


_YN = rf"(?:{_alternatives('year_noun')} )?"
_PLAIN = {key: "(?:" + "|".join(sorted({f for t in SET_WORDS.values() for f in t[key] if "Y" not in f},
                                       key=len, reverse=True)) + ")"
          for key in ("year_from", "year_after", "year_to", "year_before")}
# Year conditions, tried in this order; each is (pattern, how its years become a Filter).
YEAR_RULES: tuple[tuple[re.Pattern, Callable[[int, int], tuple[str, Any]]], ...] = (
    (re.compile(rf"\b{_alternatives('year_between')} {_YN}{YEAR} ?"
                rf"(?:-|{_alternatives('year_through')}|{_alternatives('year_and')}) ?{_YN}{YEAR}\b"),
     lambda a, b: ("between", [min(a, b), max(a, b)])),
    (re.compile(rf"\b(?:{_alternatives('year_during')}|{_PLAIN['year_from']}) {_YN}{YEAR} ?"
                rf"(?:-|{_alternatives('year_through')}) ?{_YN}{YEAR}\b"),
     lambda a, b: ("between", [min(a, b), max(a, b)])),
    (re.compile(rf"\b{_YN}{YEAR} ?(?:-|{_alternatives('year_through')}) ?{_YN}{YEAR}\b"),
     lambda a, b: ("between", [min(a, b), max(a, b)])),
    *((re.compile(r"\b" + "|".join(f.replace("Y", YEAR) for t in SET_WORDS.values() for f in t[key]
                                   if "Y" in f) + r"\b"), rule)
      for key, rule in (("year_from", lambda a, b: ("gte", a)), ("year_to", lambda a, b: ("lte", a)))),
    (re.compile(rf"\b{_PLAIN['year_from']} {_YN}{YEAR}\b"), lambda a, b: ("gte", a)),
    (re.compile(rf"\b{_PLAIN['year_after']} {_YN}{YEAR}\b"), lambda a, b: ("gte", a + 1)),
    (re.compile(rf"\b{_PLAIN['year_to']} {_YN}{YEAR}\b"), lambda a, b: ("lte", a)),
    (re.compile(rf"\b{_PLAIN['year_before']} {_YN}{YEAR}\b"), lambda a, b: ("lte", a - 1)),
)
RE_YEARS_AND = re.compile(rf"\b{YEAR}(?:(?: ?,| {_alternatives('year_and')}) {_YN}{YEAR})+\b")
RE_ONE_YEAR = re.compile(rf"\b{YEAR}\b")


def _year_filters(words: _Words) -> list[Filter]:
    """Return the year conditions of the question (ranges, lists, one year), marking their words."""
    text, filters = words.text, []
    for pattern, rule in YEAR_RULES:
        for m in words.mark(pattern, text):
            years = [int(y) for y in m.groups() if y]
            op, value = rule(years[0], years[-1])
            filters.append(Filter("year", op, value))
            text = text[:m.start()] + " " * (m.end() - m.start()) + text[m.end():]
    for m in words.mark(RE_YEARS_AND, text):
        filters.append(Filter("year", "in", sorted({int(y) for y in RE_ONE_YEAR.findall(m.group(0))})))
        text = text[:m.start()] + " " * (m.end() - m.start()) + text[m.end():]
    for m in words.mark(RE_ONE_YEAR, text):
        filters.append(Filter("year", "eq", int(m.group(1))))
    return filters


def _level_filter(words: _Words) -> list[Filter]:
    """Return the thesis level the question names (bachelor, master, doctoral), if any."""
    levels = [level for level in LEVELS if words.mark(RE_LEVEL[level])]
    if not levels:
        return []
    return [Filter("kind", "eq", levels[0]) if len(levels) == 1 else Filter("kind", "in", levels)]


def _thesis_level(kind: str) -> str:
    """Return the level of a thesis's `kind` text (bachelor, master, doctoral), else the text folded."""
    folded = " ".join(rc.text_fold(w) for w in rc.text_words(kind))
    for level in LEVELS:
        if RE_LEVEL[level].search(folded):
            return level
    return folded


def _missing_relation(words: _Words, graph: Graph) -> str | None:
    """Return the relation the question asks about that the graph format lacks (opponent,
    grade, committee, e-mail), unless the word belongs to a title or keyword of the graph."""
    for relation, pattern in RE_MISSING.items():
        for m in pattern.finditer(words.text):
            keys = [name_key(words.raw[i]) for i in words.covered(m.start(), m.end())]
            if not any(k in graph.token_index.get(t, {}) for k in keys for t in (THESIS, KEYWORD)):
                return relation
    return None


@dataclass
class _Parse:
    """What parsing knows of a question, handed to the parsers of the question forms."""

    question: str
    graph: Graph
    words: _Words
    folded: str
    kind: str | None             # the kind the word rules (_kind) give, before the forms' parsers
    year: int | None
    language: str
    name_keys: tuple[str, ...]
    refusal: tuple[str, Any] | None = None   # (reason, detail) when the graph cannot answer


# A thesis as a count, list or ranking names it (stricter than RE_THESIS_WORD: not "pracovisko").
RE_THESIS_NOUN = re.compile(r"\b(prac[aeiuy]?|pracou|pracami|pracach|pracam|pracom|thes[ie]s|"
                            r"dissertations?|works?|papers?)\b")
# The words every count, list or ranking may use (the question forms' own words).
SET_VOCABULARY = (RE_COUNT, RE_WHO_LIST, RE_WHO, RE_THESIS_NOUN, RE_PERSON_WORD, RE_SUPERVISE,
                  RE_SUPERVISED_BY, RE_KEYWORD, RE_WROTE, RE_DEFEND, RE_LIST_ALL, RE_SET_LIST,
                  RE_RANK, RE_FILLER, RE_TOPIC)


def _set_intent(ctx: _Parse, kind: str, ranked: str | None = None,
                top: int | None = None) -> Intent | None:
    """Return the Intent of a count, list or ranking of theses once every content word of the
    question is accounted for: a year condition, a level, a keyword, a supervisor or author,
    or a word of the form; None (ctx.refusal naming the words) when a word is left over."""
    words, graph = ctx.words, ctx.graph
    where = _year_filters(words) + _level_filter(words)
    for pattern in SET_VOCABULARY:
        words.mark(pattern)
    if ranked == "year":
        words.mark(RE_RANKED_YEAR)
    elif ranked == "keyword":
        words.mark(RE_RANKED_KEYWORD)
    n = len(words.raw)
    content = [i for i in range(n) if i not in words.used and words.folded[i] not in QUESTION_WORDS]
    names = set(ctx.name_keys)
    # a keyword named by the words left (its name or an alias, in any inflected form)
    match = _match_keywords(graph, {name_key(words.raw[i]) for i in content})
    filters: list[str] = []
    if match.chosen:
        used_keys = set().union(*(c["matched_keys"] for c in match.candidates))
        words.used.update(i for i in content if name_key(words.raw[i]) in used_keys)
        filters.append("keyword")
    elif (RE_KEYWORD.search(ctx.folded) and ranked != "keyword") or any(
            j < n and j in content and name_key(words.raw[j]) not in names
            for m in RE_TOPIC.finditer(words.text) for j in [_word_after(words, m.end())]):
        words.used.update(i for i in content if name_key(words.raw[i]) not in names)
        filters.append("keyword")           # an unknown keyword: answered with did-you-mean
    # a person named by the capitalised words (or runs holding a name word) left
    left = [i for i in range(n) if i not in words.used and words.folded[i] not in QUESTION_WORDS]
    named = [i for i in left if name_key(words.raw[i]) in names]
    supervising = bool(RE_SUPERVISE.search(ctx.folded)) and ranked != "supervisor"
    person_index = graph.token_index.get(PERSON, {})
    person = None
    if named and (supervising or RE_WROTE.search(ctx.folded) or RE_PERSON_WORD.search(ctx.folded)
                  or any(name_key(words.raw[i]) in person_index for i in named)):
        person = _match_persons(graph, _intent_words(ctx.question), ctx.name_keys)
        if person.chosen:        # a name word the chosen person lacks is left over (Brno, English)
            matched = set().union(*(c.get("matched_keys", ()) for c in person.candidates))
            named = [i for i in named if name_key(words.raw[i]) in matched]
        words.used.update(named)
        filters.append("supervisor" if supervising else "author")
    elif supervising and ranked is None:
        if kind != "thesis_list":
            return None       # how many supervisors, or theses of someone unnamed: not the graph's
        if RE_LIST_ALL.search(ctx.folded) or any(w.field == "year" for w in where):
            plain = all(w.field == "year" and w.op == "eq" for w in where) and not filters
            kind, ranked = ("supervisor_list" if plain else "ranking"), "supervisor"
        else:
            filters.append("supervisor")     # theses of a supervisor the question does not name
    leftover = words.unused()
    if leftover:
        ctx.refusal = ("unsupported_question", leftover)
        return None
    years = [f for f in where if f.field == "year"]
    year = years[0].value if len(years) == 1 and years[0].op == "eq" else None
    subject = PERSON
    if RE_THESIS_WORD.search(ctx.folded) and not RE_PERSON_WORD.search(ctx.folded) \
            and not RE_WHO.search(ctx.folded) or kind == "thesis_list":
        subject = THESIS
    question_words = _intent_words(ctx.question)
    return Intent(kind=kind, language=ctx.language, keys=tuple(name_key(w) for w in question_words),
                  name_keys=ctx.name_keys, year=year, subject=subject, words=question_words,
                  filters=tuple(filters), where=tuple(where), ranked=ranked, top=top, person=person)


def _intent_words(question: str) -> tuple[str, ...]:
    """Return the question's words without its years (Intent.words)."""
    return tuple(w for w in rc.text_words(question) if not RE_YEAR.fullmatch(w))


def _word_after(words: _Words, pos: int) -> int:
    """Return the index of the first word starting at or after pos in the folded text."""
    return next((i for i, (a, _) in enumerate(words.spans) if a >= pos), len(words.spans))


# === 8. Answers — evidence within the limits; no-answer, ambiguous, absent relation ===

@dataclass
class QuestionForm:
    """One question form: the words that call it, per language (regex fragments over the
    folded question), the kinds of the word rules it takes over, its parser and its answer."""

    name: str
    patterns: dict[str, tuple[str, ...]]
    claims: tuple[str, ...]
    parse: Callable[[_Parse], Intent | None] | None
    answer: Callable[[Graph, Intent, GraphLimits], GraphResult]
    regex: re.Pattern | None = None


# name -> form, in the order their parsers are tried; ask() answers through it.
QUESTION_FORMS: dict[str, QuestionForm] = {}


def question_form(name: str, patterns: dict[str, tuple[str, ...]] | None = None,
                  parse: Callable[[_Parse], Intent | None] | None = None,
                  claims: tuple[str, ...] = ()) -> Callable:
    """Register the decorated answer builder as question form `name`, with its patterns per
    language and its parser (a form without a parser is found by the word rules, _kind)."""
    def register(answer: Callable[[Graph, Intent, GraphLimits], GraphResult]) -> Callable:
        fragments = [f for lang in sorted(patterns or {}) for f in patterns[lang]]
        regex = re.compile(r"\b(?:" + "|".join(fragments) + r")\b") if fragments else None
        QUESTION_FORMS[name] = QuestionForm(name, patterns or {}, claims, parse, answer, regex)
        return answer
    return register


def _form_intent(ctx: _Parse) -> Intent | None:
    """Return the Intent the first form parser claiming the question gives, or None."""
    for form in QUESTION_FORMS.values():
        if form.parse and (ctx.kind in form.claims or (form.regex and form.regex.search(ctx.words.text))):
            intent = form.parse(ctx)
            if intent is not None or ctx.refusal is not None:
                return intent
    return None



def _take(items: Iterable, limit: int) -> tuple[list, bool]:
    """Return up to limit items and whether one more existed (the truncation proof)."""
    got = list(itertools.islice(items, limit + 1))
    return got[:limit], len(got) > limit


def _fact_text(graph: Graph, fact: Fact, lang: str) -> str:
    """Return a fact as a short sentence in the question's language, its names in the form
    the graph gives them ("Práca „T“ (2024) — vedúci: Peter Novák."); an edge type this format
    does not know is named as it is in the file."""
    src, dst = graph.nodes[fact.subject], graph.nodes[fact.obj]
    if (f"fact_{fact.predicate}", lang) in ANSWERS:
        thesis, other = (src, dst) if src.node_type == THESIS else (dst, src)
        return ANSWERS[(f"fact_{fact.predicate}", lang)].format(
            thesis=_node_item(graph, thesis.node_id), other=_node_item(graph, other.node_id))
    return f"{_node_item(graph, src.node_id)} — {fact.predicate.replace('_', ' ')}: {_node_item(graph, dst.node_id)}."


def _path_text(graph: Graph, path: GraphPath, lang: str) -> str:
    """Return a path as its nodes joined by what each step is ("Ján Holp → práca: „T“ (2024)
    → vedúci: Peter Novák"), in the question's language."""
    text = _node_item(graph, path.nodes[0])
    for step, nxt in zip(path.steps, path.nodes[1:]):
        word = STEPS.get((*step, lang), step[0].replace("_", " "))
        text += f" → {word}: {_node_item(graph, nxt)}"
    return text


def _fact(graph: Graph, src: str, edge_type: str, dst: str) -> Fact:
    """Return the Fact of one edge; its document is the thesis end's page, else either end's."""
    ends = [graph.nodes[src], graph.nodes[dst]]
    with_doc = [n for n in ends if n.document_path]
    thesis = [n for n in with_doc if n.node_type == THESIS]
    doc = (thesis or with_doc or [None])[0]
    return Fact(subject=src, predicate=edge_type, obj=dst, text="",     # set when shown (_limited)
                document_node=doc.node_id if doc else None)


def _path(graph: Graph, nodes: list[str], steps: list[tuple[str, str]]) -> GraphPath:
    """Return a GraphPath; its text is set when it is shown (_limited, _path_text)."""
    return GraphPath(nodes=list(nodes), steps=list(steps), text="")


def _entity(graph: Graph, node_id: str, why: str) -> dict:
    """Return the entity record of a recognised node."""
    node = graph.nodes[node_id]
    return {"id": node_id, "type": node.node_type, "name": node.label, "why": why}


@dataclass
class _Evidence:
    """Lazy fact and path streams of one answer, before limits are applied."""

    facts: Iterator[Fact]
    paths: Iterator[GraphPath]


def _limited(graph: Graph, limits: GraphLimits, evidence: _Evidence, entities: list[dict],
             lang: str) -> tuple[list[Fact], list[GraphPath], list[Node], list[dict], list[str]]:
    """Return the facts, paths (their text in the question's language), documents and
    entities within their limits, and the limits hit."""
    facts, facts_cut = _take(evidence.facts, limits.fact_limit)
    paths, paths_cut = _take(evidence.paths, limits.path_limit)
    for fact in facts:
        fact.text = _fact_text(graph, fact, lang)
    for path in paths:
        path.text = _path_text(graph, path, lang)
    doc_ids = list(dict.fromkeys(f.document_node for f in facts if f.document_node))
    documents, docs_cut = _take(iter(doc_ids), limits.evidence_limit)
    shown_entities, entities_cut = _take(iter(entities), limits.entity_limit)
    cut = [name_ for name_, hit in (("entity_limit", entities_cut), ("evidence_limit", docs_cut),
                                    ("fact_limit", facts_cut), ("path_limit", paths_cut)) if hit]
    return facts, paths, [graph.nodes[d] for d in documents], shown_entities, cut


def _finish(graph: Graph, intent: Intent, limits: GraphLimits, evidence: _Evidence,
            entities: list[dict], name: str, aggregation: dict | None = None,
            rejected: list[dict] | None = None, answer: str | None = None) -> GraphResult:
    """Return an ok GraphResult with limited facts, paths and documents; when no fact of
    the asked kind exists, the no_answer that says what the graph knows instead (_absent)."""
    facts, paths, documents, shown_entities, cut = _limited(graph, limits, evidence, entities,
                                                            intent.language)
    lang = intent.language
    more_facts = sum(1 for _ in evidence.facts) + 1 if "fact_limit" in cut else 0
    if not facts and aggregation is None:
        return _absent(graph, intent, limits, shown_entities, rejected or [], name)
    if answer is None and aggregation is not None:
        key = "count_persons" if intent.subject == PERSON else "count_theses"
        answer = ANSWERS[(key, lang)].format(year=intent.year, count=aggregation["count"])
    elif answer is None:
        items = "; ".join(dict.fromkeys(_fact_item(graph, intent.kind, f) for f in facts))
        answer = ANSWERS[(intent.kind, lang)].format(name=name, items=items)
    if aggregation is None and more_facts:     # a count's answer is exact: the limits line says the rest
        answer += _more_text(lang, "facts", len(facts), len(facts) + more_facts)
    elif aggregation is None and "path_limit" in cut:
        answer += ANSWERS[("partial_paths", lang)].format(shown=len(paths))
    shown_rejected, more = _rejected_shown(rejected or [], limits)
    return GraphResult(
        status="ok", reason=None, intent=intent.kind, language=lang, answer=answer,
        entities=shown_entities, facts=facts, paths=paths,
        documents=documents, aggregation=aggregation,
        reasons=more, rejected_candidates=shown_rejected, truncation_reasons=cut, limits=limits,
        index_version=graph.index_version)


def _node_item(graph: Graph, node_id: str) -> str:
    """Return how a node is listed in an answer: a thesis as „title“ (year), else its name."""
    node = graph.nodes[node_id]
    return f"„{node.label}“ ({node.year})" if node.node_type == THESIS else node.label


def _summary(graph: Graph, node_id: str, lang: str, limit: int) -> str:
    """Return what the graph knows about a node, one group per edge type and direction:
    its name, the exact count, and up to limit items ("theses supervised (6): „A“ (2020), …")."""
    groups = []
    for direction, adjacency in (("out", graph.out_edges), ("in", graph.in_edges)):
        for edge_type, others in sorted(adjacency.get(node_id, {}).items()):
            label = RELATIONS.get((edge_type, direction, lang),
                                  edge_type if direction == "out" else f"<-{edge_type}-")
            items = [_node_item(graph, o) for o in others[:limit]]
            more = ", …" if len(others) > limit else ""
            groups.append(f"{label} ({len(others)}): {', '.join(items)}{more}")
    return "; ".join(groups)


def _absent(graph: Graph, intent: Intent, limits: GraphLimits, entities: list[dict],
            rejected: list[dict], name: str) -> GraphResult:
    """Return the no_answer for an entity the graph knows but not in the asked relation:
    the sentence says what is missing, then what the graph does know (with its facts)."""
    reasons = ["the entity was found but no fact of the asked kind links it"]
    result = _no_answer(intent, limits, "no_matching_facts", reasons, rejected, entities, graph)
    key = ABSENT.get(intent.kind)
    if key and intent.year is not None and (key + "_year", intent.language) in ANSWERS:
        key += "_year"
    if not entities or key is None:
        return result
    focus, lang = entities[0]["id"], intent.language
    if key == "absent_supervisor" and not _neighbours(graph, focus, AUTHORED):
        key = "absent_authored"     # no supervisor because there is no thesis at all
    summary = _summary(graph, focus, lang, limits.fact_limit)
    result.answer = ANSWERS[(key, lang)].format(name=name, year=intent.year)
    if key != "absent_any":
        result.answer += (ANSWERS[("known", lang)].format(items=summary) if summary
                          else ANSWERS[("nothing_known", lang)])
    evidence = _Evidence(facts=_incident_facts(graph, focus), paths=iter(()))
    result.facts, _, result.documents, _, result.truncation_reasons = _limited(
        graph, limits, evidence, entities, lang)
    return result


def _fact_item(graph: Graph, kind: str, fact: Fact) -> str:
    """Return the part of a fact the answer sentence lists for this question kind."""
    if kind in ("thesis_title", "supervised_by"):
        node = graph.nodes[fact.obj if kind == "thesis_title" else fact.subject]
        return f"„{node.label}“ ({node.year})"
    if kind == "supervisor_of":
        return graph.nodes[fact.obj].label
    if kind == "keyword_theses":
        node = graph.nodes[fact.subject]
        return f"„{node.label}“ ({node.year})"
    if kind == "author_of_title":
        return graph.nodes[fact.subject].label
    return fact.text


def _rejected_shown(rejected: list[dict], limits: GraphLimits) -> tuple[list[dict], list[str]]:
    """Return the rejected candidates within entity_limit and a reason line for the rest.

    Rejected candidates are diagnostics, not evidence, so leaving some out is said in
    `reasons` and does not mark the answer truncated.
    """
    shown = rejected[:limits.entity_limit]
    more = len(rejected) - len(shown)
    return shown, ([f"{more} further rejected candidates are not listed (entity_limit)"]
                   if more else [])


def _no_answer(intent: Intent, limits: GraphLimits, reason: str, reasons: list[str],
               rejected: list[dict], entities: list[dict] | None = None,
               graph: Graph | None = None, suggestions: list[dict] | None = None) -> GraphResult:
    """Return a no_answer GraphResult with the detailed reasons and rejected candidates;
    suggestions (names of similar spelling) come first and are asked about, never chosen."""
    suggestions = suggestions or []
    offered = {c["id"] for c in suggestions}
    if suggestions:
        rejected = (rejected.without(offered, suggestions) if isinstance(rejected, _Records)
                    else suggestions + [c for c in rejected if c.get("id") not in offered])
    shown, more = _rejected_shown(rejected, limits)
    lang = intent.language
    answer = ANSWERS[(reason, lang)]
    if suggestions:
        names = [c["name"] for c in suggestions]
        listed = ", ".join(names[:-1]) + ANSWERS[("or", lang)] + names[-1] if len(names) > 1 else names[0]
        answer += ANSWERS[("did_you_mean", lang)].format(items=listed)
        reasons = reasons + ["names of similar spelling are offered, never chosen: " + ", ".join(names)]
    return GraphResult(status="no_answer", reason=reason, intent=intent.kind,
                       language=lang, answer=answer,
                       entities=entities or [], reasons=reasons + more,
                       rejected_candidates=shown, limits=limits,
                       index_version=graph.index_version if graph else None)


def _ambiguous(graph: Graph, intent: Intent, limits: GraphLimits, match: _Match) -> GraphResult:
    """Return the ambiguous result listing each candidate and why it was considered."""
    shown, cut = _take(iter(match.candidates), limits.entity_limit)
    entities = [dict(_entity(graph, c["id"], c["why"]), matched_keys=c.get("matched_keys", []))
                for c in shown]
    names = ", ".join(c["name"] for c in shown)
    sentence, reason, line = AMBIGUOUS[graph.nodes[match.chosen[0]].node_type]
    rejected, more = _rejected_shown(match.rejected, limits)
    return GraphResult(
        status="ambiguous", reason=reason, intent=intent.kind, language=intent.language,
        answer=ANSWERS[(sentence, intent.language)].format(items=names),
        entities=entities, reasons=[f"{len(match.candidates)} {line}"] + more,
        rejected_candidates=rejected,
        truncation_reasons=["entity_limit"] if cut else [], limits=limits,
        index_version=graph.index_version)


def _one_person(graph: Graph, intent: Intent,
                limits: GraphLimits) -> tuple[str | None, GraphResult | None, list[dict]]:
    """Return (person id, None, rejected candidates), or (None, the unknown/ambiguous result, [])."""
    match = intent.person or _match_persons(graph, intent.words, intent.name_keys)
    if not match.chosen:
        return None, _no_answer(intent, limits, "unknown_person",
                                ["no person's name fits the words of the question"],
                                match.rejected, graph=graph,
                                suggestions=_suggest_persons(graph, _typed_names(intent))), []
    if match.is_ambiguous:
        return None, _ambiguous(graph, intent, limits, match), []
    return match.chosen[0], None, match.rejected


def _typed_names(intent: Intent) -> tuple[str, ...]:
    """Return the keys of the words that name someone: the likely names, else every non-stop word."""
    return intent.name_keys or tuple(name_key(w) for w in intent.words
                                     if not _is_question_word(w))


def _typed_words(intent: Intent) -> list[str]:
    """Return the keys of the question's content words (the ones a keyword or title may hold)."""
    return [name_key(w) for w in intent.words if not _is_question_word(w)]


# --- 8a. Kinds about a person, a keyword or a title — one function each

@question_form("count_year")
def _kind_count_year(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return the exact count of persons (or theses) with a thesis in the year, plus evidence."""
    theses = graph.year_index.get(intent.year, [])
    if intent.subject == PERSON:
        count = len({p for t in theses for p in _neighbours(graph, t, AUTHORED, outgoing=False)})
    else:
        count = len(theses)
    pairs = ((p, t) for t in theses for p in _neighbours(graph, t, AUTHORED, outgoing=False))
    evidence = _Evidence(
        facts=(_fact(graph, p, AUTHORED, t) for p, t in pairs),
        paths=(_path(graph, [p, t], [(AUTHORED, "out")]) for t in theses
               for p in _neighbours(graph, t, AUTHORED, outgoing=False)))
    aggregation = {"count": count, "complete": True, "year": intent.year, "counted": intent.subject,
                   "filters": [Filter("year", "eq", intent.year).as_dict()]}
    result = _finish(graph, intent, limits, evidence, [], str(intent.year), aggregation)
    if count == 0:
        result.reasons = [f"no thesis in the graph has the year {intent.year}"]
    return result


@question_form("thesis_title")
def _kind_thesis_title(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return the titles of the theses a person authored."""
    person, failed, rejected = _one_person(graph, intent, limits)
    if failed:
        return failed
    theses = _neighbours(graph, person, AUTHORED)
    evidence = _Evidence(facts=(_fact(graph, person, AUTHORED, t) for t in theses),
                         paths=(_path(graph, [person, t], [(AUTHORED, "out")]) for t in theses))
    return _finish(graph, intent, limits, evidence, [_entity(graph, person, "person named")],
                   graph.nodes[person].label, rejected=rejected)


@question_form("supervisor_of")
def _kind_supervisor_of(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return the supervisors of a person's theses (person -> thesis -> supervisor)."""
    person, failed, rejected = _one_person(graph, intent, limits)
    if failed:
        return failed
    pairs = [(t, s) for t in _neighbours(graph, person, AUTHORED)
             for s in _neighbours(graph, t, SUPERVISED_BY)]
    evidence = _Evidence(
        facts=(_fact(graph, t, SUPERVISED_BY, s) for t, s in pairs),
        paths=(_path(graph, [person, t, s], [(AUTHORED, "out"), (SUPERVISED_BY, "out")])
               for t, s in pairs))
    return _finish(graph, intent, limits, evidence, [_entity(graph, person, "person named")],
                   graph.nodes[person].label, rejected=rejected)


@question_form("supervised_by")
def _kind_supervised_by(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return the theses a person supervised."""
    person, failed, rejected = _one_person(graph, intent, limits)
    if failed:
        return failed
    theses = [t for t in _neighbours(graph, person, SUPERVISED_BY, outgoing=False)
              if intent.year is None or graph.nodes[t].year == intent.year]
    evidence = _Evidence(facts=(_fact(graph, t, SUPERVISED_BY, person) for t in theses),
                         paths=(_path(graph, [person, t], [(SUPERVISED_BY, "in")]) for t in theses))
    return _finish(graph, intent, limits, evidence, [_entity(graph, person, "person named")],
                   graph.nodes[person].label, rejected=rejected)


@question_form("keyword_theses")
def _kind_keyword_theses(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return the theses tagged with the keyword the question names."""
    match, failed = _one_keyword_set(graph, intent, limits)
    if failed:
        return failed
    pairs = [(t, k) for k in match.chosen for t in _neighbours(graph, k, HAS_KEYWORD, outgoing=False)
             if intent.year is None or graph.nodes[t].year == intent.year]
    evidence = _Evidence(facts=(_fact(graph, t, HAS_KEYWORD, k) for t, k in pairs),
                         paths=(_path(graph, [k, t], [(HAS_KEYWORD, "in")]) for t, k in pairs))
    entities = [_entity(graph, k, "keyword named") for k in match.chosen]
    name = ", ".join(graph.nodes[k].label for k in match.chosen)
    return _finish(graph, intent, limits, evidence, entities, name, rejected=match.rejected)


def _one_keyword_set(graph: Graph, intent: Intent,
                     limits: GraphLimits) -> tuple[_Match, GraphResult | None]:
    """Return the keywords the question names, or the unknown/ambiguous result instead."""
    match = _match_keywords(graph, intent.keys)
    if not match.chosen:
        return match, _no_answer(intent, limits, "unknown_keyword",
                                 ["no keyword of the graph is fully contained in the question"],
                                 match.rejected, graph=graph,
                                 suggestions=_suggest_keywords(graph, _typed_words(intent)))
    if match.is_ambiguous:
        return match, _ambiguous(graph, intent, limits, match)
    return match, None


@question_form("author_of_title")
def _kind_author_of_title(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return the authors of the thesis whose title the question quotes."""
    match = _match_titles(graph, intent.keys)
    if not match.chosen:
        return _no_answer(intent, limits, "unknown_title",
                          [f"no thesis title has {int(TITLE_MIN_COVERAGE * 100)}% of its words "
                           "in the question"], match.rejected, graph=graph,
                          suggestions=_suggest_titles(graph, _typed_words(intent)))
    if match.is_ambiguous:
        return _ambiguous(graph, intent, limits, match)
    pairs = [(p, t) for t in match.chosen for p in _neighbours(graph, t, AUTHORED, outgoing=False)]
    evidence = _Evidence(facts=(_fact(graph, p, AUTHORED, t) for p, t in pairs),
                         paths=(_path(graph, [t, p], [(AUTHORED, "in")]) for p, t in pairs))
    entities = [_entity(graph, t, "title named") for t in match.chosen]
    name = "; ".join(f"„{graph.nodes[t].label}“" for t in match.chosen)
    return _finish(graph, intent, limits, evidence, entities, name, rejected=match.rejected)


def _about_target(graph: Graph, words: Iterable[str],
                  name_keys: Iterable[str] = ()) -> tuple[list[str], _Match | None]:
    """Return the ids an 'about' question names (person, else keyword, else title)."""
    words = list(words)
    keys = [name_key(w) for w in words]
    for match in (_match_persons(graph, words, name_keys), _match_keywords(graph, keys),
                  _match_titles(graph, keys)):
        if match.chosen:
            return match.chosen, match
    return [], None


def _walk(graph: Graph, start: str, max_length: int) -> Iterator[GraphPath]:
    """Yield simple paths from start, shortest first, up to max_length edges, lazily.

    Breadth-first by level, but generated one path at a time, so a consumer that stops
    after limit+1 paths proves truncation even inside a partly consumed level.
    """
    level = [([start], [])]
    for _ in range(max_length):
        next_level = []
        for nodes, steps in level:
            for direction, adjacency in (("out", graph.out_edges), ("in", graph.in_edges)):
                for edge_type, others in sorted(adjacency.get(nodes[-1], {}).items()):
                    for other in others:
                        if other in nodes:
                            continue
                        item = (nodes + [other], steps + [(edge_type, direction)])
                        yield _path(graph, *item)
                        next_level.append(item)
        level = next_level


def _incident_facts(graph: Graph, node_id: str) -> Iterator[Fact]:
    """Yield a Fact for every edge touching node_id, outgoing first."""
    for edge_type, targets in sorted(graph.out_edges.get(node_id, {}).items()):
        for dst in targets:
            yield _fact(graph, node_id, edge_type, dst)
    for edge_type, sources in sorted(graph.in_edges.get(node_id, {}).items()):
        for src in sources:
            yield _fact(graph, src, edge_type, node_id)


@question_form("about")
def _kind_about(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return the facts touching an entity and its paths up to max_path_length."""
    chosen, match = intent.target or _about_target(graph, intent.words, intent.name_keys)
    if not chosen:
        return _unknown_entity(graph, intent, limits)
    if len(chosen) > 1:      # 'about' follows one entity: several named ones are ambiguous
        return _ambiguous(graph, intent, limits, match)
    start = chosen[0]
    evidence = _Evidence(facts=_incident_facts(graph, start),
                         paths=_walk(graph, start, limits.max_path_length))
    return _finish(graph, intent, limits, evidence, [_entity(graph, start, "entity named")],
                   graph.nodes[start].label, rejected=match.rejected if match else [])


@question_form("thesis_year")
def _kind_thesis_year(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return the years of the theses a person authored."""
    person, failed, rejected = _one_person(graph, intent, limits)
    if failed:
        return failed
    theses = _neighbours(graph, person, AUTHORED)
    items = "; ".join(f"{graph.nodes[t].year} („{graph.nodes[t].label}“)"
                      for t in theses[:limits.fact_limit])
    evidence = _Evidence(facts=(_fact(graph, person, AUTHORED, t) for t in theses),
                         paths=(_path(graph, [person, t], [(AUTHORED, "out")]) for t in theses))
    name = graph.nodes[person].label
    return _finish(graph, intent, limits, evidence, [_entity(graph, person, "person named")], name,
                   rejected=rejected,
                   answer=ANSWERS[("thesis_year", intent.language)].format(name=name, items=items))


def _unknown_entity(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return the no_answer of a who-is/about question naming no entity, with any names of
    similar spelling offered."""
    suggestions = _suggest_persons(graph, intent.name_keys) if intent.name_keys else []
    reason = "unknown_person" if suggestions else "no_matching_facts"
    return _no_answer(intent, limits, reason, ["no entity of the graph is named in the question"],
                      [], graph=graph, suggestions=suggestions)


@question_form("who_is")
def _kind_who_is(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return who or what an entity is: a summary of its facts (counts exact), plus paths."""
    chosen, match = intent.target or _about_target(graph, intent.words, intent.name_keys)
    if not chosen:
        return _unknown_entity(graph, intent, limits)
    if len(chosen) > 1:
        return _ambiguous(graph, intent, limits, match)
    node = graph.nodes[chosen[0]]
    name = _node_item(graph, node.node_id)
    if node.title and rc.text_fold(node.title.casefold()) != rc.text_fold(node.label.casefold()):
        name += f" ({node.title})"
    summary = _summary(graph, node.node_id, intent.language, limits.fact_limit)
    evidence = _Evidence(facts=_incident_facts(graph, node.node_id),
                         paths=_walk(graph, node.node_id, limits.max_path_length))
    return _finish(graph, intent, limits, evidence, [_entity(graph, node.node_id, "entity named")],
                   name, rejected=match.rejected if match else [],
                   answer=ANSWERS[("who_is", intent.language)].format(name=name, items=summary))


# --- 8b. Kinds about supervision and counts, and ask() — the dispatch

@question_form("co_supervisors")
def _kind_co_supervisors(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return who supervised theses together with a person (person <- thesis -> other)."""
    person, failed, rejected = _one_person(graph, intent, limits)
    if failed:
        return failed
    pairs = [(t, s) for t in _neighbours(graph, person, SUPERVISED_BY, outgoing=False)
             for s in _neighbours(graph, t, SUPERVISED_BY) if s != person]
    items = "; ".join(f"{graph.nodes[s].label} ({_node_item(graph, t)})"
                      for t, s in pairs[:limits.fact_limit])
    evidence = _Evidence(
        facts=(f for t, s in pairs for f in (_fact(graph, t, SUPERVISED_BY, person),
                                             _fact(graph, t, SUPERVISED_BY, s))),
        paths=(_path(graph, [person, t, s], [(SUPERVISED_BY, "in"), (SUPERVISED_BY, "out")])
               for t, s in pairs))
    name = graph.nodes[person].label
    return _finish(graph, intent, limits, evidence, [_entity(graph, person, "person named")], name,
                   rejected=rejected,
                   answer=ANSWERS[("co_supervisors", intent.language)].format(name=name, items=items))


def _scoped_theses(graph: Graph, intent: Intent) -> Iterable[str]:
    """Return the theses of the question's year, or every thesis when it names none."""
    if intent.year is not None:
        return graph.year_index.get(intent.year, [])
    return (t for year in sorted(graph.year_index) for t in graph.year_index[year])


def _co_supervised(graph: Graph, intent: Intent) -> list[str]:
    """Return the theses of the question's year (or all) with more than one supervisor; the
    all-years list is built once per graph, since it reads every thesis."""
    if intent.year is not None:
        return [t for t in graph.year_index.get(intent.year, [])
                if len(_neighbours(graph, t, SUPERVISED_BY)) > 1]
    if graph.co_supervised is None:
        graph.co_supervised = [t for t in _scoped_theses(graph, intent)
                               if len(_neighbours(graph, t, SUPERVISED_BY)) > 1]
    return graph.co_supervised


@question_form("co_supervised")
def _kind_co_supervised(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return the theses with more than one supervisor (counted exactly)."""
    theses = _co_supervised(graph, intent)
    items = "; ".join(f"{_node_item(graph, t)}: "
                      + ", ".join(graph.nodes[s].label for s in _neighbours(graph, t, SUPERVISED_BY))
                      for t in theses[:limits.fact_limit])
    evidence = _Evidence(
        facts=(_fact(graph, t, SUPERVISED_BY, s) for t in theses
               for s in _neighbours(graph, t, SUPERVISED_BY)),
        paths=(_path(graph, [a, t, b], [(SUPERVISED_BY, "in"), (SUPERVISED_BY, "out")])
               for t in theses for a, b in itertools.combinations(_neighbours(graph, t, SUPERVISED_BY), 2)))
    aggregation = {"count": len(theses), "complete": True, "year": intent.year, "counted": THESIS,
                   "filters": [Filter("year", "eq", intent.year).as_dict()] if intent.year else []}
    answer = ANSWERS[("co_supervised", intent.language)].format(count=len(theses), items=items or "—")
    return _finish(graph, intent, limits, evidence, [], "", aggregation, answer=answer)


def _supervisor_ranking(graph: Graph, intent: Intent, top: int) -> tuple[Counter, list[str]]:
    """Return supervisor -> theses supervised in the question's year (or all years) and the
    top supervisors, most theses first, then by name. Each ranking reads every thesis in its
    scope, so it is built once per graph (and per year of the graph)."""
    cached = graph.supervisor_counts if intent.year is None else graph.year_supervisor_counts.get(intent.year)
    if cached is not None:
        return cached[0], cached[1][:top]
    counts = Counter(s for t in _scoped_theses(graph, intent) for s in _neighbours(graph, t, SUPERVISED_BY))

    def rank(p: str) -> tuple[int, str]:
        return -counts[p], graph.nodes[p].label
    ranking = (counts, sorted(counts, key=rank))
    if intent.year is None:
        graph.supervisor_counts = ranking
    elif intent.year in graph.year_index:   # only years with theses, so asked years can't grow it
        graph.year_supervisor_counts[intent.year] = ranking
    return counts, ranking[1][:top]


@question_form("supervisor_list")
def _kind_supervisor_list(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return every supervisor (of the year's theses, if a year is asked) with their counts."""
    # every supervisor has a thesis, so the top fact_limit + 1 give enough facts to prove a cut
    counts, ranked = _supervisor_ranking(graph, intent, limits.fact_limit + 1)

    def theses_of(person: str) -> list[str]:
        return [t for t in _neighbours(graph, person, SUPERVISED_BY, outgoing=False)
                if intent.year is None or graph.nodes[t].year == intent.year]
    items = "; ".join(f"{graph.nodes[p].label} ({counts[p]})" for p in ranked[:limits.fact_limit])
    evidence = _Evidence(facts=(_fact(graph, t, SUPERVISED_BY, p) for p in ranked for t in theses_of(p)),
                         paths=(_path(graph, [p, t], [(SUPERVISED_BY, "in")])
                                for p in ranked for t in theses_of(p)))
    lang = intent.language
    scope = ANSWERS[("scope_year", lang)].format(year=intent.year) if intent.year else ""
    aggregation = {"count": len(counts), "complete": True, "year": intent.year, "counted": "supervisor",
                   "filters": [Filter("year", "eq", intent.year).as_dict()] if intent.year else []}
    answer = ANSWERS[("supervisor_list", lang)].format(scope=scope, count=len(counts), items=items or "—")
    return _finish(graph, intent, limits, evidence, [], "", aggregation, answer=answer)


def _anchor_fact(graph: Graph, thesis: str, anchor: tuple[str, str, str]) -> Fact:
    """Return the fact joining a thesis to the node its count is narrowed by."""
    node, edge_type, direction = anchor
    return _fact(graph, thesis, edge_type, node) if direction == "in" else _fact(graph, node, edge_type, thesis)



# --- 8c. Counts, lists and rankings of theses under any filters; the question form registry

def _years_in(graph: Graph, f: Filter) -> list[int]:
    """Return the graph's years a year filter keeps, ascending."""
    if f.op == "eq":
        return [f.value] if f.value in graph.year_index else []
    if f.op == "in":
        return [y for y in f.value if y in graph.year_index]
    lo, hi = ((f.value, None) if f.op == "gte" else (None, f.value) if f.op == "lte" else f.value)
    return [y for y in sorted(graph.year_index) if (lo is None or y >= lo) and (hi is None or y <= hi)]


def _filter_source(graph: Graph, f: Filter) -> tuple[int, Callable[[], Iterable[str]], Callable[[str], bool]]:
    """Return (size, the theses it keeps, a test of one thesis) for one filter."""
    values = f.value if f.op == "in" else [f.value]
    if f.field == "year":
        years = _years_in(graph, f)
        kept = set(years)
        return (sum(len(graph.year_index[y]) for y in years),
                lambda: (t for y in years for t in graph.year_index[y]),
                lambda t: graph.nodes[t].year in kept)
    if f.field == "kind":
        lists = [graph.kind_index.get(v, []) for v in values]
        levels = set(values)
        return (sum(map(len, lists)), lambda: (t for lst in lists for t in lst),
                lambda t: graph.kind_levels.get(graph.nodes[t].kind) in levels)
    edge, outgoing = {"keyword": (HAS_KEYWORD, False), "supervisor": (SUPERVISED_BY, False),
                      "author": (AUTHORED, True)}[f.field]
    lists = [_neighbours(graph, v, edge, outgoing=outgoing) for v in values]
    ends = set(values)
    return (sum(map(len, lists)), lambda: dict.fromkeys(t for lst in lists for t in lst),
            lambda t: not ends.isdisjoint(_neighbours(graph, t, edge, outgoing=not outgoing)))


def _theses_where(graph: Graph, filters: list[Filter]) -> list[str]:
    """Return the theses every filter keeps, read from the smallest filter's list (file order)."""
    if not filters:
        return [t for y in sorted(graph.year_index) for t in graph.year_index[y]]
    sources = sorted((_filter_source(graph, f) for f in filters), key=lambda s: s[0])
    tests = [test for _, _, test in sources[1:]]
    return [t for t in sources[0][1]() if all(test(t) for test in tests)]


def _resolved_filters(graph: Graph, intent: Intent,
                      limits: GraphLimits) -> tuple[list[Filter], list[dict], GraphResult | None]:
    """Return the question's filters with its person and keyword found in the graph, their
    entities, or the unknown/ambiguous result instead."""
    filters, entities = list(intent.where), []
    for role in ("supervisor", "author"):
        if role in intent.filters:
            person, failed, _ = _one_person(graph, intent, limits)
            if failed:
                return [], [], failed
            filters.append(Filter(role, "eq", person))
            entities.append(_entity(graph, person, "person named"))
    if "keyword" in intent.filters:
        match, failed = _one_keyword_set(graph, intent, limits)
        if failed:
            return [], [], failed
        chosen = list(match.chosen)
        filters.append(Filter("keyword", "eq", chosen[0]) if len(chosen) == 1
                       else Filter("keyword", "in", chosen))
        entities += [_entity(graph, k, "keyword named") for k in chosen]
    return filters, entities, None


def _scope_text(graph: Graph, filters: list[Filter], lang: str) -> str:
    """Return the filters as a short parenthesised phrase in the question's language, names
    in their dictionary form ("(bakalárska práca; rok 2024; vedúci: Peter Novák)")."""
    parts = []
    for f in filters:
        values = f.value if f.op in ("in", "between") else [f.value]
        if f.field == "kind":
            parts.append(" / ".join(ANSWERS[(f"level_{v}", lang)] if (f"level_{v}", lang) in ANSWERS
                                    else str(v) for v in values))
        elif f.field == "year":
            shown = (f"{values[0]}–{values[1]}" if f.op == "between"
                     else ", ".join(str(v) for v in values))
            parts.append(ANSWERS[(f"scope_year_{f.op}", lang)].format(year=shown))
        else:
            parts.append(ANSWERS[(f"scope_is_{f.field}", lang)].format(
                name=", ".join(graph.nodes[v].label for v in values)))
    return f" ({'; '.join(parts)})" if parts else ""


def _more_text(lang: str, what: str, shown: int, total: int) -> str:
    """Return the note that a list is cut: which list, how many are shown and how many more."""
    return ANSWERS[("partial_more", lang)].format(what=ANSWERS[(f"list_{what}", lang)],
                                                  shown=shown, total=total, more=total - shown)


def _anchor_of(filters: list[Filter]) -> tuple[str, str] | None:
    """Return the (field, node) a thesis list shows as its evidence edge: a person, else a keyword."""
    for name in ("supervisor", "author", "keyword"):
        for f in filters:
            if f.field == name:
                return name, (f.value if f.op == "eq" else f.value[0])
    return None


ANCHOR_EDGES = {"supervisor": (SUPERVISED_BY, "in"), "author": (AUTHORED, "out"),
                "keyword": (HAS_KEYWORD, "in")}


def _thesis_evidence(graph: Graph, theses: Iterable[str], filters: list[Filter]) -> _Evidence:
    """Return the facts and paths behind a set of theses: the edge to the filter's person or
    keyword, else each thesis's authors."""
    theses = list(theses)
    anchor = _anchor_of(filters)
    if anchor:
        edge_type, direction = ANCHOR_EDGES[anchor[0]]
        node = anchor[1]
        return _Evidence(facts=(_anchor_fact(graph, t, (node, edge_type, direction)) for t in theses),
                         paths=(_path(graph, [node, t], [(edge_type, direction)]) for t in theses))
    def authors() -> Iterator[tuple[str, str]]:
        return ((p, t) for t in theses for p in _neighbours(graph, t, AUTHORED, outgoing=False))
    return _Evidence(facts=(_fact(graph, p, AUTHORED, t) for p, t in authors()),
                     paths=(_path(graph, [p, t], [(AUTHORED, "out")]) for p, t in authors()))


def _by_year(graph: Graph, theses: list[str], limit: int) -> list[str]:
    """Return the first limit theses in (year, id) order without sorting them all."""
    return heapq.nsmallest(limit, theses, key=lambda t: (graph.nodes[t].year or 0, t))


RANKED_EDGES = {"supervisor": (SUPERVISED_BY, True), "author": (AUTHORED, False),
                "keyword": (HAS_KEYWORD, True)}


def _ranking(graph: Graph, ranked: str, filters: list[Filter]) -> tuple[Counter, list[str]]:
    """Return what is ranked -> theses it has among the filtered ones, and the ranked ids, most
    first then by name; kept per loaded graph (at most RANKING_CACHE_SIZE rankings)."""
    key = (ranked, tuple((f.field, f.op, repr(f.value)) for f in filters))
    cached = graph.rankings.get(key)
    if cached is not None:
        return cached
    theses = _theses_where(graph, filters)
    if ranked == "year":
        counts = Counter(graph.nodes[t].year for t in theses)
        order = sorted(counts, key=lambda y: (-counts[y], y))
    else:
        edge, outgoing = RANKED_EDGES[ranked]
        counts = Counter(x for t in theses for x in _neighbours(graph, t, edge, outgoing=outgoing))
        order = sorted(counts, key=lambda x: (-counts[x], graph.nodes[x].label, x))
    if len(graph.rankings) >= RANKING_CACHE_SIZE:
        graph.rankings.pop(next(iter(graph.rankings)))
    graph.rankings[key] = (counts, order)
    return counts, order


def _parse_ranking(ctx: _Parse) -> Intent | None:
    """A ranking: who supervised or wrote the most theses, the commonest keyword, the year with
    the most theses; "top N" keeps the first N (more when the N-th ties)."""
    f = ctx.folded
    ranked = ("keyword" if RE_KEYWORD.search(f) or RE_RANKED_KEYWORD.search(f)
              else "supervisor" if RE_SUPERVISE.search(f)
              else "author" if RE_WROTE.search(f) or re.search(r"\b(autor\w*|authors?)\b", f)
              else "year" if RE_RANKED_YEAR.search(f) else None)
    if ranked is None:
        return None
    m = RE_TOP_N.search(ctx.words.text) or RE_SMALL_NUMBER.search(ctx.words.text)
    top = int(next(g for g in m.groups() if g)) if m else 1
    if m:
        ctx.words.used.update(ctx.words.covered(m.start(), m.end()))
    return _set_intent(ctx, "ranking", ranked, top)


@question_form("ranking", patterns={
    "sk": SET_WORDS_SK["rank"], "en": SET_WORDS_EN["rank"], "pl": SET_WORDS_PL["rank"]},
    parse=_parse_ranking)
def _kind_ranking(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return the top of a ranking (every one tied with the last place included), counted exactly
    over the filtered theses; complete only when every ranked item is shown."""
    filters, entities, failed = _resolved_filters(graph, intent, limits)
    if failed:
        return failed
    lang, ranked = intent.language, intent.ranked
    counts, order = _ranking(graph, ranked, filters)
    top = intent.top or len(order)
    cutoff = counts[order[top - 1]] if len(order) >= top else 0
    winners = list(itertools.takewhile(lambda x: counts[x] >= cutoff, order))   # most first
    shown = winners[:limits.fact_limit]

    def name(x: Any) -> str:
        return str(x) if ranked == "year" else graph.nodes[x].label
    items = "; ".join(f"{name(x)} ({counts[x]})" for x in shown)
    key = "ranking" if intent.top in (None, 1) else "ranking_top"
    answer = ANSWERS[(key, lang)].format(what=ANSWERS[(f"ranked_{ranked}", lang)], top=top,
                                         scope=_scope_text(graph, filters, lang), items=items or "—")
    if intent.top and len(winners) > intent.top:
        answer += ANSWERS[("ranking_tied", lang)].format(n=len(winners), top=intent.top,
                                                        count=cutoff)
    if len(winners) > len(shown):
        answer = answer[:-1] + _more_text(lang, ranked, len(shown), len(winners)) + "."
    aggregation = {"count": len(winners), "complete": len(shown) == len(winners), "year": intent.year,
                   "counted": ranked, "top": intent.top, "ties": len(winners) > (intent.top or 0),
                   "ranking": [{"id": x, "name": name(x), "count": counts[x]} for x in shown],
                   "filters": [x.as_dict() for x in filters]}
    if ranked == "year":
        theses = (t for y in shown for t in _theses_where(graph, filters + [Filter("year", "eq", y)]))
        evidence = _thesis_evidence(graph, theses, filters)
    else:
        edge, outgoing = RANKED_EDGES[ranked]
        scope = set(_theses_where(graph, filters)) if filters else None
        pairs = [(t, x) for x in shown for t in _neighbours(graph, x, edge, outgoing=not outgoing)
                 if scope is None or t in scope]
        evidence = _Evidence(
            facts=(_fact(graph, t, edge, x) if outgoing else _fact(graph, x, edge, t) for t, x in pairs),
            paths=(_path(graph, [x, t], [(edge, "in" if outgoing else "out")]) for t, x in pairs))
    return _finish(graph, intent, limits, evidence, entities, "", aggregation, answer=answer)


def _parse_list(ctx: _Parse) -> Intent | None:
    """A list of theses under any filters; supervised_by or keyword_theses when that is all."""
    f = ctx.folded
    thesis_words = RE_THESIS_WORD.search(f) or any(p.search(f) for p in RE_LEVEL.values())
    if RE_COUNT.search(f) or (ctx.kind in ("count_year", "count_filtered")
                               and (RE_PERSON_WORD.search(f) or RE_WHO.search(f))):
        return None
    topic_title = ctx.kind == "thesis_title" and not ctx.name_keys and RE_TOPIC.search(ctx.words.text)
    if ctx.kind not in ("supervised_by", "keyword_theses", "supervisor_list", "count_year",
                        "count_filtered") and not (ctx.kind is None and thesis_words) \
            and not topic_title:      # "prace na temat X": a topic, not the title of someone's thesis
        return None
    intent = _set_intent(ctx, "thesis_list")
    if intent is None or intent.kind != "thesis_list":
        return intent
    plain_year = all(w.field == "year" and w.op == "eq" for w in intent.where)
    if plain_year and intent.filters == {"supervised_by": ("supervisor",),
                                         "keyword_theses": ("keyword",)}.get(ctx.kind):
        intent.kind = ctx.kind      # as the word rules found it: that form says what is absent
    return intent


@question_form("thesis_list", patterns={
    "sk": SET_WORDS_SK["list"], "en": SET_WORDS_EN["list"], "pl": SET_WORDS_PL["list"]},
    parse=_parse_list, claims=("supervised_by", "keyword_theses", "supervisor_list"))
def _kind_thesis_list(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return the theses every filter keeps, in year order, counted exactly."""
    filters, entities, failed = _resolved_filters(graph, intent, limits)
    if failed:
        return failed
    lang = intent.language
    theses = _theses_where(graph, filters)
    shown = _by_year(graph, theses, limits.fact_limit + 1)
    items = "; ".join(_node_item(graph, t) for t in shown[:limits.fact_limit])
    answer = ANSWERS[("thesis_list", lang)].format(scope=_scope_text(graph, filters, lang),
                                                   count=len(theses), items=items or "—")
    if len(theses) > limits.fact_limit:
        answer = answer[:-1] + _more_text(lang, "theses", limits.fact_limit, len(theses)) + "."
    aggregation = {"count": len(theses), "complete": True, "year": intent.year, "counted": THESIS,
                   "filters": [x.as_dict() for x in filters]}
    return _finish(graph, intent, limits, _thesis_evidence(graph, shown, filters), entities, "",
                   aggregation, answer=answer)


def _parse_count(ctx: _Parse) -> Intent | None:
    """A count of theses (or of their authors) under any filters; count_year when only one year."""
    f = ctx.folded
    if ctx.kind not in ("count_year", "count_filtered") and not (
            RE_COUNT.search(f) and (RE_THESIS_WORD.search(f) or RE_PERSON_WORD.search(f)
                                    or any(p.search(f) for p in RE_LEVEL.values()))):
        return None
    intent = _set_intent(ctx, "count_filtered")
    if intent is not None and not intent.filters and [w.op for w in intent.where] == ["eq"]:
        intent.kind = "count_year"
    return intent


@question_form("count_filtered", patterns={
    "sk": (r"kolko", r"pocet"), "en": (r"how many", r"number of", r"count"),
    "pl": (r"ile", r"liczba")}, parse=_parse_count, claims=("count_year", "count_filtered"))
def _kind_count_filtered(graph: Graph, intent: Intent, limits: GraphLimits) -> GraphResult:
    """Return the exact count of theses (or their authors) under every filter of the question,
    with the edges to its person or keyword (else the authorship edges) as evidence."""
    filters, entities, failed = _resolved_filters(graph, intent, limits)
    if failed:
        return failed
    lang = intent.language
    theses = _theses_where(graph, filters)
    shown = _by_year(graph, theses, limits.fact_limit + 1)
    if intent.subject == PERSON:
        count = len({p for t in theses for p in _neighbours(graph, t, AUTHORED, outgoing=False)})
    else:
        count = len(theses)
    aggregation: dict[str, Any] = {"complete": True, "year": intent.year, "counted": intent.subject,
                                   "filters": [x.as_dict() for x in filters]}
    for f in filters:
        if f.field in ("supervisor", "author"):
            aggregation[f.field] = f.value
        elif f.field == "keyword":
            aggregation["keyword"] = f.value if f.op == "in" else [f.value]
    aggregation["count"] = count
    answer = ANSWERS[("count_filtered", lang)].format(
        what=ANSWERS[(f"counted_{intent.subject}", lang)],
        scope=_scope_text(graph, filters, lang), count=count)
    anchor = _anchor_of(filters)
    if count == 0 and anchor:
        answer = answer[:-1] + ANSWERS[("known", lang)].format(
            items=_summary(graph, anchor[1], lang, limits.fact_limit))
    return _finish(graph, intent, limits, _thesis_evidence(graph, shown, filters), entities, "",
                   aggregation, answer=answer)



def ask(question: str | rc.Question, graph: Graph, limits: GraphLimits | None = None) -> GraphResult:
    """Return the GraphResult for question (text, or a Question made at the caller's edge,
    whose limit, when set, bounds the facts and paths shown); raise InvalidQueryError on an
    empty or over-long question."""
    question = rc.question_make(question)
    limits = limits or GraphLimits()
    if question.limit is not None:
        limits = replace(limits, fact_limit=question.limit, path_limit=question.limit)
    intent, refusal = _parse(question, graph)
    if intent is None:
        lang = question.language_or(DEFAULT_LANGUAGE)
        unsupported = Intent(kind="unsupported", language=lang, keys=())
        if refusal is None:
            result = _no_answer(unsupported, limits, "no_matching_facts",
                                ["the question is not one of the supported graph questions"], [],
                                graph=graph)
        else:
            result = _refusal(graph, unsupported, limits, *refusal)
        result.intent = None
        return result
    return QUESTION_FORMS[intent.kind].answer(graph, intent, limits)


# === 9. Envelope — GraphResult -> retrieval_contract.Envelope ===

def to_envelope(result: GraphResult) -> rc.Envelope:
    """Return the v1 envelope of result; facts point at sources S1.. by document."""
    sources, source_of = [], {}
    for i, node in enumerate(result.documents, start=1):
        sid = f"S{i}"
        source_of[node.node_id] = sid
        sources.append(rc.Source(source_id=sid, document_path=node.document_path,
                                 source_url=node.source_url, title=node.title,
                                 extra={"node_id": node.node_id}))
    documents = [{"source_id": s.source_id, "node_id": s.extra["node_id"],
                  "document_path": s.document_path, "source_url": s.source_url,
                  "title": s.title} for s in sources]
    truncated = bool(result.truncation_reasons)
    complete = result.status in ("ok", "no_answer") and not truncated
    return rc.Envelope(
        status=result.status, reason=result.reason, sources=sources,
        index_version=result.index_version, complete=complete, truncated=truncated,
        truncation_reasons=list(result.truncation_reasons),
        extra={
            "tool": "graph",
            "intent": result.intent,
            "entities": [_with_why_text(e, result.language) for e in result.entities],
            "facts": [_fact_dict(f, source_of) for f in result.facts],
            "paths": [{"nodes": p.nodes, "edges": [{"type": t, "direction": d} for t, d in p.steps],
                       "text": p.text} for p in result.paths],
            "documents": documents,
            "aggregation": result.aggregation,
            "reasons": result.reasons,
            "reasons_text": [_localised(r, result.language) for r in result.reasons],
            "rejected_candidates": [_with_why_text(c, result.language) for c in result.rejected_candidates],
            "answer": result.answer,
            "language": result.language,
            "limits": asdict(result.limits),
        })


def _localised(line: str, lang: str) -> str:
    """Return a diagnostic line (reason, why) in the question's language (NOTES): the whole
    line by its template, else each '; '-separated part; a part no template knows stays."""
    if lang == "en":
        return line
    whole = _note(line, lang)
    return whole if whole is not None else "; ".join(_note(p, lang) or p for p in line.split("; "))


def _note(part: str, lang: str) -> str | None:
    """Return one diagnostic part by its NOTES template in lang, or None when none fits."""
    for pattern, templates in NOTES:
        m = pattern.fullmatch(part)
        if m and lang in templates:
            return templates[lang].format(*(NOTE_WORDS.get((g, lang), g) for g in m.groups()))
    return None


def _with_why_text(record: dict, lang: str) -> dict:
    """Return an entity or candidate record with `why_text`: its `why` in the question's language."""
    return dict(record, why_text=_localised(record["why"], lang)) if record.get("why") else record


def _fact_dict(fact: Fact, source_of: dict[str, str]) -> dict:
    """Return the JSON form of a fact; source_id is null when its page was cut by evidence_limit."""
    return {"subject": fact.subject, "predicate": fact.predicate, "object": fact.obj,
            "text": fact.text, "document_node": fact.document_node,
            "source_id": source_of.get(fact.document_node) if fact.document_node else None}


# === 10. CLI — argparse, readable text, one catch boundary ===



def format_answer_text(env: dict) -> str:
    """Return the readable text of a graph envelope dict, every control and bidi character
    (a name may hold ESC or U+202E) made visible by rc.visible_text; JSON keeps exact text."""
    return rc.visible_text(_answer_text(env))


def _answer_text(env: dict) -> str:
    """Return the raw text of a graph envelope dict: the answer, its facts with their
    [S1] sources, longer paths, the aggregation, candidates or rejected ones with reasons,
    the sources, the limits hit and the status; the one renderer every transport uses."""
    if env["status"] == "error":
        return f"error: {env['reason']}: {env.get('detail', '')}"
    words = TEXT_WORDS.get(env.get("language"), TEXT_WORDS["en"])
    blocks = [env.get("answer", "")]
    blocks.append(_text_list(words["facts"], [
        f"  - {f['text']}" + (f" [{f['source_id']}]" if f.get("source_id") else "")
        for f in env.get("facts", [])]))
    # a one-edge path repeats a fact; longer ones show how the answer was reached
    blocks.append(_text_list(words["paths"], [f"  - {p['text']}" for p in env.get("paths", [])
                                        if len(p.get("edges", [])) > 1]))
    agg = env.get("aggregation")
    if agg:
        blocks.append(f"{words['count']}: {agg['count']} ({words['counted']}: {agg.get('counted')}; "
                      f"{words['complete']}: {str(agg.get('complete')).lower()})")
    if env["status"] == "ambiguous":
        blocks.append(_text_list(words["candidates"], [
            f"  ? {e['name']} ({e['id']}): {e.get('why_text', e['why'])}" for e in env.get("entities", [])]))
    if env["status"] != "ok":
        blocks.append(_text_list(words["not_chosen"], [
            f"  - {c.get('name', c.get('id'))} ({c.get('id')}): {c.get('why_text', c.get('why', ''))}"
            for c in env.get("rejected_candidates", [])]))
        blocks.append(_text_list(words["reasons"], [
            f"  - {r}" for r in env.get("reasons_text", env.get("reasons", []))]))
    blocks.append(_text_list(words["sources"], [
        f"  [{s['source_id']}] {s['document_path']}"
        + (f" — {s['title']}" if s.get("title") else "")
        + (f" <{s['source_url']}>" if s.get("source_url") else "") for s in env.get("sources", [])]))
    if env.get("truncated"):
        blocks.append(words["limits"].format(names=", ".join(env["truncation_reasons"])))
    blocks.append(f"status: {env['status']}" + (f" ({env['reason']})" if env.get("reason") else "")
                  + f"; complete: {str(env['complete']).lower()}; tool: graph")
    return "\n".join(b for b in blocks if b)


def _text_list(heading: str, lines: list[str]) -> str:
    """Return a heading and its lines, or '' when there are none."""
    return "\n".join([heading] + lines) if lines else ""


def _positive_int(text: str) -> int:
    """Return text as an integer >= 1 (argparse type; a bad value is a usage error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _parser() -> argparse.ArgumentParser:
    """Return the CLI's argument parser."""
    p = argparse.ArgumentParser(
        prog="graph_store.py",
        description="Answer a structured question over a JSON knowledge graph (its format: "
                    "reports/how-it-works.md, 'Graph file format'). Understands, in Slovak, English and Polish, with or without "
                    "diacritics: the name of a person's thesis, the year of it, who someone is, the "
                    "supervisor of a person, theses supervised by someone (in a year), their "
                    "co-supervisors, theses with more than one supervisor, the list of supervisors, "
                    "theses with a keyword (in a year), authors of a title, what is known about an "
                    "entity, and counts by year, supervisor, author or keyword. When the asked "
                    "relation is absent the answer says what the graph does know; a misspelt name "
                    "gets 'did you mean', never a guess.",
        epilog='Examples: "Ako sa volá práca Jána Holpa?", "Kto je Peter Novák?", '
               '"Koľko prác viedol Peter Novák v roku 2024?", "Who supervised Eva Šimková?". Counts '
               "are exact (aggregation.complete); the limits cut only the facts and paths shown and "
               "are reported as truncated. Exit codes: 0 ok, no_answer or ambiguous; 1 error; 2 usage.")
    p.add_argument("question", help="the question, in Slovak, English or Polish")
    p.add_argument("--graph", required=True, metavar="FILE", help="the graph JSON file")
    p.add_argument("--limit", type=_positive_int, metavar="N",
                   help="facts and paths shown (sets --fact-limit and --path-limit)")
    p.add_argument("--entity-limit", type=_positive_int, default=DEFAULT_ENTITY_LIMIT, metavar="N",
                   help=f"entities recognised at most (default {DEFAULT_ENTITY_LIMIT})")
    p.add_argument("--evidence-limit", type=_positive_int, default=DEFAULT_EVIDENCE_LIMIT, metavar="N",
                   help=f"source documents listed at most (default {DEFAULT_EVIDENCE_LIMIT})")
    p.add_argument("--fact-limit", type=_positive_int, default=DEFAULT_FACT_LIMIT, metavar="N",
                   help=f"facts shown at most (default {DEFAULT_FACT_LIMIT})")
    p.add_argument("--path-limit", type=_positive_int, default=DEFAULT_PATH_LIMIT, metavar="N",
                   help=f"paths shown at most (default {DEFAULT_PATH_LIMIT})")
    p.add_argument("--max-path-length", type=_positive_int, default=DEFAULT_MAX_PATH_LENGTH, metavar="N",
                   help=f"edges per path for 'what is known about' (default {DEFAULT_MAX_PATH_LENGTH})")
    p.add_argument("--json", action="store_true", help="print the v1 JSON envelope")
    p.add_argument("--debug", action="store_true", help="re-raise unexpected errors")
    return p


def main(argv: list[str] | None = None, git_probe: Callable[[str], Any] | None = None) -> int:
    """Run the CLI; return 0 for ok/no_answer/ambiguous, 1 for an error (2 comes from argparse).
    git_probe: as graph_load's (the script passes docs_qa's; None: no Git part)."""
    args = _parser().parse_args(argv)
    limits_kw = dict(entity_limit=args.entity_limit, evidence_limit=args.evidence_limit,
                     fact_limit=args.fact_limit, path_limit=args.path_limit,
                     max_path_length=args.max_path_length)
    try:
        graph = graph_load(args.graph, git_probe=git_probe)
        question = rc.question_make(args.question, args.limit)   # this CLI's edge: --limit travels with it
        env = to_envelope(ask(question, graph, GraphLimits(**limits_kw)))
    except Exception as exc:  # the one catch boundary of this transport
        envelope = rc.error_boundary(exc, args.debug)
        if isinstance(exc, rc.ContractError):
            print(f"graph_store: {rc.visible_text(exc.message)}", file=sys.stderr)
        else:
            print("graph_store: internal error (run with --debug for the traceback)", file=sys.stderr)
        if args.json:
            _emit(json.dumps(envelope.to_dict(), ensure_ascii=False, indent=2))
        return 1
    text = (json.dumps(env.to_dict(), ensure_ascii=False, indent=2) if args.json
            else format_answer_text(env.to_dict()))
    return 0 if _emit(text) else 1


def _emit(text: str) -> bool:
    """Print text to stdout; return False when the reader went away (e.g. `| head`)."""
    try:
        print(text, flush=True)
        return True
    except BrokenPipeError:
        # Point stdout at devnull so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return False


# === 11. Assets — the answer sentences, in each language ===

# Answer sentences, one table: (key, language) -> format string.
ANSWERS: dict[tuple[str, str], str] = {
    ("count_persons", "sk"): "Počet osôb s prácou v roku {year}: {count}.",
    ("count_persons", "en"): "Number of persons with a thesis in {year}: {count}.",
    ("count_persons", "pl"): "Liczba osób z pracą w roku {year}: {count}.",
    ("count_theses", "sk"): "Počet prác z roku {year}: {count}.",
    ("count_theses", "en"): "Number of theses from {year}: {count}.",
    ("count_theses", "pl"): "Liczba prac z roku {year}: {count}.",
    ("thesis_title", "sk"): "Práca osoby {name}: {items}.",
    ("thesis_title", "en"): "Thesis of {name}: {items}.",
    ("thesis_title", "pl"): "Praca osoby {name}: {items}.",
    ("supervisor_of", "sk"): "Vedúci práce osoby {name}: {items}.",
    ("supervisor_of", "en"): "Supervisor of {name}: {items}.",
    ("supervisor_of", "pl"): "Promotor osoby {name}: {items}.",
    ("supervised_by", "sk"): "Práce vedené osobou {name}: {items}.",
    ("supervised_by", "en"): "Theses supervised by {name}: {items}.",
    ("supervised_by", "pl"): "Prace prowadzone przez {name}: {items}.",
    ("keyword_theses", "sk"): "Práce s kľúčovým slovom {name}: {items}.",
    ("keyword_theses", "en"): "Theses with the keyword {name}: {items}.",
    ("keyword_theses", "pl"): "Prace ze słowem kluczowym {name}: {items}.",
    ("author_of_title", "sk"): "Autori práce {name}: {items}.",
    ("author_of_title", "en"): "Authors of the thesis {name}: {items}.",
    ("author_of_title", "pl"): "Autorzy pracy {name}: {items}.",
    ("about", "sk"): "Známe fakty o {name}: {items}.",
    ("about", "en"): "Known facts about {name}: {items}.",
    ("about", "pl"): "Znane fakty o {name}: {items}.",
    ("partial_paths", "sk"): " (zoznam ciest: zobrazených prvých {shown}, ďalšie existujú)",
    ("partial_paths", "en"): " (the list of paths: the first {shown} shown, more exist)",
    ("partial_paths", "pl"): " (lista ścieżek: pokazano pierwsze {shown}, są kolejne)",
    ("ambiguous_person", "sk"): "Otázka nie je jednoznačná, zodpovedá jej viac osôb: {items}.",
    ("ambiguous_person", "en"): "The question is ambiguous; it fits several persons: {items}.",
    ("ambiguous_person", "pl"): "Pytanie jest niejednoznaczne, pasuje do kilku osób: {items}.",
    ("ambiguous_title", "sk"): "Otázka nie je jednoznačná, zodpovedá jej viac prác: {items}.",
    ("ambiguous_title", "en"): "The question is ambiguous; it fits several theses: {items}.",
    ("ambiguous_title", "pl"): "Pytanie jest niejednoznaczne, pasuje do kilku prac: {items}.",
    ("ambiguous_keyword", "sk"): "Otázka nie je jednoznačná, zodpovedá jej viac kľúčových slov: {items}.",
    ("ambiguous_keyword", "en"): "The question is ambiguous; it fits several keywords: {items}.",
    ("ambiguous_keyword", "pl"): "Pytanie jest niejednoznaczne, pasuje do kilku słów kluczowych: {items}.",
    ("unknown_person", "sk"): "Osobu z otázky som v grafe nenašiel.",
    ("unknown_person", "en"): "I did not find the person from the question in the graph.",
    ("unknown_person", "pl"): "Nie znalazłem tej osoby w grafie.",
    ("unknown_keyword", "sk"): "Kľúčové slovo z otázky som v grafe nenašiel.",
    ("unknown_keyword", "en"): "I did not find the keyword from the question in the graph.",
    ("unknown_keyword", "pl"): "Nie znalazłem tego słowa kluczowego w grafie.",
    ("unknown_title", "sk"): "Prácu s takým názvom som v grafe nenašiel.",
    ("unknown_title", "en"): "I did not find a thesis with that title in the graph.",
    ("unknown_title", "pl"): "Nie znalazłem pracy o takim tytule w grafie.",
    ("no_matching_facts", "sk"): "V grafe som k otázke nenašiel žiadne fakty.",
    ("no_matching_facts", "en"): "I found no facts in the graph for this question.",
    ("no_matching_facts", "pl"): "Nie znalazłem w grafie faktów dla tego pytania.",
    ("thesis_year", "sk"): "Rok práce osoby {name}: {items}.",
    ("thesis_year", "en"): "Year of the thesis of {name}: {items}.",
    ("thesis_year", "pl"): "Rok pracy osoby {name}: {items}.",
    ("who_is", "sk"): "{name} — v grafe: {items}.",
    ("who_is", "en"): "{name} — in the graph: {items}.",
    ("who_is", "pl"): "{name} — w grafie: {items}.",
    ("co_supervisors", "sk"): "Spoluvedúci osoby {name}: {items}.",
    ("co_supervisors", "en"): "Co-supervisors of {name}: {items}.",
    ("co_supervisors", "pl"): "Współpromotorzy osoby {name}: {items}.",
    ("co_supervised", "sk"): "Práce s viacerými vedúcimi ({count}): {items}.",
    ("co_supervised", "en"): "Theses with more than one supervisor ({count}): {items}.",
    ("co_supervised", "pl"): "Prace z kilkoma promotorami ({count}): {items}.",
    ("supervisor_list", "sk"): "Vedúci prác{scope} ({count}): {items}.",
    ("supervisor_list", "en"): "Supervisors of theses{scope} ({count}): {items}.",
    ("supervisor_list", "pl"): "Promotorzy prac{scope} ({count}): {items}.",
    ("count_filtered", "sk"): "Počet {what}{scope}: {count}.",
    ("count_filtered", "en"): "Number of {what}{scope}: {count}.",
    ("count_filtered", "pl"): "Liczba {what}{scope}: {count}.",
    ("counted_thesis", "sk"): "prác", ("counted_thesis", "en"): "theses",
    ("counted_thesis", "pl"): "prac",
    ("counted_person", "sk"): "osôb", ("counted_person", "en"): "persons",
    ("counted_person", "pl"): "osób",
    ("scope_supervisor", "sk"): " vedených osobou {name}",
    ("scope_supervisor", "en"): " supervised by {name}",
    ("scope_supervisor", "pl"): " prowadzonych przez {name}",
    ("scope_author", "sk"): " osoby {name}", ("scope_author", "en"): " by {name}",
    ("scope_author", "pl"): " osoby {name}",
    ("scope_keyword", "sk"): " s kľúčovým slovom {name}",
    ("scope_keyword", "en"): " with the keyword {name}",
    ("scope_keyword", "pl"): " ze słowem kluczowym {name}",
    ("scope_year", "sk"): " z roku {year}", ("scope_year", "en"): " from {year}",
    ("scope_year", "pl"): " z roku {year}",
    # What is absent, then what the graph does know about the entity (see _absent).
    ("absent_authored", "sk"): "Osoba {name} nemá v grafe žiadnu vlastnú prácu",
    ("absent_authored", "en"): "{name} wrote no thesis in the graph",
    ("absent_authored", "pl"): "Osoba {name} nie ma w grafie własnej pracy",
    ("absent_supervisor", "sk"): "Žiadna práca osoby {name} nemá v grafe vedúceho",
    ("absent_supervisor", "en"): "No thesis of {name} has a supervisor in the graph",
    ("absent_supervisor", "pl"): "Żadna praca osoby {name} nie ma w grafie promotora",
    ("absent_supervised", "sk"): "Osoba {name} neviedla v grafe žiadnu prácu",
    ("absent_supervised", "en"): "{name} supervised no thesis in the graph",
    ("absent_supervised", "pl"): "Osoba {name} nie prowadziła w grafie żadnej pracy",
    ("absent_supervised_year", "sk"): "Osoba {name} neviedla v grafe žiadnu prácu z roku {year}",
    ("absent_supervised_year", "en"): "{name} supervised no thesis from {year} in the graph",
    ("absent_supervised_year", "pl"): "Osoba {name} nie prowadziła w grafie żadnej pracy z roku {year}",
    ("absent_co_supervised", "sk"): "Osoba {name} neviedla v grafe žiadnu prácu s ďalším vedúcim",
    ("absent_co_supervised", "en"): "{name} co-supervised no thesis in the graph",
    ("absent_co_supervised", "pl"): "Osoba {name} nie prowadziła w grafie pracy z innym promotorem",
    ("absent_keyword", "sk"): "Žiadna práca v grafe nemá kľúčové slovo {name}",
    ("absent_keyword", "en"): "No thesis in the graph has the keyword {name}",
    ("absent_keyword", "pl"): "Żadna praca w grafie nie ma słowa kluczowego {name}",
    ("absent_any", "sk"): "{name} je v grafe, ale nespája ho s ničím žiadna hrana.",
    ("absent_any", "en"): "{name} is in the graph, but no edge links it to anything.",
    ("absent_any", "pl"): "{name} jest w grafie, ale żadna krawędź nie łączy go z niczym.",
    ("absent_keyword_year", "sk"): "Žiadna práca s kľúčovým slovom {name} nie je z roku {year}",
    ("absent_keyword_year", "en"): "No thesis with the keyword {name} is from {year}",
    ("absent_keyword_year", "pl"): "Żadna praca ze słowem kluczowym {name} nie jest z roku {year}",
    ("absent_authors", "sk"): "Práca {name} nemá v grafe autora",
    ("absent_authors", "en"): "The thesis {name} has no author in the graph",
    ("absent_authors", "pl"): "Praca {name} nie ma w grafie autora",
    ("known", "sk"): "; v grafe je: {items}.", ("known", "en"): "; the graph has: {items}.",
    ("known", "pl"): "; w grafie jest: {items}.",
    ("nothing_known", "sk"): "; iné fakty o nej graf nemá.",
    ("nothing_known", "en"): "; the graph has no other facts about it.",
    ("nothing_known", "pl"): "; graf nie ma o niej innych faktów.",
    ("did_you_mean", "sk"): " Mysleli ste {items}?", ("did_you_mean", "en"): " Did you mean {items}?",
    ("did_you_mean", "pl"): " Czy chodziło o {items}?",
    ("or", "sk"): " alebo ", ("or", "en"): " or ", ("or", "pl"): " lub ",
    # A fact as a sentence (see _fact_text): the thesis, then the other end after a colon.
    ("fact_authored", "sk"): "Práca {thesis} — autor: {other}.",
    ("fact_authored", "en"): "Thesis {thesis} — author: {other}.",
    ("fact_authored", "pl"): "Praca {thesis} — autor: {other}.",
    ("fact_supervised_by", "sk"): "Práca {thesis} — vedúci: {other}.",
    ("fact_supervised_by", "en"): "Thesis {thesis} — supervisor: {other}.",
    ("fact_supervised_by", "pl"): "Praca {thesis} — promotor: {other}.",
    ("fact_has_keyword", "sk"): "Práca {thesis} — kľúčové slovo: {other}.",
    ("fact_has_keyword", "en"): "Thesis {thesis} — keyword: {other}.",
    ("fact_has_keyword", "pl"): "Praca {thesis} — słowo kluczowe: {other}.",
    # Counts, lists and rankings under filters (see _scope_text): names stay in the form
    # the graph gives them, after a colon, so no case ending is ever guessed.
    ("level_bachelor", "sk"): "bakalárska práca", ("level_bachelor", "en"): "bachelor's thesis",
    ("level_bachelor", "pl"): "praca licencjacka",
    ("level_master", "sk"): "diplomová práca", ("level_master", "en"): "master's thesis",
    ("level_master", "pl"): "praca magisterska",
    ("level_doctoral", "sk"): "dizertačná práca", ("level_doctoral", "en"): "doctoral thesis",
    ("level_doctoral", "pl"): "praca doktorska",
    ("scope_year_eq", "sk"): "rok {year}", ("scope_year_eq", "en"): "year {year}",
    ("scope_year_eq", "pl"): "rok {year}",
    ("scope_year_in", "sk"): "roky {year}", ("scope_year_in", "en"): "years {year}",
    ("scope_year_in", "pl"): "lata {year}",
    ("scope_year_between", "sk"): "roky {year}", ("scope_year_between", "en"): "years {year}",
    ("scope_year_between", "pl"): "lata {year}",
    ("scope_year_gte", "sk"): "od roku {year}", ("scope_year_gte", "en"): "from {year} on",
    ("scope_year_gte", "pl"): "od roku {year}",
    ("scope_year_lte", "sk"): "do roku {year}", ("scope_year_lte", "en"): "up to {year}",
    ("scope_year_lte", "pl"): "do roku {year}",
    ("scope_is_supervisor", "sk"): "vedúci: {name}", ("scope_is_supervisor", "en"): "supervisor: {name}",
    ("scope_is_supervisor", "pl"): "promotor: {name}",
    ("scope_is_author", "sk"): "autor: {name}", ("scope_is_author", "en"): "author: {name}",
    ("scope_is_author", "pl"): "autor: {name}",
    ("scope_is_keyword", "sk"): "kľúčové slovo: {name}", ("scope_is_keyword", "en"): "keyword: {name}",
    ("scope_is_keyword", "pl"): "słowo kluczowe: {name}",
    ("thesis_list", "sk"): "Práce{scope}, spolu {count}: {items}.",
    ("thesis_list", "en"): "Theses{scope}, {count} in all: {items}.",
    ("thesis_list", "pl"): "Prace{scope}, razem {count}: {items}.",
    ("ranking", "sk"): "Najviac prác{scope} — {what}: {items}.",
    ("ranking", "en"): "Most theses{scope} — {what}: {items}.",
    ("ranking", "pl"): "Najwięcej prac{scope} — {what}: {items}.",
    ("ranking_top", "sk"): "Prvých {top} podľa počtu prác{scope} — {what}: {items}.",
    ("ranking_top", "en"): "Top {top} by number of theses{scope} — {what}: {items}.",
    ("ranking_top", "pl"): "Pierwszych {top} według liczby prac{scope} — {what}: {items}.",
    ("ranking_tied", "sk"): " Miesto {top} zdieľajú rovnakým počtom ({count}) viacerí, preto je ich {n}.",
    ("ranking_tied", "en"): " Several share place {top} with the same count ({count}), so {n} are listed.",
    ("ranking_tied", "pl"): " Miejsce {top} dzieli kilku z tą samą liczbą ({count}), więc jest ich {n}.",
    ("ranked_supervisor", "sk"): "vedúci", ("ranked_supervisor", "en"): "supervisor",
    ("ranked_supervisor", "pl"): "promotor",
    ("ranked_author", "sk"): "autor", ("ranked_author", "en"): "author",
    ("ranked_author", "pl"): "autor",
    ("ranked_keyword", "sk"): "kľúčové slovo", ("ranked_keyword", "en"): "keyword",
    ("ranked_keyword", "pl"): "słowo kluczowe",
    ("ranked_year", "sk"): "rok", ("ranked_year", "en"): "year", ("ranked_year", "pl"): "rok",
    ("list_theses", "sk"): "zoznam prác", ("list_theses", "en"): "the list of theses",
    ("list_theses", "pl"): "lista prac",
    ("list_supervisor", "sk"): "zoznam vedúcich", ("list_supervisor", "en"): "the list of supervisors",
    ("list_supervisor", "pl"): "lista promotorów",
    ("list_author", "sk"): "zoznam autorov", ("list_author", "en"): "the list of authors",
    ("list_author", "pl"): "lista autorów",
    ("list_keyword", "sk"): "zoznam kľúčových slov", ("list_keyword", "en"): "the list of keywords",
    ("list_keyword", "pl"): "lista słów kluczowych",
    ("list_year", "sk"): "zoznam rokov", ("list_year", "en"): "the list of years",
    ("list_year", "pl"): "lista lat",
    ("list_facts", "sk"): "zoznam faktov", ("list_facts", "en"): "the list of facts",
    ("list_facts", "pl"): "lista faktów",
    ("partial_more", "sk"): " ({what}: zobrazených {shown} z {total}, ďalších {more} nie je uvedených)",
    ("partial_more", "en"): " ({what}: {shown} of {total} shown, {more} more not listed)",
    ("partial_more", "pl"): " ({what}: pokazano {shown} z {total}, kolejnych {more} nie wymieniono)",
    # Questions the graph cannot answer exactly: a relation it lacks, words it cannot use.
    ("unsupported_relation", "sk"): "Graf neobsahuje vzťah „{relation}“; obsahuje len: {relations}.",
    ("unsupported_relation", "en"): "The graph has no “{relation}” relation; it has only: {relations}.",
    ("unsupported_relation", "pl"): "Graf nie zawiera relacji „{relation}”; zawiera tylko: {relations}.",
    ("unsupported_question", "sk"): "Na túto otázku graf presne neodpovie: slová {words} "
                                    "nezodpovedajú ničomu, čo graf obsahuje.",
    ("unsupported_question", "en"): "The graph cannot answer this question exactly: the words "
                                    "{words} match nothing it holds.",
    ("unsupported_question", "pl"): "Graf nie odpowie dokładnie na to pytanie: słowa {words} "
                                    "nie pasują do niczego, co zawiera.",
    ("relation_opponent", "sk"): "oponent", ("relation_opponent", "en"): "opponent or reviewer",
    ("relation_opponent", "pl"): "recenzent",
    ("relation_grade", "sk"): "hodnotenie", ("relation_grade", "en"): "grade",
    ("relation_grade", "pl"): "ocena",
    ("relation_committee", "sk"): "komisia", ("relation_committee", "en"): "committee",
    ("relation_committee", "pl"): "komisja",
    ("relation_email", "sk"): "e-mail alebo kontakt", ("relation_email", "en"): "e-mail or contact",
    ("relation_email", "pl"): "e-mail lub kontakt",
    ("relation_authored", "sk"): "autor práce", ("relation_authored", "en"): "author of a thesis",
    ("relation_authored", "pl"): "autor pracy",
    ("relation_supervised_by", "sk"): "vedúci práce", ("relation_supervised_by", "en"): "supervisor",
    ("relation_supervised_by", "pl"): "promotor",
    ("relation_has_keyword", "sk"): "kľúčové slovo", ("relation_has_keyword", "en"): "keyword",
    ("relation_has_keyword", "pl"): "słowo kluczowe",
    ("relation_year", "sk"): "rok práce", ("relation_year", "en"): "year of a thesis",
    ("relation_year", "pl"): "rok pracy",
    ("relation_kind", "sk"): "druh práce", ("relation_kind", "en"): "kind of thesis",
    ("relation_kind", "pl"): "rodzaj pracy",
}


# --- 11a. Assets — relation and step names, the diagnostic lines and the text headings,
# in each language

# How a group of a node's edges is named in a summary, by (edge type, direction, language).
RELATIONS: dict[tuple[str, str, str], str] = {
    (AUTHORED, "out", "sk"): "napísané práce", (AUTHORED, "out", "en"): "theses written",
    (AUTHORED, "out", "pl"): "napisane prace",
    (SUPERVISED_BY, "in", "sk"): "vedené práce", (SUPERVISED_BY, "in", "en"): "theses supervised",
    (SUPERVISED_BY, "in", "pl"): "prowadzone prace",
    (AUTHORED, "in", "sk"): "autori", (AUTHORED, "in", "en"): "authors",
    (AUTHORED, "in", "pl"): "autorzy",
    (SUPERVISED_BY, "out", "sk"): "vedúci", (SUPERVISED_BY, "out", "en"): "supervisors",
    (SUPERVISED_BY, "out", "pl"): "promotorzy",
    (HAS_KEYWORD, "out", "sk"): "kľúčové slová", (HAS_KEYWORD, "out", "en"): "keywords",
    (HAS_KEYWORD, "out", "pl"): "słowa kluczowe",
    (HAS_KEYWORD, "in", "sk"): "práce s týmto kľúčovým slovom",
    (HAS_KEYWORD, "in", "en"): "theses with this keyword",
    (HAS_KEYWORD, "in", "pl"): "prace z tym słowem kluczowym",
}
# One step of a path as it is read, by (edge type, direction, language) (see _path_text).
STEPS: dict[tuple[str, str, str], str] = {
    (AUTHORED, "out", "sk"): "práca", (AUTHORED, "out", "en"): "thesis", (AUTHORED, "out", "pl"): "praca",
    (AUTHORED, "in", "sk"): "autor", (AUTHORED, "in", "en"): "author", (AUTHORED, "in", "pl"): "autor",
    (SUPERVISED_BY, "out", "sk"): "vedúci", (SUPERVISED_BY, "out", "en"): "supervisor",
    (SUPERVISED_BY, "out", "pl"): "promotor",
    (SUPERVISED_BY, "in", "sk"): "vedená práca", (SUPERVISED_BY, "in", "en"): "supervised thesis",
    (SUPERVISED_BY, "in", "pl"): "prowadzona praca",
    (HAS_KEYWORD, "out", "sk"): "kľúčové slovo", (HAS_KEYWORD, "out", "en"): "keyword",
    (HAS_KEYWORD, "out", "pl"): "słowo kluczowe",
    (HAS_KEYWORD, "in", "sk"): "práca", (HAS_KEYWORD, "in", "en"): "thesis",
    (HAS_KEYWORD, "in", "pl"): "praca",
}
# The diagnostic lines of an answer (its reasons, why a candidate was considered or rejected),
# written in English in the JSON's `reasons` and `why`, and in the question's language in
# `reasons_text` and `why_text`: (pattern over the English line, {language: its template});
# {0}, {1}... are the pattern's groups, a role word among them translated by NOTE_WORDS.
NOTES: tuple[tuple[re.Pattern, dict[str, str]], ...] = tuple((re.compile(p), t) for p, t in (
    (r"similar spelling", {"sk": "podobný zápis", "pl": "podobna pisownia"}),
    (r"(\d+) persons fit the name in the question",
     {"sk": "menu v otázke zodpovedá viac osôb ({0})", "pl": "do imienia w pytaniu pasuje kilka osób ({0})"}),
    (r"(\d+) theses fit the title in the question equally well",
     {"sk": "názvu v otázke zodpovedá rovnako dobre viac prác ({0})",
      "pl": "do tytułu w pytaniu pasuje równie dobrze kilka prac ({0})"}),
    (r"(\d+) keywords fit the same words of the question",
     {"sk": "tým istým slovám otázky zodpovedá viac kľúčových slov ({0})",
      "pl": "do tych samych słów pytania pasuje kilka słów kluczowych ({0})"}),
    (r"only some words of the keyword are in the question",
     {"sk": "v otázke je len časť slov kľúčového slova", "pl": "w pytaniu jest tylko część słów słowa kluczowego"}),
    (r"a longer keyword matches", {"sk": "zodpovedá dlhšie kľúčové slovo", "pl": "pasuje dłuższe słowo kluczowe"}),
    (r"keyword matches", {"sk": "kľúčové slovo zodpovedá", "pl": "słowo kluczowe pasuje"}),
    (r"the same words of the question fit another keyword",
     {"sk": "tie isté slová otázky zodpovedajú inému kľúčovému slovu",
      "pl": "te same słowa pytania pasują do innego słowa kluczowego"}),
    (r"title matches: (\d+) of its (\d+) words are in the question",
     {"sk": "názov zodpovedá: v otázke je {0} z jeho {1} slov", "pl": "tytuł pasuje: w pytaniu jest {0} z jego {1} słów"}),
    (r"too few title words are in the question",
     {"sk": "v otázke je príliš málo slov názvu", "pl": "w pytaniu jest za mało słów tytułu"}),
    (r"another title fits more words of the question",
     {"sk": "iný názov zodpovedá viacerým slovám otázky", "pl": "inny tytuł pasuje do większej liczby słów pytania"}),
    (r"(first name|surname) '(.+)' shares the stem '(.+)'",
     {"sk": "{0} „{1}“ má rovnaký kmeň „{2}“", "pl": "{0} „{1}” ma ten sam rdzeń „{2}”"}),
    (r"an alias word matches", {"sk": "zodpovedá slovo z aliasu", "pl": "pasuje słowo z aliasu"}),
    (r"'(.+)' is a form of another first name than '(.+)'",
     {"sk": "„{0}“ je tvar iného krstného mena než „{1}“", "pl": "„{0}” to forma innego imienia niż „{1}”"}),
    (r"'(.+)' is the other gender's form of the surname '(.+)': the question names someone else",
     {"sk": "„{0}“ je tvar priezviska „{1}“ pre iné pohlavie: otázka menuje niekoho iného",
      "pl": "„{0}” to forma nazwiska „{1}” dla innej płci: pytanie wymienia kogoś innego"}),
    (r"full name matches", {"sk": "zodpovedá celé meno", "pl": "pasuje całe imię i nazwisko"}),
    (r"full name matches only after folding diacritics or endings \((.+)\)",
     {"sk": "celé meno zodpovedá až po odstránení diakritiky alebo koncoviek ({0})",
      "pl": "całe imię i nazwisko pasuje dopiero po pominięciu znaków diakrytycznych lub końcówek ({0})"}),
    (r"fewer of the question's words are exact forms of this name \(diacritics included\) than of the "
     r"chosen person's",
     {"sk": "menej slov otázky je presným tvarom tohto mena (s diakritikou) než mena vybranej osoby",
      "pl": "mniej słów pytania to dokładne formy tego imienia (ze znakami diakrytycznymi) niż imienia wybranej osoby"}),
    (r"only part of the name matches; a full-name match exists",
     {"sk": "zodpovedá len časť mena; existuje zhoda celého mena",
      "pl": "pasuje tylko część imienia; istnieje dopasowanie całego imienia i nazwiska"}),
    (r"the question names a word this person's name lacks",
     {"sk": "otázka obsahuje slovo, ktoré meno tejto osoby nemá",
      "pl": "pytanie zawiera słowo, którego nie ma w imieniu tej osoby"}),
    (r"fewer name words match than the best candidate",
     {"sk": "zodpovedá menej slov mena než pri najlepšom kandidátovi",
      "pl": "pasuje mniej słów imienia niż u najlepszego kandydata"}),
    (r"(person|keyword|entity|title) named", {"sk": "{0} z otázky", "pl": "{0} z pytania"}),
    (r"the entity was found but no fact of the asked kind links it",
     {"sk": "entita je v grafe, ale nespája ju žiadny fakt požadovaného druhu",
      "pl": "encja jest w grafie, ale nie łączy jej żaden fakt pytanego rodzaju"}),
    (r"names of similar spelling are offered, never chosen: (.+)",
     {"sk": "mená podobného zápisu sa ponúkajú, nikdy sa nevyberajú: {0}",
      "pl": "nazwy o podobnej pisowni są proponowane, nigdy wybierane: {0}"}),
    (r"no person's name fits the words of the question",
     {"sk": "slovám otázky nezodpovedá meno žiadnej osoby", "pl": "do słów pytania nie pasuje imię żadnej osoby"}),
    (r"no keyword of the graph is fully contained in the question",
     {"sk": "žiadne kľúčové slovo grafu nie je celé v otázke",
      "pl": "żadne słowo kluczowe grafu nie występuje w pytaniu w całości"}),
    (r"no thesis title has (\d+)% of its words in the question",
     {"sk": "žiadny názov práce nemá v otázke {0} % svojich slov",
      "pl": "żaden tytuł pracy nie ma w pytaniu {0}% swoich słów"}),
    (r"no entity of the graph is named in the question",
     {"sk": "otázka nemenuje žiadnu entitu grafu", "pl": "pytanie nie wymienia żadnej encji grafu"}),
    (r"(\d+) further rejected candidates are not listed \(entity_limit\)",
     {"sk": "ďalší odmietnutí kandidáti ({0}) nie sú uvedení (entity_limit)",
      "pl": "kolejnych odrzuconych kandydatów ({0}) nie wymieniono (entity_limit)"}),
    (r"no thesis in the graph has the year (\d+)",
     {"sk": "žiadna práca v grafe nie je z roku {0}", "pl": "żadna praca w grafie nie jest z roku {0}"}),
    (r"the question is not one of the supported graph questions",
     {"sk": "otázka nepatrí medzi otázky, na ktoré graf odpovedá",
      "pl": "pytanie nie należy do pytań, na które odpowiada graf"}),
    (r"the graph has no '(.+)' relation; it has: (.+)",
     {"sk": "graf nemá vzťah „{0}“; má: {1}", "pl": "graf nie ma relacji „{0}”; ma: {1}"}),
    (r"words of the question that no filter, entity or question form uses: (.+)",
     {"sk": "slová otázky, ktoré nepoužije žiadny filter, entita ani tvar otázky: {0}",
      "pl": "słowa pytania, których nie używa żaden filtr, encja ani forma pytania: {0}"}),
))
NOTE_WORDS = {("first name", "sk"): "krstné meno", ("surname", "sk"): "priezvisko",
              ("first name", "pl"): "imię", ("surname", "pl"): "nazwisko",
              ("person", "sk"): "osoba", ("keyword", "sk"): "kľúčové slovo", ("entity", "sk"): "entita",
              ("title", "sk"): "názov", ("person", "pl"): "osoba", ("keyword", "pl"): "słowo kluczowe",
              ("entity", "pl"): "encja", ("title", "pl"): "tytuł"}
# Headings of the text form, by language (the JSON keeps the data; see _answer_text).
TEXT_WORDS: dict[str, dict[str, str]] = {
    "en": {"facts": "Facts:", "paths": "Paths:", "count": "Count", "counted": "counted",
           "complete": "complete", "candidates": "Candidates:", "not_chosen": "Not chosen:",
           "reasons": "Reasons:", "sources": "Sources:",
           "limits": "Limits hit: {names} (more facts and paths exist than are shown; "
                     "counts in the aggregation are exact)"},
    "sk": {"facts": "Fakty:", "paths": "Cesty:", "count": "Počet", "counted": "počítané",
           "complete": "úplné", "candidates": "Kandidáti:", "not_chosen": "Nevybraté:",
           "reasons": "Dôvody:", "sources": "Zdroje:",
           "limits": "Dosiahnuté limity: {names} (faktov a ciest je viac, než sa zobrazuje; "
                     "počty v agregácii sú presné)"},
    "pl": {"facts": "Fakty:", "paths": "Ścieżki:", "count": "Liczba", "counted": "liczone",
           "complete": "pełne", "candidates": "Kandydaci:", "not_chosen": "Niewybrane:",
           "reasons": "Powody:", "sources": "Źródła:",
           "limits": "Osiągnięte limity: {names} (faktów i ścieżek jest więcej, niż pokazano; "
                     "liczby w agregacji są dokładne)"},
}


if __name__ == "__main__":
    # the script's edge, not the library's: the Git probe (I/O) for index_version is docs_qa's,
    # and this module (imported by docs_qa) never imports it
    import docs_qa
    sys.exit(main(git_probe=docs_qa.git_probe_file))
