"""The scripted model of 06a-instructions.ipynb (used by make_recordings.py).

The point of the notebook is that instruction files change what the model does, so this
script answers the way a model that follows its instructions would: each habit of an
answer is taken only when the instruction asking for it is in the request. The house style
(a bold bottom line, euros with a thousands separator, or thousands of euros after the
edit), online set apart from the regions, British spelling, the sandbox schema, a comment
on top of every query and a schema on every table are looked up in the request text, so a
file the harness did not send (the handbook it skipped, the SQL rule before a matching file
was read) leaves no trace in the answer. The numbers come from the same data the notebook
defines.
"""

import json

from jupyter_memory.localapi import ToolCall, Turn

Q3_CENTS = {"north": 160_340_012, "south": 121_950_433, "east": 98_004_120,
            "west": 87_615_990, "online": 171_245_880}
REGIONS = ["north", "south", "east", "west"]

# A phrase of each instruction, as the files in 06a-instructions/ word it.
HOUSE_STYLE = "start with a one-line **Bottom line:**"
EUROS = "euros with a thousands separator and no decimals"
THOUSANDS = "thousands of euros with one decimal"
CENTS = "is in integer **cents**"
ONLINE_APART = "`online` is a sales channel, not a region"
BRITISH = "Write British English"
SANDBOX = "My sandbox schema is `ana_tmp`"
QUERY_COMMENT = "Start every SQL query with a one-line comment"
QUALIFY = "qualify every table with its schema"
IDEMPOTENT = "must be safe to run twice"


def _sent(req) -> str:
    """Everything the request carries: system prompt and messages, as one text."""
    return json.dumps([req.body.get("system"), req.body.get("messages")], ensure_ascii=False)


def _money(cents: int, text: str) -> str:
    """An amount the way the instructions in ``text`` ask for it."""
    amount = cents / 100 if CENTS in text else cents
    if THOUSANDS in text:
        return f"€{amount / 1000:,.1f}k"
    if EUROS in text:
        return f"€{round(amount):,}"
    return f"{amount:,}"


def _q3_answer(text: str) -> str:
    ranked = REGIONS if ONLINE_APART in text else list(Q3_CENTS)
    leader = max(ranked, key=Q3_CENTS.get)
    total = sum(Q3_CENTS.values())
    looked = "I analysed" if BRITISH in text else "I analyzed"
    if HOUSE_STYLE not in text:
        return (f"Q3 revenue was {_money(total, text)}; {leader} led with "
                f"{_money(Q3_CENTS[leader], text)}.")
    bullets = [" · ".join(f"{r} {_money(Q3_CENTS[r], text)}" for r in ranked)]
    if ONLINE_APART in text:
        bullets.append(f"online {_money(Q3_CENTS['online'], text)}: a sales channel, not a "
                       "region, so it is reported on its own and not ranked")
    if CENTS in text:
        bullets.append(f"{looked} `q3_revenue_cents`: its values are cents, divided by 100 here")
    return (f"**Bottom line:** Q3 revenue was {_money(total, text)}, and {leader} led the "
            f"regions with {_money(Q3_CENTS[leader], text)}.\n\n"
            + "\n".join(f"- {b}" for b in bullets))


def _draft_answer(text: str) -> str:
    table = "analytics.sales" if QUALIFY in text else "sales"
    target = "ana_tmp" if SANDBOX in text else "a scratch schema"
    comment = "-- Q3 2026 revenue by region, in euros\n" if QUERY_COMMENT in text else ""
    divide = " / 100.0" if CENTS in text else ""
    query = (f"{comment}CREATE TABLE {target}.q3_revenue_by_region AS\n"
             f"SELECT region, SUM(revenue){divide} AS revenue_eur\n"
             f"FROM {table}\n"
             "WHERE sold_on >= DATE '2026-07-01' AND sold_on < DATE '2026-10-01'\n"
             "GROUP BY region;")
    where = (f"your sandbox schema `{target}`, as CLAUDE.local.md says" if SANDBOX in text
             else "a scratch schema of your choice")
    return (f"**Bottom line:** one `GROUP BY` over the sales table; keep the result in "
            f"{where.split(',')[0]}.\n\n```sql\n{query}\n```\n\n"
            f"- `revenue` is in cents, hence the division by 100\n"
            f"- the table goes to {where}")


