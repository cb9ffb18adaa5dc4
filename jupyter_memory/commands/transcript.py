"""``jupyter-memory transcript``: list, show, import or prune session logs, or rebuild a
request.

The views of the command line over :mod:`jupyter_memory.sessions.resume`: a project's
session logs with the question each began with, the conversation a resume would rebuild,
a log copied in, old logs deleted on request, and the exact request bodies of a turn saved
in a notebook.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Registered after context and cost, whichever module is imported first: the help lists
# the subcommands in the order they were registered.
from jupyter_memory.commands import notebooks  # noqa: F401
from jupyter_memory.commands.base import (
    CommandContext,
    CommandUsageError,
    CommonArgs,
    arg,
    command,
)
from jupyter_memory.errors import InvalidPath
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.sessions.resume import (
    Resumed,
    ResumeError,
    import_transcript,
    load_conversation,
    notebook_requests,
)

__all__ = ["TRANSCRIPT_HELP", "question_text"]

TRANSCRIPT_HELP = ("List, show, import or prune session logs (resume them with %agent resume), "
                   "or rebuild the exact request of a turn saved in a notebook.")


@dataclass(frozen=True, kw_only=True)
class TranscriptArgs(CommonArgs):
    action: str = arg(choices=("list", "show", "import", "request", "prune"),
                      help="list: this project's session logs; show FILE: the conversation a "
                           "resume would rebuild; import FILE: copy a log (e.g. the reference "
                           "tool's) in; request NOTEBOOK --turn N: the exact request body of a "
                           "saved turn; prune: delete every project's session logs older than "
                           "cleanupPeriodDays (memories are never deleted)")
    file: str | None = arg(nargs="?",
                           help="a session log (.jsonl) or a saved notebook (.ipynb)")
    turn: int | None = arg("--turn", type=int,
                           help="request: which agent turn of the notebook, counted from 1 in "
                                "cell order (default: the last)")
    round_index: int | None = arg("--round", type=int,
                                  help="request: which model call of the turn, from 0 "
                                       "(default: every call)")
    days: int | None = arg("--days", type=int,
                           help="prune: keep logs changed in the last DAYS days (default: "
                                "cleanupPeriodDays from the settings files, else 30)")


@command("transcript", TRANSCRIPT_HELP, TranscriptArgs)
def _transcript(ctx: CommandContext[TranscriptArgs]) -> int:
    action, file = ctx.args.action, ctx.args.file
    cwd = Path(ctx.project or os.getcwd()).resolve()
    if action == "list":
        return _list_logs(ctx, cwd)
    if action == "prune":
        return _prune_logs(ctx, cwd)
    if not file:
        raise ResumeError(f"transcript {action} needs a FILE: a session log (.jsonl) or a "
                          "saved notebook (.ipynb).")
    if action == "request":
        rebuilt = notebook_requests(Path(file), turn=ctx.args.turn,
                                    round_index=ctx.args.round_index)
        ctx.emit(rebuilt, _render_requests(rebuilt))
        return 0
    if action == "show":
        resumed = load_conversation(Path(file))
        ctx.emit(resumed.to_json(), _render(resumed))
        return 0
    imported = import_transcript(Path(file), cwd=cwd, env=ctx.env)
    text = (f"{imported.resumed.describe()}\nWrote {imported.path}\n"
            f"Resume it in a notebook of this project with: %agent resume {imported.path}")
    ctx.emit(imported.to_json(), text)
    return 0


def _render_requests(rebuilt: Mapping[str, Any]) -> str:
    lines = []
    for item in rebuilt["requests"]:
        lines.append(f"# turn {rebuilt['turn']}, model call {item['round']} "
                     f"({item['digest'] or 'no digest recorded'})")
        lines.append(json.dumps(item["body"], ensure_ascii=False, indent=2))
    if not rebuilt["requests"]:
        lines.append(f"Turn {rebuilt['turn']} made no model call.")
    return "\n".join(lines)


def _list_logs(ctx: CommandContext[TranscriptArgs], cwd: Path) -> int:
    from jupyter_memory.memdir.location import transcripts_dir

    folder = transcripts_dir(cwd, ctx.env)
    root = Root.declare("transcripts", folder)
    logs = sorted(root.matching("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True) \
        if folder.is_dir() else []
    rows: list[dict[str, Any]] = []
    for log in logs:
        info = log.stat()
        rows.append({"session_id": log.stem, "path": str(log), "bytes": info.st_size,
                     "modified": _iso(info.st_mtime), "first_prompt": _first_prompt(log, root)})
    lines = [f"{r['modified'][:16]}  {r['session_id']}  {r['bytes']:>9,} B  {r['first_prompt']}"
             for r in rows] or [f"No session logs in {folder}."]
    ctx.emit(rows, "\n".join(lines))
    return 0


def _prune_logs(ctx: CommandContext[TranscriptArgs], cwd: Path) -> int:
    """Delete old session logs only when asked: unlike the reference, running a cell never
    deletes files in the home folder as a side effect (docs/reference.md)."""
    from jupyter_memory.memdir.location import transcripts_dir
    from jupyter_memory.memdir.settings import load_settings
    from jupyter_memory.transcript.retention import cleanup_old_transcripts

    days = ctx.args.days
    if days is None:
        days = load_settings(cwd, ctx.env).cleanup_period_days
    elif days < 0:
        raise CommandUsageError(f"--days must be 0 or more, not {days}.")
    projects = transcripts_dir(cwd, ctx.env).parent
    removed = cleanup_old_transcripts(projects, days)
    logs = [p for p in removed if p.suffix == ".jsonl"]
    lines = [f"Deleted {len(logs)} session log(s) older than {days} day(s) from {projects} "
             f"({len(removed)} file(s) and folder(s) in all; memories are never deleted)."]
    lines += [f"  {p}" for p in removed]
    ctx.emit({"days": days, "folder": str(projects), "removed": [str(p) for p in removed]},
             "\n".join(lines))
    return 0


def _iso(mtime: float) -> str:
    import datetime as _dt

    return _dt.datetime.fromtimestamp(mtime, _dt.timezone.utc).isoformat(timespec="seconds")


def _first_prompt(path: Path, root: Root, max_lines: int = 200) -> str:
    try:
        with root.reader(path) as raw, io.TextIOWrapper(
                raw, encoding="utf-8", errors="replace") as handle:
            for n, line in enumerate(handle):
                if n >= max_lines:
                    break
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if entry.get("type") != "user" or entry.get("isMeta"):
                    continue
                content = (entry.get("message") or {}).get("content")
                text = question_text(_plain(content, skip_reminders=True))
                if text:
                    return _short(text, 70)
    except (OSError, InvalidPath):
        return ""
    return ""


_REMINDER = re.compile(r"<system-reminder>.*?(</system-reminder>|$)", re.DOTALL)
_TAG_OPEN = re.compile(r"<(command-name|command-args|command-message|bash-input)>")
_OUTPUT_ONLY = ("<local-command-stdout>", "<local-command-stderr>", "<bash-stdout>",
                "<bash-stderr>", "Caveat: The messages below were generated by the user")


def question_text(text: str) -> str:
    """What the person asked, without the wrapper around it ('' when it is all wrapper).

    Our logs put the cells run before a question in ``<system-reminder>`` blocks; the
    reference's logs wrap a slash command as ``<command-message>`` / ``<command-name>`` /
    ``<command-args>`` (shown as ``/name args``) and a shell escape as ``<bash-input>``,
    and log command output and caveats as user entries of their own (skipped).
    """
    text = _REMINDER.sub("", text).strip()
    if text.startswith(_OUTPUT_ONLY):
        return ""
    tags = dict(_tags(text))
    if "command-name" in tags:
        return f"{tags['command-name']} {tags.get('command-args', '')}".strip()
    if "bash-input" in tags:
        return f"! {tags['bash-input']}"
    return text


def _tags(text: str) -> Iterator[tuple[str, str]]:
    """``(name, stripped value)`` of each ``<name>value</name>`` wrapper tag, in order.

    A tag that never closes is skipped, as is every later tag of that name (none of them
    can close either): looking for the closing tag again from each opening one would
    make a log line of unclosed tags cost time quadratic in its length.
    """
    unclosed: set[str] = set()
    position = 0
    while (opening := _TAG_OPEN.search(text, position)) is not None:
        name = opening[1]
        close = -1 if name in unclosed else text.find(f"</{name}>", opening.end())
        if close < 0:
            unclosed.add(name)
            position = opening.start() + 1
            continue
        yield name, text[opening.end() : close].strip()
        position = close + len(name) + 3


def _plain(content: Any, *, skip_reminders: bool = False) -> str:
    """The text of a message; with ``skip_reminders``, only what the person typed (the
    harness puts the cells they ran before it, each in a ``<system-reminder>``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable):
        return " ".join(
            b.get("text", "") for b in content
            if isinstance(b, Mapping) and b.get("type") == "text"
            and not (skip_reminders and str(b.get("text", "")).lstrip().startswith("<system-reminder>"))
        )
    return ""


def _short(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _render(resumed: Resumed) -> str:
    lines = [resumed.describe()]
    for message in resumed.messages:
        for block in message["content"]:
            kind = block.get("type")
            if kind == "text":
                body = _short(block.get("text", ""), 160)
            elif kind == "tool_use":
                body = f"→ {block.get('name')} {_short(json.dumps(block.get('input'), ensure_ascii=False), 120)}"
            elif kind == "tool_result":
                body = f"← {_short(_plain(block.get('content')) or str(block.get('content')), 120)}"
            else:
                body = f"[{kind}]"
            lines.append(f"{message['role']:>9}: {body}")
    return "\n".join(lines)
