"""Starting and stopping record and replay on a session, and which one is running.

Both are model endpoints (``agent/endpoint.py``): starting one is ``session.use_endpoint``,
stopping one switches the session to what comes after it (the endpoint a recording
wrapped; a live endpoint after a replay).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from jupyter_memory.memdir import trust_table
from jupyter_memory.sessions.recording.file import Recording, RecordingError
from jupyter_memory.sessions.recording.matching import MATCH_ENV, MATCH_MODES
from jupyter_memory.sessions.recording.recorder import Recorder
from jupyter_memory.sessions.recording.replayer import Replayer

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session

__all__ = [
    "REPLAY_ENV",
    "controller",
    "match_mode",
    "start_recording",
    "start_replay",
    "stop",
]

REPLAY_ENV = "JUPYTER_MEMORY_REPLAY"
"""When set to a recording file, a kernel's agent session replays it from the start."""


def controller(session: Session) -> Recorder | Replayer | None:
    """The recorder or replayer that is ``session``'s endpoint, if it is one."""
    endpoint = session.endpoint
    return endpoint if isinstance(endpoint, Recorder | Replayer) else None


def stop(session: Session) -> Recorder | Replayer | None:
    """Stop recording or replaying (the file stays); returns what was stopped."""
    current = controller(session)
    if current is not None:
        current.stop()
    return current


def start_recording(session: Session, path: str | os.PathLike[str]) -> Recorder:
    """Record every model exchange of ``session`` from now on into ``path`` (overwritten)."""
    stop(session)
    recorder = Recorder(session, Recording.new(Path(path), session), session.endpoint)
    session.use_endpoint(recorder)
    return recorder


def match_mode(strict: bool = False, configured: str = "", env: Mapping[str, str] | None = None) -> str:
    """The replay match in effect: ``strict`` when asked for by the flag, the setting or
    ``JUPYTER_MEMORY_REPLAY_MATCH``; ``conversation`` otherwise."""
    if strict:
        return "strict"
    chosen = (configured or trust_table.env(MATCH_ENV, env) or "conversation").strip().lower()
    if chosen not in MATCH_MODES:
        raise RecordingError(
            f"Unknown replay match {chosen!r} (from {'the setting' if configured else MATCH_ENV}); "
            f"use one of {', '.join(MATCH_MODES)}."
        )
    return chosen


def start_replay(session: Session, path: str | os.PathLike[str], *, match: str = "conversation") -> Replayer:
    """Answer every model call of ``session`` from the recording at ``path``.

    ``match`` is ``conversation`` (the default: our own prompt text, tool descriptions and
    settings may differ, with a warning) or ``strict`` (the whole request must be equal).
    """
    recording = Recording.load(path)
    replayer = Replayer(session, recording, match=match)
    stop(session)
    session.use_endpoint(replayer.start())
    return replayer
