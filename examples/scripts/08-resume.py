"""The scripted model of 08-resume.ipynb (used by make_recordings.py).

Three sessions on one small churn analysis. Session A inspects the data and then leaves
a test account out; its extraction agent saves that fact. Session B resumes from a saved
notebook and is asked where the analysis ended; it is then compacted (the summary keeps
every customer with its day count) and drafts a sentence for the report. Session C
resumes from B's transcript and is asked about that sentence and a new cut-off.

Every answer about earlier work is computed from the messages the request carries, not
written in advance: when the earlier turns are not in the request, the scripted model
says it cannot see them. So the recording holds the answers a resumed session can give
only because its old conversation was sent again.
"""

import re

from jupyter_memory.localapi import ToolCall, Turn

CUT_OFF = 45
TEST_ACCOUNT = "C-107"
FINAL_MARK = "Final churn figure"
REPORT_MARK = "Report sentence"

TEST_ACCOUNT_MEMORY = """\
---
name: test-account-c107
description: customer C-107 is the team's own test account; leave it out of customer analyses
type: project
---
Customer `C-107` is our own test account, not a real customer.

**Why:** the person said so while computing churn; its orders are test traffic.
**How to apply:** drop C-107 before counting customers, churn or revenue.
"""


def _conversation(req) -> str:
    """What the request carries of the conversation so far, as text: every message but the
    person's latest words, and without the lists of notebook cells they ran (the harness
    adds those to a prompt; consecutive user messages, such as a compaction summary and
    the next prompt, arrive merged into one)."""
    parts = []
    for number, message in enumerate(req.messages, 1):
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                text = block.get("text", "")
                if "The person ran these notebook cells" in text:
                    continue
                if number == len(req.messages) and text == req.prompt:
                    continue
                parts.append(text)
            elif kind == "tool_use":
                parts.append(str(block.get("input")))
            elif kind == "tool_result":
                result = block.get("content")
                parts.append(result if isinstance(result, str) else
                             "".join(b.get("text", "") for b in result or []))
    return "\n".join(parts)


def _days(text: str) -> dict[str, int]:
    """Customer id -> days since the last order, from the data as InspectVariable showed
    it (``'C-102': 61``) or as an answer or summary quoted it (``C-102 (61 days)``)."""
    found = {k: int(v) for k, v in re.findall(r"'(C-\d+)': (\d+)", text)}
    found.update({k: int(v) for k, v in re.findall(r"(C-\d+) \((\d+) days\)", text)})
    return found


def _listing(days: dict[str, int]) -> str:
    return ", ".join(f"{c} ({d} days)" for c, d in sorted(days.items()))


def _rate(churned: int, total: int) -> str:
    return f"{churned} of {total} customers ({round(100 * churned / total)}%)"


def _cannot_see() -> Turn:
    return Turn(text="I can't see any earlier analysis in this conversation: it starts with "
                "your message. Which data should I look at?")


def _last_answer(req) -> str:
    """The main agent's last answer before the extraction agent's instructions."""
    for message in reversed(req.messages[:-1]):
        if message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")
    return ""


def _extraction(req):
    if not req.after_tools:
        if not _last_answer(req).startswith(f"Without {TEST_ACCOUNT}"):
            return Turn(text="Nothing to save.")
        file = req.memdir / "project_test_account_c107.md"
        return Turn(tool_calls=[ToolCall("Write", {"file_path": str(file),
                                                   "content": TEST_ACCOUNT_MEMORY})])
    if req.rounds == 1:  # the topic file is written; now its line in the index
        line = ("- [test-account-c107](project_test_account_c107.md) — customer C-107 is "
                "the team's own test account; leave it out of customer analyses\n")
        return Turn(tool_calls=[ToolCall("Write", {"file_path": str(req.memdir / "MEMORY.md"),
                                                   "content": line})])
    return Turn(text="Saved project_test_account_c107.md.")


