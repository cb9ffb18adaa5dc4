"""jupyter-memory: an agent with long-term memory for Jupyter.

Both the kernel (``%load_ext jupyter_memory``) and jupyter_server import this
package, so nothing heavy is imported here: every entry point imports its own
front end on demand, and the names a notebook cell may use (docs/python-api.md) are
imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jupyter_memory._version import __version__
from jupyter_memory.lazy import lazy_exports

if TYPE_CHECKING:
    from jupyter_memory.context.pricing import price_for
    from jupyter_memory.context.tokens import estimate_tokens
    from jupyter_memory.magics.public import (
        cost_report,
        explain_recall,
        kernel_session,
        last_compaction,
        last_selection,
        model_calls,
        recall_budget,
    )
    from jupyter_memory.memdir.freshness import age_text, staleness_reminder
    from jupyter_memory.memdir.guard import find_secrets, redact
    from jupyter_memory.memdir.public import memory_location, memory_settings
    from jupyter_memory.notebook_path import set_notebook_path
    from jupyter_memory.recall.grade import grade_recall
    from jupyter_memory.recall.offline import semantic_status
    from jupyter_memory.recall.public import read_memories, select_offline
    from jupyter_memory.widgets.roots import on_page

#: The public names for notebook cells, and the module each is imported from on first use.
PUBLIC = {
    "kernel_session": "jupyter_memory.magics.public",
    "model_calls": "jupyter_memory.magics.public",
    "cost_report": "jupyter_memory.magics.public",
    "explain_recall": "jupyter_memory.magics.public",
    "last_selection": "jupyter_memory.magics.public",
    "last_compaction": "jupyter_memory.magics.public",
    "recall_budget": "jupyter_memory.magics.public",
    "on_page": "jupyter_memory.widgets.roots",
    "read_memories": "jupyter_memory.recall.public",
    "select_offline": "jupyter_memory.recall.public",
    "age_text": "jupyter_memory.memdir.freshness",
    "staleness_reminder": "jupyter_memory.memdir.freshness",
    "find_secrets": "jupyter_memory.memdir.guard",
    "memory_location": "jupyter_memory.memdir.public",
    "memory_settings": "jupyter_memory.memdir.public",
    "set_notebook_path": "jupyter_memory.notebook_path",
    "redact": "jupyter_memory.memdir.guard",
    "semantic_status": "jupyter_memory.recall.offline",
    "grade_recall": "jupyter_memory.recall.grade",
    "estimate_tokens": "jupyter_memory.context.tokens",
    "price_for": "jupyter_memory.context.pricing",
}

__all__ = [
    "__version__",
    "age_text",
    "cost_report",
    "estimate_tokens",
    "explain_recall",
    "find_secrets",
    "grade_recall",
    "kernel_session",
    "last_compaction",
    "last_selection",
    "load_ipython_extension",
    "memory_location",
    "memory_settings",
    "model_calls",
    "on_page",
    "price_for",
    "read_memories",
    "recall_budget",
    "redact",
    "select_offline",
    "semantic_status",
    "set_notebook_path",
    "staleness_reminder",
    "unload_ipython_extension",
]


__getattr__, __dir__ = lazy_exports(__name__, globals(), PUBLIC)


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
