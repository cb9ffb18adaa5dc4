"""YAML frontmatter of memory files: read every shape found on real disks, edit surgically.

A memory file is ``---`` / YAML header / ``---`` / markdown body. Three header shapes exist:

* ``flat``: ``name``, ``description``, ``type`` at the top level;
* ``flat+origin``: the same plus ``originSessionId: <uuid>``;
* ``nested``: ``type``, ``originSessionId``, ``node_type: memory`` and ``modified`` under
  a ``metadata:`` map.

A file may also have no frontmatter (shape ``none``). :func:`parse` never raises and
never loses text: malformed YAML is retried with awkward values quoted, then read as an
empty header with :attr:`Document.error` set, while the raw header and the body are kept.
:func:`update` edits only the lines of the keys it changes, so hand-written headers keep
their comments, order and quoting. Rule: **a file without frontmatter is not given one**
— :func:`update` only ever replaces its body.

Defences: aliases are refused (a "billion laughs" header cannot expand), nesting deeper
than :data:`MAX_DEPTH` and headers longer than :data:`MAX_HEADER_CHARS` are not parsed.
Timestamps stay strings and only ``true``/``false`` are booleans (as in YAML 1.2), so
``modified: 2026-03-01T10:00:00Z`` reads back as the text that was written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any, NamedTuple

import yaml

from jupyter_memory.errors import JupyterMemoryError

__all__ = [
    "MAX_DEPTH",
    "MAX_HEADER_CHARS",
    "MODIFIED",
    "SHAPES",
    "Document",
    "FrontmatterError",
    "Split",
    "Stamp",
    "has_frontmatter",
    "load_yaml",
    "parse",
    "render",
    "split",
    "update",
]

SHAPES = ("flat", "flat+origin", "nested", "none")
MAX_HEADER_CHARS = 64 * 1024
"""Headers longer than this are kept as raw text but not parsed (memory headers are tiny)."""
MAX_DEPTH = 32
"""Deepest YAML nesting accepted; deeper headers are treated as malformed."""

_FIRST_KEYS = ("name", "description", "type")
_BOM = "\ufeff"


@dataclass
class Document:
    """A parsed memory file.

    ``fields`` is the header as a dict (``metadata`` stays a nested dict there; use
    :meth:`get` for a view that looks inside it). ``header`` is the raw YAML text between
    the fences (``None`` without frontmatter), ``body`` everything after the closing fence
    (the whole text, minus a BOM, when there is no frontmatter). ``error`` explains
    malformed YAML that was recovered or ignored.
    """

    fields: dict[str, Any]
    body: str
    header: str | None
    shape: str
    error: str | None = None
    bom: bool = False
    newline: str = "\n"
    metadata: dict[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        nested = self.fields.get("metadata")
        self.metadata = nested if isinstance(nested, dict) else {}

    def get(self, key: str, default: Any = None) -> Any:
        """A field from the top level, else from under ``metadata:``, else ``default``."""
        if key in self.fields:
            return self.fields[key]
        return self.metadata.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.fields or key in self.metadata

    @property
    def has_frontmatter(self) -> bool:
        return self.header is not None


# --------------------------------------------------------------------------- splitting


_CLOSE_RE = re.compile(r"^---[ \t]*\r?$", re.MULTILINE)


@dataclass
class Split:
    """A text cut at its frontmatter fences, every byte kept (the parts join to the text)."""

    bom: str
    opening: str  # the opening fence line with its line ending
    header: str  # raw text between the fences ("" or ending in "\n")
    closing: str  # the closing fence line, with its line ending when there is one
    body: str
    newline: str

    @property
    def body_start(self) -> int:
        """Where the body starts in the original text."""
        return len(self.bom) + len(self.opening) + len(self.header) + len(self.closing)


def split(text: str) -> Split | None:
    """Locate the frontmatter fences; ``None`` when the text has no complete frontmatter."""
    bom = _BOM if text.startswith(_BOM) else ""
    rest = text[len(bom) :]
    first_end = rest.find("\n")
    if first_end < 0 or rest[:first_end].rstrip(" \t\r") != "---":
        return None
    opening = rest[: first_end + 1]
    newline = "\r\n" if opening.endswith("\r\n") else "\n"
    match = _CLOSE_RE.search(rest, first_end + 1)
    if match is None:
        return None
    end = match.end()
    if end < len(rest) and rest[end] == "\n":
        end += 1
    return Split(
        bom=bom,
        opening=opening,
        header=rest[first_end + 1 : match.start()],
        closing=rest[match.start() : end],
        body=rest[end:],
        newline=newline,
    )


def has_frontmatter(text: str) -> bool:
    """Whether ``text`` starts with a complete ``---`` fenced header."""
    return split(text) is not None


# --------------------------------------------------------------------------- YAML loading


class _Loader(yaml.SafeLoader):
    """SafeLoader without aliases, depth-limited, timestamps as text, YAML 1.2 booleans."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in types-PyYAML
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed in frontmatter", event.start_mark
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                event = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in types-PyYAML
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_BOOL_TAG = "tag:yaml.org,2002:bool"
_DROPPED_TAGS = {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value", _BOOL_TAG}
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _DROPPED_TAGS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    _BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


class _NotAMapping(Exception):
    pass


class FrontmatterError(JupyterMemoryError, ValueError):
    """A YAML header that was refused (alias, too deep, too long) or is not valid YAML."""


def load_yaml(text: str, *, where: str = "frontmatter") -> Any:
    """The one hardened YAML loader for every header read from disk.

    Memories, rules (``.claude/rules/*.md``) and any other frontmatter come from files
    a cloned repository or a shared bundle can supply, so this refuses what lets a few
    bytes cost gigabytes: aliases (a "billion laughs" bomb is refused at its first
    ``*name``, before anything expands), nesting deeper than :data:`MAX_DEPTH`, and text
    longer than :data:`MAX_HEADER_CHARS`. Only safe YAML types are built; timestamps stay
    text. Raises :class:`FrontmatterError` saying what was refused and where.
    """
    if len(text) > MAX_HEADER_CHARS:
        raise FrontmatterError(
            f"{where} is {len(text):,} characters long, more than the {MAX_HEADER_CHARS:,} "
            "a header may have; it was not read. Move long content into the body."
        )
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        problem = str(getattr(exc, "problem", "") or "")
        refused = problem.startswith(("aliases", "nested deeper"))
        verdict = "was refused" if refused else "is not valid YAML"
        raise FrontmatterError(f"{where} {verdict}: {_describe(exc, 2)}") from None
    except RecursionError:
        raise FrontmatterError(
            f"{where} is nested too deeply to read; flatten it (at most {MAX_DEPTH} levels)."
        ) from None


def _load(header: str) -> dict[str, Any]:
    """YAML → dict with string keys; raises on malformed YAML or a non-mapping header."""
    loaded = yaml.load(header, Loader=_Loader)
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise _NotAMapping(
            f"the header is a {type(loaded).__name__}, not a map of key: value lines"
        )
    fields = {_key_text(key): value for key, value in loaded.items()}
    nested = fields.get("metadata")
    if isinstance(nested, dict):
        fields["metadata"] = {_key_text(key): value for key, value in nested.items()}
    return fields


def _key_text(key: Any) -> str:
    """Keys as the text that was written: ``null``/``true`` rather than Python's spelling."""
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _describe(exc: Exception, line_offset: int) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        problem = exc.problem or exc.context or "invalid YAML"
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            return f"{problem} (file line {mark.line + line_offset})"
        return problem
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# Fast path: most headers are plain ``key: value`` lines, maybe with a ``metadata:`` block.
_SIMPLE_KEY = re.compile(r"([ ]*)([A-Za-z_][A-Za-z0-9_.-]*):")


def _value_text(text: str) -> str:
    """``text`` without a final carriage return and the spaces and tabs before it.

    Values are cut this way, not by a lazy regex before ``[ \\t]*``: that backtracks over
    every blank of the line, quadratic on a long line of spaces.
    """
    return text.removesuffix("\r").rstrip(" \t")


def _simple_line(line: str) -> tuple[str, str, str | None] | None:
    """``(indent, key, value)`` of a ``key: value`` line of the fast path, or None.

    The value is None for ``key:`` alone; a value follows the colon after spaces.
    """
    match = _SIMPLE_KEY.match(line)
    if match is None:
        return None
    rest = line[match.end() :]
    if rest.startswith(" "):
        return match[1], match[2], _value_text(rest.lstrip(" "))
    return None if _value_text(rest) else (match[1], match[2], None)


def _load_simple(header: str) -> dict[str, Any] | None:
    """Parse headers made only of plain one-line strings, or ``None`` to use full YAML.

    Returns exactly what the YAML loader would, for the inputs it accepts; anything else
    (quotes, numbers, lists, comments, block scalars...) falls through to the YAML loader.
    """
    fields: dict[str, Any] = {}
    block: dict[str, Any] | None = None
    block_indent = ""
    for line in header.split("\n"):
        if not line.strip(" \r"):
            continue
        parts = _simple_line(line)
        if parts is None:
            return None
        indent, key, value = parts
        if value is not None and not _plain_ok(value, loader=_Loader):
            return None
        if not _plain_ok(key, loader=_Loader):
            return None
        if not indent:
            if value is None:
                if key != "metadata":
                    return None
                block = fields["metadata"] = {}
                block_indent = ""
                continue
            block = None
            fields[key] = value
            continue
        if block is None or value is None or (block_indent and indent != block_indent):
            return None
        block_indent = indent
        block[key] = value
    if isinstance(fields.get("metadata"), dict) and not fields["metadata"]:
        return None  # "metadata:" alone is null in YAML; let the loader say so
    return fields


_TAB_INDENT = re.compile(r"^[ \t]*\t[ \t]*", re.MULTILINE)
# A key (quoted, or plain up to the first colon) and its colon; the value is cut in
# Python (``_value_text``). Each part is greedy, so no blank is read more than a few times.
_KEY_HEAD = re.compile(
    r"(?P<indent>[ \t]*)"
    r"(?P<key>\"(?:[^\"\\]|\\.)*\"[ \t]*|'(?:[^']|'')*'[ \t]*"
    r"|[^\s#'\"\[\]{}&*!|>%@`,?:-][^:]*|-[^\s:][^:]*)"
    r":(?:[ \t]+|(?=\r?$))"
)


class _KeyLine(NamedTuple):
    indent: str
    key: str
    value: str  # without the blanks and carriage return that end the line
    cr: str


def _key_line(line: str) -> _KeyLine | None:
    """A ``key: value`` line of YAML (plain or quoted key, any value on the line), or None."""
    match = _KEY_HEAD.match(line)
    if match is None:
        return None
    rest = line[match.end() :]
    return _KeyLine(match["indent"], match["key"].rstrip(" \t"), _value_text(rest),
                    "\r" if rest.endswith("\r") else "")
_BLOCK_SCALAR = re.compile(r"[|>][1-9+-]{0,2}(?:\s+#.*)?")
_QUOTED = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^']|'')*'")


def _awkward(value: str) -> bool:
    """Values YAML refuses as written but that were plainly meant as text."""
    if not value or _BLOCK_SCALAR.fullmatch(value) or _QUOTED.fullmatch(value):
        return False
    if value[0] in ",&*!|>%@`\"'":
        return True
    if value[0] in "-?:" and (len(value) == 1 or value[1] in " \t"):
        return True
    if value[0] in "[{" and not _balanced(value):
        return True
    return ": " in value or value.endswith(":") or "\t" in value


def _balanced(value: str) -> bool:
    depth = 0
    for char in value:
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _quote_values(header: str, everything: bool) -> str:
    """Rewrite ``key: value`` lines with the value double-quoted (awkward ones, or all)."""
    out = []
    block_indent: int | None = None  # inside a | or > block scalar: text, not keys
    for line in header.split("\n"):
        if block_indent is not None:
            if not line.strip(" \t\r") or _indent_of(line) > block_indent:
                out.append(line)
                continue
            block_indent = None
        match = _key_line(line)
        if match is not None and _BLOCK_SCALAR.fullmatch(match.value):
            block_indent = len(match.indent)
        elif match is not None:
            value = match.value
            wanted = (
                bool(value) and not _BLOCK_SCALAR.fullmatch(value) and not _QUOTED.fullmatch(value)
                if everything
                else _awkward(value)
            )
            if wanted:
                line = f"{match.indent}{match.key}: {_double_quote(value)}{match.cr}"
        out.append(line)
    return "\n".join(out)


def _tab_variants(header: str) -> tuple[str, ...]:
    """YAML forbids tabs in indentation: try them as two spaces each, then as nothing."""
    if "\t" not in header:
        return (header,)
    spaced = _TAB_INDENT.sub(lambda m: m.group(0).replace("\t", "  "), header)
    dropped = _TAB_INDENT.sub(lambda m: m.group(0).replace("\t", ""), header)
    return (spaced, dropped)


def _recover(header: str, first_error: Exception, line_offset: int) -> tuple[dict[str, Any], str]:
    """Retry a malformed header with tabs expanded and values quoted; else an empty header."""
    reason = _describe(first_error, line_offset)
    tried = {header}
    for fixed in _tab_variants(header):
        for attempt in (fixed, _quote_values(fixed, False), _quote_values(fixed, True)):
            if attempt in tried:
                continue
            tried.add(attempt)
            try:
                fields = _load(attempt)
            except Exception:
                continue
            return fields, f"malformed YAML frontmatter ({reason}); read after quoting values"
    return {}, f"malformed YAML frontmatter ({reason}); header ignored, body kept"


def _read_header(header: str, line_offset: int) -> tuple[dict[str, Any], str | None]:
    if len(header) > MAX_HEADER_CHARS:
        return {}, f"frontmatter longer than {MAX_HEADER_CHARS} characters; header ignored"
    simple = _load_simple(header)
    if simple is not None:
        return simple, None
    try:
        return _load(header), None
    except _NotAMapping as exc:
        return {}, f"malformed YAML frontmatter ({exc}); header ignored, body kept"
    except Exception as exc:
        return _recover(header, exc, line_offset)


def parse(text: str) -> Document:
    """Split ``text`` into header fields and body; never raises, never drops text."""
    parts = split(text)
    if parts is None:
        bom = text.startswith(_BOM)
        newline = "\r\n" if "\r\n" in text[:4096] else "\n"
        return Document({}, text[1:] if bom else text, None, "none", None, bom, newline)
    fields, error = _read_header(parts.header, 2)
    return Document(
        fields=fields,
        body=parts.body,
        header=parts.header,
        shape=_shape(fields),
        error=error,
        bom=bool(parts.bom),
        newline=parts.newline,
    )


def _shape(fields: Mapping[str, Any]) -> str:
    if isinstance(fields.get("metadata"), dict):
        return "nested"
    if "originSessionId" in fields:
        return "flat+origin"
    return "flat"


# --------------------------------------------------------------------------- rendering values


_NEEDS_ESCAPE = re.compile(
    '[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff\u2028\u2029"\\\\\n\r\t]'
)
_NAMED_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\x00": "\\0",
    "\x85": "\\N",
    "\u2028": "\\L",
    "\u2029": "\\P",
}
_UNSAFE_START = set("-?:,[]{}#&*!|>'\"%@`")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff\u2028\u2029]")


