"""What a sync learns that the files cannot show, kept beside them for the next one.

``.jupyter-memory-sync.json`` in the team folder (a hidden name: git ignores it through
the folder's ``.gitignore``, scans skip it) records the paths the repository holds as
symbolic links (git checks them out as plain files, so only git can tell) and the
identity a sync without a git identity committed as, so that is said once. It is local
to this clone and written only under the team folder's lock, never through a link.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from jupyter_memory.errors import InvalidPath
from jupyter_memory.memdir.gateway import Root

__all__ = ["STATE_NAME", "read_state", "recorded_links", "write_state"]

STATE_NAME = ".jupyter-memory-sync.json"

_log = logging.getLogger("jupyter_memory")
_CACHE: dict[str, tuple[int, int, dict[str, Any]]] = {}


def read_state(folder: Path) -> dict[str, Any]:
    """The recorded state ({} when there is none or it cannot be read)."""
    path = Path(folder) / STATE_NAME
    try:
        st = os.lstat(path)
    except OSError:
        return {}
    key = str(path)
    hit = _CACHE.get(key)
    if hit is not None and hit[:2] == (st.st_mtime_ns, st.st_size):
        return dict(hit[2])
    try:
        data = json.loads(Root.declare("team", folder).read(STATE_NAME, follow=False)
                          .decode("utf-8"))
    except (OSError, ValueError, InvalidPath) as exc:
        _log.warning("could not read %s: %s", path, exc)
        return {}
    state = data if isinstance(data, dict) else {}
    _CACHE[key] = (st.st_mtime_ns, st.st_size, state)
    return dict(state)


def write_state(folder: Path, **changes: Any) -> None:
    """Set keys of the state (the caller holds the team folder's lock)."""
    state = read_state(folder)
    state.update(changes)
    Root.declare("team", folder).write(STATE_NAME,
                                       json.dumps(state, indent=1, sort_keys=True) + "\n")


def recorded_links(folder: Path) -> dict[str, str]:
    """Paths (relative to the team folder) the repository records as links, with their text."""
    links = read_state(folder).get("links")
    if not isinstance(links, dict):
        return {}
    return {str(k): str(v) for k, v in links.items()
            if os.path.lexists(Path(folder) / str(k))}
