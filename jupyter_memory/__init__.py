"""jupyter-memory: an agent with long-term memory for Jupyter.

Both the kernel (``%load_ext jupyter_memory``) and jupyter_server import this
package, so nothing heavy is imported here: every entry point imports its own
front end on demand.
"""

from ._version import __version__

__all__ = ["__version__", "load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython) -> None:  # noqa: ANN001 - IPython's own signature
    """Register the magics; called by ``%load_ext jupyter_memory``."""
    from .magics import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython) -> None:  # noqa: ANN001
    from .magics import unload_ipython_extension as _unload

    _unload(ipython)
