"""Convert LoCoMo (long conversations with dated sessions) into recall evaluation data.

LoCoMo (Maharana et al., 2024, "Evaluating Very Long-Term Conversational Memory of LLM
Agents", CC BY-NC 4.0) has ten conversations between two people over up to 35 dated
sessions. Its authors extracted, per session and per speaker, one-fact "observations",
each pointing at the dialogue turns it came from, and wrote questions whose evidence
points at the same turns. That gives an answer key the selector never saw:

- every observation becomes one memory, written as this project's extraction agent
  writes a fact about a person (a short name, the fact as the description, the date it
  was said, ``type: user``), with the session's date as the file's modification time;
- every question (categories 1-4; the adversarial category 5 asks about things that
  never happened) expects the memories whose source turns are among its evidence turns.
  Questions whose evidence no observation covers are dropped: no memory could answer.

Conversations 0-4 are the development split (cut-offs are fitted on it); conversations
5-9 are held out and never used for tuning. The output is one compact JSON file.

    python benchmarks/recall_data/convert_locomo.py path/to/locomo10.json
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "locomo.json.gz"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DEV_CONVERSATIONS = range(0, 5)
_STOP = frozenset(re.findall(r"\w+", "a an the is was are were to of in on at for and or with "
                             "has have had her his their about from that this it as by be been"))


def _session_time(text: str) -> dt.datetime:
    """'1:56 pm on 8 May, 2023' -> a UTC datetime."""
    return dt.datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(
        tzinfo=dt.timezone.utc)


def _slug(speaker: str, fact: str, taken: set[str]) -> str:
    words = [w for w in re.findall(r"[a-z0-9]+", fact.lower())
             if w not in _STOP and w != speaker.lower()]
    base = "_".join([speaker.lower(), *words[:4]]) or speaker.lower()
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def convert(source: dict | list) -> dict:
    conversations = []
    for index, sample in enumerate(source):
        conv = sample["conversation"]
        memories = []
        by_turn: dict[str, list[str]] = {}
        taken: set[str] = set()
        for key, per_speaker in sample["observation"].items():
            session = int(re.search(r"session_(\d+)", key).group(1))
            when = _session_time(conv[f"session_{session}_date_time"])
            for speaker, facts in per_speaker.items():
                for fact, turns in facts:
                    turns = [turns] if isinstance(turns, str) else list(turns)
                    name = _slug(speaker, fact, taken)
                    memories.append({"file": f"{name}.md", "speaker": speaker,
                                     "session": session, "date": when.isoformat(),
                                     "fact": fact.strip()})
                    for turn in turns:
                        by_turn.setdefault(turn.strip(), []).append(f"{name}.md")
        questions = []
        for qa in sample["qa"]:
            category = CATEGORIES.get(qa.get("category"))
            if category is None:
                continue
            expected = sorted({f for turn in qa.get("evidence", [])
                               for part in str(turn).split(";")
                               for f in by_turn.get(part.strip(), [])})
            if expected:
                questions.append({"query": qa["question"], "category": category,
                                  "expected": expected})
        split = "dev" if index in DEV_CONVERSATIONS else "heldout"
        conversations.append({"id": sample["sample_id"], "split": split,
                              "speakers": [conv["speaker_a"], conv["speaker_b"]],
                              "memories": memories, "questions": questions})
    return {"source": "LoCoMo (snap-research), CC BY-NC 4.0; see LICENSE-LoCoMo.md",
            "conversations": conversations}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    data = convert(json.loads(Path(argv[0]).read_text(encoding="utf-8")))
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
    OUTPUT.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    n_mem = sum(len(c["memories"]) for c in data["conversations"])
    n_q = sum(len(c["questions"]) for c in data["conversations"])
    print(f"wrote {OUTPUT}: {n_mem} memories, {n_q} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
