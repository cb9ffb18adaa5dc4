"""The scripted model of 03-how-recall-works.ipynb (used by make_recordings.py).

Index mode (Part 1): the agent reads the two memories its index points at, and answers the
Chinese question from the index line. Prefetch mode (Part 2): the small model picks the
memories a message needs; the main model answers with whatever its request holds — without
the memories when it needs no tool, with them after a tool round or when the notebook waits.
"""

from jupyter_memory.localapi import ToolCall, Turn

CHART = "How should I chart revenue by region"
LOOK_FIRST = "Look at revenue_by_region first"
EAST = "华东区的销售数据在哪个表"

GOOD_CHART = (
    "Use a **horizontal bar chart sorted by value**, largest region first — not a pie chart "
    "(your feedback *no-pie-charts*: the finance lead sent one back from the Q3 deck). Revenue "
    "is stored in integer cents (*revenue-in-cents*), so divide by 100 and label the axis in "
    "euros."
)


def _selector(req):
    picks = []
    if CHART in req.prompt or LOOK_FIRST in req.prompt:
        picks = ["feedback_no_pie_charts.md", "project_revenue_in_cents.md"]
    if EAST in req.prompt:
        picks = ["project_华东区销售表.md"]
    shown = [p for p in picks if f"] {p} (" in req.last_user_text]  # only files in the manifest
    return Turn(tool_calls=[ToolCall("select_memories", {"selected_memories": shown})])


def _recalled(req, file):
    return f"Memory recalled for this message: {file}" in str(req.messages)


def respond(req):
    if req.kind == "selector":
        return _selector(req)
    if req.kind != "main":
        return None
    indexed = "MEMORY.md (your memory index" in str(req.messages[0])
    if req.mentions(CHART):
        if indexed and not req.after_tools:
            return Turn(
                text="Two lines of your memory index look relevant: one about charts, one "
                "about how revenue is stored. Let me read both.",
                tool_calls=[
                    ToolCall("Read", {"file_path": str(req.memdir / "feedback_no_pie_charts.md")}),
                    ToolCall("Read", {"file_path": str(req.memdir / "project_revenue_in_cents.md")}),
                ],
            )
        if indexed or _recalled(req, "feedback_no_pie_charts.md"):
            return Turn(text=GOOD_CHART)
        return Turn(
            text="A **pie chart** of each region's share of revenue works well for a quarterly "
            "review: label each slice with its revenue and percentage."
        )
    if req.mentions(LOOK_FIRST):
        if not req.after_tools:
            return Turn(text="Let me look at the data first.",
                        tool_calls=[ToolCall("InspectVariable", {"name": "revenue_by_region"})])
        return Turn(
            text=GOOD_CHART + "\n\nFrom `revenue_by_region`: north €25,643, south €20,332, "
            "east €14,809, west €9,874 — in that order, top to bottom."
        )
    if req.mentions(EAST):
        if indexed or _recalled(req, "project_华东区销售表.md"):
            return Turn(text="华东区的销售数据在 `warehouse.sales_east` 表里，不在 `sales` 总表中"
                        "（见你的记忆 *华东区销售表*）。")
        return Turn(text="我没有关于华东区数据表的信息。可以告诉我表名，或者让我在项目文件里搜索。")
    return None
