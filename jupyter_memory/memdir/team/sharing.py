"""Sharing the team folder through git: :func:`clone` it, then :func:`sync` it.

A sync commits the folder's changes, pulls with rebase, rebuilds the index and pushes.
Two edits of one memory keep both versions (the shared one, and a conflict copy of
this person's) and the sync says so; offline, the commit waits for the next sync.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.index import INDEX_NAME
from jupyter_memory.memdir.scopes import TEAM_PREFIX
from jupyter_memory.memdir.team.authorship import author
from jupyter_memory.memdir.team.git import TeamError, git_toplevel, run_git
from jupyter_memory.memdir.team.index import rebuild_index
from jupyter_memory.memdir.team.repo import Git, path_in_repo, uncommitted, upstream
from jupyter_memory.memdir.team.unsynced import CONFLICT_MARK

__all__ = ["GITATTRIBUTES", "GITIGNORE", "SyncReport", "clone", "sync"]

#: Written into a team folder by :func:`clone` (and the first sync): the store's own
#: hidden files never travel, and the index merges line by line instead of conflicting.
GITIGNORE = "# jupyter-memory: the store's lock and unfinished writes stay local\n.*\n!.gitignore\n!.gitattributes\n"
GITATTRIBUTES = "# jupyter-memory rebuilds the index on every sync\nMEMORY.md merge=union\n"


def clone(url: str, folder: Path, env: Mapping[str, str] | None = None) -> str:
    """Make ``folder`` a clone of the shared repository ``url``; returns what was done.

    The folder must be missing or empty (a team folder that already holds memories is
    refused, so nothing is overwritten). The clone gets a ``.gitignore`` for the store's
    own files and a ``.gitattributes`` that merges the index line by line.
    """
    folder = Path(folder)
    team = Root.declare("team", folder)
    if folder.exists() and any(name != ".lock" for name in team.listdir()):
        raise TeamError(
            f"The team folder {folder} is not empty, so it cannot be cloned into. If it "
            "already is a clone, run `jupyter-memory team sync`; otherwise move its files "
            "aside, clone, copy them back and sync."
        )
    Root.declare("team", folder.parent).make_folder()
    team.remove(".lock", missing_ok=True)
    if folder.exists():
        team.remove_folder()
    # The clone keeps core.symlinks=false in its own config, so later pulls check links
    # out as plain files too.
    done = run_git(["clone", "--quiet", "--config", "core.symlinks=false", url, str(folder)],
                   cwd=None, env=env, timeout=300)
    if done.returncode != 0:
        raise TeamError(f"git clone {url} failed: {done.stderr.strip()}. Check the address "
                        "and your access to it, then retry.")
    _refuse_links(folder)
    _ensure_git_files(folder)
    return f"Cloned {url} into {folder}."


def _refuse_links(folder: Path) -> None:
    """What git wrote, checked through the gateway: no symbolic link in the team folder."""
    links = Root.declare("team", folder).links_below()
    if links:
        shown = ", ".join(str(p) for p in links[:5]) + (" and more" if len(links) > 5 else "")
        raise TeamError(
            f"The team folder {folder} holds symbolic links ({shown}); memory is never read "
            "or written through a link, since one could reach any file on disk. Remove them "
            "(and from the shared repository), then sync again.")


def _ensure_git_files(folder: Path) -> None:
    team = Root.declare("team", folder)
    for name, text in ((".gitignore", GITIGNORE), (".gitattributes", GITATTRIBUTES)):
        if not (folder / name).exists():
            team.write(name, text)


@dataclass
class SyncReport:
    """What a sync did: ``state`` is ``synced``, ``offline`` or ``local`` (no remote)."""

    state: str
    committed: list[str] = field(default_factory=list)
    received: list[str] = field(default_factory=list)
    conflicts: list[dict[str, str]] = field(default_factory=list)
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.state != "offline"

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "committed": self.committed, "received": self.received,
                "conflicts": self.conflicts, "message": self.message}

    def text(self) -> str:
        lines = [self.message]
        if self.committed:
            lines.append("Sent: " + ", ".join(self.committed))
        if self.received:
            lines.append("Received: " + ", ".join(self.received))
        for c in self.conflicts:
            lines.append(
                f"conflict: {c['file']} was changed both here and by someone else. Both "
                f"versions are kept: {c['file']} holds the version already shared, "
                f"{c['copy']} holds yours. Merge them into {c['file']}, delete "
                f"{c['copy']}, then run `jupyter-memory team sync` again."
            )
        return "\n".join(line for line in lines if line)


def _summary(changes: Sequence[tuple[str, str]], prefix: str) -> tuple[str, list[str]]:
    words = {"A": "add", "?": "add", "??": "add", "M": "update", "D": "remove", "R": "rename"}
    parts, names = [], []
    for code, path in changes:
        rel = path[len(prefix):] if prefix and path.startswith(prefix) else path
        if PurePath(rel).name.startswith(".") or rel == INDEX_NAME:
            continue
        verb = words.get(code, words.get(code[:1], "update"))
        parts.append(f"{verb} {rel}")
        names.append(rel)
    parts = parts or ["rebuild the index"]
    return ("team memory: " + "; ".join(parts[:8]) + (f"; and {len(parts) - 8} more" if len(parts) > 8 else "")), names


def _commit(git: Git, spec: str, prefix: str, who: str) -> list[str]:
    changes = uncommitted(git, spec)
    if not changes:
        return []
    message, names = _summary(changes, prefix)
    git.run("add", "-A", "--", spec)
    if not git.run("diff", "--cached", "--quiet", "--", spec, check=False).returncode:
        return []
    git.run("commit", "--quiet", "-m", message, "-m", f"Written by {who} with jupyter-memory.",
            "--", spec)
    return names


def _in_rebase(git: Git) -> bool:
    for name in ("rebase-merge", "rebase-apply"):
        path = git.out("rev-parse", "--git-path", name)
        if (git.cwd / path).exists():
            return True
    return False


def _stage(git: Git, n: int, path: str) -> str | None:
    done = git.run("show", f":{n}:{path}", check=False)
    return done.stdout if done.returncode == 0 else None


def _copy_name(repo: Path, path: str, who: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", who).strip("-").lower() or "local"
    stem = path[:-3] if path.endswith(".md") else path
    candidate, n = f"{stem}{CONFLICT_MARK}{slug}.md", 2
    while (repo / candidate).exists():
        candidate, n = f"{stem}{CONFLICT_MARK}{slug}-{n}.md", n + 1
    return candidate


def _resolve_conflicts(git: Git, folder: Path, prefix: str, who: str) -> list[dict[str, str]]:
    """Settle every conflicted path of the current rebase step, losing nothing."""
    found: list[dict[str, str]] = []
    paths = git.out("diff", "--name-only", "--diff-filter=U").splitlines()
    for path in paths:
        if prefix and not path.startswith(prefix):
            git.run("rebase", "--abort", check=False)
            raise TeamError(
                f"The sync met a conflict in {path}, outside the team folder; it was undone. "
                "Resolve it with git in the project's repository, then sync again."
            )
        shared, mine = _stage(git, 2, path), _stage(git, 3, path)
        target = git.cwd / path
        team = Root.declare("team", folder)
        if PurePath(path).name == INDEX_NAME or not path.endswith(".md"):
            team.write(target, shared if shared is not None else (mine or ""))
            git.run("add", "--", path)
            continue
        if shared is None or mine is None:  # edited on one side, deleted on the other
            kept = shared if shared is not None else mine
            team.write(target, kept or "")
            git.run("add", "--", path)
            continue
        team.write(target, shared)
        copy = _copy_name(git.cwd, path, who)
        doc = frontmatter.parse(mine)
        text = mine
        if doc.has_frontmatter:
            label = str(doc.get("name") or PurePath(path).stem)
            text = frontmatter.update(mine, {"name": f"{label} (conflicting version by {who})"})
        team.write(git.cwd / copy, text)
        git.run("add", "--", path, copy)
        rel: Callable[[str], str] = lambda p: TEAM_PREFIX + (p[len(prefix):] if prefix else p)  # noqa: E731
        found.append({"file": rel(path), "copy": rel(copy)})
    rebuild_index(folder)
    git.run("add", "--", path_in_repo(git.cwd, folder / INDEX_NAME))
    return found


def sync(folder: Path, env: Mapping[str, str] | None = None, *, lock_timeout: float = 120.0) -> SyncReport:
    """Commit the team folder's changes, pull with rebase, rebuild the index and push.

    Holds the team folder's lock throughout, so no memory is written half-way through a
    rebase. Offline, the commit stays local and the report says the sync waits; the next
    sync pushes it. Two edits of one memory keep both versions (see :class:`SyncReport`).
    """
    folder = Path(folder)
    repo = git_toplevel(folder) if folder.is_dir() else None
    if repo is None:
        raise TeamError(
            f"The team folder {folder} is not in a git repository, so there is nothing to "
            "sync with. Run `jupyter-memory team clone URL` with the address of the team's "
            "shared repository (an empty bare repository works), or keep the team folder "
            "inside the project's repository."
        )
    git = Git(repo, env)
    spec = path_in_repo(repo, folder)
    prefix = "" if spec == "." else spec.rstrip("/") + "/"
    who = author(folder, env)
    with Root.declare("team", folder).lock(timeout=lock_timeout):
        _refuse_links(folder)
        _ensure_git_files(folder)  # a nested .gitignore also works in the project's repo
        rebuild_index(folder)
        committed = _commit(git, spec, prefix, who)
        remote, branch = upstream(git)
        if remote is None or branch is None:
            return SyncReport("local", committed, message=(
                "Committed locally; this repository has no remote to share with. Add one "
                "(git remote add origin URL) and sync again."))
        report = SyncReport("synced", committed)
        for _attempt in range(3):
            fetched = git.run("fetch", "--quiet", remote, check=False)
            if fetched.returncode != 0:
                return SyncReport("offline", committed, message=(
                    f"Sync waits: could not reach {remote} "
                    f"({(fetched.stderr.strip().splitlines() or ['no answer'])[-1]}). Your "
                    "changes are committed here and will be sent by the next sync."))
            tracking = f"{remote}/{branch}"
            has_remote_branch = git.run("rev-parse", "--verify", "--quiet", tracking,
                                        check=False).returncode == 0
            if has_remote_branch:
                before = git.out("rev-parse", "HEAD")
                incoming = git.run("diff", "--name-only", f"HEAD...{tracking}", "--", spec,
                                   check=False).stdout.split()
                report.received = sorted({
                    (p[len(prefix):] if prefix else p) for p in incoming
                    if p.endswith(".md") and PurePath(p).name != INDEX_NAME} | set(report.received))
                step = git.run("rebase", "--autostash", tracking, check=False)
                guard = 0
                while step.returncode != 0 and _in_rebase(git) and guard < 1000:
                    guard += 1
                    report.conflicts += _resolve_conflicts(git, folder, prefix, who)
                    step = git.run("rebase", "--continue", check=False)
                    if step.returncode != 0 and "nothing to commit" in (step.stdout + step.stderr):
                        step = git.run("rebase", "--skip", check=False)
                if _in_rebase(git):
                    git.run("rebase", "--abort", check=False)
                    raise TeamError(f"The sync could not finish a rebase: {step.stderr.strip()}. "
                                    "Nothing was lost; your commits are as before the sync.")
                del before
                _refuse_links(folder)  # what the pull wrote, before the index is rebuilt
            if rebuild_index(folder):
                _commit(git, spec, prefix, who)
            pushed = git.run("push", "--quiet", remote, f"HEAD:{branch}", check=False)
            if pushed.returncode == 0:
                git.run("branch", "--quiet", f"--set-upstream-to={tracking}", check=False)
                break
            if "rejected" not in pushed.stderr and "fetch first" not in pushed.stderr:
                return SyncReport("offline", committed, report.received, report.conflicts, (
                    f"Sync waits: could not push to {remote} "
                    f"({(pushed.stderr.strip().splitlines() or ['no answer'])[-1]}). Your "
                    "changes are committed here and will be sent by the next sync."))
        else:
            raise TeamError("Someone else kept pushing while this sync ran; run sync again.")
    n = len(report.conflicts)
    report.message = (f"Team memory synced with {remote}/{branch}"
                      + (f"; {n} conflict{'s' if n != 1 else ''} kept both versions." if n else "."))
    return report
