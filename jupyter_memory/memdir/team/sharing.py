"""Sharing the team folder through git: :func:`clone` it, then :func:`sync` it.

A sync is the team folder's border, and it checks what crosses it both ways:

* **out**: each changed file is checked before it is committed; a credential, a ``user``
  memory or a symbolic link is not sent (it stays on disk and the report says why), and
  the commit holds exactly the files that passed (an index of its own, never ``git add
  -A``). Its message names what changed.
* **in**: every git command runs with ``core.symlinks=false``, so a link a remote commits
  arrives as a plain file holding its text and is never followed; what arrives is
  checked like what leaves, and a file that fails stays on disk but out of the team
  index and of recall (:mod:`~jupyter_memory.memdir.team.checks`).

Between the two it pulls with rebase and merges the index line by line
(:mod:`~jupyter_memory.memdir.team.index`): hand-written lines stay, the newer of two
edits of one line wins. Two edits of one memory keep both versions, the shared one and
a conflict copy of this side's, which names who wrote it. Offline, the commit waits, and
the next sync says when it went out. The report (:class:`SyncReport`) names every file
sent, received, removed and copied.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from jupyter_memory.errors import InvalidPath
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.index import INDEX_NAME
from jupyter_memory.memdir.record import AUTHOR_FIELD
from jupyter_memory.memdir.scan import ScanCache, scan
from jupyter_memory.memdir.scopes import TEAM_PREFIX
from jupyter_memory.memdir.team.authorship import author
from jupyter_memory.memdir.team.checks import CONFLICT_MARK, held_back, text_problems
from jupyter_memory.memdir.team.git import TeamError, git_toplevel, run_git
from jupyter_memory.memdir.team.index import (
    exists_in,
    folder_memories,
    index_text,
    is_legacy,
    merge3,
    reconcile,
    undo_legacy_rewrite,
    write_index,
)
from jupyter_memory.memdir.team.repo import (
    EMPTY_TREE,
    Git,
    links_in,
    path_in_repo,
    uncommitted,
    upstream,
)
from jupyter_memory.memdir.team.state import read_state, write_state

__all__ = ["GITATTRIBUTES", "GITIGNORE", "SyncReport", "clone", "sync"]

_log = logging.getLogger("jupyter_memory")

#: Written into a team folder by :func:`clone` (and the first sync): the store's own
#: hidden files never travel, and git leaves the index for the sync to merge.
GITIGNORE = "# jupyter-memory: the store's lock and unfinished writes stay local\n.*\n!.gitignore\n!.gitattributes\n"
GITATTRIBUTES = ("# jupyter-memory merges the index itself: one line per file, the newer "
                 "edit of a line wins\nMEMORY.md merge=binary\n")
#: What earlier versions wrote; replaced by :data:`GITATTRIBUTES` (a union merge of two
#: edits of one line keeps both, so a plain ``git pull`` gave a file two lines).
_OLD_GITATTRIBUTES = ("# jupyter-memory rebuilds the index on every sync\nMEMORY.md merge=union\n",)
_OWN_FILES = (".gitignore", ".gitattributes")


def clone(url: str, folder: Path, env: Mapping[str, str] | None = None) -> str:
    """Make ``folder`` a clone of the shared repository ``url``; returns what was done.

    The folder must be missing or empty (a team folder that already holds memories is
    refused, so nothing is overwritten). The clone never makes symbolic links
    (``core.symlinks=false`` is kept in its configuration) and gets a ``.gitignore`` for
    the store's own files and a ``.gitattributes`` that leaves the index to the sync.
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
    git = Git(folder, env)
    _record_links(_Where(git, folder, ".", ""))
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
        if os.path.islink(folder / name):
            continue  # never written through; the sync does not send it either
        try:
            current: str | None = team.text(name, errors="replace", follow=False)
        except FileNotFoundError:
            current = None
        if current is None or (name == ".gitattributes" and current in _OLD_GITATTRIBUTES):
            team.write(name, text)


# --------------------------------------------------------------------------- the report


