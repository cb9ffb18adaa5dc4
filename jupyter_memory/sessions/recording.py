"""Record every model exchange of a session, and replay it offline (SPEC §11).

A recording is one JSON file (by default ``<notebook stem>.recording.json`` beside the
notebook) holding, for each request the session sent, its digest, the request itself and
the response. Replay serves those responses from a small local server that speaks the
Messages API (``jupyter_memory.localapi``), so the agent runs exactly the code it runs against
the real API — the SDK, streaming, the tool loop — with no key and no network. A request
that is not in the recording is refused with the first difference, so a changed prompt or
a changed memory fails loudly instead of silently drifting.

Requests are compared after normalisation: the parts that change from one machine, folder
or day to the next are replaced by placeholders before hashing (see :class:`Normaliser`
and docs/sessions.md for the exact list). Responses are stored normalised too, and the
placeholders are filled with this machine's values when they are served, so a tool call
that read ``/old/folder/memory/x.md`` reads ``/new/folder/memory/x.md`` on replay.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from jupyter_memory._version import __version__
from jupyter_memory.context import prompts
from jupyter_memory.context.assemble import digest
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir.clock import now_iso
from jupyter_memory.memdir.fsutil import LOCK_NAME, atomic_write, is_temp_file

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session

__all__ = [
    "FORMAT",
    "MATCH_ENV",
    "MATCH_MODES",
    "REPLAY_ENV",
    "SUFFIX",
    "VERSION",
    "Normaliser",
    "Recorder",
    "Recording",
    "RecordingError",
    "ReplayMismatch",
    "Replayer",
    "controller",
    "conversation_view",
    "default_recording_path",
    "describe_changes",
    "describe_difference",
    "first_difference",
    "match_mode",
    "start_recording",
    "start_replay",
    "stop",
]

FORMAT = "jupyter-memory/recording"
VERSION = 1
SUFFIX = ".recording.json"
REPLAY_ENV = "JUPYTER_MEMORY_REPLAY"
"""When set to a recording file, a kernel's agent session replays it from the start."""
MATCH_ENV = "JUPYTER_MEMORY_REPLAY_MATCH"
"""``strict`` makes every replay match requests byte for byte (after normalising)."""
#: How replay matches a request to a recorded exchange, after vcrpy's ``match_on``:
#: ``conversation`` (the default) compares what the person and the model said, tool calls
#: and their results, and only warns about our own prompt text, tool descriptions and
#: settings; ``strict`` compares the whole request.
MATCH_MODES = ("conversation", "strict")

#: Keyword arguments of SDK calls that are client options, not part of the request body.
SDK_OPTIONS = frozenset({"timeout", "extra_headers", "extra_query", "extra_body", "stream"})

#: Path placeholders in order of preference when two of them have the same value.
PATH_PLACEHOLDERS = ("{{LOG}}", "{{MEMDIR}}", "{{TRANSCRIPTS}}", "{{NOTEBOOK}}", "{{PROJECT}}",
                     "{{CWD}}", "{{CONFIG}}", "{{HOME}}")
TODAY = "{{TODAY}}"
PLATFORM = "{{PLATFORM}}"
PYTHON = "{{PYTHON}}"
TIMESTAMP = "{{TIMESTAMP}}"
MTIME = "{{MTIME}}"

#: Largest memdir file copied into a recording's start snapshot.
SNAPSHOT_MAX_BYTES = 1_000_000
#: How long record and replay wait for work a turn started in the background (prefetch,
#: extraction, session notes), so that both runs see it finished at the same point.
SETTLE_SECONDS = 120.0

_MODIFIED = re.compile(
    r"(\bmodified:[ \t]*['\"]?)\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?"
    r"(?:Z|[+-]\d\d:?\d\d)?(['\"]?)"
)
#: The modification time of a memory in a manifest line: ``- [type] file.md (ISO): ...``.
_MANIFEST_TIME = re.compile(r"(\.md \()\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z(\))")
#: Any other moment in ISO form with its zone (a compaction's time in a cell's output).
_INSTANT = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")
INSTANT = "{{INSTANT}}"


class RecordingError(JupyterMemoryError):
    """A recording that cannot be read, written or replayed."""

    def _render_traceback_(self) -> list[str]:
        # IPython shows these lines instead of a traceback: the message is the point.
        return [f"{type(self).__name__}: {line}" if i == 0 else line
                for i, line in enumerate(str(self).splitlines())]


class ReplayMismatch(RecordingError):
    """A request made during replay is not in the recording."""


# --------------------------------------------------------------------------- normalising


