"""Lifecycle hooks: user code that runs at fixed moments of a session (docs/reference.md#lifecycle-hooks).

Two kinds, run in this order for each event:

- **Python callables** registered on a session with :func:`register`. Each receives the
  event's payload (a dict) and returns ``None``, a string (text to add), a
  :class:`HookResult`, or a dict shaped like a command's JSON output.
- **Shell commands** from the ``hooks`` key of the settings files, in the reference's
  shape: ``{"hooks": {"PreCompact": [{"matcher": "auto", "hooks": [{"type": "command",
  "command": "...", "timeout": 30}]}]}}``. The payload arrives as JSON on stdin; exit 0
  means success and stdout is the text to add (plain, or JSON with
  ``additionalContext``, ``decision`` and ``reason``); exit 2 blocks (the reason is on
  stderr); any other exit is an error that is reported but changes nothing.

Commands from the project's own ``.claude/settings.json`` and ``settings.local.json`` run
only in a folder the person trusted (``trust.py``); elsewhere they are skipped and the
first event of the session reports that once, saying how to trust. The user's own
``settings.json`` is always trusted.

Events: ``SessionStart`` (source ``startup``, ``resume`` when the session continues a
saved conversation, or ``compact``; text becomes context for the model), ``PreCompact`` (trigger ``manual`` or ``auto``; text is added to the summary
instructions; may block the compaction), ``PostCompact`` (sees the summary; text is shown
to the person) and ``Stop`` (after each turn; text is shown to the person). Commands
are read from the settings once per session, like the reference's snapshot at startup,
so a file edited mid-session cannot slip a command in; :func:`reload_hooks` re-reads.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from jupyter_memory.agent.hooks import TurnHook, TurnInProgress, TurnOutcome
from jupyter_memory.context import prompts
from jupyter_memory.context.assemble import META_KEY

if TYPE_CHECKING:
    from jupyter_memory.agent.host import SessionHost
    from jupyter_memory.memdir.settings import Settings

log = logging.getLogger(__name__)

EVENTS = ("SessionStart", "PreCompact", "PostCompact", "Stop")
#: Events whose hooks may refuse what is about to happen.
BLOCKING_EVENTS = frozenset({"PreCompact"})
#: Seconds a command may run when its settings give no ``timeout``.
DEFAULT_TIMEOUT = 60.0
#: Exit status with which a command blocks the action.
BLOCK_EXIT = 2
#: ``_meta.kind`` of a message carrying hook output for the model.
HOOK_CONTEXT_KIND = "hook_context"
#: Characters of a hook's output kept (a runaway command must not flood the context).
MAX_OUTPUT_CHARS = 10_000

HookFunction = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class HookResult:
    """What a Python hook may return: text to add, and whether to block."""

    text: str | None = None
    block: bool = False
    reason: str | None = None


@dataclass(frozen=True)
class CommandHook:
    """One shell command from a settings file."""

    event: str
    command: str
    matcher: str
    timeout: float
    source: str


@dataclass
class HookOutcome:
    """The combined result of every hook of one event."""

    event: str
    texts: list[str] = field(default_factory=list)
    blocked: bool = False
    reason: str | None = None
    errors: list[str] = field(default_factory=list)
    ran: int = 0

    @property
    def text(self) -> str:
        return "\n\n".join(self.texts)


def _check_event(event: str) -> None:
    if event not in EVENTS:
        raise ValueError(f"unknown lifecycle event {event!r}; use one of {', '.join(EVENTS)}")


class Lifecycle(TurnHook):
    """A session's lifecycle hooks: the Python callables registered on it, the shell
    commands of its settings files (read once, then kept), and when its SessionStart ran.

    As a turn hook it runs SessionStart before the first turn and Stop after each turn.
    SessionStart's source is ``startup``, or ``resume`` for a session that continues a
    saved conversation (:meth:`mark_resumed`). Its output becomes a context message just
    before the first prompt, and belongs to that turn: the turn record and the session log
    carry it (the model saw it, so a resume must find it), and a turn that is rolled back
    takes it along, so SessionStart runs again before the next turn. Stop output and any
    hook errors are shown in the turn's events.
    """

    def __init__(self, session: SessionHost) -> None:
        self.session = session
        self.functions: dict[str, list[HookFunction]] = {}
        self.source = "startup"
        self.started = False
        self._commands: list[CommandHook] | None = None
        self._skipped: str | None = None
        self._skip_shown = False

    # ------------------------------------------------------------------ registering

    def register(self, event: str, fn: HookFunction) -> HookFunction:
        _check_event(event)
        if not callable(fn):
            raise TypeError(f"a {event} hook must be callable, not {type(fn).__name__}")
        self.functions.setdefault(event, []).append(fn)
        return fn

    def unregister(self, event: str, fn: HookFunction) -> bool:
        hooks = self.functions.get(event, [])
        if fn in hooks:
            hooks.remove(fn)
            return True
        return False

    def registered(self, event: str) -> list[HookFunction]:
        _check_event(event)
        return list(self.functions.get(event, []))

    def mark_resumed(self) -> None:
        self.source = "resume"

    # ------------------------------------------------------------------ settings

    def command_hooks(self) -> list[CommandHook]:
        """The shell hooks of the session's settings files, read once and then kept."""
        if self._commands is None:
            from jupyter_memory.memdir.settings import load_settings

            settings = load_settings(self.session.project_root, self.session.env)
            self._skipped = settings.skipped_notice()
            self._commands = _load_commands(settings)
        return list(self._commands)

    def reload_hooks(self) -> list[CommandHook]:
        self._commands = None
        self._skip_shown = False
        return self.command_hooks()

    def skipped_notice(self) -> str | None:
        self.command_hooks()
        return self._skipped

    # ------------------------------------------------------------------ running

    def base_payload(self, event: str) -> dict[str, Any]:
        """Fields every hook receives, named as the reference names them."""
        log = self.session.log
        return {
            "session_id": self.session.session_id,
            "transcript_path": str(log.path) if log is not None else None,
            "cwd": str(self.session.cwd),
            "hook_event_name": event,
        }

    def run(self, event: str, payload: Mapping[str, Any] | None = None, *,
            match: str | None = None) -> HookOutcome:
        """Run every hook of ``event``; ``match`` is the value command matchers test.

        Never raises because of a hook: failures are collected in ``errors``. A block is
        only honoured for events that can block (``PreCompact``).
        """
        _check_event(event)
        data = {**self.base_payload(event), **dict(payload or {})}
        outcome = HookOutcome(event)
        notice = self.skipped_notice()
        if notice and not self._skip_shown:
            self._skip_shown = True
            outcome.errors.append(notice)
        for fn in self.registered(event):
            outcome.ran += 1
            try:
                value = fn(dict(data))
            except Exception as exc:  # the person's hook must not break the session
                log.info("%s hook %s failed", event, _name(fn), exc_info=True)
                outcome.errors.append(
                    f"{event} hook {_name(fn)} failed: {type(exc).__name__}: {exc}")
                continue
            _absorb(outcome, value, _name(fn))
        for hook in self.command_hooks():
            if hook.event != event or not matches(hook.matcher, match):
                continue
            outcome.ran += 1
            _run_command(self.session, hook, data, outcome)
        if event not in BLOCKING_EVENTS and outcome.blocked:
            outcome.errors.append(f"{event} hooks cannot block; the block was ignored.")
            outcome.blocked, outcome.reason = False, None
        return outcome

    # ------------------------------------------------------------------ turn hooks

    def before_turn(self, turn: TurnInProgress) -> None:
        if self.started:
            return
        self.started = True
        source = self.source
        outcome = self.run("SessionStart", {"source": source}, match=source)
        for error in outcome.errors:
            turn.note("warning", error)
        message = context_message(outcome)
        if message is None:
            return
        messages = self.session.messages
        first = turn.added[0] if turn.added else None
        at = next((i for i, m in enumerate(messages) if m is first), len(messages))
        messages.insert(at, message)
        turn.added.insert(0, message)  # part of this turn: recorded, logged, rolled back
        turn.extra["session_start_message"] = message

    def after_turn(self, turn: TurnInProgress, result: TurnOutcome) -> None:
        started = turn.extra.get("session_start_message")
        if started is not None and not any(m is started for m in self.session.messages):
            self.started = False  # rolled back: start again next turn
        outcome = self.run(
            "Stop", {"last_assistant_message": result.answer, "status": result.status})
        events = result.record.setdefault("events", [])
        events.extend({"kind": "hook", "text": t} for t in outcome.texts)
        events.extend({"kind": "warning", "text": e} for e in outcome.errors)


