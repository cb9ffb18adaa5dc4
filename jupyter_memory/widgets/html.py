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
    "STATIC_MAX_ITEMS",
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

_ROOT = f"color:{FONT};font-size:13px;line-height:1.45;max-width:980px;"
_PRE = (f"white-space:pre-wrap;word-break:break-word;font-family:{MONO};font-size:12px;"
        f"background:{SURFACE};color:{FONT};border:1px solid {BORDER};border-radius:3px;"
        "padding:6px;margin:4px 0;max-height:32em;overflow:auto;")
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


def _label(text: str, sw: style.Swatch) -> str:
    """A segment's label on a plain patch of its colour, so a pattern never hides it."""
    if not text:
        return ""
    if not sw.pattern:
        return esc(text)
    return f"<span style='background-color:{sw.colour};padding:0 3px'>{esc(text)}</span>"


def bar_html(state: ContextState) -> str:
    """The window as one bar split by category, with the three threshold markers."""
    summary = "; ".join(f"{s.name} {s.tokens:,} tokens ({s.width:.1f}%)"
                        for s in state.bar_segments if s.tokens)
    segments = []
    for seg in state.bar_segments:
        if seg.tokens <= 0:
            continue
        sw = style.swatch(seg.name)
        ink = style.text_on(sw.colour)
        if seg.width >= 14:
            label = f"{seg.name} {_k(seg.tokens)}"
        elif seg.width >= 2.5:
            label = sw.tag
        else:
            label = ""
        segments.append(
            f"<div title='{esc(seg.name)}: {seg.tokens:,} tokens ({seg.width:.1f}%)' "
            f"style='flex:0 1 {seg.width:.3f}%;min-width:3px;{style.swatch_css(seg.name)}"
            f"color:{ink};font-size:11px;line-height:22px;text-align:center;overflow:hidden;"
            f"white-space:nowrap;box-sizing:border-box;border-right:1px solid {BORDER};'>"
            f"{_label(label, sw)}</div>"
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
            f"<div title='{esc(marker.name)} at {marker.tokens:,} tokens: {esc(words)}' "
            f"style='position:absolute;top:-5px;bottom:-5px;left:{marker.position:.3f}%;"
            f"border-left:{line} {FONT};'></div>"
            f"<div style='position:absolute;{place}left:{left:.3f}%;width:{width:.3f}%;"
            f"text-align:{align};font-size:10px;line-height:{_LABEL_ROW_PX}px;"
            f"white-space:nowrap;{_MUTED}'>"
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
        f"<div style='display:flex;height:22px;border:1px solid {BORDER};border-radius:3px;"
        f"overflow:hidden;background:{SURFACE};'>{''.join(segments)}</div>"
        f"{''.join(marks)}</div>"
    )


