"""The scripted model of 09-stale-and-wrong-memories.ipynb (used by make_recordings.py).

The small model picks memories by what each message asks about; names that are not in the
list it was shown are left out, as a model would. The main model:

- part 1-2: does not trust a 47-day-old memory saying revenue is in cents. It inspects
  ``sales``, sums from the data, reads the memory and ``MEMORY.md`` and rewrites both;
- parts 3 and 5: answers questions about tables from the data dictionaries its request
  holds (attached, so cut at 4,096 bytes or 200 lines, or read with Read), and reads a
  dictionary the question names when none came with the message;
- part 4: answers from the conversation and the one memory newly attached.

The columns in the answers are parsed from the request itself, and the revenue total is
computed from the notebook's own data cell, so every answer matches what the model was given.
"""

import json
import re
from pathlib import Path

from jupyter_memory.localapi import ToolCall, Turn

NOTEBOOK = Path(__file__).resolve().parent.parent / "09-stale-and-wrong-memories.ipynb"

REVENUE_QUESTION = "total revenue of the north region in November"
KEYS_QUESTION = "Which keys join"
LINK_QUESTION = "link a return back"
DATES_QUESTION = "hold dates or times"
DATES_FOLLOW_UP = "And which columns of"

REVENUE_FILE = "project_revenue_in_cents.md"
MONEY_FILE = "feedback_money_format.md"
POLICY_FILE = "project_returns_policy.md"

TABLES = ("orders", "order_items", "customers", "products", "stores", "returns", "shipments",
          "payments", "refunds", "invoices", "inventory", "suppliers", "promotions",
          "campaigns", "employees", "warehouses")

WORDS = ("none", "one", "two", "three", "four", "five", "six")

SUM_CODE = """north_november = sales[(sales["region"] == "north") & (sales["month"] == "2026-11")]
print(len(north_november), "orders,", round(north_november["revenue"].sum(), 2), "in revenue")"""

CORRECTED = """---
name: revenue-unit
description: sales.revenue is in euros with two decimals, not integer cents (checked against the data); do not divide by 100
type: project
---
The `revenue` column of the `sales` table is in **euros** with two decimals (float64,
for example 1249.90).

**Why:** checked against the data: the values have cents after the decimal point, so they
cannot be integer cents. An earlier version of this memory said integer cents (what the
billing export used to write); the export has changed since.
**How to apply:** sum and show `revenue` as euros; never divide it by 100. If an extract
looks different (integers, values 100 times larger), check the dtype before using it.
"""

INDEX_LINE = ("- [revenue-unit](project_revenue_in_cents.md) — sales.revenue is in euros with "
              "two decimals, not integer cents (checked against the data)")


