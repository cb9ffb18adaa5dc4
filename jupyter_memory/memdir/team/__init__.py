"""Team memory: the shared scope beside the private memdir, and its sync through git.

A memory is either *private* (the person's own memdir) or *team* (a folder the whole
team shares, docs/reference.md#team-mode); the scope names and checks are in :mod:`jupyter_memory.memdir.scopes`.
The team folder is ``<memdir>/team/`` as in the reference, or the folder
``teamMemoryDirectory`` names. Everywhere a memory is shown its ``file`` starts with
``team/`` when it lives in the team folder, wherever that folder is on disk, so one name
works in the CLI, the magics, the agent's tools and the recall explanation.

One concern per module:

- ``location`` — where the team folder is (:func:`team_location`, :func:`find`);
- ``registry`` — the team folder of each memdir opened in this process, and its scan cache;
- ``authorship`` — the ``author`` field and who is writing;
- ``listing`` — private and team memories as one listing (:func:`scan_all`);
- ``store`` — :class:`ScopedStore` and :class:`TeamFolderStore`, the team's write rules;
- ``checks`` — what stays out of the team index and recall: conflict copies and held-back
  files (:func:`held_back`);
- ``index`` — the team ``MEMORY.md``: kept by people, merged by sync and repair
  (:func:`reconcile`, :func:`merge3`);
- ``git``, ``repo`` and ``state`` — git plumbing, and what a sync keeps for the next one;
- ``unsynced`` — :func:`status`, how the folder is shared and what is not synced yet;
- ``sharing`` — :func:`clone` and :func:`sync`.

A session imports this package on every start, so the names below are loaded on first
use: asking for :func:`open_store` never loads the git and sync modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jupyter_memory.lazy import lazy_exports

if TYPE_CHECKING:
    from jupyter_memory.memdir.scopes import (
        TEAM_DIRNAME,
        TEAM_PREFIX,
        check_team_type,
        default_scope,
        scope_of,
    )
    from jupyter_memory.memdir.team.authorship import AUTHOR_FIELD, author
    from jupyter_memory.memdir.team.checks import CONFLICT_MARK, held_back, is_conflict_copy
    from jupyter_memory.memdir.team.git import TeamError
    from jupyter_memory.memdir.team.index import index_text, load_index, merge3, reconcile
    from jupyter_memory.memdir.team.listing import as_team, scan_all
    from jupyter_memory.memdir.team.location import SETTING, TeamLocation, team_location
    from jupyter_memory.memdir.team.registry import folder_of, register, team_path
    from jupyter_memory.memdir.team.sharing import (
        GITATTRIBUTES,
        GITIGNORE,
        SyncReport,
        clone,
        sync,
    )
    from jupyter_memory.memdir.team.store import ScopedStore, TeamFolderStore, open_store
    from jupyter_memory.memdir.team.unsynced import TeamStatus, shared_on_disk, status

_EXPORTS = {
    "TEAM_DIRNAME": "jupyter_memory.memdir.scopes",
    "TEAM_PREFIX": "jupyter_memory.memdir.scopes",
    "check_team_type": "jupyter_memory.memdir.scopes",
    "default_scope": "jupyter_memory.memdir.scopes",
    "scope_of": "jupyter_memory.memdir.scopes",
    "AUTHOR_FIELD": f"{__name__}.authorship",
    "author": f"{__name__}.authorship",
    "CONFLICT_MARK": f"{__name__}.checks",
    "held_back": f"{__name__}.checks",
    "is_conflict_copy": f"{__name__}.checks",
    "TeamError": f"{__name__}.git",
    "index_text": f"{__name__}.index",
    "load_index": f"{__name__}.index",
    "merge3": f"{__name__}.index",
    "reconcile": f"{__name__}.index",
    "as_team": f"{__name__}.listing",
    "scan_all": f"{__name__}.listing",
    "SETTING": f"{__name__}.location",
    "TeamLocation": f"{__name__}.location",
    "team_location": f"{__name__}.location",
    "folder_of": f"{__name__}.registry",
    "register": f"{__name__}.registry",
    "team_path": f"{__name__}.registry",
    "GITATTRIBUTES": f"{__name__}.sharing",
    "GITIGNORE": f"{__name__}.sharing",
    "SyncReport": f"{__name__}.sharing",
    "clone": f"{__name__}.sharing",
    "sync": f"{__name__}.sharing",
    "ScopedStore": f"{__name__}.store",
    "TeamFolderStore": f"{__name__}.store",
    "open_store": f"{__name__}.store",
    "TeamStatus": f"{__name__}.unsynced",
    "shared_on_disk": f"{__name__}.unsynced",
    "status": f"{__name__}.unsynced",
}

__all__ = [
    "AUTHOR_FIELD",
    "CONFLICT_MARK",
    "GITATTRIBUTES",
    "GITIGNORE",
    "SETTING",
    "TEAM_DIRNAME",
    "TEAM_PREFIX",
    "ScopedStore",
    "SyncReport",
    "TeamError",
    "TeamFolderStore",
    "TeamLocation",
    "TeamStatus",
    "as_team",
    "author",
    "check_team_type",
    "clone",
    "default_scope",
    "folder_of",
    "held_back",
    "index_text",
    "is_conflict_copy",
    "load_index",
    "merge3",
    "open_store",
    "reconcile",
    "register",
    "scan_all",
    "scope_of",
    "shared_on_disk",
    "status",
    "sync",
    "team_location",
    "team_path",
]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
