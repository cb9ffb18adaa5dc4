"""jupyter-memory: an agent with long-term memory for Jupyter.

Both the kernel (``%load_ext jupyter_memory``) and jupyter_server import this
package, so nothing heavy is imported here: every entry point imports its own
front end on demand.
"""

from typing import Any

from jupyter_memory._version import __version__

__all__ = ["__version__", "load_ipython_extension", "unload_ipython_extension"]


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
