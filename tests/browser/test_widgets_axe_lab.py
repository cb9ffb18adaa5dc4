"""Issue 31, item 9: axe-core finds nothing serious in the ``%memory`` and ``%context`` views.

A notebook in a real JupyterLab runs ``%memory`` and ``%context`` as a user would; axe-core
(the lab extension's devDependency, injected from its node_modules) checks the output
areas of both live ipywidgets views, in the light and the dark theme.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lab_helpers import axe_outputs, new_notebook, output, run_cell, set_theme, shot

from jupyter_memory.memdir.store import MemoryStore

pytestmark = pytest.mark.browser

WIDGET = ".jp-OutputArea-output .widget-vbox"


@pytest.fixture(scope="module")
def seed_lab() -> Callable[[Any], None]:
    def seed(lab: Any) -> None:
        store = MemoryStore(lab.memdir)
        store.create(
            "revenue-in-cents",
            "The sales.revenue column is stored in cents",
            "project",
            "Divide by 100.\n",
        )
        store.create("ana-role", "Ana is a data scientist on the growth team", "user", "Role.\n")

    return seed


@pytest.fixture(scope="module")
def viewport() -> dict[str, int]:
    return {"width": 1280, "height": 1600}


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_axe_finds_nothing_serious_in_the_memory_and_context_views(
    page: Any, lab: Any, axe_script: Path, artifacts: Path, theme: str
) -> None:
    new_notebook(page, lab)
    set_theme(page, theme)
    run_cell(page, 0, "%load_ext jupyter_memory")
    memory = run_cell(page, 1, "%memory")
    output(memory).locator(WIDGET).first.wait_for(state="visible")
    context = run_cell(page, 2, "%context")
    output(context).locator(WIDGET).first.wait_for(state="visible")
    found = axe_outputs(page, axe_script, {"memory": memory, "context": context})
    shot(page, artifacts, f"widgets-axe-{theme.split()[-1].lower()}")
    assert found == {"memory": [], "context": []}
