"""The extraction agent: memories saved in the background after a turn (docs/reference.md#the-extraction-agent).

After a turn whose final answer called no tool, :class:`ExtractionHook` forks the
conversation: the same system prompt and messages as the main agent, then one user
message that asks for durable facts and lists the memories that already exist. The fork
runs as background work of the session (a thread live, so the next cell never waits for
it; at the end of the turn when background work is synchronous), and it reports what it
saved into the cell that triggered it, with an undo.

The rules, as the reference has them:

* **cursor** — the last message already considered; it advances only after a run that
  succeeded, so a failed run's messages are looked at again next time;
* **skip** — when the main agent wrote a memory file since the cursor, the fork does not
  run (it would duplicate that work) and the cursor moves on;
* **one at a time** — a turn that ends while a run is under way is stashed; a newer one
  replaces it, and the stash runs once after the current run (without the throttle);
* **throttle** — a run every N eligible turns (``extraction_every``, default 1);
* **at most 5 model calls** per run;
* **confined in the tool layer** — the fork's tool context has ``restrict_to_memdir``:
  Read, Grep and Glob work; Write and Edit only inside the memdir, after the path is
  normalised (``..`` and symlinks resolved); every other tool is refused; there is no
  tool that deletes.

Two additions of this project, each a setting: three failed runs in a row open a
circuit breaker for the session (one notice says so), and approval mode stages what the
fork writes as pending items (:mod:`jupyter_memory.memdir.pending`) instead of saving it.

**Tools and the prompt cache.** By default (``extraction_share_tools=True``, as the
reference does) the fork is sent the main agent's full tool list, byte for byte: tool
definitions come first in the cached prefix, so only then does the fork read the main
conversation's cache entries instead of writing its own. The tool layer still refuses
every tool call outside its confinement, whatever the model is offered. ``False`` sends
only the restricted list (Read, Grep, Glob, Write, Edit), so the model is never offered a
tool it may not use, at the price of a cold cache for the fork's first call.
"""

from __future__ import annotations

import copy
import logging
import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from jupyter_memory.agent.hooks import TurnHook, TurnInProgress, TurnOutcome
from jupyter_memory.agent.tools import PermissionPolicy, ToolContext, ToolRegistry, ToolResult
from jupyter_memory.context.assemble import IndexPart, assemble
from jupyter_memory.context.call_log import calling
from jupyter_memory.context.tokens import Usage
from jupyter_memory.errors import InvalidPath, JupyterMemoryError
from jupyter_memory.memdir import frontmatter, trust_table
from jupyter_memory.memdir.clock import now_iso
from jupyter_memory.memdir.index import INDEX_NAME, normalize_file, parse_index, readings
from jupyter_memory.memdir.record import Memory
from jupyter_memory.memdir.scan import manifest, scan
from jupyter_memory.memdir.store import MemoryStore, WriteResult
from jupyter_memory.recall.caches import scan_cache

if TYPE_CHECKING:
    from jupyter_memory.agent.background import BackgroundTask
    from jupyter_memory.agent.host import SessionHost
    from jupyter_memory.context.sdk import ModelClient

log = logging.getLogger(__name__)

__all__ = [
    "BREAKER_LIMIT",
    "ENV_SWITCH",
    "EXTRACTION_TOOLS",
    "MAX_CALLS",
    "ConfinedRun",
    "ExtractionHook",
    "ExtractionRun",
    "UndoReport",
    "WriteTrackingStore",
    "describe_error",
    "existing_memories",
    "extraction_prompt",
    "hook_for",
    "memory_registry",
    "run_confined",
]

EXTRACTION_TOOLS = ("Read", "Grep", "Glob", "Write", "Edit")
"""The tools the fork is offered; the tool layer refuses everything else."""

MAX_CALLS = 5
"""Model calls one extraction run may make (the reference allows 5 turns)."""

BREAKER_LIMIT = 3
"""Failed runs in a row after which extraction stops for the session."""

ENV_SWITCH = "JUPYTER_MEMORY_EXTRACTION"
"""``0``/``false``/``off`` switches extraction off, ``1``/``true``/``on`` on, over the config."""

_FALSY = ("0", "false", "no", "off")
_TRUTHY = ("1", "true", "yes", "on")


# ----------------------------------------------------------------------------- the confined loop


