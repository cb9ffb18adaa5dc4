"""The scripted model of 07-compaction-under-pressure.ipynb (used by make_recordings.py).

The agent prints whole monthly logs of a cold room with RunPython (about 4,000 tokens
each), so a 60,000-token window fills within a few turns. The main model writes every
summary (session notes are off in the notebook): the first summary succeeds, the next
three come back as a scratchpad with no ``<summary>`` (so those automatic compactions
fail and the breaker opens), and the summary asked for by hand with ``%compact``
succeeds. The hours above 8 °C in the answers and summaries are computed from the
notebook's own data cell, so they match what the agent's code prints in the kernel.
"""

import json
from pathlib import Path

from jupyter_memory.localapi import ToolCall, Turn

NOTEBOOK = Path(__file__).resolve().parent.parent / "07-compaction-under-pressure.ipynb"
LIMIT = 8.0
NAMES = ["January", "February", "March", "April", "May", "June", "July", "August",
         "September", "October", "November", "December"]

#: Which months each prompt asks the agent to print (in the order it prints them), and
#: whether it prints them one per model call instead of all at once.
PROMPTS = {
    "Check January": ([1], False),
    "Now February and March": ([2, 3], False),
    "April, May and June": ([4, 5, 6], False),
    "July, August and September": ([7, 8, 9], False),
    "October, then November": ([10, 11], True),
    "December, next to January and February": ([12, 1, 2], False),
}


def _logs() -> dict[str, str]:
    """The notebook's ``logs``, made by running its own data cell."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    source = next("".join(c["source"]) for c in nb["cells"]
                  if c["cell_type"] == "code" and "def month_log" in "".join(c["source"]))
    namespace: dict = {}
    exec(compile(source, str(NOTEBOOK), "exec"), namespace)
    return namespace["logs"]


def _hot_hours(log: str) -> list[tuple[str, float]]:
    out = []
    for line in log.splitlines()[1:]:
        day, hour, temp = line.split()
        if float(temp) > LIMIT:
            out.append((f"{day} {hour}", float(temp)))
    return out


LOGS = _logs()
HOT = {m: _hot_hours(LOGS[f"2026-{m:02d}"]) for m in range(1, 13)}


def _month_line(m: int) -> str:
    hours = HOT[m]
    if not hours:
        return f"- **{NAMES[m - 1]}**: none"
    listed = ", ".join(f"{t} ({c:.1f} °C)" for t, c in hours)
    return f"- **{NAMES[m - 1]}** ({len(hours)}): {listed}"


def _plain_month_line(m: int) -> str:
    hours = HOT[m]
    listed = ", ".join(f"{t} ({c:.1f} °C)" for t, c in hours) or "none"
    return f"   - {NAMES[m - 1]}: {len(hours)} hour{'s' if len(hours) != 1 else ''}: {listed}"


def _print_call(m: int) -> ToolCall:
    return ToolCall("RunPython", {"code": f'print(logs["2026-{m:02d}"])',
                                  "description": f"print the {NAMES[m - 1]} log"})


def _summary(months: list[int], requests: list[str], pending: str, next_step: str,
             current: str = "") -> str:
    found = "\n".join(_plain_month_line(m) for m in months)
    said = "\n".join(f'   - "{r}"' for r in requests)
    return f"""<analysis>
Walking through the conversation in order: the person built `logs`, twelve monthly logs of
hourly cold-room temperatures, and asked me to go through them month by month for hours
above 8 °C. For each month I printed the whole log with RunPython and read every line.
Months done so far: {", ".join(NAMES[m - 1] for m in months)}. No errors, no corrections.
</analysis>

<summary>
1. Primary Request and Intent:
   Find every hour above 8 °C in the 2026 cold-room logs, month by month, with its time and
   temperature.

2. Key Technical Concepts:
   - `logs` maps "2026-MM" to one month of hourly readings: 28 days × 24 hours, one line
     each ("2026-01-03 14:00    4.2"), temperatures in °C.
   - The limit is 8 °C; readings above it are excursions (the door left open).

3. Files and Code Sections:
   - Kernel variable `logs` (dict of 12 strings, built in a notebook cell by `month_log`).
   - Each month was read with `print(logs["2026-MM"])` through RunPython.

