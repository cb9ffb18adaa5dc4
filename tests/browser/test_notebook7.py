"""The views in Notebook 7: saved copies trusted and untrusted, and one live notebook
checked with axe-core, at every width and for contrast in each theme (issue 31).

Notebook 7 runs JupyterLab's notebook and render-mime machinery, so our lab extension's
renderers apply there too. One Notebook 7 server serves the whole module (the ``app``
fixture); the checks are ``lab_helpers``' own, as in ``test_widgets_axe_lab.py`` and
``test_widths_lab.py``. The saved notebooks are executed here (their widget outputs as
JupyterLab saves them, without widget state) and signed with the server's key for the
trusted case; a changed copy is untrusted. The live notebook runs once (an agent turn
against the fake Messages API, ``%context`` and ``%memory``) and every later check reads
that one page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from lab_helpers import (
    AGENT_SETUP,
    THEMES,
    WIDGET,
    WIDTHS,
    axe_outputs,
    console_errors,
    contrast_problems,
    free_segment_problems,
    layout_problems,
    open_notebook,
    output,
    resize,
    run_cell,
    set_theme,
    shot,
    wait_for_static_views,
)
from nbformat.sign import NotebookNotary

from jupyter_memory.localapi import FakeAnthropic, Turn
from jupyter_memory.memdir.store import MemoryStore

pytestmark = pytest.mark.browser

VIEW = ".jp-MemoryView"


@pytest.fixture(scope="module")
def app() -> str:
    return "notebook"


@pytest.fixture(scope="module")
def viewport() -> dict[str, int]:
    return {"width": 1400, "height": 1600}


@pytest.fixture(scope="module")
def fake_model() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        server.push(Turn(text="In **cents**.", expect_user_contains="revenue"))
        yield server


def _saved_notebook(memdir: Path, folder: Path) -> nbformat.NotebookNode:
    """``%context`` and ``%memory`` executed and saved without widget state."""
    from nbclient import NotebookClient

    from jupyter_memory.demo import kernel_env

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s)
                for s in ("%load_ext jupyter_memory", "%context", "%memory")]
    env = kernel_env(folder / "kernel-home", extra={"JUPYTER_MEMORY_DIR": str(memdir)})
    NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=False,
                   resources={"metadata": {"path": str(folder)}}).execute(env=env)
    return nb


@pytest.fixture(scope="module")
def seed_lab(fake_model: FakeAnthropic) -> Callable[[Any], None]:
    def seed(server: Any) -> None:
        store = MemoryStore(server.memdir)
        store.create("revenue-in-cents", "The sales.revenue column is stored in cents",
                     "project", "Divide sales.revenue by 100 before any sum.\n")
        store.create("label-axes", "Label every axis of every plot", "feedback", "Units.\n")
        data = server.home / ".local" / "share" / "jupyter"  # the server's data dir
        data.mkdir(parents=True)
        nb = _saved_notebook(server.memdir, server.root)
        (server.root / "kernel-home").rename(server.home / "kernel-home")
        nbformat.write(nb, str(server.root / "trusted.ipynb"))
        NotebookNotary(data_dir=str(data)).sign(nb)
        nb.cells.append(nbformat.v4.new_markdown_cell("A copy someone sent."))
        nbformat.write(nb, str(server.root / "untrusted.ipynb"))
        live = nbformat.v4.new_notebook()
        live.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
        live.cells = [nbformat.v4.new_code_cell("")]
        nbformat.write(live, str(server.root / "live.ipynb"))
        server.env.update(ANTHROPIC_BASE_URL=fake_model.base_url, ANTHROPIC_API_KEY="test-key",
                          JUPYTER_MEMORY_MODEL="claude-sonnet-4-5")

    return seed


@pytest.mark.parametrize("name", ["trusted", "untrusted"])
def test_notebook7_shows_the_static_copies(page: Any, lab: Any, name: str,
                                           artifacts: Path) -> None:
    errors = console_errors(page)
    open_notebook(page, lab, f"{name}.ipynb")
    page.locator(VIEW).nth(1).wait_for(state="visible")
    if name == "trusted":
        # The widget manager holds no model: the views stay static, with no console error.
        wait_for_static_views(page, VIEW, 2)
    assert page.get_by_text("Error displaying widget").filter(visible=True).count() == 0
    views = page.locator(VIEW)
    assert views.count() == 2
    for i in range(2):
        assert "jp-MemoryView-static" in (views.nth(i).get_attribute("class") or "")
    views.nth(0).get_by_text("% of window").wait_for(state="visible")
    views.nth(1).get_by_text("stored in cents").wait_for(state="visible")
    # Sanitised when untrusted: the bar keeps its free space, drawn to its width.
    assert free_segment_problems(views.nth(0)) == []
    page.screenshot(path=str(artifacts / f"notebook7-{name}.png"))
    assert errors == []


@pytest.fixture(scope="module")
def live(browser: Any, lab: Any, viewport: dict[str, int],
         fake_model: FakeAnthropic) -> Iterator[dict[str, Any]]:
    """The live notebook, run once: its page and the outputs the checks read."""
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_notebook(page, lab, "live.ipynb")
        run_cell(page, 0, AGENT_SETUP)
        turn = run_cell(page, 1, "%%agent\nHow is the revenue column stored?")
        output(turn).locator(".jp-MemoryTurn-answer").get_by_text("In cents").wait_for(
            state="visible")
        assert fake_model.failures == []
        context_cell = run_cell(page, 2, "%context")
        memory_cell = run_cell(page, 3, "%memory")
        view = output(context_cell).locator(WIDGET).first
        view.wait_for(state="visible")
        view.locator(".jm-level-label").first.wait_for(state="visible")
        view.locator(".jm-gauge-label").first.wait_for(state="visible")
        output(memory_cell).locator(WIDGET).first.wait_for(state="visible")
        yield {"page": page, "turn": turn, "context": context_cell, "memory": memory_cell,
               "view": view}
    finally:
        context.close()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_notebook7_axe_finds_nothing_serious(live: dict[str, Any], axe_script: Path,
                                             artifacts: Path, theme: str) -> None:
    page = live["page"]
    try:
        set_theme(page, THEMES[theme])
        found = axe_outputs(page, axe_script,
                            {"memory": live["memory"], "context": live["context"]})
        shot(page, artifacts, f"notebook7-axe-{theme}")
    finally:
        set_theme(page, THEMES["light"])
    assert found == {"memory": [], "context": []}


def test_notebook7_views_fit_every_width_and_meet_the_contrast_goals(
    live: dict[str, Any], artifacts: Path
) -> None:
    page = live["page"]
    views = {"context": live["view"], "turn": output(live["turn"])}
    found: dict[int, list[str]] = {}
    try:
        for width in WIDTHS:
            resize(page, width)
            found[width] = layout_problems(views)
            shot(live["view"], artifacts, f"notebook7-context-{width}px")
    finally:
        resize(page, 1400)
    assert found == {w: [] for w in WIDTHS}
    contrast: dict[str, list[str]] = {}
    try:
        for theme, name in THEMES.items():
            set_theme(page, name)
            contrast[theme] = contrast_problems(views, theme)
    finally:
        set_theme(page, THEMES["light"])
    assert contrast == {theme: [] for theme in THEMES}
