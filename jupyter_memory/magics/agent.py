"""``%%agent`` / ``%agent``: a turn of the agent, streamed into the cell."""

from __future__ import annotations

import time
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display
from traitlets import Bool, Enum, Int, Unicode, default

from ..agent import NoModelConfigured, TurnEvents, run_turn
from ..errors import JupyterMemoryError
from ..models import default_model, default_small_model
from ..session import PERMISSION_MODES, RECALL_MODES, AgentConfig
from ..tools import console_prompt
from .render import tool_line, turn_bundle
from .state import session_for, state_for

#: How often the streaming view is redrawn, in seconds.
REDRAW_EVERY = 0.25


@magics_class
class Agent(Magics):
    """The agent's settings (``%config Agent``) and the ``%%agent`` magic."""

    model = Unicode(help="Main model (default: $JUPYTER_MEMORY_MODEL or claude-sonnet-5-5).").tag(config=True)
    small_model = Unicode(help="Model for side calls such as recall selection.").tag(config=True)
    max_tokens = Int(8192, help="Maximum output tokens of one model call.").tag(config=True)
    max_turns = Int(25, help="Maximum model calls in one agent turn.").tag(config=True)
    permission_mode = Enum(
        PERMISSION_MODES, default_value="ask",
        help="Running code and writing outside the memory folder: ask, allow or deny.",
    ).tag(config=True)
    recall_mode = Enum(
        RECALL_MODES, default_value="index",
        help="index: MEMORY.md in every request; prefetch: relevant memories chosen per message.",
    ).tag(config=True)
    maintain_index = Bool(
        False, help="Keep MEMORY.md in step with topic files the agent writes (the reference "
        "leaves that to the agent)."
    ).tag(config=True)
    cjk_trigger = Bool(
        False, help="Let unspaced Chinese/Japanese questions trigger prefetch (the reference "
        "skips them as single words)."
    ).tag(config=True)
    wait_for_prefetch = Bool(
        False, help="Wait for prefetched memories before the first model call (the reference "
        "does not, so an answer without tools misses them)."
    ).tag(config=True)
    agents_md = Bool(False, help="Also read AGENTS.md files as instructions.").tag(config=True)
    cell_output_cap = Int(
        2000, help="Characters of each code cell's output passed to the agent."
    ).tag(config=True)

    @default("model")
    def _default_model(self) -> str:
        return default_model()

    @default("small_model")
    def _default_small_model(self) -> str:
        return default_small_model()

    def agent_config(self) -> AgentConfig:
        return AgentConfig(
            model=self.model,
            small_model=self.small_model,
            max_tokens=self.max_tokens,
            max_turns=self.max_turns,
            permission_mode=self.permission_mode,
            recall_mode=self.recall_mode,
            maintain_index=self.maintain_index,
            extra_instruction_names=("AGENTS.md",) if self.agents_md else (),
            cell_output_cap=self.cell_output_cap,
            cjk_trigger=self.cjk_trigger,
            wait_for_prefetch=self.wait_for_prefetch,
        )

    def session(self) -> Any:
        return session_for(self.shell, self.agent_config())

    @magic_arguments()
    @argument("prompt", nargs="*", help="What to ask (line form); the cell body otherwise.")
    @line_cell_magic
    def agent(self, line: str = "", cell: str | None = None) -> None:
        """Talk to the agent. The cell body (or the rest of the line) is your message.

        Examples::

            %agent How many rows does sales_df have?

            %%agent
            Plot revenue by month, and remember that revenue is stored in cents.

        Code cells you ran since the last agent turn are passed along so the agent
        knows what you did. Settings: ``%config Agent`` (model, permission_mode, ...).
        """
        prompt = (cell if cell is not None else line).strip()
        if cell is not None and line.strip():
            prompt = f"{line.strip()}\n{cell}".strip()
        if not prompt:
            print("Write a message for the agent: %agent QUESTION, or %%agent with the "
                  "message in the cell body.")
            return
        session = self.session()
        try:
            client = session.make_client()
        except NoModelConfigured as exc:
            print(str(exc))
            return
        preamble = self._cells_since_last_turn()
        view = _StreamView()
        ctx = session.tool_context(namespace=self._namespace())
        ctx.permission.prompt = console_prompt()
        try:
            result = run_turn(session, prompt, client=client, preamble=preamble,
                              events=view.events())
        except JupyterMemoryError as exc:
            view.close()
            print(f"jupyter-memory: {exc}")
            return
        view.finish(turn_bundle(result.record), expect_notice=bool(result.record.get("background")))
        state_for(self.shell).last_agent_count = self._count()

    # ------------------------------------------------------------ helpers

    def _namespace(self) -> Any:
        from ..tools import DictNamespace

        return DictNamespace(self.shell.user_ns)

    def _count(self) -> int:
        return int(getattr(self.shell, "execution_count", 0) or 0)

    def _cells_since_last_turn(self) -> list[str]:
        """Code cells the person ran since the previous agent turn, with capped output."""
        st = state_for(self.shell)
        now = self._count()
        user_ns = self.shell.user_ns
        inputs = user_ns.get("In") or []
        outputs = user_ns.get("Out") or {}
        cap = self.cell_output_cap
        cells = []
        for n in range(max(1, st.last_agent_count + 1), now):
            if n >= len(inputs):
                break
            source = inputs[n]
            if not source.strip() or _is_agent_cell(source):
                continue
            text = f"In [{n}]:\n{source.strip()}"
            if n in outputs:
                out = repr(outputs[n])
                if len(out) > cap:
                    out = out[:cap] + f"… [{len(out) - cap} more characters]"
                text += f"\nOut[{n}]: {out}"
            cells.append(text)
        if not cells:
            return []
        return ["The person ran these notebook cells since your last turn:\n\n" + "\n\n".join(cells)]


