"""``context`` (the next request, exactly) and ``cost`` (what a saved notebook cost).

``jupyter-memory context`` and ``%context`` are one command: the same options print the
same text for the same project. The notebook shows a view by default and has ``--text``
for the text, and ``--cost`` for what its live session cost so far; the command line has
``--model`` and ``--mode`` to say what to budget for (a notebook's session has its own:
``%config Agent.model``, ``%memory mode``). ``cost`` prices a saved notebook from a
terminal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from jupyter_memory.commands.agent import defined_agent
from jupyter_memory.commands.base import (
    BOTH,
    CLI,
    EXIT_OK,
    MAGIC,
    CommandContext,
    CommonArgs,
    arg,
    command,
)

__all__ = ["ContextArgs", "CostArgs"]

@dataclass(frozen=True, kw_only=True)
class ContextArgs(CommonArgs):
    raw: bool = arg("--raw", action="store_true", help="print the exact request body as JSON")
    model: str | None = arg(
        "--model", fronts=(CLI,),
        help="the model to budget for (default: $JUPYTER_MEMORY_MODEL; in a notebook: "
             "%config Agent.model)")
    mode: str | None = arg(
        "--mode", choices=("index", "prefetch"), fronts=(CLI,),
        help="recall mode (default: index; in a notebook: %memory mode)")
    count: bool = arg(
        "--count", action="store_true",
        help="ask the endpoint's count-tokens API for the exact size (needs a model)")
    brief: bool = arg("--brief", action="store_true",
                      help="only the totals and the categories, no detail")
    agent: str | None = defined_agent(
        "the request of the agent defined in .claude/agents/NAME.md")
    text: bool = arg("--text", action="store_true", fronts=(MAGIC,),
                     help="the text instead of the view")
    cost: bool = arg("--cost", action="store_true", fronts=(MAGIC,),
                     help="what this session's model calls cost so far, by kind of call, "
                          "priced")


@command(
    "context",
    "Show the next request exactly as it would be sent, with its token breakdown.",
    ContextArgs,
    fronts=BOTH,
    magic="%context",
)
def _context(ctx: CommandContext[ContextArgs]) -> int:
    from jupyter_memory.context.assemble import render_text

    args = ctx.args
    if args.cost:
        return _cost_so_far(ctx)
    session = ctx.request_session(model=args.model, mode=args.mode, agent=args.agent)
    if args.raw:
        ctx.out(json.dumps(session.assemble().body, ensure_ascii=False, indent=2))
        return EXIT_OK
    counted = None
    if args.count:
        from jupyter_memory.context.tokens import count_tokens_remote

        counted = count_tokens_remote(session.client(), session.assemble().body)
    plain = ctx.json or args.brief or args.text
    if not plain and ctx.show_request_view(session, counted_tokens=counted):
        return EXIT_OK
    assembled = session.assemble()
    report = session.context_report(counted_tokens=counted)
    ctx.show({**report.to_json(), "request": assembled.body},
             render_text(report, detail=not args.brief))
    return EXIT_OK


def _cost_so_far(ctx: CommandContext[ContextArgs]) -> int:
    """``%context --cost``: every model call of the notebook's session so far, priced."""
    from jupyter_memory.context.pricing import report

    rep = report(ctx.session.cost_ledger, "this session, live")
    ctx.emit(rep.to_json(), rep.render_text() if rep.rows
             else "No model call yet in this session: nothing to price.")
    return EXIT_OK


@dataclass(frozen=True, kw_only=True)
class CostArgs(CommonArgs):
    notebook: str = arg(metavar="NOTEBOOK.ipynb")


@command(
    "cost",
    "What a saved notebook's model calls cost: calls and tokens by kind of call (main, "
    "selector, extraction, summaries, notes), priced; usage from the local scripted server "
    "is labelled simulated.",
    CostArgs,
)
def _cost(ctx: CommandContext[CostArgs]) -> int:
    from jupyter_memory.context.pricing import notebook_ledger, report

    path = Path(ctx.args.notebook).expanduser()
    ledger, note = notebook_ledger(path)
    rep = report(ledger, f"the turn records saved in {path.name}", note)
    if not rep.rows:
        ctx.emit(rep.to_json(), f"{path.name} has no agent turns in its saved outputs: "
                 "nothing was called, or the notebook was saved without outputs.")
        return EXIT_OK
    ctx.emit(rep.to_json(), rep.render_text())
    return EXIT_OK