#: Height of one row of level labels around the bar.
_LABEL_ROW_PX = 14
#: Height of the bar with its border: where the rows of labels start.
_BAR_PX = 24
#: Width of one label character as a share of the bar, generous for a narrow notebook.
_LABEL_CHAR_PERCENT = 1.0


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
        box = (f"<span style='display:inline-block;width:14px;height:14px;vertical-align:middle;"
               f"border:1px solid {BORDER};{style.swatch_css(cat.name)}'></span>")
        rows.append(
            f"<tr><td style='{_CELL}'>{box} {esc(sw.tag)}</td>"
            f"<td style='{_CELL}'>{esc(cat.name)}</td>"
            f"<td style='{_NUM}'>{cat.tokens:,}</td>"
            f"<td style='{_NUM}'>{cat.percent:.1f}%</td></tr>"
        )
    head = "".join(f"<th style='{c}'>{h}</th>" for c, h in (
        (_CELL, ""), (_CELL, "category"), (_NUM, "tokens"), (_NUM, "% of window")))
    return (f"<table style='{_TABLE}'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _badges(item: ItemView) -> str:
    return "".join(
        f"<span style='display:inline-block;border:1px solid {BORDER};border-radius:3px;"
        f"padding:0 4px;margin-left:4px;font-size:11px;'>{esc(note)}</span>"
        for note in item.notes()
    )


def item_html(item: ItemView, *, full: bool = False) -> str:
    """One item folded: label, tokens and notes; open, the exact text that was sent."""
    text = item.text if full else item.preview
    more = ""
    if item.capped and not full:
        more = (f"<div style='{_MUTED}font-size:11px'>Showing the first {PREVIEW_CHARS:,} of "
                f"{len(item.text):,} characters; %context --raw prints the whole request.</div>")
    stale = ""
    if item.staleness:
        stale = (f"<div style='{_MUTED}font-size:11px'>Sent with this reminder: "
                 f"{esc(item.staleness)}</div>")
    return (
        f"<details style='margin:2px 0 2px 12px'><summary><b>{esc(item.label)}</b> "
        f"<span style='{_MUTED}'>{item.tokens:,} tokens</span>{_badges(item)}</summary>"
        f"{stale}<pre style='{_PRE}'>{esc(text)}</pre>{more}</details>"
    )


def unitemized_words(cat: CategoryView, source: str) -> str:
    """The label of a category's difference row: where its total comes from."""
    return (f"not itemized: the rows are offline estimates, the total is from "
            f"{_SOURCE_WORDS.get(source, source)}")


def _category_html(cat: CategoryView, source: str = "estimate") -> str:
    if not cat.items:
        return ""
    sw = style.swatch(cat.name)
    box = (f"<span style='display:inline-block;width:12px;height:12px;vertical-align:middle;"
           f"border:1px solid {BORDER};{style.swatch_css(cat.name)}'></span>")
    count = f"{len(cat.items)} item{'s' if len(cat.items) != 1 else ''}"
    shown = cat.items[-STATIC_MAX_ITEMS:]
    skipped = ""
    if len(shown) < len(cat.items):
        skipped = (f"<div style='{_MUTED}font-size:11px;margin-left:12px'>The "
                   f"{len(cat.items) - len(shown):,} earlier items are left out of this saved "
                   "view; the live view and %context --raw show them all.</div>")
    return (
        f"<details style='margin:3px 0'><summary>{box} [{esc(sw.tag)}] <b>{esc(cat.name)}</b> — "
        f"{cat.tokens:,} tokens ({cat.percent:.1f}%) · {count}</summary>"
        + skipped + "".join(item_html(item) for item in shown)
        + (f"<div style='margin:2px 0 2px 12px;{_MUTED}'>{cat.unitemized:+,} tokens "
           f"{esc(unitemized_words(cat, source))}</div>" if cat.unitemized else "")
        + "</details>"
    )


def decisions_html(decisions: Sequence[Mapping[str, Any]]) -> str:
    """The recall decisions of a turn: every memory considered and what happened to it."""
    if not decisions:
        return ""
    rows = []
    for d in decisions:
        age = d.get("age_days")
        size = d.get("bytes")
        rows.append(
            f"<tr><td style='{_CELL}font-family:{MONO}'>{esc(d.get('file', ''))}</td>"
            f"<td style='{_CELL}'><b>{esc(d.get('decision', ''))}</b></td>"
            f"<td style='{_CELL}'>{esc(d.get('path', ''))}</td>"
            f"<td style='{_CELL}'>{esc(age_text(age) if isinstance(age, int) else '')}</td>"
            f"<td style='{_NUM}'>{f'{size:,}' if isinstance(size, int) else ''}</td>"
            f"<td style='{_CELL}'>{esc(d.get('reason', ''))}</td></tr>"
        )
    head = "".join(f"<th style='{_CELL}'>{h}</th>" for h in
                   ("memory", "decision", "path", "age", "bytes", "reason"))
    return (f"<details><summary>Recall decisions ({len(decisions)})</summary>"
            f"<table style='{_TABLE}'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></details>")


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
    cats = "".join(_category_html(c, state.source) for c in state.categories)
    return (
        f"<div class='jupyter-memory-context' style='{_ROOT}'>"
        + context_header(state) + bar_html(state) + legend_html(state)
        + f"<div style='{_MUTED}font-size:12px'>{facts}</div>"
        + cats + decisions_html(state.decisions) + "</div>"
    )


def context_text(report: ContextReport) -> str:
    """The plain-text view (the same text ``%context`` prints)."""
    from jupyter_memory.context.assemble import render_text

    return render_text(report)


# --------------------------------------------------------------------------- gauges


_GAUGE_INK = {"ok": FONT, "near": style.WARN, "over": style.ERROR}
_GAUGE_WORDS = {"ok": "", "near": " (near the limit)", "over": " (over the limit)"}


def gauge_html(gauge: Gauge) -> str:
    """One budget as a labelled meter; the level is written, not only coloured."""
    pct = min(100.0, 100.0 * gauge.fraction)
    ink = _GAUGE_INK[gauge.level]
    fill = {"ok": "#2a5384", "near": "#dd6a2a", "over": "#8a1c16"}[gauge.level]
    pattern = "" if gauge.level == "ok" else (
        "background-image:repeating-linear-gradient(45deg,rgba(255,255,255,.35) 0 2px,"
        "transparent 2px 6px);")
    note = f" — {esc(gauge.note)}" if gauge.note else ""
    return (
        f"<div style='margin:4px 0'><div><b>{esc(gauge.label)}</b>: "
        f"<span style='color:{ink}'>{gauge.value:,} / {gauge.limit:,} {esc(gauge.unit)} "
        f"({100 * gauge.fraction:.1f}%){_GAUGE_WORDS[gauge.level]}</span>"
        f"<span style='{_MUTED}'>{note}</span></div>"
        f"<div role='meter' aria-valuemin='0' aria-valuemax='{gauge.limit}' "
        f"aria-valuenow='{gauge.value}' aria-label='{esc(gauge.label)}' "
        f"style='height:8px;max-width:420px;border:1px solid {BORDER};border-radius:2px;"
        f"background:{SURFACE};overflow:hidden'>"
        f"<div style='width:{pct:.2f}%;height:100%;background-color:{fill};{pattern}'></div>"
        f"</div></div>"
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


def memories_html(memories: Sequence[Any], findings: Sequence[Any] = ()) -> str:
    """The memory table (type, name, description, age, size, indexed) and doctor findings."""
    head = "".join(f"<th style='{c}'>{h}</th>" for c, h in (
        (_CELL, "type"), (_CELL, "name"), (_CELL, "description"), (_NUM, "age"),
        (_NUM, "size"), (_CELL, "indexed")))
    rows = []
    for m in memories:
        rows.append(
            f"<tr><td style='{_CELL}'>{esc(m.type or '—')}</td>"
            f"<td style='{_CELL}' title='{esc(m.file)}'><b>{esc(m.name)}</b><br>"
            f"<code style='font-size:11px'>{esc(m.file)}</code></td>"
            f"<td style='{_CELL}'>{esc(m.description or '')}</td>"
            f"<td style='{_NUM}'>{esc(age_text(m.age_days))}</td>"
            f"<td style='{_NUM}'>{esc(_size(m.bytes))}</td>"
            f"<td style='{_CELL}'>{'yes' if m.indexed else 'no — not in MEMORY.md'}</td></tr>"
        )
    table = (f"<table style='{_TABLE}'><thead><tr>{head}</tr></thead>"
             f"<tbody>{''.join(rows)}</tbody></table>") if rows else "<div>No memories yet.</div>"
    count = f"{len(memories)} memor{'y' if len(memories) == 1 else 'ies'}"
    return (f"<div class='jupyter-memory-memories' style='{_ROOT}'><div><b>Memories</b> · "
            f"{count}</div>{table}{findings_html(findings)}</div>")


def memories_text(memories: Sequence[Any], findings: Sequence[Any] = ()) -> str:
    """The memory table as aligned plain text, then the findings."""
    # Names in full, as `%memory list` shows them: the column is as wide as the longest.
    wide = max([28, *(len(m.name) for m in memories)])
    lines = [f"{'type':<10} {'name':<{wide}} {'age':>12} {'size':>9}  indexed  description"]
    for m in memories:
        lines.append(f"{(m.type or '-')[:10]:<10} {m.name:<{wide}} {age_text(m.age_days):>12} "
                     f"{_size(m.bytes):>9}  {'yes' if m.indexed else 'NO ':<7}  "
                     f"{m.description or ''}")
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
    decisions = decisions_html(mem.decisions)
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