@dataclass
class SyncReport:
    """What a sync did, file by file. ``state`` is ``synced``, ``offline`` or ``local``
    (no remote). Files are named as everywhere (``team/x.md``)."""

    state: str
    sent: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    received: list[str] = field(default_factory=list)
    removed_by_others: list[str] = field(default_factory=list)
    conflicts: list[dict[str, str]] = field(default_factory=list)
    kept: list[dict[str, str]] = field(default_factory=list)
    contested: list[dict[str, str]] = field(default_factory=list)
    held_back: list[dict[str, str]] = field(default_factory=list)
    not_sent: list[dict[str, str]] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    earlier: list[str] = field(default_factory=list)
    index_notes: list[str] = field(default_factory=list)
    identity: str | None = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.state != "offline"

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "sent": self.sent, "removed": self.removed,
                "received": self.received, "removed_by_others": self.removed_by_others,
                "conflicts": self.conflicts, "kept": self.kept, "contested": self.contested,
                "held_back": self.held_back, "not_sent": self.not_sent,
                "waiting": self.waiting, "earlier_sent": self.earlier,
                "index_notes": self.index_notes, "identity": self.identity,
                "message": self.message, "text": self.text()}

    def text(self) -> str:
        copies = {c["copy"]: c for c in self.conflicts}
        lines = [self.message]
        if self.sent:
            lines.append("Sent: " + ", ".join(
                f"{f} (conflict copy of {copies[f]['file']})" if f in copies else f
                for f in self.sent))
        if self.removed:
            lines.append("Removed: " + ", ".join(self.removed))
        if self.earlier:
            n = len(self.earlier)
            lines.append(f"Also sent {n} commit{'s' if n != 1 else ''} that waited since an "
                         f"earlier sync: " + "; ".join(self.earlier))
        if self.received:
            lines.append("Received: " + ", ".join(self.received))
        if self.removed_by_others:
            lines.append("Removed by others: " + ", ".join(self.removed_by_others))
        if self.waiting:
            n = len(self.waiting)
            lines.append(f"Waiting here ({n} commit{'s' if n != 1 else ''}, sent by the next "
                         "sync): " + "; ".join(self.waiting))
        for c in self.conflicts:
            lines.append(
                f"conflict: {c['file']} was changed both here and by someone else. Both "
                f"versions are kept: {c['file']} holds the version already shared, "
                f"{c['copy']} holds {c['author']}'s. Merge them into {c['file']}, delete "
                f"{c['copy']}, then run `jupyter-memory team sync` again."
            )
        for k in self.kept:
            if k["kept_side"] == "theirs":
                lines.append(
                    f"kept: {k['file']}: it was removed here, but {k['by']} changed it "
                    "meanwhile, so their version stays. If it should go, run `jupyter-memory "
                    f"forget {k['file']}` and sync again.")
            else:
                lines.append(
                    f"kept: {k['file']}: {k['by']} removed it, but it was changed here, so "
                    "your version stays and was sent.")
        for c in self.contested:
            lines.append(
                f"index: both sides changed the line of {c['file']} in MEMORY.md; the newer "
                f"edit ({c['by']}'s) was kept: {c['kept']}  (not kept: {c['dropped']})"
            )
        lines += [f"index: {note}" for note in self.index_notes]
        for h in self.held_back:
            lines.append(f"held back: {h['file']}: {h['reason']}. It stays on disk, out of "
                         "the team index and recall, until someone fixes it.")
        for refused in self.not_sent:
            lines.append(f"not sent: {refused['file']}: {refused['reason']}. Fix or remove it "
                         "(a 'user' memory belongs in your private memory), then sync again.")
        if self.identity:
            lines.append(
                f"identity: git has no name or email for you, so the commits were made as "
                f"{self.identity}. Set your own with `git config --global user.name NAME` "
                "and `git config --global user.email EMAIL`.")
        return "\n".join(line for line in lines if line)


# --------------------------------------------------------------------------- helpers


@dataclass
class _Where:
    """The team folder inside its repository."""

    git: Git
    folder: Path
    spec: str
    prefix: str

    def shown(self, path: str) -> str:
        """A repository path as people see it (``team/x.md``)."""
        rel = path[len(self.prefix):] if self.prefix and path.startswith(self.prefix) else path
        return TEAM_PREFIX + rel

    def rel(self, path: str) -> str:
        return path[len(self.prefix):] if self.prefix and path.startswith(self.prefix) else path

    @property
    def index_path(self) -> str:
        return self.prefix + INDEX_NAME


def _shown_file(rel: str) -> bool:
    """Whether a change to ``rel`` (relative to the team folder) is worth naming."""
    return rel != INDEX_NAME and not any(p.startswith(".") for p in PurePosixPath(rel).parts)