def _escape_char(match: re.Match[str]) -> str:
    char = match.group(0)
    named = _NAMED_ESCAPES.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02X}" if code <= 0xFF else f"\\u{code:04X}"


def _double_quote(text: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, text) + '"'


def _plain_ok(
    text: str, flow: bool = False, loader: type[yaml.SafeLoader] = yaml.SafeLoader
) -> bool:
    """Whether ``text`` can be written unquoted and still read back as this exact string.

    Conservative on purpose: when writing, anything another YAML reader (YAML 1.1 or 1.2)
    could take for a number, boolean, date or null is quoted, so the reference reads it as
    text too. ``loader=_Loader`` asks the narrower question "does our loader read it as
    this string", which is what the fast parsing path needs.
    """
    if not text or text != text.strip() or text[0] in _UNSAFE_START or _CONTROL.search(text):
        return False
    if ": " in text or " #" in text or text.endswith(":"):
        return False
    if flow and any(char in text for char in ",[]{}?:"):
        return False
    for _tag, regex in loader.yaml_implicit_resolvers.get(text[0], ()):
        if regex.match(text):
            return False
    return True


def _scalar(value: Any, flow: bool = False) -> str:
    """One YAML value on one line (collections in flow style)."""
    if isinstance(value, Stamp):
        return value.like("")
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        if "." not in text:  # YAML 1.1 floats need a dot: 1e+20 -> 1.0e+20
            mantissa, _, exponent = text.partition("e")
            text = f"{mantissa}.0e{exponent}" if exponent else f"{mantissa}.0"
        return text
    if isinstance(value, Mapping):
        items = ", ".join(f"{_scalar(str(k), True)}: {_scalar(v, True)}" for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, (list, tuple, set, frozenset)):
        return "[" + ", ".join(_scalar(item, True) for item in value) + "]"
    if isinstance(value, (datetime, date)):
        value = value.isoformat()
    elif isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", errors="replace")
    text = value if isinstance(value, str) else str(value)
    return text if _plain_ok(text, flow) else _double_quote(text)