class HasLifecycle(Protocol):
    """A session, as the functions below read it: it has its :class:`Lifecycle`."""

    @property
    def lifecycle(self) -> Lifecycle: ...


def register(session: HasLifecycle, event: str, fn: HookFunction) -> HookFunction:
    """Run ``fn(payload)`` at ``event`` in ``session``; returns ``fn`` (decorator-friendly)."""
    return session.lifecycle.register(event, fn)


def unregister(session: HasLifecycle, event: str, fn: HookFunction) -> bool:
    """Remove ``fn`` from ``event``; False when it was not registered."""
    return session.lifecycle.unregister(event, fn)


def mark_resumed(session: HasLifecycle) -> None:
    """Note that ``session`` continues a saved conversation: its first SessionStart gets
    source ``resume`` instead of ``startup``, as the reference's does after ``--resume``."""
    session.lifecycle.mark_resumed()


def registered(session: HasLifecycle, event: str) -> list[HookFunction]:
    return session.lifecycle.registered(event)


def command_hooks(session: HasLifecycle) -> list[CommandHook]:
    """The shell hooks of ``session``'s settings files, read once and then kept."""
    return session.lifecycle.command_hooks()


def reload_hooks(session: HasLifecycle) -> list[CommandHook]:
    """Read the settings files again (after the person edited their hooks or trusted the
    folder)."""
    return session.lifecycle.reload_hooks()


