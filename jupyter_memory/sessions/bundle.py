"""Shareable bundles: a notebook with its recording and memory, replayable anywhere.

``pack`` puts into one zip file the notebook, its recording, the memdir as it was when
the recording started, the instruction files the session loaded (project and user
scope), any extra files asked for, and a manifest. ``unpack`` lays them out in a fresh
folder (memory in ``memory/``, the user-scope config in ``.claude/``), giving each memory
file the age it had when recorded, and ``replay`` executes the notebook there with
nbclient against the recording: no key, no network, the same answers.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import os
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from jupyter_memory._version import __version__
from jupyter_memory.agent.loop import TURN_MIME
from jupyter_memory.errors import JupyterMemoryError, SecretRefused
from jupyter_memory.memdir.fsutil import atomic_write
from jupyter_memory.sessions.recording import REPLAY_ENV, Recording, default_recording_path

__all__ = [
    "BUNDLE_FORMAT",
    "BundleError",
    "PackResult",
    "ReplayReport",
    "UnpackResult",
    "bundle_command",
    "pack",
    "register_bundle_command",
    "replay",
    "unpack",
]

BUNDLE_FORMAT = "jupyter-memory/bundle"
BUNDLE_VERSION = 1
MANIFEST = "manifest.json"
#: Where an unpacked bundle keeps its manifest (the zip's ``manifest.json``).
UNPACKED_MANIFEST = ".jupyter-memory-bundle.json"
MEMORY_DIR = "memory"
CONFIG_DIR = ".claude"
_PREFIXES = {"memory/": MEMORY_DIR, "project/": "", "config/": CONFIG_DIR, "files/": ""}
#: Variables removed from the replay kernel's environment, so replay provably needs none.
_MODEL_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")


class BundleError(JupyterMemoryError):
    """A bundle that cannot be packed, unpacked or replayed."""


@dataclass
class PackResult:
    path: Path
    notebook: str
    recording: str
    memory_files: list[str]
    instruction_files: list[str]
    extra_files: list[str]
    left_out: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "notebook": self.notebook, "recording": self.recording,
                "memory_files": self.memory_files, "instruction_files": self.instruction_files,
                "extra_files": self.extra_files, "left_out": self.left_out}


@dataclass
class UnpackResult:
    folder: Path
    notebook: Path
    recording: Path
    memdir: Path
    config_dir: Path
    manifest: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"folder": str(self.folder), "notebook": str(self.notebook),
                "recording": str(self.recording), "memdir": str(self.memdir),
                "config_dir": str(self.config_dir)}


@dataclass
class ReplayReport:
    notebook: Path
    cells_run: int
    agent_turns: int
    same_answers: int
    changed_answers: list[int]
    """Positions (0-based, among agent turns) whose answer differs from the bundled one."""
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def describe(self) -> str:
        if self.error:
            return f"Replay of {self.notebook.name} failed: {self.error}"
        turns = "agent turn" if self.agent_turns == 1 else "agent turns"
        text = (f"Replayed {self.notebook.name}: {self.cells_run} cells, {self.agent_turns} {turns}, "
                f"{self.same_answers} with the same answer as the bundled notebook")
        if self.changed_answers:
            text += f"; answers differ at turns {', '.join(str(i + 1) for i in self.changed_answers)}"
        return text + "."

    def to_json(self) -> dict[str, Any]:
        return {"notebook": str(self.notebook), "ok": self.ok, "cells_run": self.cells_run,
                "agent_turns": self.agent_turns, "same_answers": self.same_answers,
                "changed_answers": self.changed_answers, "error": self.error}


# --------------------------------------------------------------------------- pack


def _now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _safe_relative(text: str) -> str | None:
    """``text`` as a relative POSIX path inside a folder, or None if it would leave it."""
    if not text or "\\" in text or "\x00" in text:
        return None
    path = PurePosixPath(text)
    if path.is_absolute() or any(part in ("..", "") for part in path.parts):
        return None
    return path.as_posix()


def _instruction_entry(path: str) -> tuple[str, str] | None:
    """Where a recorded instruction file goes in the bundle (zip name, unpacked name)."""
    for placeholder, prefix in (("{{PROJECT}}/", "project/"), ("{{CWD}}/", "project/"),
                                ("{{CONFIG}}/", "config/")):
        if path.startswith(placeholder):
            rel = _safe_relative(path[len(placeholder):])
            if rel is not None:
                return prefix + rel, rel
    return None


def pack(
    notebook: Path,
    output: Path | None = None,
    *,
    recording: Path | None = None,
    include: Iterable[str] = (),
    allow_secrets: bool = False,
) -> PackResult:
    """Write the bundle of ``notebook`` (default ``<stem>.bundle.zip`` beside it)."""
    notebook = Path(notebook).expanduser().resolve()
    if not notebook.is_file():
        raise BundleError(f"No notebook at {notebook}.")
    rec_path = Path(recording).expanduser() if recording else default_recording_path(notebook, notebook.parent)
    if not rec_path.is_file():
        raise BundleError(
            f"No recording at {rec_path}. Record the notebook first: run %agent record at its "
            "top, then the agent cells (or give the recording with --recording)."
        )
    rec = Recording.load(rec_path)
    output = Path(output).expanduser() if output else notebook.with_name(notebook.stem + ".bundle.zip")
    if output.exists() and not _is_bundle(output):
        raise BundleError(f"{output} exists and is not a bundle; refusing to overwrite it.")

    members: dict[str, bytes] = {}
    texts: list[tuple[str, str]] = []

    def add(name: str, data: bytes) -> None:
        members[name] = data
        try:
            texts.append((name, data.decode("utf-8")))
        except UnicodeDecodeError:
            pass

    add(notebook.name, notebook.read_bytes())
    add(rec_path.name, rec_path.read_bytes())
    memory = []
    for item in rec.start.get("memdir") or []:
        rel = _safe_relative(str(item.get("file", "")))
        if rel is None or not isinstance(item.get("text"), str):
            continue
        add(f"memory/{rel}", item["text"].encode("utf-8"))
        memory.append({"file": rel, "age_seconds": float(item.get("age_seconds") or 0.0)})
    instructions, left_out = [], []
    for item in rec.start.get("instructions") or []:
        where = _instruction_entry(str(item.get("path", "")))
        if where is None or where[0] in members:
            left_out.append(str(item.get("path")))
            continue
        add(where[0], str(item.get("text", "")).encode("utf-8"))
        instructions.append({"path": item.get("path"), "scope": item.get("scope"), "entry": where[0]})
    extra = _extra_files(notebook.parent, include, {notebook, rec_path.resolve()})
    for rel, path in extra:
        add(f"files/{rel}", path.read_bytes())
    if not allow_secrets:
        _check_secrets(texts)

    manifest = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "producer": f"jupyter-memory {__version__}",
        "created": _now_iso(),
        "notebook": notebook.name,
        "recording": rec_path.name,
        "notebook_known": bool(rec.data.get("notebook_known")),
        "memory": memory,
        "instructions": instructions,
        "files": [rel for rel, _ in extra],
        "left_out": left_out,
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=1))
        for name, data in members.items():
            archive.writestr(name, data)
    atomic_write(output, buffer.getvalue())
    return PackResult(output, notebook.name, rec_path.name, [m["file"] for m in memory],
                      [i["entry"] for i in instructions], [rel for rel, _ in extra], left_out)


def _is_bundle(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            return json.loads(archive.read(MANIFEST)).get("format") == BUNDLE_FORMAT
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return False


def _extra_files(root: Path, patterns: Iterable[str], exclude: set[Path]) -> list[tuple[str, Path]]:
    """Files under ``root`` matching ``patterns`` (globs relative to root), sorted."""
    found: dict[str, Path] = {}
    for pattern in patterns:
        if _safe_relative(pattern.replace("*", "x").replace("?", "x")) is None:
            raise BundleError(f"--include {pattern!r} must be a path or glob inside the "
                              "notebook's folder (no '..', not absolute).")
        matches = [p for p in root.glob(pattern) if p.is_file() and not p.is_symlink()]
        if not matches:
            raise BundleError(f"--include {pattern!r} matches no file in {root}.")
        for path in matches:
            if path.resolve() in exclude:
                continue
            found[path.relative_to(root).as_posix()] = path
    return sorted(found.items())


def _check_secrets(texts: list[tuple[str, str]]) -> None:
    from jupyter_memory.memdir.guard import find_secrets

    hits = [(name, f) for name, text in texts for f in find_secrets(text)]
    if not hits:
        return
    shown = "; ".join(f"{name} line {f.line}: {f.kind} ({f.excerpt})" for name, f in hits[:5])
    more = f"; and {len(hits) - 5} more" if len(hits) > 5 else ""
    raise SecretRefused(
        f"Refused to pack: the bundle would contain what looks like a credential — {shown}"
        f"{more}. A bundle is meant to be shared; remove the secret from the notebook, "
        "recording or memory (and re-record), or pass --allow-secrets if it is a false alarm."
    )


# --------------------------------------------------------------------------- unpack


def unpack(bundle: Path, dest: Path) -> UnpackResult:
    """Lay a bundle out in ``dest`` (which must be new or empty), memory ages restored."""
    bundle, dest = Path(bundle).expanduser(), Path(dest).expanduser().absolute()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BundleError(f"{dest} is not an empty folder; unpack into a new folder.")
    try:
        archive = zipfile.ZipFile(bundle)
    except FileNotFoundError:
        raise BundleError(f"No bundle at {bundle}.") from None
    except zipfile.BadZipFile:
        raise BundleError(f"{bundle} is not a zip file; it is not a jupyter-memory bundle.") from None
    with archive:
        try:
            manifest = json.loads(archive.read(MANIFEST))
        except (KeyError, ValueError):
            raise BundleError(f"{bundle} has no readable {MANIFEST}; it is not a bundle.") from None
        if manifest.get("format") != BUNDLE_FORMAT or manifest.get("version") != BUNDLE_VERSION:
            raise BundleError(f"{bundle} is not a version-{BUNDLE_VERSION} jupyter-memory bundle.")
        roots = {manifest.get("notebook"), manifest.get("recording")}
        plan: list[tuple[zipfile.ZipInfo, Path]] = []
        for info in archive.infolist():
            if info.filename == MANIFEST or info.is_dir():
                continue
            target = _target(info.filename, roots)
            if target is None or (info.external_attr >> 16) & 0o170000 == 0o120000:
                raise BundleError(f"{bundle} holds an unsafe or unknown entry {info.filename!r}; "
                                  "refusing to unpack it.")
            plan.append((info, dest / target))
        dest.mkdir(parents=True, exist_ok=True)
        for info, target in plan:
            atomic_write(target, archive.read(info))
    now = time.time()
    memdir = dest / MEMORY_DIR
    memdir.mkdir(exist_ok=True)
    for item in manifest.get("memory") or []:
        rel = _safe_relative(str(item.get("file", "")))
        path = memdir / rel if rel is not None else None
        if path is not None and path.is_file() and not path.is_symlink():
            when = now - float(item.get("age_seconds") or 0.0)
            os.utime(path, (when, when))
    atomic_write(dest / UNPACKED_MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=1))
    (dest / CONFIG_DIR).mkdir(exist_ok=True)
    return UnpackResult(dest, dest / str(manifest["notebook"]), dest / str(manifest["recording"]),
                        memdir, dest / CONFIG_DIR, manifest)


def _target(name: str, roots: set[Any]) -> str | None:
    rel = _safe_relative(name)
    if rel is None:
        return None
    if rel in roots:
        return rel
    for prefix, folder in _PREFIXES.items():
        if rel.startswith(prefix) and len(rel) > len(prefix):
            rest = rel[len(prefix):]
            return f"{folder}/{rest}" if folder else rest
    return None


# --------------------------------------------------------------------------- replay


def replay_env(unpacked: UnpackResult, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The kernel environment of a replay: this folder's memory and config, no model."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in _MODEL_ENV}
    env.update({
        "JUPYTER_MEMORY_DIR": str(unpacked.memdir),
        "CLAUDE_CONFIG_DIR": str(unpacked.config_dir),
        REPLAY_ENV: str(unpacked.recording),
    })
    env.pop("JPY_SESSION_NAME", None)
    if unpacked.manifest.get("notebook_known"):
        env["JPY_SESSION_NAME"] = str(unpacked.notebook)
    return env


def _answers(nb: Mapping[str, Any]) -> list[str]:
    out = []
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            record = (output.get("data") or {}).get(TURN_MIME)
            if isinstance(record, Mapping):
                out.append(str(record.get("answer", "")))
    return out


def replay(
    unpacked: UnpackResult | Path,
    *,
    kernel_name: str = "python3",
    timeout: int = 120,
    env: Mapping[str, str] | None = None,
) -> ReplayReport:
    """Execute the unpacked notebook with nbclient against its recording.

    The executed notebook replaces the unpacked copy. A cell that fails (for example a
    request that is not in the recording) ends the run and is reported.
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    if not isinstance(unpacked, UnpackResult):
        unpacked = _unpacked_from(Path(unpacked))
    nb = nbformat.read(str(unpacked.notebook), as_version=4)
    bundled = _answers(nb)
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name,
                            resources={"metadata": {"path": str(unpacked.folder)}},
                            # the kernel's own start-up warnings are not the notebook's output
                            extra_arguments=["--IPKernelApp.log_level=ERROR"])
    error = None
    try:
        client.execute(env=replay_env(unpacked, env))
    except CellExecutionError as exc:
        error = _short_error(exc)
    except Exception as exc:  # the kernel could not start or died: say so, keep the file
        error = f"{type(exc).__name__}: {exc}"
    atomic_write(unpacked.notebook, nbformat.writes(nb))
    replayed = _answers(nb)
    changed = [i for i, (a, b) in enumerate(zip(bundled, replayed, strict=False)) if a != b]
    ran = sum(1 for c in nb.cells if c.cell_type == "code" and c.get("execution_count"))
    return ReplayReport(unpacked.notebook, ran, len(replayed),
                        len(replayed) - len(changed), changed, error)


