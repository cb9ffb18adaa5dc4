"""Which folders the person trusts, so a cloned project or a shared bundle cannot run code.

A project's ``.claude/settings.json`` and ``settings.local.json`` can hold shell hooks
and settings that move paths; its ``CLAUDE.md`` can import any file on disk with
``@/abs/path``. Like the reference, those take effect only in a folder the person
trusted. A folder is trusted when it, or a folder above it, is trusted in either record:

- ours, ``<base>/jupyter-memory-trust.json`` (``<base>`` is ``CLAUDE_CONFIG_DIR`` or
  ``~/.claude``), written by ``jupyter-memory trust``, ``%memory trust`` or a yes at the
  interactive prompt;
- Claude Code's, ``projects[<folder>].hasTrustDialogAccepted`` in ``~/.claude.json``
  (``$CLAUDE_CONFIG_DIR/.claude.json`` when that variable is set), read and never written.

Imports from outside the project and the config base are approved separately, as the
reference does (``hasClaudeMdExternalIncludesApproved`` there; ``external_imports`` here).
Setting ``JUPYTER_MEMORY_UNTRUSTED=1`` (bundle replay does) makes every folder untrusted.

The core never asks anyone itself: a front end with a person at the keyboard registers a
prompter with :func:`set_prompter`; without one (headless) nothing is trusted that is not
already on record, and the callers leave a notice that says how to trust.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jupyter_memory.errors import ConfigError
from jupyter_memory.memdir import trust_table
from jupyter_memory.memdir.basedir import ENV_CONFIG_DIR, config_base, home_dir
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.trust_table import USER

__all__ = [
    "ENV_UNTRUSTED",
    "TRUST_FILENAME",
    "TrustDecision",
    "TrustEntry",
    "approve_external_imports",
    "claude_config_file",
    "external_imports_approved",
    "how_to_trust",
    "is_trusted",
    "request_external_imports",
    "request_trust",
    "revoke",
    "set_prompter",
    "trust_file",
    "trust_folder",
    "trusted_folders",
]

TRUST_FILENAME = "jupyter-memory-trust.json"
TRUST_VERSION = 1
#: Set to 1/true/yes/on to treat every folder as untrusted (bundle replay sets it).
ENV_UNTRUSTED = "JUPYTER_MEMORY_UNTRUSTED"

_CLAUDE_TRUST_KEY = "hasTrustDialogAccepted"
_CLAUDE_IMPORTS_KEY = "hasClaudeMdExternalIncludesApproved"
_TRUTHY = frozenset({"1", "true", "yes", "on"})

#: Asks the person a yes/no question; returns None when nobody can answer (no stdin).
Prompter = Callable[[str], "bool | None"]

_lock = threading.RLock()
_prompter: Prompter | None = None
_declined: set[tuple[str, str]] = set()  # (what, folder) answered no in this process


@dataclass(frozen=True)
class TrustDecision:
    """Whether a folder is trusted, and which record said so (for messages)."""

    trusted: bool
    folder: Path
    source: str  # "jupyter-memory" | "claude" | "untrusted-env" | "none"
    granted_by: Path | None = None  # the folder named in the record (maybe an ancestor)
    record: Path | None = None  # the file holding that record


@dataclass(frozen=True)
class TrustEntry:
    """One trusted folder, as ``jupyter-memory trust --list`` shows it."""

    folder: Path
    source: str  # "jupyter-memory" | "claude"
    external_imports: bool
    granted_at: str | None
    record: Path

    def to_json(self) -> dict[str, Any]:
        return {"folder": str(self.folder), "source": self.source,
                "external_imports": self.external_imports, "granted_at": self.granted_at,
                "record": str(self.record)}


def _environ(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def untrusted_env(env: Mapping[str, str] | None = None) -> bool:
    """True when ``JUPYTER_MEMORY_UNTRUSTED`` asks for everything to be untrusted."""
    return (trust_table.env(ENV_UNTRUSTED, _environ(env)) or "").strip().lower() in _TRUTHY


def trust_file(env: Mapping[str, str] | None = None) -> Path:
    """Our own record: ``<base>/jupyter-memory-trust.json``."""
    return config_base(env) / TRUST_FILENAME


def claude_config_file(env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's global config: ``$CLAUDE_CONFIG_DIR/.claude.json`` or ``~/.claude.json``."""
    environ = _environ(env)
    if trust_table.env(ENV_CONFIG_DIR, environ):
        return config_base(environ) / ".claude.json"
    return home_dir(environ) / ".claude.json"


