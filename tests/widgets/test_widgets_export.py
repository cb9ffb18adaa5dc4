"""Widget outputs of an executed notebook in nbconvert's HTML, with and without widget state.

nbclient saves the widget state (``store_widget_state``), JupyterLab by default does not.
With the state, nbconvert embeds each widget view for the ipywidgets HTML manager and the
saved models carry what the view showed; without it, nbconvert falls back to the static
copy in the same output, which must show the context bar, the legend and the memory
table. The copy must also read when the HTML is sanitized (untrusted output, GitHub).
"""

from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter
from traitlets.config import Config

from jupyter_memory.demo import kernel_env
from jupyter_memory.memdir.store import MemoryStore
from jupyter_memory.widgets._base import VIEW_MIME, WIDGET_MIME

STATE_MIME = "application/vnd.jupyter.widget-state+json"
MEMORIES = {
    "revenue-in-cents": ("The sales.revenue column is stored in cents", "project"),
    "label-axes": ("Label every axis of every plot", "feedback"),
}


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> nbformat.NotebookNode:
    """``%context`` and ``%memory`` run by nbclient, as ``jupyter nbconvert --execute`` does."""
    base = tmp_path_factory.mktemp("export")
    memdir = base / "mem"
    store = MemoryStore(memdir)
    for name, (description, kind) in MEMORIES.items():
        store.create(name, description, kind, f"{description}.\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src)
                for src in ("%load_ext jupyter_memory", "%context", "%memory")]
    env = kernel_env(base / "home", extra={"JUPYTER_MEMORY_DIR": str(memdir)})
    client = NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(base)}})
    client.execute(env=env)
    return nb


def _html(nb: nbformat.NotebookNode, **options: object) -> str:
    body, _resources = HTMLExporter(template_name="lab", **options).from_notebook_node(nb)
    return body


def _views(nb: nbformat.NotebookNode) -> list[dict]:
    return [o["data"] for c in nb.cells for o in c.get("outputs", []) if VIEW_MIME in o["data"]]


def test_with_widget_state_the_views_are_embedded(executed: nbformat.NotebookNode) -> None:
    views = _views(executed)
    assert [v[VIEW_MIME]["view"] for v in views] == ["ContextPanel", "MemoryBrowser"]
    state = executed.metadata["widgets"][STATE_MIME]["state"]
    for view in views:
        assert view[WIDGET_MIME]["model_id"] in state
    # The saved models hold what the views showed: the bar and the memory rows.
    saved = json.dumps(state)
    assert "Context window" in saved
    assert all(description[:24] in saved for description, _ in MEMORIES.values())
    page = _html(executed)
    assert page.count(f'<script type="{WIDGET_MIME}">') == 2
    assert f'<script type="{STATE_MIME}">' in page


@pytest.mark.parametrize("sanitize", [False, True], ids=["trusted", "sanitized"])
def test_without_widget_state_the_static_copies_show(
    executed: nbformat.NotebookNode, sanitize: bool
) -> None:
    nb = nbformat.from_dict(json.loads(json.dumps(executed)))
    del nb.metadata["widgets"]  # JupyterLab's default save
    page = _html(nb, sanitize_html=sanitize)
    assert WIDGET_MIME not in page and "Error displaying widget" not in page
    assert VIEW_MIME not in page  # our marker is for the lab extension only
    # The context view: the bar (its description goes with sanitizing; the legend stays),
    # every category with its tokens, the levels.
    assert ("Context window: system" in page) is not sanitize
    assert "% of window" in page
    for word in ("system", "tools", "messages", "autocompact buffer", "free", "blocking"):
        assert word in page, word
    # The memory table: one row per memory, with its type.
    for description, kind in MEMORIES.values():
        assert description in page and kind in page
    if sanitize:
        assert "<script" not in page.split("<body")[1].split("</body>")[0].replace(
            '<script type="text/x-mathjax-config">', "")  # no script of ours survived


def test_clearing_the_metadata_gives_the_static_copies_back(
    executed: nbformat.NotebookNode,
) -> None:
    """The documented way to export offline-readable HTML from an executed notebook."""
    exporter = HTMLExporter(template_name="lab", config=Config({"ClearMetadataPreprocessor": {
        "enabled": True, "clear_notebook_metadata": True}}))
    page, _resources = exporter.from_notebook_node(executed)
    assert WIDGET_MIME not in page and "% of window" in page
    assert all(description in page for description, _ in MEMORIES.values())