4. Errors and Fixes:
   None.

5. Problem Solving:
   Hours above 8 °C found so far:
{found}

6. All User Messages:
{said}

7. Pending Tasks:
   {pending}

8. Current Work:
   {current or "Going through the months in order; the last answer listed the hours above "
    "8 °C for " + NAMES[months[-1] - 1] + "."}

9. Optional Next Step:
   {next_step}
</summary>"""


FIRST_SUMMARY = _summary(
    [1, 2, 3],
    ["What is in `logs`? Don't print anything yet.",
     "Check January: list every hour above 8 °C.",
     "Now February and March."],
    "None: each month the person asked about has been answered.",
    'None: the last request ("Now February and March.") was answered in full.',
)

LAST_SUMMARY = _summary(
    list(range(1, 13)),
    ["What is in `logs`? Don't print anything yet.",
     "Check January: list every hour above 8 °C.",
     "Now February and March.",
     "April, May and June.",
     "July, August and September.",
     "October, then November.",
     "December, next to January and February: did the cold room get worse over the year?"],
    "Answer whether the cold room got worse over the year.",
    'Answer the last question from the months listed in section 5: "December, next to '
    'January and February: did the cold room get worse over the year?"',
    current="The person asked to compare December with January and February. The three "
    "logs were printed, but the answer was not given: the request that would have carried "
    "them was refused at the blocking level of the context window.",
)

#: A summary reply with only the scratchpad: nothing is left once it is stripped.
SCRATCHPAD_ONLY = """<analysis>
The person is going through twelve monthly cold-room logs for hours above 8 °C. An earlier
summary covers January to March; the months after it were printed and checked one turn at
a time. For the summary I need each month's hours above 8 °C with times and temperatures,
the person's messages word for word, and the months still to check.
</analysis>"""

_summaries = 0


def _answer(months: list[int]) -> str:
    lines = "\n".join(_month_line(m) for m in months)
    return f"Hours above 8 °C:\n\n{lines}"


def respond(req):
    global _summaries
    if req.kind == "summary":
        _summaries += 1
        # The first automatic compaction works; the next three replies hold only the
        # scratchpad, so three automatic compactions in a row fail; %compact works.
        if _summaries in (2, 3, 4):
            return Turn(text=SCRATCHPAD_ONLY)
        return Turn(text=FIRST_SUMMARY if _summaries == 1 else LAST_SUMMARY)
    if req.kind != "main":
        return None
    if req.mentions("What is in `logs`"):
        return Turn(text="`logs` holds twelve monthly logs of the cold room for 2026, keyed "
                    '"2026-01" to "2026-12": one reading an hour for 28 days, about 16,000 '
                    "characters a month. Tell me which month to check and I'll read it.")
    for key, (months, one_by_one) in PROMPTS.items():
        if not req.mentions(key):
            continue
        if one_by_one:
            done = req.rounds
            if done < len(months):
                return Turn(text=f"Now {NAMES[months[done] - 1]}.",
                            tool_calls=[_print_call(months[done])])
            return Turn(text=_answer(months))
        if not req.after_tools:
            names = [NAMES[m - 1] for m in months]
            listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
            return Turn(text=f"I'll print {listed}.",
                        tool_calls=[_print_call(m) for m in months])
        return Turn(text=_answer(months))
    if req.mentions("Did the cold room get worse"):
        return Turn(text=_compare())
    return None


def _compare() -> str:
    """The answer to "did it get worse over the year?", from the months in the summary."""
    first, second = (sum(len(HOT[m]) for m in half) for half in (range(1, 7), range(7, 13)))
    dec, jan, feb = (len(HOT[m]) for m in (12, 1, 2))
    counts = ", ".join(f"{NAMES[m - 1][:3]} {len(HOT[m])}" for m in range(1, 13))
    verdict = "No" if second <= first else "Yes"
    return (f"{verdict}, going by the hours above 8 °C listed in the summary of our work "
            f"(the logs themselves are no longer in my context):\n\n"
            f"- {counts}\n"
            f"- first half of the year: {first} hours; second half: {second}\n"
            f"- December: {dec}, against {jan} in January and {feb} in February\n\n"
            "The excursions look like single events (a door left open) rather than a trend.")