def _changes(where: _Where, old: str, new: str) -> list[tuple[str, str]]:
    """(A/M/D, path) between two revisions, under the team folder."""
    out = where.git.run("diff", "--name-status", "-z", "--no-renames", old, new, "--",
                        where.spec).stdout.split("\0")
    return [(out[i][:1], out[i + 1]) for i in range(0, len(out) - 1, 2)]


def _message(where: _Where, changes: Sequence[tuple[str, str]], who: str) -> tuple[str, str]:
    """A commit's subject and body, naming what changed (``add x.md; update y.md``)."""
    words = {"A": "add", "M": "update", "D": "remove"}
    parts = []
    for code, path in sorted(changes, key=lambda c: c[1]):
        rel = where.rel(path)
        if not _shown_file(rel):
            continue
        if CONFLICT_MARK in PurePosixPath(rel).name and code == "A":
            parts.append(f"keep {rel} (a conflict copy)")
        else:
            parts.append(f"{words.get(code, 'update')} {rel}")
    if not parts:
        parts = ["update the index" if any(where.rel(p) == INDEX_NAME for _, p in changes)
                 else "update the folder's settings"]
    subject = "team memory: " + "; ".join(parts[:8])
    if len(parts) > 8:
        subject += f"; and {len(parts) - 8} more"
    return subject, f"Written by {who} with jupyter-memory."


def _check_outgoing(where: _Where, report: SyncReport) -> list[tuple[str, str]]:
    """The folder's uncommitted changes that may be sent; the others go to
    ``report.not_sent`` with the reason."""
    ok = []
    for code, path in uncommitted(where.git, where.spec):
        rel = where.rel(path)
        parts = PurePosixPath(rel).parts
        if any(p.startswith(".") for p in parts) and rel not in _OWN_FILES:
            continue  # the store's own hidden files (git ignores them too)
        full = where.git.cwd / path
        if not full.is_symlink() and not full.exists():
            ok.append(("D", path))
            continue
        if full.is_symlink():
            reasons = ["it is a symbolic link; team sync never sends a link (it could expose "
                       "whatever file it points to)"]
        else:
            try:
                text = Root.declare("team", where.folder).read(
                    full, follow=False).decode("utf-8", errors="replace")
            except InvalidPath as exc:
                reasons = [f"it cannot be read ({exc})"]
            except OSError as exc:
                reasons = [f"it cannot be read ({exc.strerror})"]
            else:
                reasons = text_problems(text, rel)
        if reasons:
            report.not_sent.append({"file": where.shown(path), "reason": "; ".join(reasons)})
            continue
        ok.append(("A" if code in ("??", "A") else "M", path))
    return ok


def _commit(where: _Where, changes: Sequence[tuple[str, str]], who: str,
            message: tuple[str, str] | None = None) -> bool:
    """Commit exactly ``changes`` (in an index of the sync's own); True when it did.

    A path the repository records as a link is committed as a regular file."""
    if not changes:
        return False
    paths = [path for _, path in changes]
    subject, body = message or _message(where, changes, who)
    with where.git.own_index() as git:
        links = links_in(git, "HEAD", paths)
        for path in links:
            git.run("rm", "--cached", "--quiet", "--", path)
        git.run("add", "--all", "--pathspec-from-file=-", "--pathspec-file-nul",
                stdin="\0".join(paths))
        if not git.run("diff", "--cached", "--quiet", check=False).returncode:
            return False
        git.run("commit", "--quiet", "--no-verify", "-m", subject, "-m", body)
    # the person's own index now agrees with the new commit for these paths
    where.git.run("reset", "--quiet", "--pathspec-from-file=-", "--pathspec-file-nul",
                  check=False, stdin="\0".join(paths))
    return True


def _settle_index(where: _Where, text: str, report: SyncReport) -> None:
    """Write ``text`` in step with the files here (the merge ``repair --scope team`` runs)."""
    folder = where.folder
    shown, hidden = folder_memories(folder, scan(folder, limit=None, cache=ScanCache()))
    merge = reconcile(text, shown, hidden=hidden, exists=exists_in(folder))
    note = ("removed the heading and preamble older versions wrote at the top of the team "
            "index (once; the request gives the index a heading of its own)")
    if merge.legacy_removed and note not in report.index_notes:
        report.index_notes.append(note)
    path = folder / INDEX_NAME
    on_disk = index_text(folder) if path.exists() and not path.is_symlink() else None
    if merge.text != on_disk and (merge.text or on_disk is not None or path.is_symlink()):
        write_index(folder, merge.text)


