"""Any model call of any turn, exactly as sent: the data and text of ``%request``.

Two sources give the same list of :class:`CallView`:

- the live session (:func:`live_calls`): its call log (``session.calls``,
  context/call_log.py) holds every call this kernel's session made, by kind;
- a saved notebook (:func:`notebook_calls`): each turn record's ``requests`` (the main
  agent's rounds) and ``calls`` (every other call: the selector, compaction summaries,
  session notes, a defined agent's calls, and what ran after the previous turn —
  extraction, notes, ``%%remember``). A call made after the notebook's last turn has no
  later record to carry it; the view says so.

Turns count from 1 as the notebook shows them: the live session's turn numbers, or the
turn records of a saved notebook in cell order. Calls count from 1 within their turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_memory.context.call_log import ModelCall
from jupyter_memory.context.request_parts import content_digest, expand_request, notebook_parts
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.sessions.resume import ResumeError, notebook_entries

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session

__all__ = ["CallView", "RequestViewError", "TurnCalls", "calls_json", "live_calls",
           "notebook_calls", "render_body", "render_calls", "select_calls",
           "shared_with"]

KIND_NAMES = {
    "main": "main agent", "delegated": "delegated agent", "selector": "recall selector", "extraction": "extraction agent",
    "remember": "%%remember filing", "summary": "compaction summary", "notes": "session notes",
}

AFTER_LAST_TURN = (
    "Calls made after the last turn (extraction, session notes, %%remember) are carried by "
    "the next turn's record: run one more %%agent turn and save to keep them in the notebook, "
    "or record the session (%agent record FILE) to keep every exchange.")


class RequestViewError(JupyterMemoryError):
    """A turn or call that is not there, or a body that cannot be rebuilt."""


@dataclass
class CallView:
    """One model call: which turn, which call of it, what kind, and its exact body."""

    turn: int
    index: int
    """1 for the first call of its turn."""
    kind: str
    agent: str | None
    round: int | None
    """For the main agent's calls: the round of the agent loop, from 1."""
    after_turn: bool
    digest: str | None
    body: dict[str, Any]

    @property
    def label(self) -> str:
        what = KIND_NAMES.get(self.kind, self.kind)
        if self.agent:
            what = f"agent {self.agent}" + ("" if self.kind in ("main", "delegated")
                                            else f" ({what})")
        if self.round is not None and self.kind == "main" and not self.agent:
            what += f", round {self.round}"
        if self.after_turn:
            what += ", after the turn"
        return what

    def to_json(self) -> dict[str, Any]:
        return {"turn": self.turn, "call": self.index, "kind": self.kind, "agent": self.agent,
                "round": self.round, "after_turn": self.after_turn, "digest": self.digest,
                "body": self.body}


@dataclass
class TurnCalls:
    """Every call of every turn of one source, in order."""

    source: str
    """``"this kernel's session"`` or the notebook's path."""
    calls: list[CallView]
    turns: int
    notes: list[str] = field(default_factory=list)

    def of_turn(self, turn: int) -> list[CallView]:
        return [c for c in self.calls if c.turn == turn]


def _numbered(calls: Iterable[CallView]) -> list[CallView]:
    out: list[CallView] = []
    counts: dict[int, int] = {}
    rounds: dict[int, int] = {}
    for call in calls:
        counts[call.turn] = counts.get(call.turn, 0) + 1
        call.index = counts[call.turn]
        if call.kind == "main" and not call.agent and call.round is None:
            rounds[call.turn] = rounds.get(call.turn, 0) + 1
            call.round = rounds[call.turn]
        out.append(call)
    return out


def live_calls(session: Session) -> TurnCalls:
    """Every model call this kernel's session (and its defined agents) made."""
    log = session.calls
    views = []
    for call in log.calls:
        views.append(CallView(
            turn=call.turn, index=0, kind=call.kind, agent=call.agent, round=None,
            after_turn=not call.during_turn, digest=call.digest, body=_live_body(log, call)))
    return TurnCalls("this kernel's session", _numbered(views),
                     session.conversation.turn_count)


def _live_body(log: Any, call: ModelCall) -> dict[str, Any]:
    try:
        body: dict[str, Any] = log.body(call)
    except JupyterMemoryError as exc:
        raise RequestViewError(f"Call {call.number} of this session: {exc}") from exc
    return body


