"""Static HTML and plain text for every view: what a saved notebook shows with no kernel.

Each function returns HTML with inline CSS only (no script, no external file), so the
output reads in nbconvert, on GitHub and in JupyterLab after the kernel is gone. The
markup is also legible with styles stripped: every number is written as text, the bar
has a table beside it, and folded parts use ``<details>``. Nothing here imports
ipywidgets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jupyter_memory.context.assemble import MAX_BREAKPOINTS, AssembledRequest, ContextReport
from jupyter_memory.context.models import unknown_model_note
from jupyter_memory.context.request_parts import readable
from jupyter_memory.memdir.freshness import age_text
from jupyter_memory.widgets import style
from jupyter_memory.widgets.data import (
    PREVIEW_CHARS,
    CategoryView,
    ContextState,
    Gauge,
    ItemView,
    Marker,
    context_state,
    turn_memories,
)
from jupyter_memory.widgets.safe import escape as esc
from jupyter_memory.widgets.style import BORDER, FONT, FONT_MUTED, MONO, SURFACE

__all__ = [
    "MIN_BAR_PX",
    "STATIC_ITEM_BYTES",
    "STATIC_MAX_DECISIONS",
    "STATIC_MAX_ITEMS",
    "STATIC_MAX_MEMORIES",
    "STATIC_PREVIEW_CHARS",
    "bar_html",
    "context_html",
    "context_text",
    "decisions_html",
    "findings_html",
    "gauges_html",
    "gauges_text",
    "item_html",
    "legend_html",
    "memories_html",
    "memories_text",
    "turn_html",
    "turn_memories_html",
    "turn_text",
    "unitemized_words",
]

#: Items per category in the static view (the newest are kept); the widget shows all.
STATIC_MAX_ITEMS = 40
#: Bytes of item markup the static ``%context`` copy holds across all categories (the
#: newest items first), and the characters of each item's text it keeps: a saved
#: ``%context`` output stays under 15 KB however long the conversation or the memdir.
STATIC_ITEM_BYTES = 1_000
STATIC_PREVIEW_CHARS = 240
#: Rows of a static recall-decisions table; ``%memory why`` lists every decision.
STATIC_MAX_DECISIONS = 3

_ROOT = f"color:{FONT};font-size:13px;line-height:1.45;max-width:980px;"
_PRE = (f"white-space:pre-wrap;word-break:break-word;font-family:{MONO};font-size:12px;"
        f"background:{SURFACE};color:{FONT};border:1px solid {BORDER};border-radius:3px;"
        "padding:6px;margin:4px 0;max-height:32em;overflow:auto;")
#: An item's text in the static copy: the essentials of :data:`_PRE`, repeated per item.
_ITEM_PRE = (f"white-space:pre-wrap;word-break:break-word;font-size:12px;"
             f"border-left:2px solid {BORDER};padding-left:6px;")
_TABLE = f"border-collapse:collapse;margin:6px 0;font-size:12px;color:{FONT};"
_CELL = f"border-bottom:1px solid {BORDER};padding:2px 8px;text-align:left;vertical-align:top;"
_NUM = _CELL.replace("text-align:left", "text-align:right")
_MUTED = f"color:{FONT_MUTED};"
_SOURCE_WORDS = {
    "estimate": "offline estimate",
    "usage": "the last response's usage",
    "count_tokens": "the count-tokens endpoint",
}
_LEVEL_WORDS = {
    "ok": "below the warning level",
    "warning": "past the warning level",
    "autocompact": "past the automatic compaction level",
    "blocking": "at the blocking level: the next request would be refused",
}


def _state(report: ContextReport | ContextState, decisions: Iterable[Mapping[str, Any]] | None,
           assembled: AssembledRequest | None) -> ContextState:
    if isinstance(report, ContextState):
        return report
    return context_state(report, decisions=decisions, assembled=assembled)


def _k(tokens: int) -> str:
    return f"{tokens / 1000:.0f}K" if tokens >= 10_000 else f"{tokens:,}"


# --------------------------------------------------------------------------- context


#: The narrowest bar a notebook draws (a 400 px window: the output area less its prompt,
#: 252 px measured in JupyterLab 4), and the width of one label character: labels are
#: sized for it, so none is cut or overlaps another at any width from there up.
MIN_BAR_PX = 240
_CHAR_PX = 6.6


def _fits(text: str, percent: float) -> bool:
    """Whether ``text`` (11 px, 3 px padding each side) fits in ``percent`` of the
    narrowest bar."""
    return len(text) * _CHAR_PX + 6 <= percent * MIN_BAR_PX / 100


def bar_html(state: ContextState) -> str:
    """The window as one bar split by category, with the three threshold markers.

    Used categories, then free space, then the autocompact buffer (the window's end from
    the autocompact level on). Segments are drawn in plain colours (sanitisers drop CSS
    variables) with a class that gives them the theme's fill in JupyterLab, and a gap of
    track between them.
    """
    summary = "; ".join(f"{s.name} {s.tokens:,} tokens ({s.width:.1f}%)"
                        for s in state.bar_segments if s.tokens)
    segments = []
    drawn = [seg for seg in state.bar_segments if seg.tokens > 0]
    for i, seg in enumerate(drawn):
        sw = style.swatch(seg.name)
        words = f"{seg.name} {_k(seg.tokens)}"
        label = words if _fits(words, seg.width) else sw.tag if _fits(sw.tag, seg.width) else ""
        gap = style.gap_css(seg.name, last=i == len(drawn) - 1)
        segments.append(
            f"<div class='{style.swatch_class(seg.name)}' "
            f"title='{esc(seg.name)}: {seg.tokens:,} tokens ({seg.width:.1f}%)' "
            f"style='flex:0 1 {seg.width:.3f}%;min-width:3px;{gap}{style.swatch_css(seg.name)}"
            f"overflow:hidden'>{esc(label)}</div>"
        )
    marks = []
    placed = _place_marker_labels(state)
    for marker, (row, anchor, left, width) in zip(state.markers, placed, strict=True):
        line, words = style.LEVEL_STYLES[marker.name]
        # Rows alternate below and above the bar, then a second line below and above.
        # Plain offsets and a sized box aligned inside (no calc() or transform), so the
        # labels keep their places where a sanitizer drops those (untrusted notebooks).
        offset = _BAR_PX + (row // 2) * _LABEL_ROW_PX
        place = f"top:{offset}px;" if row % 2 == 0 else f"bottom:{offset}px;"
        align = {"centre": "center", "end": "right", "start": "left"}[anchor]
        marks.append(
            # A plain colour (a sanitiser drops var()); the class gives the theme's.
            f"<div class='jm-level-line' title='{esc(marker.name)} at {marker.tokens:,} "
            f"tokens: {esc(words)}' style='position:absolute;top:-5px;bottom:-5px;"
            f"left:{marker.position:.3f}%;border-left:{line} {_LINE}'></div>"
            f"<div class='jm-level-label' style='position:absolute;{place}left:{left:.3f}%;"
            f"width:{width:.3f}%;text-align:{align}'>"
            f"{esc(_marker_label(marker))}</div>"
        )
    below = sum(1 for row, *_ in placed if row % 2 == 0)
    above = sum(1 for row, *_ in placed if row % 2 == 1)
    rows_below = max((row // 2 + 1 for row, *_ in placed if row % 2 == 0), default=0)
    rows_above = max((row // 2 + 1 for row, *_ in placed if row % 2 == 1), default=0)
    top = 6 + rows_above * _LABEL_ROW_PX if above else 6
    bottom = 6 + rows_below * _LABEL_ROW_PX if below else 6
    return (
        f"<div role='img' aria-label='{esc('Context window: ' + summary)}' "
        f"style='position:relative;margin:{top}px 0 {bottom}px 0;'>"
        f"<div class='{style.TRACK_CLASS}' style='display:flex;height:22px;{style.TRACK_CSS}"
        f"border-radius:3px;overflow:hidden;font-size:11px;line-height:22px;"
        f"text-align:center;white-space:nowrap;'>{''.join(segments)}</div>"
        f"<div style='font-size:10px;line-height:{_LABEL_ROW_PX}px;white-space:nowrap;{_MUTED}'>"
        f"{''.join(marks)}</div></div>"
    )


#: The level lines' colour where no theme applies (the light theme's text colour).
_LINE = "#1f1f1f"
#: Height of one row of level labels around the bar.
_LABEL_ROW_PX = 14
#: Height of the bar with its border: where the rows of labels start.
_BAR_PX = 24
#: Width of one level-label character (10 px) as a share of the narrowest bar.
_LABEL_CHAR_PERCENT = 100 * 6.2 / MIN_BAR_PX


def _marker_label(marker: Marker) -> str:
    return f"{marker.name} {_k(marker.tokens)}"


def _place_marker_labels(state: ContextState) -> list[tuple[int, str, float, float]]:
    """Row, anchor, left edge and width (percent of the bar) of each level label, so
    that no two overlap and none leaves the bar.

    With a large window the three levels sit within a few percent of each other near the
    end of the bar (1M tokens: 94.7, 96.7 and 97.7%), so centring each label on its mark
    would overlap them and push the last past the edge. A label near an edge is anchored
    to end (or start) at its mark; a label that would overlap one already placed in a row
    goes to the next row. Rows are numbered 0 (below the bar), 1 (above), 2 (below, second
    line), 3 (above, second line), ...
    """
    taken: dict[int, list[tuple[float, float]]] = {}
    placed: list[tuple[int, str, float, float]] = []
    for marker in state.markers:
        width = len(_marker_label(marker)) * _LABEL_CHAR_PERCENT
        if marker.position + width / 2 > 100:
            anchor, left = "end", marker.position - width
        elif marker.position - width / 2 < 0:
            anchor, left = "start", marker.position
        else:
            anchor, left = "centre", marker.position - width / 2
        span = (left, left + width)
        row = 0
        while any(span[0] < b and a < span[1] for a, b in taken.get(row, [])):
            row += 1
        taken.setdefault(row, []).append(span)
        placed.append((row, anchor, left, width))
    return placed


def legend_html(state: ContextState) -> str:
    """The categories as a table (swatch, tag, name, tokens, share): the bar in words."""
    rows = []
    for cat in state.categories:
        sw = style.swatch(cat.name)
        # A swatch only for what the bar draws (an empty category has no segment to match).
        # The swatch sits on a patch of the bar's track inside its outline, as in the
        # bar, so it reads on a white page and a dark one.
        box = (f"<span class='{style.TRACK_CLASS}' style='display:inline-block;padding:2px;"
               f"{style.TRACK_CSS}'><span class='{style.swatch_class(cat.name)}' "
               f"style='display:inline-block;width:14px;height:8px;"
               f"{style.swatch_css(cat.name)}'></span></span>" if cat.tokens else "")
        rows.append(
            f"<tr><td>{box} {esc(sw.tag)}</td><td>{esc(cat.name)}</td>"
            f"<td align='right'>{cat.tokens:,}</td><td align='right'>{cat.percent:.1f}%</td></tr>"
        )
    # Every column named (an empty header reads as nothing to a screen reader); table
    # attributes rather than a style per cell keep the saved output small.
    head = "".join(f"<th scope='col' align='{a}'>{h}</th>" for a, h in (
        ("left", "swatch"), ("left", "category"), ("right", "tokens"),
        ("right", "% of window")))
    return (f"<table rules='rows' cellpadding='3' style='{_TABLE}'><thead><tr>{head}</tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>")


def _badges(item: ItemView) -> str:
    return "".join(f" <i style='font-size:11px'>· {esc(note)}</i>" for note in item.notes())


def item_html(item: ItemView, *, full: bool = False, preview: int = PREVIEW_CHARS) -> str:
    """One item folded: label, tokens and notes; open, the exact text that was sent (its
    first ``preview`` characters unless ``full``)."""
    preview = min(preview, PREVIEW_CHARS)
    text = item.text if full else item.preview[:preview]
    cut = ""
    if not full and len(item.text) > len(text):
        cut = f" · the first {len(text):,} of {len(item.text):,} characters"
    stale = ""
    if item.staleness:
        stale = (f"<div style='{_MUTED}font-size:11px'>Sent with this reminder: "
                 f"{esc(item.staleness)}</div>")
    pre = _PRE if full else _ITEM_PRE
    return (
        f"<details style='margin:2px 0 2px 12px'><summary><b>{esc(item.label)}</b> "
        f"<span style='{_MUTED}'>{item.tokens:,} tokens{cut}</span>{_badges(item)}</summary>"
        f"{stale}<pre style='{pre}'>{esc(text)}</pre></details>"
    )


def unitemized_words(cat: CategoryView, source: str) -> str:
    """The label of a category's difference row: where its total comes from."""
    return (f"not itemized: the rows are offline estimates, the total is from "
            f"{_SOURCE_WORDS.get(source, source)}")


