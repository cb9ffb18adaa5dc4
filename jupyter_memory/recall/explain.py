"""Explain recall: for every memory, why it was or was not in the request.

A decision is a plain dict (it goes into the turn record as JSON)::

    {"file": "feedback_no_pandas.md", "decision": "injected", "reason": "...",
     "path": "B", "age_days": 3, "bytes": 812, "indexed": true}

``decision`` is one of :data:`DECISIONS`; ``path`` names the recall path the decision is
about: ``A`` the index line in every request, ``B`` relevance prefetch, ``C`` the agent's
own tools. Extra keys (``sent_bytes``, ``truncated``, ``score``) appear where they apply.
In index mode no model is asked: :func:`explain_index` says which memories the index
exposes, which pointer lines fall past its load limits, and which files are orphans.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jupyter_memory.memdir.freshness import age_text
from jupyter_memory.memdir.index import INDEX_NAME, load_for_model, normalize_file, parse_index
from jupyter_memory.recall.conversation import agent_files, budget_used, surfaced_files
from jupyter_memory.recall.limits import SESSION_BUDGET_BYTES

__all__ = [
    "DECISIONS",
    "decision",
    "explain",
    "explain_index",
    "explain_static",
    "files_of",
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
    else:
        record = {"file": memory.file, "decision": kind, "reason": reason, "path": path,
                  "age_days": memory.age_days, "bytes": memory.bytes,
                  "indexed": bool(memory.indexed)}
    record.update(extra)
    return record


def _scan_all(memdir: Path) -> list[Any]:
    from jupyter_memory.memdir.scan import scan
    from jupyter_memory.recall.prefetch import scan_cache

    return scan(memdir, limit=None, cache=scan_cache(memdir))


def _agent_seen(session: Any, memdir: Path) -> set[str]:
    ctx = session.tool_context()
    return agent_files(memdir, list(ctx.read_files), set(ctx.written_memdir_files))


def explain_index(session: Any) -> list[dict[str, Any]]:
    """Decisions in index mode (path A), without any model call.

    A memory whose pointer line is inside the loaded part of ``MEMORY.md`` is
    ``injected`` (the model sees its hook and may read it, path C); a pointer past the
    200-line / 25,000-character cut is ``truncated``; a file without a pointer is
    ``not_indexed``, invisible here. Pointers to files that do not exist are ``skipped``.
    """
    memdir = session.memdir
    if memdir is None:
        return []
    memdir = Path(memdir)
    memories = _scan_all(memdir)
    try:
        raw = (memdir / INDEX_NAME).read_text(encoding="utf-8", errors="replace")
    except OSError:
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
    seen = _agent_seen(session, memdir)
    out: list[dict[str, Any]] = []
    on_disk: set[str] = set()
    for memory in memories:
        on_disk.add(normalize_file(memory.file))
        entry = index.find(memory.file)
        if entry is None:
            out.append(decision(
                memory, "not_indexed",
                "on disk but MEMORY.md has no pointer line for it, so index-mode recall never "
                "shows it (the agent can still find it with Grep or Glob, path C); "
                "%memory doctor can add the line", "A"))
            continue
        if entry.line - leading > visible_lines:
            out.append(decision(
                memory, "truncated",
                f"its pointer is on line {entry.line} of MEMORY.md, past the {limit} limit of "
                "what is loaded, so the model never sees it; shorten the index", "A"))
            continue
        if memory.file in seen:
            out.append(decision(
                memory, "injected",
                f"pointer line {entry.line} of MEMORY.md is in every request, and the agent "
                "has read the file itself this session", "C"))
        else:
            out.append(decision(
                memory, "injected",
                f"pointer line {entry.line} of MEMORY.md is in every request; the body reaches "
                "the model only if the agent reads it (path C)", "A"))
    for entry in index.entries:
        if normalize_file(entry.file) not in on_disk:
            out.append(decision(
                normalize_file(entry.file), "skipped",
                f"MEMORY.md points at it (line {entry.line}) but the file does not exist", "A"))
    return out


def explain_static(session: Any, reason: str | None = None) -> list[dict[str, Any]]:
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


def explain(session: Any, prefetch: Any = None) -> list[dict[str, Any]]:
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
    from jupyter_memory.recall.prefetch import last_prefetch

    latest = last_prefetch(session)
    return list(latest.decisions) if latest is not None else explain_static(session)


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
