"""Full compaction: replace the conversation with a summary (docs/reference.md#compaction).

:func:`compact` summarises everything before the turn in progress (or everything, when
no turn is running): from the session-memory notes when they are fresh (no model call),
otherwise with the main model. The conversation then holds only the summary (which
marks the compaction boundary and names the transcript), the files read most recently,
the SessionStart hook output and, verbatim, the messages that were kept. The project
instruction file is re-read from disk. The previous conversation stays available to
:func:`undo`, in the turn records and in the JSONL log.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jupyter_memory.agent import lifecycle
from jupyter_memory.agent.compaction.bookkeeping import UndoEntry
from jupyter_memory.agent.compaction.budget import estimate_next_request
from jupyter_memory.agent.compaction.errors import (
    CompactionBlocked,
    NothingToCompact,
    NothingToUndo,
    SummaryFailed,
)
from jupyter_memory.agent.compaction.prompt import (
    extract_summary,
    summary_message_text,
    summary_prompt,
)
from jupyter_memory.agent.compaction.restore import (
    FILE_KIND,
    instruction_paths,
    read_paths,
    recent_files,
    reread_instructions,
    reset_read_record,
    restore_files,
)
from jupyter_memory.context.assemble import META_KEY
from jupyter_memory.context.models import SUMMARY_OUTPUT_RESERVE, model_info
from jupyter_memory.context.tokens import Usage, estimate_messages
from jupyter_memory.memdir.clock import now_iso

if TYPE_CHECKING:
    from jupyter_memory.agent.compaction.host import CompactingSession
    from jupyter_memory.context.sdk import ModelClient

log = logging.getLogger(__name__)

#: ``_meta.kind`` of the summary message; its ``compact_boundary`` key is the boundary.
SUMMARY_KIND = "compact_summary"
#: Messages a compaction adds; a later compaction does not count them as conversation.
INSERTED_KINDS = frozenset({SUMMARY_KIND, FILE_KIND, lifecycle.HOOK_CONTEXT_KIND})
#: Extra summary attempts after "prompt is too long", each dropping the oldest rounds.
MAX_TOO_LONG_RETRIES = 3
TRIGGERS = ("auto", "manual")

_DROPPED_NOTE = {
    "role": "user",
    "content": [{"type": "text", "text": "(The oldest part of the conversation was left out "
                 "of this summary request so that it fits the context window.)"}],
}


@dataclass
class CompactionResult:
    """What one compaction did; ``to_json`` is what the notebook and the log record."""

    trigger: str
    method: str  # "model" | "session_memory"
    pre_tokens: int
    post_tokens: int
    summary: str
    summary_text: str
    transcript_path: str | None
    files: list[dict[str, Any]] = field(default_factory=list)
    kept_messages: int = 0
    hook_context: list[str] = field(default_factory=list)
    post_hook_output: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    attempts: int = 0
    dropped_messages: int = 0
    instructions: str | None = None
    instruction_file: str | None = None
    usage: Usage | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    messages_before: int = 0
    messages_after: int = 0
    created: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "trigger": self.trigger,
            "method": self.method,
            "pre_tokens": self.pre_tokens,
            "post_tokens": self.post_tokens,
            "summary": self.summary,
            "transcript_path": self.transcript_path,
            "files": self.files,
            "kept_messages": self.kept_messages,
            "hook_context": self.hook_context,
            "post_hook_output": self.post_hook_output,
            "warnings": self.warnings,
            "attempts": self.attempts,
            "dropped_messages": self.dropped_messages,
            "instructions": self.instructions,
            "instruction_file": self.instruction_file,
            "usage": self.usage.to_json() if self.usage else None,
            "requests": self.requests,
            "messages_before": self.messages_before,
            "messages_after": self.messages_after,
            "created": self.created,
        }


@dataclass
class _Summary:
    text: str
    attempts: int
    dropped: int
    usage: Usage
    requests: list[dict[str, Any]]




def kind_of(message: dict[str, Any]) -> str | None:
    meta = message.get(META_KEY)
    return meta.get("kind") if isinstance(meta, dict) else None


def summary_max_tokens(session: CompactingSession) -> int:
    """Output allowed for a summary: the reserve the effective window sets aside."""
    return min(SUMMARY_OUTPUT_RESERVE, model_info(session.config.model).max_output_tokens)


def _split(
    messages: list[dict[str, Any]], keep_tail: Sequence[dict[str, Any]] | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """History before the turn in progress, and the turn's messages (kept verbatim)."""
    ids = {id(m) for m in keep_tail or ()}
    at = next((i for i, m in enumerate(messages) if id(m) in ids), len(messages))
    return messages[:at], messages[at:]