def _static_items(categories: Sequence[CategoryView]) -> list[list[str]]:
    """Each category's item markup for the static copy, oldest first: the newest item of
    every category, then the next newest of each in turn until :data:`STATIC_ITEM_BYTES` is
    spent (at most :data:`STATIC_MAX_ITEMS` each), so one long category cannot crowd out
    the others."""
    queues = [list(reversed(c.items[-STATIC_MAX_ITEMS:])) for c in categories]
    kept: list[list[str]] = [[] for _ in categories]
    spent = 0
    first = True
    while any(queues):
        for i, queue in enumerate(queues):
            if not queue:
                continue
            markup = item_html(queue[0], preview=STATIC_PREVIEW_CHARS)
            if not first and spent + len(markup) > STATIC_ITEM_BYTES:
                return [list(reversed(k)) for k in kept]
            queue.pop(0)
            spent += len(markup)
            kept[i].append(markup)
        first = False
    return [list(reversed(k)) for k in kept]


def _category_html(cat: CategoryView, source: str = "estimate",
                   items: Sequence[str] | None = None) -> str:
    if not cat.items:
        return ""
    sw = style.swatch(cat.name)
    count = f"{len(cat.items)} item{'s' if len(cat.items) != 1 else ''}"
    shown = list(items) if items is not None else [
        item_html(item, preview=STATIC_PREVIEW_CHARS) for item in cat.items[-STATIC_MAX_ITEMS:]]
    skipped = ""
    if len(shown) < len(cat.items):
        left = len(cat.items) - len(shown)
        skipped = (f"<div style='{_MUTED}font-size:11px;margin-left:12px'>The "
                   f"{left:,} earlier item{'s are' if left != 1 else ' is'} left out here "
                   "(%context --raw prints all).</div>")
    return (
        # The tag names the swatch of the legend above (the swatch itself is drawn once).
        f"<details style='margin:3px 0'><summary>[{esc(sw.tag)}] <b>{esc(cat.name)}</b> — "
        f"{cat.tokens:,} tokens ({cat.percent:.1f}%) · {count}</summary>"
        + skipped + "".join(shown)
        + (f"<div style='margin:2px 0 2px 12px;{_MUTED}'>{cat.unitemized:+,} tokens "
           f"{esc(unitemized_words(cat, source))}</div>" if cat.unitemized else "")
        + "</details>"
    )