def _review_answer(text: str) -> str:
    bullets = []
    if QUALIFY in text:
        bullets.append(
            "`q3_revenue.sql` reads `FROM sales`, but the project's SQL rule (it arrived with "
            "the file) wants every table qualified: `FROM analytics.sales`. My draft above has "
            "the same fault — write `FROM analytics.sales` there too.")
    else:
        bullets.append("`q3_revenue.sql` groups Q3 revenue by region and divides cents by 100.")
    if IDEMPOTENT in text:
        bullets.append(
            "`load_sales.py` appends the day with a plain `INSERT`, so a rerun after a failed "
            "night loads that day twice. `warehouse/etl/CLAUDE.md` asks for jobs that are safe "
            "to run twice: delete the day's rows first, in the same transaction — "
            "`db.execute(\"DELETE FROM analytics.sales WHERE sold_on = ?\", (day,))`.")
    else:
        bullets.append("`load_sales.py` inserts one day of the billing export.")
    bullets.append("otherwise both read correctly: Q3 is July to September, revenue in cents.")
    return ("**Bottom line:** neither is ready to schedule: the query breaks the SQL rule and "
            "the loader is not safe to rerun.\n\n" + "\n".join(f"- {b}" for b in bullets))


SUMMARY = f"""<analysis>
Ana asked for Q3 revenue, a SQL draft and a review of two warehouse files. Everything she
needs later is the Q3 figures and the two fixes.
</analysis>

<summary>
1. Primary Request and Intent:
   Q3 2026 revenue by region; a SQL query for it; a review of the Q3 query and the sales loader.

2. Key Technical Concepts:
   - `revenue` values are integer cents; online is a channel, not a region.

3. Files and Code Sections:
   - Kernel variable q3_revenue_cents (cents): {", ".join(f"{r} {c:,}" for r, c in Q3_CENTS.items())}.
   - warehouse/queries/q3_revenue.sql: Q3 revenue by region.
   - warehouse/etl/load_sales.py: loads one day of the billing export.

4. Errors and Fixes:
   - The query and the draft read `FROM sales`; fixed to `FROM analytics.sales`.
   - The loader appends; it must delete the day's rows before inserting.

5. Problem Solving:
   North led the regions in Q3 with 160,340,012 cents.

6. All User Messages:
   - "What was our Q3 revenue, and which region led?"
   - "Draft a SQL query for Q3 revenue by region, and tell me where to keep the result."
   - "Before I schedule them: check warehouse/queries/q3_revenue.sql and warehouse/etl/load_sales.py."

7. Pending Tasks:
   None.

8. Current Work:
   The review of the two files is done.
</summary>"""

NOTES = f"""<notes>
# Session title
Q3 revenue and two warehouse files

# Current state
Q3 figures given; the Q3 query and the sales loader reviewed. Nothing pending.

# Task specification
Ana asked for Q3 revenue by region, a SQL draft, and a review before scheduling.

# Files and functions
q3_revenue_cents (cents): {", ".join(f"{r} {c:,}" for r, c in Q3_CENTS.items())}.
warehouse/queries/q3_revenue.sql, warehouse/etl/load_sales.py.

# Workflow
Figures from the kernel variable; the two files read with Read.

# Errors and corrections
Tables must be written `analytics.sales`; the loader must delete the day before inserting.

# Learnings
Online is a channel, not a region.

# Key results
North led the regions in Q3 with 160,340,012 cents.

# Worklog
- Q3 revenue, SQL draft, review of two files.
</notes>"""


def respond(req):
    if req.kind == "summary":
        return Turn(text=SUMMARY)
    if req.kind == "notes":
        return Turn(text=NOTES)
    if req.kind != "main":
        return None  # extraction: nothing here is worth a memory
    text = _sent(req)
    if req.mentions("which region led"):
        return Turn(text=_q3_answer(text))
    if req.mentions("Draft a SQL query"):
        return Turn(text=_draft_answer(text))
    if req.mentions("Before I schedule them"):
        if not req.after_tools:
            return Turn(text="I'll read both files first.", tool_calls=[
                ToolCall("Read", {"file_path": "warehouse/queries/q3_revenue.sql"}),
                ToolCall("Read", {"file_path": "warehouse/etl/load_sales.py"})])
        return Turn(text=_review_answer(text))
    if req.mentions("north's Q3 revenue"):
        north = _money(Q3_CENTS["north"], text)
        if HOUSE_STYLE in text:
            return Turn(text=f"**Bottom line:** the north brought in {north} in Q3.")
        return Turn(text=f"The north brought in {north} in Q3.")
    return None
