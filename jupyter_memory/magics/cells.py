"""What the person saw: each cell run since the last agent turn, as typed, with its outputs.

The agent's next request starts with these cells, so it knows what the person did and
what came out. IPython's ``In`` holds the *transformed* source
(``get_ipython().run_cell_magic('remember', …)``) and ``Out`` only the values of last
expressions, so the extension keeps its own log instead: the raw cell from the
``pre_run_cell`` event, and everything the cell printed or displayed while it ran (its
``sys.stdout``/``sys.stderr`` writes are copied, its displays noted as they are
published, its value and error taken from ``post_run_cell``). Text is cut to a cap per
cell; images, widgets and HTML are named, never dumped.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CELLS_HEADER", "CellLog", "cell_log_for", "describe_bundle", "install", "is_agent_cell",
           "uninstall"]

CELLS_HEADER = "The person ran these notebook cells since your last turn:"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: Most cells kept between two turns (the oldest are dropped, and the drop is said).
MAX_CELLS = 50
#: Cells from before the extension was loaded that are taken from IPython's history.
SEED_CELLS = 20
#: Characters of one cell's output kept while it runs (the cap applied at the turn is
#: usually much smaller; this only bounds memory for a cell that prints without end).
_RUNNING_LIMIT = 200_000
#: The default ``repr`` of an object (``<IPython.core.display.HTML object>``): says nothing.
_DEFAULT_REPR = re.compile(r"^<[\w.]+ object(?: at 0x[0-9a-fA-F]+)?>$")
_AGENT_PREFIXES = ("%%agent", "%agent", "get_ipython().run_cell_magic('agent'",
                   "get_ipython().run_line_magic('agent'")


def is_agent_cell(source: str) -> bool:
    """An agent turn (its text reaches the model as the prompt itself)."""
    return source.lstrip().startswith(_AGENT_PREFIXES)


def describe_bundle(data: dict[str, Any]) -> str:
    """One display's data as the agent reads it: text as it is; a widget, an image or
    HTML named (with its plain-text form, when it has a short one), never dumped."""
    plain = str(data.get("text/plain") or "").strip()
    if _DEFAULT_REPR.match(plain):
        plain = ""
    short = plain if plain and len(plain) <= 120 and "\n" not in plain else ""
    if WIDGET_MIME in data:
        return f"[widget{': ' + short if short else ''}]"
    images = [k for k in data if k.startswith("image/")]
    if images:
        return f"[image {images[0]}{': ' + short if short else ''}]"
    if plain:
        return plain
    if "text/markdown" in data:
        return str(data["text/markdown"]).strip()
    if "text/html" in data:
        return "[HTML output]"
    kinds = sorted(k for k in data if k != "text/plain")
    return f"[{kinds[0]} output]" if kinds else ""


@dataclass
class _Cell:
    number: int | None
    source: str
    parts: list[str] = field(default_factory=list)
    size: int = 0

    def add(self, text: str) -> None:
        if not text or self.size >= _RUNNING_LIMIT:
            return
        self.parts.append(text[: _RUNNING_LIMIT - self.size])
        self.size += len(self.parts[-1])

    def render(self, cap: int) -> str:
        label = f"In [{self.number}]:" if self.number is not None else "In:"
        text = f"{label}\n{self.source.strip()}"
        out = "".join(self.parts).strip("\n")
        if out:
            if len(out) > cap:
                out = out[:cap] + f"\n… [{len(out) - cap} more characters of output]"
            text += f"\nOutput:\n{out}"
        return text


def _published(*args: Any, **kwargs: Any) -> Any:
    """The data of a ``display_pub.publish`` call, None for an update of an earlier one."""
    if kwargs.get("update"):
        return None
    return kwargs.get("data", args[0] if args else None)


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


class _Tee:
    """A stream that copies what is written to it into the running cell's log."""

    def __init__(self, inner: Any, log: CellLog) -> None:
        self._inner = inner
        self._log = log

    def write(self, text: str) -> int:
        self._log._capture(text)
        written: int = self._inner.write(text)
        return written

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class CellLog:
    """The cells run since the last agent turn, kept through IPython's cell events."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.cells: list[_Cell] = []
        self.dropped = 0
        self._current: _Cell | None = None
        self._thread: int | None = None
        self._streams: tuple[Any, Any] | None = None
        self._wrapped: list[tuple[Any, str, Any]] = []
        self._muted = False
        self._lock = threading.Lock()

    # -- installing

    def install(self) -> CellLog:
        events = self.shell.events
        events.register("pre_run_cell", self.pre_run_cell)
        events.register("post_run_cell", self.post_run_cell)
        self._seed_from_history()
        return self

    def _seed_from_history(self) -> None:
        """Cells run before the extension was loaded (setup cells, ``%load_ext`` itself):
        their raw input from IPython's history, and their ``Out`` value if they had one."""
        history = getattr(self.shell, "history_manager", None)
        raw = list(getattr(history, "input_hist_raw", None) or [])
        outputs = getattr(self.shell, "user_ns", {}).get("Out") or {}
        for number in range(max(1, len(raw) - SEED_CELLS), len(raw)):
            source = str(raw[number])
            if not source.strip() or is_agent_cell(source):
                continue
            cell = _Cell(number, source)
            if number in outputs:
                try:
                    data, _ = self.shell.display_formatter.format(outputs[number])
                except Exception:  # a broken repr must not break loading the extension
                    data = {}
                cell.add(describe_bundle(data) + "\n")
            self.cells.append(cell)

    def uninstall(self) -> None:
        events = self.shell.events
        for name, fn in (("pre_run_cell", self.pre_run_cell), ("post_run_cell", self.post_run_cell)):
            try:
                events.unregister(name, fn)
            except ValueError:
                pass
        self._restore_streams()

    # -- IPython events

    def pre_run_cell(self, info: Any) -> None:
        source = str(getattr(info, "raw_cell", "") or "")
        if not source.strip() or is_agent_cell(source) or not getattr(info, "store_history", True):
            self._current = None
            return
        self._current = _Cell(None, source)
        self._thread = threading.get_ident()
        self._streams = (sys.stdout, sys.stderr)
        sys.stdout = _Tee(sys.stdout, self)
        sys.stderr = _Tee(sys.stderr, self)
        # Displays and the cell's value, noted as data (not as whatever text they print):
        # the display publisher in place now (a capturing one under capture_output) and
        # the display hook that shows ``Out[n]``.
        hook = getattr(self.shell, "displayhook", None)
        self._wrap(getattr(self.shell, "display_pub", None), "publish", _published)
        self._wrap(hook, "compute_format_data", None)
        self._wrap(hook, "write_output_prompt", _nothing)
        self._wrap(hook, "write_format_data", _nothing)

    def post_run_cell(self, result: Any) -> None:
        self._restore_streams()
        cell, self._current = self._current, None
        if cell is None:
            return
        cell.number = getattr(result, "execution_count", None)
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        if error is not None:
            cell.add(f"{type(error).__name__}: {error}\n")
        with self._lock:
            self.cells.append(cell)
            if len(self.cells) > MAX_CELLS:
                self.dropped += len(self.cells) - MAX_CELLS
                del self.cells[: len(self.cells) - MAX_CELLS]

    def _wrap(self, target: Any, name: str, pick: Any) -> None:
        """Note what ``target.name(data, …)`` shows while the cell runs (instance-level,
        undone when it ends); text it prints meanwhile is not copied a second time."""
        original = getattr(target, name, None) if target is not None else None
        if original is None:
            return

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            data = pick(*args, **kwargs) if pick is not None else None
            if isinstance(data, dict):
                self._capture(describe_bundle(data) + "\n")
            muted, self._muted = self._muted, True
            try:
                out = original(*args, **kwargs)
            finally:
                self._muted = muted
            if pick is None and isinstance(out, tuple) and out and isinstance(out[0], dict):
                self._capture(describe_bundle(out[0]) + "\n")  # (format data, metadata)
            return out

        setattr(target, name, wrapper)
        self._wrapped.append((target, name, wrapper))

    def _restore_streams(self) -> None:
        for target, name, wrapper in self._wrapped:
            if vars(target).get(name) is wrapper:
                delattr(target, name)  # the class's method shows through again
        self._wrapped = []
        if self._streams is None:
            return
        out, err = self._streams
        # Only undo our own wrapping: a cell that replaced the streams itself keeps its own.
        if isinstance(sys.stdout, _Tee) and sys.stdout._log is self:
            sys.stdout = out
        if isinstance(sys.stderr, _Tee) and sys.stderr._log is self:
            sys.stderr = err
        self._streams = None

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """Nothing shown meanwhile goes to the agent: the output of ``%agent record``,
        ``replay``, ``new`` and ``status`` controls the session, differs between a
        recorded and a replayed run, and is not part of the person's work."""
        muted, self._muted = self._muted, True
        try:
            yield
        finally:
            self._muted = muted

    def _capture(self, text: str) -> None:
        cell = self._current
        if cell is not None and not self._muted and threading.get_ident() == self._thread:
            cell.add(text)

    # -- the next turn

    def take(self, cap: int) -> str:
        """The cells logged since the last call, as one text for the agent ('' if none)."""
        with self._lock:
            cells, self.cells = self.cells, []
            dropped, self.dropped = self.dropped, 0
        if not cells:
            return ""
        body = "\n\n".join(c.render(max(0, cap)) for c in cells)
        more = f"({dropped} earlier cells not shown)\n\n" if dropped else ""
        return f"{CELLS_HEADER}\n\n{more}{body}"


_LOGS: dict[int, CellLog] = {}


def install(shell: Any) -> CellLog:
    """Start logging the cells of ``shell`` (once per shell)."""
    log = _LOGS.get(id(shell))
    if log is None or log.shell is not shell:
        log = CellLog(shell).install()
        _LOGS[id(shell)] = log
    else:  # loaded again (a test, %reload_ext): start from a clean slate
        with log._lock:
            log.cells, log.dropped = [], 0
    return log


def uninstall(shell: Any) -> None:
    log = _LOGS.pop(id(shell), None)
    if log is not None:
        log.uninstall()


def quiet(shell: Any) -> AbstractContextManager[None]:
    """``CellLog.quiet`` of ``shell``'s log, or nothing when there is no log."""
    log = cell_log_for(shell)
    return log.quiet() if log is not None else nullcontext()


def cell_log_for(shell: Any) -> CellLog | None:
    """The cell log of ``shell``, if the extension installed one."""
    log = _LOGS.get(id(shell))
    return log if log is not None and log.shell is shell else None
