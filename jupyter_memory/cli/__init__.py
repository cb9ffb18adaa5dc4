"""The jupyter-memory command line.

``main`` is the console-script entry point (``jupyter_memory.cli:main``); it imports the
parser on call, so importing the package stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``jupyter-memory`` with ``argv`` (default: the process's arguments)."""
    from jupyter_memory.cli.app import main as _main

    return _main(argv)