def decisions_html(decisions: Sequence[Mapping[str, Any]], limit: int | None = None) -> str:
    """The recall decisions of a turn: every memory considered and what happened to it
    (the first ``limit``, with a count of the rest, when given)."""
    if not decisions:
        return ""
    shown = decisions if limit is None else decisions[:limit]
    rows = []
    for d in shown:
        age = d.get("age_days")
        size = d.get("bytes")
        rows.append(
            f"<tr><td><code>{esc(d.get('file', ''))}</code></td>"
            f"<td><b>{esc(d.get('decision', ''))}</b></td>"
            f"<td>{esc(d.get('path', ''))}</td>"
            f"<td>{esc(age_text(age) if isinstance(age, int) else '')}</td>"
            f"<td align='right'>{f'{size:,}' if isinstance(size, int) else ''}</td>"
            f"<td>{esc(d.get('reason', ''))}</td></tr>"
        )
    head = "".join(f"<th scope='col' align='left'>{h}</th>" for h in
                   ("memory", "decision", "path", "age", "bytes", "reason"))
    left = len(decisions) - len(shown)
    more = (f"<div style='{_MUTED}font-size:11px'>{left:,} more not shown here; %memory why "
            "lists every decision.</div>") if left else ""
    # Table attributes rather than a style per cell: a row costs its text alone.
    return (f"<details><summary>Recall decisions ({len(decisions):,})</summary>"
            f"<table rules='rows' cellpadding='3' style='{_TABLE}'><thead><tr>{head}</tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>{more}</details>")


