"""The reproducible demo: run ``examples/02-tour.ipynb`` headless, offline, in a temp folder.

``python -m jupyter_memory.demo`` copies the tour notebook and its recording into a fresh
work folder, executes it with nbclient in the venv's ``python3`` kernel with no model
variables at all (the agent's answers come from the recording, made with the local scripted
server), and writes the executed notebook and an HTML copy to ``build/demo/``. The kernel's
``HOME`` is a folder inside the work folder and the notebook keeps its memory in a folder of
its own, so nothing is read from or written to your real home or memory.

The helpers here are shared by ``examples/make_recordings.py`` (which regenerates the
recordings and the committed executed notebooks) and ``tests/examples/test_examples.py`` (which
replays every example and compares the outputs), so all three run notebooks the same way:

- the kernel is started in the notebook's folder, with ``JPY_SESSION_NAME`` set to the
  notebook's path (as JupyterLab does), so the agent knows its notebook;
- a cell tagged ``restart-kernel`` is run in a new kernel, as after Kernel → Restart
  (nbclient cannot restart a kernel from inside a notebook);
- widget state is not stored, so saved outputs fall back to their static ``text/html``.
"""

from __future__ import annotations

import argparse
import copy
import os
import posixpath
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir import trust_table
from jupyter_memory.memdir.gateway import Root, person_root, temp_root

__all__ = [
    "MODEL_ENV",
    "RECORD_ENV",
    "RESTART_TAG",
    "DemoError",
    "DemoResult",
    "example_files",
    "examples_dir",
    "execute_notebook",
    "kernel_env",
    "main",
    "prepare_work",
    "run_demo",
    "scratch_folder",
    "static_outputs",
    "write_html",
]

#: A cell with this tag runs in a fresh kernel: everything before it ran in another one.
RESTART_TAG = "restart-kernel"
#: ``record`` makes the examples' mode cell record against the configured endpoint.
RECORD_ENV = "JUPYTER_MEMORY_EXAMPLES"
#: Variables that connect a model; a replay runs without any of them.
MODEL_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")
#: Variables that would change what the notebooks send or show, so they are never inherited:
#: the examples set memory and config folders themselves, and the switches keep their defaults.
_REQUEST_ENV = (
    "JUPYTER_MEMORY_DIR",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY",
    "JUPYTER_MEMORY_MODEL",
    "JUPYTER_MEMORY_SMALL_MODEL",
    "JUPYTER_MEMORY_PROVENANCE",
    "JUPYTER_MEMORY_EXTRACTION",
    "JUPYTER_MEMORY_SESSION_MEMORY",
    "JUPYTER_MEMORY_REPLAY",
    "JPY_SESSION_NAME",
    RECORD_ENV,
    # Terminal sizes change how tables are wrapped; a notebook's output should not.
    "COLUMNS",
    "LINES",
)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: The marker that lets the lab extension pick between a widget and its static copy
#: (``jupyter_memory.widgets._base.VIEW_MIME``); without the widget it means nothing.
VIEW_MARKER = "application/vnd.jupyter-memory.view+json"
TOUR = "02-tour.ipynb"


class DemoError(JupyterMemoryError):
    """The demo could not be set up or one of its cells failed."""


def examples_dir() -> Path:
    """The ``examples/`` folder of the checkout this package runs from."""
    return Path(__file__).resolve().parent.parent / "examples"


def example_files(notebook: Path) -> list[Path]:
    """What a notebook needs beside it: its recordings and a folder of the same name."""
    notebook = Path(notebook)
    found = [notebook]
    found += person_root(notebook.parent).matching(f"{notebook.stem}*.recording.json")
    companion = notebook.with_suffix("")
    if companion.is_dir():
        found.append(companion)
    return found


#: Where a course notebook writes, relative to its folder: ``.run/<notebook>/``.
RUN_FOLDER = ".run"
#: Files a notebook makes outside its run folder on purpose: 12 defines an agent for its
#: project, and the reference keeps project agents and their local memory under the
#: project's ``.claude/`` (docs/reference.md#agent-memory); ``examples/.gitignore`` lists it.
PROJECT_FILES: dict[str, tuple[str, ...]] = {"12-team-memory": (".claude/",)}


def folder_files(folder: Path) -> set[str]:
    """Every file (and symbolic link) under ``folder``, as paths relative to it."""
    found: set[str] = set()
    top: str | None = None
    for here, dirs, files in Root.declare("given", folder).walk():
        top = here if top is None else top
        links = [d for d in dirs if os.path.islink(os.path.join(here, d))]  # not walked into
        found.update(os.path.relpath(os.path.join(here, name), top).replace(os.sep, "/")
                     for name in (*files, *links))
    return found