@dataclass(frozen=True)
class Normaliser:
    """Replaces what differs between machines, folders and days by placeholders.

    Paths (the session's JSONL log, the memdir, the transcripts folder, the notebook, the
    project root, the working folder, the config base, home; each also in its resolved
    form) become ``{{LOG}}``, ``{{MEMDIR}}`` … ``{{HOME}}`` wherever they occur in a
    string, the longest first, and only where the path ends (``/tmp/p`` is not replaced
    inside ``/tmp/p2``). The date sentence of ``messages[0]`` becomes ``{{TODAY}}``, the
    platform and Python lines of the system prompt ``{{PLATFORM}}`` / ``{{PYTHON}}``. In
    requests only, a ``modified:`` timestamp in a memory's frontmatter becomes
    ``{{TIMESTAMP}}`` (memory files edited during the session carry the time of the edit)
    and the modification time in a manifest line (``- [type] file.md (time): …``, shown to
    the recall selector and the extraction agent) becomes ``{{MTIME}}``; any other moment
    written in ISO form with its zone (``2026-03-04T10:11:12Z``) becomes ``{{INSTANT}}``.
    """

    paths: tuple[tuple[str, str], ...]
    """(value, placeholder) pairs, longest value first."""
    texts: tuple[tuple[str, str], ...]
    """(exact text, text with placeholder) pairs for the date and environment lines."""

    @classmethod
    def for_session(cls, session: Session) -> Normaliser:
        from jupyter_memory.memdir.basedir import config_base, home_dir
        from jupyter_memory.memdir.location import transcripts_dir

        env = session.env
        location = session.location
        log = getattr(session, "log", None)
        values = [
            ("{{LOG}}", log.path if log is not None else None),
            ("{{MEMDIR}}", getattr(location, "memdir", None)),
            ("{{TRANSCRIPTS}}", transcripts_dir(session.cwd, env)),
            ("{{NOTEBOOK}}", session.notebook),
            ("{{PROJECT}}", session.project_root),
            ("{{CWD}}", session.cwd),
            ("{{CONFIG}}", config_base(env)),
            ("{{HOME}}", home_dir(env)),
        ]
        environment = session.environment()
        return cls.build(values, today=session.today(), platform=environment.platform,
                         python=environment.python_version)

    @classmethod
    def build(
        cls,
        values: Iterable[tuple[str, Any]],
        *,
        today: str = "",
        platform: str = "",
        python: str = "",
    ) -> Normaliser:
        """A normaliser for these (placeholder, path) pairs and environment facts."""
        seen: dict[str, str] = {}
        for placeholder, raw in values:
            if raw is None or str(raw) == "":
                continue
            for form in _path_forms(str(raw)):
                if len(form) >= 4 and form not in seen:
                    seen[form] = placeholder
        paths = tuple(sorted(seen.items(), key=lambda kv: (-len(kv[0]), kv[0])))
        texts = []
        if today:
            texts.append((prompts.date_block(today), prompts.date_block(TODAY)))
        if platform:
            texts.append((f"- Platform: {platform}\n", f"- Platform: {PLATFORM}\n"))
        if python:
            texts.append((f"- Python: {python}\n", f"- Python: {PYTHON}\n"))
        return cls(paths, tuple(texts))

    @property
    def placeholders(self) -> dict[str, str]:
        """Each placeholder and the value it stands for here (the first form found)."""
        out: dict[str, str] = {}
        for value, placeholder in sorted(self.paths, key=lambda kv: len(kv[0])):
            out.setdefault(placeholder, value)
        return out

    def _pattern(self) -> re.Pattern[str] | None:
        if not self.paths:
            return None
        alternatives = "|".join(re.escape(value) for value, _ in self.paths)
        # A path ends where no further name character follows; a dot counts as part of
        # the name only when a word character comes after it ("x.md" vs "x.").
        return re.compile(f"(?:{alternatives})(?![\\w\\-]|\\.\\w)")

    def text(self, value: str, *, timestamps: bool = False) -> str:
        """One string with every known volatile part replaced by its placeholder."""
        for exact, replacement in self.texts:
            if exact in value:
                value = value.replace(exact, replacement)
        pattern = self._pattern()
        if pattern is not None:
            lookup = dict(self.paths)
            value = pattern.sub(lambda m: lookup[m.group(0)], value)
        if timestamps:
            value = _MODIFIED.sub(lambda m: f"{m.group(1)}{TIMESTAMP}{m.group(2)}", value)
            value = _MANIFEST_TIME.sub(lambda m: f"{m.group(1)}{MTIME}{m.group(2)}", value)
            value = _INSTANT.sub(INSTANT, value)
        return value

    def request(self, body: Any) -> Any:
        """A request body as it is hashed and stored (timestamps normalised too)."""
        return _walk(body, lambda s: self.text(s, timestamps=True))

    def response(self, value: Any) -> Any:
        """A response or message as it is stored (paths, date and environment only)."""
        return _walk(value, self.text)

    def restore(self, value: Any) -> Any:
        """Placeholders replaced by this machine's values (for serving a response)."""
        places = self.placeholders
        texts = [(new, old) for old, new in self.texts]

        def fill(s: str) -> str:
            if "{{" not in s:
                return s
            for normalised, exact in texts:
                s = s.replace(normalised, exact)
            for placeholder, real in places.items():
                s = s.replace(placeholder, real)
            return s

        return _walk(value, fill)


def _path_forms(raw: str) -> list[str]:
    forms = [raw.rstrip("/") or raw]
    try:
        resolved = str(Path(raw).expanduser().resolve())
    except (OSError, RuntimeError):
        resolved = forms[0]
    if resolved not in forms:
        forms.append(resolved)
    return forms


