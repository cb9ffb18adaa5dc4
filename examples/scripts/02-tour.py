"""The scripted model of 02-tour.ipynb (used by make_recordings.py; not a real model).

One agent turn: the index names a memory about revenue, so the "model" reads it and the
rounding preference, inspects ``sales``, then answers in rounded euros.
"""

from jupyter_memory.localapi import ToolCall, Turn


def respond(req):
    if req.kind == "main" and req.mentions("total revenue in January"):
        if not req.after_tools:
            return Turn(
                text="Your memory index has a note on how revenue is stored and one on how to "
                "report money. Let me read both, and look at `sales`.",
                tool_calls=[
                    ToolCall("Read", {"file_path": str(req.memdir / "project_revenue_in_cents.md")}),
                    ToolCall("Read", {"file_path": str(req.memdir / "feedback_round_to_euros.md")}),
                    ToolCall("InspectVariable", {"name": "sales"}),
                ],
            )
        return Turn(
            text="Total revenue for **January 2026** was **€22,420**.\n\n"
            "- north: 1,254,300 cents\n- south: 987,650 cents\n\n"
            "`revenue` is stored in integer cents (your memory *revenue-in-cents*), so the sum, "
            "2,241,950 cents, is €22,419.50 — rounded to whole euros as you prefer for reports."
        )
    return None
