"""The local Messages API server: a stand-in for the Anthropic API on 127.0.0.1.

Runtime code, not only a test helper: replay (``sessions/recording``) and ``%sandbox``
start it inside the kernel, and tests point the real ``anthropic`` SDK at it. Standard
library only; the pytest fixture lives in ``pytest_plugin`` so importing this package
never needs pytest. ``docs/fake-api.md`` documents scripts, tokens and the cache rule.

Modules, one concern each: ``script`` (turns, tool calls, faults, ``load_script``),
``echo`` (the responder of ``--echo`` and ``%sandbox echo``),
``clock``, ``tokens`` (the estimate), ``cache`` (the prompt cache), ``validation``,
``reply`` and ``sse`` (building and streaming a reply), ``transport`` (HTTP),
``server`` (:class:`FakeAnthropic`) and ``cli`` (``python -m jupyter_memory.localapi``).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "NO_TURN_LEFT": "server",
    "CacheUsage": "cache",
    "FakeAnthropic": "server",
    "Fault": "script",
    "ManualClock": "clock",
    "RecordedRequest": "server",
    "ToolCall": "script",
    "Turn": "script",
    "echo_responder": "echo",
    "estimate_request_tokens": "tokens",
    "load_script": "script",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    # Lazy, so `python -m jupyter_memory.localapi` and the core's imports of one module
    # load only what they use.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