def context_facts(state: ContextState) -> list[str]:
    """The lines under the bar: levels, index usage, cache breakpoints, last cache use."""
    th = state.thresholds
    note = unknown_model_note(state.model)
    lines = [f"Note: {note}"] if note is not None else []
    lines += [
        f"Levels: warning {th['warning']:,} · autocompact {th['autocompact']:,} · blocking "
        f"{th['blocking']:,} (effective window {th['effective']:,}); now "
        f"{_LEVEL_WORDS.get(state.level, state.level)}."
    ]
    idx = state.index
    if idx is not None:
        cut = f", cut by the {idx['truncated_by']} limit" if idx.get("truncated_by") else ""
        lines.append(f"Index MEMORY.md: {idx['lines']} / {idx['max_lines']} lines, "
                     f"{idx['chars']:,} / {idx['max_chars']:,} characters{cut}.")
    where = f": {', '.join(state.breakpoint_places)}" if state.breakpoint_places else ""
    lines.append(f"Cache breakpoints: {state.breakpoints} of {MAX_BREAKPOINTS}{where}.")
    if state.cache_summary:
        lines.append(state.cache_summary)
    return lines


def context_header(state: ContextState) -> str:
    return (
        f"<div><b>Context for the next request</b> · {esc(state.model)}<br>"
        f"{state.used:,} / {state.window:,} tokens ({state.percent_used}%) · counted by "
        f"{esc(_SOURCE_WORDS.get(state.source, state.source))}</div>"
    )


