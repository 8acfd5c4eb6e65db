"""retrieval_contract — the v1 JSON envelope shared by RAG, search and GraphRAG.

Every docs-qa answer, whatever tool produced it and whatever transport carries it
(CLI --json, HTTP, MCP), is one JSON object with the common fields below plus the
tool's own fields. This module owns those definitions, and the text functions both tools
read questions and documents with; it does no I/O and imports neither docs_qa nor graph_store.

Public API
    STATUSES, REASONS        -- the allowed statuses and reason codes (reason -> HTTP status)
    Source                   -- one cited document: source_id S1.., path, url, title (+ tool fields)
    Envelope                 -- the response: common fields + tool-specific `extra`
    ContractError            -- root of the typed exceptions; each carries reason + http_status
      InvalidQueryError (400), UnauthorizedError (401), ForbiddenHostError (403),
      NotFoundError (404), MethodNotAllowedError (405), InvalidRequestError (422),
      RetrievalUnavailableError (503), InternalError (500)
    error_result(exc)        -- the one place any exception becomes an error envelope
    OPTIONAL_FIELDS          -- the fields v1 has grown by: carried only when the tool has the value
    envelope_schema(extra, source_extra, optional) -- JSON Schema of an envelope (common fields +
                                given extras + the named OPTIONAL_FIELDS, which are not required)
    error_schema()           -- JSON Schema of the error envelope
    source_schema(extra)     -- JSON Schema of a source
    schema_errors(value, schema) -- a small JSON Schema checker (the subset used here)
    index_version_docs(generation, git_rev, is_dirty)  -- the RAG index_version spelling
    index_version_graph(label, digest, git_rev, is_dirty) -- the graph index_version spelling
    visible_text(text)       -- text safe for a terminal: control and bidi characters shown as escapes
    error_boundary(exc, debug, log) -- the one boundary every transport's catch goes through
    Text (pure; RAG and the graph share it, so neither imports the other for it):
    LANGUAGES                -- one entry per language (en, pl, sk): stop words, stemmer, sentence
                                abbreviations, refusal and caveat texts, the graph's question words
    text_fold, text_folded_words, text_words -- NFKC, casefold, diacritics off; the words of a text
    text_sentences(text)     -- the one sentence splitter
    text_detect_language(text) -- 'pl', 'sk' or 'en', with or without diacritics
    text_stem_english / text_stem_polish / text_stem_slovak / text_stem -- the stemmers
    Tokenizer, text_tokens   -- index terms of a text, stemmed by its own language
    text_query_words / text_query_counts / text_query_terms -- a question's words and terms
    text_name_words, text_name_stem, text_drop_fleeting_e / text_insert_fleeting_e -- the words a
                                question writes as names, a name's stem (Holpovej, Petra): one rule
                                for retrieval and the graph
    QueryRules, QUERY_RULES  -- how a question's words become terms (a report passes others)
    Question, question_make  -- a question checked once at the edge: text, language, terms, limit

index_version (one spelling for RAG and the graph; `+` joins parts, `-` joins a part's words)
    index_version = generation [ "+git-" rev12 [ "-dirty" ] ]
    generation    = "docs-" hex12                      RAG: hash of every indexed file's path and content
                  | "graph-" label "+sha256-" hex12    graph: the file's `version` label and content hash
    rev12 is the first 12 hex digits of the commit HEAD names in the Git checkout holding the
    docs folder (or the graph file), read from .git's files; git itself is never run. `-dirty`
    means a document under that folder (or the graph file) differs from the Git index, is
    not in it, or is staged against HEAD (docs_qa.git_is_dirty says exactly what is
    compared). label is the graph's `version` with every character outside [A-Za-z0-9._-]
    made `_` (`unversioned` when absent).

Invariants
    * `index_version` is None after an error; `complete` is False for errors and ambiguity.
    * An error envelope carries a fixed, safe `detail` and the names (never the values)
      of offending fields; never exception text, secrets or internal paths.
    * v1 grows only by OPTIONAL_FIELDS: absent (never null) when the tool has no value, and
      never on an error envelope; the fields above keep their meaning.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field, fields, replace
from http import HTTPStatus
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, NamedTuple

__all__ = [
    "CONTRACT_VERSION", "STATUSES", "REASONS", "ERROR_DETAILS", "CONFIDENCE_LEVELS", "FRESHNESS_MODES",
    "OPTIONAL_FIELDS",
    "Source", "Envelope",
    "ContractError", "InvalidQueryError", "UnauthorizedError", "ForbiddenHostError", "NotFoundError",
    "MethodNotAllowedError", "InvalidRequestError", "RetrievalUnavailableError",
    "InternalError",
    "error_result", "error_boundary", "envelope_schema", "error_schema", "source_schema", "schema_errors",
    "index_version_docs", "index_version_graph", "visible_text",
    "lazy_re", "Language", "LANGUAGES", "STOP_WORDS", "MAX_QUESTION_CHARS",
    "text_fold", "text_folded_words", "text_words", "text_sentences", "text_detect_language",
    "SuffixStemmer", "text_stem", "text_stem_polish", "text_stem_slovak", "text_stem_english",
    "Tokenizer", "shared_tokenizer", "STEM_MEMO_MAX", "text_tokens", "text_is_code_word", "text_is_quantity", "text_english_lemma_term", "ENGLISH_IRREGULAR_FORMS", "text_edit_distance",
    "text_case_tells",
    "text_query_terms", "text_query_words", "text_query_counts", "text_name_words", "text_personal_names", "text_drop_fleeting_e",
    "text_insert_fleeting_e", "text_name_stem", "NAME_VOWELS", "NAME_MIN_STEM_CHARS", "NAME_SUFFIXES",
    "NAME_NOMINATIVE_ENDINGS",
    "QueryRules", "QUERY_RULES", "DEFAULT_QUESTION_LANGUAGE", "Question", "question_make",
]

CONTRACT_VERSION = "v1"
MAX_QUESTION_CHARS = 4000          # a longer question is refused (invalid_query) by RAG and the graph alike
DEFAULT_QUESTION_LANGUAGE = "en"   # a question's language when its words do not tell (RAG's; the graph has its own)
STATUSES = ("ok", "no_answer", "ambiguous", "error")

# reason -> HTTP status. Non-error reasons answer 200: they are results, not failures.
REASONS: dict[str, HTTPStatus] = {
    "no_matching_sources": HTTPStatus.OK,
    "no_matching_facts": HTTPStatus.OK,
    "unknown_person": HTTPStatus.OK,
    "unknown_keyword": HTTPStatus.OK,
    "unknown_title": HTTPStatus.OK,
    "ambiguous_person": HTTPStatus.OK,
    "ambiguous_title": HTTPStatus.OK,        # beyond DESIGN.md's list: the title and keyword twins of
    "ambiguous_keyword": HTTPStatus.OK,      # ambiguous_person, so `ambiguous` never comes without a reason
    "unsupported_relation": HTTPStatus.OK,   # the graph lacks the asked relation (opponent, grade, ...)
    "unsupported_question": HTTPStatus.OK,   # words of the question the graph cannot use: no exact answer
    "invalid_query": HTTPStatus.BAD_REQUEST,
    "unauthorized": HTTPStatus.UNAUTHORIZED,
    "forbidden_host": HTTPStatus.FORBIDDEN,  # a Host or Origin that is not the server's (DNS rebinding)
    "not_found": HTTPStatus.NOT_FOUND,
    "method_not_allowed": HTTPStatus.METHOD_NOT_ALLOWED,
    "invalid_request": HTTPStatus.UNPROCESSABLE_ENTITY,
    "retrieval_unavailable": HTTPStatus.SERVICE_UNAVAILABLE,
    "internal_error": HTTPStatus.INTERNAL_SERVER_ERROR,
}

# The only texts an error envelope may carry: fixed, written here, free of values and paths.
ERROR_DETAILS: dict[str, str] = {
    "invalid_query": "The question is missing, empty, too long or not valid JSON.",
    "unauthorized": "A valid bearer token is required.",
    "forbidden_host": "This server answers only requests addressed to its own host names "
                      "and origins.",
    "not_found": "No such endpoint.",
    "method_not_allowed": "This endpoint does not accept that method.",
    "invalid_request": "The request has invalid, missing or unknown fields.",
    "retrieval_unavailable": "The search index, graph or model is not available right now.",
    "internal_error": "The tool failed unexpectedly.",
}

CONFIDENCE_LEVELS = ("high", "low")
FRESHNESS_MODES = ("check", "watch", "sweep")

# The optional fields v1 has grown by (an older client ignores them): a tool names those its
# envelopes may carry (envelope_schema's `optional`) and adds each only when it has the value.
OPTIONAL_FIELDS: dict[str, dict] = {
    # how sure an answer is, from a measured score 0..1: level high when the score reaches the
    # tool's bar; absent where there is no answer to be sure of (a refusal, no_answer, an error)
    "confidence": {"type": "object",
                   "properties": {"level": {"enum": list(CONFIDENCE_LEVELS)},
                                  "score": {"type": "number", "minimum": 0, "maximum": 1}},
                   "required": ["level", "score"], "additionalProperties": False},
    # how fresh the tool's view of its documents is: mode check (this answer compared every
    # file), watch (a server learns of changes from folder events) or sweep (from a background
    # walk); age_s: seconds since the view was last known to be current
    "freshness": {"type": "object",
                  "properties": {"mode": {"enum": list(FRESHNESS_MODES)},
                                 "age_s": {"type": "number", "minimum": 0}},
                  "required": ["mode", "age_s"], "additionalProperties": False},
}


# === index_version — one spelling for every tool (grammar in the module docstring) ===

INDEX_VERSION_HEX_CHARS = 12       # digits kept of a content hash and of a Git revision
INDEX_VERSION_LABEL_MAX_CHARS = 64
_LABEL_KEEP = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def _index_version_git(generation: str, git_rev: str | None, is_dirty: bool) -> str:
    """Return generation followed by the Git part when there is a revision."""
    if not git_rev:
        return generation
    return f"{generation}+git-{git_rev[:INDEX_VERSION_HEX_CHARS]}" + ("-dirty" if is_dirty else "")


def index_version_docs(generation: str, git_rev: str | None = None, is_dirty: bool = False) -> str:
    """Return the RAG index_version for a corpus generation hash and a Git revision."""
    return _index_version_git(f"docs-{generation[:INDEX_VERSION_HEX_CHARS]}", git_rev, is_dirty)


def index_version_graph(label: str | None, digest: str, git_rev: str | None = None,
                        is_dirty: bool = False) -> str:
    """Return the graph index_version for a version label, a content hash and a Git revision."""
    safe = "".join(ch if ch in _LABEL_KEEP else "_" for ch in (label or "unversioned"))
    safe = safe[:INDEX_VERSION_LABEL_MAX_CHARS] or "unversioned"
    return _index_version_git(f"graph-{safe}+sha256-{digest[:INDEX_VERSION_HEX_CHARS]}",
                              git_rev, is_dirty)


# === Errors — typed exceptions; transports turn them into envelopes via error_result() ===

class ContractError(Exception):
    """Root of docs-qa's typed errors; `reason` and `http_status` drive the envelope.

    `message` is for the user's terminal (it may name the user's own input, such as a
    folder they typed); it never enters an envelope. `field_names` lists offending
    request fields by name only.
    """

    reason = "internal_error"

    def __init__(self, message: str = "", field_names: tuple[str, ...] | list[str] = ()):
        super().__init__(message or ERROR_DETAILS[self.reason])
        self.message = message or ERROR_DETAILS[self.reason]
        self.field_names = tuple(field_names)

    @property
    def http_status(self) -> HTTPStatus:
        return REASONS[self.reason]


class InvalidQueryError(ContractError):
    reason = "invalid_query"


class UnauthorizedError(ContractError):
    reason = "unauthorized"


class ForbiddenHostError(ContractError):
    reason = "forbidden_host"


class NotFoundError(ContractError):
    reason = "not_found"


class MethodNotAllowedError(ContractError):
    reason = "method_not_allowed"


class InvalidRequestError(ContractError):
    reason = "invalid_request"


class RetrievalUnavailableError(ContractError):
    reason = "retrieval_unavailable"


class InternalError(ContractError):
    reason = "internal_error"


# === Types — the envelope and its sources; JSON Schemas come from the same field metadata ===

def _schema(json_schema: dict) -> dict:
    """Return dataclass field metadata holding the field's JSON Schema."""
    return {"schema": json_schema}


