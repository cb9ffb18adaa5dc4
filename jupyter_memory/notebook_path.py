"""Which notebook this kernel serves, so the agent finds the right project memory.

The project (and so the memdir) is decided by the notebook's folder. A kernel only
knows what it was started with, which goes stale when the notebook is renamed or
moved, so the JupyterLab extension calls :func:`set_notebook_path` with a silent
execute whenever the kernel becomes ready and whenever the notebook's path changes.

Pure Python with no IPython import at module load: the kernel imports this on every
such call, and the magics import it on every turn.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["current_notebook_path", "set_notebook_path"]

_SESSION_ENV = "JPY_SESSION_NAME"
_NAMESPACE_KEYS = ("__session__", "__vsc_ipynb_file__")

_notebook_path: Path | None = None


def set_notebook_path(path: str) -> None:
    """Record the notebook's filesystem path (an empty string forgets it).

    ``~`` is expanded; a relative path is taken relative to the kernel's working
    directory, which Jupyter sets to the notebook's folder at kernel start.
    """
    global _notebook_path
    if not isinstance(path, str):
        raise TypeError(f"set_notebook_path() takes a str, not {type(path).__name__}.")
    if "\x00" in path:
        raise ValueError("A notebook path cannot contain a NUL byte.")
    text = path.strip()
    if not text:
        _notebook_path = None
        return
    _notebook_path = _absolute(text)


def current_notebook_path(user_ns: Mapping[str, Any] | None = None) -> Path | None:
    """The notebook this kernel serves, or None when nothing tells.

    In order: the path set by the JupyterLab extension; ``JPY_SESSION_NAME`` (set by
    jupyter_server when it starts the kernel); ``__session__`` or ``__vsc_ipynb_file__``
    in the user namespace (VS Code). ``user_ns`` defaults to the running IPython
    shell's namespace, when IPython is already loaded.
    """
    if _notebook_path is not None:
        return _notebook_path
    from_env = os.environ.get(_SESSION_ENV, "").strip()
    if from_env and "\x00" not in from_env:
        return _absolute(from_env, relative_to_cwd_by_name=True)
    namespace = user_ns if user_ns is not None else _shell_namespace()
    for key in _NAMESPACE_KEYS:
        value = namespace.get(key) if namespace is not None else None
        if isinstance(value, str) and value.strip() and "\x00" not in value:
            return _absolute(value.strip())
    return None


def _absolute(text: str, *, relative_to_cwd_by_name: bool = False) -> Path:
    path = Path(text).expanduser()
    if path.is_absolute():
        return path
    if relative_to_cwd_by_name:
        # Without a file name, jupyter_server puts the notebook's path relative to
        # the server root here; the kernel runs in the notebook's folder, so only
        # the file name still applies.
        return Path.cwd() / path.name
    return Path.cwd() / path


def _shell_namespace() -> Mapping[str, Any] | None:
    """The running IPython shell's namespace, without importing IPython ourselves."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if callable(get_ipython) else None
    namespace = getattr(shell, "user_ns", None)
    return namespace if isinstance(namespace, Mapping) else None
