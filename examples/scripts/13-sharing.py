"""The scripted model of 13-sharing/sales-review.ipynb, the project 13-sharing.ipynb packs.

``seed`` lays out the project as it was before the recorded session: the data file, the
project's CLAUDE.md, and two memories written 9 and 3 days earlier (their ages travel in the
bundle, so the staleness reminders replay too). The agent reads both memories and the data,
then answers with growth in percent, wholesale kept apart.
"""

import os
import shutil
import time
from pathlib import Path

from jupyter_memory.localapi import ToolCall, Turn

RECORD_FIRST = ["sales-review.ipynb"]
PROJECT = Path(__file__).resolve().parent.parent / "13-sharing"

MEMORIES = {
    "feedback_growth_in_percent.md": (9, """\
---
name: growth-in-percent
description: report growth between periods as a percentage with one decimal
type: feedback
---
Report growth between periods as a percentage with one decimal (+10.4%), not as a
difference in euros.

**Why:** the regional leads compare regions of very different size.
**How to apply:** (later − earlier) / earlier × 100, one decimal, with a sign.
"""),
    "project_wholesale_separate.md": (3, """\
---
name: wholesale-separate
description: wholesale is a channel, reported separately and never ranked with the regions
type: project
---
Wholesale is a channel, not a region: report it separately and leave it out of regional
rankings.

**Why:** its contracts are negotiated centrally; ranking it with regions misleads.
**How to apply:** drop the wholesale row before comparing regions.
"""),
}
INDEX = (
    "- [growth-in-percent](feedback_growth_in_percent.md) — report growth between periods as "
    "a percentage with one decimal\n"
    "- [wholesale-separate](project_wholesale_separate.md) — wholesale is a channel, reported "
    "separately and never ranked with the regions\n"
)


def seed(folder: Path) -> None:
    """The project's files and its memory folder, with memories of known ages."""
    for name in ("CLAUDE.md", "regions.csv"):
        shutil.copy2(PROJECT / name, folder / name)
    memdir = folder / "memory"
    memdir.mkdir()
    now = time.time()
    for file, (days, text) in MEMORIES.items():
        (memdir / file).write_text(text, encoding="utf-8")
        os.utime(memdir / file, (now - days * 86400, now - days * 86400))
    (memdir / "MEMORY.md").write_text(INDEX, encoding="utf-8")
    os.utime(memdir / "MEMORY.md", (now - 3 * 86400, now - 3 * 86400))


def respond(req):
    if req.kind != "main" or not req.mentions("grew fastest"):
        return None
    if not req.after_tools:
        return Turn(
            text="Your memory has a rule on how to report growth and one about wholesale. "
            "Let me read both, and look at `regions`.",
            tool_calls=[ToolCall("Read", {"file_path": str(req.memdir / f)}) for f in MEMORIES]
            + [ToolCall("InspectVariable", {"name": "regions"})],
        )
    return Turn(text=(
        "**East** grew fastest from Q1 to Q2: **+21.0%** (205 → 248 thousand euros).\n\n"
        "| region | Q1 | Q2 | growth |\n|---|---:|---:|---:|\n"
        "| east | 205 | 248 | +21.0% |\n| north | 412 | 455 | +10.4% |\n"
        "| south | 388 | 401 | +3.4% |\n| west | 310 | 296 | −4.5% |\n\n"
        "Wholesale, reported separately as your memory *wholesale-separate* asks: 520 → 610, "
        "+17.3%. (Both memories are a few days old; these rules still match the data.)"
    ))