def skipped_notice(session: HasLifecycle) -> str | None:
    """The line saying which project hooks were skipped as untrusted, or None."""
    return session.lifecycle.skipped_notice()


def base_payload(session: HasLifecycle, event: str) -> dict[str, Any]:
    """Fields every hook receives, named as the reference names them."""
    return session.lifecycle.base_payload(event)


def run(
    session: HasLifecycle, event: str, payload: Mapping[str, Any] | None = None, *,
    match: str | None = None,
) -> HookOutcome:
    """Run every hook of ``event`` in ``session`` (see :meth:`Lifecycle.run`)."""
    return session.lifecycle.run(event, payload, match=match)


# ----------------------------------------------------------------------------- settings


def _load_commands(settings: Settings) -> list[CommandHook]:
    """The command hooks of the trusted settings files, in the reference's shape."""
    found: list[CommandHook] = []
    for src in settings.sources:
        reading = settings.reading("hooks", src.name)  # the trust table: a project's need trust
        hooks = reading.value if reading is not None and reading.taken else None
        if not isinstance(hooks, Mapping):
            continue
        for event in EVENTS:
            groups = hooks.get(event)
            if not isinstance(groups, list):
                continue
            for group in groups:
                if not isinstance(group, Mapping) or not isinstance(group.get("hooks"), list):
                    continue
                matcher = str(group.get("matcher") or "")
                for spec in group["hooks"]:
                    if not isinstance(spec, Mapping) or spec.get("type", "command") != "command":
                        continue
                    command = spec.get("command")
                    if not isinstance(command, str) or not command.strip():
                        continue
                    timeout = spec.get("timeout", DEFAULT_TIMEOUT)
                    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
                        timeout = DEFAULT_TIMEOUT
                    found.append(CommandHook(event, command, matcher, float(timeout), src.name))
    return found


