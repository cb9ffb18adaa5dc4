"""``%request``: any model call of any turn, exactly as sent.

The same command as ``jupyter-memory request`` (:mod:`jupyter_memory.commands.request`):
without a notebook path it reads this kernel's session, with one it reads the saved file,
and then it prints what the command line prints.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class

from jupyter_memory.commands import command_named
from jupyter_memory.magics.commands import magic_doc, read_line, run_command

REQUEST = command_named("request")


@magics_class
class RequestMagics(Magics):
    def __init__(self, shell: Any = None, agent: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.agent = agent

    @line_magic
    def request(self, line: str = "") -> None:
        # The docstring is generated from the declaration (magic_doc, below).
        args = read_line(REQUEST, line)
        if args is not None:
            run_command(self, REQUEST, args)


RequestMagics.request.__doc__ = magic_doc("%request", """
Show any model call of any turn exactly as it was sent.

Every call of this kernel's session is kept: the main agent's rounds, the recall
selector, the extraction agent, compaction summaries, session notes, %%remember's filing
call and a defined agent's calls. Given a saved notebook, it reads the file instead and
prints what jupyter-memory request prints; errors read '%request: message'.
""", """
%request                      # every call of the last turn, readable
%request --turn 2 --call 1    # one call of turn 2 (calls count from 1)
%request --kind selector      # the recall selector's call of the last turn
%request --kind extraction --diff   # what it adds to the previous extraction call
%request --turn 1 --call 1 --json   # the exact body sent, as JSON
%request saved.ipynb --turn 3       # a saved notebook's turn 3
""")
