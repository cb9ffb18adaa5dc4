"""Errors, in four classes, each with the exit code and HTTP status every front end uses.

1. **Configuration and usage errors**: :class:`JupyterMemoryError` and its subclasses. Each
   message says what was wrong and how to fix it; a front end shows it as one line (the
   cell fails, the command exits 2, the REST API answers 400 unless a subclass says more
   precisely: 403, 404, 409, 503).
2. **The model or the connection to it failed**: :class:`ModelCallFailed`, worded by
   ``agent/failures.py`` ("The model endpoint answered with an error (500): …"); exit 3,
   HTTP 502.
3. **The person's code or a tool failed**: :class:`ToolFailed` and whatever else a tool
   raises goes back to the model as the tool's result (``agent/tools/base.py``), so the
   model can correct its call; it never fails a cell. Exit 1, HTTP 422 where one reaches a
   front end.
4. **Anything else is a bug of ours**: :class:`InternalError` says so ("jupyter-memory hit
   an internal error … please report it"), naming the exception; exit 70, HTTP 500. The
   traceback goes to the log (``logging.getLogger("jupyter_memory")``, see
   :func:`internal_error`).

The CLI (``cli/app.py``), the magics and the REST API (``server/handlers.py``) read
``exit_code`` and ``http_status`` from the error itself, so they agree on every kind.
"""

from __future__ import annotations

import logging
from typing import ClassVar

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERNAL",
    "EXIT_MODEL",
    "EXIT_OK",
    "EXIT_USAGE",
    "ConfigError",
    "InternalError",
    "InvalidMemory",
    "InvalidPath",
    "JupyterMemoryError",
    "LockTimeout",
    "MemoryDisabled",
    "MemoryExists",
    "MemoryNotFound",
    "ModelCallFailed",
    "SecretRefused",
    "SymlinkRefused",
    "ToolFailed",
    "internal_error",
    "log_internal",
]

EXIT_OK = 0
#: Something asked for does not exist, or a check found problems (``doctor``).
EXIT_FAILED = 1
#: Bad usage or bad input: the command line, a setting, a path, a memory's fields.
EXIT_USAGE = 2
#: The model endpoint, or the connection to it, failed.
EXIT_MODEL = 3
#: A bug of ours (``EX_SOFTWARE`` of sysexits.h).
EXIT_INTERNAL = 70

log = logging.getLogger(__name__)


class JupyterMemoryError(Exception):
    """Base of every error this package raises on purpose; as itself, a configuration or
    usage error meant for the person."""

    exit_code: ClassVar[int] = EXIT_USAGE
    http_status: int = 400

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for this error in a cell: ``Name: message``, no traceback
        (the message says what to do; a traceback of ours would only hide it)."""
        return f"{type(self).__name__}: {self}".splitlines() or [type(self).__name__]


class InvalidPath(JupyterMemoryError, ValueError):
    """A memory path that would leave the memdir or is not a markdown file."""

    http_status = 403


class SymlinkRefused(InvalidPath):
    """A file the store owns (index, lock, import target) is a symbolic link.

    Following it would read or write whatever the link points at, anywhere on disk.
    """


class PathRefused(InvalidPath):
    """A path the file gateway will not reach: outside every root it may be in, through a
    link it may not follow, or a root a project file placed outside the project.

    ``path`` is the path as given, ``root`` the folder it had to be in (None when there
    was none to match) and ``why`` the reason, so callers can say it in a line of their own.
    """

    def __init__(self, message: str, *, path: str = "", root: str | None = None,
                 why: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.root = root
        self.why = why


class InvalidMemory(JupyterMemoryError, ValueError):
    """Fields that cannot make a memory (empty name, unknown type, undecodable file)."""


class SecretRefused(JupyterMemoryError, ValueError):
    """Text that looks like a credential was about to be stored."""


class MemoryNotFound(JupyterMemoryError, KeyError):
    """No memory with that name or file."""

    exit_code = EXIT_FAILED
    http_status = 404

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "memory not found"


class MemoryExists(JupyterMemoryError, ValueError):
    """A create that would overwrite an existing memory."""

    http_status = 409


class LockTimeout(JupyterMemoryError, TimeoutError):
    """Another process held the memdir lock for too long."""

    exit_code = EXIT_FAILED
    http_status = 503


class ConfigError(JupyterMemoryError, ValueError):
    """A setting or environment variable with a value that cannot be used."""


class MemoryDisabled(JupyterMemoryError):
    """Auto memory is switched off for this project."""

    http_status = 409


class ModelCallFailed(JupyterMemoryError):
    """The model endpoint refused or failed a call, or the connection to it broke; the
    message (``agent/failures.py``) says which and what to do. The SDK's own exception is
    its ``__cause__``."""

    exit_code = EXIT_MODEL
    http_status = 502


class ToolFailed(JupyterMemoryError):
    """A tool could not do what the model asked (bad input, refused, failed): said to the
    model as the tool's result, which it can act on, never to the person's cell."""

    exit_code = EXIT_FAILED
    http_status = 422


class InternalError(JupyterMemoryError):
    """A bug of ours: an exception none of the other classes covers.

    Built by :func:`internal_error`, which logs the cause's traceback; ``cause`` is the
    original exception (also ``__cause__`` once raised ``from`` it).
    """

    exit_code = EXIT_INTERNAL
    http_status = 500

    def __init__(self, cause: BaseException, where: str = "") -> None:
        self.cause = cause
        self.where = where
        detail = str(cause).strip().rstrip(".")  # the sentence ends once, below
        name = type(cause).__name__
        at = f" {where}" if where else ""
        super().__init__(
            f"jupyter-memory hit an internal error{at}: {name}{': ' + detail if detail else ''}. "
            "This is a bug in jupyter-memory, not in your notebook or settings: please report "
            f"it with the traceback from {_log_hint()}."
        )


def _log_hint() -> str:
    from jupyter_memory.logs import log_file

    path = log_file()
    return f"the log ({path})" if path is not None else "the jupyter_memory log"


def internal_error(exc: BaseException, where: str = "") -> InternalError:
    """``exc`` as an :class:`InternalError` (itself if it is one), its traceback logged.

    ``where`` names what was running ("while running the turn", "in the extraction
    agent"); it goes into the message and the log line.
    """
    if isinstance(exc, InternalError):
        return exc
    log_internal(exc, where)
    return InternalError(exc, where)


def log_internal(exc: BaseException, where: str = "") -> None:
    """Log a bug of ours at ERROR, with its traceback."""
    log.error("internal error%s: %s: %s", f" {where}" if where else "", type(exc).__name__,
              exc, exc_info=(type(exc), exc, exc.__traceback__))
