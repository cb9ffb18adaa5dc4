"""Output bundles for agent cells: a rich record plus fallbacks any viewer can show.

Every bundle carries ``text/plain`` and ``text/html`` beside the rich types, so a saved
notebook reads well on GitHub or in nbconvert HTML with no kernel and no extension. Its
``text/markdown`` and ``text/html`` hold the answer, tool calls and file names the way
:mod:`jupyter_memory.widgets.safe` makes them safe: a front end that renders them (a live
output is trusted) finds no markup that this package did not write.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from jupyter_memory.agent.loop import TURN_MIME
from jupyter_memory.context.request_parts import readable
from jupyter_memory.widgets.compaction import compaction_html, compaction_text
from jupyter_memory.widgets.safe import escape, markdown_html, md_code, md_text, safe_markdown
from jupyter_memory.widgets.turn_static import turn_inputs_html, turn_requests_html

#: Characters of a tool result kept in the static HTML; the rest is counted.
_TOOL_RESULT_PREVIEW = 600


def _short_input(data: Any, limit: int = 120) -> str:
    text = json.dumps(data, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_text(name: str, data: Any) -> str:
    """A tool call in one line of plain text: its name and its input, shortened."""
    return f"{name} {_short_input(data)}"


def tool_line(name: str, data: Any) -> str:
    """The same line as markdown: the name as code, the input as literal text (both are
    the model's, so neither may carry markup)."""
    return f"{md_code(name)} {md_text(_short_input(data))}"


def _quoted(markdown: str) -> str:
    return "\n".join("> " + line if line else ">" for line in markdown.split("\n"))


def _delegations(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [d for d in record.get("delegations") or [] if isinstance(d, dict)]


def delegation_facts(run: dict[str, Any]) -> list[str]:
    """What a delegated agent did, in short plain-text pieces: its status, its tool calls,
    its tokens and the memories it saved in its own folder."""
    calls = [c for c in run.get("tool_calls") or [] if isinstance(c, dict)]
    facts = [str(run.get("status") or "?")]
    if run.get("error"):
        facts.append(str(run["error"]))
    names = ", ".join(str(c.get("name", "?")) for c in calls)
    facts.append(f"{len(calls)} tool call{'s' if len(calls) != 1 else ''}"
                 + (f" ({names})" if names else ""))
    if run.get("usage"):
        facts.append(usage_text(dict(run["usage"])))
    written = [str(w.get("file")) for w in run.get("memories_written") or []
               if isinstance(w, dict)]
    if written:
        facts.append("saved " + ", ".join(written) + " in its own memory")
    return facts


def delegation_line(run: dict[str, Any]) -> str:
    """One delegation as safe markdown: the agent, the task's summary, what it did."""
    head = f"**Delegated to {md_code(str(run.get('agent', '?')))}**"
    if run.get("description"):
        head += f": {md_text(str(run['description']))}"
    return head + " · " + md_text(" · ".join(delegation_facts(run)))


def turn_markdown(record: dict[str, Any]) -> str:
    """The turn as safe markdown: compactions, tools used, delegations, the answer,
    events, footer."""
    parts: list[str] = []
    if record.get("compactions"):
        parts.extend(md_text(compaction_text(item)) for item in record["compactions"])
    calls = record.get("tool_calls") or []
    if calls:
        lines = [f"- {'⚠ ' if c.get('is_error') else ''}{tool_line(c['name'], c.get('input'))}"
                 for c in calls]
        parts.append("**Tools used**\n\n" + "\n".join(lines))
    parts.extend(delegation_line(run) for run in _delegations(record))
    parts.append(safe_markdown(record.get("answer") or "_(no answer)_"))
    for event in record.get("events") or []:
        parts.append(_quoted(f"**{md_text(event['kind'])}**: {md_text(event['text'])}"))
    parts.append(f"<sub>{md_text(_footer(record))}</sub>")
    return "\n\n".join(parts)


def usage_text(usage: dict[str, Any]) -> str:
    """A turn's token use, input split the way it is billed.

    The API's ``input_tokens`` counts only what was neither read from nor written to the
    cache, so a request served from the cache reports "0" input; the request's size is the
    sum of the three, and that is what is shown first.
    """
    new = int(usage.get("input_tokens") or 0)
    read = int(usage.get("cache_read_input_tokens") or 0)
    written = int(usage.get("cache_creation_input_tokens") or 0)
    return (f"{new + read + written:,} in ({new:,} uncached · {read:,} cache read · "
            f"{written:,} cache write) · {int(usage.get('output_tokens') or 0):,} out")


def usage_words(record: Mapping[str, Any]) -> str:
    """The turn's usage as :func:`usage_text` words it, marked when the local fake server
    made the numbers up (every footer of a turn says so)."""
    simulated = any(row.get("simulated") for row in record.get("cost") or []
                    if isinstance(row, Mapping) and row.get("kind") == "main")
    return (usage_text(dict(record.get("usage") or {}))
            + (" (simulated: the local server)" if simulated else ""))


def _footer(record: dict[str, Any]) -> str:
    """The footer line as plain text: turn, model, tokens, context, memories saved."""
    usage = record.get("usage") or {}
    ctx = record.get("context") or {}
    bits = [f"turn {record.get('turn', '?')}", record.get("model", "")]
    if usage:
        bits.append(usage_words(record))
    if ctx.get("window"):
        bits.append(f"context {ctx.get('used', 0):,} / {ctx['window']:,}")
    written = record.get("memories_written") or []
    if written:
        bits.append("saved " + ", ".join(w["file"] for w in written))
    return " · ".join(str(b) for b in bits if b)


def _calls_html(calls: list[dict[str, Any]]) -> list[str]:
    rows = []
    for c in calls:
        result = str(c.get("result", ""))
        if len(result) > _TOOL_RESULT_PREVIEW:
            cut = len(result) - _TOOL_RESULT_PREVIEW
            result = f"{result[:_TOOL_RESULT_PREVIEW]}\n… {cut:,} more characters not shown"
        flag = " (error)" if c.get("is_error") else ""
        rows.append(
            "<details><summary><code>{}</code>{} {}</summary>"
            "<pre style='white-space:pre-wrap'>{}</pre></details>".format(
                escape(c["name"]), flag, escape(_short_input(c.get("input"))), escape(result))
        )
    return rows


def delegation_html(run: dict[str, Any]) -> str:
    """One delegation, folded: the task it was given, its tool calls and its answer."""
    summary = f"Delegated to <code>{escape(str(run.get('agent', '?')))}</code>"
    if run.get("description"):
        summary += f": {escape(str(run['description']))}"
    facts = escape(" · ".join(delegation_facts(run)))
    calls = [c for c in run.get("tool_calls") or [] if isinstance(c, dict)]
    where = (f"<div><small>Its messages: <code>{escape(str(run['transcript']))}</code></small>"
             "</div>" if run.get("transcript") else "")
    return (f"<details class='jupyter-memory-delegation'><summary>{summary} · {facts}</summary>"
            f"<div>Task</div><pre style='white-space:pre-wrap'>{escape(str(run.get('prompt', '')))}"
            "</pre>" + "".join(_calls_html(calls))
            + "<div>Its answer</div>" + markdown_html(str(run.get("answer") or "_(no answer)_"))
            + where + "</details>")


def turn_html(record: dict[str, Any], notebook: str | None = None) -> str:
    """The static turn: what the model saw (prompt, recall, context bar), the tool calls,
    the answer, the requests and the footer; ``record`` is readable."""
    rows = _calls_html(record.get("tool_calls") or [])
    rows += [delegation_html(run) for run in _delegations(record)]
    events = "".join(
        f"<blockquote><b>{escape(e['kind'])}</b>: {escape(e['text'])}</blockquote>"
        for e in record.get("events") or []
    )
    answer = markdown_html(record.get("answer") or "_(no answer)_")
    footer = f"<sub>{escape(_footer(record))}</sub>"
    return (
        "<div class='jupyter-memory-turn'>" + turn_inputs_html(record)
        + _compactions_html(record) + "".join(rows) + answer + events
        + turn_requests_html(record, notebook) + footer + "</div>"
    )


def _compactions_html(record: dict[str, Any]) -> str:
    """Automatic compactions of the turn: the boundary and the folded summary."""
    items = record.get("compactions") or []
    if not items:
        return ""
    return "".join(compaction_html(item) for item in items)


def turn_bundle(record: dict[str, Any], notebook: str | None = None) -> dict[str, Any]:
    """The output bundle of an agent cell: the record and its fallbacks.

    The record keeps each long text once, as a part (request_parts.py); the fallbacks show
    the texts themselves, found in the record or in the live session that made it.
    ``notebook`` names the notebook in the request command the HTML gives, when known.
    """
    shown = readable(record, sections=("tool_calls",))
    return {
        TURN_MIME: record,
        "text/markdown": turn_markdown(shown),
        "text/html": turn_html(shown, notebook),
        "text/plain": record.get("answer") or "(no answer)",
    }