def _key(key: Any) -> str:
    return _scalar(str(key), flow=True)


def _ordered(fields: Mapping[str, Any]) -> list[tuple[str, Any]]:
    first = [(key, fields[key]) for key in _FIRST_KEYS if key in fields]
    return first + [(str(k), v) for k, v in fields.items() if k not in _FIRST_KEYS]


def _block(fields: Mapping[str, Any], indent: str, newline: str) -> list[str]:
    lines = []
    for key, value in fields.items():
        if isinstance(value, Mapping) and value:
            lines.append(f"{indent}{_key(key)}:{newline}")
            lines.extend(_block(value, indent + "  ", newline))
        else:
            lines.append(f"{indent}{_key(key)}: {_scalar(value)}{newline}")
    return lines


def render(fields: Mapping[str, Any], body: str) -> str:
    """A new memory file: ``---``, the fields, ``---``, then ``body`` exactly as given.

    Field order is ``name``, ``description``, ``type``, then the rest as given. Values
    are one-line YAML scalars (lists in flow style); a dict value such as ``metadata``
    becomes an indented block. The fences are written even for no fields, so a body that
    itself starts with ``---`` can never be mistaken for a header.
    """
    lines = ["---\n", *_block(dict(_ordered(fields)), "", "\n"), "---\n"]
    return "".join(lines) + body


