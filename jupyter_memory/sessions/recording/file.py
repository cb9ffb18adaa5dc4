"""The recording file: its format, where it goes by default, and what it keeps of the
session's start (the conversation, the memdir and the instruction files).

One JSON file holding, for each request the session sent, its digest, the request itself
(large repeated parts shared through a table of blobs) and the response, in order.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from jupyter_memory._version import __version__
from jupyter_memory.context.assemble import digest
from jupyter_memory.errors import InvalidPath, JupyterMemoryError
from jupyter_memory.memdir.clock import now_iso
from jupyter_memory.memdir.fsutil import LOCK_NAME, is_temp_file
from jupyter_memory.memdir.gateway import Root, person_root
from jupyter_memory.sessions.recording.normalise import (
    INSTANT,
    MTIME,
    PLATFORM,
    PYTHON,
    TIMESTAMP,
    TODAY,
    Normaliser,
    jsonable,
)

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session

__all__ = [
    "FORMAT",
    "SNAPSHOT_MAX_BYTES",
    "SUFFIX",
    "VERSION",
    "Recording",
    "RecordingError",
    "ReplayMismatch",
    "default_recording_path",
]

FORMAT = "jupyter-memory/recording"
VERSION = 1
SUFFIX = ".recording.json"

#: Largest memdir file copied into a recording's start snapshot.
SNAPSHOT_MAX_BYTES = 1_000_000


class RecordingError(JupyterMemoryError):
    """A recording that cannot be read, written or replayed."""


class ReplayMismatch(RecordingError):
    """A request made during replay is not in the recording."""


def default_recording_path(notebook: str | os.PathLike[str] | None, cwd: Path) -> Path:
    """``<notebook stem>.recording.json`` beside the notebook, else ``agent.recording.json``."""
    if notebook:
        nb = Path(notebook)
        return nb.with_name(nb.stem + SUFFIX)
    return Path(cwd) / ("agent" + SUFFIX)


def _blob_key(value: Any) -> str:
    raw = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:20]


class Recording:
    """The recording file: exchanges in the order they happened, turns, a start snapshot.

    Requests share their large, repeated parts (system prompt, tool list, each message)
    through a table of blobs, so a long session's file grows with the conversation, not
    with its square. :meth:`request` gives a request back whole.
    """

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = Path(path)
        self.data = data
        self._lock = threading.RLock()

    # -- creating and reading

    @classmethod
    def new(cls, path: Path, session: Session) -> Recording:
        """An empty recording of ``session`` as it stands now (saved at once).

        An earlier recording at ``path`` is replaced; any other existing file is refused,
        so a mistyped path never overwrites a notebook or data file.
        """
        path = Path(path)
        if path.exists() and not _is_recording_file(path):
            raise RecordingError(
                f"{path} exists and is not a recording; refusing to overwrite it. Give a "
                f"new file name, such as {default_recording_path(None, path.parent).name}."
            )
        norm = Normaliser.for_session(session)
        data: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "producer": f"jupyter-memory {__version__}",
            "created": now_iso(),
            "session_id": session.session_id,
            "model": session.config.model,
            "small_model": session.config.small_model,
            "today": session.today(),
            "notebook_known": bool(session.notebook),
            "notebook": Path(session.notebook).name if session.notebook else None,
            "placeholders": sorted(set(norm.placeholders)
                                   | {TODAY, PLATFORM, PYTHON, TIMESTAMP, MTIME, INSTANT}),
            "start": {
                "turn_count": session.conversation.turn_count,
                "messages": norm.response(jsonable(session.messages)),
                "memdir": _memdir_snapshot(session.location.memdir),
                "instructions": _instruction_snapshot(session, norm),
            },
            "turns": [],
            "exchanges": [],
            "blobs": {},
        }
        recording = cls(path, data)
        recording.save()
        return recording

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Recording:
        """Read a recording, or say clearly why it cannot be used."""
        path = Path(path)
        try:
            raw = person_root(path).text(path)  # the recording the person (or env) named
        except UnicodeDecodeError:
            raise RecordingError(f"{path} is not a text file; it is not a recording.") from None
        except FileNotFoundError:
            raise RecordingError(
                f"No recording at {path}. Make one with %agent record (it writes "
                f"<notebook>{SUFFIX} beside the notebook), or give the right path."
            ) from None
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise RecordingError(f"{path} is not valid JSON ({exc}); it is not a recording.") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise RecordingError(f"{path} is not a jupyter-memory recording (no format {FORMAT!r}).")
        if data.get("version") != VERSION:
            raise RecordingError(
                f"{path} is a recording of format version {data.get('version')!r}; this "
                f"jupyter-memory reads version {VERSION}. Re-record it with this version."
            )
        for key, kind in (("exchanges", list), ("turns", list), ("blobs", dict), ("start", dict)):
            if not isinstance(data.get(key), kind):
                raise RecordingError(f"{path} is damaged: {key!r} is missing or not a {kind.__name__}.")
        return cls(path, data)

    def save(self) -> None:
        """Write the file atomically (mode 0600: it holds the whole conversation)."""
        with self._lock:
            text = json.dumps(self.data, ensure_ascii=False, indent=1)
        try:
            person_root(self.path).write(self.path, text + "\n", mode=0o600)
        except (OSError, InvalidPath) as exc:
            raise RecordingError(f"Could not save the recording to {self.path}: {exc}") from exc

    # -- contents

    @property
    def exchanges(self) -> list[dict[str, Any]]:
        return cast("list[dict[str, Any]]", self.data["exchanges"])  # JSON from the file

    @property
    def turns(self) -> list[dict[str, Any]]:
        return cast("list[dict[str, Any]]", self.data["turns"])  # JSON from the file

    @property
    def start(self) -> dict[str, Any]:
        return cast("dict[str, Any]", self.data["start"])  # JSON from the file

    @property
    def session_id(self) -> str | None:
        return self.data.get("session_id")

    def notebook_beside(self) -> Path | None:
        """The recorded notebook as a file beside this recording, when it is there.

        Recordings name their notebook; older ones only say that it was known, and then
        the notebook whose name the recording's name starts with is taken.
        """
        folder = self.path.resolve().parent
        name = self.data.get("notebook")
        if isinstance(name, str) and name and "/" not in name and "\\" not in name:
            candidate = folder / name
            return candidate if candidate.is_file() else None
        if not self.data.get("notebook_known"):
            return None
        stem = self.path.name.removesuffix(SUFFIX)
        notebooks = person_root(folder).matching("*.ipynb")
        matches = sorted((p for p in notebooks if stem.startswith(p.stem)),
                         key=lambda p: -len(p.stem))
        return matches[0] if matches else None

    def add_exchange(
        self, request: Mapping[str, Any], response: Mapping[str, Any], *, stream: bool
    ) -> dict[str, Any]:
        """Append one exchange (request and response already normalised)."""
        with self._lock:
            entry = {
                "seq": len(self.exchanges) + 1,
                "endpoint": "messages",
                "stream": stream,
                "digest": digest(request),
                "request": self._pack(request),
                "response": dict(response),
            }
            self.exchanges.append(entry)
            return entry

    def add_turn(self, info: dict[str, Any]) -> None:
        with self._lock:
            self.turns.append(info)

    def request(self, exchange: Mapping[str, Any]) -> dict[str, Any]:
        """The normalised request of ``exchange``, with its shared parts put back."""
        blobs = self.data["blobs"]

        def unref(value: Any) -> Any:
            if isinstance(value, dict) and set(value) == {"$blob"}:
                try:
                    return blobs[value["$blob"]]
                except KeyError:
                    raise RecordingError(
                        f"{self.path} is damaged: blob {value['$blob']} is missing."
                    ) from None
            return value

        packed = exchange["request"]
        out = {k: unref(v) for k, v in packed.items() if k != "messages"}
        if "messages" in packed:
            out["messages"] = [unref(m) for m in packed["messages"]]
        return {k: out[k] for k in packed}

    def _pack(self, request: Mapping[str, Any]) -> dict[str, Any]:
        blobs = self.data["blobs"]

        def ref(value: Any) -> dict[str, str]:
            key = _blob_key(value)
            blobs.setdefault(key, value)
            return {"$blob": key}

        packed: dict[str, Any] = {}
        for key, value in request.items():
            if key in ("system", "tools") and isinstance(value, list | str):
                packed[key] = ref(value)
            elif key == "messages" and isinstance(value, list):
                packed[key] = [ref(m) for m in value]
            else:
                packed[key] = value
        return packed


def _is_recording_file(path: Path) -> bool:
    try:
        head = person_root(path).read(path, limit=4096)
    except (OSError, InvalidPath):
        return False
    return FORMAT.encode() in head


def _memdir_snapshot(memdir: Any) -> list[dict[str, Any]]:
    """The memdir's text files as they are now, with their ages (for bundles)."""
    if memdir is None:
        return []
    if not Path(memdir).is_dir():
        return []
    root = Root.declare("memdir", memdir)
    found = [Path(here) / name for here, _dirs, files in root.walk() for name in files]
    out: list[dict[str, Any]] = []
    now = time.time()
    for path in sorted(found):
        rel = path.relative_to(root.real).as_posix()
        if path.is_symlink() or not path.is_file() or path.name == LOCK_NAME:
            continue
        if is_temp_file(path.name) or any(part.startswith(".") for part in Path(rel).parts):
            continue
        info = path.stat()
        if info.st_size > SNAPSHOT_MAX_BYTES:
            continue
        try:
            text = root.text(path)
        except (UnicodeDecodeError, OSError, InvalidPath):
            continue
        out.append({"file": rel, "text": text, "age_seconds": round(max(0.0, now - info.st_mtime), 3)})
    return out


def _instruction_snapshot(session: Session, norm: Normaliser) -> list[dict[str, Any]]:
    """The instruction files the session loaded, raw, with normalised paths."""
    inst = session.instructions
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for file in [*getattr(inst, "files", []), *getattr(inst, "activated", [])]:
        path = str(file.path)
        if path in seen:
            continue
        seen.add(path)
        text = getattr(file, "raw", "")  # as it was read, through the gateway, at load
        if not text:
            continue
        out.append({"path": norm.text(path), "scope": file.scope, "text": text})
    return out
