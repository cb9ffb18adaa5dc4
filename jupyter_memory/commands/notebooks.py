"""The command line's subcommands about requests and saved notebooks.

``context`` (the next request, exactly) and ``cost`` (what a saved notebook's model calls
cost). In a notebook the same views are ``%context`` and ``%context --cost``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jupyter_memory.commands.base import EXIT_OK, CommandContext, arg, command

__all__: list[str] = []


@command(
    "context",
    "Show the next request exactly as it would be sent, with its token breakdown.",
    arg("--raw", action="store_true", help="print the exact request body as JSON"),
    arg("--model", help="the model to budget for (default: $JUPYTER_MEMORY_MODEL)"),
    arg("--mode", choices=("index", "prefetch"), help="recall mode (default: index)"),
    arg("--count", action="store_true",
        help="ask the endpoint's count-tokens API for the exact size (needs a model)"),
    arg("--brief", action="store_true", help="only the totals and the categories, no detail"),
    arg("--agent", metavar="NAME",
        help="the request of the agent defined in .claude/agents/NAME.md"),
)
def _context(ctx: CommandContext) -> int:
    from jupyter_memory.agent.session import AgentConfig, Session
    from jupyter_memory.context.assemble import render_text

    overrides: dict[str, Any] = {}
    if ctx.args.model:
        overrides["model"] = ctx.args.model
    if ctx.args.mode:
        overrides["recall_mode"] = ctx.args.mode
    config = AgentConfig.from_env(ctx.env, log_transcript=False, **overrides)
    session = Session(ctx.folder, config=config, env=ctx.env)
    if ctx.args.agent:
        from jupyter_memory.agent.definitions import load_agent

        session = session.child(load_agent(session.project_root, ctx.args.agent, env=ctx.env))
    assembled = session.assemble()
    if ctx.args.raw:
        ctx.out(json.dumps(assembled.body, ensure_ascii=False, indent=2))
        return EXIT_OK
    counted = None
    if ctx.args.count:
        from jupyter_memory.context.tokens import count_tokens_remote

        counted = count_tokens_remote(session.client(), assembled.body)
    report = session.context_report(counted_tokens=counted)
    ctx.emit({**report.to_json(), "request": assembled.body},
             render_text(report, detail=not ctx.args.brief))
    return EXIT_OK


@command(
    "cost",
    "What a saved notebook's model calls cost: calls and tokens by kind of call (main, "
    "selector, extraction, summaries, notes), priced; usage from the local scripted server "
    "is labelled simulated.",
    arg("notebook", metavar="NOTEBOOK.ipynb"),
)
def _cost(ctx: CommandContext) -> int:
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