def _summary(req):
    conversation = _conversation(req)
    days = _days(conversation)
    churned = {c: d for c, d in days.items() if d > CUT_OFF and c != TEST_ACCOUNT}
    real = [c for c in days if c != TEST_ACCOUNT]
    return Turn(text=f"""<analysis>
Churn analysis of ten customers; one is a test account and was left out. The person asked
to keep every customer id with its day count.
</analysis>

<summary>
1. Primary Request and Intent:
   Find which customers in `days_since_last_order` have churned (more than {CUT_OFF} days
   without an order) and the churn rate, without the test account {TEST_ACCOUNT}.

2. Key Technical Concepts:
   - Churned: more than {CUT_OFF} days since the last order.
   - Day counts are relative to the data freeze of 2026-11-30.

3. Files and Code Sections:
   - Kernel variable `days_since_last_order`: customer id -> days since the last order.
     Every customer with its day count: {_listing(days)}.

4. Errors and Fixes:
   None.

5. Problem Solving:
   {TEST_ACCOUNT} is our own test account and is left out, which leaves {len(real)} customers.
   Churned: {", ".join(sorted(churned))}: {_rate(len(churned), len(real))}.

6. All User Messages:
   - "Which customers in `days_since_last_order` have churned? We count a customer as churned after more than {CUT_OFF} days without an order."
   - "Leave {TEST_ACCOUNT} out: it is our own test account. What is the churn rate then?"
   - "Where did we end up? One line with the churned customers and the rate."

7. Pending Tasks:
   A sentence for the churn report.

8. Current Work:
   The final churn figure was confirmed: {_rate(len(churned), len(real))}.

9. Optional Next Step:
   Draft the report sentence when asked.
</summary>""")


def respond(req):
    if req.kind == "extraction":
        return _extraction(req)
    if req.kind == "summary":
        return _summary(req)
    if req.kind != "main":
        return None
    conversation = _conversation(req)

    if req.mentions("Which customers in `days_since_last_order` have churned"):
        if not req.after_tools:
            return Turn(text="I'll look at the data first.",
                        tool_calls=[ToolCall("InspectVariable",
                                             {"name": "days_since_last_order"})])
        days = _days(req.tool_results[0][1])
        churned = {c: d for c, d in days.items() if d > CUT_OFF}
        return Turn(text=f"Churned (more than {CUT_OFF} days without an order): "
                    f"{_listing(churned)}. That is {_rate(len(churned), len(days))}.")

    if req.mentions(f"Leave {TEST_ACCOUNT} out"):
        days = _days(conversation)  # the churned customers of the previous answer
        if not days:
            return _cannot_see()
        churned = [c for c, d in days.items() if d > CUT_OFF and c != TEST_ACCOUNT]
        total = len([c for c in _days(conversation) if c != TEST_ACCOUNT])
        return Turn(text=f"Without {TEST_ACCOUNT} the churned customers are "
                    f"{', '.join(sorted(churned))}: {_rate(len(churned), total)}.")

    if req.mentions("Where did we end up"):
        days = _days(conversation)
        if TEST_ACCOUNT not in conversation or not days:
            return _cannot_see()
        churned = sorted(c for c, d in days.items() if d > CUT_OFF and c != TEST_ACCOUNT)
        total = len([c for c in days if c != TEST_ACCOUNT])
        return Turn(text=f"{FINAL_MARK}: {', '.join(churned)} churned, "
                    f"{_rate(len(churned), total)}, with our test account {TEST_ACCOUNT} left out.")

    if req.mentions("one sentence for the churn report"):
        days = _days(conversation)
        if not days:
            return _cannot_see()
        churned = {c: d for c, d in days.items() if d > CUT_OFF and c != TEST_ACCOUNT}
        total = len([c for c in days if c != TEST_ACCOUNT])
        return Turn(text=f"{REPORT_MARK}: \"{_rate(len(churned), total)} had placed no order "
                    f"for more than {CUT_OFF} days by 30 November ({_listing(churned)}); our "
                    f"test account {TEST_ACCOUNT} is not counted.\"")

    if req.mentions("cut-off were 60 days"):
        sentence = re.search(rf'{REPORT_MARK}: (".+?")', conversation)
        days = _days(conversation)
        if sentence is None or not days:
            return _cannot_see()
        later = sorted(c for c, d in days.items() if d > 60 and c != TEST_ACCOUNT)
        total = len([c for c in days if c != TEST_ACCOUNT])
        return Turn(text=f"The sentence we drafted was {sentence.group(1)}\n\n"
                    f"With a 60-day cut-off only {', '.join(later)} would count as churned: "
                    f"{_rate(len(later), total)}. I took the day counts from the summary of "
                    "our earlier work, which kept every customer with its count.")
    return None
