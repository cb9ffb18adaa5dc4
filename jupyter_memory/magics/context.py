"""``%context``: what the next request to the model holds, by category.

The same command as ``jupyter-memory context`` (:mod:`jupyter_memory.commands.notebooks`):
the options both take print the same text. Here the request is the notebook session's
(or, with ``--agent NAME``, the defined agent's), shown as a view unless ``--text``,
``--brief`` or ``--json`` asks for text.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class

from jupyter_memory.commands import command_named
from jupyter_memory.magics.commands import magic_doc, read_line, run_command

CONTEXT = command_named("context")


@magics_class
class ContextMagics(Magics):
    def __init__(self, shell: Any = None, agent: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.agent = agent

    @line_magic
    def context(self, line: str = "") -> None:
        # The docstring is generated from the declaration (magic_doc, below).
        args = read_line(CONTEXT, line)
        if args is not None:
            run_command(self, CONTEXT, args)


ContextMagics.context.__doc__ = magic_doc("%context", """
Show what the next request to the model holds, by category, with budgets.

Counts are offline estimates until the agent has answered once; after that the real
usage of the last response is used, as the reference does. The options shared with
jupyter-memory context print the same text; errors read '%context: message'.
""", """
%context                 # the budget as a view: system, tools, instructions, ...
%context --text          # the same as plain text (what jupyter-memory context prints)
%context --brief         # only the totals and the categories
%context --json          # the same as JSON, for scripts
%context --raw           # the exact request body
%context --count         # exact size from the endpoint's count-tokens API
%context --agent data-reviewer   # the request of a defined agent
%context --cost          # every model call so far (main, selector, extraction,
                         # summaries, notes): tokens and price; --json for data
""")