_NULLABLE_STRING = {"type": ["string", "null"]}


@dataclass
class Source:
    """One source document of a response; `extra` holds tool fields (text, lines, ...)."""

    source_id: str = field(metadata=_schema({"type": "string", "pattern": "^S[1-9][0-9]*$"}))
    document_path: str = field(metadata=_schema({"type": "string"}))
    source_url: str | None = field(default=None, metadata=_schema(_NULLABLE_STRING))
    title: str | None = field(default=None, metadata=_schema(_NULLABLE_STRING))
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready dict: common fields first, then the tool's fields."""
        return _merge_common_and_extra(self)


@dataclass
class Envelope:
    """The v1 response. `complete` is True/False/None (unknown); see DESIGN.md."""

    status: str = field(metadata=_schema({"enum": list(STATUSES)}))
    reason: str | None = field(default=None, metadata=_schema(
        {"enum": [None, *REASONS]}))
    sources: list[Source] = field(default_factory=list, metadata=_schema(
        {"type": "array", "items": {"$source": True}}))
    index_version: str | None = field(default=None, metadata=_schema(_NULLABLE_STRING))
    complete: bool | None = field(default=None, metadata=_schema({"type": ["boolean", "null"]}))
    truncated: bool = field(default=False, metadata=_schema({"type": "boolean"}))
    truncation_reasons: list[str] = field(default_factory=list, metadata=_schema(
        {"type": "array", "items": {"type": "string"}}))
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")
        if self.reason is not None and self.reason not in REASONS:
            raise ValueError(f"unknown reason {self.reason!r}")

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready dict of the envelope."""
        return _merge_common_and_extra(self)


def _merge_common_and_extra(obj: Source | Envelope) -> dict[str, Any]:
    """Return obj's common fields followed by its `extra` (extras never override)."""
    out: dict[str, Any] = {}
    for f in fields(obj):
        if f.name == "extra":
            continue
        value = getattr(obj, f.name)
        if f.name == "sources":
            value = [s.to_dict() for s in value]
        out[f.name] = value
    for key, value in obj.extra.items():
        if key in out:
            raise ValueError(f"extra field {key!r} would override a common field")
        out[key] = value
    return out


# === error_result — the one conversion from any exception to an error envelope ===

def error_result(exc: BaseException) -> Envelope:
    """Return the error envelope for exc: its reason if typed, else internal_error.

    Only fixed texts from ERROR_DETAILS and the offending field names are carried;
    the exception's own text never is.
    """
    reason = exc.reason if isinstance(exc, ContractError) else "internal_error"
    field_names = list(exc.field_names) if isinstance(exc, ContractError) else []
    return Envelope(
        status="error", reason=reason, sources=[], index_version=None,
        complete=False, truncated=False, truncation_reasons=[],
        extra={"detail": ERROR_DETAILS[reason], "fields": sorted(set(field_names))},
    )


def error_boundary(exc: Exception, debug: bool, log: Callable[[str], None] | None = None) -> Envelope:
    """Return the error envelope of exc: the one conversion every transport (docs_qa's CLI,
    HTTP, MCP and its worker, graph_store's CLI) makes at its boundary. Re-raise exc under
    --debug; give log an untyped error's traceback (a ContractError's message is enough)."""
    if debug:
        raise exc
    if log is not None and not isinstance(exc, ContractError):
        import traceback
        log("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    return error_result(exc)


# === Schemas — JSON Schema (2020-12 subset) built from the dataclass metadata ===

def source_schema(extra_properties: dict | None = None) -> dict:
    """Return the JSON Schema of a source with the given tool-specific properties."""
    return _object_schema(Source, extra_properties or {}, {})


def envelope_schema(extra_properties: dict | None = None,
                    source_extra: dict | None = None, optional: tuple[str, ...] = ()) -> dict:
    """Return the JSON Schema of an envelope with the given tool-specific properties, and
    the named OPTIONAL_FIELDS allowed but not required."""
    schema = _object_schema(Envelope, extra_properties or {}, source_extra or {})
    schema["properties"].update({name: OPTIONAL_FIELDS[name] for name in optional})
    return schema


def error_schema() -> dict:
    """Return the JSON Schema of the error envelope error_result() produces."""
    schema = envelope_schema({
        "detail": {"type": "string"},
        "fields": {"type": "array", "items": {"type": "string"}},
    })
    schema["properties"]["status"] = {"const": "error"}
    schema["properties"]["index_version"] = {"type": "null"}
    return schema


def _object_schema(cls: type, extra_properties: dict, source_extra: dict) -> dict:
    """Return a closed object schema: every field required, nothing undeclared allowed."""
    properties: dict[str, Any] = {}
    for f in fields(cls):
        if f.name == "extra":
            continue
        spec = dict(f.metadata["schema"])
        if spec.get("items") == {"$source": True}:
            spec["items"] = source_schema(source_extra)
        properties[f.name] = spec
    properties.update(extra_properties)
    return {"type": "object", "properties": properties,
            "required": list(properties), "additionalProperties": False}


_JSON_TYPES = {
    "object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
}


def _is_type(value: Any, type_name: str) -> bool:
    """Return True when value is of the JSON type type_name (bool is not a number)."""
    if type_name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _JSON_TYPES[type_name])


