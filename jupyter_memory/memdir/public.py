"""Where memory lives and what the settings files say, for any folder: the names
``from jupyter_memory import ...`` gives for it (the package's ``__init__`` imports them
from here on first use; docs/python-api.md).

``%memory path`` answers for this kernel's project and environment; these answer for any
folder, and for an environment given as a dict, so a notebook can show what would happen
with a variable set or a settings file added without changing its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from jupyter_memory.memdir.location import MemoryLocation, locate
from jupyter_memory.memdir.settings import Settings, load_settings

__all__ = ["memory_location", "memory_settings"]


def memory_location(folder: str | Path | None = None,
                    env: Mapping[str, str] | None = None) -> MemoryLocation:
    """What ``%memory path`` computes, for ``folder`` (default: the current folder) and
    ``env`` (default: this process's environment): ``memdir`` and ``memdir_reason`` (the
    variable, settings file or rule that chose it), ``project_root`` (the git root, else the
    folder), ``project_dir`` (``<base>/projects/<key>``), ``enabled`` and
    ``enabled_reason``, and ``notes`` (settings that were ignored, and why). A bad override
    raises ``ConfigError`` saying which setting and why.

    >>> where = memory_location("~/work/sales", {"HOME": "/home/ana"})
    >>> where.memdir, where.memdir_reason
    """
    return locate(None if folder is None else Path(folder).expanduser(), env)


def memory_settings(folder: str | Path | None = None,
                    env: Mapping[str, str] | None = None) -> Settings:
    """The settings files a session of the project rooted at ``folder`` reads (user,
    project, project-local; default: the current folder's project, as
    ``memory_location().project_root`` gives it), merged: ``merged`` (the values that apply), ``cleanup_period_days``, ``trusted`` (whether
    the folder is trusted, so its project settings may run hooks or move paths),
    ``source_trusted(name)`` and ``skipped_notice()`` (the line a session prints when it
    skips an untrusted project's hooks, or ``None``).

    >>> found = memory_settings("~/work/sales")
    >>> found.trusted, found.skipped_notice()
    """
    root = memory_location(None, env).project_root if folder is None else Path(folder)
    return load_settings(root.expanduser(), env)
