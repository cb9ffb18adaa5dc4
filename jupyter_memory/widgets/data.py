"""The state every view draws, computed without ipywidgets.

The widgets and their static HTML fallbacks render the same objects, so what a test
inspects here is exactly what a person sees. Nothing in this module imports ipywidgets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from jupyter_memory.context.assemble import META_KEY, AssembledRequest, ContextReport, Part
from jupyter_memory.context.tokens import block_text
from jupyter_memory.memdir.freshness import age_text, staleness_reminder
from jupyter_memory.recall.conversation import budget_used, is_real_user_message
from jupyter_memory.recall.limits import MAX_FILE_BYTES, MAX_FILES_PER_TURN, SESSION_BUDGET_BYTES

__all__ = [
    "PREFETCH_SESSION_BYTES",
    "PREFETCH_TURN_BYTES",
    "PREVIEW_CHARS",
    "CategoryView",
    "ContextState",
    "Gauge",
    "ItemView",
    "Marker",
    "Segment",
    "TurnMemories",
    "bar_order",
    "budget_gauges",
    "context_state",
    "recall_bytes",
    "turn_memories",
]

#: Prefetch budget of one turn: 5 files of at most 4,096 bytes (docs/reference.md#path-b-relevance-prefetch).
PREFETCH_TURN_BYTES = MAX_FILES_PER_TURN * MAX_FILE_BYTES
#: Prefetch budget of one session; past it no new prefetch starts (docs/reference.md#path-b-relevance-prefetch).
PREFETCH_SESSION_BYTES = SESSION_BUDGET_BYTES
#: Characters of an item's text shown before a "show all" toggle.
PREVIEW_CHARS = 2_000

_LEVELS = ("warning", "autocompact", "blocking")
_T = TypeVar("_T")


# --------------------------------------------------------------------------- context


@dataclass(frozen=True)
class ItemView:
    """One piece of the request (a file, a tool, a message) and the exact text sent."""

    category: str
    label: str
    tokens: int
    text: str
    meta: Mapping[str, Any] = field(default_factory=dict)
    breakpoint: bool = False
    decision: Mapping[str, Any] | None = None

    @property
    def age_days(self) -> int | None:
        value = self.meta.get("age_days")
        return value if isinstance(value, int) else None

    @property
    def age(self) -> str | None:
        return None if self.age_days is None else age_text(self.age_days)

    @property
    def staleness(self) -> str | None:
        """The caveat a memory this old reaches the model with (None when fresh)."""
        if self.category != "memories" or self.age_days is None:
            return None
        return staleness_reminder(self.age_days)

    @property
    def truncated(self) -> bool:
        return bool(self.meta.get("truncated"))

    @property
    def scope(self) -> str | None:
        value = self.meta.get("scope")
        return str(value) if value else None

    @property
    def capped(self) -> bool:
        return len(self.text) > PREVIEW_CHARS

    @property
    def preview(self) -> str:
        """The text cut to :data:`PREVIEW_CHARS` for display (the full text stays in ``text``)."""
        return self.text[:PREVIEW_CHARS] if self.capped else self.text

    def notes(self) -> list[str]:
        """Short facts shown beside the label: scope, age, staleness, truncation, decision."""
        out: list[str] = []
        if self.scope:
            out.append(f"scope: {self.scope}")
        if self.age is not None:
            out.append(f"written {self.age}")
        if self.staleness:
            out.append("sent with a staleness reminder")
        if self.truncated:
            limit = self.meta.get("truncated")
            by = f" by the {limit} limit" if isinstance(limit, str) else ""
            out.append(f"truncated{by}: the rest must be read with the Read tool")
        if self.decision:
            out.append(_decision_words(self.decision))
        if self.breakpoint:
            out.append("cache breakpoint after this")
        return out


@dataclass(frozen=True)
class CategoryView:
    name: str
    tokens: int
    percent: float
    items: tuple[ItemView, ...] = ()

    @property
    def texts(self) -> tuple[str, ...]:
        """The exact text of each item, in request order."""
        return tuple(item.text for item in self.items)

    @property
    def unitemized(self) -> int:
        """Tokens of the total that no item accounts for (negative: the items overshoot).

        Items are offline estimates. When the total comes from a real count (the last
        response's usage, or the count-tokens endpoint), the difference is put on the
        conversation, or spread over every category when the fixed parts alone overshoot;
        the views show it as a row of its own, so the rows add up to the total.
        """
        return self.tokens - sum(item.tokens for item in self.items) if self.items else 0


@dataclass(frozen=True)
class Segment:
    """One stretch of the context bar: ``width`` is its share of the bar in percent."""

    name: str
    tokens: int
    width: float


@dataclass(frozen=True)
class Marker:
    """A threshold drawn on the bar at ``position`` percent of its length."""

    name: str
    tokens: int
    position: float


@dataclass(frozen=True)
class ContextState:
    """Everything the context view shows, derived from one :class:`ContextReport`."""

    model: str
    window: int
    used: int
    percent_used: float
    source: str
    level: str
    thresholds: Mapping[str, int]
    categories: tuple[CategoryView, ...]
    bar_segments: tuple[Segment, ...]
    markers: tuple[Marker, ...]
    breakpoints: int
    breakpoint_places: tuple[str, ...]
    index: Mapping[str, Any] | None
    last_usage: Mapping[str, int] | None
    decisions: tuple[Mapping[str, Any], ...]

    def category(self, name: str) -> CategoryView:
        for cat in self.categories:
            if cat.name == name:
                return cat
        raise KeyError(f"no category {name!r}; the categories are "
                       f"{', '.join(c.name for c in self.categories)}")

    @property
    def cache_summary(self) -> str | None:
        """The last response's cache reads and writes in words, or None before any response."""
        u = self.last_usage
        if not u:
            return None
        read = u.get("cache_read_input_tokens", 0)
        written = u.get("cache_creation_input_tokens", 0)
        fresh = u.get("input_tokens", 0)
        total = read + written + fresh
        share = f" ({100 * read / total:.1f}% of the input read from cache)" if total else ""
        return (f"Last response: {read:,} tokens read from cache, {written:,} written to cache, "
                f"{fresh:,} uncached input, {u.get('output_tokens', 0):,} output{share}.")


def _decision_words(decision: Mapping[str, Any]) -> str:
    words = f"recall: {decision.get('decision', '?')}"
    if decision.get("path"):
        words += f" (path {decision['path']})"
    if decision.get("reason"):
        words += f" — {decision['reason']}"
    return words


def _breakpoint_parts(
    assembled: AssembledRequest, parts: Sequence[Part]
) -> tuple[set[int], list[str]]:
    """Which parts end where a ``cache_control`` marker sits, and where each marker is."""
    body = assembled.body
    marked: set[int] = set()
    places: list[str] = []
    for i, tool in enumerate(body.get("tools", [])):
        if "cache_control" in tool:
            places.append(f"tool {tool.get('name', i)}")
            marked.update(j for j, p in enumerate(parts)
                          if p.category == "tools" and p.label == tool.get("name"))
    for i, block in enumerate(body.get("system", [])):
        if "cache_control" in block:
            places.append(f"system block {i + 1}")
            marked.update(j for j, p in enumerate(parts)
                          if p.category == "system" and p.text == block.get("text"))
    conversation = [j for j, p in enumerate(parts) if p.category in ("memories", "messages")]
    for m, message in enumerate(body.get("messages", [])):
        for b, block in enumerate(message.get("content", [])):
            if "cache_control" not in block:
                continue
            if m == 0 and b == 0:
                places.append("context message (instructions, index, date)")
                marked.update(j for j, p in enumerate(parts)
                              if p.label == "context preamble and date")
                continue
            places.append(f"message {m + 1} ({message.get('role')}), block {b + 1}")
            text = block_text(block)
            for j in reversed(conversation):
                if text and text in parts[j].text:
                    marked.add(j)
                    break
    return marked, places


def context_state(
    report: ContextReport,
    *,
    decisions: Iterable[Mapping[str, Any]] | None = None,
    assembled: AssembledRequest | None = None,
) -> ContextState:
    """The view state of ``report``; ``decisions`` are the recall decisions of the last turn
    and ``assembled`` the request the report was made from (to place cache breakpoints)."""
    data = report.to_json()
    decided = tuple(dict(d) for d in decisions or ())
    by_file = {str(d.get("file")): d for d in decided if d.get("file")}
    parts = [p for c in report.categories for p in c.items]
    marked, places = _breakpoint_parts(assembled, parts) if assembled is not None else (set(), [])
    marked_ids = {id(parts[j]) for j in marked}
    cats: list[CategoryView] = []
    for cat_json, cat in zip(data["categories"], [*report.categories, None, None], strict=True):
        items: tuple[ItemView, ...] = ()
        if cat is not None:
            items = tuple(
                ItemView(cat.name, p.label, p.tokens, p.text, dict(p.meta), id(p) in marked_ids,
                         by_file.get(str(p.meta.get("file", p.label))) if cat.name == "memories"
                         else None)
                for p in cat.items
            )
        cats.append(CategoryView(cat_json["name"], cat_json["tokens"],
                                 _percent(cat_json["tokens"], report.window), items))
    scale = max(report.window, sum(c.tokens for c in cats)) or 1
    order = bar_order(cats, lambda c: c.name)
    segments = tuple(Segment(c.name, c.tokens, 100.0 * c.tokens / scale) for c in order)
    th = report.thresholds.to_json()
    markers = tuple(Marker(name, th[name], 100.0 * th[name] / scale) for name in _LEVELS)
    return ContextState(
        model=report.model,
        window=report.window,
        used=report.used,
        percent_used=data["percent_used"],
        source=report.source,
        level=report.level,
        thresholds=th,
        categories=tuple(cats),
        bar_segments=segments,
        markers=markers,
        breakpoints=report.breakpoints,
        breakpoint_places=tuple(places),
        index=data["index"],
        last_usage=data["last_usage"],
        decisions=decided,
    )


_BAR_TAIL = ("free", "autocompact buffer")


def bar_order(categories: Iterable[_T], name: Callable[[_T], str]) -> list[_T]:
    """The context bar's order: the used categories, then free, then the autocompact buffer.

    The buffer is the window's end, from the autocompact level on, so free space never runs
    past the autocompact line. Every drawing of the bar (``%context``, the turn views and
    their static copies) orders its segments here.
    """
    items = list(categories)
    return [c for c in items if name(c) not in _BAR_TAIL] + [
        c for tail in _BAR_TAIL for c in items if name(c) == tail]


def _percent(tokens: int, window: int) -> float:
    return round(100.0 * tokens / window, 2) if window else 0.0


# --------------------------------------------------------------------------- gauges


@dataclass(frozen=True)
class Gauge:
    """A budget: ``value`` spent of ``limit``; ``level`` is ``ok``, ``near`` or ``over``."""

    key: str
    label: str
    value: int
    limit: int
    unit: str
    note: str = ""
    near_at: float = 0.9

    @property
    def fraction(self) -> float:
        return self.value / self.limit if self.limit else 0.0

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.value)

    @property
    def level(self) -> str:
        if self.value > self.limit:
            return "over"
        return "near" if self.fraction >= self.near_at else "ok"

    def text(self) -> str:
        line = (f"{self.label}: {self.value:,} / {self.limit:,} {self.unit} "
                f"({100 * self.fraction:.1f}%)")
        return line + (f" — {self.note}" if self.note else "")


