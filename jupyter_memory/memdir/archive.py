"""``%memory export`` / ``import``: a memdir as a zip file, for sharing a demo.

An export holds every visible file of the memdir (topic files, ``MEMORY.md``, anything
else a person put there; names starting with ``.`` — the lock, the pending area — are
left out) and a small manifest, ``.jupyter-memory-export.json``, with each file's size,
SHA-256 and modification time in nanoseconds. Importing into an empty memdir therefore
gives back every file byte for byte, with its age intact (recall shows ages, so a demo
keeps saying "47 days old").

Importing into a memdir that already has memories merges: new files are added, identical
ones skipped, different ones kept as they are (reported) unless ``overwrite``; pointer
lines of added files are merged into the existing index. Files are written unchanged —
an import does not stamp ``origin`` — so provenance stays what the exporting side
recorded. An archive with an unsafe entry (absolute path, ``..``, a link, a hidden name,
too many or too large files) is refused as a whole before anything is written.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import io
import json
import os
import stat
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from jupyter_memory.errors import InvalidPath, JupyterMemoryError, SecretRefused
from jupyter_memory.memdir.fsutil import refuse_symlink
from jupyter_memory.memdir.gateway import Root, person_root
from jupyter_memory.memdir.guard import check_no_secrets
from jupyter_memory.memdir.index import INDEX_NAME, parse_index, upsert_entry
from jupyter_memory.memdir.store import MemoryStore, check_file_name, masked_file_name

__all__ = [
    "FORMAT",
    "MANIFEST_NAME",
    "MAX_FILES",
    "MAX_TOTAL_BYTES",
    "ArchiveError",
    "ExportReport",
    "ImportReport",
    "export_memdir",
    "import_archive",
    "memdir_files",
]

MANIFEST_NAME = ".jupyter-memory-export.json"
FORMAT = "jupyter-memory-export/1"
MAX_FILES = 10_000
"""Most files an archive may hold."""
MAX_TOTAL_BYTES = 100 * 1024 * 1024
"""Most bytes an archive may unpack to (a guard against zip bombs)."""

_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


class ArchiveError(JupyterMemoryError, ValueError):
    """A file that is not a usable memory export."""


@dataclass(frozen=True)
class ExportReport:
    path: Path
    files: int
    bytes: int

    def summary(self) -> str:
        return f"Exported {self.files} files ({self.bytes:,} bytes) to {self.path}."

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "files": self.files, "bytes": self.bytes}


@dataclass
class ImportReport:
    added: list[str] = field(default_factory=list)
    identical: list[str] = field(default_factory=list)
    overwritten: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    index: str = "unchanged"  # unchanged | written | merged

    def summary(self) -> str:
        lines = [
            f"Imported {len(self.added)} new file(s), {len(self.overwritten)} overwritten, "
            f"{len(self.identical)} already identical; index {self.index}."
        ]
        if self.conflicts:
            lines.append(
                f"Kept {len(self.conflicts)} existing file(s) that differ from the archive: "
                f"{', '.join(self.conflicts)}. Import again with --overwrite to replace them."
            )
        lines += [f"Refused {name}: {reason}" for name, reason in self.refused]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"added": self.added, "identical": self.identical,
                "overwritten": self.overwritten, "conflicts": self.conflicts,
                "refused": [{"file": n, "reason": r} for n, r in self.refused],
                "index": self.index}


def memdir_files(memdir: Path | Root) -> list[tuple[str, Path]]:
    """Visible regular files under ``memdir`` (no hidden part, no symlinks), sorted."""
    root = memdir if isinstance(memdir, Root) else Root.declare("memdir", memdir)
    found: list[tuple[str, Path]] = []
    if not root.is_dir(""):
        return found
    for folder, dirs, files in root.walk():
        dirs[:] = [d for d in dirs if not d.startswith(".")
                   and not os.path.islink(os.path.join(folder, d))]
        for name in files:
            path = Path(folder) / name
            if name.startswith(".") or path.is_symlink() or not path.is_file():
                continue
            found.append((path.relative_to(root.real).as_posix(), path))
    return sorted(found)


def _zip_time(mtime: float) -> tuple[int, int, int, int, int, int]:
    moment = time.localtime(max(mtime, 315532800))  # zip cannot store dates before 1980
    stamp = (moment.tm_year, moment.tm_mon, moment.tm_mday, moment.tm_hour, moment.tm_min,
             moment.tm_sec - moment.tm_sec % 2)
    return max(stamp, _ZIP_EPOCH)


def export_memdir(memdir: Path, dest: Path, *, overwrite: bool = False) -> ExportReport:
    """Write a zip of ``memdir`` to ``dest`` (atomically); refuse to replace a file unless asked."""
    memdir, dest = Path(memdir), Path(dest)
    if not memdir.is_dir():
        raise ArchiveError(f"There is no memory folder at {memdir} to export.")
    if dest.exists() and not overwrite:
        raise ArchiveError(f"{dest} already exists. Choose another name or pass -f to replace it.")
    if dest.suffix.lower() != ".zip":
        raise ArchiveError(f"{dest} does not end in .zip; name the export file *.zip.")
    root = Root.declare("memdir", memdir)
    files = memdir_files(root)
    entries = []
    total = 0
    with zipfile.ZipFile(buffer := io.BytesIO(), "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for rel, path in files:
            data = root.read(path)
            st = path.stat()
            info = zipfile.ZipInfo(rel, date_time=_zip_time(st.st_mtime))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            archive.writestr(info, data)
            total += len(data)
            entries.append({"file": rel, "bytes": len(data), "mtime_ns": st.st_mtime_ns,
                            "sha256": hashlib.sha256(data).hexdigest()})
        manifest = {"format": FORMAT, "source": str(memdir),
                    "exported": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                    "files": entries}
        info = zipfile.ZipInfo(MANIFEST_NAME, date_time=_zip_time(time.time()))
        info.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(info, json.dumps(manifest, ensure_ascii=False, indent=2) + "\n")
    person_root(dest).write(dest, buffer.getvalue())  # the file the person named
    return ExportReport(dest, len(files), total)


def _check_name(name: str) -> str | None:
    """Why an archive member name is unsafe, or None when it is fine."""
    if not name or "\x00" in name or "\\" in name:
        return "contains a NUL byte or a backslash"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "is an absolute path"
    parts = PurePosixPath(name).parts
    if ".." in parts:
        return "contains '..'"
    if any(part.startswith(".") for part in parts):
        return "has a hidden name (starting with '.')"
    return None


#: What reading a damaged or unsupported zip member can raise (bad CRC, truncated data,
#: corrupt deflate stream, encryption, an unknown compression method).
_DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError,
            NotImplementedError, ValueError)


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path) -> bytes:
    try:
        return archive.read(info)
    except _DAMAGED as exc:
        raise ArchiveError(
            f"{path} is damaged: its entry {info.filename!r} cannot be read ({exc}). Nothing "
            "was imported; export the memories again, or copy the file again if it was cut "
            "short in transfer."
        ) from None


def _check_clashes(path: Path, names: list[str]) -> None:
    """Refuse an archive whose entries cannot all exist at once (``a.md`` and ``a.md/b.md``)."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ArchiveError(f"{path} holds {name!r} twice; nothing was imported.")
        seen.add(name)
    for name in names:
        parts = PurePosixPath(name).parts
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder in seen:
                raise ArchiveError(
                    f"{path} holds both the file {folder!r} and {name!r} inside a folder of the "
                    "same name, which cannot both exist; nothing was imported. Rename one of "
                    "them in the memory folder it came from and export again."
                )


