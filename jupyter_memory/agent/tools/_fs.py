"""Path rules and text-file helpers shared by the file tools.

Every path a tool receives is normalised (``~`` expanded, relative to the project root,
``..`` collapsed) and resolved through the gateway (``memdir/gateway.py``) against the
session's roots, so a ``../`` or a symlink cannot reach outside the project and the memdir,
and a write never goes through a link.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from jupyter_memory.agent.tools.base import ToolContext
from jupyter_memory.errors import InvalidPath, PathRefused
from jupyter_memory.memdir.gateway import Root

SNIFF_BYTES = 8192
"""How much of a file is examined to decide whether it is binary."""

BINARY_SUFFIXES = frozenset(
    {
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".tif",
        ".tiff",
        ".webp",
        ".ico",
        ".pdf",
        ".zip",
        ".gz",
        ".bz2",
        ".xz",
        ".zst",
        ".tar",
        ".7z",
        ".rar",
        ".whl",
        ".egg",
        ".so",
        ".dylib",
        ".dll",
        ".exe",
        ".bin",
        ".o",
        ".a",
        ".pyc",
        ".pyo",
        ".class",
        ".jar",
        ".parquet",
        ".feather",
        ".arrow",
        ".orc",
        ".avro",
        ".pkl",
        ".pickle",
        ".joblib",
        ".npy",
        ".npz",
        ".h5",
        ".hdf5",
        ".nc",
        ".mat",
        ".sav",
        ".dta",
        ".sas7bdat",
        ".xls",
        ".xlsx",
        ".xlsm",
        ".doc",
        ".docx",
        ".ppt",
        ".pptx",
        ".odt",
        ".ods",
        ".sqlite",
        ".sqlite3",
        ".db",
        ".duckdb",
        ".mp3",
        ".mp4",
        ".wav",
        ".flac",
        ".ogg",
        ".avi",
        ".mov",
        ".mkv",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".pt",
        ".pth",
        ".onnx",
        ".safetensors",
        ".ckpt",
    }
)
"""Suffixes never read as text: images, archives, columnar data, pickles, models."""

SKIP_DIRS = frozenset({".git", "node_modules", ".ipynb_checkpoints", ".venv", "__pycache__"})
"""Folders Grep and Glob never descend into: tool state, not the person's work."""


@dataclass(frozen=True)
class Location:
    """A checked path: where it is, which root holds it, and its memdir name.

    ``memdir_file`` is the memdir-relative posix name (``""`` for the memdir itself,
    ``team/…`` in the team folder) when the path is in the memory folder, else ``None``.
    """

    path: Path
    memdir_file: str | None
    root: Root

    @property
    def in_memdir(self) -> bool:
        return self.memdir_file is not None


_MEMORY_ROOTS = ("memdir", "agent")


def resolve(ctx: ToolContext, raw: object, *, param: str = "file_path",
            write: bool = False) -> Location:
    """Normalise a path given by the model and resolve it through the gateway.

    Relative paths are taken from the project root; ``~`` is the home folder. The path
    must lie in one of the tool context's roots (the project, the memdir, the team
    folder); a read may follow a link only while it stays in the same root, and a write
    (``write=True``) never goes through a link. Raises ``InvalidPath`` naming the path,
    the folders it had to be in and why.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidPath(f"{param} must be a non-empty path, absolute or relative to the project.")
    if "\x00" in raw:
        raise InvalidPath(f"{param} contains a NUL byte, which no file name can hold.")
    given = Path(os.path.expanduser(raw.strip()))
    lexical = Path(os.path.abspath(given if given.is_absolute() else ctx.project_root / given))
    try:
        root, path = ctx.roots.locate(lexical, write=write)
    except PathRefused as exc:
        raise InvalidPath(f"{raw}: {exc} The file tools only work inside "
                          f"{ctx.roots.describe()}; use a path that stays inside them.") from None
    holder = ctx.roots.holding(path) or root
    rel = holder.relative(path)
    if rel is None or holder.kind not in (*_MEMORY_ROOTS, "team") or ctx.memdir is None:
        return Location(path, None, root)
    name = rel.replace(os.sep, "/")
    if holder.kind == "team":
        return Location(path, "team" if not name else f"team/{name}", root)
    return Location(path, name, root)


def looks_binary(loc: Location) -> bool:
    """Whether a file should not be shown as text (known suffix, or NUL bytes early on)."""
    if loc.path.suffix.lower() in BINARY_SUFFIXES:
        return True
    return b"\x00" in loc.root.read(loc.path, limit=SNIFF_BYTES)


def binary_message(path: Path) -> str:
    return (
        f"{path} is a binary file ({path.suffix or 'no suffix'}); the file tools only handle "
        "text. To look at data files, load them in the kernel (RunPython) or inspect a "
        "variable that already holds them (InspectVariable)."
    )


def read_text(loc: Location) -> str:
    """The whole text of a file for editing: UTF-8 (a BOM is dropped), line endings kept.

    Refuses files that are not valid UTF-8, because rewriting them would corrupt bytes
    the model never saw.
    """
    path = loc.path
    data = loc.root.read(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidPath(
            f"{path} is not valid UTF-8 (byte {exc.start}); it cannot be edited safely as "
            "text. Convert it to UTF-8 first, or rewrite it whole with Write."
        ) from None