def recall_bytes(messages: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """Bytes of prefetched memories in the current turn and in the whole conversation.

    Both are derived from the recall attachments still in ``messages`` (as prefetch
    itself does), so after a compaction only what survived it counts.
    """
    start = 0
    for i, message in enumerate(messages):
        if is_real_user_message(message):
            start = i
    return budget_used(messages[start:]), budget_used(messages)


def budget_gauges(report: ContextReport, messages: Sequence[Mapping[str, Any]] = ()) -> list[Gauge]:
    """The five budgets: index lines and characters, prefetch bytes this turn and this
    session, and the tokens left before automatic compaction."""
    from jupyter_memory.memdir.index import MAX_CHARS, MAX_LINES, NEAR_FRACTION

    gauges: list[Gauge] = []
    idx = report.index
    if idx is not None:
        cut = f"cut by the {idx.truncated_by} limit" if idx.truncated_by else ""
        gauges.append(Gauge("index_lines", "Index lines", idx.lines, MAX_LINES, "lines",
                            cut if idx.truncated_by and "line" in idx.truncated_by else "",
                            NEAR_FRACTION))
        gauges.append(Gauge("index_chars", "Index characters", idx.chars, MAX_CHARS, "characters",
                            cut if idx.truncated_by and "char" in idx.truncated_by else "",
                            NEAR_FRACTION))
    else:
        why = "MEMORY.md is not sent (prefetch mode or memory off)"
        gauges.append(Gauge("index_lines", "Index lines", 0, MAX_LINES, "lines", why))
        gauges.append(Gauge("index_chars", "Index characters", 0, MAX_CHARS, "characters", why))
    turn, session = recall_bytes(messages)
    gauges.append(Gauge("prefetch_turn", "Prefetched memories this turn", turn,
                        PREFETCH_TURN_BYTES, "bytes", "at most 5 files of 4,096 bytes"))
    spent = ("spent: no new prefetch starts this session"
             if session >= PREFETCH_SESSION_BYTES else "")
    gauges.append(Gauge("prefetch_session", "Prefetched memories this session", session,
                        PREFETCH_SESSION_BYTES, "bytes", spent))
    th = report.thresholds
    left = max(0, th.autocompact - report.used)
    gauges.append(Gauge("compaction", "Context before autocompact", report.used,
                        th.autocompact, "tokens", f"{left:,} tokens of headroom left",
                        th.warning / th.autocompact if th.autocompact else 0.9))
    return gauges


# --------------------------------------------------------------------------- turns


@dataclass(frozen=True)
class TurnMemories:
    """The memories one turn touched: recalled by prefetch, read by tools, written."""

    recalled: tuple[Mapping[str, Any], ...]
    read: tuple[str, ...]
    written: tuple[Mapping[str, Any], ...]
    decisions: tuple[Mapping[str, Any], ...]


def _in_memdir(path: str, memdir: Path | None) -> str | None:
    if memdir is None or not path:
        return None
    try:
        rel = Path(path).expanduser().relative_to(memdir)
    except ValueError:
        return None
    return PurePosixPath(*rel.parts).as_posix()


def _listed(value: Any) -> list[Any]:
    """A list section of a record, or nothing (a part this record does not hold)."""
    return value if isinstance(value, list) else []


def turn_memories(record: Mapping[str, Any], memdir: Path | str | None = None) -> TurnMemories:
    """What a turn record says about memory; reads are known only when ``memdir`` is given.

    ``record`` is readable (``request_parts.readable``): its texts and decisions put back.
    """
    root = Path(memdir).expanduser() if memdir is not None else None
    recalled = []
    for message in record.get("messages") or []:
        meta = message.get(META_KEY) or {}
        if meta.get("kind") == "recall":
            recalled.append(dict(meta))
    read: list[str] = []
    for call in record.get("tool_calls") or []:
        if call.get("name") != "Read" or call.get("is_error"):
            continue
        rel = _in_memdir(str((call.get("input") or {}).get("file_path", "")), root)
        if rel and rel not in read:
            read.append(rel)
    recall = record.get("recall") or {}
    return TurnMemories(
        recalled=tuple(recalled),
        read=tuple(read),
        written=tuple(dict(w) for w in record.get("memories_written") or []),
        decisions=tuple(dict(d) for d in _listed(recall.get("decisions")) if isinstance(d, Mapping)),
    )