def _combined_instructions(session: CompactingSession, explicit: str | None, hooks: str) -> str | None:
    from jupyter_memory.context.instructions import compact_instructions

    parts = []
    from_files = compact_instructions(session.instructions)
    if from_files:
        parts.append(from_files.strip())
    if explicit and explicit.strip():
        parts.append(explicit.strip())
    if hooks.strip():
        parts.append(hooks.strip())
    return "\n\n".join(parts) or None


def compact(
    session: CompactingSession,
    *,
    instructions: str | None = None,
    trigger: str = "manual",
    client: ModelClient | None = None,
    keep_tail: Sequence[dict[str, Any]] | None = None,
) -> CompactionResult:
    """Summarise ``session``'s conversation and continue from the summary.

    ``instructions`` steer the summary (like ``/compact <instructions>``); "Compact
    Instructions" sections of instruction files and PreCompact hook output are added.
    ``keep_tail`` are the messages of a turn in progress: they stay verbatim after the
    summary. ``client`` defaults to a new client of the session (only built when a
    model call is needed). The conversation is unchanged when this raises.
    """
    if trigger not in TRIGGERS:
        raise ValueError(f"trigger must be one of {', '.join(TRIGGERS)}, not {trigger!r}")
    messages = list(session.messages)
    history, tail = _split(messages, keep_tail)
    if not any(kind_of(m) not in INSERTED_KINDS for m in history):
        raise NothingToCompact(
            "There is nothing to compact yet: the conversation holds no messages before the "
            "current one beyond an earlier summary. Talk to the agent first."
        )
    pre_tokens = estimate_next_request(session)
    pre = lifecycle.run(
        session, "PreCompact", {"trigger": trigger, "custom_instructions": instructions or ""},
        match=trigger,
    )
    warnings = list(pre.errors)
    if pre.blocked:
        raise CompactionBlocked(
            f"A PreCompact hook refused the compaction: {pre.reason}. Change or remove the "
            "hook (in your settings file or lifecycle.register) to compact."
        )
    steer = _combined_instructions(session, instructions, pre.text)

    memory = session.notes
    material = None
    if not (instructions and instructions.strip()) and not pre.texts and memory.enabled:
        material = memory.compaction_material(history)
    if material is not None:
        method, body = "session_memory", material.notes
        kept = [m for m in history[material.keep_from :] if kind_of(m) not in INSERTED_KINDS]
        outcome = _Summary(body, 0, 0, Usage(), [])
    else:
        method, kept = "model", []
        outcome = _summarise(session, history, steer, client)

    session_log = session.log
    transcript = str(session_log.path) if session_log is not None else None
    text = summary_message_text(
        outcome.text, method=method, transcript=transcript, kept_messages=len(kept)
    )
    boundary: dict[str, Any] = {
        "trigger": trigger, "pre_tokens": pre_tokens, "at": now_iso("seconds"), "method": method
    }
    summary_msg = {
        "role": "user",
        "content": [{"type": "text", "text": text}],
        META_KEY: {"kind": SUMMARY_KIND, "compact_boundary": boundary,
                   "transcript": transcript},
    }

    ctx = session.tool_context()
    exclude = read_paths([*kept, *tail], ctx.project_root) + sorted(
        instruction_paths(session.instructions))
    candidates = recent_files(history, list(ctx.read_files), ctx.project_root, exclude=exclude)
    restored = restore_files(candidates, ctx.roots).files
    reset_read_record(ctx, restored)
    instruction_file = reread_instructions(session)
    start = lifecycle.run(session, "SessionStart", {"source": "compact"}, match="compact")
    warnings += start.errors
    hook_msg = lifecycle.context_message(start)

    new = [summary_msg, *kept, *(r.message for r in restored)]
    if hook_msg is not None:
        new.append(hook_msg)
    new += tail
    session.messages[:] = new
    session.conversation.last_usage = None
    post_tokens = estimate_next_request(session)
    boundary["post_tokens"] = post_tokens
    memory.conversation_replaced(post_tokens)
    # After the boundary the log holds what the model sees next, as the conversation does.
    after = [*kept, *(r.message for r in restored), *([hook_msg] if hook_msg is not None else [])]
    warnings += _log(session, trigger, pre_tokens, text, after)

    post = lifecycle.run(
        session, "PostCompact",
        {"trigger": trigger, "compact_summary": outcome.text, "method": method},
        match=trigger,
    )
    warnings += post.errors
    result = CompactionResult(
        trigger=trigger, method=method, pre_tokens=pre_tokens, post_tokens=post_tokens,
        summary=outcome.text, summary_text=text, transcript_path=transcript,
        files=[{"path": str(r.path), "tokens": r.tokens, "truncated": r.truncated}
               for r in restored],
        kept_messages=len(kept), hook_context=list(start.texts),
        post_hook_output=list(post.texts), warnings=warnings, attempts=outcome.attempts,
        dropped_messages=outcome.dropped, instructions=steer,
        instruction_file=str(instruction_file) if instruction_file else None,
        usage=outcome.usage if outcome.attempts else None, requests=outcome.requests,
        messages_before=len(messages), messages_after=len(new), created=boundary["at"],
    )
    log.info("%s compaction (%s): %d -> %d tokens", trigger, method, pre_tokens, post_tokens)
    state = session.compaction
    state.push(UndoEntry("compact", messages, list(new),
                         f"{trigger} compaction at {result.created}", result))
    state.results.append(result)
    state.succeeded()
    return result


