"""Deprecated: the local Messages API server is ``jupyter_memory.localapi`` now.

This package kept its old import paths for one release: ``jupyter_memory.testing``,
``jupyter_memory.testing.fake_api`` (also ``python -m``) and
``jupyter_memory.testing.pytest_plugin``. Each warns with a ``DeprecationWarning`` that
names its new path when it is imported; nothing in jupyter-memory imports them.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = [
    "NO_TURN_LEFT",
    "CacheUsage",
    "FakeAnthropic",
    "Fault",
    "ManualClock",
    "RecordedRequest",
    "ToolCall",
    "Turn",
    "echo_responder",
    "estimate_request_tokens",
    "load_script",
]

warnings.warn(
    "jupyter_memory.testing is deprecated and will be removed in the next release: "
    "import from jupyter_memory.localapi instead.",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    # Lazy, so `python -m jupyter_memory.testing.fake_api` runs the module once (an eager
    # import of it here would load it before runpy executes it, with a warning at every start).
    if name in __all__:
        from jupyter_memory import localapi

        return getattr(localapi, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
