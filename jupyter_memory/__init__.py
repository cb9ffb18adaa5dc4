"""jupyter-memory: an agent with long-term memory for Jupyter.

Both the kernel (``%load_ext jupyter_memory``) and jupyter_server import this
package, so nothing heavy is imported here: every entry point imports its own
front end on demand, and the names a notebook cell may use (docs/python-api.md) are
imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from jupyter_memory._version import __version__

if TYPE_CHECKING:
    from jupyter_memory.magics.public import (
        cost_report,
        explain_recall,
        kernel_session,
        model_calls,
    )
    from jupyter_memory.memdir.freshness import age_text, staleness_reminder
    from jupyter_memory.memdir.guard import find_secrets, redact
    from jupyter_memory.recall.offline import semantic_status

#: The public names for notebook cells, and the module each is imported from on first use.
PUBLIC = {
    "kernel_session": "jupyter_memory.magics.public",
    "model_calls": "jupyter_memory.magics.public",
    "cost_report": "jupyter_memory.magics.public",
    "explain_recall": "jupyter_memory.magics.public",
    "age_text": "jupyter_memory.memdir.freshness",
    "staleness_reminder": "jupyter_memory.memdir.freshness",
    "find_secrets": "jupyter_memory.memdir.guard",
    "redact": "jupyter_memory.memdir.guard",
    "semantic_status": "jupyter_memory.recall.offline",
}

__all__ = [
    "__version__",
    "age_text",
    "cost_report",
    "explain_recall",
    "find_secrets",
    "kernel_session",
    "load_ipython_extension",
    "model_calls",
    "redact",
    "semantic_status",
    "staleness_reminder",
    "unload_ipython_extension",
]


def __getattr__(name: str) -> Any:
    module = PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'jupyter_memory' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(PUBLIC))


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics; called by ``%load_ext jupyter_memory``."""
    from jupyter_memory.magics import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from jupyter_memory.magics import unload_ipython_extension as _unload

    _unload(ipython)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the prebuilt JupyterLab extension lives inside the package."""
    return [{"src": "labextension", "dest": "jupyter-memory"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The server extension (REST API for the Memory panel); loaded lazily by the server."""
    return [{"module": "jupyter_memory.server"}]
