"""A session's model endpoint: where its model calls go, as one strategy object.

Every model call of a session (and of its child sessions) asks the endpoint in use for its
client. The strategies:

- :class:`LiveEndpoint` (here): the endpoint the environment names (``ANTHROPIC_API_KEY``,
  ``ANTHROPIC_AUTH_TOKEN``, ``ANTHROPIC_BASE_URL``), through one pooled SDK client;
- recording (``sessions/recording/recorder.py``): the endpoint it records, wrapped so each
  exchange is written to the recording file;
- replaying (``sessions/recording/replayer.py``): a local server answering from a recording;
- sandbox (``sessions/sandbox.py``): a local server that echoes or answers from a script.

Switching is one operation, ``Session.use_endpoint(new)``: the new endpoint takes over and
the old one is closed, which releases what it owned (its client's connections, its local
server, its recording file). Nothing is restored afterwards: to leave a recording the
session switches to the endpoint the recording wrapped, to leave a replay or a sandbox it
switches to a live endpoint.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import ClassVar

from jupyter_memory.agent.client import SharedClient
from jupyter_memory.agent.hooks import TurnHook
from jupyter_memory.context.sdk import ModelClient

__all__ = ["LiveEndpoint", "ModelEndpoint"]


class ModelEndpoint(ABC):
    """Where model calls go. ``kind`` names the strategy (``live``, ``record``, ``replay``,
    ``sandbox``); a ``synchronous`` endpoint makes the session's background work run at the
    loop's defined points while it is in use (record and replay: both runs must send the
    same requests at the same point)."""

    kind: ClassVar[str]
    synchronous: ClassVar[bool] = False

    @abstractmethod
    def client(self, *, max_retries: int, timeout: float) -> ModelClient:
        """The SDK client for the next call (the same one while its settings stay)."""

    @abstractmethod
    def describe(self) -> str:
        """One line for ``%agent status`` and ``%sandbox``: where the calls go."""

    def turn_hooks(self) -> tuple[TurnHook, ...]:
        """Turn hooks the endpoint needs while in use (a recorder notes each turn)."""
        return ()

    def owns(self, other: ModelEndpoint) -> bool:
        """Whether this endpoint took ``other`` over (a recording wraps the endpoint it
        records), so switching to this one must not close ``other``."""
        return False

    def close(self) -> None:
        """Release what this endpoint owns; it is not used again."""
        return None


class LiveEndpoint(ModelEndpoint):
    """The endpoint the environment names, through one SDK client kept while the settings
    it was built from (key, token, base URL, retries, timeout) stay the same."""

    kind = "live"

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = env
        self.shared = SharedClient()

    def client(self, *, max_retries: int, timeout: float) -> ModelClient:
        return self.shared.get(self.env, max_retries=max_retries, timeout=timeout)

    def describe(self) -> str:
        return ("live: model calls go to the endpoint the environment names "
                "(ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL).")

    def close(self) -> None:
        self.shared.close()