def _sales():
    """The notebook's sales table, made by running its own data cell."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    source = next("".join(c["source"]) for c in nb["cells"]
                  if c["cell_type"] == "code" and "".join(c["source"]).startswith("import pandas"))
    namespace: dict = {}
    exec(compile(source, str(NOTEBOOK), "exec"), namespace)
    return namespace["sales"]


# ----------------------------------------------------------------------------- reading requests


def _texts(message):
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    out = []
    for block in content or []:
        if block.get("type") == "text":
            out.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            inner = block.get("content")
            out.append(inner if isinstance(inner, str)
                       else "".join(str(b.get("text", "")) for b in inner or []))
    return out


def _all_texts(req):
    return [text for message in req.messages for text in _texts(message)]


def _attached(req):
    """Files attached by recall anywhere in the conversation the request carries."""
    found = []
    for text in _all_texts(req):
        hit = re.match(r"<system-reminder>\nMemory recalled for this message: (\S+) ", text)
        if hit:
            found.append(hit.group(1))
    return found


def _dictionaries(req):
    """table -> the text of its data dictionary as the request holds it (attached or read)."""
    out: dict[str, str] = {}
    for text in _all_texts(req):
        for hit in re.finditer(r"# warehouse\.(\w+)", text):
            out[hit.group(1)] = out.get(hit.group(1), "") + text
    return out


def _named_tables(text):
    """The tables a message names, in the order it names them."""
    hits = [(m.start(), t) for t in TABLES for m in re.finditer(rf"\b{t}\b", text)]
    return [t for _, t in sorted(hits)]


def _numbered_lines(result):
    """The file text of a Read result (without the reminder and the line numbers)."""
    return [line.split("\t", 1)[1] for line in result.splitlines() if "\t" in line]


# ----------------------------------------------------------------------------- the selector


def _selector(req):
    text = req.last_user_text  # the manifest, then the person's message (two blocks)
    message = text.split("The person's message:\n", 1)[-1].split("\n\nTools used", 1)[0]
    shown = set(re.findall(r"^- (?:\[\w+\] )?(\S+\.md) \(", text, re.M))
    if REVENUE_QUESTION in message:
        picks = [REVENUE_FILE, MONEY_FILE]
    elif LINK_QUESTION in message:
        picks = [POLICY_FILE] + [f"reference_table_{t}.md" for t in ("returns", "orders", "stores")]
    else:
        picks = [f"reference_table_{t}.md" for t in _named_tables(message)]
    chosen = [p for p in picks if p in shown]  # only files in the list it was given
    return Turn(tool_calls=[ToolCall("select_memories", {"selected_memories": chosen})])


# ----------------------------------------------------------------------------- the main model


def _revenue(req):
    memory = str(req.memdir / REVENUE_FILE)
    index = str(req.memdir / "MEMORY.md")
    names = [name for name, _ in req.tool_results]
    if not req.after_tools:
        if REVENUE_FILE not in _attached(req):
            return Turn(text="Let me look at the data.",
                        tool_calls=[ToolCall("InspectVariable", {"name": "sales"})])
        return Turn(
            text="Your memory *revenue-in-cents* says `revenue` is stored in integer cents. It "
            "is 47 days old, though, and says something about the data, so I will check the "
            "data before relying on it.",
            tool_calls=[ToolCall("InspectVariable", {"name": "sales"})])
    if names == ["InspectVariable"]:
        inspected = req.tool_results[0][1]
        assert "revenue: float64" in inspected, inspected
        return Turn(
            text="`revenue` is `float64` with cents after the decimal point (1249.90, 830.00, "
            "…): these are euros, not integer cents. The memory no longer holds. I will sum "
            "the data as it is, and open the memory and the index to correct them.",
            tool_calls=[
                ToolCall("RunPython", {"code": SUM_CODE,
                                       "description": "north revenue in November 2026, in euros"}),
                ToolCall("Read", {"file_path": memory}),
                ToolCall("Read", {"file_path": index}),
            ])
    if names == ["RunPython", "Read", "Read"]:
        index_text = req.tool_results[2][1]
        old_line = next(line for line in _numbered_lines(index_text) if REVENUE_FILE in line)
        return Turn(
            text="Correcting the memory and its line in the index.",
            tool_calls=[
                ToolCall("Write", {"file_path": memory, "content": CORRECTED}),
                ToolCall("Edit", {"file_path": index, "old_string": old_line,
                                  "new_string": INDEX_LINE}),
            ])
    sales = _sales()
    north = sales[(sales["region"] == "north") & (sales["month"] == "2026-11")]
    total = float(north["revenue"].sum())
    return Turn(text=(
        f"The north region made **€{total:,.0f}** in November 2026 ({len(north)} orders, "
        f"€{total:,.2f} before rounding to whole euros, as your *money-format* feedback asks).\n\n"
        "I did not use your memory *revenue-in-cents*: it is 47 days old and the data "
        "contradicts it. `revenue` is `float64` with two decimals, so it is already in euros; "
        f"dividing by 100 as the memory said would have given €{total / 100:,.0f}, a hundred "
        "times too small. I rewrote the memory to say what the data shows (and why), and "
        "updated its line in `MEMORY.md`."))


def _columns(text, pattern):
    return re.findall(pattern, text)


def _tables(req, what):
    """The keys or the date columns of the tables the message names."""
    named = _named_tables(req.prompt)
    have = _dictionaries(req)
    missing = [t for t in named if t not in have]
    if missing and not req.after_tools:
        lost = ", ".join(missing)
        return Turn(
            text=f"The {lost} dictionary did not come with your message, so I will read it.",
            tool_calls=[ToolCall("Read", {"file_path": str(req.memdir / f"reference_table_{t}.md")})
                        for t in missing])
    read = [t for t in named if t in missing or any(
        name == "Read" and f"# warehouse.{t}" in result for name, result in req.tool_results)]
    if what == "keys":
        rows = []
        for table in named:
            for column, target, target_column in _columns(
                    have.get(table, ""), r"\| `(\w+)` \| \w+ \| → (\w+)\.(\w+) \|"):
                if target in named:
                    rows.append(f"| `{table}.{column}` | `{target}.{target_column}` |")
        rows = list(dict.fromkeys(rows))
        came = WORDS[len(named) - len(read)].capitalize()
        return Turn(text=(
            f"{came} of the {WORDS[len(named)]} data dictionaries came with your message, cut at the "
            "limit for recalled memories; the keys are in the column table at the top of each, "
            f"so the cut did not lose them. I read the {', '.join(read)} dictionary myself.\n\n"
            "| key | joins |\n|---|---|\n" + "\n".join(rows) + "\n\n"
            "Join path: returns → order_items → orders → customers and stores; "
            "order_items → products."))
    rows = []
    for table in named:
        columns = _columns(have.get(table, ""), r"\| `(\w+)` \| (?:date|timestamp) \|")
        found = ", ".join(f"`{c}`" for c in dict.fromkeys(columns)) or "none"
        rows.append(f"| {table} | {found} |")
    return Turn(text="Date and time columns, from the data dictionaries:\n\n"
                "| table | columns |\n|---|---|\n" + "\n".join(rows))


def _link(req):
    assert POLICY_FILE in _attached(req)
    return Turn(text=(
        "Through the sale, not the return: `returns` has no store column.\n\n"
        "1. `returns.order_item_id` → `order_items.order_item_id`\n"
        "2. `order_items.order_id` → `orders.order_id`\n"
        "3. `orders.store_id` → `stores.store_id`: the store that sold the item.\n\n"
        "```python\n"
        "sold_by = (returns.merge(order_items[[\"order_item_id\", \"order_id\"]], on=\"order_item_id\")\n"
        "                  .merge(orders[[\"order_id\", \"store_id\"]], on=\"order_id\"))\n"
        "```\n\n"
        "Do not use `customers.home_store_id`: your memory *returns-policy* says the Q2 report "
        "did, and credited every return to the wrong store."))


def respond(req):
    if req.kind == "selector":
        return _selector(req)
    if req.kind != "main":
        return None
    if req.mentions(REVENUE_QUESTION):
        return _revenue(req)
    if req.mentions(KEYS_QUESTION):
        return _tables(req, "keys")
    if req.mentions(LINK_QUESTION):
        return _link(req)
    if req.mentions(DATES_QUESTION) or req.mentions(DATES_FOLLOW_UP):
        return _tables(req, "dates")
    return None
