"""The SDK client a session talks to the model through, and how long it lives.

Every model call of a session (the main loop, relevance prefetch, extraction, compaction,
session notes, ``%%remember``) goes through one ``anthropic.Anthropic`` client, so its
connection pool is reused: a turn pays for DNS, TCP and the TLS handshake once per
session, not once per call. :class:`SharedClient` builds that client on first use,
builds it again only when the settings it was made from change (API key, auth token,
base URL, timeout, retries), and closes it when the session's live endpoint is closed
(``agent/endpoint.py``; the magics close it when the kernel shuts down).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir import trust_table

if TYPE_CHECKING:
    import anthropic

__all__ = ["CONNECT_HELP", "KEEPALIVE_SECONDS", "NoModelConfigured", "SharedClient", "client_settings", "make_client"]


#: How long an idle connection is kept for the next call. The SDK's default (5 s) drops
#: it between two cells typed by a person, so every turn would pay the handshake again; a
#: connection the endpoint closed meanwhile is noticed and replaced before it is used.
KEEPALIVE_SECONDS = 600.0


class NoModelConfigured(JupyterMemoryError):
    """Neither an API key nor a base URL: there is no model to talk to."""


CONNECT_HELP = (
    "No model is connected. To try the agent offline, run %sandbox echo: a local server in "
    "the kernel answers with your own words. For a model, set ANTHROPIC_API_KEY to use "
    "Anthropic's API, or ANTHROPIC_BASE_URL to any endpoint that speaks the Messages API, "
    "before starting the kernel. Memory browsing, %context and %%remember work without a "
    "model."
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


log = logging.getLogger(__name__)


def _build(settings: tuple[str | None, str | None, str | None, int, float]) -> anthropic.Anthropic:
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
) -> anthropic.Anthropic:
    """A new ``anthropic.Anthropic`` client, or ``NoModelConfigured`` with how to fix it.

    Each call opens its own connection pool; a session shares one through its model
    endpoint (``Session.client()``) instead.
    """
    return _build(client_settings(env, max_retries=max_retries, timeout=timeout))


class SharedClient:
    """One client, rebuilt only when the settings it came from change.

    ``get(env, max_retries=..., timeout=...)`` returns the current client, building it on
    first use or when any of those settings differ from last time. A client that is
    replaced is not closed at once, because background work of the previous turn
    (extraction, session notes) may still be streaming through it; replaced clients are
    closed with the current one by :meth:`close`. ``built`` counts clients made. Safe to
    call from several threads.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._client: anthropic.Anthropic | None = None
        self._key: tuple[str | None, str | None, str | None, int, float] | None = None
        self._retired: list[anthropic.Anthropic] = []
        self.built = 0

    @property
    def current(self) -> anthropic.Anthropic | None:
        """The client built last, or None before the first ``get`` (or after ``close``)."""
        return self._client

    def get(
        self, env: Mapping[str, str] | None = None, *, max_retries: int = 2,
        timeout: float = 600.0,
    ) -> anthropic.Anthropic:
        """The shared client for these settings (building it only when they changed)."""
        settings = client_settings(env, max_retries=max_retries, timeout=timeout)
        with self._lock:
            if self._client is not None and self._key == settings:
                return self._client
            client = _build(settings)
            if self._client is not None:
                self._retired.append(self._client)
            self._client, self._key = client, settings
            self.built += 1
            return client

    def close(self) -> None:
        """Close the current client and any it replaced; the next ``get`` builds anew."""
        with self._lock:
            clients = [*self._retired, *([self._client] if self._client is not None else [])]
            self._retired, self._client, self._key = [], None, None
        for client in clients:
            try:
                client.close()
            except Exception:  # closing a pool must not fail the shutdown that closes it
                log.debug("closing an SDK client failed", exc_info=True)
