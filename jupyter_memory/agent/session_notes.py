"""Session memory: rolling notes on the current session, kept in the background (docs/reference.md#session-memory).

Once the conversation passes :data:`INIT_TOKENS`, the small model writes notes on it to
``<transcripts>/<session id>/session-memory/summary.md``, and refreshes them when the
conversation has grown :data:`UPDATE_TOKENS` more and either :data:`UPDATE_TOOL_CALLS`
tool calls happened since the last refresh or the agent just answered without a tool.
Each refresh gives the model the current notes and only the messages they do not cover
yet, and runs in a thread so no turn waits for it.

Compaction uses the notes first: they become the summary and the most recent messages
stay verbatim, so compacting costs no model call at all. Notes count as fresh when the
messages they do not cover fit in :data:`KEEP_MAX_TOKENS`.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_memory.agent.compaction.budget import estimate_next_request
from jupyter_memory.agent.hooks import TurnHook, TurnInProgress, TurnOutcome
from jupyter_memory.context.assemble import META_KEY
from jupyter_memory.context.call_log import calling
from jupyter_memory.context.tokens import estimate_messages, estimate_tokens
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir import trust_table
from jupyter_memory.memdir.gateway import Root

if TYPE_CHECKING:
    from jupyter_memory.agent.background import BackgroundTask
    from jupyter_memory.agent.host import SessionHost
    from jupyter_memory.context.sdk import ModelClient

log = logging.getLogger(__name__)

INIT_TOKENS = 10_000
UPDATE_TOKENS = 5_000
UPDATE_TOOL_CALLS = 3
MAX_NOTES_TOKENS = 12_000
#: Messages kept verbatim after the notes: at least this many tokens and text messages...
KEEP_MIN_TOKENS = 10_000
KEEP_MIN_TEXT_MESSAGES = 5
#: ...and at most this many tokens.
KEEP_MAX_TOKENS = 40_000
#: Seconds a compaction waits for a refresh that is under way.
WAIT_AT_COMPACTION = 15.0
#: Output allowed for one refresh of the notes.
UPDATE_MAX_TOKENS = 16_000
#: Characters of one tool result shown to the note taker.
TOOL_RESULT_CHARS = 2_000
#: Characters of new conversation given to one refresh (the newest part wins).
UPDATE_INPUT_CHARS = 300_000

SECTIONS: tuple[tuple[str, str], ...] = (
    ("Session title", "A few words that name what this session is about."),
    ("Current state", "What is being worked on right now, what is done, what comes next."),
    ("Task specification", "What the person asked for, with their requirements and choices."),
    ("Files and functions", "Files, notebook cells, variables and functions that matter, "
     "and why."),
    ("Workflow", "Commands, cells and steps that are run, in order, and how they are used."),
    ("Errors and corrections", "What went wrong, how it was fixed, and what the person "
     "corrected."),
    ("Learnings", "What turned out to work or not, and what to avoid."),
    ("Key results", "Numbers, findings and outputs the person asked for, exactly."),
    ("Worklog", "Short dated steps of what was done, newest last."),
)

#: Environment switch (``0``/``1``, ``false``/``true``, ``off``/``on``) over the config.
ENV_SWITCH = "JUPYTER_MEMORY_SESSION_MEMORY"
_SWITCH = {"1": True, "true": True, "yes": True, "on": True,
           "0": False, "false": False, "no": False, "off": False}


def notes_path(session: SessionHost) -> Path:
    """``<transcripts dir>/<session id>/session-memory/summary.md``."""
    from jupyter_memory.transcript.mirror import log_path

    session_id: str = session.session_id
    return log_path(session).parent / session_id / "session-memory" / "summary.md"


def template() -> str:
    """Empty notes: every section heading with a one-line description in italics."""
    return "\n\n".join(f"# {name}\n_{hint}_" for name, hint in SECTIONS) + "\n"


def is_empty(notes: str) -> bool:
    """True for notes that hold nothing beyond the headings and their descriptions."""
    for line in notes.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and not (line.startswith("_") and line.endswith("_")):
            return False
    return True


def has_sections(notes: str) -> bool:
    """True when ``notes`` keep at least one of the section headings."""
    headings = {line.lstrip("#").strip().lower() for line in notes.splitlines()
                if line.startswith("#")}
    return any(name.lower() in headings for name, _ in SECTIONS)


def should_update(
    *, tokens: int, tokens_at_update: int, initialized: bool, tool_calls: int,
    answered_without_tools: bool,
) -> bool:
    """The reference's rule for starting or refreshing the notes."""
    if not initialized and tokens < INIT_TOKENS:
        return False
    if tokens - tokens_at_update < UPDATE_TOKENS:
        return False
    return tool_calls >= UPDATE_TOOL_CALLS or answered_without_tools