def _own(path: Path) -> Root:
    """The folder of one of the person's own records (ours, or Claude Code's), which they
    may keep anywhere (a dotfiles folder): reads follow links, writes never go through one."""
    return Root.declare("config", path.parent, links="any", label="your config folder")


def _folder(path: Path | str) -> Path:
    return Path(os.path.abspath(os.path.expanduser(str(path))))


def _candidates(folder: Path) -> list[str]:
    """The folder and its parents, as written and resolved, nearest first, no repeats."""
    out: list[str] = []
    for start in (folder, Path(os.path.realpath(folder))):
        for p in (start, *start.parents):
            key = str(p)
            if key not in out:
                out.append(key)
    return out


_cache: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path`` ({} if missing or broken), re-read only when it changes.

    ``~/.claude.json`` can be megabytes and trust is checked on every settings read.
    """
    try:
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        cached = _cache.get(str(path))
        if cached is not None and cached[0] == stamp:
            return cached[1]
        data = json.loads(_own(path).text(path))
    except (OSError, ValueError, RecursionError):
        return {}
    result = data if isinstance(data, dict) else {}
    with _lock:
        _cache[str(path)] = (stamp, result)
    return result


def _our_folders(env: Mapping[str, str] | None) -> dict[str, dict[str, Any]]:
    folders = _read_json(trust_file(env)).get("folders")
    if not isinstance(folders, dict):
        return {}
    return {k: v for k, v in folders.items() if isinstance(k, str) and isinstance(v, dict)}


def _claude_projects(env: Mapping[str, str] | None) -> dict[str, dict[str, Any]]:
    projects = _read_json(claude_config_file(env)).get("projects")
    if not isinstance(projects, dict):
        return {}
    return {k: v for k, v in projects.items() if isinstance(k, str) and isinstance(v, dict)}


def _grants(entry: Mapping[str, Any], what: str, *, claude: bool) -> bool:
    """Whether one record's entry grants ``what`` (``trust`` or ``imports``), read through
    the trust table (the person's own files)."""
    if what == "trust":
        value = (trust_table.value(_CLAUDE_TRUST_KEY, entry, USER) if claude
                 else trust_table.value("trusted", entry, USER))
    else:
        value = (trust_table.value(_CLAUDE_IMPORTS_KEY, entry, USER) if claude
                 else trust_table.value("external_imports", entry, USER))
    return value is True


def _lookup(folder: Path, what: str, env: Mapping[str, str] | None) -> TrustDecision:
    folder = _folder(folder)
    if untrusted_env(env):
        return TrustDecision(False, folder, "untrusted-env")
    ours, claude = _our_folders(env), _claude_projects(env)
    for cand in _candidates(folder):
        if _grants(ours.get(cand, {}), what, claude=False):
            return TrustDecision(True, folder, "jupyter-memory", Path(cand), trust_file(env))
        if _grants(claude.get(cand, {}), what, claude=True):
            return TrustDecision(True, folder, "claude", Path(cand), claude_config_file(env))
    return TrustDecision(False, folder, "none")


def is_trusted(folder: Path | str, env: Mapping[str, str] | None = None) -> TrustDecision:
    """Whether hooks and path-moving settings in ``folder/.claude`` may take effect."""
    return _lookup(Path(folder), "trust", env)


def external_imports_approved(folder: Path | str,
                              env: Mapping[str, str] | None = None) -> TrustDecision:
    """Whether instruction files of ``folder`` may import files from outside it."""
    return _lookup(Path(folder), "imports", env)


def _write(folder: Path, changes: Mapping[str, Any] | None,
           env: Mapping[str, str] | None) -> None:
    path = trust_file(env)
    with _lock:
        data = json.loads(json.dumps(_read_json(path)))  # a copy: the cached one stays as read
        if path.exists() and not data:
            raw = _own(path).text(path, errors="replace").strip()
            if raw:
                raise ConfigError(
                    f"{path} is not a JSON object, so it cannot be updated safely. Fix or "
                    "delete it (it only lists the folders you trusted), then try again."
                )
        folders = data.get("folders") if isinstance(data.get("folders"), dict) else {}
        key = str(folder)
        if changes is None:
            folders.pop(key, None)
        else:
            entry = dict(folders.get(key) or {})
            entry.update(changes)
            entry["granted_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            folders[key] = entry
        data.update({"version": TRUST_VERSION, "folders": dict(sorted(folders.items()))})
        _own(path).write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", mode=0o600)


def trust_folder(folder: Path | str, env: Mapping[str, str] | None = None, *,
                 external_imports: bool | None = True) -> Path:
    """Record ``folder`` (and everything below it) as trusted; returns the folder recorded.

    ``external_imports=True`` also approves its instruction files' imports from outside
    it; None leaves an earlier answer about imports as it was.
    """
    target = Path(os.path.realpath(_folder(folder)))
    if not target.is_dir():
        raise ConfigError(f"{folder}: no such folder. Give the project folder to trust.")
    if target == Path(target.anchor):
        raise ConfigError(
            f"Refusing to trust {target}: that is the whole filesystem. Trust the project "
            "folder itself."
        )
    changes: dict[str, Any] = {"trusted": True}
    if external_imports is not None:
        changes["external_imports"] = bool(external_imports)
    _write(target, changes, env)
    with _lock:
        _declined.discard(("trust", str(target)))
        _declined.discard(("imports", str(target)))
    return target


def approve_external_imports(folder: Path | str, env: Mapping[str, str] | None = None) -> Path:
    """Approve only the external imports of ``folder`` (the answer to the import prompt)."""
    target = Path(os.path.realpath(_folder(folder)))
    _write(target, {"external_imports": True}, env)
    return target


def revoke(folder: Path | str, env: Mapping[str, str] | None = None) -> bool:
    """Remove ``folder`` from our record; False when it was not in it.

    Claude Code's own record is read, never written: a folder trusted there stays
    trusted (the CLI says so).
    """
    target = _folder(folder)
    ours = _our_folders(env)
    keys = [k for k in (str(target), os.path.realpath(target)) if k in ours]
    for key in keys:
        _write(Path(key), None, env)
    with _lock:  # the person just said no: do not ask again in this process
        _declined.update({("trust", os.path.realpath(target)), ("imports", os.path.realpath(target))})
    return bool(keys)


def trusted_folders(env: Mapping[str, str] | None = None) -> list[TrustEntry]:
    """Every trusted folder of both records, ours first, each sorted by path."""
    out = [
        TrustEntry(Path(k), "jupyter-memory", _grants(v, "imports", claude=False),
                   v.get("granted_at") if isinstance(v.get("granted_at"), str) else None,
                   trust_file(env))
        for k, v in sorted(_our_folders(env).items()) if _grants(v, "trust", claude=False)
    ]
    out += [
        TrustEntry(Path(k), "claude", _grants(v, "imports", claude=True), None,
                   claude_config_file(env))
        for k, v in sorted(_claude_projects(env).items()) if _grants(v, "trust", claude=True)
    ]
    return out


def how_to_trust(folder: Path | str) -> str:
    """The sentence every skip notice ends with."""
    return (f"If you trust {folder}, run `jupyter-memory trust {folder}` in a terminal "
            "or `%memory trust` in the notebook.")


# ----------------------------------------------------------------------------- asking


def set_prompter(prompter: Prompter | None) -> Prompter | None:
    """Register the function that asks the person (None: headless); returns the old one."""
    global _prompter
    with _lock:
        old, _prompter = _prompter, prompter
    return old


def _ask(kind: str, folder: Path, question: str, env: Mapping[str, str] | None) -> bool:
    if untrusted_env(env):
        return False
    with _lock:
        prompter = _prompter
        if prompter is None or (kind, str(folder)) in _declined:
            return False
    try:
        answer = prompter(question)
    except Exception:  # a broken front end must not break the session
        logging.getLogger(__name__).info("asking the person failed", exc_info=True)
        answer = None
    if answer is None:
        return False
    if not answer:
        with _lock:
            _declined.add((kind, str(folder)))
        return False
    return True


def request_trust(folder: Path | str, wants: Iterable[str],
                  env: Mapping[str, str] | None = None) -> TrustDecision:
    """Trust of ``folder``, asking the person (if a prompter is set) when it is not on record.

    ``wants`` lists in words what the folder's settings would do (shown in the question).
    A no is remembered for this process, so the person is asked once.
    """
    decision = is_trusted(folder, env)
    wanted = list(wants)
    if decision.trusted or not wanted:
        return decision
    target = Path(os.path.realpath(decision.folder))
    question = (
        f"{target} has project settings that run code or move files:\n"
        + "".join(f"  - {w}\n" for w in wanted)
        + "Do you trust this folder and let them take effect? [y/N] "
    )
    if _ask("trust", target, question, env):
        trust_folder(target, env, external_imports=None)
        return is_trusted(target, env)
    return decision


def request_external_imports(folder: Path | str, files: Iterable[str],
                             env: Mapping[str, str] | None = None) -> TrustDecision:
    """Approval of ``folder``'s imports from outside it, asking (once) when not on record."""
    decision = external_imports_approved(folder, env)
    listed = list(files)
    if decision.trusted or not listed:
        return decision
    target = Path(os.path.realpath(decision.folder))
    question = (
        f"Instruction files in {target} import files from outside the project:\n"
        + "".join(f"  - {f}\n" for f in listed)
        + "Their text would be sent to the model with every request. Allow these imports? [y/N] "
    )
    if _ask("imports", target, question, env):
        approve_external_imports(target, env)
        return external_imports_approved(target, env)
    return decision


# ----------------------------------------------------------------------------- front ends


def trust_command(action: str, folder: Path | str | None,
                  env: Mapping[str, str] | None = None) -> tuple[dict[str, Any], str]:
    """``trust`` for the CLI and ``%memory trust``: (JSON record, text for people).

    ``action`` is ``"trust"``, ``"revoke"`` or ``"list"``; ``folder`` defaults to the
    project root of the current folder.
    """
    from jupyter_memory.memdir.project import find_project_root

    if action == "list":
        entries = trusted_folders(env)
        if not entries:
            text = ("No folder is trusted yet. Trust one with `jupyter-memory trust PATH` "
                    "(or `%memory trust` in a notebook).")
        else:
            lines = []
            for e in entries:
                extra = ", outside imports approved" if e.external_imports else ""
                lines.append(f"{e.folder}  ({e.source}: {e.record}{extra})")
            text = "Trusted folders (and everything below them):\n" + "\n".join(
                "  " + line for line in lines)
        return {"trusted": [e.to_json() for e in entries]}, text
    target = find_project_root(Path.cwd() if folder is None else Path(folder).expanduser())
    if action == "revoke":
        removed = revoke(target, env)
        after = is_trusted(target, env)
        text = (f"{target} is no longer trusted by jupyter-memory." if removed
                else f"{target} was not in jupyter-memory's trust record ({trust_file(env)}).")
        if after.trusted:
            text += (f" It is still trusted through {after.source}'s record for "
                     f"{after.granted_by} in {after.record}; that file is only read here, "
                     "so change it there.")
        return {"folder": str(target), "revoked": removed, "trusted": after.trusted}, text
    if action != "trust":
        raise ValueError(f"unknown trust action {action!r}")
    recorded = trust_folder(target, env)
    text = (f"Trusted {recorded}: hooks and settings in its .claude/ folder, and imports of "
            f"files outside it, now take effect (recorded in {trust_file(env)}). "
            f"Undo with `jupyter-memory trust --revoke {recorded}`.")
    return {"folder": str(recorded), "trusted": True, "record": str(trust_file(env))}, text