@dataclass
class ConfinedRun:
    """What a side run of the model did: its messages, calls and final words."""

    messages: list[dict[str, Any]]
    calls: int = 0
    final_text: str = ""
    stopped: bool = False  # the call budget ran out while the model still wanted tools
    usage: Usage = field(default_factory=Usage)
    requests: list[dict[str, Any]] = field(default_factory=list)


def _block(block: Any) -> dict[str, Any]:
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if hasattr(block, "model_dump"):
        dumped: dict[str, Any] = block.model_dump(exclude_none=True)
        return dumped
    return dict(block)


def memory_registry(tools: ToolRegistry) -> ToolRegistry:
    """The memory tools of ``tools`` (those of :data:`EXTRACTION_TOOLS` it has), in order."""
    return tools.subset([name for name in EXTRACTION_TOOLS if name in tools])


def run_confined(
    client: ModelClient,
    body_for: Callable[[list[dict[str, Any]]], dict[str, Any]],
    messages: list[dict[str, Any]],
    run_tool: Callable[[str, Mapping[str, Any]], ToolResult],
    *,
    max_calls: int = MAX_CALLS,
    on_response: Callable[[Any], None] | None = None,
) -> ConfinedRun:
    """Call the model until it answers without tools or ``max_calls`` calls were made.

    ``body_for(messages)`` builds each request from the run's own messages (the caller
    puts any shared prefix in front); ``run_tool(name, input)`` runs one tool call and
    must not raise (a :class:`~jupyter_memory.agent.tools.ToolRegistry` turns failures into
    error results). Tool calls of the last permitted call still run, so writes the model
    made in parallel land; it just gets no further call. API errors propagate.
    ``on_response`` sees each response as it comes (the session charges its cost ledger).
    """
    run = ConfinedRun(list(messages))
    while run.calls < max_calls:
        body = body_for(run.messages)
        run.requests.append({"round": run.calls, "tools": [t["name"] for t in body.get("tools", [])]})
        with client.messages.stream(**body) as stream:
            message = stream.get_final_message()
        run.calls += 1
        if on_response is not None:
            on_response(message)
        run.usage = run.usage + Usage.from_api(message.usage)
        content = [_block(b) for b in message.content]
        run.messages.append({"role": "assistant", "content": content})
        run.final_text = "".join(b.get("text", "") for b in content if b["type"] == "text").strip()
        uses = [b for b in content if b["type"] == "tool_use"]
        if message.stop_reason != "tool_use" or not uses:
            return run
        results = []
        for use in uses:
            result = run_tool(use["name"], use.get("input") or {})
            results.append({"type": "tool_result", "tool_use_id": use["id"],
                            "content": result.content,
                            **({"is_error": True} if result.is_error else {})})
        run.messages.append({"role": "user", "content": results})
    run.stopped = True
    return run


class WriteTrackingStore(MemoryStore):
    """A store that remembers each file's bytes before a run first wrote it.

    What it keeps (``before``: file → bytes, ``None`` for a file that did not exist) is what
    makes an extraction undoable and what approval mode turns into pending items. Topic
    files it creates with frontmatter also get the session's ``originSessionId`` (the
    field the reference itself writes), so provenance says both who wrote (``origin``,
    set by the store) and in which session; an existing file keeps the session it came
    from.
    """

    def __init__(self, memdir: Path | str, **options: Any) -> None:
        super().__init__(memdir, **options)
        self.before: dict[str, bytes | None] = {}

    def _snapshot(self, rel: str) -> None:
        if rel not in self.before:
            self.before[rel] = _current(self, rel)

    def write_file(
        self, file: Any, text: str, *, provenance: str | None = None
    ) -> WriteResult:
        rel = self.normalize(file, allow_index=True)
        if rel == INDEX_NAME:
            return self.write_index(text)
        with self.writing():
            self._snapshot(rel)
            self._snapshot(INDEX_NAME)
            if (self.session_id and self.before[rel] is None
                    and frontmatter.has_frontmatter(text)
                    and frontmatter.parse(text).get("originSessionId") is None):
                text = frontmatter.update(text, {"originSessionId": self.session_id})
            return super().write_file(rel, text, provenance=provenance)

    def write_index(self, text: str) -> WriteResult:
        with self.writing():
            self._snapshot(INDEX_NAME)
            return super().write_index(text)

    def after(self) -> dict[str, bytes | None]:
        """The current bytes of every file this store wrote."""
        return {rel: _current(self, rel) for rel in self.before}