@dataclass(frozen=True)
class NotesMaterial:
    """What compaction needs from the notes: their text and where verbatim messages start."""

    notes: str
    keep_from: int


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _has_text(message: dict[str, Any]) -> bool:
    return any(b.get("type") == "text" and str(b.get("text", "")).strip() for b in _blocks(message))


def _starts_cleanly(messages: Sequence[dict[str, Any]], k: int) -> bool:
    """True when ``messages[k:]`` holds no tool result whose call is before ``k``."""
    return not any(b.get("type") == "tool_result" for b in _blocks(messages[k]))


def keep_start(messages: Sequence[dict[str, Any]], uncovered: int) -> int | None:
    """Where the verbatim part starts: at or before ``uncovered``, by the reference's rules (docs/reference.md#session-memory).

    Grows backwards from the first uncovered message until it has at least
    :data:`KEEP_MIN_TOKENS` and :data:`KEEP_MIN_TEXT_MESSAGES` text messages, never past
    :data:`KEEP_MAX_TOKENS`, and never starting on a tool result (its call comes along).
    None when even the uncovered part is over the maximum.
    """
    n = len(messages)
    start = uncovered
    tokens = estimate_messages(messages[start:])
    if tokens > KEEP_MAX_TOKENS:
        return None
    texts = sum(1 for m in messages[start:] if _has_text(m))
    while start > 0 and (tokens < KEEP_MIN_TOKENS or texts < KEEP_MIN_TEXT_MESSAGES):
        cost = estimate_messages(messages[start - 1 : start])
        if tokens + cost > KEEP_MAX_TOKENS:
            break
        start -= 1
        tokens += cost
        texts += int(_has_text(messages[start]))
    while start < n and not _starts_cleanly(messages, start):
        if start > 0 and tokens + estimate_messages(messages[start - 1 : start]) <= KEEP_MAX_TOKENS:
            start -= 1
            tokens += estimate_messages(messages[start : start + 1])
        else:  # cannot take the call along: drop the orphaned results instead
            tokens -= estimate_messages(messages[start : start + 1])
            start += 1
    return start


def render_conversation(messages: Sequence[dict[str, Any]]) -> str:
    """The messages as plain text for the note taker; tool outputs shortened."""
    lines: list[str] = []
    for message in messages:
        meta = message.get(META_KEY)
        kind = meta.get("kind") if isinstance(meta, dict) else None
        who = "Person" if message.get("role") == "user" else "Assistant"
        if kind:
            who = f"Context ({kind})"
        for block in _blocks(message):
            kind_b = block.get("type")
            if kind_b == "text" and str(block.get("text", "")).strip():
                lines.append(f"{who}: {block['text'].strip()}")
            elif kind_b == "tool_use":
                import json

                args = json.dumps(block.get("input", {}), ensure_ascii=False)[:500]
                lines.append(f"Assistant called {block.get('name')}: {args}")
            elif kind_b == "tool_result":
                content = block.get("content", "")
                if not isinstance(content, str):
                    content = "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
                if len(content) > TOOL_RESULT_CHARS:
                    content = content[:TOOL_RESULT_CHARS] + f"… [{len(content):,} characters in all]"
                flag = " (error)" if block.get("is_error") else ""
                lines.append(f"Tool result{flag}: {content}")
    text = "\n\n".join(lines)
    if len(text) > UPDATE_INPUT_CHARS:
        text = "[… earlier part left out …]\n\n" + text[-UPDATE_INPUT_CHARS:]
    return text


_SYSTEM = (
    "You keep the running notes of a working session between a person and an AI assistant "
    "in a Jupyter notebook. The notes let the work continue if the conversation is lost, so "
    "they must be specific: exact file names, variable names, numbers, decisions and the "
    "person's words where they matter."
)


