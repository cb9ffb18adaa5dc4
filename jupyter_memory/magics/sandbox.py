"""``%sandbox``: where this session's model calls go (local echo, a script, or live)."""

from __future__ import annotations

import shlex
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class

from jupyter_memory.sessions.sandbox import SandboxError, sandbox_of, use_sandbox

USAGE = ("Usage: %sandbox echo | %sandbox script FILE.json | %sandbox live | %sandbox "
         "(shows the current mode).")


@magics_class
class SandboxMagics(Magics):
    def __init__(self, shell: Any = None, agent: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.agent = agent

    @line_magic
    def sandbox(self, line: str = "") -> None:
        """Answer this session's model calls locally, so a changed cell is answered.

        Examples::

            %sandbox echo                  # the local server echoes your message
            %sandbox script answers.json   # scripted answers first (docs/fake-api.md), then echo
            %sandbox live                  # back to ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL
            %sandbox                       # which one is in use

        A replayed notebook switched to a sandbox stops replaying: its next requests go to
        the sandbox. Usage from the local server is labelled simulated (``%context --cost``).
        """
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%sandbox: {exc}. {USAGE}") from None
        session = self.agent.session()
        if not words:
            box = sandbox_of(session)
            print(box.describe() if box is not None else
                  "No sandbox: model calls go where the environment (or a replay) says. " + USAGE)
            return None
        mode, rest = words[0], words[1:]
        if len(rest) > (1 if mode == "script" else 0):
            raise UsageError(f"%sandbox: too many arguments: {line.strip()!r}. {USAGE}")
        try:
            box = use_sandbox(session, mode, rest[0] if rest else None)
        except SandboxError as exc:
            raise UsageError(f"%sandbox: {exc}\n{USAGE}") from None
        print(box.describe())
        return None