def _record_links(where: _Where) -> None:
    """Remember which paths the repository holds as links (git checks them out as plain
    files, so only git can tell): they stay out of the index and recall."""
    links = {where.rel(p): t for p, t in links_in(where.git, "HEAD", [where.spec]).items()}
    links.pop(INDEX_NAME, None)  # the sync writes the index afresh as a regular file
    if links or read_state(where.folder).get("links"):
        write_state(where.folder, links=links)


def _unsent(git: Git, tracking: str | None) -> list[str]:
    """Subjects of the commits here that the remote does not have yet, oldest first."""
    if not git.has("HEAD"):
        return []
    rev = [f"{tracking}..HEAD"] if tracking and git.has(tracking) else ["HEAD", "--not",
                                                                          "--remotes"]
    out = git.run("log", "--reverse", "--format=%s", *rev, check=False).stdout
    return [line.removeprefix("team memory: ") for line in out.splitlines() if line]


def _reason(done: subprocess.CompletedProcess[str]) -> str:
    """git's own words for a failure, whole."""
    lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    return " ".join(lines) or f"git exited with status {done.returncode}"


def _show(git: Git, rev: str | None, path: str) -> str:
    if rev is None:
        return ""
    done = git.run("show", f"{rev}:{path}", check=False)
    return done.stdout if done.returncode == 0 else ""


def _when(git: Git, rev: str, path: str) -> tuple[int, str]:
    """When ``path`` last changed on ``rev``, and who changed it."""
    out = git.run("log", "-1", "--format=%ct %an", rev, "--", path, check=False).stdout.strip()
    stamp, _, who = out.partition(" ")
    return (int(stamp) if stamp.isdigit() else 0), who


# --------------------------------------------------------------------------- conflicts


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


def _write_plain(path: Path, text: str) -> None:
    """A file the rebase left in the repository, written afresh: never through a link
    (one in its place is removed first)."""
    repo = Root.declare("team", path.parent)
    if os.path.islink(path):
        repo.remove(path.name)
    repo.write(path.name, text)


def _resolve_conflicts(where: _Where, who: str, report: SyncReport) -> None:
    """Settle every conflicted path of the current rebase step, losing nothing, and commit
    the step with a message that says what it now holds. Conflict copies go to
    ``report.conflicts``, a memory changed on one side and removed on the other (kept) to
    ``report.kept``."""
    git = where.git
    paths = git.out("diff", "--name-only", "--diff-filter=U").splitlines()
    writer = git.run("log", "-1", "--format=%an", "REBASE_HEAD", check=False).stdout.strip() or who
    for path in paths:
        if where.prefix and not path.startswith(where.prefix):
            git.run("rebase", "--abort", check=False)
            raise TeamError(
                f"The sync met a conflict in {path}, outside the team folder; it was undone. "
                "Resolve it with git in the project's repository, then sync again."
            )
        shared, mine = _stage(git, 2, path), _stage(git, 3, path)
        target = git.cwd / path
        if PurePosixPath(path).name == INDEX_NAME or not path.endswith(".md"):
            # the index is merged line by line once the rebase is done
            _write_plain(target, shared if shared is not None else (mine or ""))
            git.run("add", "--", path)
            continue
        if shared is None or mine is None:  # edited on one side, deleted on the other
            _write_plain(target, shared if shared is not None else (mine or ""))
            git.run("add", "--", path)
            other = git.run("log", "-1", "--format=%an", "HEAD", "--", path,
                            check=False).stdout.strip() or "a teammate"
            report.kept.append({"file": where.shown(path), "by": other,
                                "kept_side": "theirs" if shared is not None else "mine"})
            continue
        _write_plain(target, shared)
        copy = _copy_name(git.cwd, path, writer)
        doc = frontmatter.parse(mine)
        text = mine
        if doc.has_frontmatter:  # the copy names who wrote its text
            label = str(doc.get("name") or PurePosixPath(path).stem)
            text = frontmatter.update(mine, {"name": f"{label} (conflicting version by {writer})",
                                             AUTHOR_FIELD: writer})
        _write_plain(git.cwd / copy, text)
        git.run("add", "--", path, copy)
        report.conflicts.append({"file": where.shown(path), "copy": where.shown(copy),
                                 "author": writer})
    staged = _changes_staged(where)
    if staged:
        subject, body = _message(where, staged, writer)
        git.run("commit", "--quiet", "--no-verify", "-m", subject, "-m", body)