def _current(store: MemoryStore, rel: str) -> bytes | None:
    """The bytes of a memdir file now (None: missing, or a link the gateway refuses)."""
    path = store.memdir / rel
    try:
        return store.root.read(path) if path.is_file() else None
    except InvalidPath:
        return None


# ----------------------------------------------------------------------------- the prompt


def extraction_prompt(
    new_messages: int, existing: str, memdir: str, *, maintain_index: bool,
    max_calls: int = MAX_CALLS, team: bool = False,
) -> str:
    """The instruction appended to the forked conversation (our own words).

    It is input that no later call repeats, so no cache can serve it: it says only what the
    shared prefix does not. The memory folder, its rules (types, what not to save, how to
    write a topic file) and today's date are in the system prompt and context the fork
    shares with the main agent, and ``existing`` (:func:`existing_memories`) lists only what the
    memory index in that context does not already show.
    With ``team`` the nested team folder is writable too, and the scope rules say which
    memories go there (docs/reference.md#agent-memory).
    """
    index_step = (
        "Do not edit MEMORY.md: it follows the topic files." if maintain_index else
        "Then add or update the file's pointer line in MEMORY.md (Read it first)."
    )
    return f"""\
You are now the memory extraction agent, running in the background after the conversation \
above (the person does not see it). If the last {new_messages} messages hold anything worth \
keeping, save it in your memory folder as the memory rules of your system prompt say; when \
in doubt, save nothing.

{existing or "There are no memories yet."}

Update a memory that covers the same fact rather than adding one, and Read a file before \
you Edit or overwrite it. {index_step} You may use Read, Grep and Glob, and Write and Edit \
inside the memory folder; nothing can be deleted. You have {max_calls} model calls at most: \
read in one response, write in the next. Answer "Nothing to save." if nothing is worth saving, \
else one short line naming the files you saved.""" + (_TEAM_STEP.format(memdir=memdir) if team else "")


def existing_memories(
    memories: Sequence[Memory], *, index: IndexPart | None = None,
    team_index: IndexPart | None = None, loaded_at: float | None = None,
) -> str:
    """What the fork is told of the memories that exist (docs/reference.md#the-extraction-agent).

    The reference gives the fork the whole manifest up front. When the fork's context
    already holds the memory index (index mode: ``index`` as loaded at ``loaded_at``, and
    ``team_index`` for a team folder inside the memdir), repeating the files it points to
    would only send them twice, so the manifest names what that index does not show:
    memories it has no pointer for, memories changed since it was loaded, and pointers
    whose file is gone. Without such an index (prefetch mode, an index cut by its limits
    or not loaded), the whole manifest is given.
    """
    if not memories and (index is None or not index.text.strip()):
        return "There are no memories yet."
    head = "These memories exist (type, file, last change, description):\n"
    if (index is None or loaded_at is None or index.truncated_by or index.warning
            or (team_index is not None and (team_index.truncated_by or team_index.warning))):
        return head + manifest(memories)
    entries = [(entry, "") for entry in parse_index(index.text).entries]
    if team_index is not None:
        entries += [(entry, "team/") for entry in parse_index(team_index.text).entries]
    pointed: set[str] = set()
    for entry, prefix in entries:
        pointed.update(prefix + name for name in readings(entry.file))
    present = {memory.file for memory in memories}
    unseen = [m for m in memories if m.file not in pointed or m.mtime > loaded_at]
    gone = sorted({prefix + normalize_file(entry.file) for entry, prefix in entries
                   if not any(prefix + name in present for name in readings(entry.file))})
    shown = len(present & pointed)
    if not memories:
        text = "There are no memories yet."
        if gone:
            text += (" These pointers of the memory index in your context lead to files that "
                     "no longer exist: " + ", ".join(gone))
        return text
    which = "MEMORY.md and team/MEMORY.md" if team_index is not None else "MEMORY.md"
    text = (f"The memory index in your context ({which}) points to {shown} of the "
            f"{len(memories)} memories that exist")
    if unseen:
        text += ("; new or changed since it was loaded (type, file, last change, "
                 "description):\n" + manifest(unseen))
    else:
        text += "; none changed since it was loaded."
    if gone:
        text += "\nThese of its pointers lead to files that no longer exist: " + ", ".join(gone)
    return text


