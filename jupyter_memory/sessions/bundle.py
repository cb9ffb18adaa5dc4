"""Shareable bundles: a notebook with its recording and memory, replayable anywhere.

``pack`` puts into one zip file the notebook, its recording, the memdir as it was when
the recording started, the instruction files the session loaded (project and user
scope), any extra files asked for, and a manifest. ``unpack`` lays them out in a fresh
folder (memory in ``memory/``, the user-scope config in ``.claude/``), giving each memory
file the age it had when recorded, and ``replay`` executes the notebook there with
nbclient against the recording: no key, no network, the same answers.

A bundle is data, not code: it never carries settings, hooks or code files, every entry
and the manifest's own paths are checked, sizes and entry counts are capped, and replay
runs with ``JUPYTER_MEMORY_UNTRUSTED=1`` so nothing in the folder can run a hook.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
import zipfile
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from jupyter_memory._version import __version__
from jupyter_memory.agent.loop import TURN_MIME
from jupyter_memory.errors import InvalidPath, JupyterMemoryError, SecretRefused
from jupyter_memory.memdir.clock import now_iso
from jupyter_memory.memdir.gateway import Root, person_root
from jupyter_memory.sessions.recording.control import REPLAY_ENV
from jupyter_memory.sessions.recording.file import Recording, default_recording_path

__all__ = [
    "BUNDLE_FORMAT",
    "BundleError",
    "PackResult",
    "ReplayReport",
    "UnpackResult",
    "pack",
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

    add(notebook.name, person_root(notebook).read(notebook))  # the files the person named
    add(rec_path.name, person_root(rec_path).read(rec_path))
    memory: list[dict[str, Any]] = []
    for item in rec.start.get("memdir") or []:
        rel = _safe_relative(str(item.get("file", "")))
        if rel is None or not isinstance(item.get("text"), str):
            continue
        add(f"memory/{rel}", item["text"].encode("utf-8"))
        memory.append({"file": rel, "age_seconds": float(item.get("age_seconds") or 0.0)})
    instructions, left_out = [], []
    for item in rec.start.get("instructions") or []:
        where = _instruction_entry(str(item.get("path", "")))
        if where is None or where[0] in members or not _instruction_name(
                where[0].partition("/")[2], config=where[0].startswith("config/")):
            left_out.append(str(item.get("path")))
            continue
        add(where[0], str(item.get("text", "")).encode("utf-8"))
        instructions.append({"path": item.get("path"), "scope": item.get("scope"), "entry": where[0]})
    folder = Root.declare("notebook", notebook.parent)
    extra = _extra_files(folder, include, {notebook, rec_path.resolve()})
    for rel, path in extra:
        add(f"files/{rel}", folder.read(path))
    if not allow_secrets:
        _check_secrets(texts)

    manifest = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "producer": f"jupyter-memory {__version__}",
        "created": now_iso("seconds"),
        "notebook": notebook.name,
        "recording": rec_path.name,
        "notebook_known": bool(rec.data.get("notebook_known")),
        "memory": memory,
        "instructions": instructions,
        "files": [rel for rel, _ in extra],
        "left_out": left_out,
    }
    with zipfile.ZipFile(buffer := io.BytesIO(), "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=1))
        for name, data in members.items():
            archive.writestr(name, data)
    person_root(output).write(output, buffer.getvalue())
    return PackResult(output, notebook.name, rec_path.name, [m["file"] for m in memory],
                      [i["entry"] for i in instructions], [rel for rel, _ in extra], left_out)


def _is_bundle(path: Path) -> bool:
    try:
        with person_root(path).open_zip(path) as archive:
            declared: object = json.loads(archive.read(MANIFEST)).get("format")
            return declared == BUNDLE_FORMAT
    except (OSError, KeyError, ValueError, AttributeError, RecursionError, zipfile.BadZipFile):
        return False


def _extra_files(folder: Root, patterns: Iterable[str], exclude: set[Path]) -> list[tuple[str, Path]]:
    """Files under ``folder`` matching ``patterns`` (globs relative to it), sorted."""
    root = folder.path
    found: dict[str, Path] = {}
    for pattern in patterns:
        if _safe_relative(pattern.replace("*", "x").replace("?", "x")) is None:
            raise BundleError(f"--include {pattern!r} must be a path or glob inside the "
                              "notebook's folder (no '..', not absolute).")
        matches = [p for p in folder.matching(pattern) if p.is_file() and not p.is_symlink()]
        if not matches:
            raise BundleError(f"--include {pattern!r} matches no file in {root}.")
        for path in matches:
            if path.resolve() in exclude:
                continue
            rel = path.relative_to(root).as_posix()
            if not _data_name(rel):
                raise BundleError(
                    f"--include {pattern!r} takes in {rel}, which a bundle never carries: "
                    "bundles are data, so no settings or other hidden files (names starting "
                    "with '.'), no code files (.py, .sh, ...) and nothing in memory/. Put code "
                    "in the notebook itself and narrow the pattern."
                )
            found[rel] = path
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

#: At most this many bytes once unpacked (declared sizes and bytes actually written).
MAX_UNPACKED_BYTES = 1 << 30
#: At most this many entries in one bundle.
MAX_ENTRIES = 10_000
#: The manifest is small JSON; a bigger one is not a bundle's.
MAX_MANIFEST_BYTES = 8 << 20
_CHUNK = 1 << 20
#: File types a bundle never carries among its data files: they would run as code.
CODE_SUFFIXES = frozenset({
    ".py", ".pyc", ".pyo", ".pyd", ".pyw", ".pyz", ".pth", ".so", ".dylib", ".dll", ".exe",
    ".sh", ".bash", ".zsh", ".fish", ".bat", ".cmd", ".ps1", ".command", ".app", ".jar",
})


def _root_name(manifest: Mapping[str, Any], key: str, suffix: str) -> str:
    """The manifest's notebook or recording name: one plain file name in the folder."""
    raw = manifest.get(key)
    rel = _safe_relative(raw) if isinstance(raw, str) else None
    if rel is None or "/" in rel or rel.startswith(".") or not rel.endswith(suffix):
        raise BundleError(
            f"The bundle's manifest names its {key} {raw!r}; it must be a plain {suffix} file "
            "name inside the bundle (no folders, no '..', not absolute). Refusing to unpack it."
        )
    return rel


