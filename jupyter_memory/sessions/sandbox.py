"""Sandbox mode: point a session at the local server, answering from a script or echoing.

A replayed notebook refuses any request that differs from its recording, which is right
for checking the examples but leaves a learner who changes a prompt with nothing to try.
``use_sandbox(session, "echo")`` starts the local Messages API server
(``jupyter_memory.localapi``) in this process and sends every model call of the session there;
``"script"`` answers from a script file first (the JSON list of turns of docs/fake-api.md)
and echoes once it runs out (the echo is the local server's own, ``localapi.echo``); ``"live"`` goes back to the endpoint the environment names
(``ANTHROPIC_API_KEY`` or ``ANTHROPIC_BASE_URL``). Everything a sandbox answers is labelled
simulated by the cost report (its message ids start ``msg_fake_``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_memory.agent.endpoint import LiveEndpoint
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir import trust_table

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session
    from jupyter_memory.localapi.server import FakeAnthropic

SANDBOX_MODES = ("echo", "script", "live")


class SandboxError(JupyterMemoryError):
    """A sandbox request that cannot be carried out (unknown mode, bad script, no key)."""


class Sandbox(LiveEndpoint):
    """The endpoint ``%sandbox`` switched a session to: the local server it started (echo,
    script) through a client made for it, or, in ``live`` mode, the endpoint the
    environment names. Closing it stops its server."""

    kind = "sandbox"

    def __init__(self, mode: str, server: FakeAnthropic | None = None,
                 script: Path | None = None, stopped: str | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        local = {"ANTHROPIC_BASE_URL": server.base_url} if server is not None else env
        super().__init__(local)
        self.mode = mode
        self.server = server
        self.script = script
        #: "record" or "replay" when switching stopped the session's recorder or replayer.
        self.stopped = stopped

    def describe(self) -> str:
        return self._where() + (
            f" The {self.stopped} this session was under was stopped (its file is kept)."
            if self.stopped else "")

    def _where(self) -> str:
        if self.server is None:
            return super().describe()
        where = f"the local scripted server at {self.server.base_url}"
        if self.mode == "script":
            return (f"script: {where} answers from {self.script} ({self.server.remaining} "
                    "scripted turn(s) left), then echoes. Usage is simulated.")
        return f"echo: {where} answers every call with the text of your last message. Usage is simulated."

    def close(self) -> None:
        super().close()
        if self.server is not None:
            self.server.stop()


def sandbox_of(session: Session) -> Sandbox | None:
    """The sandbox ``session``'s calls go to, or None when they go elsewhere."""
    endpoint = session.endpoint
    return endpoint if isinstance(endpoint, Sandbox) else None


def echoes(session: Session) -> bool:
    """Whether ``session``'s model calls go to the echo sandbox, where no model answers:
    work that needs one (``%%remember`` filing) is done by fixed rules instead."""
    box = sandbox_of(session)
    return box is not None and box.mode == "echo"


def stop_sandbox(session: Session) -> None:
    """Send ``session``'s calls live again if a sandbox has them (stopping its server)."""
    if sandbox_of(session) is not None:
        session.use_endpoint(LiveEndpoint(session.env))


def hand_over(old: Session, new: Session) -> Sandbox | None:
    """Move ``old``'s sandbox to ``new`` (``%agent new``): the one cell that switched a
    notebook to its sandbox stays in force, and the old session keeps no server."""
    box = sandbox_of(old)
    if box is None:
        return None
    new.use_endpoint(box)
    old.use_endpoint(LiveEndpoint(old.env), close_old=False)  # handed over, not closed
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
    from jupyter_memory.agent.client import CONNECT_HELP
    from jupyter_memory.localapi.echo import echo_responder
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
        box = Sandbox("live", stopped=_stop_recording(session), env=session.env)
    else:
        stopped = _stop_recording(session)
        server = FakeAnthropic(responder=echo_responder).start()
        if turns:
            server.script(turns)
        box = Sandbox(mode, server, path, stopped)
    session.use_endpoint(box)  # the sandbox in use until now is closed: its server stops
    return box
