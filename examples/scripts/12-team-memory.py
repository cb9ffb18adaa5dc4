"""The scripted model of 12-team-memory.ipynb (used by make_recordings.py).

The notebook's agent answers a question from the team's memory: it reads the team memory
the team index points at, then answers. The defined agent ``data-reviewer`` saves what it
learned into its own memory folder, then reports.
"""

from jupyter_memory.localapi import ToolCall, Turn

REVIEW_NOTE = """\
---
name: refunds-vanish-in-inner-joins
description: an inner join of orders and refunds on order_id drops orders without refunds
type: feedback
---
Join refunds to orders with a left join on `order_id`; an inner join keeps only refunded
orders and shrinks revenue.

**Why:** found while reviewing the Q3 revenue notebook (2026-11-30).
**How to apply:** check the join type whenever refunds are joined to orders.
"""


def respond(req):
    if req.kind != "main":
        return None
    system = "\n".join(b.get("text", "") for b in req.body.get("system") or [])
    if 'You are the agent "data-reviewer"' in system:
        if not req.after_tools:
            path = req.memdir / "feedback_refunds_inner_join.md"
            return Turn(tool_calls=[ToolCall("Write", {"file_path": str(path),
                                                       "content": REVIEW_NOTE})])
        return Turn(text=(
            "The revenue drop comes from the **inner join**: `orders.merge(refunds, "
            "on='order_id')` keeps only orders that have a refund. Use `how='left'`.\n\n"
            "I noted this in my own memory (`feedback_refunds_inner_join.md`), so I will "
            "check refund joins first next time."))
    if req.mentions("fiscal year"):
        team = req.memdir / "team"
        if not req.after_tools:
            return Turn(tool_calls=[
                ToolCall("Read", {"file_path": str(team / "project_fiscal_year.md")}),
                ToolCall("Read", {"file_path": str(team / "project_revenue_in_cents.md")}),
            ])
        return Turn(text=(
            "From the team's memory:\n\n"
            "- The **fiscal year starts on 1 April** (saved by bob), so Q1 is April to June.\n"
            "- **Revenue is stored in cents** (saved by ana): divide by 100 before showing "
            "totals.\n\n"
            "So FY2026 Q1 revenue is `df[df.date.between('2026-04-01', '2026-06-30')]"
            ".revenue.sum() / 100`."))
    return None