def _log(
    session: CompactingSession, trigger: str, pre_tokens: int, text: str, kept: list[dict[str, Any]]
) -> list[str]:
    """Write the boundary and summary to the JSONL log, then ``kept``: the messages kept
    verbatim, the re-attached files and the SessionStart hook's context.

    Resuming a log starts after its last boundary, so all of them are written there
    (kept messages again), and a resume finds what the model saw after the compaction.
    A log that cannot be written is reported, not fatal: the compaction stands.
    """
    session_log = session.log
    if session_log is None:
        return []
    try:
        session_log.log_boundary("auto" if trigger == "auto" else "manual", pre_tokens, text)
        if kept:
            writer = session_log.writer()
            for message in kept:
                body = {k: v for k, v in message.items() if k != META_KEY}
                writer.append_message(message["role"], body, is_meta=bool(message.get(META_KEY)))
    except OSError as exc:
        return [f"The compaction boundary could not be written to the session log: {exc}"]
    return []


# ----------------------------------------------------------------------------- the model


def _summarise(
    session: CompactingSession, history: list[dict[str, Any]], instructions: str | None,
    client: ModelClient | None,
) -> _Summary:
    from jupyter_memory.context.assemble import digest

    if client is None:
        client = session.client()
    prompt_msg = {"role": "user", "content": [{"type": "text", "text": summary_prompt(instructions)}]}
    work = list(history)
    dropped = 0
    requests: list[dict[str, Any]] = []
    attempt = 0
    while True:
        attempt += 1
        body = session.assemble(([_DROPPED_NOTE] if dropped else []) + work + [prompt_msg]).body
        body["max_tokens"] = summary_max_tokens(session)
        entry: dict[str, Any] = {"digest": digest(body), "messages": len(work),
                                 "dropped": dropped}
        requests.append(entry)
        try:
            with client.messages.stream(**body) as stream:
                message = stream.get_final_message()
        except Exception as exc:
            from jupyter_memory.agent.failures import describe_failure, is_model_failure

            if not is_model_failure(exc):
                raise  # a bug of ours, not a failed summary
            if not _too_long(exc):
                raise SummaryFailed(f"The summary request failed: {describe_failure(exc)}") from exc
            cut = drop_point(work, _gap(exc)) if attempt <= MAX_TOO_LONG_RETRIES else None
            if cut is None:
                raise SummaryFailed(_TOO_LONG_TEXT.format(attempts=attempt)) from exc
            work = work[cut:]
            dropped += cut
            continue
        session.cost_ledger.charge("summary", message, str(body.get("model") or ""))
        usage = Usage.from_api(message.usage)
        entry["usage"] = usage.to_json()
        reply = "".join(getattr(b, "text", "") for b in message.content if b.type == "text")
        # The answer as given, scratchpad included: the record shows what was thrown away.
        entry["answer"] = reply
        text = extract_summary(reply)
        if not text:
            raise SummaryFailed(
                "The model answered the summary request without a summary (stop reason "
                f"{message.stop_reason}); the conversation was left as it was."
            )
        return _Summary(text, attempt, dropped, usage, requests)


