"""``%sandbox``: where this session's model calls go (local echo, a script, or live)."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class

from jupyter_memory.commands import MAGIC
from jupyter_memory.commands.sandbox import SANDBOX, SandboxArgs
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.magics.commands import magic_doc, read_line, usage_error
from jupyter_memory.sessions.sandbox import sandbox_of, use_sandbox

PROG = SANDBOX.spelling(MAGIC)


@magics_class
class SandboxMagics(Magics):
    def __init__(self, shell: Any = None, agent: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.agent = agent

    @line_magic
    def sandbox(self, line: str = "") -> None:
        # The docstring is generated from the declaration (magic_doc, after the class).
        args = read_line(SANDBOX, line)
        if args is None:
            return None
        assert isinstance(args, SandboxArgs)
        try:
            args = args.checked()
            session = self.agent.session()
            if args.mode is None:
                box = sandbox_of(session)
                print(box.describe() if box is not None else
                      "No sandbox: model calls go where the environment (or a replay) says. "
                      "Usage: %sandbox echo | %sandbox script FILE.json | %sandbox live | "
                      "%sandbox (shows the current mode).")
                return None
            box = use_sandbox(session, args.mode, args.file)
        except JupyterMemoryError as exc:
            raise usage_error(exc, PROG) from None
        print(box.describe())
        return None


SandboxMagics.sandbox.__doc__ = magic_doc("%sandbox", """
Answer this session's model calls locally, so a changed cell is answered.

A replayed notebook switched to a sandbox stops replaying: its next requests go to the
sandbox. Usage from the local server is labelled simulated (%context --cost).
""", """
%sandbox echo                  # the local server echoes your message
%sandbox script answers.json   # scripted answers first (docs/fake-api.md), then echo
%sandbox live                  # back to ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL
%sandbox                       # which one is in use
""")
