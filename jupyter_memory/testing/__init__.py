"""Test helpers: a local Messages API server driven by a script of turns.

Standard library only; the pytest fixture lives in ``pytest_plugin`` so importing this
package never needs pytest.
"""

from __future__ import annotations

from jupyter_memory.testing.fake_api import (
    NO_TURN_LEFT,
    CacheUsage,
    FakeAnthropic,
    Fault,
    ManualClock,
    RecordedRequest,
    ToolCall,
    Turn,
    echo_responder,
    estimate_request_tokens,
    load_script,
)

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