_TOO_LONG_TEXT = (
    "The conversation stayed too long for a summary request after {attempts} attempts, each "
    "dropping its oldest rounds. Run %compact --micro to clear old tool outputs, then "
    "%compact again."
)


def _too_long(exc: BaseException) -> bool:
    status = getattr(exc, "status_code", None)
    return status == 400 and "too long" in str(exc).lower()


def _gap(exc: BaseException) -> int | None:
    match = re.search(r"(\d+)\s*tokens?\s*>\s*(\d+)", str(exc))
    return int(match.group(1)) - int(match.group(2)) if match else None


def _is_cut_point(messages: Sequence[dict[str, Any]], k: int, *, strict: bool) -> bool:
    """Can the conversation start at ``messages[k]`` without orphaning a tool result?

    ``strict`` cuts only where a round starts (a user message that is not tool results);
    otherwise an assistant message, whose tool results follow it, will do too.
    """
    message = messages[k]
    if message.get("role") == "assistant":
        return not strict
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)


def drop_point(messages: Sequence[dict[str, Any]], gap: int | None) -> int | None:
    """How many of the oldest messages to drop to save ``gap`` tokens (a fifth if unknown).

    Whole rounds are dropped when the conversation has more than one; a single long
    round is cut before one of its assistant messages. A tool call always stays with its
    result, and at least one message remains. None when no cut is possible.
    """
    target = gap if gap and gap > 0 else max(1, estimate_messages(messages) // 5)
    costs = [estimate_messages([m]) for m in messages]
    for strict in (True, False):
        best = None
        total = 0
        for k in range(1, len(messages)):
            total += costs[k - 1]
            if not _is_cut_point(messages, k, strict=strict):
                continue
            best = k
            if total >= target:
                return k
        if best is not None:
            return best
    return None


# ----------------------------------------------------------------------------- undo


def undo(session: CompactingSession) -> UndoEntry:
    """Put back the conversation from before the last compaction or microcompact.

    Messages added since (later turns) are kept after the restored ones. The instruction
    file re-read and the cleared read record are not reverted: both reflect the disk.
    """
    state = session.compaction
    if not state.undo:
        raise NothingToUndo(
            "There is no compaction to undo in this session (undo only reaches compactions "
            "made since the kernel started)."
        )
    entry = state.undo.pop()
    after = {id(m) for m in entry.after}
    later = [m for m in session.messages if id(m) not in after]
    session.messages[:] = [*entry.before, *later]
    session.conversation.last_usage = None
    return entry
