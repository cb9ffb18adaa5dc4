"""``%%agent`` / ``%agent``: a turn of the agent, streamed into the cell.

The line is read by :func:`jupyter_memory.commands.agent.read_agent_line`, from the
declaration of ``%agent`` and its line subcommands: options (``--agent NAME``, ``-h``)
before the prompt, and the prompt exactly as typed. The line form also takes a few
subcommands, recognised only when the first word is one of them and the rest fits its
arguments (otherwise the line is a prompt, so ``%agent resume the analysis of last
week`` is still a question): ``%agent resume [PATH]``, ``%agent record [FILE|off]``,
``%agent replay [--strict] [FILE|off]``, ``%agent status``, ``%agent new``.
``%agent -- TEXT`` always sends TEXT as a prompt.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import (
    Magics,
    line_cell_magic,
    magics_class,
    needs_local_scope,
    no_var_expand,
)
from IPython.display import display
from traitlets import Bool, Enum, Float, Int, TraitError, TraitType, Unicode, default, validate
from traitlets.config import Configurable

from jupyter_memory.agent.client import NoModelConfigured
from jupyter_memory.agent.loop import TURN_MIME, TurnEvents, run_turn
from jupyter_memory.agent.session import AgentConfig, user_settings
from jupyter_memory.agent.tools import console_prompt
from jupyter_memory.commands import MAGIC, HelpShown, error_line
from jupyter_memory.commands.agent import (
    AGENT,
    AgentArgs,
    AgentLine,
    NewArgs,
    RecordArgs,
    ReplayArgs,
    ResumeArgs,
    StatusArgs,
    read_agent_line,
)
from jupyter_memory.context.models import (
    MIN_CONTEXT_WINDOW,
    default_model,
    default_small_model,
    unknown_model_note,
)
from jupyter_memory.context.request_parts import record_parts
from jupyter_memory.errors import InternalError, JupyterMemoryError, internal_error
from jupyter_memory.magics.cells import cell_log_for, is_agent_cell
from jupyter_memory.magics.cells import quiet as quiet_cells
from jupyter_memory.magics.commands import magic_doc, usage_error
from jupyter_memory.magics.state import session_for, state_for
from jupyter_memory.memdir import trust_table
from jupyter_memory.memdir.record import provenance_from_env
from jupyter_memory.notebook_path import current_notebook_path
from jupyter_memory.sessions import recording as record
from jupyter_memory.sessions.resume import (
    ResumeError,
    has_turn_records,
    notebook_for,
    resume_session,
)
from jupyter_memory.sessions.sandbox import hand_over
from jupyter_memory.widgets.render import tool_line, tool_text, turn_bundle
from jupyter_memory.widgets.roots import bundle_on_page, on_page
from jupyter_memory.widgets.safe import md_text, safe_markdown

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session

#: How often the streaming view is redrawn, in seconds.
REDRAW_EVERY = 0.25
#: After a redraw that took ``t`` seconds, the next waits at least ``t`` times this: each
#: redraw makes the whole answer safe again (widgets/safe.py), so a long answer is
#: redrawn less often instead of spending the stream on it (at most a fifth of the time).
REDRAW_PAUSE_FACTOR = 4.0

def is_terminal(shell: Any) -> bool:
    """True in terminal IPython, where displays print their text and nothing updates."""
    try:
        from IPython.terminal.interactiveshell import TerminalInteractiveShell
    except ImportError:  # pragma: no cover - IPython always ships it
        return False
    return isinstance(shell, TerminalInteractiveShell)


def _trait(setting: Any) -> Any:
    """The ``%config`` trait of one :func:`~jupyter_memory.agent.session.setting`."""
    help_text = setting.metadata["help"]
    choices = setting.metadata.get("choices")
    if choices is not None:
        trait: TraitType[Any, Any] = Enum(choices, default_value=setting.default, help=help_text)
    elif isinstance(setting.default, bool):
        trait = Bool(setting.default, help=help_text)
    elif isinstance(setting.default, int):
        trait = Int(setting.default, help=help_text)
    elif isinstance(setting.default, float):
        trait = Float(setting.default, help=help_text)
    else:
        trait = Unicode(setting.default, help=help_text)
    return trait.tag(config=True)


#: The core's settings as traits, declared once in ``AgentConfig`` (agent/session.py).
AgentSettings = type("AgentSettings", (Configurable,),
                     {s.name: _trait(s) for s in user_settings()})


def _notebook_name(shell: Any) -> str | None:
    """The notebook's file name, for the commands an output names: the kernel runs in the
    notebook's folder (``notebook_path.current_notebook_path`` finds the notebook)."""
    path = current_notebook_path(getattr(shell, "user_ns", None))
    return path.name if path is not None and path.suffix == ".ipynb" else None