def _instruction_name(rel: str, *, config: bool) -> bool:
    """Whether ``rel`` is an instruction file a bundle may carry (never settings or hooks).

    Project side: ``CLAUDE.md`` files and the text files they import, but inside a
    dot-folder only ``.claude/CLAUDE.md`` and ``.claude/rules/**.md``, and nothing that
    would run as code. Config side: ``CLAUDE.md`` and ``rules/**.md`` only.
    """
    parts = rel.split("/")
    if config:
        return rel == "CLAUDE.md" or (parts[0] == "rules" and len(parts) > 1 and rel.endswith(".md")
                                      and not any(p.startswith(".") for p in parts))
    if PurePosixPath(rel).suffix.lower() in CODE_SUFFIXES:
        return False
    for i, part in enumerate(parts):
        if not part.startswith("."):
            continue
        rest = parts[i + 1:]
        rule = rest[:1] == ["rules"] and len(rest) > 1 and rel.endswith(".md")
        if part != ".claude" or not (rest == ["CLAUDE.md"] or rule):
            return False
        if any(p.startswith(".") for p in rest):
            return False
    return True


def _data_name(rel: str) -> bool:
    """A declared data file: no hidden parts, not code, not in the memory folder."""
    parts = rel.split("/")
    if any(p.startswith(".") for p in parts) or parts[0] == MEMORY_DIR:
        return False
    return PurePosixPath(rel).suffix.lower() not in CODE_SUFFIXES


def _plan(archive: zipfile.ZipFile, manifest: Mapping[str, Any], bundle: Path,
          max_bytes: int, max_entries: int) -> list[tuple[zipfile.ZipInfo, str]]:
    """Every entry with the relative path it goes to, all checked before anything is written."""
    notebook = _root_name(manifest, "notebook", ".ipynb")
    recording = _root_name(manifest, "recording", ".json")
    declared_memory = {str(m.get("file")) for m in _listed(manifest, "memory") if isinstance(m, dict)}
    declared_inst = {str(i.get("entry")) for i in _listed(manifest, "instructions")
                     if isinstance(i, dict)}
    declared_files = {f for f in _listed(manifest, "files") if isinstance(f, str)}
    infos = archive.infolist()
    if len(infos) > max_entries:
        raise BundleError(f"{bundle} holds {len(infos):,} entries; a bundle may hold at most "
                          f"{max_entries:,}. Refusing to unpack it.")
    total = sum(info.file_size for info in infos)
    if total > max_bytes:
        raise BundleError(f"{bundle} would unpack to {total:,} bytes; the limit is {max_bytes:,}. "
                          "Refusing to unpack it (a bundle this large is not a notebook's).")
    plan: list[tuple[zipfile.ZipInfo, str]] = []
    seen: set[str] = set()
    for info in infos:
        if info.filename == MANIFEST or info.is_dir():
            continue
        target = _entry_target(info.filename, notebook, recording, declared_memory,
                               declared_inst, declared_files)
        if target is None or (info.external_attr >> 16) & 0o170000 == 0o120000:
            raise BundleError(
                f"{bundle} holds an unsafe or unknown entry {info.filename!r}; refusing to "
                "unpack it. A bundle carries only its notebook, recording, memory files, "
                "instruction files and declared data files, never settings, hooks or code."
            )
        if target in seen or target == UNPACKED_MANIFEST:
            raise BundleError(f"{bundle} holds two entries for {target!r}; refusing to unpack it.")
        seen.add(target)
        plan.append((info, target))
    for name in (notebook, recording):
        if name not in seen:
            raise BundleError(f"{bundle} names {name!r} in its manifest but does not hold it.")
    return plan


