"""Running cells in the real IPython shell of the test process (fixture ``shell``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import CapturedIO, capture_output


class MakeIp(Protocol):
    """The ``make_ip`` fixture of tests/conftest.py: the shell, made ready for a test."""

    def __call__(self, project: Path | None = None, *, memdir: Path | None = None,
                 config: Iterable[str] = ()) -> InteractiveShell: ...


def run(shell: InteractiveShell, code: str) -> CapturedIO:
    """Run one cell as a kernel would (history on), re-raising any error it hit."""
    with capture_output() as cap:
        result = shell.run_cell(code, store_history=True)
    result.raise_error()
    return cap


def fails(shell: InteractiveShell, code: str) -> str:
    """Run one cell that must fail the way IPython's UsageError does (one line, no
    traceback, so Run All stops there); returns the message."""
    from IPython.core.error import UsageError

    with capture_output() as cap:
        result = shell.run_cell(code, store_history=True)
    error = result.error_in_exec or result.error_before_exec
    assert isinstance(error, UsageError), f"the cell did not fail with a UsageError: {error!r}"
    assert "Traceback" not in cap.stderr and "Traceback" not in cap.stdout
    return str(error)