def _changes_staged(where: _Where) -> list[tuple[str, str]]:
    out = where.git.run("diff", "--cached", "--name-status", "-z", "--no-renames", "HEAD",
                        "--", where.spec).stdout.split("\0")
    return [(out[i][:1], out[i + 1]) for i in range(0, len(out) - 1, 2)]


# --------------------------------------------------------------------------- sync


def sync(folder: Path, env: Mapping[str, str] | None = None, *, lock_timeout: float = 120.0) -> SyncReport:
    """Check and commit the team folder's changes, pull with rebase, merge the index, push.

    Holds the team folder's lock throughout, so no memory is written half-way through a
    rebase. Offline, the commit stays local and the report says the sync waits; the next
    sync pushes it and says so. See :class:`SyncReport` for what is reported.
    """
    folder = Path(folder)
    repo = git_toplevel(folder) if folder.is_dir() else None
    if repo is None:
        raise TeamError(
            f"The team folder {folder} is not in a git repository, so there is nothing to "
            "sync with. Run `jupyter-memory team clone URL` with the address of the team's "
            "shared repository (an empty bare repository works), or keep the team folder "
            "inside the project's repository. (A folder everyone writes on a shared disk "
            "needs no sync at all.)"
        )
    git = Git(repo, env)
    spec = path_in_repo(repo, folder)
    where = _Where(git, folder, spec, "" if spec == "." else spec.rstrip("/") + "/")
    who = author(folder, env)
    report = SyncReport("synced")
    with Root.declare("team", folder).lock(timeout=lock_timeout):
        if git.assumed and read_state(folder).get("identity") != git.assumed:
            report.identity = git.assumed
            write_state(folder, identity=git.assumed)
        _ensure_git_files(folder)
        _record_links(where)
        remote, branch = upstream(git)
        tracking = f"{remote}/{branch}" if remote and branch else None
        earlier = _unsent(git, tracking)
        _settle_index(where, index_text(folder), report)
        outgoing = _check_outgoing(where, report)
        _commit(where, outgoing, who)
        if remote is None or branch is None or tracking is None:
            report.state = "local"
            report.waiting = _unsent(git, None)
            report.message = ("Committed locally; this repository has no remote to share with. "
                              "Add one (git remote add origin URL) and sync again.")
            return report
        for _attempt in range(3):
            fetched = git.run("fetch", "--quiet", remote, check=False)
            if fetched.returncode != 0:
                return _offline(report, git, tracking, f"could not reach {remote}: "
                                + _reason(fetched))
            if git.has(tracking):
                _integrate(where, tracking, who, report)
            base = tracking if git.has(tracking) else EMPTY_TREE
            going = _changes(where, base, "HEAD") if git.has("HEAD") else []
            pushed = git.run("push", "--quiet", remote, f"HEAD:{branch}", check=False)
            if pushed.returncode == 0:
                git.run("branch", "--quiet", f"--set-upstream-to={tracking}", check=False)
                report.sent = sorted(where.shown(p) for c, p in going
                                     if c != "D" and _shown_file(where.rel(p)))
                report.removed = sorted(where.shown(p) for c, p in going
                                        if c == "D" and _shown_file(where.rel(p)))
                report.earlier = earlier
                break
            if "rejected" not in pushed.stderr and "fetch first" not in pushed.stderr:
                return _offline(report, git, tracking, f"could not push to {remote}: "
                                + _reason(pushed))
        else:
            raise TeamError("Someone else kept pushing while this sync ran; run sync again.")
    n = len(report.conflicts)
    report.message = (f"Team memory synced with {remote}/{branch}"
                      + (f"; {n} conflict{'s' if n != 1 else ''} kept both versions." if n
                         else "."))
    return report


