"""Issue 26, break 12: the Memory panel never shows a response body.

Here the lab extension runs in a JupyterLab whose server extension is switched off (as
in another environment, or a JupyterHub with its own config). Jupyter's 404 page for
our API route carries the server's API token; the panel used to print that page whole
as its error, where a screenshot or a shared screen would catch it. Now it names the
missing extension and says how to enable it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lab_helpers import shot

pytestmark = pytest.mark.browser

PANEL_TAB = '.jp-SideBar [data-id="jupyter-memory-panel"]'
MISSING = "The jupyter-memory server extension is not running in this Jupyter server"


@pytest.fixture(scope="module")
def seed_lab() -> Callable[[Any], None]:
    def seed(lab: Any) -> None:
        # The person's own config switches the server extension off; the lab
        # extension (the panel) is still installed and loads.
        config = lab.home / ".jupyter"
        config.mkdir(parents=True)
        (config / "jupyter_server_config.json").write_text(
            json.dumps({"ServerApp": {"jpserver_extensions": {"jupyter_memory": False}}}),
            encoding="utf-8",
        )

    return seed


def _not_found_page(lab: Any) -> str:
    request = urllib.request.Request(
        f"{lab.url}/jupyter-memory/memories?path=", headers={"Authorization": f"token {lab.token}"}
    )
    with pytest.raises(urllib.error.HTTPError) as failed:
        urllib.request.urlopen(request, timeout=30)
    assert failed.value.code == 404
    return failed.value.read().decode("utf-8", "replace")


def test_the_panel_names_the_missing_server_extension(
    page: Any, lab: Any, artifacts: Path
) -> None:
    # What the panel is answered: Jupyter's 404 page, the API token inside.
    assert lab.token in _not_found_page(lab)

    page.goto(lab.home_url())
    page.locator(PANEL_TAB).click()
    panel = page.locator("#jupyter-memory-panel")
    status = panel.locator(".jp-MemoryPanel-status.jp-mod-error")
    status.get_by_text(MISSING).wait_for(state="visible")
    text = panel.inner_text()
    assert "jupyter server extension enable jupyter_memory" in text
    assert lab.token not in text and lab.token not in panel.inner_html()
    assert "404" not in text and "<" not in text and "Not Found" not in text
    # One message, not a second copy from the doctor's checks.
    assert panel.locator(".jp-MemoryPanel-finding").count() == 0
    shot(panel, artifacts, "panel-extension-missing")
