"""What the model saw in one turn, as static HTML any viewer shows.

nbconvert HTML, GitHub, nbviewer and VS Code show an output's ``text/html`` with no kernel
and no extension (and often no scripts or styles of ours), so this is the only place there
that says what a turn sent: its prompt, the recall decisions, the context bar and the model
requests, each request with only what it adds to the previous one. Every text in it is the
model's, a memory's or a tool's, so it goes through :func:`~jupyter_memory.widgets.safe.escape`.

A notebook keeps one such view per ``%%agent`` output, so each part is capped and says what
it left out; the command that prints a request whole is named instead
(``jupyter-memory request NOTEBOOK --turn N --call K``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from jupyter_memory.context.request_parts import MissingPart, expand_request, record_lookup
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir.freshness import age_text
from jupyter_memory.sessions.request_view import (
    CallView,
    render_body,
    shared_with,
)
from jupyter_memory.widgets import style
from jupyter_memory.widgets.data import bar_order
from jupyter_memory.widgets.safe import escape

__all__ = ["PROMPT_CHARS", "REQUEST_CHARS", "request_command", "turn_inputs_html",
           "turn_requests_html"]

#: Characters of the prompt shown; the rest is counted.
PROMPT_CHARS = 600
#: Recall decisions listed, and characters of each one's reason.
RECALL_ROWS = 6
REASON_CHARS = 60
#: Characters of one request's readable view, and of all requests of the turn together.
CALL_CHARS = 700
REQUEST_CHARS = 1_600

_PRE = "white-space:pre-wrap;font-size:11px;margin:2px 0"
_SMALL = "font-size:12px;opacity:.8"


def request_command(notebook: str | None, turn: Any, call: int) -> str:
    """The command that prints call ``call`` of turn ``turn`` whole, quoted for a shell."""
    where = shlex.quote(notebook) if notebook else "NOTEBOOK"
    return f"jupyter-memory request {where} --turn {turn} --call {call}"


def _cut(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, the cut counted."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… {len(text) - limit:,} more characters not shown"


def _short(reason: str) -> str:
    """A decision's reason on one line, cut at :data:`REASON_CHARS`."""
    reason = " ".join(reason.split())
    return reason if len(reason) <= REASON_CHARS else reason[: REASON_CHARS - 1] + "…"


def _prompt_html(record: Mapping[str, Any]) -> str:
    prompt = record.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        return ""
    return (f"<div style='{_SMALL}'>Prompt</div>"
            f"<pre style='{_PRE}'>{escape(_cut(prompt, PROMPT_CHARS))}</pre>")


def _recall_html(record: Mapping[str, Any]) -> str:
    recall = record.get("recall") or {}
    # a dict is a Mapping: asked first, as the abstract check is slow for 200 decisions
    decisions = [d for d in recall.get("decisions") or []
                 if type(d) is dict or isinstance(d, Mapping)]
    if not decisions:
        return ""
    rows = []
    for d in decisions[:RECALL_ROWS]:
        age = d.get("age_days")
        rows.append(
            "<tr>" + "".join(f"<td>{escape(v)}</td>" for v in (
                d.get("file", "?"), d.get("path", ""), d.get("decision", ""),
                _short(str(d.get("reason") or "")),
                age_text(age) if isinstance(age, int) else "")) + "</tr>")
    more = len(decisions) - RECALL_ROWS  # the full table: %context or the turn record
    left = (f"<div style='{_SMALL}'>{more:,} more decision{'s' if more != 1 else ''} not "
            "shown</div>") if more > 0 else ""
    mode = f" ({escape(recall['mode'])} mode)" if recall.get("mode") else ""
    return (f"<div style='{_SMALL}'>Recalled memories{mode}</div>"
            f"<table style='font-size:11px'><tr><th>memory</th><th>path</th><th>decision</th>"
            f"<th>why</th><th>age</th></tr>{''.join(rows)}</table>{left}")


def _bar_html(record: Mapping[str, Any]) -> str:
    """The record's context as the ``%context`` bar draws it: used, free, then the buffer."""
    ctx = record.get("context") or {}
    window = ctx.get("window")
    cats = [c for c in ctx.get("categories") or []
            if isinstance(c, Mapping) and isinstance(c.get("tokens"), int)]
    if not isinstance(window, int) or window <= 0 or not cats:
        return ""
    scale = max(window, sum(c["tokens"] for c in cats))
    segments, words = [], []
    drawn = [c for c in bar_order(cats, lambda c: str(c.get("name"))) if c["tokens"] > 0]
    for i, c in enumerate(drawn):
        name, tokens = str(c.get("name")), int(c["tokens"])
        width = 100.0 * tokens / scale
        words.append(f"{name} {tokens:,}")
        gap = style.gap_css(name, last=i == len(drawn) - 1)
        segments.append(f"<div class='{style.swatch_class(name)}' title='{escape(name)}' "
                        f"style='flex:0 1 {width:.1f}%;min-width:2px;{gap}"
                        f"{style.swatch_css(name)}'></div>")
    used = int(ctx.get("used") or 0)
    autocompact = (ctx.get("thresholds") or {}).get("autocompact")
    buffer = (f"; the autocompact buffer runs from the autocompact line at {autocompact:,} to "
              "the window's end" if isinstance(autocompact, int) else "")
    summary = (f"Context: {used:,} of {window:,} tokens used ({100.0 * used / window:.1f}%) · "
               + " · ".join(words) + buffer)
    return (f"<div style='{_SMALL}'>{escape(summary)}</div>"
            f"<div aria-hidden='true' class='{style.TRACK_CLASS}' style='display:flex;"
            f"height:12px;{style.TRACK_CSS}margin:2px 0'>{''.join(segments)}</div>")