def update_prompt(notes: str, conversation: str) -> str:
    over = estimate_tokens(notes) > MAX_NOTES_TOKENS
    return (
        "Here are the current notes of this session:\n\n<notes>\n"
        f"{notes.strip()}\n</notes>\n\n"
        "Here is the part of the conversation the notes do not cover yet:\n\n<conversation>\n"
        f"{conversation}\n</conversation>\n\n"
        "Update the notes with what happened in that part. Keep every section heading "
        "exactly as it is and in the same order; replace a section's description line once "
        "it has content. Keep the whole under about "
        f"{MAX_NOTES_TOKENS:,} tokens (a section at most about 1,500); shorten older worklog "
        "entries when needed. Do not record secrets or credentials."
        + (" The notes are over their budget now: condense them." if over else "")
        + "\n\nAnswer with the complete updated notes inside <notes></notes> and nothing else."
    )


_NOTES = re.compile(r"<notes>(.*?)(?:</notes>|$)", re.S)


def extract_notes(reply: str) -> str:
    match = _NOTES.search(reply)
    return (match.group(1) if match else reply).strip()


def cap_notes(notes: str) -> str:
    """Cut notes past :data:`MAX_NOTES_TOKENS` at a line boundary, saying so."""
    if estimate_tokens(notes) <= MAX_NOTES_TOKENS:
        return notes
    kept: list[str] = []
    total = 0
    for line in notes.splitlines():
        cost = estimate_tokens(line + "\n")
        if total + cost > MAX_NOTES_TOKENS - 50:
            break
        kept.append(line)
        total += cost
    return "\n".join(kept) + f"\n\n[Notes cut at about {MAX_NOTES_TOKENS:,} tokens.]\n"


