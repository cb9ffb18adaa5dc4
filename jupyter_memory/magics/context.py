"""``%context``: what the next request to the model holds, by category."""

from __future__ import annotations

import json
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from jupyter_memory.commands import error_line
from jupyter_memory.context.assemble import render_text


@magics_class
class ContextMagics(Magics):
    def __init__(self, shell: Any = None, agent: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.agent = agent

    @magic_arguments()
    @argument("--json", action="store_true", help="Print the budget as JSON.")
    @argument("--raw", action="store_true",
              help="Print the exact request body that would be sent next.")
    @argument("--count", action="store_true",
              help="Ask the endpoint's count-tokens API for the exact size (needs a model).")
    @argument("--brief", action="store_true",
              help="Plain text, categories only, without per-file rows.")
    @argument("--text", action="store_true", help="Plain text instead of the widget.")
    @argument("--cost", action="store_true",
              help="What this session's model calls cost so far, by kind of call, priced.")
    @line_magic
    def context(self, line: str = "") -> Any:
        """Show what the next request to the model holds, by category, with budgets.

        Examples::

            %context            # the budget as a widget: system, tools, instructions, ...
            %context --text     # the same as plain text
            %context --json     # the same as JSON, for scripts
            %context --raw      # the exact request body
            %context --count    # exact size from the endpoint's count-tokens API
            %context --cost     # every model call so far (main, selector, extraction,
                                # summaries, notes): tokens and price; --json for data

        Counts are offline estimates until the agent has answered once; after that the
        real usage of the last response is used, as the reference does.
        """
        try:
            args = parse_argstring(self.context, line)
        except UsageError as exc:  # the one shape of errors: PROG: message
            raise UsageError(error_line("%context", str(exc))) from None
        session = self.agent.session()
        if args.cost:
            from jupyter_memory.context.pricing import report

            rep = report(session.cost_ledger, "this session, live")
            if args.json:
                print(json.dumps(rep.to_json(), indent=2, ensure_ascii=False))
            elif not rep.rows:
                print("No model call yet in this session: nothing to price.")
            else:
                print(rep.render_text())
            return None
        if args.raw:
            print(session.assemble().to_json_pretty())
            return None
        counted = None
        if args.count:
            from jupyter_memory.agent.client import NoModelConfigured
            from jupyter_memory.context.tokens import count_tokens_remote

            try:
                counted = count_tokens_remote(session.client(), session.assemble().body)
            except NoModelConfigured as exc:
                raise UsageError(f"%context --count: {exc}") from None
        if not (args.json or args.text or args.brief):
            from jupyter_memory.widgets import show_context

            record = session.last_record or {}
            decisions = (record.get("recall") or {}).get("decisions") or None
            show_context(session, counted_tokens=counted, decisions=decisions)
            return None
        rep = session.context_report(counted_tokens=counted)
        if args.json:
            print(json.dumps(rep.to_json(), indent=2, ensure_ascii=False))
            return None
        display({"text/plain": render_text(rep, detail=not args.brief)}, raw=True)
        return None