def _read_archive(path: Path) -> tuple[dict[str, bytes], dict[str, Any]]:
    """Every member's bytes, checked, and the manifest (empty when there is none)."""
    with contextlib.ExitStack() as opened:
        try:  # the archive the person named
            archive = opened.enter_context(person_root(path).open_zip(path))
        except (OSError, zipfile.BadZipFile, zlib.error, EOFError, ValueError) as exc:
            raise ArchiveError(
                f"{path} is not a readable zip file ({exc}). Check that it is a memory export "
                "(made with `jupyter-memory export` or `%memory export`) and was copied whole."
            ) from None
        infos = [i for i in archive.infolist() if not i.is_dir()]
        _check_clashes(path, [i.filename.rstrip("/") for i in infos])
        if len(infos) > MAX_FILES:
            raise ArchiveError(f"{path} holds {len(infos):,} files, more than {MAX_FILES:,}.")
        if sum(i.file_size for i in infos) > MAX_TOTAL_BYTES:
            raise ArchiveError(f"{path} unpacks to more than {MAX_TOTAL_BYTES:,} bytes.")
        manifest: dict[str, Any] = {}
        members: dict[str, bytes] = {}
        for info in infos:
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise ArchiveError(f"{path} contains a symbolic link ({info.filename}); refused.")
            if info.filename == MANIFEST_NAME:
                try:
                    manifest = json.loads(_read_member(archive, info, path))
                except (ValueError, RecursionError):
                    raise ArchiveError(f"The manifest of {path} is not valid JSON.") from None
                continue
            reason = _check_name(info.filename)
            if reason:
                raise ArchiveError(f"{path} has an entry that {reason}: {info.filename!r}; "
                                   "nothing was imported.")
            data = _read_member(archive, info, path)
            if len(data) != info.file_size:
                raise ArchiveError(f"{info.filename} in {path} is damaged (size mismatch).")
            members[info.filename] = data
    return members, manifest