def schema_errors(value: Any, schema: dict, where: str = "$") -> list[str]:
    """Return the places where value breaks schema (type, enum, const, properties,
    required, additionalProperties, items, minimum, maximum, minLength, maxLength)."""
    if "const" in schema and value != schema["const"]:
        return [where]
    if "enum" in schema and value not in schema["enum"]:
        return [where]
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else types
        if not any(_is_type(value, t) for t in names):
            return [where]
    problems: list[str] = []
    if isinstance(value, dict):
        props = schema.get("properties", {})
        problems += [f"{where}.{k}" for k in schema.get("required", []) if k not in value]
        for key, item in value.items():
            if key in props:
                problems += schema_errors(item, props[key], f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                problems.append(f"{where}.{key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                problems += schema_errors(item, schema["additionalProperties"], f"{where}.{key}")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            problems += schema_errors(item, schema["items"], f"{where}[{i}]")
    if _is_type(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(where)
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(where)
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            problems.append(where)
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(where)
    return problems


# === Text output — what every text renderer (docs_qa, graph_store) passes through ===

# Characters a terminal acts on instead of showing: C0 controls but tab and newline (ESC
# starts title, hide-text and OSC 52 clipboard sequences; CR overwrites a line), DEL, C1
# controls (0x9b is a one-byte CSI), and the bidirectional marks, embeddings, overrides and
# isolates that reorder what is shown (U+061C, U+200E/F, U+202A-202E, U+2066-2069), plus
# the line and paragraph separators U+2028/2029.
_TERMINAL_ACTIVE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f"
                              "\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape_char(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible_text(text: str) -> str:
    """Return text for a terminal: every control or bidi character shown as \\xNN or
    \\uNNNN, tab and newline kept. JSON output never goes through this: it keeps exact text."""
    return _TERMINAL_ACTIVE.sub(_escape_char, text)


class lazy_re:  # noqa: N801 - used like re.compile
    """A regular expression compiled on first use, so importing a module compiles none; after
    that its methods are plain attributes (no indirection per call)."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        compiled = re.compile(*self._source)
        for attr in ("match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer",
                     "pattern", "flags", "groups", "groupindex"):
            setattr(self, attr, getattr(compiled, attr))
        return getattr(compiled, name)


# === Text — normalisation, words, stop words, stemmers (pure; RAG and the graph share it) ===

_EXTRA_FOLDS = str.maketrans({"ł": "l", "đ": "d", "ø": "o", "æ": "ae", "œ": "oe", "ı": "i",
                              "ħ": "h", "ŧ": "t", "ð": "d", "þ": "th"})
_EXTRA_FOLD_CHARS = lazy_re("[" + "".join(chr(c) for c in _EXTRA_FOLDS) + "]")
TEXT_WORD_RE = lazy_re(r"[^\W_]+")
_WORD_RE = lazy_re(r"\w+")       # TEXT_WORD_RE once underscores are spaces, and twice as fast
# ASCII text folded and split in one translate(): letters lower-cased, every other character a space
_ASCII_FOLD_BREAKS = str.maketrans({chr(c): chr(c).lower() if chr(c).isalnum() else " " for c in range(128)})
# Unicode category Cf (format characters: soft hyphen, zero-width space/joiners, word
# joiner, BOM, bidi controls, ...), as of Unicode 15.1; tests/test_corpus_encodings.py
# checks the list against unicodedata. Listed, not computed, so import stays instant.
_FORMAT_RANGES_BMP = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
                      "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb")
_FORMAT_RANGES = _FORMAT_RANGES_BMP + (
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f")
TEXT_FORMAT_CHARS = lazy_re(f"[{_FORMAT_RANGES}]")
# a terminal's colour or title sequence pasted with a question ('\x1b[31m', '\x1b]0;title\x07'):
# a view of the text, no words of it (its ESC alone removed would leave '[31m' to weigh as a code)
TEXT_TERMINAL_ESCAPES = lazy_re(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
# removed after NFD in one pass: combining marks (diacritics) and format characters; a text
# with no character beyond U+FFFF (most) takes the class without the others, which sre tests
# per character in one table lookup instead of a chain of ranges (about 5x faster)
_MARK_RANGES = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_COMBINING_MARKS = lazy_re(f"[{_MARK_RANGES}{_FORMAT_RANGES}]")
_COMBINING_MARKS_BMP = lazy_re(f"[{_MARK_RANGES}{_FORMAT_RANGES_BMP}]")

# Function words, folded (no diacritics). English is the classic SMART-style core
# (measured on Cranfield in reports/hybrid-vs-single.md), its modal verbs and "have"
# included; Polish and Slovak hold the same kinds of words (musieć, móc, mieć; musieť,
# môcť, mať) and are kept apart so the tokenizer and the language detector (4b) can tell
# a text's language from them.
_STOP_EN = frozenset("""
a about above after again against all also am an and any are as at be because been
before being below between both but by can could did do does doing down during each
few for from further had has have having he her here hers herself him himself his how
i if in into is it its itself just me more most my myself no nor not now of off on
once only or other our ours ourselves out over own same she should so some such than
that the their theirs them themselves then there these they this those through to too
under until up upon very was we were what when where which while who whom why will
with would you your yours yourself yourselves may must shall might can't cannot
don doesn didn isn aren wasn weren hasn haven hadn wouldn shouldn couldn mustn needn shan
""".split())       # the last: what "n't" leaves when the apostrophe splits it (don't, isn't)
_STOP_PL = frozenset("""
a aby albo ale bo by byc czy dla do gdy gdzie i ich jak jaki jakie jest jestem jesli
juz kiedy ktora ktore ktory mi mnie na nad nie nim o od oraz po pod przez przy sa
sie tak tam te tego tej ten to tu tym w we z za ze co czym jaka jego jej
jestes jestesmy jestescie
moj moja moje mojego mojej moim moich moimi twoj twoja twoje twojego twojej twoim twoich
swoj swoja swoje swojego swojej swoim swoich swoimi nasz nasza nasze naszego naszej naszym naszych
czego czemu zeby ogole
wedlug podczas bez miedzy dzieki wobec oprocz tych tymi temu ta ktorych ktorym ktorego ktorzy ktorej ktorymi
ciebie tobie sobie siebie jakim jakiego jakiej jakich jakimi taki takie takim takiego takiej takich takimi taka
jakiemu ktoremu takiemu
kto kogo komu kim ile ilu byl byla bylo byli byly bedzie beda zostal zostala zostalo zostali zostaly zostanie
zostana takze rowniez jednak tylko bardzo jeszcze wiec lub czyli jako przed
""".split())
_STOP_SK = frozenset("""
a aj ak ako alebo ale by bol bola bolo co do este i ich je ja jej ho ku len ma na nad
nie od po pod pre pri sa si so su sme tak tam ten tie to tu uz v vo z za ze ktory
ktora ktore kde kedy aky aka ake preco kto
som ste naco jeho vobec
cez podla tych tymi tomu tento tato toto tieto teda tiez vsak iba bez medzi okrem pocas
vdaka kvoli proti potom ktorych ktorym ktoru ktorom ktoreho ktori ktorej ktorou ktorymi zo mne teba tebe
akeho akom akej akych akymi akou taky taka takeho takom takej takych
aku akemu akym aki taku take takemu takym taki ktoremu tuto tohto tomto tejto tymto
boli bude budu velmi pred koho komu kym kolko
moj moja moje mojho mojej mojom mojim mojou moji tvoj tvoja tvoje tvojho tvojej tvojom tvojim
svoj svoja svoje svojho svojej svojom svojim svojou svoji nas nasa nase nasho nasej nasom nasim
""".split())
# modal verbs and "have" (English lists must, may, have): dropped from Polish and Slovak
# texts only, as some of their forms are English words (mat, mate, mala)
_MODALS_PL = frozenset("""
musze musisz musi musimy musicie musza musial musiala musieli musiec trzeba
moge mozesz moze mozemy mozecie moga mogl mogla mogli
mam masz mamy macie maja mial miala mieli miec
""".split())
_MODALS_SK = frozenset("""
musim musis musi musime musite musia musel musela museli musiet treba
mozem mozes moze mozeme mozete mozu mohol mohla mohli
mam mas mame mate maju mal mala mali mat
""".split())
_MODALS_SK |= frozenset("ne" + verb for verb in _MODALS_SK)          # nemôžem, nemusím (Polish: nie ...)
_STOP_PL, _STOP_SK = _STOP_PL | _MODALS_PL, _STOP_SK | _MODALS_SK
_STOP_SLAVIC = _STOP_PL | _STOP_SK
STOP_WORDS = _STOP_EN | _STOP_SLAVIC
_STOP_OUTSIDE_SLAVIC = STOP_WORDS - (_MODALS_PL | _MODALS_SK)      # what an English text drops
_STOP_EN_ONLY, _STOP_SLAVIC_ONLY = _STOP_EN - _STOP_SLAVIC, _STOP_SLAVIC - _STOP_EN   # what tells
# what tells Polish from Slovak: words of two letters or more (a one-letter 'w' or 'v' is as
# often an initial, "Mills, K. W.", as a preposition)
_STOP_PL_TELLS = frozenset(w for w in _STOP_PL - _STOP_SK - _STOP_EN if len(w) > 1)
_STOP_SK_TELLS = frozenset(w for w in _STOP_SK - _STOP_PL - _STOP_EN if len(w) > 1)

# Request boilerplate ("I am interested in", "I would be pleased to receive", "interesuje
# mnie", "zaujíma ma"): dropped from questions only, never from documents, where such
# words can be content. Words that are content in some collection ("need" in "information
# needs", "documents", "articles", "information") are deliberately left out
# (reports/hybrid-vs-single.md, "BM25 levers"). The words that frame a question ("has anyone
# else…", "whether", "whose", "why bother") name no topic, and, held by no document, they
# weighed as its rarest words in the no-answer gate; "długo"/"dlho" of "jak długo"/"ako dlho"
# (how long) ask for a span of time, and their stems are those of "długi"/"dlh" (debts)
# (reports/answers-real-docs.md, eighth round).
REQUEST_STOP_WORDS = frozenset("""
interested interest pleased grateful glad receive wish like want wanted looking please
give tell describe described describing discuss discussed discussing deal deals dealing
concerning regarding especially particularly exist exists something anything etc
anyone anybody someone somebody else whose whether bother dlugo dlho dluho ok okay
interesuje interesuja chcialbym chcialabym chcielibysmy szukam szukamy prosze polsku angielsku
zaujima zaujimaju zaujimalo hladam hladame chcel chcela chcem prosim
np itd itp tzn tj napr atd tzv
zrobic robic zrobie zrobimy zrobit urobit robit urobim urobime spravit spravim spravime sprawic
""".split())

# Inflectional endings per language, folded (ą is a), longest match first; a light stemmer
# in the manner of L. Dolamic and J. Savoy, "Indexing and stemming approaches for the Czech
# language", Information Processing & Management 45(6), 2009 (the light Czech stemmer Lucene
# ships): case and verb endings only, written from the Polish and Slovak declension and
# conjugation tables, plus the verbal nouns (-anie/-enie) and -ow-/-ov- adjectives. A stem
# keeps >= 3 letters, so short words are stemmed too (kasa kasy kasę kasą kasie -> kas).
# Measured in reports/polish-slovak.md against Snowball's Polish stemmer.
_ENDINGS_PL = """
owiach owiami aniach eniach aniami eniami aniem eniem aniu eniu ania enia anie enie
iejszego iejszej iejszych iejszy iejsza iejsze
owego owej owych owym owymi owemu owa owe owy owi owo
iego iemu iej ich imi ymi ych ego emu ej ym im ach ami owie owi ow em om iem
am asz amy acie aja ac esz emy ecie eja ec isz imy icie ia ic ysz ymy yc ujesz ujemy ujecie uja uje owac ujcie uj
ala alo ali aly ila ilo ili ily yla ylo yli yly ela elo eli ely
ie ii iu y a e i u o
"""
_ENDINGS_SK = """
ovia ovi ove ova ovo ovu ovy ovej ovom ovou ovych ovym ovymi oveho ovemu
eho emu ych ymi ach ami och ov om ou ej ia ie iu ii im mi ata aty
ovanie ovania ovani ovaniu ovanim anie ania ani aniu anim enie enia eni eniu enim
at it iet ujem uje ujes uju ovat
y a e i u o
"""
_ENDINGS_ENGLISH = "ing ed es s"      # plurals and verbs, in a text of no clear language


_FLEETING = lazy_re(r"(?<=[^aeiouy])[eo](?=[kcrln]\Z)")   # Peter/Petra, budynek/budynku, príspevok/-vku


class SuffixStemmer:
    """Strips the longest listed ending that leaves a stem of >= min_stem letters; shorter
    words and words with a digit are kept as they are. fleeting: a stem's e or o between a
    consonant and a final k, c, r, l or n is dropped, as the West Slavic cases drop it
    (Peter, Petrom -> petr), so every form of such a word gets one stem."""

    def __init__(self, endings: str, min_stem: int = 3, fleeting: bool = False) -> None:
        self.min_stem, self.fleeting = min_stem, fleeting
        by_length: dict[int, set[str]] = {}
        for ending in endings.split():
            by_length.setdefault(len(ending), set()).add(ending)
        self._by_length = tuple((n, frozenset(by_length[n])) for n in sorted(by_length, reverse=True))

    def __call__(self, word: str) -> str:
        if len(word) <= self.min_stem or not word.isalpha():
            return word
        stem = word
        for n, endings in self._by_length:
            if len(word) - n >= self.min_stem and word[-n:] in endings:
                stem = word[:-n]
                break
        return _FLEETING.sub("", stem) if self.fleeting and len(stem) >= 4 else stem


text_stem_polish = SuffixStemmer(_ENDINGS_PL, fleeting=True)
text_stem_slovak = SuffixStemmer(_ENDINGS_SK, fleeting=True)
# a text of no clear language may be English (a title, a list of names): only the endings the
# two languages share that seldom end an English word (not -at, -it, -ic: format, circuit,
# logic), a stem of 4 letters, no fleeting vowel, so its English words still meet Porter's
_ENDINGS_SHARED = """
ami ach ych ich ymi imi owi ow om em ego emu ej ie iu ou ov ia eho och am asz amy acie aja ac
y a e i u o
"""
_stem_slavic = SuffixStemmer(_ENDINGS_SHARED, min_stem=4)
_stem_english_endings = SuffixStemmer(_ENDINGS_ENGLISH, min_stem=4)     # czas stays czas


def text_stem(word: str) -> str:
    """Return the stem of a word from a text whose stop words do not tell its language (a
    table, a list, a heading): the Polish and Slovak endings, else an English plural or verb
    ending, the stem kept >= 4 letters ('data' and 'code' stay whole, as Porter keeps them;
    a Polish or Slovak question meets such a text through this stem of its words too)."""
    stem = _stem_slavic(word)
    return stem if stem != word else _stem_english_endings(word)


def text_fold(text: str) -> str:
    """Return text in NFKC, casefolded, with diacritics and format characters (category
    Cf, e.g. a zero-width space inside a word) removed (ł -> l too)."""
    if text.isascii():             # NFKC is the identity and casefold == lower on ASCII
        return text.lower()
    folded = unicodedata.normalize("NFKC", text).casefold()
    if folded.isascii():
        return folded
    if _EXTRA_FOLD_CHARS.search(folded):   # translate() is slow on long non-ASCII text
        folded = folded.translate(_EXTRA_FOLDS)
    decomposed = unicodedata.normalize("NFD", folded)
    if len(decomposed.encode("utf-16-le", "surrogatepass")) == 2 * len(decomposed):
        return _COMBINING_MARKS_BMP.sub("", decomposed)           # no character beyond U+FFFF
    return _COMBINING_MARKS.sub("", decomposed)


def text_folded_words(text: str) -> list[str]:
    """Return TEXT_WORD_RE.findall(text_fold(text)), the words the index sees, computed in
    C-level passes: ASCII text by translate() and split(), other text by \\w+ once
    underscores are spaces (\\w is [^\\W_] plus the underscore)."""
    folded = text if text.isascii() else text_fold(text)
    if folded.isascii():
        return folded.translate(_ASCII_FOLD_BREAKS).split()
    return _WORD_RE.findall(folded.replace("_", " ") if "_" in folded else folded)


def text_words(text: str, keep_case: bool = False) -> list[str]:
    """Return the words of text in NFKC with their diacritics, casefolded unless keep_case
    (the forms name morphology reads; text_fold of a word is what the tokenizer sees);
    a format character (Ko\u200bľko, ro\u00adku) joins a word as in text_fold, never splits it."""
    text = unicodedata.normalize("NFKC", text)
    if not text.isascii():
        text = TEXT_FORMAT_CHARS.sub("", text)
    return TEXT_WORD_RE.findall(text if keep_case else text.casefold())


# --- Sentences — the one splitter, used by extractive answers, the support check and the
# model-reply parser. A sentence ends at . ! ? or an ellipsis (closing quotes, brackets and
# citations that follow stay with it) before whitespace and a capital letter, never after
# an abbreviation that cannot end a sentence, an initial, or inside a token (decimals,
# URLs, file names); a line break always ends one.

# Abbreviations (casefolded, without their last dot) that never end a sentence: titles
# before a name, "for example", legal references, units before a number.
_ABBREVIATIONS_PL = frozenset("""
np tzn tzw m.in ust art nr pkt par poz por zob ul al prof dr doc mgr inz inż hab lek red
dz dz.u godz tys mln mld sw św gen płk plk ks wg ww tel wyd str rys tab cz ew jw pt
im reż rez ds mar ang pol łac lac niem franc ros
""".split())                       # im.: imienia ('Centrum im. Mirosława'); reż.; ds.: do spraw; (ang. …)
_ABBREVIATIONS_SK = frozenset("""
napr tzv resp t.j tj č c ods písm pism zb z.z zák zak sb ing bc phdr rndr judr mudr mvdr
paeddr nám nam roč roc pozn príp prip cca hod min max kap obr tis sv p s t j
angl nem
""".split())
_ABBREVIATIONS_EN = frozenset("e.g i.e mr mrs ms st vs cf fig figs sec ch vol approx dept est viz".split())
# the splitter does not know a text's language: an abbreviation of any of them holds
_ABBREVIATIONS = _ABBREVIATIONS_PL | _ABBREVIATIONS_SK | _ABBREVIATIONS_EN
_SENTENCE_END = lazy_re(
    r"(?P<stop>\.{3}|…|[.!?]+)(?P<tail>[\"'”’»)\]]*(?:[ \t]*\[[^\[\]\n]{1,400}\])*)"
    r"(?P<gap>[ \t]+)(?=[\"'„“«(]?[^\W\d_]"
    # ... or a statute's numbered paragraph: 'korygującą. 2. Faktura…', 'Art. 106j. 1. W przypadku…',
    # '… priznanie. (2) Lehota…', '… deklarację. 1) Termin…'
    r"|(?:\d{1,3}[a-z]?[.)]|\(\d{1,3}[a-z]?\))[ \t]+[^\W\d_])|\n+")
_ROMAN_CENTURY = lazy_re(r"[IVXLC]{2,}\b")      # XX, XIX: a century after an ordinal ('80.')
_TOKEN_BEFORE = lazy_re(r"[^\s(\"'„“«\[]+$")


def _is_abbreviation(token: str) -> bool:
    """Return True when token (the text before a dot) cannot end a sentence: a known
    abbreviation, an initial (J.), or dotted letters (e.g, s.r.o)."""
    word = token.casefold()
    if word in _ABBREVIATIONS:
        return True
    if len(token) == 1 and token.isupper():
        return True                # an initial: J. Kowalski
    return bool(re.fullmatch(r"(?:[^\W\d_]{1,2}\.)+[^\W\d_]{1,2}", word)) and word not in ("a.s", "o.o")


def text_sentences(text: str) -> list[tuple[int, int]]:
    """Return the (start, end) offsets of the sentences of text, each stripped of the
    whitespace around it; citations after a sentence's stop belong to it."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        if match.group("stop") is not None:
            nxt = text[match.end():match.end() + 3].lstrip("\"'„“«(")
            if not (nxt[:1].isupper() or nxt[:1].isdigit()):    # a digit: a numbered paragraph
                continue
            if match.group("stop") in ("...", "…") and not nxt[1:2].islower():
                continue           # GTU_01... GTU_13: a range, not an end
            if match.group("stop") == ".":
                before = _token_before(text, match.start())
                if before and (_is_abbreviation(before)
                               or _is_enumerator(text, match.start() - len(before), before)
                               or before.isdecimal() and _ROMAN_CENTURY.match(text, match.end())):
                    continue       # 'w latach 80. XX wieku': an ordinal before a century
            end = match.start("gap")
        else:
            end = match.start()
        if text[start:end].strip():
            spans.append(_strip_span(text, start, end))
        start = match.end()
    if text[start:].strip():
        spans.append(_strip_span(text, start, len(text)))
    return spans


def _token_before(text: str, end: int) -> str:
    """Return the word before end (_TOKEN_BEFORE: back to a space, bracket or quote; '' for
    none), reading back only as far as it goes, so a long line is not read again per stop."""
    window = 64
    while True:
        start = max(0, end - window)
        found = _TOKEN_BEFORE.search(text, start, end)
        if found is None or found.start() > start or start == 0:
            return found.group(0) if found else ""
        window *= 4


def _is_enumerator(text: str, start: int, token: str) -> bool:
    """Return True when token, at start, numbers a list item or a statute's paragraph: 1-3
    digits (and a letter) with nothing before them on their line but blanks and at most one
    bullet ("1. Stop the service." and "- 2. Restart it." are one sentence each), or right
    after a sentence's stop ("…korygującą. 2. Faktura…", "Art. 106j. 1. W przypadku…")."""
    digits = token[:-1] if token[-1:].isalpha() else token
    if len(digits) > 3 or not digits.isdecimal():
        return False
    gap = start
    while gap > 0 and text[gap - 1] in " \t":
        gap -= 1
    if gap < start and gap > 0 and text[gap - 1] in ".!?":
        return True
    lead = start
    while lead > 0 and text[lead - 1] != "\n" and text[lead - 1].isspace():
        lead -= 1
    if start > lead > 0 and text[lead - 1] in "-*+":               # a bullet, then blanks
        lead -= 1
        while lead > 0 and text[lead - 1] != "\n" and text[lead - 1].isspace():
            lead -= 1
    return lead == 0 or text[lead - 1] == "\n"


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Return (start, end) moved inward past surrounding whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


# --- Language — one detector for questions, refusals, caveats and the tokenizer. The
# tokenizer's English-or-not decision (_stop_word_language, by stop words) comes first; Polish
# and Slovak are then told apart by letters, function words and inflection, so a question
# typed without diacritics ("przepis na sernik", "kto vyhral majstrovstva") is placed too.

_PL_LETTERS = frozenset("ąęłńśźżć")
_SK_LETTERS = frozenset("ľĺŕäôťďňčšžýáíéú")
_PL_WORDS = frozenset("""
w we jest sie czy dla jak jaki jaka jakie jakim przez oraz gdzie kiedy jesli juz mnie
tego tej tym aby albo byc czym jego ile moge mozna trzeba czego przy sa plik pliku pliki sluzy
""".split())
_SK_WORDS = frozenset("""
v vo je ako aky aka ake akom pre pri sme ste bol bola bolo boli su preco kde kedy ku len
uz aj alebo tiez kolko vsetky tento tato toto ktory subor suboru subory sluzi
""".split()) - {"ktory"}
_PL_MARKS = lazy_re(r"rz|sz|cz|w|(?:ego|ow|osc|ac|ic)$")
_SK_MARKS = lazy_re(r"v|(?:eho|ov|ou|ost|at|it)$")


def _stop_word_language(words: list[str] | dict[str, int]) -> str:
    """Return 'en' when folded words (a list, or each word with its count) hold more English
    than Polish/Slovak stop words, 'other' when fewer, 'unknown' when the stop words do not
    tell: the detector's first stage, and the tokenizer's choice of stemmer."""
    counts = words if isinstance(words, dict) else Counter(words)
    english = sum(map(counts.__getitem__, _STOP_EN_ONLY.intersection(counts)))
    slavic = sum(map(counts.__getitem__, _STOP_SLAVIC_ONLY.intersection(counts)))
    if english == slavic:
        return "unknown"
    return "en" if english > slavic else "other"


def _opens_slavic(words: list[str]) -> bool:
    """Return True when the first of the folded words that only Polish/Slovak or only English
    uses as a stop word is a Polish/Slovak one: a question is framed in its own language, and
    an English message pasted after the frame ("pri vytvarani virtualenvu pise ensurepip is not
    available") does not make it English."""
    first = next((w for w in words if w in _STOP_EN_ONLY or w in _STOP_SLAVIC_ONLY), None)
    return first in _STOP_SLAVIC_ONLY


def text_detect_language(text: str, default: str | None = DEFAULT_QUESTION_LANGUAGE) -> str | None:
    """Return 'pl', 'sk' or 'en' for a question or text, with or without diacritics;
    default when nothing tells (a code such as GTU_12; None: say so)."""
    raw_words = TEXT_WORD_RE.findall(text if text.isascii() else TEXT_FORMAT_CHARS.sub("", text))
    words = [text_fold(w) for w in raw_words]
    coarse = _stop_word_language(words)
    if coarse == "en" and not _opens_slavic(words):
        return "en"
    scores = {"pl": 0, "sk": 0}
    for n, (raw, word) in enumerate(zip(raw_words, words)):
        if raw.isupper() and len(raw) > 1 or any(ch.isdigit() for ch in raw):
            continue               # codes and acronyms (VAT, JPK_V7) say nothing
        # a capitalised word inside the text is a name: "Jaki tytuł ma praca Jána Holpa?"
        letters = set(raw.casefold()) if n == 0 or not raw[:1].isupper() else set()
        scores["pl"] += 3 * bool(_PL_LETTERS & letters) + 2 * (word in _PL_WORDS) \
            + len(_PL_MARKS.findall(word))
        scores["sk"] += 3 * bool(_SK_LETTERS & letters) + 2 * (word in _SK_WORDS) \
            + len(_SK_MARKS.findall(word))
    if scores["pl"] == scores["sk"]:
        return default if coarse == "unknown" or scores["pl"] == 0 else "pl"
    return "pl" if scores["pl"] > scores["sk"] else "sk"


# --- Porter stemmer — M. F. Porter, "An algorithm for suffix stripping", Program 14(3),
# 1980, written from the paper's description; used for texts judged English.

_STEP2 = (("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"),
          ("izer", "ize"), ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"),
          ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"), ("ator", "ate"),
          ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"),
          ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"), ("logi", "log"))
_STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"),
          ("ful", ""), ("ness", ""))
_STEP4 = ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
          "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize")


_CV = str.maketrans("abcdefghijklmnopqrstuvwxzABCDEFGHIJKLMNOPQRSTUVWXYZ",   # y: by its neighbour
                    "vcccvcccvcccccvcccccvcccc" + "c" * 26)


def _cv_form(word: str) -> str:
    """Return word as Porter's consonant/vowel string: 'c' or 'v' per letter, y a vowel
    after a consonant (a lower-case ASCII word). m of a stem is the count of 'vc' in the
    prefix of this string as long as the stem (y depends only on the letter before it)."""
    form = word.translate(_CV)
    if "y" in form:
        letters = list(form)
        for i, ch in enumerate(letters):
            if ch == "y":
                letters[i] = "v" if i and letters[i - 1] == "c" else "c"
        form = "".join(letters)
    return form


def _measure(stem: str) -> int:
    """Return m, the number of vowel-consonant sequences in [C](VC)^m[V]."""
    return _cv_form(stem).count("vc")


def _has_vowel(stem: str) -> bool:
    return "v" in _cv_form(stem)


def _double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _cv_form(word)[-1] == "c"


def _cvc(word: str) -> bool:
    """Return True when word ends consonant-vowel-consonant and the last is not w, x or y."""
    return len(word) >= 3 and _cv_form(word).endswith("cvc") and word[-1] not in "wxy"


def _by_last_letter(rules: tuple) -> dict[str, tuple]:
    """Return rules (suffix first) grouped by the suffix's last letter, longest suffix first."""
    out: dict[str, list] = {}
    for rule in sorted(rules, key=lambda r: -len(r[0])):
        out.setdefault(rule[0][-1], []).append(rule)
    return {letter: tuple(group) for letter, group in out.items()}


_STEP2_BY_END, _STEP3_BY_END = _by_last_letter(_STEP2), _by_last_letter(_STEP3)
_STEP4_BY_END = _by_last_letter(tuple((suffix,) for suffix in _STEP4))


def _replace_longest(word: str, rules_by_end: dict[str, tuple], min_m: int) -> str:
    """Apply the rule with the longest matching suffix when its stem's m > min_m."""
    for suffix, replacement in rules_by_end.get(word[-1:], ()):
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if _measure(stem) > min_m else word
    return word


def _porter_step1(word: str) -> str:
    """Return word after Porter's steps 1a-1c (plurals, -ed/-ing, y -> i)."""
    if word.endswith("sses") or word.endswith("ies"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    else:
        for suffix in ("ed", "ing"):
            if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
                word = _porter_step1b_tidy(word[: -len(suffix)])
                break
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    return word


def _porter_step1b_tidy(word: str) -> str:
    """Return a stem just stripped of -ed/-ing with Porter's e-restoring and undoubling."""
    if word.endswith(("at", "bl", "iz")):
        return word + "e"
    if _double_consonant(word) and word[-1] not in "lsz":
        return word[:-1]
    if _measure(word) == 1 and _cvc(word):
        return word + "e"
    return word


def text_stem_english(word: str) -> str:
    """Return the Porter (1980) stem of an English word; words with digits or <= 2 letters as is."""
    if len(word) <= 2 or not word.isalpha() or not word.isascii():
        return word
    word = _porter_step1(word)
    word = _replace_longest(word, _STEP2_BY_END, 0)
    word = _replace_longest(word, _STEP3_BY_END, 0)
    for (suffix,) in _STEP4_BY_END.get(word[-1:], ()):
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if _measure(stem) > 1 and (suffix != "ion" or stem.endswith(("s", "t"))):
                word = stem
            break
    if word.endswith("e"):
        m = _measure(word[:-1])
        if m > 1 or (m == 1 and not _cvc(word[:-1])):
            word = word[:-1]
    if word.endswith("ll") and _measure(word) > 1:
        word = word[:-1]
    return word


# English words whose form Porter's rules cannot take back to their lemma (irregular verbs and
# plurals), each with it: a question's "I ran", "got", "built", "indices" then also meets a page's
# "run", "get", "build", "index". A form that is also another word in use is left out: left (the
# side), found (to found), saw, lay, lie, fell, rose, bound, ground, wound, spoke, lit, lead, smelt.
ENGLISH_IRREGULAR_FORMS: dict[str, str] = {form: lemma for lemma, forms in (
    ("arise", "arose arisen"), ("awake", "awoke awoken"), ("become", "became"), ("begin", "began begun"),
    ("bend", "bent"), ("blow", "blew blown"), ("break", "broke broken"), ("breed", "bred"),
    ("bring", "brought"), ("build", "built"), ("burn", "burnt"), ("buy", "bought"), ("catch", "caught"),
    ("choose", "chose chosen"), ("come", "came"), ("creep", "crept"), ("deal", "dealt"), ("dig", "dug"),
    ("draw", "drew drawn"), ("dream", "dreamt"), ("drive", "drove driven"), ("eat", "ate eaten"),
    ("feed", "fed"), ("feel", "felt"), ("fight", "fought"), ("flee", "fled"), ("fly", "flew flown"),
    ("forbid", "forbade forbidden"), ("forget", "forgot forgotten"), ("forgive", "forgave forgiven"),
    ("freeze", "froze frozen"), ("get", "got gotten"), ("give", "gave given"), ("go", "went gone"),
    ("grow", "grew grown"), ("hang", "hung"), ("hear", "heard"), ("hide", "hid hidden"), ("hold", "held"),
    ("keep", "kept"), ("know", "knew known"), ("learn", "learnt"), ("lend", "lent"), ("lose", "lost"),
    ("make", "made"), ("mean", "meant"), ("meet", "met"), ("mislead", "misled"),
    ("mistake", "mistook mistaken"), ("overcome", "overcame"), ("override", "overrode overridden"),
    ("overwrite", "overwrote overwritten"), ("pay", "paid"), ("rebuild", "rebuilt"), ("rerun", "reran"),
    ("rewrite", "rewrote rewritten"), ("ride", "rode ridden"), ("ring", "rang rung"), ("rise", "risen"),
    ("run", "ran"), ("say", "said"), ("seek", "sought"), ("sell", "sold"), ("send", "sent"),
    ("shake", "shook shaken"), ("shine", "shone"), ("shoot", "shot"), ("show", "shown"),
    ("shrink", "shrank shrunk"), ("sing", "sang sung"), ("sink", "sank sunk"), ("sit", "sat"),
    ("sleep", "slept"), ("slide", "slid"), ("speak", "spoken"), ("speed", "sped"), ("spell", "spelt"),
    ("spend", "spent"), ("spill", "spilt"), ("spin", "spun"), ("stand", "stood"), ("steal", "stole stolen"),
    ("stick", "stuck"), ("strike", "struck stricken"), ("swear", "swore sworn"), ("sweep", "swept"),
    ("swim", "swam swum"), ("swing", "swung"), ("take", "took taken"), ("teach", "taught"),
    ("tear", "tore torn"), ("tell", "told"), ("think", "thought"), ("throw", "threw thrown"),
    ("understand", "understood"), ("undo", "undid undone"), ("uphold", "upheld"), ("wake", "woke woken"),
    ("wear", "wore worn"), ("weep", "wept"), ("win", "won"), ("withdraw", "withdrew withdrawn"),
    ("write", "wrote written"), ("analysis", "analyses"), ("appendix", "appendices"), ("child", "children"),
    ("crisis", "crises"), ("criterion", "criteria"), ("foot", "feet"), ("hypothesis", "hypotheses"),
    ("index", "indices"), ("man", "men"), ("matrix", "matrices"), ("mouse", "mice"),
    ("phenomenon", "phenomena"), ("thesis", "theses"), ("tooth", "teeth"), ("vertex", "vertices"),
    ("woman", "women")) for form in forms.split()}


def text_english_lemma_term(word: str) -> str | None:
    """Return the index term of an irregular English form's lemma (ENGLISH_IRREGULAR_FORMS:
    'ran' -> 'run', 'indices' -> 'index'), None for any other word."""
    lemma = ENGLISH_IRREGULAR_FORMS.get(text_fold(word))
    return None if lemma is None else text_stem_english(lemma)


# --- Languages — one entry per language the detector can return: everything that differs by
# language, in one place (the page's own texts stay with the page, keyed by the same codes)

@dataclass(frozen=True)
class Language:
    """What docs-qa knows of one language."""

    code: str                        # what text_detect_language returns
    name: str                        # as a model's prompt names it ("Answer in Polish.")
    stop_words: frozenset[str]       # function words, folded; dropped from texts and questions
    stem: Callable[[str], str]       # the stemmer of a folded word of a text in this language
    abbreviations: frozenset[str]    # casefolded, without their last dot: they never end a sentence
    refusal: str                     # the answer when the documents do not hold one
    sources_changed: str             # shown instead of the refusal when cited lines changed meanwhile
    caveat: str                      # appended when the evidence shown may be partial
    weak_answer: str                 # shown above an answer whose confidence is low (text, page, MCP)
    graph_words: frozenset[str]      # the graph's question words (thesis, supervisor, count, ...):
                                     # they never name an entity


LANGUAGES: dict[str, Language] = {
    "en": Language(
        "en", "English", _STOP_EN, text_stem_english, _ABBREVIATIONS_EN,
        refusal="I did not find the answer in the documents.",
        sources_changed="The documents changed while I was answering; please ask again.",
        caveat="Note: the evidence shown may be partial; a list in this answer may not be complete.",
        weak_answer="Closest passages; they may not answer the question:",
        graph_words=frozenset("""
author authored called defend defended jointly keyword know known list many named number people
person persons students sum supervise supervised supervisor tell theses thesis title together two
wrote year""".split())),
    "pl": Language(
        "pl", "Polish", _STOP_PL, text_stem_polish, _ABBREVIATIONS_PL,
        refusal="Nie znalazłem odpowiedzi w dokumentach.",
        sources_changed="Dokumenty zmieniły się w trakcie odpowiadania; zapytaj ponownie.",
        caveat="Uwaga: pokazane fragmenty mogą być niepełne; wyliczenie w tej odpowiedzi może nie być kompletne.",
        weak_answer="Najbliższe fragmenty; mogą nie odpowiadać na pytanie:",
        graph_words=frozenset("""
brzmi byl byla ile kim kluczowe nazywa obronil obronila osob osoby prac praca prace pracy promotor
promotorow razem rok roku slowo tytul wiadomo wspolnie wymien""".split())),
    "sk": Language(
        "sk", "Slovak", _STOP_SK, text_stem_slovak, _ABBREVIATIONS_SK,
        refusal="Odpoveď som v dokumentoch nenašiel.",
        sources_changed="Dokumenty sa počas odpovedania zmenili; opýtajte sa znova.",
        caveat="Pozor: zobrazené dôkazy môžu byť neúplné; zoznam v tejto odpovedi nemusí byť úplný.",
        weak_answer="Najbližšie úryvky; nemusia odpovedať na otázku:",
        graph_words=frozenset("""
boli dvoch k klucove klucovom klucovym kolko ktori ktorom ktorych ktorym kym maju mal mala mali
napisal napisala nazov obhajil obhajila obhajoval obhajovala osob osoby pocet povedz prac praca
prace pracu rok roku s slovo slovom spolocne spolu spoluviedla spoluviedol studenti studentov tema
temu timi vedie veduceho veduci veducich viac viedla viedol vieme viete vola volala vsetci vsetkych
vymenuj zname znie zo""".split())),
}


# --- Names — where a question writes a name, its endings and the fleeting e of a Slovak,
# Czech or Polish name (Peter, Petra, Petrom; Marek, Marka; and of a longer word: pojem,
# pojmom): one rule for the question's terms, the no-answer gate (docs_qa) and the graph's
# name matching (graph_store §4)

NAME_VOWELS = frozenset("aeiouyáäéíóôúýěůąę")


def text_name_words(question: str) -> list[str]:
    """Return the words of a question written as names: a code-like word (an acronym,
    CamelCase, docker-compose) or, in a question whose capitals tell, a capitalised word that
    does not open a sentence."""
    case_tells, names = text_case_tells(question), []
    for match in TEXT_QUESTION_WORD.finditer(question):
        word, before = match.group(), question[:match.start()].rstrip()
        opens_sentence = not before or before[-1] in ".!?:;\"'(\u201e\u201c\u00bf\u00a1"
        if text_is_code_word(word, case_tells) or case_tells and word[:1].isupper() and not opens_sentence:
            names.append(word)
    return names


def text_personal_names(question: str, case_tells: bool) -> frozenset[str]:
    """Return the folded words a question writes as personal names: its name words
    (text_name_words) that are not code-like ('Jána', 'Holpa'; not 'PythonAnywhere', 'JPK')."""
    return frozenset(text_folded_words(" ".join(word for word in text_name_words(question)
                                                if not text_is_code_word(word, case_tells))))


def text_drop_fleeting_e(word: str) -> str:
    """Return a name stem without the fleeting e before its final consonant (peter -> petr,
    marek -> mark), else the stem."""
    if len(word) >= 4 and word[-2] == "e" and word[-1] not in NAME_VOWELS and word[-3] not in NAME_VOWELS:
        return word[:-2] + word[-1]
    return word


def text_insert_fleeting_e(base: str) -> str:
    """Return a name stem with the fleeting e its nominative puts back (petr -> peter), else the stem."""
    if len(base) >= 3 and base[-1] not in NAME_VOWELS and base[-2] not in NAME_VOWELS:
        return base[:-1] + "e" + base[-1]
    return base


NAME_MIN_STEM_CHARS = 2            # a name stem never gets shorter than this
FLEETING_E_MIN_LETTERS = 5         # a question word this long also meets its forms with and without a
                                   # fleeting e (pojem, pojmom); shorter words are left as stemmed
# Slovak and Polish inflectional endings of names, longest first; see text_name_stem. The
# female surname endings also come without their accent (Kovacova, Kovacovu), as typed on a
# keyboard without Slovak letters; the Polish ones take a Slovak name into Polish cases
# (z Janem Holpem, z Evą Šimkovą or Simkowa, o Marii Holpowej).
NAME_SUFFIXES = tuple(sorted((
    "ovej", "ovou", "ovia", "ová", "ovú", "ova", "ovu", "ovi", "ého", "ému", "ými", "ách", "ami",
    "ích", "och", "iou", "ou", "om", "ov", "ej", "ho", "mu", "ia", "ie", "iu", "ii",
    "ý", "á", "é", "ú", "í", "a", "e", "i", "o", "u", "y",
    "owej", "ową", "ovą", "owa", "owi", "iem", "em", "ego", "emu", "ym", "ią", "ię", "ą", "ę",
), key=len, reverse=True))
_NAME_SUFFIXES_BY_LENGTH = tuple((n, frozenset(x for x in NAME_SUFFIXES if len(x) == n))
                                 for n in sorted({len(x) for x in NAME_SUFFIXES}, reverse=True))
# the endings a name's nominative may have after its stem (folded): Novák, Sloboda, Mieszko,
# Nováková, Nový, Kowalski, Mária
NAME_NOMINATIVE_ENDINGS = ("", "a", "o", "ova", "y", "i", "ia")


def text_name_stem(word: str) -> str:
    """Return a casefolded name word without its inflectional ending (Holpa, Holpová -> holp).

    Strips the longest known suffix that leaves at least NAME_MIN_STEM_CHARS (and then an -ej
    the stem still ends in, so Andrej/Andreja/Andrejovi meet), then drops a fleeting e
    before a final consonant (Peter/Petra -> petr). Works on words that still carry
    diacritics, so -ová and -ou stay distinguishable from plain vowels. The graph matches
    names by it (graph_store.name_key); retrieval finds a name's nominative by it (_name_stems).
    """
    word = unicodedata.normalize("NFC", word.casefold())
    if len(word) > NAME_MIN_STEM_CHARS and not word.isdigit():
        for length, suffixes in _NAME_SUFFIXES_BY_LENGTH:
            if len(word) - length >= NAME_MIN_STEM_CHARS and word[-length:] in suffixes:
                word = word[:-length]
                break
        if word.endswith("ej") and len(word) - 2 >= NAME_MIN_STEM_CHARS:
            word = word[:-2]   # Andreja -> andrej -> andr, as Andrej loses -ej as an ending
    return text_drop_fleeting_e(word)


def _fleeting_e_stems(stems: Iterable[str]) -> dict[str, None]:
    """Return stems with their forms with and without a fleeting e, in order: 'Petrom' (petr)
    then meets 'Peter' (peter), 'pojmom' (pojm) 'pojem', and 'Peter' meets 'Petra' (petr)."""
    return dict.fromkeys(form for stem in stems
                         for form in (stem, text_insert_fleeting_e(stem), text_drop_fleeting_e(stem)))


def _name_stems(word: str, stems: Iterable[str], stemmers: Iterable[Callable[[str], str]]) -> dict[str, None]:
    """Return a personal name's terms, in order: its stems with and without a fleeting e
    (_fleeting_e_stems), then the stems of the nominatives it may have (text_name_stem, then
    each of NAME_NOMINATIVE_ENDINGS, with and without a fleeting e), as a document stems its
    nominative: 'Andrejovi' meets 'Andrej', 'Kováča' a Polish page's 'Kováč'."""
    terms = _fleeting_e_stems(stems)
    base = text_fold(text_name_stem(word))
    for root in dict.fromkeys((base, text_insert_fleeting_e(base))):
        terms.update(dict.fromkeys(stem(root + ending) for ending in NAME_NOMINATIVE_ENDINGS for stem in stemmers))
    return terms


# --- Terms — index terms of a text and the terms of a question, each stemmed for its
# language (Porter for English, the Polish or Slovak light stemmer, text_stem when the stop
# words do not tell).

TEXT_QUESTION_WORD = lazy_re(r"[^\W_]+(?:[_\-/.][^\W_]+)*")
# an English contraction's ending ("what's", "I'm", "we'll"): dropped from a question, whose
# words it would join as a one-letter word ('s') that every fragment saying "it's" holds;
# "won't" and "shan't" are will and shall ("don't" leaves a stop word, don)
_CONTRACTION_END = lazy_re(r"(?<=[^\W\d_])['\u2019](?i:s|t|d|m|ll|re|ve)(?![^\W_])")
_CONTRACTION_NOT = lazy_re(r"(?<![^\W_])(?i:(wo|sha)n['\u2019]t)(?![^\W_])")


# a phrase asking how to answer, not about what ('in plain words', 'w skrócie', 'po ľudsky'): its
# words are content elsewhere ('plain text', 'words'), and a page about them outranked the topic
# ('in short' and 'w skrócie' only before a comma or the end: 'in short running time facilities')
_MANNER_PHRASE = lazy_re(r"(?<![^\W_])(?i:in (?:plain|simple|layman['\u2019]?s|lay) (?:words|english|terms|language)"
                         r"|in a nutshell|po ludzku|prostymi s[łl]owami|prostym j[ęe]zykiem|w prostych s[łl]owach"
                         r"|po [ľl]udsky|jednoduch[ýy]mi slovami|jednoducho povedan[éeo]|stru[čc]ne"
                         r"|(?:in (?:short|brief)|in other words|w skr[óo]cie|v skratke)(?=\s*(?:[,.?!:;]|$)))(?![^\W_])")


def _spoken(text: str) -> str:
    """Return a question's text as its terms read it: English contractions' endings dropped
    (_CONTRACTION_END), and a phrase asking how to answer (_MANNER_PHRASE)."""
    text = _MANNER_PHRASE.sub(" ", text)
    if "'" not in text and "\u2019" not in text:
        return text
    text = _CONTRACTION_NOT.sub(lambda m: "will" if m.group(1).lower() == "wo" else "shall", text)
    return _CONTRACTION_END.sub("", text)


# the stemmer of each language a text can be indexed in; 'other': its stop words do not tell
STEMMERS: dict[str, Callable[[str], str]] = {
    **{code: language.stem for code, language in LANGUAGES.items()}, "other": text_stem}
# a question's terms: each word under every stemmer its language's documents may have used
# (a Polish question meets Slovak pages and pages of no clear language; duplicates merge)
_QUERY_STEMMERS = {"en": (text_stem_english,),
                   "other": (text_stem_polish, text_stem_slovak, text_stem),
                   "unknown": (text_stem_polish, text_stem_slovak, text_stem, text_stem_english),
                   "unknown_en": (text_stem, text_stem_english),
                   "mixed": (text_stem_polish, text_stem_slovak, text_stem, text_stem_english)}


class QueryRules(NamedTuple):
    """How a question's words become terms. QUERY_RULES are docs-qa's own; a report measures
    others by passing them (reports/bm25_levers.py), never by patching this module."""

    stemmers: Mapping[str, tuple[Callable[[str], str], ...]]   # by the question's stop-word
                                                               # language (_QUERY_STEMMERS' keys)
    request_stop_words: frozenset[str]   # request boilerplate dropped ('I am interested in')
    all_caps_rule: bool = True           # capitals make a code word only in a question with lower case


QUERY_RULES = QueryRules(_QUERY_STEMMERS, REQUEST_STOP_WORDS)


STEM_MEMO_MAX = 100_000            # words the shared tokenizer remembers per language before it
                                   # starts again (about 15 MB per language at most)


class _StemMemo(dict):
    """word -> its index term (None for a stop word), stemmed on first sight; with a limit,
    emptied when full (a long-running server meets ever more words)."""

    def __init__(self, stem: Callable[[str], str], stop_words: frozenset[str], limit: int | None = None) -> None:
        super().__init__()
        self.stem, self.stop_words, self.limit = stem, stop_words, limit

    def __missing__(self, word: str) -> str | None:
        if self.limit is not None and len(self) >= self.limit:
            self.clear()
        term = self[word] = None if word in self.stop_words else self.stem(word)
        return term


class Tokenizer:
    """Folds, splits, drops stop words and stems each text with its language's stemmer,
    memoising the stem of each word per language."""

    def __init__(self, stemmers: Mapping[str, Callable[[str], str]] | None = None,
                 memo_limit: int | None = None) -> None:
        """stemmers: the stemmer of each key of STEMMERS (default STEMMERS; a report measures
        others); memo_limit: the words remembered per language (None: all, for one job)."""
        # the modal verbs are dropped from Polish and Slovak texts only: in a text of no clear
        # language 'mate' may be a command's name
        self._memo = {language: _StemMemo(stem, STOP_WORDS if language in ("pl", "sk") else _STOP_OUTSIDE_SLAVIC,
                                          memo_limit)
                      for language, stem in (stemmers or STEMMERS).items()}

    def language(self, text: str) -> str:
        """Return the stemmer a text is indexed with: a key of STEMMERS."""
        return self.words_language(text_folded_words(text))

    @staticmethod
    def words_language(words: list[str] | dict[str, int]) -> str:
        """Return the stemmer for a text's folded words (or each with its count): 'en' when
        English stop words outnumber the others, else 'pl' or 'sk' by whose own stop words
        are more, else 'other' (text_stem)."""
        coarse = _stop_word_language(words)
        if coarse != "other":
            return "en" if coarse == "en" else "other"
        counts = words if isinstance(words, dict) else Counter(words)
        polish = sum(map(counts.__getitem__, _STOP_PL_TELLS.intersection(counts)))
        slovak = sum(map(counts.__getitem__, _STOP_SK_TELLS.intersection(counts)))
        return "other" if polish == slovak else "pl" if polish > slovak else "sk"

    def tokens(self, text: str, language: str | None = None) -> list[str]:
        """Return text's index terms, stemmed for language (a key of STEMMERS; default: the text's own)."""
        words = text_folded_words(text)
        memo = self._memo[language or self.words_language(words)]
        return [term for term in map(memo.__getitem__, words) if term is not None]

    def weighted_counts(self, words: dict[str, int], language: str, units: int) -> dict[str, int]:
        """Return units times how often each index term occurs, given how often each folded
        word does (stemmed for language); terms in the order their first word came."""
        memo, counts = self._memo[language], {}
        get = counts.get
        for word, n in words.items():
            term = memo[word]
            if term is not None:
                counts[term] = get(term, 0) + n * units
        return counts


@functools.lru_cache(maxsize=1)
def shared_tokenizer() -> Tokenizer:
    """Return the process's tokenizer for questions and the fragments they rank: its stems are
    remembered across questions (at most STEM_MEMO_MAX words per language), so a server does
    not stem the words of the same fragments again for every question."""
    return Tokenizer(memo_limit=STEM_MEMO_MAX)


def text_tokens(text: str) -> list[str]:
    """Return the index terms of text: folded words, stop words dropped, stemmed."""
    return shared_tokenizer().tokens(text)


# a number with a unit or an ordinal's ending (500MB, 4.2G, 30s, 5th, 3am): a value the asker
# supplies, not a name the documents write
_QUANTITY = lazy_re(r"\d+(?:[.,]\d+)?(?:[kmgtp]i?b?|b|[mun]?s|sec|min|hrs?|h|d|px|pt|em|st|nd|rd|th|[ap]m|x)?",
                    re.IGNORECASE)


def text_is_quantity(word: str) -> bool:
    """Return True for a number, alone or with a unit or an ordinal's ending (_QUANTITY)."""
    return _QUANTITY.fullmatch(word) is not None


def text_is_code_word(word: str, case_tells: bool = True) -> bool:
    """Return True for identifiers such as WIS, KSeF, GTU_12, VAT-26, JPK_V7M, 106j; in a
    text written all in capitals (case_tells False) capitals alone do not make one; a
    quantity (500MB, 5th: text_is_quantity) is none."""
    if word[:1].isdigit() and text_is_quantity(word):
        return False
    has_digit = any(ch.isdigit() for ch in word)
    has_alpha = any(ch.isalpha() for ch in word)
    joined = any(ch in "_-/." for ch in word)
    return (has_digit and has_alpha) or (joined and has_alpha) or \
        (case_tells and sum(ch.isupper() for ch in word) >= 2)


def text_edit_distance(one: str, two: str, limit: int) -> int:
    """Return the optimal-string-alignment distance of two words (an insertion, deletion,
    substitution or swap of neighbours costs 1), or limit + 1 once it exceeds limit."""
    if abs(len(one) - len(two)) > limit:
        return limit + 1
    before, row = None, list(range(len(two) + 1))
    for i, a in enumerate(one, 1):
        current = [i] + [0] * len(two)
        for j, b in enumerate(two, 1):
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (a != b))
            if before is not None and i > 1 and j > 1 and a == two[j - 2] and one[i - 2] == b:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, row = row, current
    return row[-1]


def text_case_tells(text: str) -> bool:
    """Return False when text has no lower-case letter, so capitals say nothing about a word."""
    return any(ch.islower() for ch in text)


def text_query_terms(text: str) -> list[str]:
    """Return a question's distinct terms, in order (see text_query_counts)."""
    return list(text_query_counts(text))


def _query_language(folded: list[str]) -> str:
    """Return a question's stemmer choice from its folded words: _stop_word_language's, but
    'mixed' (every stemmer) when it holds stop words of English and of Polish or Slovak
    both: a Slovak question quoting an English error message is stemmed both ways."""
    language = _stop_word_language(folded)
    if language != "unknown" and _STOP_EN_ONLY.intersection(folded) and _STOP_SLAVIC_ONLY.intersection(folded):
        return "mixed"
    return language


class _QueryPlan(NamedTuple):
    """How a question's words become terms: decided once per question (_query_plan)."""

    language: str                                 # its stop words' ('en', 'other', 'unknown', 'mixed')
    stop_words: frozenset[str]                    # the words it drops: stop words ...
    request_stop_words: frozenset[str]            # ... and request boilerplate
    stemmers: tuple[Callable[[str], str], ...]    # each content word is stemmed by every one
    case_tells: bool                              # capitals make a word code-like (text_case_tells)
    names: frozenset[str]                         # folded words written as personal names in a
                                                  # Polish or Slovak question (_name_stems)
    slavic: bool                                  # a question not told English: its longer words
                                                  # also meet their forms with a fleeting e


def _query_plan(text: str, folded: list[str], detected: str | None = None,
                rules: QueryRules = QUERY_RULES) -> _QueryPlan:
    """Return how a question is stemmed: its stop words' language's stemmers (rules.stemmers);
    a question whose stop words do not tell gets the Polish and Slovak stemmers only when its
    letters and endings say Polish or Slovak (detected: its language as already decided, else
    text_detect_language here): 'Generate a PKGBUILD file' keeps 'file' whole, 'kasa fiskalna
    zwolnienie' meets 'kasy'. The Polish and Slovak modal verbs are dropped only from a
    question in those languages."""
    language = _query_language(folded)
    stop_words = STOP_WORDS if language == "other" else _STOP_OUTSIDE_SLAVIC
    key = "unknown_en" if language == "unknown" and (detected or text_detect_language(text)) == "en" \
        else language
    case_tells = text_case_tells(text) or not rules.all_caps_rule
    slavic = key not in ("en", "unknown_en")
    names = text_personal_names(text, case_tells) if slavic else frozenset()   # Slavic names
    return _QueryPlan(language, stop_words, rules.request_stop_words, rules.stemmers[key], case_tells, names,
                      slavic)


def text_query_words(text: str, rules: QueryRules = QUERY_RULES) -> list[tuple[str, tuple[str, ...]]]:
    """Return each content word of a question as written (GTU_12 and e-mail whole) with its
    terms, stemmed as text_query_counts stems the whole question (its language decides the
    stemmers and stop words, not the word alone); stop words, contractions' endings and
    boilerplate left out."""
    text = _spoken(text)
    return _query_words(text, _query_plan(text, text_folded_words(text), rules=rules))


def _query_words(text: str, plan: _QueryPlan) -> list[tuple[str, tuple[str, ...]]]:
    """Return text_query_words of a question stemmed as plan says."""
    language, stop_words, request_stop_words, case_tells = plan.language, plan.stop_words, \
        plan.request_stop_words, plan.case_tells
    out = []
    for word in TEXT_QUESTION_WORD.findall(text):
        parts = [w for w in text_folded_words(word) if w not in stop_words and w not in request_stop_words]
        terms = {term: None for part in parts for term in _word_stems(part, plan)}
        if language == "en" and text_is_code_word(word, case_tells):
            terms.update(dict.fromkeys(text_stem(part) for part in parts))
        if terms:
            out.append((word, tuple(terms)))
    return out


def _word_stems(word: str, plan: _QueryPlan) -> dict[str, None]:
    """Return a folded question word's terms, in order: its stem under each of the plan's
    stemmers; for a personal name also its forms with and without a fleeting e and its
    nominatives' (_name_stems), and for another word of FLEETING_E_MIN_LETTERS or more in a
    question not told English its forms with and without a fleeting e (_fleeting_e_stems):
    the light stemmers keep the e of 'pojem' and drop it from 'pojmom'."""
    stems = dict.fromkeys(stem(word) for stem in plan.stemmers)
    if word in plan.names:
        return _name_stems(word, stems, plan.stemmers)
    return _fleeting_e_stems(stems) if plan.slavic and len(word) >= FLEETING_E_MIN_LETTERS else stems


def text_query_counts(text: str, rules: QueryRules = QUERY_RULES) -> dict[str, int]:
    """Return a question's terms with how often the question says each (its qtf), request
    boilerplate ('I am interested in') dropped. Each word counts under every stemmer its
    documents may have used (_QUERY_STEMMERS): a Polish or Slovak question under both light
    stemmers and text_stem; one whose stop words do not tell (e.g. 'zebra', 'GTU_12') under
    Porter too, so a short query meets documents of any language. An English question also gets the
    light stems of its code-like words, so they meet Polish documents ('WIS' is 'wi' to
    Porter, 'wis' to them); capitals make a word code-like only when the question has lower case."""
    text = _spoken(text)
    folded = text_folded_words(text)
    return _query_counts(text, folded, _query_plan(text, folded, rules=rules))


def _query_counts(text: str, folded: list[str], plan: _QueryPlan) -> dict[str, int]:
    """Return text_query_counts of a question (folded: its folded words) stemmed as plan says."""
    language, stop_words, request_stop_words, case_tells = plan.language, plan.stop_words, \
        plan.request_stop_words, plan.case_tells
    counts: Counter = Counter()
    for word in folded:
        if word not in stop_words and word not in request_stop_words:
            counts.update(dict.fromkeys(_word_stems(word, plan), 1))
    if language == "en":
        codes = " ".join(w for w in TEXT_QUESTION_WORD.findall(text) if text_is_code_word(w, case_tells))
        for word in text_folded_words(codes):
            if word not in STOP_WORDS and word not in request_stop_words and text_stem(word) not in counts:
                counts[text_stem(word)] = 1
    return dict(counts)


# --- Questions — a question checked once, at the edge (a transport, or a library function
# given plain text), with its language and terms; everything below takes it as it is

@dataclass(frozen=True)
class Question:
    """A checked question: its text, the language its words tell, its terms and the limit the
    caller asked for. Made once by question_make; RAG and the graph take it unchanged, so
    nothing below the edge validates it or decides its language again."""

    text: str                      # format characters removed, other controls made spaces, stripped
    language: str                  # 'pl', 'sk' or 'en' (text_detect_language), DEFAULT_QUESTION_LANGUAGE
    is_language_told: bool         # ... when this is False: its words do not tell (a code, a name alone)
    terms: Mapping[str, int] = field(hash=False)   # each term with how often the question says it
                                                   # (text_query_counts), read-only
    words: tuple[tuple[str, tuple[str, ...]], ...]   # each content word as written with its
                                                     # terms (text_query_words)
    limit: int | None = None       # the results the caller asked for; None: the tool's own

    def language_or(self, default: str) -> str:
        """Return the question's language, or default when its words do not tell."""
        return self.language if self.is_language_told else default


def question_make(text: Any, limit: int | None = None, field_name: str = "question",
                  rules: QueryRules = QUERY_RULES) -> Question:
    """Return the Question of text (a Question is returned as it is, with limit when given),
    its terms made by rules: the one validator of a question, for RAG and the graph, every
    transport and library edge. Raise InvalidQueryError naming field_name when text is not a
    string, holds nothing but spaces, controls and format characters, or is longer than
    MAX_QUESTION_CHARS."""
    if isinstance(text, Question):
        return text if limit is None else replace(text, limit=limit)
    if not isinstance(text, str):
        raise InvalidQueryError("the question must be text", (field_name,))
    cleaned = "".join(ch if ch.isprintable() or ch in "\t\n" else " "    # a format character (J\u200bPK)
                      # joins, never splits; a terminal's escape sequence is a space
                      for ch in TEXT_FORMAT_CHARS.sub("", TEXT_TERMINAL_ESCAPES.sub(" ", text))).strip()
    if not cleaned:
        raise InvalidQueryError("the question is empty", (field_name,))
    if len(text) > MAX_QUESTION_CHARS:
        raise InvalidQueryError(f"the question is longer than {MAX_QUESTION_CHARS} characters", (field_name,))
    told = text_detect_language(cleaned, None)
    language = told or DEFAULT_QUESTION_LANGUAGE
    spoken = _spoken(cleaned)
    folded = text_folded_words(spoken)
    plan = _query_plan(spoken, folded, language, rules)
    return Question(cleaned, language, told is not None,
                    MappingProxyType(_query_counts(spoken, folded, plan)),
                    tuple(_query_words(spoken, plan)), limit)
