"""Explain recall: for every memory, why it was or was not in the request.

A decision is a plain dict (it goes into the turn record as JSON)::

    {"file": "feedback_no_pandas.md", "decision": "injected", "reason": "...",
     "path": "B", "age_days": 3, "bytes": 812, "indexed": true}

``decision`` is one of :data:`DECISIONS`; ``path`` names the recall path the decision is
about: ``A`` the index line in every request, ``B`` relevance prefetch, ``C`` the agent's
own tools. Extra keys (``sent_bytes``, ``truncated``, ``score``, and ``scope: "team"`` for a
team memory) appear where they apply.
In index mode no model is asked: :func:`explain_index` says which memories the index
exposes, which pointer lines fall past its load limits, and which files are orphans.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jupyter_memory.errors import InvalidPath
from jupyter_memory.memdir.freshness import SECONDS_PER_DAY, age_text
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.index import INDEX_NAME, load_for_model, normalize_file, parse_index
from jupyter_memory.memdir.scopes import TEAM_PREFIX, scope_of
from jupyter_memory.recall.conversation import agent_files, budget_used, surfaced_files
from jupyter_memory.recall.limits import SESSION_BUDGET_BYTES
from jupyter_memory.recall.session_view import RecallSession

__all__ = [
    "DECISIONS",
    "decision",
    "explain",
    "explain_index",
    "explain_static",
    "files_of",
    "for_record",
    "next_age_change",
    "record_decisions",
    "render_explain",
]

DECISIONS = ("injected", "truncated", "filtered", "skipped", "not_selected", "not_indexed")
"""Every decision value, in the order the explain table lists them."""


def decision(memory: Any, kind: str, reason: str, path: str, **extra: Any) -> dict[str, Any]:
    """One decision record for ``memory`` (a ``Memory`` or a file name)."""
    if kind not in DECISIONS:
        raise ValueError(f"unknown recall decision {kind!r}; use one of {', '.join(DECISIONS)}")
    if isinstance(memory, str):
        record: dict[str, Any] = {"file": memory, "decision": kind, "reason": reason,
                                  "path": path, "age_days": None, "bytes": None}
        scope = scope_of(memory)
    else:
        record = {"file": memory.file, "decision": kind, "reason": reason, "path": path,
                  "age_days": memory.age_days, "bytes": memory.bytes,
                  "indexed": bool(memory.indexed)}
        scope = getattr(memory, "scope", scope_of(memory.file))
    if scope != "private":  # a team memory says so (docs/reference.md#team-mode); private is the default
        record["scope"] = scope
    record.update(extra)
    return record


def _scan_all(memdir: Path) -> list[Any]:
    """Private and team memories (docs/reference.md#team-mode), each with its scope."""
    from jupyter_memory.memdir.team import scan_all
    from jupyter_memory.recall.caches import scan_cache

    return scan_all(memdir, limit=None, cache=scan_cache(memdir))


def _agent_seen(session: RecallSession, memdir: Path) -> set[str]:
    ctx = session.tool_context()
    return agent_files(memdir, list(ctx.read_files), set(ctx.written_memdir_files))


def next_age_change(memories: Iterable[Any]) -> float:
    """When the first of ``memories`` turns a day older (``inf`` for none): decisions that
    carry ages stay true until then."""
    return min((m.mtime + (m.age_days + 1) * SECONDS_PER_DAY for m in memories),
               default=math.inf)


def explain_index(session: RecallSession) -> list[dict[str, Any]]:
    """Decisions in index mode (path A), without any model call.

    A memory whose pointer line is inside the loaded part of ``MEMORY.md`` is
    ``injected`` (the model sees its hook and may read it, path C); a pointer past the
    200-line / 25,000-character cut is ``truncated``; a file without a pointer is
    ``not_indexed``, invisible here. Pointers to files that do not exist are ``skipped``.

    Every turn records these, so they are kept until the memdir, ``MEMORY.md``, the files
    the agent has seen or a memory's age in days change; the decision dicts are shared
    between turns and must not be modified.
    """
    memdir = session.memdir
    if memdir is None:
        return []
    return list(_explained_index(Path(memdir), session).decisions)


class _Explained:
    """Index-mode decisions as kept by the scan cache, with their capped forms for records."""

    __slots__ = ("_capped", "decisions")

    def __init__(self, decisions: list[dict[str, Any]]) -> None:
        self.decisions = decisions
        self._capped: dict[int, tuple[list[Any], dict[str, int]]] = {}

    def capped(self, limit: int) -> tuple[list[Any], dict[str, int]]:
        hit = self._capped.get(limit)
        if hit is None:
            hit = self._capped[limit] = for_record(self.decisions, limit)
        return list(hit[0]), dict(hit[1])


def _explained_index(memdir: Path, session: RecallSession) -> _Explained:
    from jupyter_memory.recall.caches import scan_cache

    cache = scan_cache(memdir)
    seen = frozenset(_agent_seen(session, memdir))
    team_dir = session.team_dir
    team = Path(team_dir) if team_dir is not None else None
    if team is not None and not team.is_relative_to(memdir):
        # A team folder elsewhere (teamMemoryDirectory) changes without the memdir's
        # mtimes moving, so its decisions are worked out afresh every time.
        return _explain_index(memdir, cache, seen, team)[0]
    return cache.memo(memdir, f"explain_index:{team}", seen,
                      lambda: _explain_index(memdir, cache, seen, team))


def record_decisions(session: RecallSession, prefetch: Any, limit: int) -> tuple[list[Any], dict[str, int]]:
    """What a turn record carries: :func:`explain`'s decisions capped by :func:`for_record`,
    from cached data, so a turn costs the same on a memdir of 200 or 10,000 files."""
    if prefetch is not None:
        capped = getattr(prefetch, "record_decisions", None)
        if capped is not None:
            return capped(limit)  # type: ignore[no-any-return]
        return for_record(list(prefetch.decisions), limit)
    if session.memdir is None:
        return [], {}
    if session.recall_mode != "prefetch":
        return _explained_index(Path(session.memdir), session).capped(limit)
    return for_record(explain(session), limit)


def _explain_index(
    memdir: Path, cache: Any, seen: frozenset[str], team: Path | None
) -> tuple[_Explained, float]:
    from jupyter_memory.memdir.team import scan_all

    memories = scan_all(memdir, limit=None, cache=cache)
    private = [m for m in memories if m.scope != "team"]
    out = _explain_one(private, memdir / INDEX_NAME, "", seen)
    if team is not None:
        shared = [m for m in memories if m.scope == "team"]
        out += _explain_one(shared, team / INDEX_NAME, TEAM_PREFIX, seen)
    return _Explained(out), next_age_change(memories)


def _explain_one(
    memories: list[Any], index_path: Path, prefix: str, seen: frozenset[str]
) -> list[dict[str, Any]]:
    """Path-A decisions for the memories of one index (the private or the team one)."""
    name = f"{prefix}{INDEX_NAME}"
    try:  # a symlinked index is never loaded, so explain none
        folder = Root.declare("memdir", index_path.parent)
        raw = folder.read(index_path, follow=False).decode("utf-8", errors="replace")
    except (OSError, InvalidPath):
        raw = ""
    index = parse_index(raw)
    loaded = load_for_model(raw)
    trimmed = raw.strip()
    leading = raw[: raw.find(trimmed)].count("\n") if trimmed else 0
    kept = loaded.text
    if loaded.warning and kept.endswith(loaded.warning):
        kept = kept[: -len(loaded.warning)].rstrip("\n")
    visible_lines = kept.count("\n") + 1 if kept else 0
    limit = " and ".join(loaded.limits_hit) or "size"
    out: list[dict[str, Any]] = []
    on_disk: set[str] = set()
    for memory in memories:
        local = memory.file[len(prefix):] if prefix else memory.file
        on_disk.add(normalize_file(local))
        entry = index.find(local)
        if entry is None:
            out.append(decision(
                memory, "not_indexed",
                f"on disk but {name} has no pointer line for it, so index-mode recall never "
                "shows it (the agent can still find it with Grep or Glob, path C); "
                "%memory doctor can add the line", "A"))
            continue
        if entry.line - leading > visible_lines:
            out.append(decision(
                memory, "truncated",
                f"its pointer is on line {entry.line} of {name}, past the {limit} limit of "
                "what is loaded, so the model never sees it; shorten the index", "A"))
            continue
        if memory.file in seen:
            out.append(decision(
                memory, "injected",
                f"pointer line {entry.line} of {name} is in every request, and the agent "
                "has read the file itself this session", "C"))
        else:
            out.append(decision(
                memory, "injected",
                f"pointer line {entry.line} of {name} is in every request; the body reaches "
                "the model only if the agent reads it (path C)", "A"))
    for entry in index.entries:
        if normalize_file(entry.file) not in on_disk:
            out.append(decision(
                prefix + normalize_file(entry.file), "skipped",
                f"{name} points at it (line {entry.line}) but the file does not exist", "A"))
    return out


def explain_static(session: RecallSession, reason: str | None = None) -> list[dict[str, Any]]:
    """Prefetch-mode decisions when no prefetch has run: what the conversation already has."""
    memdir = session.memdir
    if memdir is None:
        return []
    memdir = Path(memdir)
    messages = list(session.messages)
    surfaced = surfaced_files(messages)
    seen = _agent_seen(session, memdir)
    spent = budget_used(messages)
    if reason is None:
        reason = "no prefetch has run for a message yet in this session"
        if spent >= SESSION_BUDGET_BYTES:
            reason = (f"the session's recall budget is spent ({spent:,} of "
                      f"{SESSION_BUDGET_BYTES:,} bytes attached)")
    out = []
    for memory in _scan_all(memdir):
        if memory.file in surfaced:
            out.append(decision(memory, "injected",
                                "attached on an earlier turn and still in the conversation", "B"))
        elif memory.file in seen:
            out.append(decision(memory, "filtered",
                                "the agent already read or wrote it with its tools", "C"))
        else:
            out.append(decision(memory, "skipped", reason, "B"))
    return out


def explain(session: RecallSession, prefetch: Any = None) -> list[dict[str, Any]]:
    """Decisions for every memory of ``session``'s memdir.

    With ``prefetch`` (a :class:`~jupyter_memory.recall.prefetch.Prefetch`), its decisions.
    Otherwise, in prefetch mode, those of the session's latest prefetch (or, before the
    first, what the conversation already holds); in index mode, :func:`explain_index`.
    Memory off gives an empty list.
    """
    if prefetch is not None:
        return list(prefetch.decisions)
    if session.memdir is None:
        return []
    if session.recall_mode != "prefetch":
        return explain_index(session)
    latest = session.last_prefetch
    return list(latest.decisions) if latest is not None else explain_static(session)


def for_record(
    decisions: Sequence[Mapping[str, Any]], limit: int
) -> tuple[list[Mapping[str, Any]], dict[str, int]]:
    """At most ``limit`` decisions for a turn record, and how many of each kind were left out.

    A turn record travels in the cell output and the saved notebook, so it must not grow
    with the memdir: the decisions kept are the most telling ones (in the order of
    :data:`DECISIONS`, injected first; each kind in its original order), and the rest are
    counted. ``%memory why`` still lists every memory.
    """
    if len(decisions) <= limit:
        return list(decisions), {}
    buckets: dict[str, list[Mapping[str, Any]]] = {}
    for d in decisions:
        buckets.setdefault(str(d.get("decision")), []).append(d)
    kept: list[Mapping[str, Any]] = []
    omitted: dict[str, int] = {}
    order = [*DECISIONS, *sorted(k for k in buckets if k not in DECISIONS)]
    for kind in order:
        group = buckets.get(kind, [])
        room = max(limit - len(kept), 0)
        kept.extend(group[:room])
        if len(group) > room:
            omitted[kind] = len(group) - room
    return kept, omitted


# ----------------------------------------------------------------------------- rendering

_WORDS = {
    "injected": "injected",
    "truncated": "truncated",
    "filtered": "filtered",
    "skipped": "skipped",
    "not_selected": "not selected",
    "not_indexed": "not in index",
}


def _age(value: Any) -> str:
    return age_text(value) if isinstance(value, int) else "-"


def _size(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else "-"


def render_explain(decisions: Sequence[Mapping[str, Any]], *, width: int | None = None) -> str:
    """A plain-text table of ``decisions`` for ``%memory why``: one row per memory.

    Rows are grouped by decision (injected first); reasons are never cut, but when
    ``width`` is given, long reasons wrap under the reason column.
    """
    if not decisions:
        return "Recall: no memories to explain (memory is off or the memdir is empty)."
    order = {d: i for i, d in enumerate(DECISIONS)}
    rows = sorted(enumerate(decisions), key=lambda p: (order.get(str(p[1].get("decision")), 99), p[0]))
    counts = Counter(str(d.get("decision")) for d in decisions)
    summary = ", ".join(f"{counts[d]} {_WORDS[d]}" for d in DECISIONS if counts.get(d))
    table = [("DECISION", "PATH", "AGE", "BYTES", "FILE", "REASON")]
    for _, d in rows:
        kind = str(d.get("decision", "?"))
        table.append((_WORDS.get(kind, kind), str(d.get("path") or "-"), _age(d.get("age_days")),
                      _size(d.get("bytes")), str(d.get("file", "?")), str(d.get("reason", ""))))
    widths = [max(len(r[i]) for r in table) for i in range(5)]
    indent = sum(widths) + 2 * 5
    lines = [f"Recall decisions for {len(decisions)} memories: {summary}", ""]
    for row in table:
        left = "  ".join(cell.ljust(widths[i]) if i != 3 else cell.rjust(widths[i])
                         for i, cell in enumerate(row[:5]))
        reason = row[5]
        if width and width - indent > 20 and len(reason) > width - indent:
            chunks = _wrap(reason, width - indent)
            lines.append(f"{left}  {chunks[0]}")
            lines.extend(" " * indent + c for c in chunks[1:])
        else:
            lines.append(f"{left}  {reason}".rstrip())
    return "\n".join(lines)


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]


def files_of(decisions: Iterable[Mapping[str, Any]], kind: str) -> list[str]:
    """The files with decision ``kind`` (a convenience for front ends and tests)."""
    return [str(d["file"]) for d in decisions if d.get("decision") == kind]
