"""The scripted model of 11-evaluating-recall.ipynb (used by make_recordings.py).

The notebook runs in prefetch mode and waits for the prefetch, so each answer is written
with whatever the selector attached. The scripted small model reads the manifest the way
a careful real one would: it picks a memory only when the memory's *description* names
what the message asks about (its file name and body play no part), so a memory whose
description says nothing specific is never picked. The main model answers from the
memories its request carries, and says when it has none.
"""

import re

from jupyter_memory.localapi import ToolCall, Turn

RETURNS = "Which table should I query?"
CHURN = "What did we decide last week about retraining the churn model?"
TOTALS = "Why are the sales totals in my report 100 times too big?"

#: What a description must mention for the small model to pick it, per message.
WANTED = {
    RETURNS: ("returned orders", "weekly sales report"),
    TOTALS: ("cents",),
}

_LINE = re.compile(r"^- (?:\[\w+\] )?(?P<file>\S+\.md) \([^)]*\)(?:: (?P<description>.*))?$")


def _selector(req):
    text = req.last_user_text  # the manifest, then the person's message (two blocks)
    manifest = text.split("Memory files:\n", 1)[-1].split("\nThe person's message:\n", 1)[0]
    message = text.split("The person's message:\n", 1)[-1]
    wanted = next((words for question, words in WANTED.items() if question in message), ())
    picks = []
    for line in manifest.splitlines():
        found = _LINE.match(line)
        description = (found.group("description") or "").lower() if found else ""
        if found and any(word in description for word in wanted):
            picks.append(found.group("file"))
    return Turn(tool_calls=[ToolCall("select_memories", {"selected_memories": picks})])


def _recalled(req, file):
    return f"Memory recalled for this message: {file}" in str(req.messages)


def respond(req):
    if req.kind == "selector":
        return _selector(req)
    if req.kind != "main":
        return None
    if req.mentions(RETURNS):
        if _recalled(req, "project_returns_table.md"):
            return Turn(text=(
                "Query **`warehouse.returns`**: returned orders are not in the `orders` table, "
                "which keeps the original order even after a return (your memory "
                "*returns-table*). Filter it on last month's return dates and join `orders` "
                "on `order_id` for the region.\n\nFor the weekly report, keep the usual layout "
                "(*weekly-report*): one table per region, totals in euros with a thousands "
                "separator."))
        return Turn(text="Returned orders are usually flagged in the `orders` table; filter "
                         "on its status column.")
    if req.mentions(CHURN):
        if _recalled(req, "project_churn_retrain.md"):
            return Turn(text=(
                "You decided to retrain the churn model **monthly, not weekly**, on the first "
                "Monday of the month: the weekly retrains moved the scores too much from one "
                "week to the next (your memory *churn-retrain*, written 6 days ago). Compare "
                "each new model against last month's."))
        return Turn(text="I have no record of a decision about the churn model.")
    if req.mentions(TOTALS):
        if _recalled(req, "project_data_note.md"):
            return Turn(text=(
                "Because `sales.revenue` holds integer **cents**, not euros (your memory "
                "*data-note*): the billing export writes cents. Divide the totals by 100 "
                "before they go into the report."))
        return Turn(text=(
            "Nothing I can see explains it. The usual suspects are a join that repeats rows "
            "(check the row count before and after each merge) or a column kept in a smaller "
            "unit than you expect. Can you show me the query behind the totals?"))
    return None
