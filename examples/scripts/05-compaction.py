"""The scripted model of 05-compaction.ipynb (used by make_recordings.py).

Three turns: the agent inspects the seven 2026 regional logs, then the seven 2025 logs (heavy
tool outputs, about 13,000 tokens a turn), then answers a short question from what it found.
The small model keeps the session notes (refreshed after each heavy tool round), and the main
model writes the nine-section summary, after an analysis scratchpad, when asked to compact with
instructions. The zero-revenue days are computed from the same seeded data the notebook
generates, so every number in the answers is right.
"""

import json
import random
from collections import Counter

from jupyter_memory.localapi import ToolCall, Turn

REGIONS = ["north", "south", "east", "west", "central", "online", "wholesale"]
YEARS = (2026, 2025)  # the order the notebook's data cell makes them in


def _zero_days() -> dict[int, dict[str, list[str]]]:
    """The notebook's data, generated the same way: zero-revenue days per year and region."""
    rng = random.Random(4)
    zero: dict[int, dict[str, list[str]]] = {}
    for year in YEARS:
        zero[year] = {}
        for region in REGIONS:
            zero[year][region] = []
            for m in range(1, 13):
                for d in range(1, 29):
                    cents = 0 if rng.random() < 0.02 else rng.randrange(80_000, 900_000)
                    if cents == 0:
                        zero[year][region].append(f"{year}-{m:02d}-{d:02d}")
    return zero


ZERO = _zero_days()


def _listing(year: int) -> str:
    return "\n".join(f"- **{r}** ({len(d)}): {', '.join(d) or 'none'}"
                     for r, d in ZERO[year].items())


def _shared(year: int) -> dict[str, list[str]]:
    """Dates that were zero in more than one region, with those regions."""
    count = Counter(day for days in ZERO[year].values() for day in days)
    return {day: [r for r, days in ZERO[year].items() if day in days]
            for day in sorted(count) if count[day] > 1}


def _shared_text() -> str:
    lines = []
    for year in YEARS:
        shared = _shared(year)
        if shared:
            lines += [f"- {day}: {' and '.join(regions)}" for day, regions in shared.items()]
        else:
            lines.append(f"- none in {year}")
    return "\n".join(lines)


def _variable(region: str, year: int) -> str:
    return f"{region}_log" if year == 2026 else f"{region}_log_2025"


MOST = max(ZERO[2026], key=lambda r: len(ZERO[2026][r]))

FIRST = ("Look through all seven regional logs (north_log … wholesale_log) and list the days "
         "with zero revenue.")
SECOND = "Now the same for last year's logs, north_log_2025 … wholesale_log_2025."
THIRD = "Before we chart these: which dates had zero revenue in more than one region?"


def _notes(with_2025: bool) -> str:
    """The session notes after the first heavy round, or after the second."""
    years = "2026 and 2025" if with_2025 else "2026"
    variables = ("north_log … wholesale_log (2026) and north_log_2025 … wholesale_log_2025 "
                 "(2025)" if with_2025 else "north_log … wholesale_log (2026)")
    results = f"2026:\n{_listing(2026)}"
    if with_2025:
        results += f"\n\n2025:\n{_listing(2025)}"
    worklog = "- Inspected the seven 2026 logs and listed the zero-revenue days."
    if with_2025:
        worklog += "\n- Inspected the seven 2025 logs and listed their zero-revenue days."
    return f"""<notes>
# Session title
Zero-revenue days in the regional revenue logs ({years})

# Current state
The {years} logs are inspected and their zero-revenue days listed per region.

# Task specification
Find the days with zero revenue in each regional log; the person means to chart them.

# Files and functions
Kernel variables {variables}: text tables of date and revenue in cents, 336 days a year
(28 a month).

# Workflow
InspectVariable on each log, then a list of the days whose revenue is 0.

# Errors and corrections
_None so far._

# Learnings
InspectVariable shows at most 8,000 characters of a value; a whole log fits.

# Key results
{results}

# Worklog
{worklog}
</notes>"""


SUMMARY = f"""<analysis>
Walking through the conversation in order:
- The person asked for the zero-revenue days in the seven 2026 logs. I inspected each with
  InspectVariable and listed the days by region.
- They asked for the same in last year's logs; I inspected the seven 2025 logs and listed them.
- They asked which dates were zero in more than one region, "before we chart these"; I answered
  from the two lists. The chart itself has not been started.
- The compaction instructions ask to keep every zero-revenue day with its region and year.
No errors, no corrections from the person.
</analysis>

<summary>
1. Primary Request and Intent:
   Find the days with zero revenue in the regional revenue logs of 2026 and 2025, then chart
   them (the chart is not started).

2. Key Technical Concepts:
   - Revenue is logged in integer cents; a zero means no sales that day.
   - Each log has 28 days a month, 336 a year.

3. Files and Code Sections:
   - Kernel variables north_log … wholesale_log (2026) and north_log_2025 …
     wholesale_log_2025 (2025): text tables with the columns date and revenue_cents.

4. Errors and Fixes:
   None.

5. Problem Solving:
   Every log was inspected with InspectVariable. The zero-revenue days, by year and region:

   2026:
{_listing(2026)}

   2025:
{_listing(2025)}

   Dates with zero revenue in more than one region:
{_shared_text()}

6. All User Messages:
   - "{FIRST}"
   - "{SECOND}"
   - "{THIRD}"

7. Pending Tasks:
   - Chart the zero-revenue days (announced, not started).

8. Current Work:
   Answering which dates had zero revenue in more than one region; that answer is given.

9. Optional Next Step:
   Chart the zero-revenue days per region, which the person announced: "{THIRD}"
</summary>"""


def respond(req):
    if req.kind == "notes":
        return Turn(text=_notes("_2025" in json.dumps(req.messages)))
    if req.kind == "summary":
        return Turn(text=SUMMARY)
    if req.kind != "main":
        return None
    for prompt, year in ((FIRST, 2026), (SECOND, 2025)):
        if req.mentions(prompt):
            if not req.after_tools:
                return Turn(text=f"I'll inspect each of the seven {year} logs.",
                            tool_calls=[ToolCall("InspectVariable", {"name": _variable(r, year)})
                                        for r in REGIONS])
            return Turn(text=f"Days with zero revenue in {year}, by region:\n\n{_listing(year)}")
    if req.mentions(THIRD):
        return Turn(text="From the two lists above, the dates with zero revenue in more than "
                    f"one region:\n\n{_shared_text()}\n\nReady for the chart when you are.")
    if req.mentions("most zero-revenue days in 2026"):
        days = ZERO[2026][MOST]
        return Turn(text=f"**{MOST}**, with {len(days)} zero-revenue days in 2026 "
                    f"({', '.join(days)}) — from the summary of our earlier work.")
    return None
