"""The summary request and what is kept of its answer (docs/reference.md#compaction).

The model first thinks in an ``<analysis>`` scratchpad, then writes a nine-section
``<summary>``. Only the summary is kept: the scratchpad helps the model be thorough
but would waste the context it is meant to free.
"""

from __future__ import annotations

import re

from jupyter_memory.agent.compaction.sections import SUMMARY_SECTIONS

_SECTION_GUIDE = (
    "everything the person asked for, stated explicitly and in detail",
    "the libraries, data sets, methods and ideas the work relies on",
    "every file, notebook cell and variable that was read, changed or created: why it "
    "matters, with the important code quoted",
    "each error that came up and how it was fixed, including what the person said about it",
    "problems that were solved and investigations that are still open",
    "every message the person wrote (not tool results), word for word or very nearly: "
    "their own words must not drift through summaries",
    "work the person asked for that is not done yet",
    "exactly what was being worked on just before this summary, with file names and code",
    "the next step, only when it follows directly from the person's most recent request; "
    "quote the latest messages word for word to show where the work stopped. Leave this "
    "section out when the last task was finished",
)

#: A phrase that starts every summary request (tests and the fake server look for it).
SUMMARY_REQUEST_HEAD = "Write a summary of this conversation so far."


def summary_prompt(instructions: str | None = None) -> str:
    """The final user message of a summary request; ``instructions`` steer its focus."""
    sections = "\n".join(
        f"{n}. {name}: {guide}."
        for n, (name, guide) in enumerate(zip(SUMMARY_SECTIONS, _SECTION_GUIDE, strict=True), 1)
    )
    text = (
        f"{SUMMARY_REQUEST_HEAD} The conversation will be replaced by your summary, and the "
        "work will go on from the summary alone, so keep every detail needed to carry on: "
        "names of files, variables and functions, code, numbers, decisions and the person's "
        "preferences.\n\n"
        "Do not call any tool. Answer with text only.\n\n"
        "First think it through inside <analysis></analysis> tags: walk through the "
        "conversation in order and note, for each part, what the person asked, what was "
        "done, which files, code and data were involved, what went wrong and how it was "
        "fixed, and any feedback the person gave. This scratchpad is thrown away.\n\n"
        "Then write the summary inside <summary></summary> tags, with these nine numbered "
        f"sections:\n{sections}\n\n"
        "Shape of the answer:\n"
        "<analysis>\n[your notes]\n</analysis>\n\n"
        f"<summary>\n1. {SUMMARY_SECTIONS[0]}:\n   [...]\n\n2. {SUMMARY_SECTIONS[1]}:\n"
        "   - [...]\n\n[sections 3 to 9 the same way]\n</summary>"
    )
    if instructions and instructions.strip():
        text += (
            "\n\nFurther instructions for this summary (they take precedence over the "
            f"general guidance above):\n{instructions.strip()}"
        )
    return text


_ANALYSIS = re.compile(r"<analysis>.*?(?:</analysis>|$)", re.S | re.I)
_SUMMARY = re.compile(r"<summary>(.*?)(?:</summary>|$)", re.S | re.I)


def extract_summary(text: str) -> str:
    """The summary inside a reply: scratchpad removed, ``<summary>`` tags unwrapped.

    Tolerates a reply cut off by the output limit (an unclosed tag) and a reply without
    tags (the whole text minus any scratchpad). Empty when nothing usable is left.
    """
    match = _SUMMARY.search(text)
    if match is not None:
        body = match.group(1)
        body = _ANALYSIS.sub("", body)
    else:
        body = _ANALYSIS.sub("", text)
    return body.strip()


def summary_message_text(
    body: str, *, method: str, transcript: str | None, kept_messages: int = 0
) -> str:
    """What the model reads in place of the conversation it no longer has."""
    if method == "session_memory":
        head = (
            "This session continues an earlier conversation that was compacted to save "
            "context. Below are the running notes kept during the session; "
            + (
                f"the {kept_messages} most recent messages follow them word for word."
                if kept_messages
                else "they cover the conversation up to this point."
            )
        )
    else:
        head = (
            "This session continues an earlier conversation that was compacted to save "
            "context. The summary below covers everything before this point; treat it as "
            "what has happened so far."
        )
    parts = [head, body.strip()]
    if transcript:
        parts.append(
            f"The full transcript of the conversation so far is saved at {transcript}. When a "
            "detail matters that the summary lost (exact code, an error message, the "
            "person's own words), look it up there."
        )
    return "\n\n".join(parts)