def _listed(manifest: Mapping[str, Any], key: str) -> list[Any]:
    """A list field of the manifest; anything else counts as empty."""
    value = manifest.get(key)
    return value if isinstance(value, list) else []


def _entry_target(name: str, notebook: str, recording: str, memory: set[str],
                  instructions: set[str], files: set[str]) -> str | None:
    rel = _safe_relative(name)
    if rel is None:
        return None
    if rel in (notebook, recording):
        return rel
    head, _, rest = rel.partition("/")
    if not rest:
        return None
    if head == "memory" and rest in memory and rest.endswith(".md") \
            and not any(p.startswith(".") for p in rest.split("/")):
        return f"{MEMORY_DIR}/{rest}"
    if head in ("project", "config") and rel in instructions \
            and _instruction_name(rest, config=head == "config"):
        return rest if head == "project" else f"{CONFIG_DIR}/{rest}"
    if head == "files" and rest in files and _data_name(rest):
        return rest
    return None


def _copy_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo, staging: Root, target: Path,
                budget: list[int], bundle: Path) -> None:
    """Stream one entry to a new file, stopping when the byte budget runs out."""
    with archive.open(info) as src, staging.create(target) as dst:
        while True:
            chunk = src.read(_CHUNK)
            if not chunk:
                return
            budget[0] -= len(chunk)
            if budget[0] < 0:
                raise BundleError(f"{bundle} expands beyond its declared sizes; refusing to "
                                  "unpack it.")
            dst.write(chunk)


def _first_missing(folder: Path) -> Path | None:
    """The highest folder of ``folder``'s chain that does not exist yet (None: all exist)."""
    missing = None
    for p in (folder, *folder.parents):
        if p.exists():
            break
        missing = p
    return missing


def unpack(bundle: Path, dest: Path, *, max_bytes: int = MAX_UNPACKED_BYTES,
           max_entries: int = MAX_ENTRIES) -> UnpackResult:
    """Lay a bundle out in ``dest`` (which must be new or empty), memory ages restored.

    A bundle is data: only the notebook, its recording, the memory snapshot, instruction
    files and the data files its manifest declares are written, never settings, hooks or
    code, and each path is checked (the manifest's too) before anything is written. It
    is unpacked into a temporary folder beside ``dest`` and moved into place, so a
    refused or damaged bundle leaves nothing behind.
    """
    bundle, dest = Path(bundle).expanduser(), Path(dest).expanduser().absolute()
    out = Root.declare("given", dest.parent)  # where the person asked for it
    if dest.exists() and (not dest.is_dir() or dest.is_symlink() or out.listdir(dest)):
        raise BundleError(f"{dest} is not an empty folder; unpack into a new folder.")
    with contextlib.ExitStack() as opened:
        try:
            archive = opened.enter_context(person_root(bundle).open_zip(bundle))
        except FileNotFoundError:
            raise BundleError(f"No bundle at {bundle}.") from None
        except (zipfile.BadZipFile, OSError, ValueError):
            raise BundleError(f"{bundle} is not a zip file; it is not a jupyter-memory bundle.") from None
        manifest = _read_manifest(archive, bundle)
        plan = _plan(archive, manifest, bundle, max_bytes, max_entries)
        created = _first_missing(dest.parent)
        staging = out.temp_folder(prefix=f".{dest.name}.unpacking-")
        inside = Root.declare("given", staging)
        try:
            budget = [max_bytes]
            for info, target in plan:  # every name was checked by _plan
                _copy_entry(archive, info, inside, staging / target, budget, bundle)
            _finish(inside, manifest)
            out.move(staging, dest)  # an empty dest folder is replaced in one step
        except BaseException as exc:
            with contextlib.suppress(OSError, InvalidPath):
                out.remove_folder(staging, tree=True)
            if created is not None:
                with contextlib.suppress(OSError, InvalidPath):
                    Root.declare("given", created.parent).remove_folder(created, tree=True)
            if isinstance(exc, (zipfile.BadZipFile, zlib.error, EOFError)):
                raise BundleError(f"{bundle} is damaged ({exc}); nothing was unpacked.") from None
            if isinstance(exc, OSError) and not isinstance(exc, FileExistsError):
                raise BundleError(f"Could not unpack {bundle} into {dest}: {exc}. "
                                  "Nothing was left behind.") from None
            raise
    return UnpackResult(dest, dest / str(manifest["notebook"]), dest / str(manifest["recording"]),
                        dest / MEMORY_DIR, dest / CONFIG_DIR, manifest)


