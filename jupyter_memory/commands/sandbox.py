"""``%sandbox``'s arguments (the magic, ``jupyter_memory.magics.sandbox``, runs it)."""

from __future__ import annotations

from dataclasses import dataclass

from jupyter_memory.commands.base import MAGIC, Args, CommandUsageError, arg, declare
from jupyter_memory.sessions.sandbox import SANDBOX_MODES

__all__ = ["SANDBOX", "SandboxArgs"]


@dataclass(frozen=True, kw_only=True)
class SandboxArgs(Args):
    mode: str | None = arg(nargs="?", choices=SANDBOX_MODES, metavar="MODE",
                           help="echo: the local server echoes your message; script: it "
                                "answers from FILE first, then echoes; live: back to the "
                                "endpoint the environment names. Without one: the mode in use")
    file: str | None = arg(nargs="?", metavar="FILE.json",
                           help="script: the turns to answer with (docs/fake-api.md)")

    def checked(self) -> SandboxArgs:
        """These arguments, refused when a FILE comes with a mode that takes none."""
        if self.file is not None and self.mode != "script":
            raise CommandUsageError(f"{self.mode} takes no FILE; only `%sandbox script "
                                    "FILE.json` does.")
        return self


SANDBOX = declare(
    "sandbox",
    "Answer this session's model calls locally (an echo, or a script then an echo), or go "
    "back to the live endpoint; with no MODE, say which is in use.",
    SandboxArgs, fronts=(MAGIC,), magic="%sandbox")
