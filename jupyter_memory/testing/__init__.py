"""Test helpers: a local Messages API server driven by a script of turns.

Standard library only; the pytest fixture lives in ``pytest_plugin`` so importing this
package never needs pytest.
"""

from __future__ import annotations

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


def __getattr__(name: str) -> Any:
    # Lazy, so `python -m jupyter_memory.testing.fake_api` runs the module once (an eager
    # import here would load it before runpy executes it, with a warning at every start).
    if name in __all__:
        from jupyter_memory.testing import fake_api

        return getattr(fake_api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
