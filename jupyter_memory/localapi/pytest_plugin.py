"""The ``fake_api`` pytest fixture: a fresh local Messages API server per test.

Register with ``pytest_plugins = ["jupyter_memory.localapi.pytest_plugin"]`` in the root
conftest. The fixture points the ``anthropic`` SDK at the server through the environment,
so code under test builds its client exactly as it would in production.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jupyter_memory.localapi.clock import ManualClock
from jupyter_memory.localapi.server import FakeAnthropic

__all__ = ["fake_api"]


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    """A running :class:`FakeAnthropic` with a :class:`ManualClock`.

    Sets ``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_API_KEY=test-key`` for the test. The
    clock only moves with ``fake_api.clock.advance(seconds)``, so cache expiry is
    deterministic. The server stops at teardown.
    """
    server = FakeAnthropic(clock=ManualClock())
    server.start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    try:
        yield server
    finally:
        server.stop()