# --------------------------------------------------------------------------- surgical update


MODIFIED = "modified"
"""The header key that holds the time of the last write (ISO 8601)."""

_STAMP = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})"
    r"(?:(?P<sep>[Tt ])(?P<hm>\d{2}:\d{2})(?::(?P<sec>\d{2})(?:\.(?P<frac>\d+))?)?"
    r"(?P<space>[ ]?)(?P<tz>[Zz]|[+-]\d{2}(?::?\d{2})?)?)?"
)


@dataclass(frozen=True)
class Stamp:
    """The time of a write, as a value for :func:`update`: it is written in the form of the
    timestamp it replaces (quotes, precision, separator, zone), so a file keeps the shape
    its writer gave it; a new one takes the reference's form, ``2026-10-14T08:03:51.207Z``.
    """

    moment: datetime

    def like(self, inline: str) -> str:
        """This time written the way ``inline`` (the old value, as written) is."""
        raw = inline.strip()
        quote = ""
        if raw[:1] in "\"'" and _QUOTED.fullmatch(raw):
            quote, raw = raw[0], raw[1:-1]
        found = _STAMP.fullmatch(raw)
        if found is None:
            return self.like("2000-01-01T00:00:00.000Z")
        return quote + self._shaped(found) + quote

    def _shaped(self, found: re.Match[str]) -> str:
        moment = self.moment.astimezone(timezone.utc)
        tz = found["tz"] or ""
        if tz and tz[0] in "+-":
            hours, minutes = int(tz[1:3]), int(tz[-2:]) if len(tz) > 3 else 0
            sign = -1 if tz[0] == "-" else 1
            moment = moment.astimezone(timezone(sign * timedelta(hours=hours, minutes=minutes)))
        if found["hm"] is None:
            return moment.date().isoformat()
        text = moment.date().isoformat() + found["sep"] + moment.strftime("%H:%M")
        if found["sec"] is not None:
            text += moment.strftime(":%S")
            if found["frac"] is not None:
                digits = len(found["frac"])
                text += "." + f"{moment.microsecond:06d}".ljust(digits, "0")[:digits]
        return text + found["space"] + tz


