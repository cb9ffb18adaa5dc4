"""The offline selector for notebook cells: the names ``from jupyter_memory import ...``
gives for ranking memories without a model (the package's ``__init__`` imports them from
here on first use; docs/python-api.md).

A learner measuring recall reads a memdir once and asks the selector about many messages;
these two names are that loop, with nothing of a session behind them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from pathlib import Path

from jupyter_memory.errors import ConfigError
from jupyter_memory.memdir.record import Memory
from jupyter_memory.memdir.scan import scan
from jupyter_memory.recall.offline import Selection, select

__all__ = ["read_memories", "select_offline"]


def read_memories(memdir: str | Path) -> list[Memory]:
    """Every memory of ``memdir`` as the selector reads it (newest first): ``file``,
    ``name``, ``description``, ``type``, ``mtime``, ... — the lines of the manifest, all of
    them (the selector's own manifest stops at 200).

    >>> memories = read_memories("memory")
    >>> [(m.file, m.description) for m in memories[:3]]
    """
    folder = Path(memdir).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"read_memories(): {folder} is not a folder: give the memdir "
                          "(%memory path prints this kernel's).")
    return scan(folder, limit=None)


def select_offline(message: str, memories: str | Path | Iterable[Memory], *,
                   recent_tools: Sequence[str] = (), now: dt.datetime | None = None,
                   semantic: bool | None = None) -> Selection:
    """What the offline selector would attach for ``message``, without a model: the
    choice ``%config Agent.recall_selector = 'offline'`` makes each turn. ``memories`` is a
    memdir or what :func:`read_memories` gave; ``now`` fixes the moment relative dates
    ("yesterday") count from; ``semantic=False`` keeps to the lexical part even with the
    semantic extra installed. The choice has ``files`` (best first), ``reason(file)`` (the
    words ``%memory why`` prints), ``mode`` and ``note``.

    >>> choice = select_offline("Is revenue in cents?", "memory")
    >>> choice.files, choice.reason("project_revenue_units.md")
    """
    found = (read_memories(memories) if isinstance(memories, str | Path)
             else list(memories))
    return select(message, found, recent_tools=recent_tools, now=now, semantic=semantic)
