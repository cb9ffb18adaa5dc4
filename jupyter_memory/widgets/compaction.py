"""How a compaction reads in a notebook: the boundary with the size before and after, why
the size changed as it did, and the summary folded away, section by section under the
reference's names (HTML, plain text, the record)."""

from __future__ import annotations

from typing import Any

from jupyter_memory.agent.compaction.sections import (
    SUMMARY_SECTIONS,
    missing_sections,
    summary_sections,
)
from jupyter_memory.context.tokens import estimate_tokens
from jupyter_memory.widgets.safe import escape as esc
from jupyter_memory.widgets.safe import markdown_html

COMPACTION_MIME = "application/vnd.jupyter-memory.compaction+json"


def _method_words(data: dict[str, Any]) -> str:
    return "from the session notes" if data.get("method") == "session_memory" else (
        "by the main model")


def sections_note(data: dict[str, Any]) -> str:
    """Which of the nine summary sections the summary has, for the line that heads it.

    Empty for a summary made from the session notes, which have headings of their own.
    """
    if data.get("method") == "session_memory":
        return ""
    _, sections = summary_sections(str(data.get("summary") or ""))
    missing = missing_sections(sections)
    total = len(SUMMARY_SECTIONS)
    if not missing:
        return f"all {total} sections"
    if len(missing) == total:
        return f"none of the {total} section headings found"
    return f"{total - len(missing)} of the {total} sections; missing: {', '.join(missing)}"


def summary_html(summary: str) -> str:
    """The summary as HTML: each section under its name as the reference spells it
    (summaries written with the former names included), else the markdown as written."""
    preamble, sections = summary_sections(summary)
    if not sections:
        return markdown_html(summary)
    parts = [markdown_html(preamble)] if preamble else []
    for section in sections:
        number = f"{section.number}. " if section.number is not None else ""
        parts.append(f"<h4 style='margin:8px 0 2px'>{esc(number)}{esc(section.name)}</h4>"
                     f"{markdown_html(section.body)}")
    return "".join(parts)


def compaction_breakdown(data: dict[str, Any]) -> list[str]:
    """Why the size changed as it did, in sentences: what stays, what replaced what.

    A compaction replaces only the conversation. The system prompt, tools, instructions
    and memory index are sent either way, and the summary, the re-attached files and any
    messages kept word for word take the conversation's place, so a short conversation
    can come out the same size or bigger. ``fixed_tokens`` (the part that is always sent)
    is in the records ``%compact`` displays; records without it get the rest.
    """
    pre, post = int(data.get("pre_tokens") or 0), int(data.get("post_tokens") or 0)
    summary = estimate_tokens(str(data.get("summary") or ""))
    files = data.get("files") or []
    file_tokens = sum(int(f.get("tokens") or 0) for f in files)
    kept = int(data.get("kept_messages") or 0)
    lines = []
    if post >= pre:
        lines.append(
            "The request did not shrink: the conversation was already shorter than what "
            "replaces it. Compaction pays off on a long conversation; %compact --undo puts "
            "this one back.")
    fixed = data.get("fixed_tokens")
    if isinstance(fixed, int) and 0 < fixed <= max(pre, post):
        lines.append(
            f"Only the conversation is replaced: about {max(pre - fixed, 0):,} → "
            f"{max(post - fixed, 0):,} tokens. The system prompt, tools, instructions and "
            f"memory index (about {fixed:,} tokens) are sent either way.")
    now = [f"the summary (about {summary:,} tokens)"]
    if files:
        now.append(f"{len(files)} re-attached file{'s' if len(files) != 1 else ''} "
                   f"({file_tokens:,} tokens)")
    if kept:
        now.append(f"the {kept} most recent message{'s' if kept != 1 else ''} word for word")
    lines.append("In the conversation's place: " + ", ".join(now) + ".")
    return lines


def compaction_text(data: dict[str, Any]) -> str:
    """Plain-text view of a compaction record (``CompactionResult.to_json()``)."""
    lines = [
        f"──── Conversation compacted ({data.get('trigger', 'manual')}, summary "
        f"{_method_words(data)}): {data.get('pre_tokens', 0):,} → "
        f"{data.get('post_tokens', 0):,} tokens ────",
    ]
    lines += compaction_breakdown(data)
    files = data.get("files") or []
    if files:
        lines.append("Re-attached files: " + ", ".join(f["path"] for f in files))
    if data.get("kept_messages"):
        lines.append(f"Kept word for word: the {data['kept_messages']} most recent messages")
    for text in data.get("post_hook_output") or []:
        lines.append(f"PostCompact hook: {text}")
    for text in data.get("warnings") or []:
        lines.append(f"Warning: {text}")
    note = sections_note(data)
    lines += ["", f"Summary ({note}):" if note else "Summary:", data.get("summary", ""), "",
              "Undo with %compact --undo (the earlier conversation is in the cell outputs "
              "above and in the session log)."]
    return "\n".join(lines)


def compaction_html(data: dict[str, Any]) -> str:
    """HTML view: the boundary line, the summary folded, the way back."""
    note = sections_note(data)
    head = (
        f"Conversation compacted ({esc(str(data.get('trigger', 'manual')))}, summary "
        f"{_method_words(data)}): <b>{data.get('pre_tokens', 0):,}</b> → "
        f"<b>{data.get('post_tokens', 0):,}</b> tokens"
    )
    parts = [
        "<div class='jupyter-memory-compaction'>",
        "<div style='border-top:2px dashed #999;border-bottom:2px dashed #999;padding:4px 0;"
        f"margin:6px 0;text-align:center'>{head}</div>",
        "".join(f"<p style='margin:2px 0'>{esc(line)}</p>" for line in compaction_breakdown(data)),
        f"<details><summary>Summary{esc(f', {note}' if note else '')} (click to open)"
        f"</summary>{summary_html(str(data.get('summary', '')))}</details>",
    ]
    files = data.get("files") or []
    if files:
        items = "".join(
            f"<li><code>{esc(f['path'])}</code> ({f.get('tokens', 0):,} tokens"
            f"{', cut' if f.get('truncated') else ''})</li>" for f in files)
        parts.append(f"<details><summary>Re-attached files ({len(files)})</summary>"
                     f"<ul>{items}</ul></details>")
    if data.get("kept_messages"):
        parts.append(f"<p>Kept word for word: the {data['kept_messages']} most recent "
                     "messages.</p>")
    for text in data.get("post_hook_output") or []:
        parts.append(f"<blockquote><b>PostCompact hook</b>: {esc(text)}</blockquote>")
    for text in data.get("warnings") or []:
        parts.append(f"<blockquote><b>warning</b>: {esc(text)}</blockquote>")
    log = data.get("transcript_path")
    where = f" and in the session log <code>{esc(log)}</code>" if log else ""
    parts.append(
        "<p><sub>Undo with <code>%compact --undo</code>. The earlier conversation is kept in "
        f"the cell outputs above{where}.</sub></p></div>"
    )
    return "".join(parts)


def compaction_bundle(data: dict[str, Any]) -> dict[str, Any]:
    """Output bundle of a compaction: the record, HTML and plain text."""
    return {
        COMPACTION_MIME: data,
        "text/html": compaction_html(data),
        "text/plain": compaction_text(data),
    }
