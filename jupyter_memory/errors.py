"""Errors meant for people: each message says what was wrong and how to fix it."""

from __future__ import annotations


class JupyterMemoryError(Exception):
    """Base of every error this package raises on purpose."""


class InvalidPath(JupyterMemoryError, ValueError):
    """A memory path that would leave the memdir or is not a markdown file."""


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

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "memory not found"


class MemoryExists(JupyterMemoryError, ValueError):
    """A create that would overwrite an existing memory."""


class LockTimeout(JupyterMemoryError, TimeoutError):
    """Another process held the memdir lock for too long."""


class ConfigError(JupyterMemoryError, ValueError):
    """A setting or environment variable with a value that cannot be used."""


class MemoryDisabled(JupyterMemoryError):
    """Auto memory is switched off for this project."""