@magics_class
class Agent(Magics, AgentSettings):  # type: ignore[misc, valid-type]
    """The agent's settings (``%config Agent``) and the ``%%agent`` magic.

    Every core setting comes from ``AgentConfig``; ``auto_resume`` and ``replay_match``
    are the notebook front end's own.
    """

    auto_resume = Bool(
        True, help="After a kernel restart, the first agent turn continues the conversation "
        "saved in the notebook's agent cells (cells above the one being run)."
    ).tag(config=True)
    replay_match = Enum(
        ("", *record.MATCH_MODES), default_value="",
        help="How a replay matches requests: conversation (what was said; our own prompt "
        "text only warns) or strict (byte for byte). Empty: $JUPYTER_MEMORY_REPLAY_MATCH, "
        "else conversation.",
    ).tag(config=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._resume_checked: Any = None
        self._env_replay_done = False
        self._agent_sessions: dict[str, Session] = {}
        self._models_noted: set[str] = set()  # unknown model names already warned about

    @default("model")
    def _default_model(self) -> str:
        return default_model()

    @default("small_model")
    def _default_small_model(self) -> str:
        return default_small_model()

    @default("provenance")
    def _default_provenance(self) -> bool:
        return provenance_from_env()

    @validate("context_window")
    def _check_context_window(self, proposal: Any) -> int:
        value = int(proposal["value"])
        if value and value < MIN_CONTEXT_WINDOW:
            raise TraitError(
                f"Agent.context_window {value:,} is too small: use 0 (the model's own window) "
                f"or at least {MIN_CONTEXT_WINDOW:,}, so that the compaction levels stay above "
                "what every request carries."
            )
        return value

    def agent_config(self) -> AgentConfig:
        return AgentConfig(**{s.name: getattr(self, s.name) for s in user_settings()})

    def session(self) -> Session:
        session = session_for(self.shell, self.agent_config())
        replay = trust_table.env(record.REPLAY_ENV)
        if not self._env_replay_done and replay:
            self._env_replay_done = True
            try:
                self._start_replay(session, replay, from_env=True)
            except JupyterMemoryError as exc:
                raise UsageError(f"{record.REPLAY_ENV}: {exc}") from None
            session = session_for(self.shell, self.agent_config())
        return session

    def agent_session(self, name: str) -> Session:
        """The child session of the agent defined in ``.claude/agents/NAME.md`` (one per
        kernel session): ``main.child(definition)``.

        It shares the main session's model endpoint, background runner and cost ledger (so
        record and replay cover it too) but has its own prompt, tools, conversation and
        memory (docs/reference.md#agent-memory).
        """
        from jupyter_memory.agent.definitions import load_agent

        main = self.session()
        session = self._agent_sessions.get(name)
        if (session is None or session.agent is None or session.parent is not main
                or session.config != session.agent.config_for(self.agent_config())):
            definition = load_agent(main.project_root, name, env=main.env)
            session = main.child(definition, config=self.agent_config())
            self._agent_sessions[name] = session
        return session

    @no_var_expand  # a prompt is sent as typed; only a line subcommand is expanded
    @needs_local_scope
    @line_cell_magic
    def agent(self, line: str = "", cell: str | None = None, local_ns: Any = None) -> None:
        # The docstring is generated from the declaration (magic_doc, after the class).
        def expand(text: str) -> str:
            return self._expand(text, local_ns)

        try:
            asked = read_agent_line(line, cell, stdout=sys.stdout, stderr=sys.stderr,
                                    expand=expand)
        except HelpShown:
            return
        except JupyterMemoryError as exc:
            raise usage_error(exc, AGENT.spelling(MAGIC)) from None
        if asked.command is not AGENT:
            with quiet_cells(self.shell):
                self._subcommand(asked)
            return
        assert isinstance(asked.args, AgentArgs)
        agent_name, prompt = asked.args.agent, asked.args.prompt
        if agent_name == "":
            raise UsageError(error_line("%agent", "--agent needs the name of an agent in "
                                        ".claude/agents/."))
        if not prompt:
            raise UsageError(error_line("%agent", "Write a message for the agent: %agent "
                                        "QUESTION, or %%agent with the message in the cell "
                                        "body."))
        session: Session
        if agent_name is not None:
            try:
                session = self.agent_session(agent_name)
            except JupyterMemoryError as exc:
                raise UsageError(f"%agent --agent {agent_name}: {exc}") from None
        else:
            session = self.session()
            self._maybe_auto_resume(session, line, cell)
        try:
            client = session.client()
        except NoModelConfigured as exc:
            raise UsageError(str(exc)) from None
        self._note_unknown_model(session.config.model)
        preamble = self._cells_since_last_turn()
        view = _TerminalView() if is_terminal(self.shell) else _StreamView()
        ctx = session.tool_context(namespace=self._namespace())
        ctx.permission.prompt = console_prompt()
        try:
            # Recording or replaying, the turn's background work (extraction) finishes
            # inside run_turn, at a defined point: what the cell shows does not depend on
            # how busy the machine is, and a replay reads the same outputs as the recording.
            result = run_turn(session, prompt, client=client, preamble=preamble,
                              events=view.events())
        except InternalError:
            view.close()
            raise  # one line naming the bug (its traceback is in the log)
        except JupyterMemoryError as exc:
            view.close()
            raise UsageError(str(exc)) from None
        except Exception as exc:
            view.close()
            raise internal_error(exc, "in the %%agent cell") from exc
        controller = record.controller(session)
        replaying = controller if isinstance(controller, record.Replayer) else None
        problem = replaying.take_new_mismatch() if replaying is not None else None
        for warning in replaying.take_new_warnings() if replaying is not None else []:
            print(on_page(warning), file=sys.stderr)
        state_for(self.shell).last_agent_count = self._count()
        if problem is not None and result.status == "error":
            view.close()  # the turn itself was refused: the error below says it all
            raise record.ReplayMismatch(problem)
        notebook = _notebook_name(self.shell)
        record_shown = result.record

        def with_events(late: list[dict[str, Any]]) -> dict[str, Any]:
            events = [*(record_shown.get("events") or []), *late]
            return bundle_on_page(turn_bundle({**record_shown, "events": events}, notebook))

        view.finish(bundle_on_page(turn_bundle(record_shown, notebook)),
                    redraw=with_events if _background_running(session) else None)
        if result.failure is not None:
            # The record stays in the cell (resume reads it); the cell fails with the
            # error's one line, so Run All, nbclient and papermill stop here and say why.
            # It is on the page now, so later records refer to its parts and calls.
            session.parts.adopt(record_parts(record_shown))
            session.calls.adopt(record_shown.get("calls") or [])
            raise result.failure
        if problem is not None:  # background work of the turn (extraction) was refused
            raise record.ReplayMismatch(problem)

    def _expand(self, line: str, local_ns: Any) -> str:
        """``$name`` and ``{expression}`` in ``line``, as IPython expands a line magic's
        arguments (``local_ns``: the caller's locals); left as typed when it cannot."""
        from IPython.utils.text import DollarFormatter

        names = {**self._user_ns, **(local_ns or {})}
        try:
            return DollarFormatter().vformat(line, args=[], kwargs=names)
        except Exception:  # as IPython does: a line it cannot expand stays as it is
            return line

    def _note_unknown_model(self, model: str) -> None:
        """Say once per model name, on standard error, that the budgets guess its window."""
        note = unknown_model_note(model)
        if note is not None and model not in self._models_noted:
            self._models_noted.add(model)
            print(f"Note: {note}", file=sys.stderr)

    # ------------------------------------------------------------ sessions

    def _subcommand(self, asked: AgentLine) -> None:
        session = self.session()
        args = asked.args
        try:
            if isinstance(args, StatusArgs):
                print(on_page(self._status(session)))
            elif isinstance(args, NewArgs):
                self._new(session)
            elif isinstance(args, ResumeArgs):
                self._resume(session, args.path)
            elif isinstance(args, RecordArgs):
                self._record(session, args.target)
            elif isinstance(args, ReplayArgs):
                self._replay(session, args.target, strict=args.strict)
        except JupyterMemoryError as exc:
            raise usage_error(exc, asked.command.spelling(MAGIC)) from None

    def _new(self, session: Session) -> None:
        """Start a new session in this kernel: what a kernel restart does for the agent
        (new session id, empty conversation, recording or replay stopped), while the
        kernel's variables stay. The memory is on disk, so it carries over."""
        old_id = session.session_id  # before a replay's stop gives back the kernel's own id
        stopped = record.stop(session)
        st = state_for(self.shell)
        st.session = None
        st.last_agent_count = self._count()
        log = cell_log_for(self.shell)
        if log is not None:
            log.take(0)  # the new conversation starts with the next cells
        fresh = session_for(self.shell, self.agent_config())
        self._resume_checked = fresh  # fresh means fresh: no auto-resume from the notebook
        box = hand_over(session, fresh)
        note = f", and its {stopped.kind} stopped" if stopped is not None else ""
        if box is not None:
            note += f"; the {box.mode} sandbox carries over"
        # The new id is random: it stays out of the output, so a replayed notebook shows
        # the same text every run (%agent status shows it).
        print(f"Started a new agent session; the previous one ({old_id}) ended{note}. The "
              "memory carries over; the conversation starts empty.")

    def _resume(self, session: Session, path: str | None) -> None:
        current = record.controller(session)
        if current is not None:
            kind = current.kind
            raise ResumeError(f"a {kind} is running; resume first, then start it "
                              f"(%agent {kind} off, %agent resume, %agent {kind}).")
        resumed = resume_session(session, path, user_ns=self._user_ns)
        self._resume_checked = session
        print(on_page(resumed.describe()))
        for note in resumed.notes:
            print(f"Note: {note}.")

    def _record(self, session: Session, target: str | None) -> None:
        current = record.controller(session)
        if target == "off":
            if isinstance(current, record.Recorder):
                current.stop()
                print(f"Stopped recording; {current.status().removeprefix('recording to ')}.")
            else:
                print("Nothing is being recorded.")
            return
        replay = trust_table.env(record.REPLAY_ENV)
        if replay:
            name = current.recording.path.name if current is not None else replay
            print(f"{record.REPLAY_ENV} is set: replaying {name} instead of recording.")
            return
        path = self._path_arg(session, target)
        record.start_recording(session, path)
        print(f"Recording every model exchange to {self._shown(path)}; replay it with "
              f"%agent replay {self._shown(path)}.")

    def _replay(self, session: Session, target: str | None, *, strict: bool = False) -> None:
        if target == "off":
            current = record.controller(session)
            if isinstance(current, record.Replayer):
                current.stop()
                print("Stopped replaying; model calls go to the live endpoint again.")
            else:
                print("Nothing is being replayed.")
            return
        self._start_replay(session, self._path_arg(session, target), strict=strict)

    def _start_replay(self, session: Session, path: str | Path, *, from_env: bool = False,
                      strict: bool = False) -> None:
        had = len(session.messages)
        match = record.match_mode(strict, self.replay_match)
        replayer = record.start_replay(session, path, match=match)
        data = replayer.recording.data
        if data.get("model"):
            self.model = data["model"]
        if data.get("small_model"):
            self.small_model = data["small_model"]
        self._resume_checked = session
        count = len(replayer.recording.exchanges)
        how = f" ({record.REPLAY_ENV})" if from_env else ""
        mode = " (strict matching)" if match == "strict" else ""
        print(f"Replaying {count} recorded model exchange{'s' if count != 1 else ''} from "
              f"{self._shown(Path(path))}{how}{mode}: no key or network needed.")
        if had:
            print(f"The conversation so far ({had} messages) was replaced by the one the "
                  "recording started from.")

    def _path_arg(self, session: Session, target: str | None) -> Path:
        if target:
            return Path(target).expanduser()
        notebook = notebook_for(session, self._user_ns)
        return record.default_recording_path(notebook, Path(os.getcwd()))

    @staticmethod
    def _shown(path: Path) -> str:
        """The path as short as it can be (relative to the working folder if inside it)."""
        try:
            return str(Path(path).resolve().relative_to(Path(os.getcwd()).resolve()))
        except ValueError:
            return str(path)

    def _status(self, session: Session) -> str:
        notebook = notebook_for(session, self._user_ns)
        controller = record.controller(session)
        memdir = session.memdir
        lines = [
            f"Session {session.session_id}: {session.conversation.turn_count} turns, "
            f"{len(session.messages)} messages in the conversation",
            f"Model: {session.config.model}",
            f"Notebook: {notebook or 'unknown'}",
            f"Project: {session.project_root}",
            f"Memory: {memdir if memdir is not None else 'off'}",
            f"Log: {_log_file(session)}",
            f"Recording: {controller.status() if controller is not None else 'off'}",
            f"Auto-resume: {'on' if self.auto_resume else 'off'}",
            f"Hooks: {_hooks_line(session)}",
        ]
        return "\n".join(lines)

    def _maybe_auto_resume(self, session: Session, line: str, cell: str | None) -> None:
        """On a fresh kernel's first turn, continue the conversation the notebook holds."""
        if not self.auto_resume or self._resume_checked is session:
            return
        self._resume_checked = session
        if (session.conversation.turn_count or session.messages
                or record.controller(session) is not None):
            return
        path = notebook_for(session, self._user_ns)
        if path is None or not path.is_file() or not has_turn_records(path):
            return
        try:
            resumed = resume_session(session, path, before_source=self._current_source(line, cell))
        except ResumeError as exc:
            print(f"jupyter-memory: could not resume from the notebook: {exc}", file=sys.stderr)
            return
        if resumed.messages:
            print(f"{on_page(resumed.describe())} (%config Agent.auto_resume = False to start fresh)")

    def _current_source(self, line: str, cell: str | None) -> str:
        """The raw text of the cell being run, as the notebook file stores it."""
        raw = getattr(getattr(self.shell, "history_manager", None), "input_hist_raw", None)
        if raw:
            return str(raw[-1])
        if cell is None:
            return f"%agent {line}"
        return f"%%agent {line}".rstrip() + "\n" + cell

    # ------------------------------------------------------------ helpers

    @property
    def _user_ns(self) -> dict[str, Any]:
        """The shell's user namespace (a magic always runs inside a shell)."""
        assert self.shell is not None
        user_ns: dict[str, Any] = self.shell.user_ns
        return user_ns

    def _namespace(self) -> Any:
        from jupyter_memory.agent.tools import DictNamespace

        return DictNamespace(self._user_ns)

    def _count(self) -> int:
        """The number of the cell being run: its index in ``In``.

        ``execution_count`` will not do: ipykernel counts it up before running a cell,
        plain IPython after, so it is one ahead in a real kernel.
        """
        inputs = self._user_ns.get("In")
        if isinstance(inputs, list) and inputs:
            return len(inputs) - 1
        return int(getattr(self.shell, "execution_count", 0) or 0)

    def _cells_since_last_turn(self) -> list[str]:
        """The cells the person ran since the previous agent turn, as typed, with their
        outputs cut to ``cell_output_cap`` (see ``magics.cells``)."""
        log = cell_log_for(self.shell)
        if log is not None:
            text = log.take(self.cell_output_cap)
            return [text] if text else []
        return self._cells_from_history()

    def _cells_from_history(self) -> list[str]:
        """The same from IPython's history, when the extension's cell log is not installed
        (the agent magics registered by hand): raw input and ``Out`` values only."""
        st = state_for(self.shell)
        now = self._count()
        user_ns = self._user_ns
        raw = getattr(getattr(self.shell, "history_manager", None), "input_hist_raw", None)
        inputs = raw if raw else (user_ns.get("In") or [])
        outputs = user_ns.get("Out") or {}
        cap = self.cell_output_cap
        cells = []
        for n in range(max(1, st.last_agent_count + 1), now):
            if n >= len(inputs):
                break
            source = inputs[n]
            if not source.strip() or is_agent_cell(source):
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


Agent.agent.__doc__ = magic_doc("%agent", """
Talk to the agent. The rest of the line, or the cell body, is your message.

Options come before the message; the message is the rest of the line (then the cell
body) exactly as typed: quotes, backslashes and a --flag mid-sentence stay as they are.
A message that starts with '-' goes after '--'. An unknown option fails the cell and
nothing is sent. Code cells you ran since the last agent turn are passed along so the
agent knows what you did. Settings: %config Agent (model, permission_mode, ...).

Line subcommands (the line form only): a first word that names one, with arguments that
fit it, is that subcommand; any other line is a message (%agent resume the analysis of
last week is a question, and %agent -- resume my work always is).

After a kernel restart the first agent turn resumes from the saved notebook by itself
(%config Agent.auto_resume = False to start fresh instead). A turn that ends in an error
(endpoint down, a request the replay does not hold, a bug of ours) fails the cell with one
line naming the error, so Run All, nbclient and papermill stop there and say why.
""", """
%agent How many rows does sales_df have?

%%agent
Plot revenue by month, and remember that revenue is stored in cents.

%%agent --agent data-reviewer
Review the join in the cell above.

%agent -- --verbose is a flag of which tool?
%agent resume                 # continue the conversation saved in the notebook
%agent record                 # keep every model exchange in <notebook>.recording.json
%agent replay --strict        # answer from it: no key, no network, identical requests only
%agent status
%agent new
""")


def _log_file(session: Session) -> str:
    """Where the session's turns are written (a replay writes to a file of its own)."""
    log = session.log
    if log is None:
        return "not written"
    return str(getattr(log, "written_to", None) or log.path)


def _background_running(session: Session) -> bool:
    """Whether work the turn started (extraction, the recall prefetch) is still running as
    the cell ends, so a notice of it may come after."""
    prefetch = session.last_prefetch
    return bool(session.extraction.running or (prefetch is not None and not prefetch.done()))


class _StreamView:
    """A display that grows as the answer streams in, then becomes the turn record.

    Every redraw sends markdown made by :mod:`jupyter_memory.widgets.safe`: the model's
    text (its raw HTML escaped, links checked, images as text) between our own lines for
    tool calls and status. A live output is trusted, so nothing else may reach it.
    """

    def __init__(self) -> None:
        self.text = ""
        # What was streamed, in order: ("answer", model text) or ("ours", safe markdown).
        self.parts: list[tuple[str, str]] = []
        self.handle: Any = None
        self.next_redraw = 0.0
        # Once the cell has ended with background work still running: how to redraw the
        # turn's output with the notices that came since (as events of the turn).
        self.redraw: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None
        self.late: list[dict[str, Any]] = []

    def events(self) -> TurnEvents:
        return TurnEvents(on_text=self._on_text, on_tool_start=self._on_tool,
                          on_status=self._on_status, on_notice=self._on_notice)

    def markdown(self) -> str:
        """The stream so far as safe markdown."""
        shown = (safe_markdown(text) if kind == "answer" else text for kind, text in self.parts)
        return "\n\n".join(part for part in shown if part)

    def _show(self, force: bool = False) -> None:
        start = time.monotonic()
        if not force and start < self.next_redraw:
            return
        bundle = bundle_on_page({"text/markdown": self.markdown() or "…",
                                 "text/plain": self.text or "…"})
        if self.handle is None:
            self.handle = display(bundle, raw=True, display_id=True)
        else:
            self.handle.update(bundle, raw=True)
        end = time.monotonic()
        self.next_redraw = start + max(REDRAW_EVERY, (end - start) * (1 + REDRAW_PAUSE_FACTOR))

    def _on_text(self, chunk: str) -> None:
        self.text += chunk
        if self.parts and self.parts[-1][0] == "answer":
            self.parts[-1] = ("answer", self.parts[-1][1] + chunk)
        else:
            self.parts.append(("answer", chunk))
        self._show()

    def _on_tool(self, use: dict[str, Any]) -> None:
        self.text += f"\n\n🔧 {tool_text(use['name'], use.get('input'))}\n\n"
        self.parts.append(("ours", f"🔧 {tool_line(use['name'], use.get('input'))}"))
        self._show(force=True)

    def _on_status(self, text: str) -> None:
        self.text += f"\n\n> {text}\n\n"
        self.parts.append(("ours", "\n".join("> " + line for line in md_text(text).split("\n"))))
        self._show(force=True)

    def finish(self, bundle: dict[str, Any], *,
               redraw: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None) -> None:
        """Show the turn record. ``redraw`` is given when background work (extraction, the
        prefetch) still runs as the cell ends: a notice it sends later joins the turn's own
        output as an event, since a display after the cell has ended would land in
        whichever cell runs then, and a spot reserved for it would stay empty (and be
        saved) whenever the work has nothing to say."""
        if self.handle is None:
            self.handle = display(bundle, raw=True, display_id=redraw is not None)
        else:
            self.handle.update(bundle, raw=True)
        self.redraw = redraw

    def _on_notice(self, text: str, payload: dict[str, Any]) -> None:
        if self.redraw is not None and self.handle is not None:
            event: dict[str, Any] = {"kind": "memory", "text": text}
            if payload:
                event["notice"] = payload
            self.late.append(event)
            self.handle.update(self.redraw(self.late), raw=True)
            return
        # The notice names files the model chose: its markdown goes through the same rules.
        bundle: dict[str, Any] = {"text/markdown": safe_markdown(text), "text/plain": text}
        if payload:
            bundle["application/vnd.jupyter-memory.notice+json"] = payload
        display(bundle_on_page(bundle), raw=True)

    def close(self) -> None:
        if self.handle is not None:
            self.handle.update({"text/plain": ""}, raw=True)


class _TerminalView:
    """Terminal IPython: the answer streams once, as plain text; tool calls, status and
    notices are one line each. Nothing is displayed twice and no rich output is printed."""

    def __init__(self, out: Any = None) -> None:
        self.out = out if out is not None else sys.stdout
        self.at_line_start = True
        self.streamed = False

    def events(self) -> TurnEvents:
        return TurnEvents(on_text=self._on_text, on_tool_start=self._on_tool,
                          on_status=self._on_status, on_notice=self._on_notice)

    def _write(self, text: str) -> None:
        if not text:
            return
        self.out.write(text)
        self.out.flush()
        self.at_line_start = text.endswith("\n")

    def _line(self, text: str) -> None:
        if not self.at_line_start:
            self._write("\n")
        self._write(" ".join(text.split()) + "\n")

    def _on_text(self, chunk: str) -> None:
        self.streamed = self.streamed or bool(chunk)
        self._write(chunk)

    def _on_tool(self, use: dict[str, Any]) -> None:
        self._line(f"[tool] {tool_text(use['name'], use.get('input'))}")

    def _on_status(self, text: str) -> None:
        self._line(f"[{text}]")

    def _on_notice(self, text: str, payload: dict[str, Any]) -> None:
        self._line(f"[memory] {text}")

    def finish(self, bundle: dict[str, Any], *,
               redraw: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None) -> None:
        answer = str((bundle.get(TURN_MIME) or {}).get("answer") or "")
        if not self.streamed and answer:
            self._write(answer)  # nothing streamed (a replayed or non-streaming answer)
        if not self.at_line_start:
            self._write("\n")

    def close(self) -> None:
        if not self.at_line_start:
            self._write("\n")


def _hooks_line(session: Session) -> str:
    """The lifecycle hooks the session loaded, each with the settings file it came from
    (read once per session; a project's skipped as untrusted are under ``%context``)."""
    from jupyter_memory.agent import lifecycle

    hooks = lifecycle.command_hooks(session)
    return ", ".join(f"{hook.event} ({hook.source} settings)" for hook in hooks) or "none"