def _offline(report: SyncReport, git: Git, tracking: str, reason: str) -> SyncReport:
    _log.warning("team sync in %s waits: %s", git.cwd, reason)
    report.state = "offline"
    report.sent, report.removed = [], []
    report.waiting = _unsent(git, tracking)
    waiting = len(report.waiting)
    report.message = (f"Sync waits: {reason.rstrip('.')}. Nothing was sent"
                      + (f"; {waiting} commit{'s wait' if waiting != 1 else ' waits'} here and "
                         "will go out with the next sync." if waiting else "."))
    return report


def _integrate(where: _Where, tracking: str, who: str, report: SyncReport) -> None:
    """Rebase onto ``tracking``, keep both versions of a memory changed on both sides,
    merge the index, check what arrived and commit the merged index."""
    git = where.git
    had_head = git.has("HEAD")
    base = git.run("merge-base", "HEAD", tracking, check=False).stdout.strip() if had_head else ""
    index_path = where.index_path
    mine = _show(git, "HEAD", index_path) if had_head else ""
    theirs = _show(git, tracking, index_path)
    base_text = _show(git, base or None, index_path)
    mine_when, _ = _when(git, "HEAD", index_path) if had_head else (0, who)
    theirs_when, theirs_who = _when(git, tracking, index_path)
    incoming = _changes(where, base or EMPTY_TREE, tracking)
    report.received = sorted(set(report.received) | {
        where.shown(p) for c, p in incoming if c != "D" and _shown_file(where.rel(p))})
    report.removed_by_others = sorted(set(report.removed_by_others) | {
        where.shown(p) for c, p in incoming if c == "D" and _shown_file(where.rel(p))})
    arrived_links = links_in(git, tracking, [where.spec])
    if index_path in arrived_links:  # a link's text is no index: merge as if unchanged
        theirs = base_text

    if had_head:
        step = git.run("rebase", "--autostash", tracking, check=False)
        guard = 0
        while step.returncode != 0 and _in_rebase(git) and guard < 1000:
            guard += 1
            _resolve_conflicts(where, who, report)
            step = git.run("rebase", "--continue", check=False)
            if step.returncode != 0 and "nothing to commit" in (step.stdout + step.stderr):
                step = git.run("rebase", "--skip", check=False)
        if _in_rebase(git):
            git.run("rebase", "--abort", check=False)
            raise TeamError(f"The sync could not finish a rebase: {_reason(step)}. Nothing "
                            "was lost; your commits are as before the sync.")
        back = {k["file"] for k in report.kept if k["kept_side"] == "mine"}
        report.removed_by_others = [f for f in report.removed_by_others if f not in back]
    else:  # a clone of an empty repository that has received its first commits
        git.run("reset", "--quiet", "--hard", tracking)

    if is_legacy(theirs) and not is_legacy(base_text):
        report.index_notes.append(
            f"{theirs_who or 'a teammate'}'s older version of jupyter-memory rewrote the "
            "whole team index (names for titles, descriptions for hooks, a heading of its "
            "own); only the files it added and removed were taken, and the lines written "
            "here were kept. Ask them to upgrade.")
        theirs = undo_legacy_rewrite(base_text, theirs)
    merged, contests = merge3(base_text, mine, theirs, mine_newer=mine_when > theirs_when)
    for contest in contests:
        report.contested.append({**contest.to_json(), "file": TEAM_PREFIX + contest.file,
                                 "by": who if contest.kept_side == "mine" else
                                 (theirs_who or "a teammate")})

    _record_links(where)
    _settle_index(where, merged, report)
    hidden = held_back(where.folder)
    for path, target in sorted(arrived_links.items()):
        if where.rel(path) == INDEX_NAME:
            report.held_back.append({"file": where.shown(path), "reason": (
                f"it arrived as a symbolic link (to {target}); it was not followed, and the "
                "index was written afresh as a regular file")})
    for shown in report.received:
        rel = shown[len(TEAM_PREFIX):]
        if rel in hidden and not any(h["file"] == shown for h in report.held_back):
            report.held_back.append({"file": shown, "reason": "; ".join(hidden[rel])})
    index_change = [c for c in uncommitted(git, where.spec) if where.rel(c[1]) == INDEX_NAME]
    if index_change:
        problems = text_problems(index_text(where.folder), INDEX_NAME)
        if problems:
            report.not_sent.append({"file": TEAM_PREFIX + INDEX_NAME,
                                    "reason": "; ".join(problems)})
        else:
            _commit(where, [("M", index_change[0][1])], who, (
                "team memory: merge the index", f"Written by {who} with jupyter-memory."))
