"""The offline selector as it was at a git revision, loaded beside today's to compare them.

:func:`load` reads ``jupyter_memory/recall/offline.py`` at a revision with ``git show`` and
imports it as a module of its own. Its imports resolve to today's package (the date engine,
the semantic encoder and its vector cache), so the two differ only in their selection code
and run side by side in one process, where machine load hits both alike. A revision older
than the modules it imports may not load; :class:`RefUnavailable` then says why.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SOURCE = "jupyter_memory/recall/offline.py"


class RefUnavailable(RuntimeError):
    """The selector at that revision cannot be read or imported (the message says why)."""


@functools.lru_cache(maxsize=8)
def load(ref: str) -> ModuleType:
    """The offline selector module at git revision ``ref`` (``main``, a commit, a tag)."""
    try:
        done = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:{SOURCE}"],
                              capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RefUnavailable(f"git could not be run to read {SOURCE} at {ref}: {exc}") from exc
    if done.returncode != 0:
        raise RefUnavailable(f"git has no {SOURCE} at {ref!r}: {done.stderr.strip()}")
    name = "offline_at_" + re.sub(r"\W", "_", ref)
    folder = Path(tempfile.mkdtemp(prefix="jupyter-memory-selector-"))
    path = folder / f"{name}.py"
    path.write_text(done.stdout, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it loads
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # an old revision may import what no longer exists
        del sys.modules[name]
        raise RefUnavailable(f"the selector at {ref} does not import beside today's "
                             f"package: {type(exc).__name__}: {exc}") from exc
    return module
