"""Failures of a model call, told in one sentence a person can act on.

Every caller of the endpoint (the main loop, prefetch, extraction, compaction, session notes)
reports errors through these, so the same failure reads the same wherever it happens.
"""

from __future__ import annotations

import json
import sys

from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir import trust_table


def describe_api_error(exc: BaseException) -> str:
    """One clear sentence for each way the endpoint can fail, with what to do."""
    import anthropic

    status = getattr(exc, "status_code", None)
    message = _api_message(exc)
    if isinstance(exc, anthropic.AuthenticationError):
        return ("The model endpoint rejected the credentials (401). Check ANTHROPIC_API_KEY "
                "(or ANTHROPIC_AUTH_TOKEN) and run the cell again.")
    if isinstance(exc, anthropic.PermissionDeniedError):
        return f"The model endpoint refused the request (403): {message}"
    if isinstance(exc, anthropic.RateLimitError):
        return ("Rate limited by the model endpoint (429), still after the automatic retries. "
                "Wait a minute and run the cell again.")
    if status == 529 or "overloaded" in message.lower():
        return ("The model endpoint is overloaded (529), still after the automatic retries. "
                "Try again shortly.")
    if isinstance(exc, anthropic.BadRequestError) and "too long" in message.lower():
        return ("The conversation no longer fits the model's context window. Run %compact to "
                "summarise it, then run the cell again.")
    if isinstance(exc, anthropic.APITimeoutError):
        return "The model endpoint did not answer in time (timeout). Run the cell again."
    if isinstance(exc, anthropic.APIConnectionError):
        base = trust_table.env("ANTHROPIC_BASE_URL") or "api.anthropic.com"
        return (f"Could not reach the model endpoint ({base}): the connection failed or was "
                "dropped. Check the network or ANTHROPIC_BASE_URL and run the cell again.")
    if isinstance(exc, anthropic.APIStatusError):
        return f"The model endpoint answered with an error ({status}): {message}"
    return f"The model call failed: {type(exc).__name__}: {message}"


def _api_message(exc: BaseException) -> str:
    """The endpoint's own error message (the SDK's text adds the whole body as a dict)."""
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    return str(getattr(exc, "message", "") or exc)


def describe_failure(exc: BaseException) -> str:
    """One clear sentence for any failure of a model call, without Python class names."""
    import anthropic

    if isinstance(exc, anthropic.APIError):
        return describe_api_error(exc)
    if isinstance(exc, JupyterMemoryError):
        return str(exc)
    if _is_timeout(exc):
        return ("The model endpoint did not answer in time (timeout). Run the cell again; "
                "the conversation was kept consistent.")
    if _is_transport_error(exc):
        return ("The connection to the model endpoint broke in the middle of the answer. "
                "Run the cell again; the conversation was kept consistent.")
    if isinstance(exc, json.JSONDecodeError):
        return ("The model endpoint sent a response that is not valid JSON; check "
                "ANTHROPIC_BASE_URL points at a Messages API endpoint, then run the cell again.")
    return f"The model call failed: {exc or type(exc).__name__}"


def _is_timeout(exc: BaseException) -> bool:
    for name in ("httpx2", "httpx"):
        module = sys.modules.get(name)
        if module is not None and isinstance(exc, getattr(module, "TimeoutException", ())):
            return True
    return isinstance(exc, TimeoutError)


def _is_transport_error(exc: BaseException) -> bool:
    """A network failure raised by the SDK's HTTP client while a stream is read."""
    for name in ("httpx2", "httpx"):
        module = sys.modules.get(name)
        if module is not None and isinstance(exc, getattr(module, "TransportError", ())):
            return True
    return False
