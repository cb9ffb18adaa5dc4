"""Sandbox mode: point a session at the local server, answering from a script or echoing.

A replayed notebook refuses any request that differs from its recording, which is right
for checking the examples but leaves a learner who changes a prompt with nothing to try.
``use_sandbox(session, "echo")`` starts the local Messages API server
(``jupyter_memory.localapi``) in this process and sends every model call of the session there;
``"script"`` answers from a script file first (the JSON list of turns of docs/fake-api.md)
and echoes once it runs out; ``"live"`` goes back to the endpoint the environment names
(``ANTHROPIC_API_KEY`` or ``ANTHROPIC_BASE_URL``). Everything a sandbox answers is labelled
simulated by the cost report (its message ids start ``msg_fake_``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir import trust_table

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session

SANDBOX_MODES = ("echo", "script", "live")


class SandboxError(JupyterMemoryError):
    """A sandbox request that cannot be carried out (unknown mode, bad script, no key)."""


@dataclass
class Sandbox:
    """The sandbox a session uses: its mode, the local server (None when live), the script."""

    mode: str
    server: Any = None
    script: Path | None = None
    #: "record" or "replay" when switching stopped the session's recorder or replayer.
    stopped: str | None = None

    def describe(self) -> str:
        return self._where() + (
            f" The {self.stopped} this session was under was stopped (its file is kept)."
            if self.stopped else "")

    def _where(self) -> str:
        if self.mode == "live":
            return ("live: model calls go to the endpoint the environment names "
                    "(ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL).")
        where = f"the local scripted server at {self.server.base_url}"
        if self.mode == "script":
            left = self.server.remaining if self.server is not None else 0
            return (f"script: {where} answers from {self.script} ({left} scripted "
                    "turn(s) left), then echoes. Usage is simulated.")
        return f"echo: {where} answers every call with the text of your last message. Usage is simulated."


ECHO_PREFIX = "(sandbox echo) "


def _last_words(body: Mapping[str, Any]) -> str:
    """The person's last words: the last text block of the last user message that is not
    harness context (``<system-reminder>`` blocks) and not a tool result."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        texts = [b.get("text", "") for b in blocks if isinstance(b, Mapping)
                 and b.get("type") == "text"
                 and not str(b.get("text", "")).lstrip().startswith("<system-reminder>")]
        if texts:
            return texts[-1]
    return ""


def echo(body: Mapping[str, Any]) -> Any:
    """The sandbox's answer: the person's last words back; a forced tool call (the recall
    selector) gets an empty choice, so nothing is recalled by accident."""
    from jupyter_memory.localapi.script import ToolCall, Turn

    choice = body.get("tool_choice") or {}
    if choice.get("type") == "tool":
        return Turn(tool_calls=[ToolCall(str(choice.get("name")), {"selected_memories": []})])
    return Turn(text=ECHO_PREFIX + _last_words(body))


def sandbox_of(session: Session) -> Sandbox | None:
    """The sandbox ``session`` was switched to, or None if it never was."""
    return getattr(session, "sandbox", None)


def stop_sandbox(session: Session) -> None:
    """Stop ``session``'s local sandbox server, if any (the client factory is left alone)."""
    old, session.sandbox = getattr(session, "sandbox", None), None
    if old is not None and old.server is not None:
        old.server.stop()


def hand_over(old: Session, new: Session) -> Sandbox | None:
    """Move ``old``'s sandbox, with the client that reaches it, to ``new`` (``%agent new``):
    the one cell that switched a notebook to its sandbox stays in force, and the old
    session keeps no server of its own."""
    box = sandbox_of(old)
    if box is None:
        return None
    new.sandbox, old.sandbox = box, None
    new.client_factory = old.client_factory if box.mode != "live" else None
    return box


def _stop_recording(session: Session) -> str | None:
    """Stop a replay (it would refuse the learner's changes) or a recording (it captures
    the calls through a client the sandbox replaces); which one, or None."""
    from jupyter_memory.sessions.recording import control

    current = control.stop(session)
    return None if current is None else current.kind


def use_sandbox(
    session: Session,
    mode: str,
    script: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Sandbox:
    """Switch ``session``'s model calls to ``mode`` (echo, script FILE, live); see the module."""
    if mode not in SANDBOX_MODES:
        raise SandboxError(f"unknown sandbox mode {mode!r}: use one of {', '.join(SANDBOX_MODES)} "
                           "(for example `%sandbox echo` or `%sandbox script answers.json`).")
    if (mode == "script") != (script is not None):
        raise SandboxError("`script` needs a script file (a JSON list of turns, docs/fake-api.md); "
                           "the other modes take none.")
    from jupyter_memory.agent.client import CONNECT_HELP, make_client
    from jupyter_memory.localapi.script import load_script
    from jupyter_memory.localapi.server import FakeAnthropic
    from jupyter_memory.memdir.gateway import person_root

    turns: list[Any] = []
    path = None
    if script is not None:
        path = Path(script).expanduser()
        try:
            turns = load_script(person_root(path).text(path))  # the script the person named
        except OSError as exc:
            raise SandboxError(f"cannot read the script {path}: {exc.strerror or exc}.") from None
        except (ValueError, TypeError) as exc:
            raise SandboxError(f"{path} is not a fake_api script: {exc} "
                               "(see docs/fake-api.md for the format).") from None
    if mode == "live":
        if not any(trust_table.env(k, env) for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
                                                     "ANTHROPIC_BASE_URL")):
            raise SandboxError(CONNECT_HELP)
        stop_sandbox(session)
        stopped = _stop_recording(session)
        session.client_factory = None
        box = Sandbox("live", stopped=stopped)
        session.sandbox = box
        return box
    stop_sandbox(session)
    stopped = _stop_recording(session)
    server = FakeAnthropic(responder=echo).start()
    if turns:
        server.script(turns)
    def factory() -> Any:
        return make_client({"ANTHROPIC_BASE_URL": server.base_url},
                           max_retries=session.config.max_retries, timeout=session.config.timeout)

    session.client_factory = factory
    box = Sandbox(mode, server, path, stopped)
    session.sandbox = box
    return box
