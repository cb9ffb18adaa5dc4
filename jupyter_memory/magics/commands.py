"""The notebook's side of the command model (:mod:`jupyter_memory.commands`).

Every magic reads its line with the parser built from its declaration and fails with the
one error shape, ``PROG SUBCOMMAND: message``, raised as IPython's ``UsageError`` (one
line, no traceback, so Run All stops there). The commands a magic shares with the
command line (``%memory list``, ``%context``, ``%%remember``) run the same function as
``jupyter-memory``, in a :class:`MagicCommandContext`: the memory is the agent session's,
a question is asked through the front end, tables, files and the request view are shown
as outputs, and the session is refreshed after a change so the next request shows it.
"""

from __future__ import annotations

import datetime as _dt
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.display import display

from jupyter_memory.agent.failures import as_failure
from jupyter_memory.agent.remember import scope_store
from jupyter_memory.commands import (
    MAGIC,
    Args,
    Command,
    CommandContext,
    CommandUsageError,
    HelpShown,
    failure,
    magic_reference,
    parse_words,
    printable,
    read_words,
)
from jupyter_memory.context.request_parts import readable
from jupyter_memory.errors import InternalError, JupyterMemoryError, internal_error
from jupyter_memory.memdir.scopes import DEFAULT_AGENT
from jupyter_memory.widgets.roots import bundle_on_page, on_page
from jupyter_memory.widgets.safe import md_link, md_text

__all__ = ["OPEN_MIME", "MagicCommandContext", "magic_doc", "read_line", "run_command",
           "show_file", "usage_error"]

OPEN_MIME = "application/vnd.jupyter-memory.open+json"
"""Asks the JupyterLab extension to open a file; other front ends show the path."""


def usage_error(exc: BaseException, prog: str) -> UsageError:
    """The ``UsageError`` a magic raises for ``exc``: the one line ``PROG: message``."""
    report = failure(exc, prog)
    if report is None:  # a bug of ours: it keeps its traceback
        raise exc
    return UsageError(printable(report.line))


def read_line(cmd: Command, line: str) -> Args | None:
    """The typed arguments of a magic's line (options and words, shell-style); None when
    ``-h`` printed the help instead."""
    prog = cmd.spelling(MAGIC)
    try:
        return parse_words(cmd, read_words(line, prog), stdout=sys.stdout, stderr=sys.stderr)
    except HelpShown:
        return None
    except CommandUsageError as exc:
        raise usage_error(exc, prog) from None


def run_command(magics: Any, cmd: Command, args: Args, *, cell: str | None = None) -> None:
    """Run a command shared with the command line in this notebook (``magics.agent`` is
    the ``Agent`` magics, which owns the session)."""
    assert cmd.run is not None, f"{cmd.name} is run by its magic"
    ctx = MagicCommandContext(
        cmd, args, {}, sys.stdin, sys.stdout, sys.stderr, front=MAGIC, magics=magics,
        cell=cell)
    try:
        ctx.env = magics.agent.session().env
        cmd.run(ctx)
    except InternalError:
        raise
    except (JupyterMemoryError, OSError) as exc:
        raise usage_error(exc, ctx.spelling) from None
    except Exception as exc:  # the model call failed, else a bug of ours (traceback logged)
        error = as_failure(exc, f"in {ctx.spelling}")
        if isinstance(error, InternalError):
            raise error from exc
        raise usage_error(error, ctx.spelling) from None


def magic_doc(program: str, intro: str, examples: str) -> str:
    """A magic's docstring (what ``%magic?`` shows): what it does, examples, and the usage
    generated from its declaration."""
    usage = textwrap.indent(magic_reference(program), "    ")
    return (f"{intro.strip()}\n\nExamples::\n\n{textwrap.indent(examples.strip(), '    ')}\n\n"
            f"Usage (generated from the declaration in jupyter_memory/commands)::\n\n"
            f"{usage}\n")