def _short_error(exc: Exception) -> str:
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = str(getattr(exc, "evalue", "") or exc)
    return f"{ename}: {evalue}"


def _unpacked_from(folder: Path) -> UnpackResult:
    try:
        manifest = json.loads((folder / UNPACKED_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise BundleError(f"{folder} is not an unpacked bundle (no {UNPACKED_MANIFEST}).") from None
    return UnpackResult(folder, folder / manifest["notebook"], folder / manifest["recording"],
                        folder / MEMORY_DIR, folder / CONFIG_DIR, manifest)


# --------------------------------------------------------------------------- command line

BUNDLE_HELP = "Pack a recorded notebook with its memory into a zip, or unpack and replay one."


def register_bundle_command(command: Callable[..., Any], arg: Callable[..., Any]) -> None:
    """Register ``jupyter-memory bundle`` with the CLI's ``command``/``arg`` helpers."""
    command(
        "bundle",
        BUNDLE_HELP,
        arg("action", choices=("pack", "unpack"),
            help="pack NOTEBOOK [-o ZIP]; unpack ZIP DIR [--replay]"),
        arg("source", help="the notebook (pack) or the bundle zip (unpack)"),
        arg("dest", nargs="?", help="unpack: the new folder to unpack into"),
        arg("-o", "--output", help="pack: the zip to write (default <notebook>.bundle.zip)"),
        arg("--recording", help="pack: the recording (default <notebook>.recording.json)"),
        arg("--include", action="append", default=[], metavar="GLOB",
            help="pack: also carry these files from the notebook's folder (data files)"),
        arg("--allow-secrets", action="store_true",
            help="pack even if something looks like a credential"),
        arg("--replay", action="store_true",
            help="unpack: then execute the notebook against its recording (no key needed)"),
        arg("--kernel", default="python3", help="unpack --replay: the kernel to run"),
        arg("--timeout", type=int, default=120, help="unpack --replay: seconds per cell"),
    )(bundle_command)


def bundle_command(ctx: Any) -> int:
    """Run ``bundle`` for the CLI; ``ctx`` has ``args``, ``env`` and ``emit``."""
    args = ctx.args
    if args.action == "pack":
        result = pack(Path(args.source), Path(args.output) if args.output else None,
                      recording=Path(args.recording) if args.recording else None,
                      include=args.include, allow_secrets=args.allow_secrets)
        text = (f"Packed {result.notebook} with {result.recording}, "
                f"{len(result.memory_files)} memory files and "
                f"{len(result.instruction_files)} instruction files into {result.path}")
        if result.left_out:
            text += "\nLeft out (outside the project and config folders): " + ", ".join(result.left_out)
        ctx.emit(result.to_json(), text)
        return 0
    if not args.dest:
        raise BundleError("bundle unpack needs a destination: bundle unpack ZIP DIR.")
    unpacked = unpack(Path(args.source), Path(args.dest))
    if not args.replay:
        ctx.emit(unpacked.to_json(), f"Unpacked into {unpacked.folder}; replay it with "
                 f"{REPLAY_ENV}={unpacked.recording} JUPYTER_MEMORY_DIR={unpacked.memdir} "
                 f"CLAUDE_CONFIG_DIR={unpacked.config_dir} jupyter nbconvert --execute "
                 f"{unpacked.notebook}, or unpack with --replay.")
        return 0
    report = replay(unpacked, kernel_name=args.kernel, timeout=args.timeout, env=ctx.env)
    ctx.emit({**unpacked.to_json(), "replay": report.to_json()}, report.describe())
    return 0 if report.ok else 1
