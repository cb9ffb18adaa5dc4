"""The SDK client a session talks to the model through, and how long it lives.

Every model call of a session (the main loop, relevance prefetch, extraction, compaction,
session notes, ``%%remember``) goes through one ``anthropic.Anthropic`` client, so its
connection pool is reused: a turn pays for DNS, TCP and the TLS handshake once per
session, not once per call. :class:`SharedClient` builds that client on first use,
builds it again only when the settings it was made from change (API key, auth token,
base URL, timeout, retries, or the session's ``client_factory``), and closes it when the
session is closed (the magics close it when the kernel shuts down).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir import trust_table

__all__ = ["CONNECT_HELP", "KEEPALIVE_SECONDS", "NoModelConfigured", "SharedClient", "client_settings", "make_client"]


#: How long an idle connection is kept for the next call. The SDK's default (5 s) drops
#: it between two cells typed by a person, so every turn would pay the handshake again; a
#: connection the endpoint closed meanwhile is noticed and replaced before it is used.
KEEPALIVE_SECONDS = 600.0


class NoModelConfigured(JupyterMemoryError):
    """Neither an API key nor a base URL: there is no model to talk to."""


CONNECT_HELP = (
    "No model is connected. Set ANTHROPIC_API_KEY to use Anthropic's API, or set "
    "ANTHROPIC_BASE_URL to any endpoint that speaks the Messages API (for example the "
    "offline test server: `python -m jupyter_memory.localapi`). Memory browsing, "
    "%context and %%remember with --name/--description/--type work without a model."
)


def client_settings(
    env: Mapping[str, str] | None = None, *, max_retries: int = 2, timeout: float = 600.0
) -> tuple[str | None, str | None, str | None, int, float]:
    """``(api_key, auth_token, base_url, max_retries, timeout)`` a client is built from."""
    env = os.environ if env is None else env
    return (
        trust_table.env("ANTHROPIC_API_KEY", env) or None,
        trust_table.env("ANTHROPIC_AUTH_TOKEN", env) or None,
        trust_table.env("ANTHROPIC_BASE_URL", env) or None,
        max_retries,
        timeout,
    )


def _build(settings: tuple[str | None, str | None, str | None, int, float]) -> Any:
    key, token, base_url, max_retries, timeout = settings
    if not key and not token and not base_url:
        raise NoModelConfigured(CONNECT_HELP)
    import anthropic

    if not key and not token:
        key = "no-key-needed"  # a local endpoint; the SDK insists on some credential
    default = anthropic.DEFAULT_CONNECTION_LIMITS  # the Limits class of the SDK's HTTP library
    limits = type(default)(max_connections=default.max_connections,
                           max_keepalive_connections=default.max_keepalive_connections,
                           keepalive_expiry=KEEPALIVE_SECONDS)
    return anthropic.Anthropic(
        api_key=key, auth_token=token, base_url=base_url, max_retries=max_retries,
        timeout=timeout, http_client=anthropic.DefaultHttpxClient(limits=limits),
    )


def make_client(
    env: Mapping[str, str] | None = None, *, max_retries: int = 2, timeout: float = 600.0
) -> Any:
    """A new ``anthropic.Anthropic`` client, or ``NoModelConfigured`` with how to fix it.

    Each call opens its own connection pool; a session shares one through
    :class:`SharedClient` (``Session.client()``) instead.
    """
    return _build(client_settings(env, max_retries=max_retries, timeout=timeout))


class SharedClient:
    """One client for a session, rebuilt only when the settings it came from change.

    ``get(env, max_retries=..., timeout=..., factory=...)`` returns the current client,
    building it on first use or when any of those settings differ from last time; a
    ``factory`` (recording, replay, tests) wins over the environment. A client that is
    replaced is not closed at once, because background work of the previous turn
    (extraction, session notes) may still be streaming through it; replaced clients are
    closed with the current one by :meth:`close`. ``built`` counts clients made.
    Safe to call from several threads.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._client: Any = None
        self._key: tuple[Any, ...] | None = None
        self._retired: list[Any] = []
        self.built = 0

    @property
    def current(self) -> Any:
        """The client built last, or None before the first ``get`` (or after ``close``)."""
        return self._client

    def get(
        self,
        env: Mapping[str, str] | None = None,
        *,
        max_retries: int = 2,
        timeout: float = 600.0,
        factory: Callable[[], Any] | None = None,
    ) -> Any:
        """The shared client for these settings (building it only when they changed)."""
        settings = client_settings(env, max_retries=max_retries, timeout=timeout)
        key = (factory, *settings) if factory is not None else (None, *settings)
        with self._lock:
            if self._client is not None and self._key == key:
                return self._client
            client = factory() if factory is not None else _build(settings)
            if self._client is not None:
                self._retired.append(self._client)
            self._client, self._key = client, key
            self.built += 1
            return client

    def close(self) -> None:
        """Close the current client and any it replaced; the next ``get`` builds anew."""
        with self._lock:
            clients = [*self._retired, self._client]
            self._retired, self._client, self._key = [], None, None
        for client in clients:
            close = getattr(client, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:
                    pass
