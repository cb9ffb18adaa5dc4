"""The kernel as the tools see it: a small protocol, so no tool imports IPython.

The front end adapts the shell's user namespace to it; ``kernel.DictNamespace`` adapts a
plain dict for tests and scripts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol, runtime_checkable


class RunOutcome(NamedTuple):
    """What running code produced: printed text, the last expression's repr, the error."""

    stdout: str
    result_repr: str | None
    error: str | None


@runtime_checkable
class Namespace(Protocol):
    """The kernel as the tools see it."""

    def get(self, name: str) -> Any:
        """The value bound to ``name``; raises ``KeyError`` when there is none."""
        ...

    def items(self) -> Iterable[tuple[str, Any]]:
        """Every ``(name, value)`` of the user namespace."""
        ...

    def run(self, code: str) -> RunOutcome:
        """Execute ``code`` in the namespace; never raises for errors in the code."""
        ...