def matches(matcher: str, value: str | None) -> bool:
    """Empty or ``*`` matches everything; otherwise the whole value must match the pattern."""
    if not matcher or matcher == "*" or value is None:
        return True
    try:
        return re.fullmatch(matcher, value) is not None
    except re.error:
        return matcher == value


# ----------------------------------------------------------------------------- running


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _absorb(outcome: HookOutcome, value: Any, who: str) -> None:
    if value is None:
        return
    if isinstance(value, HookResult):
        text, block, reason = value.text, value.block, value.reason
    elif isinstance(value, Mapping):
        text, block, reason = _from_json(value)
    elif isinstance(value, str):
        text, block, reason = value, False, None
    else:
        outcome.errors.append(
            f"{outcome.event} hook {who} returned {type(value).__name__}; return None, a "
            "string, a HookResult or a dict."
        )
        return
    if text and text.strip():
        outcome.texts.append(text.strip()[:MAX_OUTPUT_CHARS])
    if block:
        outcome.blocked = True
        outcome.reason = outcome.reason or reason or f"blocked by {who}"


def _from_json(data: Mapping[str, Any]) -> tuple[str | None, bool, str | None]:
    specific = data.get("hookSpecificOutput")
    text = data.get("additionalContext")
    if text is None and isinstance(specific, Mapping):
        text = specific.get("additionalContext")
    block = str(data.get("decision", "")).lower() == "block" or data.get("continue") is False
    reason = data.get("reason") or data.get("stopReason")
    return (str(text) if text is not None else None), block, (str(reason) if reason else None)


def _run_command(
    session: SessionHost, hook: CommandHook, payload: Mapping[str, Any], outcome: HookOutcome
) -> None:
    env = {**os.environ, **dict(session.env or {}), "CLAUDE_PROJECT_DIR": str(session.project_root)}
    who = f"command {hook.command!r} ({hook.source} settings)"
    try:
        done = subprocess.run(
            hook.command, shell=True, input=json.dumps(payload, ensure_ascii=False),
            capture_output=True, text=True, timeout=hook.timeout, cwd=str(session.project_root),
            env=env, check=False,
        )
    except subprocess.TimeoutExpired:
        outcome.errors.append(
            f"{hook.event} {who} was stopped after {hook.timeout:g} s; raise its \"timeout\" in "
            "the settings file if it needs longer."
        )
        return
    except OSError as exc:
        outcome.errors.append(f"{hook.event} {who} could not start: {exc}")
        return
    stdout, stderr = done.stdout.strip(), done.stderr.strip()
    if done.returncode == BLOCK_EXIT:
        outcome.blocked = True
        outcome.reason = outcome.reason or stderr or f"blocked by {who}"
        return
    if done.returncode != 0:
        outcome.errors.append(
            f"{hook.event} {who} exited with status {done.returncode}"
            + (f": {stderr[:500]}" if stderr else "")
        )
        return
    if stdout.startswith("{"):
        try:
            data = json.loads(stdout)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            _absorb(outcome, data, who)
            return
    _absorb(outcome, stdout, who)


def context_message(outcome: HookOutcome) -> dict[str, Any] | None:
    """A meta user message carrying the hooks' text for the model, or None if there is none."""
    if not outcome.texts:
        return None
    text = prompts.system_reminder(f"Output of the {outcome.event} hooks:\n\n{outcome.text}")
    return {
        "role": "user",
        "content": [{"type": "text", "text": text}],
        META_KEY: {"kind": HOOK_CONTEXT_KIND, "event": outcome.event},
    }
