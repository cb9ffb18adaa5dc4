"""The scripted model of 04-writing-and-extraction.ipynb (used by make_recordings.py).

The main agent saves a memory when asked (topic file, then its index line). The extraction
agent, after each tool-less answer, reads the index and saves the fact stated in passing
(topic file and index line), or proposes it when approval mode is on.
"""

import re

from jupyter_memory.localapi import ToolCall, Turn

TEST_ORDERS = """\
---
name: exclude-test-orders
description: leave test orders (customer_id starting with T-) out of every analysis
type: feedback
---
Leave test orders out of every analysis: their `customer_id` starts with `T-`.

**Why:** the person asked for it; test orders distort counts and revenue.
**How to apply:** drop rows whose `customer_id` starts with `T-` before any aggregate.
"""

BOARD = """\
---
name: board-quarterly-only
description: the board wants quarterly figures only, never monthly; next board meeting 2027-01-15
type: project
---
The board only ever wants quarterly figures, never monthly ones. The next board meeting, for
which a board pack is being prepared, is on 2027-01-15.

**Why:** stated by the person while planning the board pack.
**How to apply:** aggregate to quarters in anything meant for the board.
"""

EMEA = """\
---
name: region-code-emea
description: since November 2026 the warehouse's European region code is EMEA, not EU
type: project
---
Since November 2026 the warehouse calls the European region `EMEA` instead of `EU`.

**Why:** a renaming in the warehouse; older extracts still say `EU`.
**How to apply:** use `EMEA` in new work; map `EU` to `EMEA` when combining older data.
"""

FACTS = {
    "board pack": ("project_board_quarterly_only.md", BOARD),
    "EMEA": ("project_region_code_emea.md", EMEA),
}


def _index_line(file: str, text: str) -> str:
    name = re.search(r"^name: (.+)$", text, re.M).group(1)
    description = re.search(r"^description: (.+)$", text, re.M).group(1)
    return f"- [{name}]({file}) — {description}\n"


def _unnumbered(read_result: str) -> str:
    """The file text from a Read result (``     1\\tline``), without the line numbers."""
    lines = [line.split("\t", 1)[1] for line in read_result.splitlines() if "\t" in line]
    return "".join(line + "\n" for line in lines)


def _extraction(req):
    conversation = str(req.messages[:-1]) if req.kind == "extraction" else ""
    fact = next((key for key in FACTS if key in conversation[-3000:]), None)
    if fact is None:
        return Turn(text="Nothing to save.")
    file, text = FACTS[fact]
    index = req.memdir / "MEMORY.md"
    if not req.after_tools:
        return Turn(tool_calls=[ToolCall("Read", {"file_path": str(index)})])
    if req.tool_results[0][0] == "Read":
        current = _unnumbered(req.tool_results[0][1])
        return Turn(tool_calls=[
            ToolCall("Write", {"file_path": str(req.memdir / file), "content": text}),
            ToolCall("Write", {"file_path": str(index), "content": current + _index_line(file, text)}),
        ])
    return Turn(text=f"Saved {file}.")


def respond(req):
    if req.kind == "extraction":
        return _extraction(req)
    if req.kind != "main":
        return None
    if req.mentions("leave test orders out"):
        if not req.after_tools:
            file = "feedback_exclude_test_orders.md"
            return Turn(
                text="I'll save that as a feedback memory and add it to the index.",
                tool_calls=[
                    ToolCall("Write", {"file_path": str(req.memdir / file), "content": TEST_ORDERS}),
                    ToolCall("Write", {"file_path": str(req.memdir / "MEMORY.md"),
                                       "content": _index_line(file, TEST_ORDERS)}),
                ],
            )
        return Turn(text="Saved: from now on I leave out orders whose `customer_id` starts with "
                    "`T-` (memory *exclude-test-orders*).")
    if req.mentions("board pack"):
        return Turn(text=(
            "A quarterly board pack, in this order:\n\n"
            "1. **Headline** — revenue and margin for the quarter against plan and last year.\n"
            "2. **Regions** — one sorted bar chart per measure, quarter over quarter.\n"
            "3. **Customers** — new, churned and net, by quarter.\n"
            "4. **Risks and asks** — what the board should decide.\n\n"
            "Every figure aggregated to quarters; test orders left out."
        ))
    if req.mentions("EMEA"):
        return Turn(text="Use **EMEA** for the European region throughout the outline; if you "
                    "combine older extracts that still say `EU`, map `EU` to `EMEA` first.")
    return None
