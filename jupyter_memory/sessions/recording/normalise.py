"""What differs between machines, folders and days, replaced by placeholders.

Requests are hashed and compared after :class:`Normaliser` has replaced those parts, and
responses are stored with them; on replay the placeholders are filled with this machine's
values (docs/sessions.md lists every placeholder).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_memory.context import prompts

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session

__all__ = [
    "INSTANT",
    "MTIME",
    "PATH_PLACEHOLDERS",
    "PLATFORM",
    "PYTHON",
    "TIMESTAMP",
    "TODAY",
    "Normaliser",
    "jsonable",
]

#: Path placeholders in order of preference when two of them have the same value.
PATH_PLACEHOLDERS = ("{{LOG}}", "{{MEMDIR}}", "{{TRANSCRIPTS}}", "{{NOTEBOOK}}", "{{PROJECT}}",
                     "{{CWD}}", "{{CONFIG}}", "{{HOME}}", "{{KERNEL}}")
TODAY = "{{TODAY}}"
PLATFORM = "{{PLATFORM}}"
PYTHON = "{{PYTHON}}"
TIMESTAMP = "{{TIMESTAMP}}"
MTIME = "{{MTIME}}"

_MODIFIED = re.compile(
    r"(\bmodified:[ \t]*['\"]?)\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?"
    r"(?:Z|[+-]\d\d:?\d\d)?(['\"]?)"
)
#: The modification time of a memory in a manifest line: ``- [type] file.md (ISO): ...``.
_MANIFEST_TIME = re.compile(r"(\.md \()\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z(\))")
#: Any other moment in ISO form with its zone (a compaction's time in a cell's output).
_INSTANT = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")
INSTANT = "{{INSTANT}}"


@dataclass(frozen=True)
class Normaliser:
    """Replaces what differs between machines, folders and days by placeholders.

    Paths (the session's JSONL log, the memdir, the transcripts folder, the notebook, the
    project root, the working folder, the config base, home; each also in its resolved
    form) become ``{{LOG}}``, ``{{MEMDIR}}`` … ``{{HOME}}`` (and ``{{KERNEL}}``, the kernel's folder) wherever they occur in a
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
        log = session.log
        values = [
            ("{{LOG}}", log.path if log is not None else None),
            ("{{MEMDIR}}", location.memdir),
            ("{{TRANSCRIPTS}}", transcripts_dir(session.cwd, env)),
            ("{{NOTEBOOK}}", session.notebook),
            ("{{PROJECT}}", session.project_root),
            ("{{CWD}}", session.cwd),
            ("{{CONFIG}}", config_base(env)),
            ("{{HOME}}", home_dir(env)),
            # the kernel's own folder, when the session's project is elsewhere (a notebook
            # that names its path, as 06a does): files it made beside the project
            ("{{KERNEL}}", os.getcwd()),
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
    # As the page names it with Agent.display_roots (widgets/roots.py): a cell's output
    # that the agent is sent may show "<tmp>/..." for a path in the temp folder.
    tmp = tempfile.gettempdir().rstrip("/")
    for form in list(forms):
        if form.startswith(tmp + "/"):
            forms.append("<tmp>" + form[len(tmp):])
    return forms


def _walk(value: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, Mapping):
        return {k: _walk(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(v, fn) for v in value]
    return value


def jsonable(value: Any) -> Any:
    """A deep copy made of plain JSON types (SDK arguments may hold tuples and the like)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))
