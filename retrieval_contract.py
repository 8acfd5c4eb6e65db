"""retrieval_contract — the v1 JSON envelope shared by RAG, search and GraphRAG.

Every docs-qa answer, whatever tool produced it and whatever transport carries it
(CLI --json, HTTP, MCP), is one JSON object with the common fields below plus the
tool's own fields. This module owns those definitions; it does no I/O and imports
neither docs_qa nor graph_store.

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

import re
from dataclasses import dataclass, field, fields
from http import HTTPStatus
from typing import Any

__all__ = [
    "CONTRACT_VERSION", "STATUSES", "REASONS", "ERROR_DETAILS", "CONFIDENCE_LEVELS", "FRESHNESS_MODES",
    "OPTIONAL_FIELDS",
    "Source", "Envelope",
    "ContractError", "InvalidQueryError", "UnauthorizedError", "ForbiddenHostError", "NotFoundError",
    "MethodNotAllowedError", "InvalidRequestError", "RetrievalUnavailableError",
    "InternalError",
    "error_result", "envelope_schema", "error_schema", "source_schema", "schema_errors",
    "index_version_docs", "index_version_graph", "visible_text",
]

CONTRACT_VERSION = "v1"
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
