"""A notebook saved from JupyterLab and reopened with a new kernel reads as it did.

JupyterLab saves no widget state by default, so a reopened notebook has no model for the
widget views of ``%context`` and ``%memory``. Before the lab extension's view renderer,
every such output read "Error displaying widget: model not found" although the static
HTML was in the file. Here a notebook is made live in the browser (context view, memory
browser, one agent turn), saved from JupyterLab, its kernel shut down, and reopened: the
outputs show their static copies, the context bar and the memory table, and no error,
on the page or on the browser console.
The same file without its trust signature (untrusted) reads the same, sanitized.
Screenshots go to ``test-artifacts/`` (``reopened-*.png``; the docs copy them).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from lab_helpers import (
    console_errors,
    free_segment_problems,
    new_notebook,
    output,
    run_cell,
    shot,
    wait_for_static_views,
)

from jupyter_memory.context.models import DEFAULT_MODEL
from jupyter_memory.localapi import FakeAnthropic, Turn
from jupyter_memory.memdir.store import MemoryStore

pytestmark = pytest.mark.browser

MEMORIES = {
    "revenue-in-cents": ("The sales.revenue column is stored in cents", "project",
                         "Divide sales.revenue by 100 before any sum or mean.\n"),
    "label-axes": ("Label every axis of every plot", "feedback", "Units included.\n"),
}
ANSWER = "The revenue column is in **cents**: divide by 100 before summing."
VIEW = ".jp-MemoryView"
ERROR = "Error displaying widget"


@pytest.fixture(scope="module")
def fake_model() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        server.push(Turn(text=ANSWER, expect_user_contains="revenue"))
        yield server


@pytest.fixture(scope="module")
def seed_lab(fake_model: FakeAnthropic) -> Callable[[Any], None]:
    def seed(lab: Any) -> None:
        store = MemoryStore(lab.memdir)
        for name, (description, kind, body) in MEMORIES.items():
            store.create(name, description, kind, body)
        lab.env.update(
            ANTHROPIC_BASE_URL=fake_model.base_url,
            ANTHROPIC_API_KEY="test-key",
            # The default model has a 1M-token window: its level labels sit close together.
            JUPYTER_MEMORY_MODEL=DEFAULT_MODEL,
        )

    return seed


@pytest.fixture(scope="module")
def viewport() -> dict[str, int]:
    return {"width": 1280, "height": 2400}


def _api(lab: Any, method: str, path: str) -> Any:
    request = urllib.request.Request(
        f"{lab.url}{path}", method=method, headers={"Authorization": f"token {lab.token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        body = reply.read()
    return json.loads(body) if body else None


def _shut_down_kernels(lab: Any) -> None:
    """End every session, so the notebook reopens with a new kernel."""
    for session in _api(lab, "GET", "/api/sessions"):
        _api(lab, "DELETE", f"/api/sessions/{session['id']}")
    assert _api(lab, "GET", "/api/sessions") == []


def _open(page: Any, lab: Any, path: str) -> None:
    """Open ``path`` and wait until its kernel is idle and its outputs are drawn."""
    page.set_default_timeout(60_000)
    page.goto(lab.page_url(path))
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget;"
        " const k = w && w.sessionContext && w.sessionContext.session"
        " && w.sessionContext.session.kernel;"
        " return !!k && k.connectionStatus === 'connected' && k.status === 'idle'; }"
    )
    page.locator(f"{VIEW}").nth(1).wait_for(state="visible")


def _check_static_views(page: Any, *, trusted: bool = True) -> tuple[Any, Any]:
    """The reopened outputs: static copies with the bar and the table, no error shown.

    Untrusted, JupyterLab's sanitizer drops the bar's description (an aria-label) and
    some of its styles; the legend says the same in a table.
    """
    views = page.locator(VIEW)
    assert views.count() == 2
    context, memories = views.nth(0), views.nth(1)
    for view in (context, memories):
        assert "jp-MemoryView-static" in (view.get_attribute("class") or "")
    # The context bar (the window split by category) and its levels.
    if trusted:
        context.locator("[aria-label^='Context window']").wait_for(state="visible")
    context.get_by_text("% of window").wait_for(state="visible")
    text = context.inner_text()
    for word in ("messages", "free", "warning", "autocompact", "blocking"):
        assert word in text, word
    # The memory table, one row per memory.
    table = memories.locator("table").first
    table.wait_for(state="visible")
    for name, (description, _kind, _body) in MEMORIES.items():
        assert description in memories.inner_text(), name
    # The agent turn is a MIME renderer of its own: it reads as it did.
    page.get_by_text("divide by 100 before summing").first.wait_for(state="visible")
    return context, memories


def test_live_views_save_and_reopen_without_their_kernel(
    page: Any, lab: Any, fake_model: FakeAnthropic, artifacts: Path
) -> None:
    new_notebook(page, lab)
    run_cell(page, 0, "%load_ext jupyter_memory")
    turn = run_cell(page, 1, "%%agent\nHow is the revenue column stored?")
    output(turn).get_by_text("divide by 100 before summing").wait_for(state="visible")
    assert fake_model.remaining == 0 and fake_model.failures == []
    context_cell = run_cell(page, 2, "%context")
    memory_cell = run_cell(page, 3, "%memory")
    # Live while the kernel runs: the widgets, not their copies.
    for cell in (context_cell, memory_cell):
        live = output(cell).locator(f"{VIEW}.jp-MemoryView-live .widget-vbox").first
        live.wait_for(state="visible")
    output(memory_cell).locator("select option").first.wait_for(state="attached")

    path = page.evaluate("() => window.jupyterapp.shell.currentWidget.context.path")
    # What Ctrl+S does, minus the rename dialog Lab shows on an untitled file's first save.
    page.evaluate("() => window.jupyterapp.shell.currentWidget.context.save()")
    saved = lab.root / path
    nb = nbformat.read(str(saved), as_version=4)
    assert "widgets" not in nb.metadata  # Lab's default: no widget state
    kinds = [set(o.get("data", {})) for c in nb.cells for o in c.get("outputs", [])]
    assert sum("application/vnd.jupyter-memory.view+json" in k for k in kinds) == 2
    _shut_down_kernels(lab)

    # Reopened (trusted: Lab signed it on save) with a new kernel.
    reopened = page
    errors = console_errors(reopened)
    _open(reopened, lab, path)
    # The widget manager holds no model for the views: they stay static, and nothing
    # (jupyterlab-manager's renderer least of all) logs "widget model not found".
    wait_for_static_views(reopened, VIEW, 2)
    assert reopened.get_by_text(ERROR).filter(visible=True).count() == 0
    context, memories = _check_static_views(reopened)
    shot(context, artifacts, "reopened-context")
    shot(memories, artifacts, "reopened-memory")
    shot(reopened, artifacts, "reopened-notebook")
    _shut_down_kernels(lab)

    # The same file without its signature: untrusted, so sanitized, and still readable.
    # Signatures are by content: a changed copy is one JupyterLab has never signed.
    nb.cells.append(nbformat.v4.new_markdown_cell("A copy someone sent."))
    untrusted = lab.root / "untrusted.ipynb"
    nbformat.write(nb, str(untrusted))
    third = page
    _open(third, lab, untrusted.name)
    assert third.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.model.cells.get(2).trusted"
    ) is False
    untrusted_context, _ = _check_static_views(third, trusted=False)
    # JupyterLab's sanitiser keeps the free segment's width and fill (issue 31, item 10).
    assert free_segment_problems(untrusted_context) == []
    assert third.get_by_text(ERROR).filter(visible=True).count() == 0
    assert errors == []
    shot(third.locator(VIEW).nth(0), artifacts, "reopened-context-untrusted")
