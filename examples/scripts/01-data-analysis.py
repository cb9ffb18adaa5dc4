"""The scripted model of 01-data-analysis.ipynb (used by make_recordings.py).

Day 1: the agent computes means; corrected, it computes medians without test customers, and
the extraction agent saves both rules. A week later (a new session; the notebook dates the
memory files back): the agent reads those two memories, sees from the age note on each Read
result that they are a week old, checks the one claim about the data (there are still test
customers) and applies both. The numbers in the answers are computed here from the notebook's
own data cell, so they match what the agent's code prints in the kernel.
"""

import json
import re
from pathlib import Path

from jupyter_memory.localapi import ToolCall, Turn

NOTEBOOK = Path(__file__).resolve().parent.parent / "01-data-analysis.ipynb"

MEANS = """(orders.groupby("plan")["amount_cents"].mean() / 100).round(2)"""
MEDIANS = """real = orders[~orders["customer_id"].str.startswith("T-")]
(real.groupby("plan")["amount_cents"].median() / 100).round(2)"""
QUARTERS = """real = orders[~orders["customer_id"].str.startswith("T-")]
print(f"orders from test customers (left out): {len(orders) - len(real)}")
pro = real[real["plan"] == "pro"]
(pro.groupby(pro["order_date"].dt.quarter)["amount_cents"].agg(["median", "count"])
    .assign(median=lambda t: t["median"] / 100))"""

MEDIAN_MEMORY = """\
---
name: median-order-values
description: summarise order values with the median, not the mean (they are very skewed)
type: feedback
---
Summarise order values with the median, not the mean.

**Why:** order values are very skewed (a few huge orders); the person corrected a mean-based answer.
**How to apply:** use `.median()` for typical order values; mention the mean only if asked.
"""

TEST_MEMORY = """\
---
name: exclude-test-customers
description: test customers (customer_id starting with T-) must be left out of every analysis
type: project
---
Customers whose `customer_id` starts with `T-` are load-test accounts, not real customers.

**Why:** their orders are synthetic and very large; the person asked to leave them out, always.
**How to apply:** filter `~orders["customer_id"].str.startswith("T-")` before any statistic.
"""


def _orders():
    """The notebook's orders table, made by running its own data cell."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    source = next("".join(c["source"]) for c in nb["cells"]
                  if c["cell_type"] == "code" and "".join(c["source"]).startswith("# A small"))
    namespace: dict = {}
    exec(compile(source, str(NOTEBOOK), "exec"), namespace)
    return namespace["orders"]


def _euros(value: float) -> str:
    return f"€{value:,.2f}"


def _numbers():
    orders = _orders()
    means = orders.groupby("plan")["amount_cents"].mean() / 100
    real = orders[~orders["customer_id"].str.startswith("T-")]
    medians = real.groupby("plan")["amount_cents"].median() / 100
    pro = real[real["plan"] == "pro"]
    by_quarter = pro.groupby(pro["order_date"].dt.quarter)["amount_cents"]
    return means, medians, by_quarter.median() / 100, by_quarter.count(), len(orders) - len(real)


def _age(results) -> str:
    """How old the memories read are, from the age note at the top of each Read result."""
    days = {m.group(1) for _, text in results
            for m in [re.search(r"last written (\d+) days ago", text)] if m}
    return f"{days.pop()} days" if len(days) == 1 else "several days"


def _index_line(file: str, text: str) -> str:
    name = re.search(r"^name: (.+)$", text, re.M).group(1)
    description = re.search(r"^description: (.+)$", text, re.M).group(1)
    return f"- [{name}]({file}) — {description}\n"


def _extraction(req):
    if "Use the median for order values" not in str(req.messages):
        return Turn(text="Nothing to save.")
    index = req.memdir / "MEMORY.md"
    if not req.after_tools:
        return Turn(tool_calls=[ToolCall("Read", {"file_path": str(index)})])
    if req.tool_results[0][0] == "Read":
        current = "".join(line.split("\t", 1)[1] + "\n"
                          for line in req.tool_results[0][1].splitlines() if "\t" in line)
        files = {"feedback_median_order_values.md": MEDIAN_MEMORY,
                 "project_exclude_test_customers.md": TEST_MEMORY}
        calls = [ToolCall("Write", {"file_path": str(req.memdir / f), "content": t})
                 for f, t in files.items()]
        lines = "".join(_index_line(f, t) for f, t in files.items())
        calls.append(ToolCall("Write", {"file_path": str(index), "content": current + lines}))
        return Turn(tool_calls=calls)
    return Turn(text="Saved feedback_median_order_values.md and project_exclude_test_customers.md.")


def respond(req):
    if req.kind == "extraction":
        return _extraction(req)
    if req.kind != "main":
        return None
    means, medians, q_median, q_count, tests = _numbers()
    if req.mentions("typical order value for each plan"):
        if not req.after_tools:
            return Turn(text="I'll compute it from `orders` (amounts are in cents).",
                        tool_calls=[ToolCall("RunPython", {
                            "code": MEANS, "description": "mean order value per plan, in euros"})])
        rows = "\n".join(f"| {plan} | {_euros(v)} |" for plan, v in means.items())
        return Turn(text="Average order value per plan (amounts converted from cents):\n\n"
                    f"| plan | mean order |\n|---|---:|\n{rows}")
    if req.mentions("Use the median"):
        if not req.after_tools:
            return Turn(text="Recomputing with medians, without test customers.",
                        tool_calls=[ToolCall("RunPython", {
                            "code": MEDIANS,
                            "description": "median order value per plan, test customers excluded"})])
        rows = "\n".join(f"| {plan} | {_euros(medians[plan])} | {_euros(means[plan])} |"
                         for plan in medians.index)
        return Turn(text="Typical (median) order value per plan, test customers left out:\n\n"
                    f"| plan | median | earlier mean |\n|---|---:|---:|\n{rows}\n\n"
                    "The medians are far below the means: a few very large orders (and the "
                    "load-test carts) pulled the means up.")
    if req.mentions("pro-plan order change from Q1 to Q2"):
        if not req.after_tools:
            return Turn(
                text="Your memory index has rules for exactly this: how to summarise order "
                "values and which customers to leave out. Let me read them first.",
                tool_calls=[
                    ToolCall("Read", {"file_path": str(req.memdir / "feedback_median_order_values.md")}),
                    ToolCall("Read", {"file_path": str(req.memdir / "project_exclude_test_customers.md")}),
                ])
        if all(name == "Read" for name, _ in req.tool_results):
            age = _age(req.tool_results)
            return Turn(text=(
                f"Both memories were last written {age} ago, so they may be out of date. The "
                "median rule is a preference about how to report, which does not go stale with "
                "the data; the test-customer rule makes a claim about the data (test accounts "
                "start with `T-`), so I check it while computing: median, test customers "
                "excluded, amounts in euros."),
                tool_calls=[ToolCall("RunPython", {
                    "code": QUARTERS,
                    "description": "median pro-plan order by quarter, test customers excluded"})])
        q1, q2 = q_median[1], q_median[2]
        change = (q2 - q1) / q1 * 100
        return Turn(text=(
            f"The typical pro-plan order went from **{_euros(q1)}** in Q1 to **{_euros(q2)}** in "
            f"Q2 ({change:+.1f}%), over {q_count[1]} and {q_count[2]} orders.\n\n"
            "As your memories ask: medians (*median-order-values*), test customers left out "
            "(*exclude-test-customers*), amounts converted from cents (*amounts-in-cents*). "
            f"The week-old test-customer rule still holds: the data has {tests} orders from "
            "`T-` accounts, and they are left out."
        ))
    return None
