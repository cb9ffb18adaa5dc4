"""Grading a memdir's descriptions by how well the offline selector recalls from them.

The selector sees a memory's description, never its body, so rewriting descriptions is how a
writer makes memories findable. :func:`grade_recall` runs the offline selector (lexical part
only, so every install agrees) on each question and scores what it chose against the
memories the question expects, with the metrics of ``benchmarks/recall_data`` and
``tests/recall_eval``: recall (share of the expected memories chosen, at most five chosen),
precision (share of the chosen that are expected, over questions with a choice) and hit.
It also checks each description against the index cap: a pointer line
``- [name](file) — description`` longer than 150 characters is shortened in ``MEMORY.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_memory.errors import ConfigError
from jupyter_memory.memdir.index import ENTRY_MAX_CHARS, MAX_CHARS, MAX_LINES, format_entry
from jupyter_memory.memdir.scan import scan
from jupyter_memory.recall.offline import MAX_SELECTED, select

__all__ = ["QuestionScore", "RecallGrade", "grade_recall", "score_choice"]


def score_choice(
    chosen: Sequence[str], expected: Sequence[str]
) -> tuple[float | None, bool | None, float | None]:
    """(recall, hit, precision) of one selection; ``None`` where a metric does not apply:
    recall and hit for a question expecting nothing, precision when nothing was chosen."""
    hits = len(set(chosen) & set(expected))
    return (hits / len(expected) if expected else None, hits > 0 if expected else None,
            hits / len(chosen) if chosen else None)


@dataclass(frozen=True)
class QuestionScore:
    """One question: what the selector chose and how it scored."""

    question: str
    expected: tuple[str, ...]
    chosen: tuple[str, ...]
    recall: float | None
    precision: float | None


@dataclass(frozen=True)
class RecallGrade:
    """The scores of one set of descriptions over a set of questions."""

    recall: float
    precision: float
    hit: float
    questions: tuple[QuestionScore, ...]
    #: Files whose index pointer line would be shortened (longer than 150 characters).
    over_cap: tuple[str, ...]
    index_lines: int
    index_chars: int

    @property
    def within_cap(self) -> bool:
        """Every description fits its index line, and the index fits 200 lines / 25,000."""
        return (not self.over_cap and self.index_lines <= MAX_LINES
                and self.index_chars <= MAX_CHARS)

    def passes(self, baseline: RecallGrade, *, recall_gain: float = 0.0) -> bool:
        """Within the cap, recall above ``baseline`` by more than ``recall_gain``, and
        precision no lower than the baseline's."""
        return (self.within_cap and self.recall > baseline.recall + recall_gain
                and self.precision >= baseline.precision)

    def summary(self) -> str:
        cap = "within the index cap" if self.within_cap else (
            f"over the index cap: {', '.join(self.over_cap) or 'the index is too long'}")
        return (f"recall@{MAX_SELECTED} {self.recall:.3f}, precision {self.precision:.3f}, "
                f"hit {self.hit:.3f} over {len(self.questions)} questions; {cap}")


def _questions(questions: Iterable[Mapping[str, Any]]) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for number, item in enumerate(questions, 1):
        query, expected = item.get("question"), item.get("expected")
        if not isinstance(query, str) or not isinstance(expected, list | tuple):
            raise ConfigError(f"question {number} needs a 'question' (text) and an "
                              f"'expected' list of memory files; got {dict(item)!r}")
        out.append((query, tuple(str(f) for f in expected)))
    if not out:
        raise ConfigError("grade_recall needs at least one question")
    return out


def grade_recall(
    memdir: str | Path,
    questions: Iterable[Mapping[str, Any]],
    descriptions: Mapping[str, str] | None = None,
) -> RecallGrade:
    """Grade ``memdir``'s descriptions, or ``descriptions`` (file → new description) put in
    their place without touching the files, on ``questions`` (dicts with ``question`` and
    ``expected``, a list of memory files, empty when nothing is relevant).

    >>> grade = grade_recall("memories", [{"question": "Is revenue in cents?",
    ...                                    "expected": ["project_revenue.md"]}])
    >>> print(grade.summary())
    """
    folder = Path(memdir).expanduser().resolve()
    if not folder.is_dir():
        raise ConfigError(f"grade_recall: {folder} is not a folder of memories")
    memories = scan(folder, limit=None)
    known = {m.file for m in memories}
    new = dict(descriptions or {})
    unknown = sorted(set(new) - known)
    if unknown:
        raise ConfigError(f"grade_recall: no memory file named {', '.join(unknown)} in "
                          f"{folder}; the keys of descriptions are file names such as "
                          f"{sorted(known)[:1]}")
    memories = [dataclasses.replace(m, description=" ".join(new[m.file].split()))
                if m.file in new else m for m in memories]
    lines = [f"- [{m.name}]({m.file}) — {m.description or ''}" for m in memories]
    over = tuple(m.file for m, line in zip(memories, lines, strict=True)
                 if len(line) > ENTRY_MAX_CHARS
                 or format_entry(m.name, m.file, m.description or "") != line)
    rows = []
    for query, expected in _questions(questions):
        chosen = tuple(select(query, memories, semantic=False).files)
        recall, _, precision = score_choice(chosen, expected)
        rows.append(QuestionScore(query, expected, chosen, recall, precision))
    recalls = [r.recall for r in rows if r.recall is not None]
    precisions = [r.precision for r in rows if r.precision is not None]
    hits = [bool(set(r.chosen) & set(r.expected)) for r in rows if r.expected]
    return RecallGrade(
        recall=sum(recalls) / len(recalls) if recalls else 0.0,
        precision=sum(precisions) / len(precisions) if precisions else 0.0,
        hit=sum(hits) / len(hits) if hits else 0.0,
        questions=tuple(rows), over_cap=over,
        index_lines=len(lines), index_chars=sum(len(line) + 1 for line in lines))