def _is_agent_cell(source: str) -> bool:
    head = source.lstrip()
    return head.startswith(("get_ipython().run_cell_magic('agent'", "get_ipython().run_line_magic('agent'",
                            "%%agent", "%agent"))


class _StreamView:
    """A display that grows as the answer streams in, then becomes the turn record."""

    def __init__(self) -> None:
        self.text = ""
        self.handle: Any = None
        self.notice_handle: Any = None
        self.last = 0.0

    def events(self) -> TurnEvents:
        return TurnEvents(on_text=self._on_text, on_tool_start=self._on_tool,
                          on_status=self._on_status, on_notice=self._on_notice)

    def _show(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < REDRAW_EVERY:
            return
        self.last = now
        bundle = {"text/markdown": self.text or "…", "text/plain": self.text or "…"}
        if self.handle is None:
            self.handle = display(bundle, raw=True, display_id=True)
        else:
            self.handle.update(bundle, raw=True)

    def _on_text(self, chunk: str) -> None:
        self.text += chunk
        self._show()

    def _on_tool(self, use: dict[str, Any]) -> None:
        self.text += f"\n\n🔧 {tool_line(use['name'], use.get('input'))}\n\n"
        self._show(force=True)

    def _on_status(self, text: str) -> None:
        self.text += f"\n\n> {text}\n\n"
        self._show(force=True)

    def finish(self, bundle: dict[str, Any], *, expect_notice: bool = False) -> None:
        if self.handle is None:
            display(bundle, raw=True)
        else:
            self.handle.update(bundle, raw=True)
        if expect_notice and self.notice_handle is None:
            # Reserve a spot in this cell for background work (extraction) to report into,
            # even after the cell has finished running.
            self.notice_handle = display({"text/plain": ""}, raw=True, display_id=True)

    def _on_notice(self, text: str, payload: dict[str, Any]) -> None:
        bundle = {"text/markdown": text, "text/plain": text}
        if payload:
            bundle["application/vnd.jupyter-memory.notice+json"] = payload
        if self.notice_handle is None:
            self.notice_handle = display(bundle, raw=True, display_id=True)
        else:
            self.notice_handle.update(bundle, raw=True)

    def close(self) -> None:
        if self.handle is not None:
            self.handle.update({"text/plain": ""}, raw=True)