_GAP = re.compile(r"(?:[ \t]*\r?\n)+")


def _with_gap(old_body: str, new_body: str) -> str:
    """``new_body`` with the blank lines that opened ``old_body`` (the reference writes one
    after the closing fence), unless it opens with its own."""
    gap = _GAP.match(old_body)
    if gap is None or not new_body or new_body[:1] in "\r\n":
        return new_body
    return gap.group(0) + new_body



@dataclass
class _Entry:
    key: str
    start: int  # index of the key line
    end: int  # one past the last line of its value
    indent: str
    inline: str  # the value written on the key line itself


def _unquote_key(raw: str) -> str:
    if raw[:1] == '"':
        try:
            loaded = yaml.load(raw, Loader=_Loader)
        except Exception:
            return raw[1:-1]
        return str(loaded)
    if raw[:1] == "'":
        return raw[1:-1].replace("''", "'")
    return raw


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _entries(lines: list[str], start: int, stop: int, indent: int) -> list[_Entry]:
    """The ``key: value`` entries written at exactly ``indent`` within ``lines[start:stop]``."""
    entries: list[_Entry] = []
    current: _Entry | None = None
    for index in range(start, stop):
        line = lines[index].rstrip("\n")
        stripped = line.strip(" \t\r")
        if current is not None:
            line_indent = _indent_of(line)
            is_item = stripped.startswith("-") and line_indent == indent
            if not stripped or line_indent > indent or is_item:
                current.end = index + 1
                continue
            entries.append(current)
            current = None
        if not stripped or stripped.startswith("#") or _indent_of(line) != indent:
            continue
        match = _key_line(line)
        if match is None:
            continue
        current = _Entry(_unquote_key(match.key), index, index + 1, match.indent, match.value)
    if current is not None:
        entries.append(current)
    for entry in entries:  # blank lines after a value separate entries; they are not its value
        while entry.end > entry.start + 1 and not lines[entry.end - 1].strip(" \t\r\n"):
            entry.end -= 1
    return entries