def written_outside_run(work: Path, before: set[str], notebook: str,
                        *, also: tuple[str, ...] = ()) -> list[str]:
    """Files a run of ``notebook`` (its stem) added to ``work`` anywhere but its run folder
    (``.run/<notebook>/``), the kernel's HOME the runner made (``home/``, minus a
    ``home/.claude`` that would be the learner's own settings) and the paths ``also`` and
    :data:`PROJECT_FILES` allow: what it would leave behind run in place in a checkout."""
    allowed = (f"{RUN_FOLDER}/{notebook}/", *PROJECT_FILES.get(notebook, ()), *also)
    added = sorted(folder_files(work) - before)
    return [rel for rel in added if not rel.startswith(allowed)
            and not (rel.startswith("home/") and not rel.startswith("home/.claude/"))]


def scratch_folder() -> Path:
    """A new, empty folder whose path has the same length on every run.

    Where a notebook runs shows in its outputs, and the offline token estimates of
    ``%context`` count those characters; a path of fixed length (``/tmp/jupyter-memory-``
    plus 8 random characters) keeps a replay's numbers equal to the committed ones.
    """
    return temp_root().temp_folder(prefix="jupyter-memory-")


def prepare_work(notebook: Path, work: Path) -> Path:
    """Copy ``notebook`` and its files into ``work`` (emptied first); return the copy."""
    notebook = Path(notebook)
    if not notebook.is_file():
        raise DemoError(f"{notebook} does not exist: run this from a checkout of jupyter-memory "
                        "(the examples are not part of the installed package), or pass "
                        "--examples DIR.")
    work = Path(work)
    target = Root.declare("given", work.parent)  # the folder the person (or the demo) chose
    if work.exists():
        target.remove_folder(work, tree=True)
    target.make_folder(work)
    examples = person_root(notebook.parent)
    for item in example_files(notebook):
        if item.is_dir():
            examples.copy_tree(item, work / item.name, to=target)
        else:
            examples.copy(item, work / item.name, to=target)
    return work / notebook.name