class SessionNotes(TurnHook):
    """A session's rolling notes, and the turn hook that keeps them (docs/reference.md#session-memory).

    ``enabled`` defaults to ``$JUPYTER_MEMORY_SESSION_MEMORY`` when set, else the session
    config's ``session_memory`` (True unless set). The notes are written by
    ``small_model`` through the turn's client (or the session's), as work of the session's
    background runner. Its default is the Sonnet model the selector uses: the sources do
    not say which model writes the reference's notes, but the notes stand in for the
    compaction summary, which the reference never hands to a smaller model.
    """

    def __init__(self, session: SessionHost, *, enabled: bool | None = None) -> None:
        self.session = session
        self._enabled = enabled
        self.initialized = False
        self.tokens_at_update = 0
        self.covered: dict[str, Any] | None = None
        self.updates = 0
        self.last_error: str | None = None
        self._task: BackgroundTask | None = None
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        if self._enabled is not None:
            return self._enabled
        env = self.session.env if self.session.env is not None else os.environ
        switch = _SWITCH.get((trust_table.env(ENV_SWITCH, env) or "").strip().lower())
        if switch is not None:
            return switch
        return bool(self.session.config.session_memory)

    @property
    def path(self) -> Path:
        return notes_path(self.session)

    @property
    def running(self) -> bool:
        """Whether a refresh is under way (or queued, when background work is synchronous)."""
        task = self._task
        return task is not None and not task.done()

    def _root(self) -> Root:
        """The session-log folder the notes live in, as the session declared it."""
        declared = self.session.memory.roots.get("transcripts")
        return declared if declared is not None else Root.declare(
            "transcripts", self.path.parent.parent.parent)

    def read(self) -> str | None:
        """The notes on disk, or None when there are none yet."""
        try:
            return self._root().text(self.path)
        except (FileNotFoundError, NotADirectoryError):
            return None

    # ------------------------------------------------------------------ triggers

    def _uncovered_from(self, messages: Sequence[dict[str, Any]]) -> int | None:
        """Index of the first message the notes do not cover; None if unknown."""
        if self.covered is None:
            return 0 if not self.initialized else None
        for i in range(len(messages) - 1, -1, -1):
            if messages[i] is self.covered:
                return i + 1
        return None

    def _tool_calls_since(self) -> int:
        messages = self.session.messages
        start = self._uncovered_from(messages) or 0
        return sum(
            1 for m in messages[start:] if m.get("role") == "assistant"
            for b in _blocks(m) if b.get("type") == "tool_use"
        )

    def _maybe_start(self, client: ModelClient, *, answered_without_tools: bool) -> bool:
        if not self.enabled or self.running:
            return False
        tokens = estimate_next_request(self.session)
        if not should_update(
            tokens=tokens, tokens_at_update=self.tokens_at_update,
            initialized=self.initialized, tool_calls=self._tool_calls_since(),
            answered_without_tools=answered_without_tools,
        ):
            return False
        return self.start_update(client, tokens=tokens)

    def before_call(self, turn: TurnInProgress, round_index: int) -> None:
        """After a tool round (the last answer used tools): refresh on enough tool calls."""
        if round_index > 0:
            self._maybe_start(turn.client, answered_without_tools=False)

    def after_turn(self, turn: TurnInProgress, result: TurnOutcome) -> None:
        """After a final answer (it used no tool): refresh on token growth alone."""
        if result.status in ("ok", "max_tokens"):
            self._maybe_start(turn.client, answered_without_tools=True)

    # ------------------------------------------------------------------ updating

    def start_update(self, client: ModelClient | None = None, *,
                     tokens: int | None = None) -> bool:
        """Refresh the notes as background work; False if one is already under way."""
        with self._lock:
            if self.running:
                return False
            messages = list(self.session.messages)
            if tokens is None:
                tokens = estimate_next_request(self.session)
            self.initialized = True
            self.tokens_at_update = tokens
            self._task = self.session.runner.submit(
                "session-notes", lambda: self._update_quietly(messages, client))
            return True

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a refresh under way (running it now if it is queued); True when none
        is running any more."""
        task = self._task
        if task is not None:
            task.wait(timeout)
        return not self.running

    def _update_quietly(self, messages: list[dict[str, Any]], client: ModelClient | None) -> None:
        from jupyter_memory.agent.failures import describe_background_failure

        try:
            self.update(messages, client)
        except Exception as exc:  # a background refresh never disturbs the session
            self.last_error = describe_background_failure(exc, "refreshing the session notes")

    def update(self, messages: Sequence[dict[str, Any]], client: ModelClient | None = None) -> str:
        """Refresh the notes from ``messages`` now (synchronously); returns the new notes."""
        if not messages:
            raise ValueError("there is no conversation to take notes on")
        start = self._uncovered_from(messages)
        new = messages[start or 0 :] if start is not None else messages
        current = self.read() or template()
        if client is None:
            client = self.session.client()
        model = self.session.config.small_model or self.session.config.model
        with calling("notes"):
            reply = client.messages.create(
                model=model,
                max_tokens=UPDATE_MAX_TOKENS,
                system=_SYSTEM,
                messages=[{"role": "user",
                           "content": update_prompt(current, render_conversation(new))}],
            )
        self.session.cost_ledger.charge("notes", reply, model)
        text = "".join(getattr(b, "text", "") for b in reply.content if b.type == "text")
        notes = extract_notes(text)
        if not has_sections(notes) or is_empty(notes):
            raise NotesRefused("the note taker answered without notes; the old notes were kept")
        notes = cap_notes(notes)
        path, root = self.path, self._root()
        root.make_folder(path.parent, mode=0o700)
        root.write(path, notes if notes.endswith("\n") else notes + "\n", mode=0o600)
        # The marker is the last assistant message: tool-result messages after it may later
        # be replaced by microcompact, which would lose the marker's identity.
        self.covered = next(
            (m for m in reversed(messages) if m.get("role") == "assistant"), messages[-1]
        )
        self.updates += 1
        self.last_error = None
        log.debug("session notes refreshed (%d so far): %s", self.updates, path)
        return notes

    # ------------------------------------------------------------------ compaction

    def conversation_replaced(self, tokens: int) -> None:
        """A compaction shrank the conversation: count growth from its new size."""
        self.tokens_at_update = min(self.tokens_at_update, tokens)

    def compaction_material(self, history: Sequence[dict[str, Any]]) -> NotesMaterial | None:
        """Notes and the verbatim part for compacting ``history``, or None if not usable.

        Waits a little for a refresh under way. Not usable: no notes, notes without
        content, or more uncovered conversation than may be kept verbatim.
        """
        if self.running:
            self.wait(WAIT_AT_COMPACTION)
        notes = self.read()
        if not notes or is_empty(notes) or not history:
            return None
        # ``history`` is a prefix of the conversation; notes taken during the turn in
        # progress cover all of it.
        uncovered = self._uncovered_from(self.session.messages)
        if not uncovered:
            return None
        start = keep_start(history, min(uncovered, len(history)))
        if start is None:
            return None
        return NotesMaterial(notes.strip(), start)


class NotesRefused(JupyterMemoryError):
    """The note taker answered without notes: the old notes are kept."""