def context_html(
    report: ContextReport | ContextState,
    *,
    decisions: Iterable[Mapping[str, Any]] | None = None,
    assembled: AssembledRequest | None = None,
) -> str:
    """The whole context view as static HTML: bar, legend, levels, and every category
    folded open to the text that was sent (each text cut at :data:`PREVIEW_CHARS`)."""
    state = _state(report, decisions, assembled)
    facts = "".join(f"<div>{esc(line)}</div>" for line in context_facts(state))
    items = _static_items(state.categories)
    cats = "".join(_category_html(c, state.source, kept)
                   for c, kept in zip(state.categories, items, strict=True))
    return (
        f"<div class='jupyter-memory-context' style='{_ROOT}'>"
        + context_header(state) + bar_html(state) + legend_html(state)
        + f"<div style='{_MUTED}font-size:12px'>{facts}</div>"
        + cats + decisions_html(state.decisions, STATIC_MAX_DECISIONS) + "</div>"
    )


def context_text(report: ContextReport) -> str:
    """The plain-text view: the categories' totals and the limits, as ``%context`` prints
    them without the items (the HTML copy lists the newest items), so the saved copy does
    not grow with the conversation."""
    from jupyter_memory.context.assemble import render_text

    return render_text(report, detail=False)


# --------------------------------------------------------------------------- gauges


_GAUGE_INK = {"ok": FONT, "near": style.WARN, "over": style.ERROR}
_GAUGE_WORDS = {"ok": "", "near": " (near the limit)", "over": " (over the limit)"}


def gauge_html(gauge: Gauge) -> str:
    """One budget as a labelled ``<meter>``; the level is written, not only coloured.

    A native meter is accessible as it is, scales with its container at any width, and
    costs a fraction of a drawn bar in the saved output. Its regions give the colour: an
    ``ok`` budget is in the optimal region, a ``near`` one in the middle, an ``over`` one
    at the far end.
    """
    ink = _GAUGE_INK[gauge.level]
    note = f" — {esc(gauge.note)}" if gauge.note else ""
    ink_css = "" if gauge.level == "ok" else f" style='color:{ink}'"
    value = min(gauge.value, gauge.limit)
    regions = {"ok": "", "near": f" low='{max(0, value - 1)}' high='{gauge.limit}'",
               "over": f" low='0' high='{max(0, gauge.limit - 1)}'"}[gauge.level]
    return (
        f"<div style='margin:4px 0'><b>{esc(gauge.label)}</b>: "
        f"<span{ink_css}>{gauge.value:,} / {gauge.limit:,} {esc(gauge.unit)} "
        f"({100 * gauge.fraction:.1f}%){_GAUGE_WORDS[gauge.level]}</span>"
        f"<span style='{_MUTED}'>{note}</span><br>"
        f"<meter min='0' max='{gauge.limit}' value='{value}' optimum='0'{regions} "
        f"aria-label='{esc(gauge.label)}' style='width:100%;max-width:420px'></meter></div>"
    )


def gauges_html(gauges: Sequence[Gauge]) -> str:
    """All budgets, one meter each."""
    body = "".join(gauge_html(g) for g in gauges)
    return (f"<div class='jupyter-memory-gauges' style='{_ROOT}'><div><b>Budgets</b></div>"
            f"{body}</div>")


