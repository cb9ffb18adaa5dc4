"""Where the ``jupyter_memory`` log goes, and how much of it.

Every module logs through ``logging.getLogger(__name__)`` (children of
``"jupyter_memory"``). Nothing is logged at WARNING or above in a normal run: warnings and
errors mean a failure worth a look (a background run that failed, a bug of ours with its
traceback), INFO and DEBUG say what happened and why.

A front end (the IPython extension, the ``jupyter-memory`` command, the server extension)
calls :func:`setup` once: the records go to a file, by default ``jupyter-memory.log`` in
the configuration folder (``CLAUDE_CONFIG_DIR`` or ``~/.claude``), never into a notebook
cell. Two variables change that (docs/troubleshooting.md):

- ``JUPYTER_MEMORY_LOG_FILE``: another file;
- ``JUPYTER_MEMORY_LOG_LEVEL``: ``DEBUG``, ``INFO``, ``WARNING`` (the default) or ``ERROR``.

The records also reach the root logger as usual, so an application (or pytest) that
configures logging sees them too.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from io import TextIOWrapper
from pathlib import Path

__all__ = ["FILE_ENV", "LEVEL_ENV", "LOGGER", "LOG_NAME", "log_file", "setup"]

LOGGER = "jupyter_memory"
LOG_NAME = "jupyter-memory.log"
FILE_ENV = "JUPYTER_MEMORY_LOG_FILE"
LEVEL_ENV = "JUPYTER_MEMORY_LOG_LEVEL"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"

_lock = threading.Lock()


class _LogFile(logging.FileHandler):
    """A file handler that makes the file's folder when it first writes (the file itself
    is opened only then, so a run that logs nothing leaves nothing behind)."""

    def _open(self) -> TextIOWrapper:
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()


_handler: _LogFile | None = None


def setup(config_dir: Path, env: Mapping[str, str] | None = None) -> Path:
    """Send the log to ``config_dir/jupyter-memory.log`` (or ``$JUPYTER_MEMORY_LOG_FILE``)
    at ``$JUPYTER_MEMORY_LOG_LEVEL``; returns the file. Calling it again moves the log.

    An unknown level is named in the log itself and ignored.
    """
    global _handler
    env = os.environ if env is None else env
    target = Path(env.get(FILE_ENV) or Path(config_dir) / LOG_NAME).expanduser()
    logger = logging.getLogger(LOGGER)
    level = str(env.get(LEVEL_ENV) or "").strip().upper()
    with _lock:
        if _handler is not None:
            if Path(_handler.baseFilename) == target.absolute():
                target = Path(_handler.baseFilename)
            logger.removeHandler(_handler)
            _handler.close()
        handler = _LogFile(target, encoding="utf-8", delay=True)
        handler.setFormatter(logging.Formatter(FORMAT))
        logger.addHandler(handler)
        _handler = handler
    if level in LEVELS:
        logger.setLevel(level)
    elif level:
        logger.warning("%s=%r is not a level (use one of %s); the level was left as it is.",
                       LEVEL_ENV, level, ", ".join(LEVELS))
    return Path(handler.baseFilename)


def log_file() -> Path | None:
    """The file the log goes to, or None before any front end called :func:`setup`."""
    with _lock:
        return Path(_handler.baseFilename) if _handler is not None else None
