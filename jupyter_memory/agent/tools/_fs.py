"""Path rules and text-file helpers shared by the file tools.

Every path a tool receives is normalised (``~`` expanded, relative to the project root,
``..`` collapsed, symlinks resolved) before any check, so a ``../`` or a symlink cannot
reach outside the project and the memdir.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from jupyter_memory.agent.tools.base import ToolContext
from jupyter_memory.errors import InvalidPath

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
    """A checked path: its real location and which of the two roots holds it.

    ``memdir_file`` is the memdir-relative posix name (``""`` for the memdir itself) when
    the path is inside the memdir, else ``None``.
    """

    path: Path
    memdir_file: str | None

    @property
    def in_memdir(self) -> bool:
        return self.memdir_file is not None


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def resolve(ctx: ToolContext, raw: object, *, param: str = "file_path") -> Location:
    """Normalise a path given by the model and check it is inside the project or memdir.

    Relative paths are taken from the project root. Raises ``InvalidPath`` with the
    allowed folders named when the path (after following symlinks) leaves them.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidPath(f"{param} must be a non-empty path, absolute or relative to the project.")
    if "\x00" in raw:
        raise InvalidPath(f"{param} contains a NUL byte, which no file name can hold.")
    given = Path(os.path.expanduser(raw.strip()))
    lexical = Path(os.path.abspath(given if given.is_absolute() else ctx.project_root / given))
    real = Path(os.path.realpath(lexical))
    memdir = ctx.memdir
    if memdir is not None and _inside(real, memdir):
        rel = real.relative_to(memdir).as_posix()
        return Location(real, "" if rel == "." else rel)
    if _inside(real, ctx.project_root):
        return Location(real, None)
    allowed = f"the project folder {ctx.project_root}"
    if memdir is not None:
        allowed += f" and the memory directory {memdir}"
    if real != lexical and any(_inside(lexical, root) for root in ctx.roots()):
        raise InvalidPath(
            f"{raw} is reached through a symbolic link that leads to {real}, outside "
            f"{allowed}. Use a path that stays inside them."
        )
    raise InvalidPath(f"{raw} is outside {allowed}; the file tools only work inside them.")


def looks_binary(path: Path) -> bool:
    """Whether ``path`` should not be shown as text (known suffix, or NUL bytes early on)."""
    if path.suffix.lower() in BINARY_SUFFIXES:
        return True
    with open(path, "rb") as handle:
        return b"\x00" in handle.read(SNIFF_BYTES)


def binary_message(path: Path) -> str:
    return (
        f"{path} is a binary file ({path.suffix or 'no suffix'}); the file tools only handle "
        "text. To look at data files, load them in the kernel (RunPython) or inspect a "
        "variable that already holds them (InspectVariable)."
    )


def read_text(path: Path) -> str:
    """The whole text of a file for editing: UTF-8 (a BOM is dropped), line endings kept.

    Refuses files that are not valid UTF-8, because rewriting them would corrupt bytes
    the model never saw.
    """
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidPath(
            f"{path} is not valid UTF-8 (byte {exc.start}); it cannot be edited safely as "
            "text. Convert it to UTF-8 first, or rewrite it whole with Write."
        ) from None
