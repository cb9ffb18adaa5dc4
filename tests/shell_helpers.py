"""Running cells in the real IPython shell of the test process (fixture ``shell``)."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import CapturedIO, capture_output


def run(shell: InteractiveShell, code: str) -> CapturedIO:
    """Run one cell as a kernel would (history on), re-raising any error it hit."""
    with capture_output() as cap:
        result = shell.run_cell(code, store_history=True)
    result.raise_error()
    return cap