def _read_manifest(archive: zipfile.ZipFile, bundle: Path) -> dict[str, Any]:
    try:
        info = archive.getinfo(MANIFEST)
        if info.file_size > MAX_MANIFEST_BYTES:
            raise ValueError("manifest too large")
        manifest = json.loads(archive.read(info)[:MAX_MANIFEST_BYTES + 1])
    except (KeyError, ValueError, RecursionError, zipfile.BadZipFile, zlib.error, EOFError):
        raise BundleError(f"{bundle} has no readable {MANIFEST}; it is not a bundle.") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT \
            or manifest.get("version") != BUNDLE_VERSION:
        raise BundleError(f"{bundle} is not a version-{BUNDLE_VERSION} jupyter-memory bundle.")
    return manifest


def _finish(root: Root, manifest: Mapping[str, Any]) -> None:
    """Give memory files their recorded ages and write the unpacked manifest."""
    now = time.time()
    folder = root.path
    memdir = folder / MEMORY_DIR
    root.make_folder(memdir)
    for item in _listed(manifest, "memory"):
        rel = _safe_relative(str(item.get("file", ""))) if isinstance(item, dict) else None
        path = memdir / rel if rel is not None else None
        if path is not None and path.is_file() and not path.is_symlink():
            try:
                when = now - float(item.get("age_seconds") or 0.0)
            except (TypeError, ValueError):
                continue
            try:
                os.utime(path, (when, when))
            except (OverflowError, ValueError, OSError):
                continue
    root.write(UNPACKED_MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=1))
    root.make_folder(CONFIG_DIR)


# --------------------------------------------------------------------------- replay


def replay_env(unpacked: UnpackResult, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The kernel environment of a replay: this folder's memory and config, no model.

    ``JUPYTER_MEMORY_UNTRUSTED`` is set, so the replay treats every folder as untrusted:
    no settings file's hooks run and no import reaches outside, whatever the folder holds.
    """
    from jupyter_memory.memdir.trust import ENV_UNTRUSTED

    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in _MODEL_ENV}
    env.update({
        "JUPYTER_MEMORY_DIR": str(unpacked.memdir),
        "CLAUDE_CONFIG_DIR": str(unpacked.config_dir),
        REPLAY_ENV: str(unpacked.recording),
        ENV_UNTRUSTED: "1",
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
    _check_inside(unpacked)
    folder = Root.declare("given", unpacked.folder)
    nb = nbformat.reads(folder.text(unpacked.notebook), as_version=4)  # type: ignore[no-untyped-call]  # nbformat is unannotated
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
    folder.write(unpacked.notebook, nbformat.writes(nb))  # type: ignore[no-untyped-call]  # nbformat is unannotated
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
        manifest = json.loads(Root.declare("given", folder).text(UNPACKED_MANIFEST))
    except (OSError, ValueError, RecursionError):
        raise BundleError(f"{folder} is not an unpacked bundle (no {UNPACKED_MANIFEST}).") from None
    if not isinstance(manifest, dict):
        raise BundleError(f"{folder / UNPACKED_MANIFEST} is not a bundle manifest.")
    notebook = _root_name(manifest, "notebook", ".ipynb")
    recording = _root_name(manifest, "recording", ".json")
    return UnpackResult(folder, folder / notebook, folder / recording,
                        folder / MEMORY_DIR, folder / CONFIG_DIR, manifest)


def _check_inside(unpacked: UnpackResult) -> None:
    """Replay runs only what was unpacked: the notebook and recording are plain files in
    the folder, not links to somewhere else."""
    folder = Path(os.path.realpath(unpacked.folder))
    for path in (unpacked.notebook, unpacked.recording):
        if path.is_symlink() or Path(os.path.realpath(path)).parent != folder:
            raise BundleError(f"{path} is not a file of the unpacked folder {unpacked.folder}; "
                              "replay runs only what the bundle unpacked.")