def notebook_calls(path: Path) -> TurnCalls:
    """Every model call the turn records saved in ``path`` hold, by turn."""
    records = [data for kind, data in notebook_entries(path)[0] if kind == "turn"]
    if not records:
        raise ResumeError(f"{path} holds no agent turn output: run an %%agent cell and save "
                          "the notebook, or check that its outputs were not cleared.")
    parts = notebook_parts(records)
    position = {(r.get("session_id"), r.get("turn")): n for n, r in enumerate(records, 1)}
    views: list[tuple[tuple[int, int, str], CallView]] = []
    seen: set[tuple[Any, Any]] = set()
    for n, record in enumerate(records, 1):
        for entry in record.get("requests") or []:
            round_ = entry.get("round")
            view = CallView(turn=n, index=0, kind="main", agent=None,
                            round=round_ + 1 if isinstance(round_, int) else None,
                            after_turn=False, digest=entry.get("digest"),
                            body=_saved_body(entry, parts, path, n))
            views.append(((n, 0, str(entry.get("sent") or "")), view))
        for entry in record.get("calls") or []:
            key = (record.get("session_id"), entry.get("number"))
            if key in seen:  # carried again after a failed turn whose record was saved
                continue
            seen.add(key)
            turn = position.get((record.get("session_id"), entry.get("turn")))
            if turn is None:  # before the session's first turn (a %%remember), or a
                turn = n - 1 if not entry.get("during_turn") else n  # turn not saved
            view = CallView(turn=turn, index=0, kind=str(entry.get("kind")),
                            agent=entry.get("agent"), round=None,
                            after_turn=not entry.get("during_turn"),
                            digest=entry.get("digest"), body=_saved_body(entry, parts, path, n))
            views.append(((turn, 1 if view.after_turn else 0, str(entry.get("sent") or "")),
                          view))
    views.sort(key=lambda item: item[0])
    notes = []
    if not any(r.get("calls") for r in records):
        notes.append("These turn records keep the main agent's calls only (they were saved "
                     "before side calls were recorded): re-run the notebook to keep every call.")
    return TurnCalls(str(path), _numbered(v for _, v in views), len(records), notes)


def _saved_body(entry: Mapping[str, Any], parts: Mapping[str, Any], path: Path,
                turn: int) -> dict[str, Any]:
    try:
        return expand_request(entry, parts)
    except JupyterMemoryError as exc:
        raise RequestViewError(f"Turn {turn} of {path}: {exc}") from exc


def select_calls(found: TurnCalls, *, turn: int | None = None, call: int | None = None,
                 kind: str | None = None) -> tuple[int, list[CallView]]:
    """The turn asked for (default: the last) and its calls that match ``call``/``kind``."""
    if found.turns == 0 and not found.calls:
        raise RequestViewError("No model call yet in this session: run an %%agent cell first.")
    number = found.turns if turn is None else turn
    lowest = 0 if any(c.turn == 0 for c in found.calls) else 1
    if not lowest <= number <= max(found.turns, lowest):
        raise RequestViewError(
            f"--turn {turn} is out of range: {found.source} holds {found.turns} "
            f"turn{'s' if found.turns != 1 else ''} ({lowest} to {found.turns}).")
    calls = found.of_turn(number)
    if kind is not None:
        calls = [c for c in calls if c.kind == kind]
        if not calls:
            made = sorted({c.kind for c in found.of_turn(number)})
            raise RequestViewError(
                f"Turn {number} made no {kind} call; its calls are of kind "
                f"{', '.join(made) or 'none'}.")
    if call is not None:
        if not 1 <= call <= len(found.of_turn(number)):
            count = len(found.of_turn(number))
            raise RequestViewError(
                f"--call {call} is out of range: turn {number} made {count} model "
                f"call{'s' if count != 1 else ''} (1 to {count}).")
        calls = [c for c in calls if c.index == call]
        if not calls:
            raise RequestViewError(f"Call {call} of turn {number} is not a {kind} call.")
    return number, calls


# --------------------------------------------------------------------------- text


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(str(b.get("text", "")) for b in content
                         if isinstance(b, Mapping) and b.get("type") == "text")
    return ""


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.split("\n"))


def _marks(blocks: Any) -> str:
    if not isinstance(blocks, list):
        return ""
    marked = [str(j + 1) for j, b in enumerate(blocks)
              if isinstance(b, Mapping) and "cache_control" in b]
    return f" [cache mark on block {', '.join(marked)}]" if marked else ""


def _block_line(block: Mapping[str, Any],
                shown: Mapping[str, tuple[str, str]] | None = None) -> str:
    kind = block.get("type")
    mark = " [cache mark]" if "cache_control" in block else ""
    if kind == "text":
        return f"text{mark}:\n{_indent(str(block.get('text', '')), '      ')}"
    if kind == "tool_use":
        args = json.dumps(block.get("input"), ensure_ascii=False)
        return f"tool_use {block.get('name')} {args}{mark}"
    if kind == "tool_result":
        body = _text(block.get("content")) or json.dumps(block.get("content"), ensure_ascii=False)
        error = " (error)" if block.get("is_error") else ""
        name, result = (shown or {}).get(str(block.get("tool_use_id")), ("", None))
        if result is not None and result == body:
            return (f"tool_result{error}{mark}: the output of {name} shown above "
                    f"({len(body):,} characters)")
        return f"tool_result{error}{mark}:\n{_indent(body, '      ')}"
    return f"{kind}{mark}"