def _call_numbers(record: Mapping[str, Any], entries: Sequence[Mapping[str, Any]]) -> list[int]:
    """Each main request's number among the turn's calls, as ``jupyter-memory request``
    counts them: every call made during the turn, in the order it was sent, from 1."""
    during = [str(e.get("sent") or "") for e in record.get("calls") or []
              if isinstance(e, Mapping) and e.get("during_turn")
              and e.get("turn") == record.get("turn")]
    mine = [str(e.get("sent") or "") for e in entries]
    order = sorted([(sent, 0, i) for i, sent in enumerate(mine)]
                   + [(sent, 1, -1) for sent in during])
    numbers = [0] * len(entries)
    for n, (_sent, kind, i) in enumerate(order, 1):
        if kind == 0:
            numbers[i] = n
    return numbers


def _first_since(record: Mapping[str, Any], entry: Mapping[str, Any],
                 body: Mapping[str, Any]) -> dict[str, str]:
    """What the turn's first request shares with earlier turns: the parts an earlier output
    of the notebook holds (a record keeps only its new parts), and the messages before the
    prompt."""
    since: dict[str, str] = {}
    own = record_lookup(record, None)
    version = record.get("version")
    if isinstance(version, int) and version >= 3:
        for part in ("system", "tools"):
            if isinstance(entry.get(part), str) and own(entry[part]) is None:
                since[part] = "an earlier turn"
    count = len(body.get("messages") or [])
    if count > 1:
        since["messages"] = str(count - 1)
        since["messages_from"] = "the conversation before this turn"
    return since


def _requests_html(record: Mapping[str, Any], notebook: str | None) -> str:
    entries = [e for e in record.get("requests") or [] if isinstance(e, Mapping)]
    if not entries:
        return ""
    turn = record.get("turn", "?")
    version = record.get("version")
    lookup = record_lookup(record)
    numbers = _call_numbers(record, entries)
    # The turn's tool outputs are in its tool-call folds above: a request names them.
    outputs = {str(c["id"]): (str(c.get("name")), c["result"])
             for c in record.get("tool_calls") or []
             if isinstance(c, Mapping) and c.get("id") and isinstance(c.get("result"), str)}
    views: list[CallView] = []
    items, budget = [], REQUEST_CHARS
    for entry, number in zip(entries, numbers, strict=True):
        command = request_command(notebook, turn, number)
        round_ = entry.get("round")
        head = f"Call {number}" + (f" · round {round_ + 1}" if isinstance(round_, int) else "")
        if entry.get("stop_reason"):
            head += f" · {entry['stop_reason']}"
        try:
            body = expand_request(entry, lookup, copied=False,  # only read here
                                  version=version if isinstance(version, int) else 1)
        except MissingPart:
            text = ("Not rebuilt here: a part of it is kept in an earlier output of the "
                    "notebook; the command below prints it whole.")
        except JupyterMemoryError as exc:
            text = f"Not rebuilt here: {exc}"
        else:
            view = CallView(turn=turn if isinstance(turn, int) else 0, index=number,
                            kind="main", agent=None, round=None, after_turn=False,
                            digest=entry.get("digest"), body=body)
            since = (shared_with(view, views) if views
                     else _first_since(record, entry, body))
            views.append(view)
            text = "\n".join(render_body(body, since=since, shown=outputs))
        shown = min(CALL_CHARS, max(budget, 0))
        budget -= min(len(text), CALL_CHARS)
        text = _cut(text, shown) if shown else f"{len(text):,} characters not shown"
        items.append(f"<details><summary>{escape(head)}</summary><pre style='{_PRE}'>"
                     f"{escape(text)}</pre></details>"
                     f"<div style='{_SMALL}'>Whole: <code>{escape(command)}</code></div>")
    count = len(entries)
    return (f"<div style='{_SMALL}'>Model requests ({count}; each shows what it adds to "
            f"the one before)</div>{''.join(items)}")


def turn_inputs_html(record: Mapping[str, Any]) -> str:
    """What the turn started from: its prompt, the recall decisions and the context bar.

    ``record`` is readable (its texts put back, ``request_parts.readable``).
    """
    return _prompt_html(record) + _recall_html(record) + _bar_html(record)


def turn_requests_html(record: Mapping[str, Any], notebook: str | None = None) -> str:
    """The turn's model requests, each with what it adds to the one before; ``notebook``
    is the notebook's name for the request command, when the kernel knows it."""
    return _requests_html(record, notebook)