_TEAM_STEP = """

Team memory: `{memdir}/team/` is shared with everyone on the project. Choose the scope of \
each memory you save: a **user** memory is always private (never in `team/`); a \
**feedback** memory goes to `team/` only when it states a convention for the whole project \
("never mock the warehouse in tests"), and stays private when it is this person's taste \
("likes short answers"); **project** and **reference** memories usually go to `team/`. The \
team index `team/MEMORY.md` is kept for you: do not edit it. Nothing secret or personal \
goes into `team/`."""


def _nested_team(session: SessionHost, memdir: Path) -> Any:
    """The team folder's store when it is ``<memdir>/team`` (the only team folder the
    confined extraction agent can reach), else None."""
    team_dir = session.team_dir
    team_store = getattr(session.store, "team", None)
    if team_dir is None or team_store is None:
        return None
    same = os.path.realpath(team_dir) == os.path.realpath(memdir / "team")
    return team_store if same else None


# ----------------------------------------------------------------------------- runs and undo


@dataclass
class ExtractionRun:
    """One extraction run, kept for ``%memory extraction`` and for undo."""

    id: int
    agent_id: str
    started: str
    trailing: bool = False
    status: str = "running"  # running | saved | nothing | pending | failed
    ended: str | None = None
    calls: int = 0
    files: list[str] = field(default_factory=list)  # topic files written (not the index)
    created: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # pending item ids (approval mode)
    error: str | None = None
    log_error: str | None = None
    undone: bool = False
    tools_offered: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    before: dict[str, bytes | None] = field(default_factory=dict, repr=False)
    after: dict[str, bytes | None] = field(default_factory=dict, repr=False)
    notes: list[str] = field(default_factory=list)  # what the store's rules changed

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "agent_id": self.agent_id, "status": self.status,
                "trailing": self.trailing, "started": self.started, "ended": self.ended,
                "calls": self.calls, "files": list(self.files), "created": list(self.created),
                "pending": list(self.pending), "error": self.error, "undone": self.undone,
                **({"notes": list(self.notes)} if self.notes else {}),
                "tools_offered": list(self.tools_offered), "usage": self.usage.to_json()}


@dataclass
class UndoReport:
    """What undoing a run did."""

    run: int
    removed: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # changed since the run: left alone
    index_restored: bool = False

    def summary(self) -> str:
        parts = []
        if self.removed:
            parts.append(f"removed {', '.join(self.removed)}")
        if self.restored:
            parts.append(f"restored the earlier text of {', '.join(self.restored)}")
        lines = [f"Undid extraction run {self.run}: {'; '.join(parts) or 'nothing to undo'}."]
        if self.kept:
            lines.append(
                f"Left {', '.join(self.kept)} as it is: it changed after the extraction wrote "
                "it, so undoing would lose those changes. Use %memory forget or %memory edit."
            )
        return "\n".join(lines)




def describe_error(exc: BaseException) -> str:
    """One sentence about a failed run, worded like the main loop's errors (a bug of ours
    says so, and its traceback goes to the log)."""
    from jupyter_memory.agent.failures import describe_background_failure

    return describe_background_failure(exc, "running the extraction agent")


@dataclass
class _Request:
    """A finished turn waiting to be considered: its conversation and where to report."""

    turn: TurnInProgress
    messages: list[dict[str, Any]]
    client: ModelClient
    read_files: dict[Path, float]
    main_wrote: bool


def _flag(value: Any) -> bool | None:
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in _TRUTHY:
        return True
    if text in _FALSY:
        return False
    return None