def render_body(body: Mapping[str, Any], *, since: Mapping[str, str] | None = None,
                shown: Mapping[str, tuple[str, str]] | None = None) -> list[str]:
    """The readable body; ``since`` names what is unchanged since an earlier call.

    ``shown`` maps a tool call's id to its tool's name and its output, when the page
    already shows that output: a tool result with exactly that text is named, not
    repeated (the static turn view shows each output once).
    """
    since = since or {}
    lines = []
    params = {k: v for k, v in body.items() if k not in ("system", "tools", "messages")}
    lines.append("  " + ", ".join(f"{k}: {json.dumps(v, ensure_ascii=False)}"
                                  for k, v in params.items()))
    system = body.get("system")
    if system is not None:
        blocks = system if isinstance(system, list) else [{"type": "text", "text": system}]
        head = f"  system ({len(blocks)} block{'s' if len(blocks) != 1 else ''}){_marks(system)}"
        if "system" in since:
            lines.append(f"{head}: unchanged since {since['system']}")
        else:
            lines.append(head + ":")
            lines.append(_indent(_text(blocks)))
    tools = body.get("tools")
    if tools is not None:
        names = ", ".join(str(t.get("name")) for t in tools if isinstance(t, Mapping))
        size = len(json.dumps(tools, ensure_ascii=False))
        same = f"; unchanged since {since['tools']}" if "tools" in since else ""
        lines.append(f"  tools ({len(tools)}, {size:,} characters){_marks(tools)}: "
                     f"{names}{same}")
    messages = list(body.get("messages") or [])
    shared = int(since.get("messages", 0))
    lines.append(f"  messages ({len(messages)})" + (
        f": the first {shared} as in {since['messages_from']}; new from message {shared + 1}"
        if shared else "") + ":")
    for i, message in enumerate(messages, 1):
        if i <= shared:
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        lines.append(f"    [{i}] {message.get('role')}:")
        for block in blocks:
            if isinstance(block, Mapping):
                lines.append("      " + _block_line(block, shown))
    return lines


def shared_with(call: CallView, earlier: Sequence[CallView]) -> dict[str, str]:
    """What ``call`` shares with the previous call of its kind, and since which turn."""
    same_kind = [c for c in earlier if c.kind == call.kind and c.agent == call.agent]
    if not same_kind:
        return {}
    previous = same_kind[-1]
    out: dict[str, str] = {}
    for part in ("system", "tools"):
        if part in call.body and content_digest(call.body[part]) == content_digest(
                previous.body.get(part)):
            first = previous
            for c in reversed(same_kind):
                if content_digest(c.body.get(part)) == content_digest(
                        call.body[part]):
                    first = c
                else:
                    break
            out[part] = f"turn {first.turn} (call {first.index})"
    mine, theirs = call.body.get("messages") or [], previous.body.get("messages") or []
    shared = 0
    for a, b in zip(mine, theirs, strict=False):
        if _no_marks(a) != _no_marks(b):
            break
        shared += 1
    if shared:
        out["messages"] = str(shared)
        out["messages_from"] = f"turn {previous.turn} call {previous.index}"
    return out


def _no_marks(message: Any) -> Any:
    if not isinstance(message, Mapping) or not isinstance(message.get("content"), list):
        return message
    return {**message, "content": [{k: v for k, v in b.items() if k != "cache_control"}
                                   if isinstance(b, Mapping) else b
                                   for b in message["content"]]}


def render_calls(found: TurnCalls, turn: int, calls: Sequence[CallView], *,
                 diff: bool = False) -> str:
    """The readable view of ``calls`` of ``turn``; with ``diff``, each against the previous
    call of its kind (system prompt and tools unchanged since when, the messages added)."""
    total = len(found.of_turn(turn))
    lines = [f"Turn {turn} of {found.source}: {total} model call{'s' if total != 1 else ''}."]
    lines += found.notes
    if not calls:
        lines.append("No model call matches.")
    for call in calls:
        lines.append("")
        digest = f"{call.digest[:19]}…" if call.digest else "no digest recorded"
        lines.append(f"# call {call.index} of {total}: {call.label} ({digest})")
        earlier = found.calls[:found.calls.index(call)]
        lines += render_body(call.body, since=shared_with(call, earlier) if diff else None)
    if turn == found.turns and found.source != "this kernel's session":
        lines += ["", AFTER_LAST_TURN]
    return "\n".join(lines)


def calls_json(found: TurnCalls, turn: int, calls: Sequence[CallView]) -> Any:
    """``--json``: the one body asked for, exactly; else every call with its body."""
    if len(calls) == 1:
        return calls[0].body
    return {"source": found.source, "turn": turn, "calls": [c.to_json() for c in calls]}