def _child_indent(lines: list[str], entry: _Entry) -> int | None:
    for index in range(entry.start + 1, entry.end):
        stripped = lines[index].strip(" \t\r\n")
        if stripped and not stripped.startswith("#"):
            return _indent_of(lines[index])
    return None


def _line_end(line: str, newline: str) -> str:
    if line.endswith("\r\n"):
        return "\r\n"
    return "\n" if line.endswith("\n") else newline


def _entry_value(lines: list[str], entry: _Entry) -> tuple[bool, Any]:
    """``(True, value)`` of an entry as the loader reads it, or ``(False, None)`` when its
    lines cannot be read on their own (a malformed header)."""
    width = len(entry.indent)
    text = "".join(line[width:] if line[:width] == entry.indent else line
                   for line in lines[entry.start : entry.end])
    try:
        loaded = yaml.load(text, Loader=_Loader)
    except Exception:
        return False, None
    if not isinstance(loaded, dict) or len(loaded) != 1:
        return False, None
    return True, next(iter(loaded.values()))


def _same(old: Any, new: Any) -> bool:
    """Whether writing ``new`` would say what ``old`` already says (``1`` is not ``"1"``)."""
    return type(old) is type(new) and bool(old == new)


def _styled(inline: str, value: Any) -> str:
    """``value`` written in the quoting style of the value it replaces (``inline``)."""
    if not isinstance(value, str):
        return _scalar(value)
    if inline[:1] == '"' and _QUOTED.fullmatch(inline):
        return _double_quote(value)
    if inline[:1] == "'" and _QUOTED.fullmatch(inline) and not _CONTROL.search(value):
        return "'" + value.replace("'", "''") + "'"
    return _scalar(value)