@dataclass
class MagicCommandContext(CommandContext[Any]):
    """A command's context in a notebook: the memory is the agent session's."""

    magics: Any = None
    cell: str | None = None
    """The cell body of a cell magic (``%%remember``), None for a line magic."""

    @property
    def session(self) -> Any:
        return self.magics.agent.session()

    # ------------------------------------------------------------------ output

    def out(self, text: str = "") -> None:
        print(on_page(text))

    def note(self, text: str) -> None:
        """In line with the answer; to standard error only beside JSON, which must parse."""
        if self.json:
            print(on_page(printable(text)), file=sys.stderr)
        else:
            print(on_page(printable(text)))

    err = note

    def show(self, data: Any, text: str) -> None:
        if self.json:
            self.emit(data, text)
        else:
            display({"text/plain": on_page(printable(text))}, raw=True)

    def show_request_view(self, session: Any, *, counted_tokens: int | None) -> bool:
        from jupyter_memory.widgets import show_context

        record = readable(getattr(session, "last_record", None) or {}, sections=())
        decisions = (record.get("recall") or {}).get("decisions") or None
        show_context(session, counted_tokens=counted_tokens, decisions=decisions)
        return True

    def offer_file(self, path: Path, label: str) -> None:
        if self.json:
            self.emit({"path": str(path), "label": label}, None)
        else:
            show_file(path, label)

    def confirm(self, question: str) -> bool | None:
        try:
            answer = input(question)
        except Exception:  # no one can answer (a headless run)
            return None
        return answer.strip().lower() in ("y", "yes")

    # ------------------------------------------------------------------ what it works on

    def read_body(self, given: str | None) -> str:
        body = (self.cell or "").strip("\n")
        if not body.strip():
            raise CommandUsageError("the cell is empty; write the fact to remember in the "
                                    "cell body.")
        return body

    def today(self) -> _dt.date:
        # The session's date, not the clock's: a replay on a later day must match.
        return _dt.date.fromisoformat(self.session.today())

    def request_session(self, *, model: str | None = None, mode: str | None = None,
                        agent: str | None = None) -> Any:
        if agent:
            # The request of the agent's latest delegated run, once the main agent handed
            # it a task; before that, the one a %%agent --agent NAME cell would send.
            delegated = self.session.delegated.get(agent)
            return delegated if delegated is not None else self.magics.agent.agent_session(agent)
        return self.session

    def file_with_model(self, store: Any, body: str, *, today: _dt.date, name: str | None,
                        description: str | None, type: str | None,
                        file: str | None = None) -> Any:
        from jupyter_memory.agent.client import NoModelConfigured
        from jupyter_memory.agent.failures import is_model_failure, model_failure
        from jupyter_memory.agent.remember import remember_offline, remember_with_agent
        from jupyter_memory.sessions.sandbox import echoes

        session = self.session
        try:
            client = session.client()
        except NoModelConfigured:
            client, reason = None, "No model is connected."
        else:
            reason = "The echo sandbox has no model to file it." if echoes(session) else ""
        if client is None or reason:
            return remember_offline(store, body, name=name, description=description, type=type,
                                    file=file, today=today, reason=reason)
        try:
            return remember_with_agent(session, client, store, body, name=name,
                                       description=description, type=type, today=today)
        except JupyterMemoryError:
            raise
        except Exception as exc:
            if not is_model_failure(exc):  # a bug of ours: say so, log it
                raise internal_error(exc, "in the %%remember cell") from exc
            raise JupyterMemoryError(  # the model call failed: nothing was saved
                f"{model_failure(exc)} Nothing was saved; run the cell again, or add "
                "--offline to save it without a model.") from exc

    # ------------------------------------------------------------------ the memory

    @property
    def location(self) -> Any:
        return self.session.location

    @property
    def project_root(self) -> Path:
        return Path(self.session.project_root)

    def recall_mode(self) -> str:
        return str(self.session.recall_mode)

    def memory_state(self) -> tuple[bool, str]:
        session = self.session
        override = session.memory.enabled_override
        if override is not None:
            state = "on" if override else "off"
            return session.memory.enabled, f"switched {state} for this session ({self.cmd(state)})"
        return super().memory_state()

    def project_store(self) -> Any:
        return scope_store(self.session, "memdir")

    def store_for(self, scope: str = "memdir", agent: str | None = None) -> Any:
        return scope_store(self.session, scope, agent or DEFAULT_AGENT)

    # ------------------------------------------------------------------ after a change

    def changed(self, scope: str = "memdir") -> None:
        if scope in ("memdir", "private", "team"):
            self.session.refresh_context()

    def reload(self, *, hooks: bool = False) -> None:
        session = self.session
        session.reload()
        if hooks:
            from jupyter_memory.agent.lifecycle import reload_hooks

            reload_hooks(session)
        session.refresh_context()


def show_file(path: Path, label: str) -> None:
    """Offer a file for editing: JupyterLab opens it (through the extension); else its path.

    The bundle carries :data:`OPEN_MIME` for the lab extension, a relative Markdown link
    when the file is under the kernel's working folder (JupyterLab opens those), and the
    plain path for every other front end.
    """
    path = Path(path)
    text = f"Edit {label}: {path}"
    bundle: dict[str, Any] = {"text/plain": text,
                              OPEN_MIME: {"path": str(path), "label": label}}
    try:
        rel = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        rel = None
    if rel is not None:
        # The label and the file name are memory text: literal, and a link only if safe.
        bundle["text/markdown"] = (f"{md_text(f'Edit {label}:')} "
                                   f"{md_link(rel.as_posix(), rel.as_posix())}")
    display(bundle_on_page(bundle), raw=True)
