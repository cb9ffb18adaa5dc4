"""Keeping the store's own files out of git in a memory folder that is committed.

An agent's ``memory: project`` folder (``.claude/agent-memory/NAME/``) lives inside the
project and is meant to be committed with it, but the store also leaves its lock
(``.lock``) and, after a crash, an unfinished temporary file there. :func:`ensure_ignored`
adds the patterns for them to the folder's ``.gitignore``: lines already there are kept
byte for byte, only missing patterns are appended, and the file is replaced atomically.
"""

from __future__ import annotations

from collections.abc import Sequence

from jupyter_memory.errors import InvalidPath
from jupyter_memory.memdir.fsutil import LOCK_NAME, TEMP_SUFFIX
from jupyter_memory.memdir.gateway import Root

__all__ = ["GITIGNORE_NAME", "OWN_FILES", "ensure_ignored"]

GITIGNORE_NAME = ".gitignore"
#: The patterns of the store's own files: its lock and the temporary files of a write.
OWN_FILES = (LOCK_NAME, f".*{TEMP_SUFFIX}")
_COMMENT = "# jupyter-memory: the memory store's lock and unfinished writes stay local"


def ensure_ignored(root: Root, patterns: Sequence[str] = OWN_FILES) -> bool:
    """Make the ``.gitignore`` of the folder ``root`` list ``patterns``; True when the file
    was written.

    An existing file is never overwritten: what it holds stays as it is and the missing
    patterns are appended after it, under one comment line. A ``.gitignore`` that is a
    symbolic link is left alone (nothing is read or written through a link).
    """
    try:
        current = root.read(GITIGNORE_NAME, follow=False, what="the folder's .gitignore")
    except FileNotFoundError:
        current = b""
    except InvalidPath:  # a link (or a link on the way): not ours to change
        return False
    present = {line.strip() for line in current.decode("utf-8", errors="replace").splitlines()}
    missing = [p for p in patterns if p not in present]
    if not missing:
        return False
    added = "\n".join([_COMMENT, *missing]) + "\n"
    glue = b"" if not current or current.endswith(b"\n") else b"\n"
    root.write(GITIGNORE_NAME, current + glue + added.encode("utf-8"))
    return True
