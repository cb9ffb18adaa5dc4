"""IPython front end: ``%load_ext jupyter_memory`` registers these magics.

One Magics class per command family (as jupysql does): ``Agent`` (``%%agent``,
``%agent``), ``ContextMagics`` (``%context``), ``MemoryMagics`` (``%memory``,
``%%remember``), ``CompactMagics`` (``%compact``). Settings live as traitlets on ``Agent`` so ``%config Agent`` lists
and changes them.
"""

from __future__ import annotations

import atexit
import re
from typing import Any

_CLOSE_AT_EXIT: list[bool] = []


def load_ipython_extension(ipython: Any) -> None:
    from jupyter_memory.magics.agent import Agent
    from jupyter_memory.magics.compact import CompactMagics
    from jupyter_memory.magics.context import ContextMagics
    from jupyter_memory.magics.memory import MemoryMagics
    from jupyter_memory.magics.sandbox import SandboxMagics

    agent = Agent(shell=ipython)
    ipython.register_magics(agent)
    ipython.register_magics(ContextMagics(shell=ipython, agent=agent))
    ipython.register_magics(MemoryMagics(shell=ipython, agent=agent))
    ipython.register_magics(CompactMagics(shell=ipython, agent=agent))
    ipython.register_magics(SandboxMagics(shell=ipython, agent=agent))
    if agent not in ipython.configurables:
        ipython.configurables.append(agent)
    cleanup = ipython.input_transformers_cleanup
    for transform in (protect_agent_line, keep_empty_remember):
        if transform not in cleanup:
            cleanup.append(transform)
    from jupyter_memory.memdir.trust import set_prompter

    set_prompter(ask_person)

    if not _CLOSE_AT_EXIT:  # the session's model client is closed when the kernel exits
        from jupyter_memory.magics.state import close_sessions

        atexit.register(close_sessions)
        _CLOSE_AT_EXIT.append(True)

    from jupyter_memory.magics.cells import install as log_cells

    log_cells(ipython)  # what the person runs reaches the agent's next turn

    from jupyter_memory.logs import setup as setup_log
    from jupyter_memory.memdir.basedir import config_base

    setup_log(config_base())  # the kernel's log: never into a cell (docs/troubleshooting.md)


def ask_person(question: str) -> bool | None:
    """Ask a yes/no question on the kernel's stdin; None when nobody can answer.

    A terminal IPython reads the keyboard; a notebook kernel asks through the front end
    when it allows input. Headless runs (nbclient, nbconvert, pytest) raise instead, which
    counts as nobody there: nothing untrusted is enabled.
    """
    import sys

    from IPython import get_ipython

    from jupyter_memory.commands.base import printable

    in_kernel = getattr(get_ipython(), "kernel", None) is not None
    try:
        if not in_kernel and not sys.stdin.isatty():
            return None  # a script or a test feeding stdin is not a person answering
        answer = input(printable(question))  # the question may quote what others wrote
    except Exception:  # StdinNotImplementedError, EOFError, OSError: nobody at the keyboard
        return None
    return answer.strip().lower() in ("y", "yes")


_AGENT_LINE = re.compile(r"^(\s*)%agent[ \t]+(\S.*)$")


def protect_agent_line(lines: list[str]) -> list[str]:
    """Keep ``%agent Is it raining?`` a question: IPython would read the ``?`` as help.

    Runs before IPython's own transforms and turns a one-line ``%agent PROMPT`` cell
    into the explicit magic call, so a trailing ``?`` reaches the agent untouched.
    """
    text = "".join(lines)
    if text.count("\n") > 1 or (text.count("\n") == 1 and not text.endswith("\n")):
        return lines
    match = _AGENT_LINE.match(text.rstrip("\n"))
    if match is None or match.group(2).strip() == "?":
        return lines
    return [f"{match.group(1)}get_ipython().run_line_magic('agent', {match.group(2)!r})\n"]


_REMEMBER_LINE = re.compile(r"^%%remember(?:[ \t]+(.*?))?[ \t]*$")


def keep_empty_remember(lines: list[str]) -> list[str]:
    """Let ``%%remember -h`` (a cell with no body) reach the magic.

    IPython refuses a cell magic whose body is empty before the magic runs, so the help,
    and the magic's own message about the missing text, would never show. The cell is
    turned into the same call with a body of one blank line, which the magic reads as
    empty.
    """
    text = "".join(lines)
    first, _, body = text.partition("\n")
    match = _REMEMBER_LINE.match(first)
    if match is None or body.strip():
        return lines
    return [f"get_ipython().run_cell_magic('remember', {match.group(1) or ''!r}, '\\n')\n"]


def unload_ipython_extension(ipython: Any) -> None:
    from jupyter_memory.magics.state import forget_state

    forget_state(ipython)
    from jupyter_memory.memdir.trust import set_prompter

    set_prompter(None)

    from jupyter_memory.magics.cells import uninstall as stop_logging_cells

    stop_logging_cells(ipython)
    for transform in (protect_agent_line, keep_empty_remember):
        if transform in ipython.input_transformers_cleanup:
            ipython.input_transformers_cleanup.remove(transform)
