"""The scripted model of 12-team-memory.ipynb (used by make_recordings.py).

Two turns of Ana's main agent. In the first it answers from the team's memory: it reads the
two team memories the team index points at, then answers. In the second it hands the review
of a join to the project's agent ``data-reviewer`` through its Agent tool; the reviewer (a
delegated child session, recognised by its own system prompt) saves what it found in its own
memory folder, then reports; the main agent passes the finding on. Every decision here —
to read, to delegate, what to save — is this script's, not a model's.
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

#: The task the main agent writes for the reviewer: everything it needs, since the
#: reviewer sees nothing of the main conversation.
REVIEW_TASK = (
    "Review this join from Ana's revenue analysis: "
    "`orders.merge(refunds, on=\"order_id\")`. After it, total revenue dropped by 40%. "
    "Find the cause, say how the join should be written, and report in a few sentences.")

REVIEW_ANSWER = (
    "The 40% drop comes from the join type: `orders.merge(refunds, on=\"order_id\")` is an "
    "**inner join**, so it keeps only the orders that have a refund. Write it as "
    "`orders.merge(refunds, on=\"order_id\", how=\"left\")` and fill the missing refund "
    "amounts with 0 before subtracting.\n\n"
    "I saved this in my own memory (`feedback_refunds_inner_join.md`), so I check refund "
    "joins first next time.")


def _reviewer(req):
    """The delegated data-reviewer: save the lesson in its own folder, then report."""
    if not req.after_tools:
        path = req.memdir / "feedback_refunds_inner_join.md"
        return Turn(tool_calls=[ToolCall("Write", {"file_path": str(path),
                                                   "content": REVIEW_NOTE})])
    return Turn(text=REVIEW_ANSWER)


def respond(req):
    if req.kind != "main":
        return None
    system = "\n".join(b.get("text", "") for b in req.body.get("system") or [])
    if 'You are the agent "data-reviewer"' in system:
        return _reviewer(req)
    if req.mentions("data reviewer"):
        if not req.after_tools:
            return Turn(tool_calls=[ToolCall("Agent", {
                "subagent_type": "data-reviewer", "description": "Review the refunds join",
                "prompt": REVIEW_TASK})])
        return Turn(text=(
            "The data reviewer found it: `orders.merge(refunds, on=\"order_id\")` is an inner "
            "join, so only the orders **with** a refund survive it, hence the 40% drop.\n\n"
            "Change it to `orders.merge(refunds, on=\"order_id\", how=\"left\")` and fill the "
            "missing refunds with 0 before subtracting.\n\n"
            "The reviewer keeps this lesson in its own memory; it is not in yours or the "
            "team's. Save it to the team if everyone should know."))
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
