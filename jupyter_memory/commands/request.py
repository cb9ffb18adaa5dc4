"""``request``: any model call of any turn, exactly as sent (``%request`` in a notebook).

In a notebook it reads this kernel's session (every call it made: the main agent's rounds,
the recall selector, extraction, summaries, session notes, ``%%remember``'s filing, a
defined agent's calls); given a saved notebook, on either front, it reads the turn
records in the file. The same options print the same text for the same notebook.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from jupyter_memory.commands.base import (
    BOTH,
    CLI,
    EXIT_OK,
    CommandContext,
    CommandUsageError,
    CommonArgs,
    arg,
    command,
)
from jupyter_memory.context.pricing import KINDS

__all__ = ["RequestArgs"]


@dataclass(frozen=True, kw_only=True)
class RequestArgs(CommonArgs):
    notebook: str | None = arg(
        nargs="?", metavar="NOTEBOOK.ipynb",
        help="a saved notebook to read (in a notebook, default: this kernel's session)")
    turn: int | None = arg("--turn", type=int,
                           help="which turn, counted from 1 as the notebook shows them "
                                "(default: the last)")
    call: int | None = arg("--call", type=int,
                           help="which model call of the turn, counted from 1 (default: all)")
    kind: str | None = arg("--kind", choices=KINDS,
                           help="only the calls of this kind: main (the agent's rounds), "
                                "selector, extraction, remember, summary, notes")
    diff: bool = arg("--diff", action="store_true",
                     help="show each call against the previous call of its kind: the system "
                          "prompt and tools unchanged since when, only the messages it adds")


@command(
    "request",
    "Show any model call of any turn exactly as sent (the agent's rounds, the recall "
    "selector, extraction, summaries, notes, %%remember, agents); --json: the exact body.",
    RequestArgs,
    fronts=BOTH,
    magic="%request",
)
def _request(ctx: CommandContext[RequestArgs]) -> int:
    from jupyter_memory.sessions.request_view import (
        calls_json,
        live_calls,
        notebook_calls,
        render_calls,
        select_calls,
    )

    args = ctx.args
    if args.notebook:
        found = notebook_calls(Path(args.notebook).expanduser())
    elif ctx.front == CLI:
        raise CommandUsageError("give the saved notebook to read: jupyter-memory request "
                                "NOTEBOOK.ipynb (in a notebook, %request reads this "
                                "kernel's session).")
    else:
        found = live_calls(ctx.session)
    turn, calls = select_calls(found, turn=args.turn, call=args.call, kind=args.kind)
    ctx.emit(calls_json(found, turn, calls), render_calls(found, turn, calls, diff=args.diff))
    return EXIT_OK
