"""Mirror every finished turn into the session's JSONL log (docs/reference.md#the-transcript).

The notebook is the primary transcript; the log beside the memdir is the mirror the
reference tool can read. A turn is logged once it has ended and its messages are final
(a rolled-back turn leaves no trace; an interrupted one is logged after its clean-up),
so the append-only log never needs a correction.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

from jupyter_memory._version import __version__
from jupyter_memory.transcript.writer import TranscriptWriter

META_KEY = "_meta"


class LoggedConfig(Protocol):
    """The setting the log reads: the main model, written beside each reply."""

    @property
    def model(self) -> str: ...


class LoggedTurn(Protocol):
    """What the log reads of a finished turn: its messages and its requests' usage."""

    @property
    def new_messages(self) -> list[dict[str, Any]]: ...

    @property
    def requests(self) -> list[dict[str, Any]]: ...


class LoggedSession(Protocol):
    """What the log reads of a session. The transcript layer sits below the agent, so it
    names no ``Session`` class; ``Session`` satisfies this structurally."""

    @property
    def cwd(self) -> Path: ...

    @property
    def env(self) -> Mapping[str, str] | None: ...

    @property
    def session_id(self) -> str: ...

    @property
    def config(self) -> LoggedConfig: ...


def git_branch(folder: Path) -> str | None:
    """The current branch of ``folder``'s repository, or None outside git."""
    from jupyter_memory.memdir.team.git import run_git

    try:
        out = run_git(["-C", str(folder), "rev-parse", "--abbrev-ref", "HEAD"], cwd=None,
                      env=None, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    branch = out.stdout.strip()
    return branch if out.returncode == 0 and branch else None


def log_path(session: LoggedSession) -> Path:
    """``<base>/projects/<key of the working folder>/<session id>.jsonl``."""
    from jupyter_memory.memdir.location import transcripts_dir

    return transcripts_dir(session.cwd, session.env) / f"{session.session_id}.jsonl"


class SessionLog:
    """A turn hook that appends each finished turn's messages to the JSONL log.

    It implements the agent's turn hook protocol (``agent/hooks.py``) structurally: the
    transcript layer sits below the agent and does not name it.
    """

    def __init__(self, session: LoggedSession) -> None:
        self.session = session
        self._writer: TranscriptWriter | None = None

    @property
    def path(self) -> Path:
        return log_path(self.session)

    def writer(self) -> TranscriptWriter:
        if self._writer is None:
            self._writer = TranscriptWriter(
                self.path,
                session_id=self.session.session_id,
                cwd=str(self.session.cwd),
                version=__version__,
                git_branch=git_branch(self.session.cwd),
            )
        return self._writer

    def before_turn(self, turn: object) -> None:
        return None

    def before_call(self, turn: object, round_index: int) -> None:
        return None

    def record_fields(self, turn: object) -> Mapping[str, Any] | None:
        return None

    def after_turn(self, turn: LoggedTurn, result: object) -> None:
        writer = self.writer()
        for message in turn.new_messages:
            meta = message.get(META_KEY) or {}
            body = {k: v for k, v in message.items() if k != META_KEY}
            if message["role"] == "assistant":
                usage = _usage_for(turn, message)
                if usage is not None:
                    body["usage"] = usage
                body.setdefault("model", self.session.config.model)
            writer.append_message(message["role"], body, is_meta=bool(meta))

    def log_boundary(
        self, trigger: Literal["auto", "manual"], pre_tokens: int, summary: str
    ) -> None:
        """Write a compaction boundary and its summary, as the reference does."""
        writer = self.writer()
        writer.append_compact_boundary(trigger, pre_tokens)
        writer.append_summary(summary)


def _usage_for(turn: LoggedTurn, message: dict[str, Any]) -> dict[str, int] | None:
    """The usage of the model call that produced ``message`` (calls and replies pair up)."""
    replies = [m for m in turn.new_messages if m["role"] == "assistant"]
    try:
        index = next(i for i, m in enumerate(replies) if m is message)
    except StopIteration:
        return None
    answered = [r for r in turn.requests if "usage" in r]
    return answered[index]["usage"] if index < len(answered) else None