def _check_manifest(members: dict[str, bytes], manifest: dict[str, Any]) -> dict[str, int]:
    """Verify checksums against the manifest; return the recorded mtimes (ns) by file."""
    mtimes: dict[str, int] = {}
    entries = manifest.get("files") if isinstance(manifest, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or entry.get("file") not in members:
            continue
        name = entry["file"]
        digest = hashlib.sha256(members[name]).hexdigest()
        if entry.get("sha256") not in (None, digest):
            raise ArchiveError(f"{name} does not match the checksum in the export manifest; "
                               "the archive is damaged or was edited. Nothing was imported.")
        if isinstance(entry.get("mtime_ns"), int):
            mtimes[name] = entry["mtime_ns"]
    return mtimes


def _target(store: MemoryStore, rel: str) -> Path:
    if rel.endswith(".md"):
        return store.resolve(rel, allow_index=True)
    path = store.memdir / rel
    root = os.path.realpath(store.memdir)
    real = os.path.realpath(path)
    if not (real == root or real.startswith(root.rstrip(os.sep) + os.sep)):
        raise InvalidPath(f"{rel} would land outside the memory folder (through a link).")
    return path


def _check_target(store: MemoryStore, rel: str, path: Path) -> None:
    """Refuse, before anything is written, a target that cannot be written as a file.

    A folder where the file goes, a file where one of its folders goes, or a symbolic
    link anywhere below the memdir on the way would stop an import half way through or
    send it outside the memdir.
    """
    refuse_symlink(path, f"{rel} in the memory folder")
    if path.is_dir():
        raise ArchiveError(f"{rel} is a folder in the memory folder, so the archive's file of "
                           "that name cannot be imported; nothing was imported.")
    probe = path.parent
    while probe != store.memdir and store.memdir in probe.parents:
        refuse_symlink(probe, f"the folder {probe.relative_to(store.memdir).as_posix()}")
        if probe.exists() and not probe.is_dir():
            raise ArchiveError(
                f"{probe.relative_to(store.memdir).as_posix()} is a file in the memory folder, "
                f"so the archive's {rel} cannot go inside it; nothing was imported."
            )
        probe = probe.parent


def _write(store: MemoryStore, path: Path, data: bytes, mtime_ns: int | None) -> None:
    store.root.write(path, data)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))


def import_archive(store: MemoryStore, archive: Path, *, overwrite: bool = False) -> ImportReport:
    """Unpack an export into ``store``'s memdir, under its lock; see the module doc."""
    members, manifest = _read_archive(Path(archive))
    mtimes = _check_manifest(members, manifest)
    report = ImportReport()
    index_data = members.pop(INDEX_NAME, None)
    added: list[str] = []
    with store.writing():
        refuse_symlink(store.index_path, f"The memory index {INDEX_NAME}")
        targets: dict[str, Path] = {}
        for rel in sorted(members):  # every check first: a refusal leaves nothing half done
            shown = masked_file_name(rel)  # a name holding a secret is never echoed
            try:
                path = _target(store, rel)
                check_file_name(rel)
                check_no_secrets(members[rel].decode("utf-8", errors="replace"), shown)
            except (InvalidPath, SecretRefused) as exc:
                report.refused.append((shown, str(exc)))
                continue
            _check_target(store, rel, path)
            targets[rel] = path
        for rel, path in targets.items():
            data = members[rel]
            current = store.root.read(path) if path.is_file() else None
            if current is None:
                _write(store, path, data, mtimes.get(rel))
                report.added.append(rel)
                added.append(rel)
            elif current == data:
                report.identical.append(rel)
            elif overwrite:
                _write(store, path, data, mtimes.get(rel))
                report.overwritten.append(rel)
                added.append(rel)
            else:
                report.conflicts.append(rel)
        if index_data is not None:
            report.index = _import_index(store, index_data, added, mtimes.get(INDEX_NAME))
    return report


def _import_index(store: MemoryStore, data: bytes, added: list[str], mtime_ns: int | None) -> str:
    """Write the archive's index when there is none, else merge pointers of added files."""
    try:
        check_no_secrets(data.decode("utf-8", errors="replace"), INDEX_NAME)
    except SecretRefused:
        return "unchanged (the archive's index looks like it holds a credential)"
    path = store.index_path
    if not path.exists():
        _write(store, path, data, mtime_ns)
        return "written"
    current = store.root.read(INDEX_NAME, follow=False)
    if current == data:
        return "unchanged"
    incoming = parse_index(data.decode("utf-8", errors="replace"))
    before = store.read_index_for_edit()
    text = before
    for rel in added:
        entry = incoming.find(rel)
        if entry is not None:
            text = upsert_entry(text, rel, entry.title, entry.hook)
    if text == before:
        return "unchanged"
    store.write_index(text)
    return "merged"
