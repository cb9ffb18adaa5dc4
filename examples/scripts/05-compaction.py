"""The scripted model of 05-compaction.ipynb (used by make_recordings.py).

The agent inspects seven large variables in one round (heavy tool outputs), the small model
keeps session notes, and the main model writes a nine-section summary when asked to compact
with instructions. The zero-revenue days are computed from the same seeded data the
notebook generates, so every number in the answers is right.
"""

import random

from jupyter_memory.testing import ToolCall, Turn

REGIONS = ["north", "south", "east", "west", "central", "online", "wholesale"]


def _zero_days() -> dict[str, list[str]]:
    """The notebook's data, generated the same way: zero-revenue days per region."""
    rng = random.Random(4)
    zero: dict[str, list[str]] = {}
    for region in REGIONS:
        zero[region] = []
        for m in range(1, 13):
            for d in range(1, 29):
                cents = 0 if rng.random() < 0.02 else rng.randrange(80_000, 900_000)
                if cents == 0:
                    zero[region].append(f"2026-{m:02d}-{d:02d}")
    return zero


ZERO = _zero_days()
LISTING = "\n".join(f"- **{r}** ({len(d)}): {', '.join(d) or 'none'}" for r, d in ZERO.items())
MOST = max(ZERO, key=lambda r: len(ZERO[r]))

NOTES = f"""<notes>
# Session title
Zero-revenue days in the 2026 regional revenue logs

# Current state
All seven logs inspected; the zero-revenue days are listed per region. Nothing pending.

# Task specification
The person asked for the days with zero revenue in north_log … wholesale_log.

# Files and functions
Kernel variables north_log, south_log, east_log, west_log, central_log, online_log,
wholesale_log: text tables of date and revenue in cents, 336 days each (28 a month).

# Workflow
InspectVariable on each of the seven logs, then a list of the days whose revenue is 0.

# Errors and corrections
_None so far._

# Learnings
InspectVariable shows at most 8,000 characters of a value.

# Key results
{LISTING}

# Worklog
- Inspected the seven regional logs and listed the zero-revenue days.
</notes>"""

SUMMARY = f"""<analysis>
The person asked for zero-revenue days in seven regional logs; I inspected each and listed
them. Then they asked to compact, keeping every zero-revenue day with its region.
</analysis>

<summary>
1. Primary request and intent:
   List the days with zero revenue in the seven regional logs of 2026.

2. Key technical concepts:
   - Revenue is in cents; a zero means no sales that day.

3. Files and code sections:
   - Kernel variables north_log … wholesale_log: text tables (date, cents), 336 days each.

4. Errors and fixes:
   None.

5. Problem solving:
   Each log inspected with InspectVariable; the zero days found:
{LISTING}

6. All user messages:
   - "Look through all seven regional logs (north_log … wholesale_log) and list the days with zero revenue."
   - Compaction instructions: "keep every zero-revenue day we found, with its region"

7. Pending tasks:
   None.

8. Current work:
   The zero-revenue days were listed for every region.
</summary>"""


def respond(req):
    if req.kind == "notes":
        return Turn(text=NOTES)
    if req.kind == "summary":
        return Turn(text=SUMMARY)
    if req.kind != "main":
        return None
    if req.mentions("list the days with zero revenue"):
        if not req.after_tools:
            return Turn(text="I'll inspect each of the seven logs.",
                        tool_calls=[ToolCall("InspectVariable", {"name": f"{r}_log"})
                                    for r in REGIONS])
        return Turn(text=f"Days with zero revenue in 2026, by region:\n\n{LISTING}")
    if req.mentions("most zero-revenue days"):
        return Turn(text=f"**{MOST}**, with {len(ZERO[MOST])} zero-revenue days "
                    f"({', '.join(ZERO[MOST])}) — from the summary of our earlier work.")
    return None