def _walk(value: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, Mapping):
        return {k: _walk(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(v, fn) for v in value]
    return value


def _jsonable(value: Any) -> Any:
    """A deep copy made of plain JSON types (SDK arguments may hold tuples and the like)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


# --------------------------------------------------------------------------- differences


def first_difference(recorded: Any, now: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """Where two JSON values first differ: (path like ``messages[2].content[0].text``,
    recorded value, current value), or None when they are equal."""
    found = _difference(recorded, now, path, [0])
    return None if found is None else found[:3]


def _difference(a: Any, b: Any, path: str, counter: list[int]) -> tuple[str, Any, Any, int] | None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in list(a) + [k for k in b if k not in a]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in a:
                return sub, _MISSING, b[key], counter[0]
            if key not in b:
                return sub, a[key], _MISSING, counter[0]
            found = _difference(a[key], b[key], sub, counter)
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            sub = f"{path}[{i}]"
            if i >= len(a):
                return sub, _MISSING, b[i], counter[0]
            if i >= len(b):
                return sub, a[i], _MISSING, counter[0]
            found = _difference(a[i], b[i], sub, counter)
            if found is not None:
                return found
        return None
    counter[0] += 1
    if type(a) is type(b) and a == b:
        return None
    return path or "(the whole request)", a, b, counter[0]


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


_MISSING = _Missing()


def _excerpt(value: Any, other: Any, width: int = 60) -> str:
    """A short view of ``value`` centred on where it starts to differ from ``other``."""
    if value is _MISSING:
        return "(absent)"
    if not isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 2 * width else text[: 2 * width] + "…"
    at = 0
    if isinstance(other, str):
        while at < min(len(value), len(other)) and value[at] == other[at]:
            at += 1
    start = max(0, at - width // 2)
    end = min(len(value), start + width)
    piece = value[start:end]
    return ("…" if start else "") + json.dumps(piece, ensure_ascii=False) + ("…" if end < len(value) else "")


def describe_difference(recorded: Any, now: Any) -> str:
    """Two lines naming the first difference, each value shortened around it."""
    found = first_difference(recorded, now)
    if found is None:
        return "The two requests are identical."
    where, old, new = found
    return (
        f"First difference at {where}:\n"
        f"  recorded: {_excerpt(old, new)}\n"
        f"  now:      {_excerpt(new, old)}"
    )


# --------------------------------------------------------------------------- matching

_REMINDER_START = "<system-reminder>"
#: A reminder inside a longer text (session notes and compaction transcribe the
#: conversation into one string, reminders included).
_REMINDER_SPAN = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


def _is_reminder(block: Any) -> bool:
    """A text block of our own context (date, memory index, memories), not anyone's words."""
    text = block.get("text") if isinstance(block, Mapping) else block
    return isinstance(text, str) and text.lstrip().startswith(_REMINDER_START)


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def _result_view(content: Any) -> Any:
    if isinstance(content, list):
        return [b.get("text") if isinstance(b, Mapping) and b.get("type") == "text"
                else _strip_cache(b) for b in content]
    return content


def _strip_cache(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _strip_cache(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache(v) for v in value]
    return value


def conversation_view(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What a request says, without what the package adds around it.

    One entry per message: its role and, per block, the text people and the model wrote,
    each tool call (name and input) and each tool result. Left out: the system prompt,
    the tool list, model settings, cache markers and ``<system-reminder>`` blocks (the
    date, the memory index, attached memories, the cells run since the last turn; also
    where a side call quotes them inside a text), which replay only warns about.
    """
    view: list[dict[str, Any]] = []
    for message in request.get("messages") or []:
        if not isinstance(message, Mapping):
            continue
        parts: list[Any] = []
        for block in _blocks(message):
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text":
                if not _is_reminder(block):
                    text = block.get("text")
                    if isinstance(text, str):
                        text = _REMINDER_SPAN.sub("<system-reminder/>", text)
                    parts.append({"text": text})
            elif kind == "tool_use":
                parts.append({"tool_use": block.get("name"), "input": block.get("input")})
            elif kind == "tool_result":
                parts.append({"tool_result": _result_view(block.get("content")),
                              "is_error": bool(block.get("is_error"))})
            else:
                parts.append(_strip_cache(block))
        view.append({"role": message.get("role"), "content": parts})
    return view


def _system_view(system: Any) -> Any:
    if isinstance(system, list):
        return [b.get("text") if isinstance(b, Mapping) and "text" in b else _strip_cache(b)
                for b in system]
    return system


def _reminders(request: Mapping[str, Any]) -> list[tuple[int, str]]:
    """Every ``<system-reminder>`` of the messages: whole blocks and those inside a text."""
    out = []
    for index, message in enumerate(request.get("messages") or []):
        if not isinstance(message, Mapping):
            continue
        for block in _blocks(message):
            if isinstance(block, Mapping) and block.get("type") == "text":
                text = str(block.get("text"))
                spans = _REMINDER_SPAN.findall(text)
                out += [(index, span) for span in spans] or (
                    [(index, text)] if _is_reminder(block) else [])
    return out


def describe_changes(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """What differs between two requests with the same conversation, one phrase per part:
    the system prompt, each tool whose description or schema changed (or that was added or
    removed), the context blocks, any other setting. Empty when they are identical."""
    changes: list[str] = []
    old_system, new_system = _system_view(recorded.get("system")), _system_view(now.get("system"))
    if old_system != new_system:
        found = first_difference(old_system, new_system, "system")
        where = found[0] if found else "system"
        old, new = (found[1], found[2]) if found else (old_system, new_system)
        changes.append(f"the system prompt (at {where}: recorded {_excerpt(old, new, 40)}, "
                       f"now {_excerpt(new, old, 40)})")
    old_tools = {str(t.get("name")): _strip_cache(t) for t in recorded.get("tools") or []
                 if isinstance(t, Mapping)}
    new_tools = {str(t.get("name")): _strip_cache(t) for t in now.get("tools") or []
                 if isinstance(t, Mapping)}
    changed = [n for n in old_tools if n in new_tools and old_tools[n] != new_tools[n]]
    added = [n for n in new_tools if n not in old_tools]
    removed = [n for n in old_tools if n not in new_tools]
    if changed:
        changes.append("the description or schema of tool " + ", ".join(changed))
    if added:
        changes.append("new tool " + ", ".join(added))
    if removed:
        changes.append("tool no longer offered: " + ", ".join(removed))
    old_rem, new_rem = _reminders(recorded), _reminders(now)
    if old_rem != new_rem:
        found = first_difference([t for _, t in old_rem], [t for _, t in new_rem])
        if found is not None:
            changes.append(f"the context blocks (<system-reminder>: recorded "
                           f"{_excerpt(found[1], found[2], 40)}, now {_excerpt(found[2], found[1], 40)})")
    for key in [k for k in recorded if k not in ("system", "tools", "messages")] + \
            [k for k in now if k not in recorded and k not in ("system", "tools", "messages")]:
        old, new = recorded.get(key, _MISSING), now.get(key, _MISSING)
        if _strip_cache(old) != _strip_cache(new):
            changes.append(f"{key} (recorded {_excerpt(old, new, 30)}, now {_excerpt(new, old, 30)})")
    if not changes and _strip_cache(recorded.get("messages")) != _strip_cache(now.get("messages")):
        changes.append("cache markers in the messages")
    return changes


# --------------------------------------------------------------------------- the file


def default_recording_path(notebook: str | os.PathLike[str] | None, cwd: Path) -> Path:
    """``<notebook stem>.recording.json`` beside the notebook, else ``agent.recording.json``."""
    if notebook:
        nb = Path(notebook)
        return nb.with_name(nb.stem + SUFFIX)
    return Path(cwd) / ("agent" + SUFFIX)




def _blob_key(value: Any) -> str:
    raw = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:20]


class Recording:
    """The recording file: exchanges in the order they happened, turns, a start snapshot.

    Requests share their large, repeated parts (system prompt, tool list, each message)
    through a table of blobs, so a long session's file grows with the conversation, not
    with its square. :meth:`request` gives a request back whole.
    """

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = Path(path)
        self.data = data
        self._lock = threading.RLock()

    # -- creating and reading

    @classmethod
    def new(cls, path: Path, session: Session) -> Recording:
        """An empty recording of ``session`` as it stands now (saved at once).

        An earlier recording at ``path`` is replaced; any other existing file is refused,
        so a mistyped path never overwrites a notebook or data file.
        """
        path = Path(path)
        if path.exists() and not _is_recording_file(path):
            raise RecordingError(
                f"{path} exists and is not a recording; refusing to overwrite it. Give a "
                f"new file name, such as {default_recording_path(None, path.parent).name}."
            )
        norm = Normaliser.for_session(session)
        data: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "producer": f"jupyter-memory {__version__}",
            "created": now_iso(),
            "session_id": session.session_id,
            "model": session.config.model,
            "small_model": session.config.small_model,
            "today": session.today(),
            "notebook_known": bool(session.notebook),
            "notebook": Path(session.notebook).name if session.notebook else None,
            "placeholders": sorted(set(norm.placeholders)
                                   | {TODAY, PLATFORM, PYTHON, TIMESTAMP, MTIME, INSTANT}),
            "start": {
                "turn_count": session.turn_count,
                "messages": norm.response(_jsonable(session.messages)),
                "memdir": _memdir_snapshot(getattr(session.location, "memdir", None)),
                "instructions": _instruction_snapshot(session, norm),
            },
            "turns": [],
            "exchanges": [],
            "blobs": {},
        }
        recording = cls(path, data)
        recording.save()
        return recording

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Recording:
        """Read a recording, or say clearly why it cannot be used."""
        path = Path(path)
        try:
            raw = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise RecordingError(f"{path} is not a text file; it is not a recording.") from None
        except FileNotFoundError:
            raise RecordingError(
                f"No recording at {path}. Make one with %agent record (it writes "
                f"<notebook>{SUFFIX} beside the notebook), or give the right path."
            ) from None
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise RecordingError(f"{path} is not valid JSON ({exc}); it is not a recording.") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise RecordingError(f"{path} is not a jupyter-memory recording (no format {FORMAT!r}).")
        if data.get("version") != VERSION:
            raise RecordingError(
                f"{path} is a recording of format version {data.get('version')!r}; this "
                f"jupyter-memory reads version {VERSION}. Re-record it with this version."
            )
        for key, kind in (("exchanges", list), ("turns", list), ("blobs", dict), ("start", dict)):
            if not isinstance(data.get(key), kind):
                raise RecordingError(f"{path} is damaged: {key!r} is missing or not a {kind.__name__}.")
        return cls(path, data)

    def save(self) -> None:
        """Write the file atomically (mode 0600: it holds the whole conversation)."""
        with self._lock:
            text = json.dumps(self.data, ensure_ascii=False, indent=1)
        try:
            atomic_write(self.path, text + "\n", mode=0o600)
        except OSError as exc:
            raise RecordingError(f"Could not save the recording to {self.path}: {exc}") from exc

    # -- contents

    @property
    def exchanges(self) -> list[dict[str, Any]]:
        return cast("list[dict[str, Any]]", self.data["exchanges"])  # JSON from the file

    @property
    def turns(self) -> list[dict[str, Any]]:
        return cast("list[dict[str, Any]]", self.data["turns"])  # JSON from the file

    @property
    def start(self) -> dict[str, Any]:
        return cast("dict[str, Any]", self.data["start"])  # JSON from the file

    @property
    def session_id(self) -> str | None:
        return self.data.get("session_id")

    def notebook_beside(self) -> Path | None:
        """The recorded notebook as a file beside this recording, when it is there.

        Recordings name their notebook; older ones only say that it was known, and then
        the notebook whose name the recording's name starts with is taken.
        """
        folder = self.path.resolve().parent
        name = self.data.get("notebook")
        if isinstance(name, str) and name and "/" not in name and "\\" not in name:
            candidate = folder / name
            return candidate if candidate.is_file() else None
        if not self.data.get("notebook_known"):
            return None
        stem = self.path.name.removesuffix(SUFFIX)
        matches = sorted((p for p in folder.glob("*.ipynb") if stem.startswith(p.stem)),
                         key=lambda p: -len(p.stem))
        return matches[0] if matches else None

    def add_exchange(
        self, request: Mapping[str, Any], response: Mapping[str, Any], *, stream: bool
    ) -> dict[str, Any]:
        """Append one exchange (request and response already normalised)."""
        with self._lock:
            entry = {
                "seq": len(self.exchanges) + 1,
                "endpoint": "messages",
                "stream": stream,
                "digest": digest(request),
                "request": self._pack(request),
                "response": dict(response),
            }
            self.exchanges.append(entry)
            return entry

    def add_turn(self, info: dict[str, Any]) -> None:
        with self._lock:
            self.turns.append(info)

    def request(self, exchange: Mapping[str, Any]) -> dict[str, Any]:
        """The normalised request of ``exchange``, with its shared parts put back."""
        blobs = self.data["blobs"]

        def unref(value: Any) -> Any:
            if isinstance(value, dict) and set(value) == {"$blob"}:
                try:
                    return blobs[value["$blob"]]
                except KeyError:
                    raise RecordingError(
                        f"{self.path} is damaged: blob {value['$blob']} is missing."
                    ) from None
            return value

        packed = exchange["request"]
        out = {k: unref(v) for k, v in packed.items() if k != "messages"}
        if "messages" in packed:
            out["messages"] = [unref(m) for m in packed["messages"]]
        return {k: out[k] for k in packed}

    def _pack(self, request: Mapping[str, Any]) -> dict[str, Any]:
        blobs = self.data["blobs"]

        def ref(value: Any) -> dict[str, str]:
            key = _blob_key(value)
            blobs.setdefault(key, value)
            return {"$blob": key}

        packed: dict[str, Any] = {}
        for key, value in request.items():
            if key in ("system", "tools") and isinstance(value, list | str):
                packed[key] = ref(value)
            elif key == "messages" and isinstance(value, list):
                packed[key] = [ref(m) for m in value]
            else:
                packed[key] = value
        return packed


def _is_recording_file(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return FORMAT.encode() in head


def _memdir_snapshot(memdir: Any) -> list[dict[str, Any]]:
    """The memdir's text files as they are now, with their ages (for bundles)."""
    if memdir is None:
        return []
    root = Path(memdir)
    if not root.is_dir():
        return []
    out: list[dict[str, Any]] = []
    now = time.time()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink() or not path.is_file() or path.name == LOCK_NAME:
            continue
        if is_temp_file(path.name) or any(part.startswith(".") for part in Path(rel).parts):
            continue
        info = path.stat()
        if info.st_size > SNAPSHOT_MAX_BYTES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        out.append({"file": rel, "text": text, "age_seconds": round(max(0.0, now - info.st_mtime), 3)})
    return out


def _instruction_snapshot(session: Session, norm: Normaliser) -> list[dict[str, Any]]:
    """The instruction files the session loaded, raw, with normalised paths."""
    inst = session.instructions
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for file in [*getattr(inst, "files", []), *getattr(inst, "activated", [])]:
        path = str(file.path)
        if path in seen:
            continue
        seen.add(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        out.append({"path": norm.text(path), "scope": file.scope, "text": text})
    return out


# --------------------------------------------------------------------------- recording


def _response_dict(message: Any) -> dict[str, Any]:
    if hasattr(message, "model_dump"):
        data = message.model_dump(mode="json", exclude_none=True)
    else:
        data = _jsonable(message)
    keep = ("id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage")
    return {k: data[k] for k in keep if k in data}


def _settle_prefetch(turn: Any, round_index: int) -> None:
    """Make the call after a tool round take a running prefetch only once it finished.

    The reference attaches prefetched memories to that call only if they happen to be
    ready. Record and replay wait for them instead (the first call still never waits), so
    both runs attach the same memories at the same point, which replay needs to send
    identical requests. The agent loop takes prefetched messages before the call hooks
    run, so the wait goes into the prefetch object itself.
    """
    prefetch = getattr(turn, "prefetch", None)
    if round_index == 0 and prefetch is not None and not isinstance(prefetch, _SettledPrefetch):
        turn.prefetch = _SettledPrefetch(prefetch)


class _SettledPrefetch:
    """A prefetch whose messages are handed over only after it has finished."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def take_messages(self) -> list[dict[str, Any]]:
        self._inner.wait(SETTLE_SECONDS)
        return list(self._inner.take_messages())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _settle_session_notes(session: Session) -> None:
    """Wait for a session-notes refresh under way (it may have started with this call)."""
    from jupyter_memory.agent.session_notes import session_memory_for

    notes = session_memory_for(session)
    if notes is not None:
        notes.wait(SETTLE_SECONDS)


def _settle_background(session: Session) -> None:
    """Wait for the extraction agent and the session notes the finished turn started.

    Live, they run while the person goes on; recorded or replayed, the cell ends only when
    they are done, so their requests, their memory writes and their notices happen at the
    same point in both runs.
    """
    from jupyter_memory.agent.extraction import hook_for

    extraction = hook_for(session)
    if extraction is not None:
        extraction.wait(SETTLE_SECONDS)
    _settle_session_notes(session)


class _RecordedStream:
    """Wraps the SDK's stream manager; hands the final message over on a clean exit."""

    def __init__(self, manager: Any, on_final: Callable[[Any], None]) -> None:
        self._manager = manager
        self._on_final = on_final
        self._stream: Any = None

    def __enter__(self) -> Any:
        self._stream = self._manager.__enter__()
        return self._stream

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        final = self._stream.get_final_message() if exc_type is None else None
        result = self._manager.__exit__(exc_type, exc, tb)
        if final is not None:
            self._on_final(final)
        return result


class _RecordingMessages:
    def __init__(self, inner: Any, recorder: Recorder) -> None:
        self._inner = inner
        self._recorder = recorder

    def create(self, **kwargs: Any) -> Any:
        message = self._inner.create(**kwargs)
        if not kwargs.get("stream"):
            self._recorder.capture(kwargs, message, stream=False)
        return message

    def stream(self, **kwargs: Any) -> _RecordedStream:
        return _RecordedStream(
            self._inner.stream(**kwargs),
            lambda message: self._recorder.capture(kwargs, message, stream=True),
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class RecordingClient:
    """An SDK client whose message calls are written to the recording as they finish."""

    def __init__(self, inner: Any, recorder: Recorder) -> None:
        self._inner = inner
        self.messages = _RecordingMessages(inner.messages, recorder)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class Recorder:
    """Session hook and client factory that record every model exchange to a file."""

    kind = "record"

    def __init__(self, session: Session, recording: Recording) -> None:
        self.session = session
        self.recording = recording
        self._previous_factory: Any = None
        self.active = False

    def start(self) -> Recorder:
        session = self.session
        self._previous_factory = session.client_factory
        session.client_factory = self._make_client
        session.hooks.append(self)
        self.active = True
        return self

    def stop(self) -> None:
        if not self.active:
            return
        session = self.session
        session.client_factory = self._previous_factory
        if self in session.hooks:
            session.hooks.remove(self)
        self.active = False

    def _make_client(self) -> RecordingClient:
        if self._previous_factory is not None:
            inner = self._previous_factory()
        else:
            from jupyter_memory.agent.client import make_client

            config = self.session.config
            inner = make_client(self.session.env, max_retries=config.max_retries,
                                timeout=config.timeout)
        return RecordingClient(inner, self)

    def capture(self, kwargs: Mapping[str, Any], message: Any, *, stream: bool) -> None:
        """Store one finished exchange and save the file."""
        request = _jsonable({k: v for k, v in kwargs.items() if k not in SDK_OPTIONS})
        norm = Normaliser.for_session(self.session)
        self.recording.add_exchange(
            norm.request(request), norm.response(_response_dict(message)), stream=stream
        )
        self.recording.save()

    # -- turn hooks

    def before_call(self, turn: Any, round_index: int) -> None:
        _settle_prefetch(turn, round_index)
        _settle_session_notes(self.session)

    def after_turn(self, turn: Any, result: Any) -> None:
        _settle_background(self.session)
        record = result.record
        self.recording.add_turn({
            "turn": record.get("turn"),
            "status": record.get("status"),
            "today": self.session.today(),
            "session_id": record.get("session_id"),
            "started": record.get("started"),
            "ended": record.get("ended"),
            "prompt": Normaliser.for_session(self.session).text(turn.prompt),
            "requests": [{"sent": r.get("sent"), "id": r.get("id")} for r in record.get("requests", [])],
        })
        self.recording.save()

    def status(self) -> str:
        return (f"recording to {self.recording.path} "
                f"({len(self.recording.exchanges)} exchanges, {len(self.recording.turns)} turns)")


# --------------------------------------------------------------------------- replay


class Replayer:
    """Session hook and client factory that answer every model call from a recording.

    A local Messages API server (:class:`~jupyter_memory.localapi.server.FakeAnthropic`
    with a responder) looks each request up by its normalised digest. While replaying,
    the session takes the recording's session id, date, conversation start and turn
    count; it logs to ``<session id>/replays/<time>.jsonl`` beside the recorded session's
    log (never into it); and each turn record gets the recorded timestamps and message
    ids, so a replayed notebook shows the same outputs every time.
    """

    kind = "replay"

    def __init__(self, session: Session, recording: Recording, *, match: str = "conversation") -> None:
        if match not in MATCH_MODES:
            raise RecordingError(
                f"Unknown replay match {match!r}; use one of {', '.join(MATCH_MODES)} "
                f"(for example {MATCH_ENV}=strict)."
            )
        self.session = session
        self.recording = recording
        self.match = match
        self.used: set[int] = set()
        self.served = 0
        self.mismatches: list[str] = []
        self.warnings: list[str] = []
        self._warned: set[str] = set()
        self._warnings_reported = 0
        self._reported = 0
        self._turn_index = 0
        self._turn_mismatches = 0
        self._lock = threading.Lock()
        self._server: Any = None
        self._saved: dict[str, Any] = {}
        self.active = False
        self._today = str(recording.data.get("today") or session.today())
        self._by_digest: dict[str, list[dict[str, Any]]] = {}
        self._by_conversation: dict[str, list[dict[str, Any]]] = {}
        for exchange in recording.exchanges:
            self._by_digest.setdefault(exchange["digest"], []).append(exchange)
            key = digest({"messages": conversation_view(recording.request(exchange))})
            self._by_conversation.setdefault(key, []).append(exchange)

    def start(self) -> Replayer:
        from jupyter_memory.localapi.server import FakeAnthropic

        session = self.session
        self._server = FakeAnthropic(responder=self._respond).start()
        self._saved = {"factory": session.client_factory, "log": session.log,
                       "session_id": session.session_id}
        if self.recording.session_id:
            session.session_id = self.recording.session_id
        self._saved["notebook"] = session.notebook
        if not session.notebook:
            # A kernel started without its notebook's path (nbconvert, nbclient, papermill)
            # takes the recorded notebook's name beside the recording, so the session's
            # identity does not depend on how the kernel was started.
            adopted = self.recording.notebook_beside()
            if adopted is not None:
                session.notebook = str(adopted)
        if session.log is not None:
            self._swap_log(session.log, _replay_log(session))
        self._saved["today_override"] = session.today_override
        session.today_override = self._today
        session.reload()  # the memory store takes the new session id
        session.client_factory = self._make_client
        session.hooks.append(self)
        start = self.recording.start
        norm = Normaliser.for_session(session)
        session.messages[:] = norm.restore(start.get("messages") or [])
        session.turn_count = int(start.get("turn_count") or 0)
        self.active = True
        return self

    def stop(self) -> None:
        if not self.active:
            return
        session = self.session
        session.client_factory = self._saved["factory"]
        if self in session.hooks:
            session.hooks.remove(self)
        if self._saved["log"] is not None and session.log is not self._saved["log"]:
            self._swap_log(session.log, self._saved["log"])
        session.today_override = self._saved.get("today_override")
        if "notebook" in self._saved:
            session.notebook = self._saved["notebook"]
        if session.session_id != self._saved["session_id"]:
            session.session_id = self._saved["session_id"]
            session.reload()
        if self._server is not None:
            self._server.stop()
            self._server = None
        self.active = False

    def _swap_log(self, old: Any, new: Any) -> None:
        session = self.session
        if old in session.hooks:
            session.hooks[session.hooks.index(old)] = new
        session.log = new

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RecordingError("The replay server is not running; start the replay first.")
        return str(self._server.base_url)

    def _make_client(self) -> Any:
        import anthropic

        return anthropic.Anthropic(base_url=self.base_url, api_key="replay-needs-no-key",
                                   max_retries=0, timeout=self.session.config.timeout)

    # -- answering

    def _respond(self, body: dict[str, Any]) -> Any:
        from jupyter_memory.localapi.script import Fault

        request = {k: v for k, v in body.items() if k != "stream"}
        norm = Normaliser.for_session(self.session)
        normalised = norm.request(request)
        key = digest(normalised)
        with self._lock:
            if self.match == "strict":
                exchange = self._take(key, self._by_digest)
            else:
                exchange = self._take(digest({"messages": conversation_view(normalised)}),
                                      self._by_conversation)
            if exchange is None:
                problem = self._mismatch_message(normalised, key)
            else:
                self.served += 1
                problem = None
                if exchange["digest"] != key:
                    self._warn(exchange, normalised)
        if problem is None:
            assert exchange is not None
            turn = _turn_for(norm.restore(exchange["response"]), exchange["seq"])
            if isinstance(turn, str):
                problem = turn
            else:
                # The recorded reply already reflects max_tokens and stop sequences; keep
                # the server from cutting it again by its own token estimate.
                body["max_tokens"] = 1 << 30
                body.pop("stop_sequences", None)
                return turn
        with self._lock:
            self.mismatches.append(problem)
        return _fault_turn(Fault, problem)

    def _warn(self, exchange: Mapping[str, Any], normalised: Mapping[str, Any]) -> None:
        """Note, once per kind of change, how a served request differs from the recording."""
        changes = describe_changes(self.recording.request(exchange), normalised)
        fresh = [c for c in changes if c.split(" (")[0] not in self._warned]
        if not fresh:
            return
        self._warned.update(c.split(" (")[0] for c in fresh)
        self.warnings.append(
            f"Replay warning: the requests differ from {self.recording.path.name} in "
            f"{'; '.join(fresh)} (first seen at exchange {exchange['seq']}). The conversation "
            "matches, so the recorded answers are served; %agent replay --strict refuses this."
        )

    def take_new_warnings(self) -> list[str]:
        """Warnings added since the last call (for the front end to show once)."""
        with self._lock:
            out = self.warnings[self._warnings_reported:]
            self._warnings_reported = len(self.warnings)
            return out

    def _take(self, key: str, index: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any] | None:
        candidates = index.get(key) or []
        for exchange in candidates:
            if exchange["seq"] not in self.used:
                self.used.add(exchange["seq"])
                return exchange
        return candidates[-1] if candidates else None  # the same request again (a re-run)

    def _mismatch_message(self, normalised: dict[str, Any], key: str) -> str:
        unused = [e for e in self.recording.exchanges if e["seq"] not in self.used]
        total = len(self.recording.exchanges)
        head = f"Replay: this request is not in the recording {self.recording.path.name} "
        if not unused:
            return (
                head + f"(all {total} recorded exchanges have been served; digest {key[:19]}…). "
                "The notebook asks the model more than the recorded session did. Re-record "
                "with %agent record, or remove the extra agent cells."
            )
        strict = self.match == "strict"

        def view(request: Mapping[str, Any]) -> Any:
            return request if strict else {"messages": conversation_view(request)}

        mine = view(normalised)
        best, best_score, best_text = unused[0], -1, ""
        for exchange in unused[:50]:
            recorded = view(self.recording.request(exchange))
            found = _difference(recorded, mine, "", [0])
            score = found[3] if found is not None else 1 << 30
            if score > best_score:
                best, best_score = exchange, score
                best_text = describe_difference(recorded, mine)
        rule = ("identical to the recorded ones (strict matching, after normalising paths, "
                "the date and the platform)" if strict else
                "whose conversation (what the person and the model said, tool calls and "
                "results) matches the recorded one")
        return (
            head + f"(closest: exchange {best['seq']} of {total}).\n{best_text}\n"
            f"Replay answers only requests {rule}; see docs/sessions.md. Undo the change, "
            "or re-record the notebook with %agent record."
        )

    def take_new_mismatch(self) -> str | None:
        """The first mismatch since the last call (for the front end to raise), or None."""
        with self._lock:
            if self._reported >= len(self.mismatches):
                return None
            message = self.mismatches[self._reported]
            self._reported = len(self.mismatches)
            return message

    # -- turn hooks

    def before_turn(self, turn: Any) -> None:
        with self._lock:
            self._turn_mismatches = len(self.mismatches)
        recorded = self._recorded_turn()
        if recorded and recorded.get("today"):
            self._today = self.session.today_override = str(recorded["today"])

    def before_call(self, turn: Any, round_index: int) -> None:
        _settle_prefetch(turn, round_index)
        _settle_session_notes(self.session)

    def after_turn(self, turn: Any, result: Any) -> None:
        _settle_background(self.session)
        recorded = self._recorded_turn()
        self._turn_index += 1
        with self._lock:
            clean = len(self.mismatches) == self._turn_mismatches
        if recorded is None or not clean:
            return
        record = result.record
        for key in ("session_id", "started", "ended"):
            if recorded.get(key) is not None:
                record[key] = recorded[key]
        for mine, theirs in zip(record.get("requests", []), recorded.get("requests", []), strict=False):
            if theirs.get("sent") is not None:
                mine["sent"] = theirs["sent"]
            if theirs.get("id") is not None and "id" in mine:
                mine["id"] = theirs["id"]

    def _recorded_turn(self) -> dict[str, Any] | None:
        turns = self.recording.turns
        return turns[self._turn_index] if self._turn_index < len(turns) else None

    def status(self) -> str:
        total = len(self.recording.exchanges)
        return (f"replaying {self.recording.path} ({self.match} matching; {self.served} of "
                f"{total} exchanges served, {len(self.mismatches)} refused, "
                f"{len(self.warnings)} warnings)")


def _replay_log(session: Session) -> Any:
    """A session log writing to its own file, so a replay never adds to the original log.

    Its ``path`` stays the recorded session's log, which is what the conversation names
    (a compaction summary points the model at it, hooks get it as ``transcript_path``):
    the replayed requests and what the cells show, token counts included, are then the
    recorded ones. ``written_to`` is where this replay's turns go.
    """
    from jupyter_memory.transcript.log import TranscriptWriter
    from jupyter_memory.transcript.mirror import SessionLog, git_branch, log_path

    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    target = log_path(session).with_suffix("") / "replays" / f"replay-{stamp}.jsonl"

    class ReplayLog(SessionLog):
        written_to = target

        def writer(self) -> TranscriptWriter:
            if self._writer is None:
                self._writer = TranscriptWriter(
                    target, session_id=self.session.session_id, cwd=str(self.session.cwd),
                    version=__version__, git_branch=git_branch(self.session.cwd),
                )
            return self._writer

    return ReplayLog(session)


def _turn_for(response: Mapping[str, Any], seq: int) -> Any:
    """A fake-server turn that reproduces a recorded response, or why it cannot."""
    from jupyter_memory.localapi.script import STOP_REASONS, ToolCall, Turn

    content = list(response.get("content") or [])
    kinds = [b.get("type") for b in content]
    texts = [b for b in content if b.get("type") == "text"]
    uses = [b for b in content if b.get("type") == "tool_use"]
    shape_ok = (
        len(texts) + len(uses) == len(content)
        and len(texts) <= 1
        and (not texts or kinds[0] == "text")
    )
    if not shape_ok:
        return (
            f"Replay cannot reproduce recorded exchange {seq}: its response holds the blocks "
            f"{kinds}, and replay serves one text block followed by tool calls."
        )
    stop_reason = response.get("stop_reason")
    usage = {k: v for k, v in (response.get("usage") or {}).items() if v is not None}
    return Turn(
        text=texts[0].get("text", "") if texts else "",
        tool_calls=[ToolCall(u["name"], dict(u.get("input") or {}), id=u.get("id")) for u in uses],
        stop_reason=stop_reason if stop_reason in STOP_REASONS else None,
        stop_sequence=response.get("stop_sequence"),
        usage=usage,
    )


def _fault_turn(fault_cls: Any, message: str) -> Any:
    from jupyter_memory.localapi.script import Turn

    return Turn(fault=fault_cls("api_error", message=message, should_retry=False, retry_after=None))


# --------------------------------------------------------------------------- control


def controller(session: Session) -> Recorder | Replayer | None:
    """The recorder or replayer attached to ``session``, if any."""
    for hook in session.hooks:
        if isinstance(hook, Recorder | Replayer) and hook.active:
            return hook
    return None


def stop(session: Session) -> Recorder | Replayer | None:
    """Stop recording or replaying (the file stays); returns what was stopped."""
    current = controller(session)
    if current is not None:
        current.stop()
    return current


def start_recording(session: Session, path: str | os.PathLike[str]) -> Recorder:
    """Record every model exchange of ``session`` from now on into ``path`` (overwritten)."""
    stop(session)
    return Recorder(session, Recording.new(Path(path), session)).start()


def match_mode(strict: bool = False, configured: str = "", env: Mapping[str, str] | None = None) -> str:
    """The replay match in effect: ``strict`` when asked for by the flag, the setting or
    ``JUPYTER_MEMORY_REPLAY_MATCH``; ``conversation`` otherwise."""
    if strict:
        return "strict"
    env = os.environ if env is None else env
    chosen = (configured or env.get(MATCH_ENV, "") or "conversation").strip().lower()
    if chosen not in MATCH_MODES:
        raise RecordingError(
            f"Unknown replay match {chosen!r} (from {'the setting' if configured else MATCH_ENV}); "
            f"use one of {', '.join(MATCH_MODES)}."
        )
    return chosen


def start_replay(session: Session, path: str | os.PathLike[str], *, match: str = "conversation") -> Replayer:
    """Answer every model call of ``session`` from the recording at ``path``.

    ``match`` is ``conversation`` (the default: our own prompt text, tool descriptions and
    settings may differ, with a warning) or ``strict`` (the whole request must be equal).
    """
    recording = Recording.load(path)
    replayer = Replayer(session, recording, match=match)
    stop(session)
    return replayer.start()