def gauges_text(gauges: Sequence[Gauge]) -> str:
    return "Budgets\n" + "\n".join(
        "  " + g.text() + _GAUGE_WORDS[g.level] for g in gauges)


# --------------------------------------------------------------------------- memories


def _size(n: int) -> str:
    return f"{n:,} B" if n < 10_240 else f"{n / 1024:.1f} KB"


def findings_html(findings: Sequence[Any]) -> str:
    """Doctor findings, worst first; the severity is a word, not only a colour."""
    if not findings:
        return "<div>Doctor: no problems found.</div>"
    items = []
    for f in findings:
        fix = " <i>(repair can fix this)</i>" if getattr(f, "fixable", False) else ""
        where = f"<code>{esc(f.file)}</code>: " if getattr(f, "file", None) else ""
        ink = {"error": style.ERROR, "warning": style.WARN}.get(f.severity, FONT)
        items.append(f"<li><b style='color:{ink}'>{esc(f.severity)}</b> {where}"
                     f"{esc(f.message)}{fix}</li>")
    return f"<div>Doctor found {len(findings)}:</div><ul style='margin:2px 0'>{''.join(items)}</ul>"


#: Rows of the static memory table (the newest are kept): a saved ``%memory`` output stays
#: under 50 KB at any memdir size; the count says how many were left out.
STATIC_MAX_MEMORIES = 60
_DESC_CHARS = 120


def _count(n: int) -> str:
    return f"{n:,} memor{'y' if n == 1 else 'ies'}"


def _loaded_cell(m: Any) -> str:
    """``yes``, or why the model does not receive the memory's pointer line."""
    if not m.indexed:
        return "no: not in MEMORY.md"
    return "yes" if getattr(m, "loaded", True) else "no: past the index limit" if getattr(
        m, "recall_mode", "index") == "index" else "no: prefetch mode"


def _left_out(shown: int, total: int) -> str:
    return (f"{total - shown:,} older not shown here; %memory list shows all, or open the "
            "Memory panel" if total > shown else "")


def memories_html(memories: Sequence[Any], findings: Sequence[Any] = ()) -> str:
    """The memory table (type, name, description, age, size, indexed, loaded), at most
    :data:`STATIC_MAX_MEMORIES` rows in a scrolling box, and doctor findings."""
    head = "".join(f"<th scope='col' align='{a}'>{h}</th>" for a, h in (
        ("left", "type"), ("left", "name"), ("left", "description"), ("right", "age"),
        ("right", "size"), ("left", "indexed"), ("left", "loaded")))
    shown = list(memories[:STATIC_MAX_MEMORIES])
    rows = []
    for m in shown:
        desc = " ".join((m.description or "").split())
        desc = desc if len(desc) <= _DESC_CHARS else desc[: _DESC_CHARS - 1] + "…"
        reason = getattr(m, "loaded_reason", "")
        rows.append(
            f"<tr><td>{esc(m.type or '—')}</td>"
            f"<td title='{esc(m.file)}'><b>{esc(m.name)}</b><br>"
            f"<code style='font-size:11px'>{esc(m.file)}</code></td>"
            f"<td>{esc(desc)}</td><td align='right'>{esc(age_text(m.age_days))}</td>"
            f"<td align='right'>{esc(_size(m.bytes))}</td>"
            f"<td>{'yes' if m.indexed else 'no'}</td>"
            f"<td title='{esc(reason)}'>{esc(_loaded_cell(m))}</td></tr>"
        )
    # Table attributes, not a style per cell: a cell costs its text alone (and rules and
    # padding survive sanitisers that drop style attributes).
    table = (f"<div style='max-height:28em;overflow:auto' role='region' tabindex='0' "
             f"aria-label='Memories'><table rules='rows' cellpadding='3' valign='top' "
             f"style='{_TABLE}'><thead><tr>{head}</tr></thead>"
             f"<tbody>{''.join(rows)}</tbody></table></div>") if rows else (
        "<div>No memories yet.</div>")
    more = _left_out(len(shown), len(memories))
    count = _count(len(memories))
    return (f"<div class='jupyter-memory-memories' style='{_ROOT}'><div><b>Memories</b> · "
            f"{count}</div>{table}"
            + (f"<div style='{_MUTED}'>{esc(more)}</div>" if more else "")
            + f"{findings_html(findings)}</div>")


