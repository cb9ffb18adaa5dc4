"""Failures of a model call, told in one sentence a person can act on, and which of the
error classes of ``errors.py`` an exception belongs to.

Every caller of the endpoint (the main loop, prefetch, extraction, compaction, session notes)
reports errors through these, so the same failure reads the same wherever it happens, and a
bug of ours is never mistaken for a failed model call.
"""

from __future__ import annotations

import json
import logging
import sys

from jupyter_memory.errors import (
    JupyterMemoryError,
    ModelCallFailed,
    internal_error,
    log_internal,
)
from jupyter_memory.memdir import trust_table

log = logging.getLogger(__name__)


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


def is_model_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is the SDK's or its HTTP library's way of saying the endpoint, or the
    connection to it, failed (or answered something that is not the Messages API)."""
    import anthropic

    return (isinstance(exc, anthropic.APIError | TimeoutError | json.JSONDecodeError)
            or _is_timeout(exc) or _is_transport_error(exc))


def model_failure(exc: BaseException) -> ModelCallFailed:
    """A failure of a model call as :class:`~jupyter_memory.errors.ModelCallFailed`, worded
    by :func:`describe_failure`, with ``exc`` as its cause."""
    failed = ModelCallFailed(describe_failure(exc))
    failed.__cause__ = exc
    log.info("model call failed: %s", failed, exc_info=(type(exc), exc, exc.__traceback__))
    return failed


def as_failure(exc: BaseException, where: str = "") -> JupyterMemoryError:
    """``exc`` in its error class: ours as it is, a model failure as ``ModelCallFailed``,
    anything else as an internal error (its traceback logged)."""
    if isinstance(exc, JupyterMemoryError):
        return exc
    if is_model_failure(exc):
        return model_failure(exc)
    return internal_error(exc, where)


def describe_background_failure(exc: BaseException, doing: str) -> str:
    """One sentence about background work that failed (``doing``: "refreshing the session
    notes"), logged: a model failure or a refusal at INFO, a bug of ours at ERROR with its
    traceback."""
    if isinstance(exc, JupyterMemoryError):
        log.info("%s failed: %s", doing, exc)
        return str(exc)
    if is_model_failure(exc):
        log.info("%s failed", doing, exc_info=(type(exc), exc, exc.__traceback__))
        return describe_failure(exc)
    log_internal(exc, f"while {doing}")
    return (f"jupyter-memory hit an internal error while {doing} ({type(exc).__name__}: "
            f"{exc}); please report it with the traceback from the log.")


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
