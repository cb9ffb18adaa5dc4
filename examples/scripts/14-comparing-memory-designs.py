"""The scripted model of 14-comparing-memory-designs.ipynb (used by make_recordings.py; not
a real model).

One agent turn in prefetch mode: the offline selector attaches the 40-day-old fiscal year
memory, with its staleness reminder; the "model" answers from it and says it may be out of
date, as the reminder asks. No tool is called.
"""

from jupyter_memory.localapi import Turn

QUESTION = "When does our fiscal year start?"


def respond(req):
    if req.kind != "main" or not req.mentions(QUESTION):
        return None
    if "Memory recalled for this message: project_fiscal_year.md" in str(req.messages):
        return Turn(text=(
            "According to a memory saved 40 days ago, the fiscal year starts on **1 February** "
            "(Q1 is February to April). That memory is old enough to be out of date: check the "
            "current finance calendar before relying on it, and tell me if it changed so I can "
            "update the memory."))
    return Turn(text="I have no memory of when your fiscal year starts; where can I look it up?")