def memories_text(memories: Sequence[Any], findings: Sequence[Any] = ()) -> str:
    """The memory table as aligned plain text (the same rows as :func:`memories_html`),
    then the findings."""
    shown = list(memories[:STATIC_MAX_MEMORIES])
    # Names in full, as `%memory list` shows them: the column is as wide as the longest.
    wide = max([28, *(len(m.name) for m in shown)])
    lines = [f"{'type':<10} {'name':<{wide}} {'age':>12} {'size':>9}  indexed  loaded  "
             "description"]
    for m in shown:
        desc = " ".join((m.description or "").split())[:_DESC_CHARS]
        loaded = "yes" if m.indexed and getattr(m, "loaded", True) else "NO"
        lines.append(f"{(m.type or '-')[:10]:<10} {m.name:<{wide}} {age_text(m.age_days):>12} "
                     f"{_size(m.bytes):>9}  {'yes' if m.indexed else 'NO ':<7}  {loaded:<6}  "
                     f"{desc}")
    more = _left_out(len(shown), len(memories))
    if more:
        lines.append(f"({more})")
    if not memories:
        lines.append("(no memories yet)")
    if findings:
        lines.append("")
        lines.extend(f"[{f.severity}] {f.file + ': ' if f.file else ''}{f.message}"
                     for f in findings)
    return "\n".join(lines)


# --------------------------------------------------------------------------- turns


def _recall_facts(meta: Mapping[str, Any]) -> str:
    facts = []
    if isinstance(meta.get("age_days"), int):
        facts.append(age_text(meta["age_days"]))
    if isinstance(meta.get("bytes"), int):
        facts.append(f"{meta['bytes']:,} bytes")
    if meta.get("truncated"):
        limit = meta["truncated"]
        facts.append(f"truncated by the {limit} limit" if isinstance(limit, str) else "truncated")
    return "".join(f" · {esc(f)}" for f in facts)


def turn_memories_html(record: Mapping[str, Any], memdir: Path | str | None = None,
                       *, undone: bool = False) -> str:
    """Memories of a turn: recalled (with age and truncation), read, written, decisions."""
    mem = turn_memories(record, memdir)
    parts = []
    if mem.recalled:
        items = "".join(f"<li><code>{esc(r.get('file', '?'))}</code>{_recall_facts(r)}</li>"
                        for r in mem.recalled)
        parts.append(f"<div>Recalled into this turn:</div><ul style='margin:2px 0'>{items}</ul>")
    if mem.read:
        items = "".join(f"<li><code>{esc(f)}</code></li>" for f in mem.read)
        parts.append(f"<div>Read by the agent:</div><ul style='margin:2px 0'>{items}</ul>")
    if mem.written:
        items = "".join(f"<li><code>{esc(w.get('file', '?'))}</code> by "
                        f"{esc(w.get('by', '?'))}</li>" for w in mem.written)
        undo = " <i>(undone)</i>" if undone else ""
        parts.append(f"<div>Saved to memory{undo}:</div><ul style='margin:2px 0'>{items}</ul>")
    decisions = decisions_html(mem.decisions, STATIC_MAX_DECISIONS)
    if not parts and not decisions:
        return ""
    return (f"<div style='{_MUTED}font-size:12px;border-top:1px solid {BORDER};margin-top:6px;"
            f"padding-top:4px'>{''.join(parts)}{decisions}</div>")


def turn_html(record: Mapping[str, Any], memdir: Path | str | None = None,
              *, undone: bool = False) -> str:
    """The agent cell's HTML (tools folded, answer, events, footer) plus its memories.

    ``record`` may keep its long texts as parts: they are put back (``readable``).
    """
    from jupyter_memory.widgets.render import turn_html as base_html

    record = readable(record)
    base = base_html(record)
    extra = turn_memories_html(record, memdir, undone=undone)
    if not extra:
        return base
    return base[: -len("</div>")] + extra + "</div>" if base.endswith("</div>") else base + extra


def turn_text(record: Mapping[str, Any]) -> str:
    """The plain-text fallback of a turn: the answer, then what was saved."""
    text = record.get("answer") or "(no answer)"
    written = record.get("memories_written") or []
    if written:
        text += "\n\nSaved to memory: " + ", ".join(str(w.get("file")) for w in written)
    return text
