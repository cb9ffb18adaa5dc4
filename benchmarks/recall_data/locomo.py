"""Memdirs and questions from ``locomo.json.gz`` (see ``convert_locomo.py`` and its licence).

Each conversation becomes its own memdir: one topic file per fact, written as the
extraction agent writes a fact about a person (``type: user``, the fact as the
description with the date it was said, an absolute date in the body), the file's
modification time set to the session's date, and a ``MEMORY.md`` pointer line for each.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: The converted data (``convert_locomo.py``). It is not in the repository: LoCoMo's licence
#: (CC BY-NC 4.0) is not ours to relicense, so each person converts their own copy.
DATA = Path(os.environ.get("JUPYTER_MEMORY_LOCOMO") or HERE / "locomo.json.gz")
SPLITS = ("dev", "heldout")
MISSING = (
    "The LoCoMo evaluation data is not in the repository. Download LoCoMo's locomo10.json "
    "(snap-research/locomo, CC BY-NC 4.0), run `python benchmarks/recall_data/convert_locomo.py "
    "locomo10.json`, and (to keep it elsewhere) point JUPYTER_MEMORY_LOCOMO at the output."
)


class DataMissing(RuntimeError):
    """The converted LoCoMo file is not there; the message says how to make it."""


def available() -> bool:
    return DATA.is_file()


@dataclass(frozen=True)
class Conversation:
    id: str
    split: str
    speakers: tuple[str, str]
    memories: list[dict[str, Any]]
    questions: list[dict[str, Any]]


def load(split: str | None = None) -> list[Conversation]:
    """The conversations of ``split`` (``dev``, ``heldout`` or ``None`` for both)."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: use one of {', '.join(SPLITS)}")
    if not available():
        raise DataMissing(MISSING)
    data = json.loads(gzip.decompress(DATA.read_bytes()))
    return [Conversation(c["id"], c["split"], tuple(c["speakers"]), c["memories"], c["questions"])
            for c in data["conversations"] if split is None or c["split"] == split]


def _day(iso: str) -> str:
    when = dt.datetime.fromisoformat(iso)
    return f"{when.day} {when:%B %Y}"


def memory_text(memory: dict[str, Any]) -> tuple[str, str]:
    """The description and body the extraction agent would write for one fact."""
    description = f"{memory['fact'].rstrip('.')} (said on {_day(memory['date'])})"
    body = (f"{memory['fact']}\n\n"
            f"Said by {memory['speaker']} in the conversation of {_day(memory['date'])} "
            f"(session {memory['session']}).\n")
    return description, body


def write_memdir(conversation: Conversation, target: Path) -> Path:
    """Write ``conversation``'s memories as a memdir under ``target``; return it."""
    target.mkdir(parents=True, exist_ok=True)
    index = ["# Memory index", ""]
    for memory in conversation.memories:
        description, body = memory_text(memory)
        name = memory["file"][:-3]
        path = target / memory["file"]
        path.write_text(f"---\nname: {name}\ndescription: {json.dumps(description)}\n"
                        f"type: user\norigin: extraction\n---\n\n{body}", encoding="utf-8")
        stamp = dt.datetime.fromisoformat(memory["date"]).timestamp()
        os.utime(path, (stamp, stamp))
        index.append(f"- [{name.replace('_', ' ')}]({memory['file']}) — {description}")
    (target / "MEMORY.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    return target


def questions(conversations: list[Conversation]) -> Iterator[tuple[Conversation, dict[str, Any]]]:
    for conversation in conversations:
        for question in conversation.questions:
            yield conversation, question