def _apply(lines: list[str], key: str, value: Any, newline: str, nested_shape: bool) -> list[str]:
    """Set (or with ``None`` remove) one key, touching only that key's lines.

    A key whose value is already ``value`` keeps its lines as written (its quotes, its
    comment); a changed value keeps the quoting style of the one it replaces.
    """
    top = _entries(lines, 0, len(lines), 0)
    here = [entry for entry in top if entry.key == key]
    indent = ""
    if not here:
        meta = next((e for e in top if e.key == "metadata"), None)
        child = _child_indent(lines, meta) if meta is not None and not meta.inline else None
        if meta is not None and child is not None:
            children = _entries(lines, meta.start + 1, meta.end, child)
            here = [entry for entry in children if entry.key == key]
            indent = " " * child if not children else children[0].indent
            if not here and nested_shape:
                if value is None:
                    return lines
                end = max((c.end for c in children), default=meta.start + 1)
                new = f"{indent}{_key(key)}: {_written(value)}{newline}"
                return [*lines[:end], new, *lines[end:]]
        elif meta is not None and meta.inline and nested_shape:
            return _apply_flow_metadata(lines, meta, key, value)
    if not here:
        if value is None:
            return lines
        return [*lines, f"{_key(key)}: {_written(value)}{newline}"]
    if value is not None and len(here) == 1 and not isinstance(value, Stamp):
        readable, old = _entry_value(lines, here[0])
        if readable and _same(old, value):
            return lines
    result: list[str] = []
    position = 0
    for entry in here:
        result.extend(lines[position : entry.start])
        if value is not None:
            eol = _line_end(lines[entry.start], newline)
            if isinstance(value, Stamp):
                written = value.like(entry.inline)
            else:
                written = _styled(entry.inline, value)
            result.append(f"{entry.indent}{_key(key)}: {written}{eol}")
        position = entry.end
    result.extend(lines[position:])
    return result


def _written(value: Any) -> str:
    """A new key's value: a :class:`Stamp` in the reference's own form, else a scalar."""
    return value.like("") if isinstance(value, Stamp) else _scalar(value)


def _apply_flow_metadata(lines: list[str], meta: _Entry, key: str, value: Any) -> list[str]:
    """``metadata: {…}`` written on one line: rewrite that one line with the change."""
    try:
        current = yaml.load(meta.inline, Loader=_Loader)
    except Exception:
        current = None
    if not isinstance(current, dict):
        current = {}
    current = {str(k): v for k, v in current.items()}
    if value is None:
        current.pop(key, None)
    elif isinstance(value, Stamp):
        current[key] = value.like(str(current.get(key, ""))).strip("\"'")
    else:
        current[key] = value
    end = _line_end(lines[meta.start], "\n")
    rewritten = f"{meta.indent}{_key('metadata')}: {_scalar(current)}{end}"
    return [*lines[: meta.start], rewritten, *lines[meta.start + 1 :]]


def update(text: str, changes: Mapping[str, Any], *, body: str | None = None) -> str:
    """Change some header keys and/or the body, leaving every other byte as it was.

    Each key in ``changes`` is rewritten where it already lives (top level, else under
    ``metadata:``) as a one-line YAML value; every other header line stays byte for byte.
    A value of ``None`` removes the key; a value equal to the one written keeps its line
    as it is (quotes included), and a changed one keeps the old value's quoting. A
    :class:`Stamp` (``modified``) takes the form of the timestamp it replaces. New keys go
    at the top level of a flat header and under ``metadata:`` of a nested one. ``body``,
    when given, replaces the body, after the blank line that opened the old one. A text
    without frontmatter is **not** given one: its field changes are ignored and only the
    body is replaced. Never raises; works on malformed headers too (the edit is textual).
    """
    parts = split(text)
    if parts is None:
        if body is None:
            return text
        return (_BOM if text.startswith(_BOM) else "") + body
    lines = [line + "\n" for line in parts.header.split("\n")[:-1]]
    if changes:
        nested = _shape(_read_header(parts.header, 2)[0]) == "nested"
        for key, value in changes.items():
            lines = _apply(lines, str(key), value, parts.newline, nested)
    closing = parts.closing
    new_body = parts.body if body is None else _with_gap(parts.body, body)
    if new_body and not closing.endswith("\n"):
        closing += parts.newline
    return parts.bom + parts.opening + "".join(lines) + closing + new_body