class ExtractionHook(TurnHook):
    """The extraction agent of a session (``session.extraction``) and its turn hook.

    Settings come from the session's ``AgentConfig`` (``extraction``, ``extraction_every``,
    ``approval_mode``, ``extraction_share_tools``) when it has them, from the
    ``JUPYTER_MEMORY_EXTRACTION`` variable, and from per-session overrides that
    ``%memory extraction`` sets (which win).
    """

    def __init__(
        self, session: SessionHost, *, max_calls: int = MAX_CALLS, breaker_limit: int = BREAKER_LIMIT
    ) -> None:
        self.session = session
        self.max_calls = max_calls
        self.breaker_limit = breaker_limit
        self.enabled_override: bool | None = None
        self.every_override: int | None = None
        self.approval_override: bool | None = None
        self.share_tools_override: bool | None = None
        self.cursor: dict[str, Any] | None = None
        self.turns_since = 0
        self.failures = 0
        self.broken = False
        self.runs: list[ExtractionRun] = []
        self.counts = {"runs": 0, "skipped": 0, "throttled": 0, "stashed": 0, "failed": 0}
        self.max_parallel = 0  # most runs ever under way at once (1 by construction)
        self.undelivered: list[tuple[str, dict[str, Any]]] = []
        self._active = 0
        self._running = False
        self._stash: _Request | None = None
        self._task: BackgroundTask | None = None
        self._cond = threading.Condition()

    # ------------------------------------------------------------------ settings

    @property
    def enabled(self) -> bool:
        if self.enabled_override is not None:
            return self.enabled_override
        env = self.session.env if self.session.env is not None else os.environ
        from_env = _flag(trust_table.env(ENV_SWITCH, env))
        if from_env is not None:
            return from_env
        return bool(self.session.config.extraction)

    @property
    def every(self) -> int:
        if self.every_override is not None:
            return self.every_override
        return max(1, int(self.session.config.extraction_every or 1))

    @property
    def approval_mode(self) -> bool:
        if self.approval_override is not None:
            return self.approval_override
        return bool(self.session.config.approval_mode)

    @property
    def share_tools(self) -> bool:
        if self.share_tools_override is not None:
            return self.share_tools_override
        return bool(self.session.config.extraction_share_tools)

    @property
    def running(self) -> bool:
        with self._cond:
            return self._running

    def reset(self) -> None:
        """Close the circuit breaker and forget the failure count."""
        with self._cond:
            self.broken = False
            self.failures = 0

    def status(self) -> dict[str, Any]:
        """Settings, counters and recent runs, for ``%memory extraction``."""
        with self._cond:
            return {"enabled": self.enabled, "every": self.every,
                    "approval_mode": self.approval_mode, "share_tools": self.share_tools,
                    "running": self._running, "stash_waiting": self._stash is not None,
                    "broken": self.broken, "failures_in_a_row": self.failures,
                    "turns_since_last_run": self.turns_since, **self.counts,
                    "recent": [r.to_json() for r in self.runs[-10:]]}

    # ------------------------------------------------------------------ turn hooks

    def before_turn(self, turn: TurnInProgress) -> None:
        """Show notices that could not reach the cell that triggered them."""
        with self._cond:
            waiting, self.undelivered = self.undelivered, []
        for text, _payload in waiting:
            turn.note("memory", text)

    def after_turn(self, turn: TurnInProgress, result: TurnOutcome) -> None:
        """Consider the finished turn: start a run, stash it, or pass (skip, throttle)."""
        session = self.session
        if result.status != "ok" or not self.enabled or session.memdir is None:
            return
        last = session.messages[-1] if session.messages else None
        if last is None or last.get("role") != "assistant" or any(
                b.get("type") == "tool_use" for b in last.get("content", [])):
            return
        read_files = dict(session.tool_context().read_files)
        request = _Request(turn, list(session.messages), turn.client, read_files,
                           bool(turn.memories_written))
        background = result.record.setdefault("background", [])
        with self._cond:
            if self.broken:
                return
            if self._running:
                self._stash = request  # a newer request replaces an older one
                self.counts["stashed"] += 1
                background.append("extraction")
                return
            if not self._should_run(request, trailing=False):
                return
            self._running = True
        background.append("extraction")
        self._task = session.runner.submit("extraction", lambda: self._worker(request))

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no run is under way or stashed (running a queued one now, when
        background work is synchronous); False if ``timeout`` ran out."""
        task = self._task
        if task is not None:
            task.wait(timeout)
        with self._cond:
            return self._cond.wait_for(lambda: not self._running, timeout)

    # ------------------------------------------------------------------ decisions

    def _since_cursor(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.cursor is None:
            return messages
        for index, message in enumerate(messages):
            if message is self.cursor:
                return messages[index + 1:]
        return messages  # the history was replaced (compaction): all of it is new

    def _main_wrote(self, request: _Request, new: list[dict[str, Any]]) -> bool:
        if request.main_wrote:
            return True
        memdir = self.session.memdir
        if memdir is None:
            return False
        real = os.path.realpath(memdir)
        root = self.session.project_root
        for message in new:
            if message.get("role") != "assistant":
                continue
            for block in message.get("content", []):
                if block.get("type") != "tool_use" or block.get("name") not in ("Write", "Edit"):
                    continue
                raw = (block.get("input") or {}).get("file_path")
                if isinstance(raw, str) and _inside(raw, root, real):
                    return True
        return False

    def _should_run(self, request: _Request, *, trailing: bool) -> bool:
        """Apply the skip and throttle rules (called with the lock held)."""
        new = self._since_cursor(request.messages)
        if not new:
            return False
        if self._main_wrote(request, new):
            self.cursor = request.messages[-1]
            self.counts["skipped"] += 1
            return False
        if not trailing:
            self.turns_since += 1
            if self.turns_since < self.every:
                self.counts["throttled"] += 1
                return False
        self.turns_since = 0
        return True

    # ------------------------------------------------------------------ the worker

    def _worker(self, first: _Request) -> None:
        trailing = False
        request: _Request | None = first
        while request is not None:
            try:
                self._run(request, trailing=trailing)
            except Exception as exc:  # a bug of ours must still release the worker
                self._failed(request, None, exc)  # logged, with its traceback
            with self._cond:
                request = self._stash
                self._stash = None
                trailing = True
                if request is not None and (self.broken or not self.enabled
                                            or self.session.memdir is None
                                            or not self._should_run(request, trailing=True)):
                    request = None
                if request is None:
                    self._running = False
                    self._cond.notify_all()

    def _run(self, request: _Request, *, trailing: bool) -> None:
        run = ExtractionRun(len(self.runs) + 1, f"extraction-{uuid.uuid4().hex[:12]}", now_iso(),
                            trailing=trailing)
        with self._cond:
            self.runs.append(run)
            self.counts["runs"] += 1
            self._active += 1
            self.max_parallel = max(self.max_parallel, self._active)
        try:
            self._extract(request, run)
        except Exception as exc:
            self._failed(request, run, exc)
            return
        finally:
            with self._cond:
                self._active -= 1
        with self._cond:
            self.failures = 0
            self.cursor = request.messages[-1]
        self._announce_success(request, run)

    def _failed(self, request: _Request, run: ExtractionRun | None, exc: BaseException) -> None:
        message = describe_error(exc)
        if run is not None:
            run.status, run.error, run.ended = "failed", message, now_iso()
        with self._cond:
            self.counts["failed"] += 1
            self.failures += 1
            opened = not self.broken and self.failures >= self.breaker_limit
            if opened:
                self.broken = True
        if opened:
            self._notify(request, (
                f"Memory extraction is off for the rest of this session after "
                f"{self.failures} failed runs in a row (last error: {message.rstrip('.')}). "
                "Turn it back on with `%memory extraction on`."
            ), {"kind": "extraction", "breaker": True, "error": message})

    def _extract(self, request: _Request, run: ExtractionRun) -> None:
        session = self.session
        if session.memdir is None:  # memory was switched off since the turn asked for this run
            run.status, run.ended = "nothing", now_iso()
            return
        memdir = Path(session.memdir)
        approval = self.approval_mode
        area = None
        work = memdir
        if approval:
            from jupyter_memory.memdir.pending import PendingArea

            area = PendingArea(memdir)
            work = area.stage()
        try:
            store = WriteTrackingStore(work, session_id=session.session_id,
                                       maintain_index=session.config.maintain_index,
                                       mark_provenance=session.config.provenance,
                                       provenance_default="extraction")
            ctx = ToolContext(
                project_root=session.project_root, memdir=work, store=store,
                read_files={} if approval else dict(request.read_files),
                permission=PermissionPolicy(mode="deny", interactive=False),
                restrict_to_memdir=True, provenance="extraction",
            )
            registry = session.tools
            offered = (registry if self.share_tools else memory_registry(registry)).definitions()
            run.tools_offered = [t["name"] for t in offered]
            run_tool = self._tool_runner(registry, ctx, memdir, work if approval else None)
            new = self._since_cursor(request.messages)
            team_store = _nested_team(session, memdir) if area is None else None
            in_context = session.request_state(list(request.messages))
            existing = existing_memories(
                scan(memdir, cache=scan_cache(memdir)), index=in_context.index,
                team_index=in_context.team_index if team_store is not None else None,
                loaded_at=session.memory.snapshot_at)
            prompt = extraction_prompt(
                len(new), existing, str(memdir),
                maintain_index=session.config.maintain_index, max_calls=self.max_calls,
                team=team_store is not None)
            first = {"role": "user", "content": [{"type": "text", "text": prompt}]}

            def body_for(fork: list[dict[str, Any]]) -> dict[str, Any]:
                # The fork's own messages are a suffix: the breakpoint stays on the turn's
                # last block, so what this call writes is what the next main call reads.
                state = session.request_state(list(request.messages))
                return assemble(replace(state, tools=offered, suffix=fork)).body

            try:
                with calling("extraction"):
                    result = run_confined(
                        request.client, body_for, [first], run_tool, max_calls=self.max_calls,
                        on_response=lambda m: session.cost_ledger.charge(
                            "extraction", m, session.config.model))
            except BaseException:
                _put_back(store)  # a failed run changes nothing, not even half of it
                raise
            run.calls, run.usage = result.calls, result.usage
            self._log(run, result.messages)
            run.before = dict(store.before)
            written = [f for f in store.before if f != INDEX_NAME]
            if area is not None:
                items = area.collect(work, store.before, run=run.agent_id,
                                     session_id=session.session_id)
                run.pending = [i.id for i in items]
                run.files = [i.file for i in items]
                run.created = [i.file for i in items if i.is_new]
                run.status = "pending" if items else "nothing"
            else:
                if team_store is not None:  # the team's rules and index (docs/reference.md#team-mode)
                    shared = [f[len("team/"):] for f in written
                              if f.startswith("team/") and (memdir / f).exists()]
                    for moved in team_store.settle(shared):  # a user memory goes private
                        run.notes.append(moved.note)
                        if moved.to is not None:  # new in private memory: undo removes it
                            store.before.setdefault(moved.to, None)
                    written = [f for f in store.before if f != INDEX_NAME]
                run.after = store.after()
                # A write the store refused (a credential, a bad header) leaves the file as
                # it was: only files whose bytes changed were saved.
                run.files = [f for f in written
                             if run.after.get(f) is not None and run.after[f] != store.before[f]]
                run.created = [f for f in run.files if store.before[f] is None]
                run.status = "saved" if run.files else "nothing"
            run.ended = now_iso()
        finally:
            if area is not None:
                area.drop_stage(work)

    def _tool_runner(
        self, registry: ToolRegistry, ctx: ToolContext, memdir: Path, stage: Path | None
    ) -> Callable[[str, Mapping[str, Any]], ToolResult]:
        """Run tools confined to the memdir; in approval mode, map memdir paths onto the stage."""
        if stage is None:
            return lambda name, args: registry.run(name, args, ctx)
        real = os.path.realpath(memdir)
        stage_real = os.path.realpath(stage)
        root = self.session.project_root

        def to_stage(value: str) -> str:
            given = os.path.expanduser(value.strip())
            lexical = os.path.abspath(given if os.path.isabs(given) else os.path.join(root, given))
            for base in dict.fromkeys((os.path.abspath(memdir), real)):
                if lexical == base or lexical.startswith(base + os.sep):
                    return stage_real + lexical[len(base):]
            return value

        def run(name: str, args: Mapping[str, Any]) -> ToolResult:
            mapped = {k: to_stage(v) if k in ("file_path", "path") and isinstance(v, str) else v
                      for k, v in args.items()} if isinstance(args, Mapping) else args
            result = registry.run(name, mapped, ctx)
            text = result.content.replace(stage_real, real).replace(str(stage), real)
            return replace(result, content=text)

        return run

    def _log(self, run: ExtractionRun, messages: list[dict[str, Any]]) -> None:
        """Mirror the fork's own messages into a subagent log beside the session's log."""
        session_log = self.session.log
        if session_log is None:
            return
        try:
            from jupyter_memory.transcript.writer import subagent_writer

            writer = subagent_writer(session_log.writer(), run.agent_id)
            for message in messages:
                writer.append_message(message["role"], copy.deepcopy(message))
        except (OSError, ValueError) as exc:
            run.log_error = f"{type(exc).__name__}: {exc}"

    # ------------------------------------------------------------------ reporting

    def _announce_success(self, request: _Request, run: ExtractionRun) -> None:
        if run.status == "saved":
            parts = [f"`{f}` ({'new' if f in run.created else 'updated'})" for f in run.files]
            count = len(run.files)
            notes = "".join(f" {note}" for note in run.notes)
            self._notify(request, (
                f"🧠 Saved {count} memor{'y' if count == 1 else 'ies'}: {', '.join(parts)}."
                f"{notes} This was extraction run {run.id}; undo it with `%memory undo {run.id}`."
            ), {"kind": "extraction", "run": run.id, "files": list(run.files),
                "created": list(run.created), "undo": f"%memory undo {run.id}",
                **({"notes": list(run.notes)} if run.notes else {})})
        elif run.status == "pending":
            count = len(run.pending)
            listing = ", ".join(f"`{f}` ({i})" for f, i in zip(run.files, run.pending,
                                                                strict=True))
            self._notify(request, (
                f"🧠 {count} memor{'y' if count == 1 else 'ies'} from this turn "
                f"{'awaits' if count == 1 else 'await'} your approval: {listing}. "
                "Review with `%memory pending`."
            ), {"kind": "extraction", "run": run.id, "files": list(run.files),
                "pending": list(run.pending), "review": "%memory pending"})

    def _notify(self, request: _Request, text: str, payload: dict[str, Any]) -> None:
        try:
            request.turn.events.on_notice(text, payload)
        except Exception:  # the cell is gone: show it with the next turn instead
            log.debug("notice not delivered; it is shown with the next turn", exc_info=True)
            with self._cond:
                self.undelivered.append((text, payload))

    # ------------------------------------------------------------------ undo

    def find_run(self, run_id: int | None = None) -> ExtractionRun:
        """Run ``run_id``, or the latest run that saved something and was not undone."""
        with self._cond:
            runs = list(self.runs)
        if run_id is not None:
            for run in runs:
                if run.id == run_id:
                    return run
            raise JupyterMemoryError(f"There is no extraction run {run_id} in this session.")
        for run in reversed(runs):
            if run.status == "saved" and not run.undone:
                return run
        raise JupyterMemoryError("No extraction run of this session saved anything to undo.")

    def undo(self, run_id: int | None = None, store: MemoryStore | None = None) -> UndoReport:
        """Take back what a run saved, through the store, without losing later changes.

        A file the run created is forgotten (file and index line); a file it updated gets
        its earlier text back. A file changed after the run is left alone and reported.
        When the index is still exactly as the run left it, its earlier text comes back
        whole (so pointer edits are undone too).
        """
        run = self.find_run(run_id)
        if run.status != "saved":
            raise JupyterMemoryError(f"Extraction run {run.id} saved nothing ({run.status}).")
        if run.undone:
            raise JupyterMemoryError(f"Extraction run {run.id} was already undone.")
        store = store or self.session.store
        if store is None:
            raise JupyterMemoryError("Memory is off for this session; switch it on to undo.")
        report = UndoReport(run.id)
        with store.writing():
            index_now = _current(store, INDEX_NAME)
            index_same = INDEX_NAME in run.after and index_now == run.after[INDEX_NAME]
            for file in run.files:
                path = store.memdir / file
                now = _current(store, file)
                if now != run.after.get(file):
                    report.kept.append(file)
                    continue
                earlier = run.before.get(file)
                if earlier is None:
                    store.forget(file)
                    report.removed.append(file)
                else:
                    store.root.write(path, earlier)
                    report.restored.append(file)
            if index_same and not report.kept and INDEX_NAME in run.before:
                earlier_index = run.before[INDEX_NAME]
                if earlier_index is None:
                    store.root.remove(INDEX_NAME, missing_ok=True)
                else:
                    store.root.write(INDEX_NAME, earlier_index)
                report.index_restored = True
        run.undone = True
        return report


def _put_back(store: WriteTrackingStore) -> None:
    """Restore every file a run wrote to the bytes it had before the run touched it."""
    with store.writing():
        for rel, earlier in store.before.items():
            if earlier is None:
                store.root.remove(rel, missing_ok=True)
            else:
                store.root.write(rel, earlier)


def _inside(raw: str, root: Path, real_memdir: str) -> bool:
    given = os.path.expanduser(raw.strip())
    path = os.path.realpath(given if os.path.isabs(given) else os.path.join(root, given))
    return path == real_memdir or path.startswith(real_memdir.rstrip(os.sep) + os.sep)


class HasExtraction(Protocol):
    @property
    def extraction(self) -> ExtractionHook: ...


def hook_for(session: HasExtraction) -> ExtractionHook:
    """The session's extraction agent (its ``extraction`` field)."""
    return session.extraction