def kernel_env(
    home: Path,
    *,
    live: bool = False,
    base: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a headless kernel: a private HOME and no request-changing switch.

    Without ``live`` no model variable is passed, so every answer must come from a
    recording. ``extra`` is added last (``make_recordings.py`` points the kernel at the
    local scripted server with it).
    """
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if k not in _REQUEST_ENV and (live or k not in MODEL_ENV)}
    home = Path(home)
    Root.declare("given", home).make_folder()
    env["HOME"] = str(home)
    env.pop("PWD", None)  # the kernel's folder is set by the client, not inherited
    env.update(extra or {})
    return env


def _segments(nb: Any) -> list[list[int]]:
    """Cell indices grouped by kernel: a ``restart-kernel`` cell starts a new group."""
    groups: list[list[int]] = [[]]
    for index, cell in enumerate(nb.cells):
        if RESTART_TAG in (cell.get("metadata", {}).get("tags") or []) and groups[-1]:
            groups.append([])
        groups[-1].append(index)
    return groups


def execute_notebook(
    path: Path,
    *,
    env: Mapping[str, str],
    timeout: int = 300,
    kernel_name: str = "python3",
    save: bool = True,
) -> Any:
    """Execute the notebook at ``path`` in its own folder and return it (saved in place).

    Raises nbclient's ``CellExecutionError`` naming the failing cell; the notebook is
    saved with the outputs up to that cell either way.
    """
    import nbformat
    from nbclient import NotebookClient

    path = Path(path).resolve()
    folder = person_root(path)
    nb = nbformat.reads(folder.text(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    env = dict(env, JPY_SESSION_NAME=str(path))
    try:
        for group in _segments(nb):
            client = NotebookClient(
                nb, timeout=timeout, kernel_name=kernel_name, allow_errors=False,
                store_widget_state=False, record_timing=False,
                extra_arguments=["--IPKernelApp.log_level=ERROR"],
                resources={"metadata": {"path": str(path.parent)}},
            )
            client.reset_execution_trackers()
            with client.setup_kernel(env=env):
                assert client.kc is not None  # setup_kernel started the kernel's client
                info = client.wait_for_reply(client.kc.kernel_info())
                if info is not None and "language_info" in info["content"]:
                    nb.metadata["language_info"] = info["content"]["language_info"]
                for index in group:
                    client.execute_cell(nb.cells[index], index,
                                        execution_count=client.code_cells_executed + 1)
    finally:
        nb.metadata.pop("widgets", None)
        if save:
            folder.write(path, nbformat.writes(nb))
    return nb


def static_outputs(nb: Any) -> Any:
    """A copy of ``nb`` whose outputs keep their static views, not live widget views.

    A saved widget view points at a widget model that lived only in the kernel that ran
    the notebook; without it JupyterLab shows "model not found". Each widget output also
    carries ``text/html`` and ``text/plain``, which every viewer can show.
    """
    out = copy.deepcopy(nb)
    for cell in out.cells:
        for output in cell.get("outputs", []):
            data = output.get("data")
            if data and WIDGET_VIEW in data and len(data) > 1:
                del data[WIDGET_VIEW]
                data.pop(VIEW_MARKER, None)
    return out


_HREF = re.compile(r'(href|src)="(?![a-zA-Z][a-zA-Z0-9+.-]*:|#|/)([^"]+)"')


def write_html(nb: Any, dest: Path, *, links_from: Path | None = None) -> Path:
    """Write ``nb`` as a standalone HTML page (nbconvert's lab template) to ``dest``.

    ``links_from`` is the folder the notebook's relative links were written for (its own
    folder); they are rewritten so they still work from where the page is written.
    """
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(static_outputs(nb))
    dest = Path(dest)
    if links_from is not None:
        base = Path(os.path.relpath(Path(links_from).resolve(), dest.parent.resolve()))
        body = _HREF.sub(
            lambda m: f'{m.group(1)}="{posixpath.normpath((base / m.group(2)).as_posix())}"', body)
    Root.declare("given", dest.parent).write(dest, body)
    return dest


@dataclass
class DemoResult:
    """Where the demo wrote its copies, and how it went."""

    notebook: Path
    html: Path
    work: Path
    cells: int
    agent_turns: int
    seconds: float
    live: bool

    def describe(self) -> str:
        mode = "live, against your model" if self.live else "offline, replaying the recording"
        root = Path.cwd()

        def shown(p: Path) -> str:
            try:
                return str(p.resolve().relative_to(root))
            except ValueError:
                return str(p)

        return "\n".join([
            f"Ran {TOUR} headless ({mode}): {self.cells} code cells, "
            f"{self.agent_turns} agent turn{'' if self.agent_turns == 1 else 's'}, "
            f"{self.seconds:.1f} s.",
            f"  executed notebook: {shown(self.notebook)}",
            f"  HTML copy:         {shown(self.html)}  (open it in any browser)",
            f"  work folder:       {self.work}",
            "Open every example in JupyterLab:",
            "  .venv/bin/jupyter lab examples/",
            "Without ANTHROPIC_API_KEY each notebook replays its recording; with it, the agent "
            "answers live.",
        ])


def run_demo(
    examples: Path | None = None,
    out: Path | None = None,
    *,
    live: bool = False,
    work: Path | None = None,
    timeout: int = 300,
) -> DemoResult:
    """Execute the tour notebook headless and write it and its HTML copy to ``out``."""
    from jupyter_memory.agent.loop import TURN_MIME

    examples = Path(examples) if examples is not None else examples_dir()
    out = Path(out) if out is not None else Path("build") / "demo"
    if live and not any(trust_table.env(k) for k in MODEL_ENV):
        raise DemoError("--live needs a model: set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL "
                        "for another Messages API endpoint), or drop --live to replay.")
    if not (examples / TOUR).is_file():
        raise DemoError(f"{examples / TOUR} does not exist: run this from a checkout of "
                        "jupyter-memory (the examples are not part of the installed package), "
                        "or pass --examples DIR.")
    work = Path(work) if work is not None else scratch_folder()
    copy_path = prepare_work(examples / TOUR, work / Path(TOUR).stem)
    started = time.monotonic()
    env = kernel_env(work / "home", live=live)
    try:
        nb = execute_notebook(copy_path, env=env, timeout=timeout)
    except Exception as exc:  # nbclient's CellExecutionError, or a kernel that died
        raise DemoError(f"The demo notebook failed; the partial run is in {copy_path}.\n{exc}") from exc
    seconds = time.monotonic() - started
    import nbformat

    notebook = out / TOUR
    Root.declare("given", out).write(notebook, nbformat.writes(static_outputs(nb)))
    html = write_html(nb, out / "02-tour.html", links_from=examples)
    turns = sum(1 for c in nb.cells for o in c.get("outputs", [])
                if TURN_MIME in (o.get("data") or {}))
    cells = sum(1 for c in nb.cells if c.cell_type == "code")
    return DemoResult(notebook, html, work, cells, turns, seconds, live)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jupyter_memory.demo",
        description="Run examples/02-tour.ipynb headless in a temp folder (offline, replaying "
        "its recording) and write the executed notebook and an HTML copy to build/demo/.",
    )
    parser.add_argument("--live", action="store_true",
                        help="answer with the model of ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL "
                        "instead of the recording")
    parser.add_argument("--examples", type=Path, help="the examples folder (default: the checkout's)")
    parser.add_argument("--out", type=Path, default=Path("build") / "demo",
                        help="where to write the executed notebook and its HTML copy")
    parser.add_argument("--timeout", type=int, default=300, help="seconds allowed per cell")
    args = parser.parse_args(argv)
    try:
        result = run_demo(args.examples, args.out, live=args.live, timeout=args.timeout)
    except DemoError as exc:
        print(f"jupyter-memory demo: {exc}", file=sys.stderr)
        return 1
    print(result.describe())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
