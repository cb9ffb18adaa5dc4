"""Precision and recall of the offline recall selector on the labelled evaluation set.

The set (``tests/recall_eval``) is a memdir of 170 realistic data-science memories and
125 messages labelled with the memories that should be attached: direct questions,
paraphrases, negations ("we do not use pandas"), Chinese and Japanese messages, tool
warnings (with recently used tools, where plain usage notes must be left out) and
messages that should select nothing. The selector picks at most 5 per message.

    python benchmarks/eval_recall.py            # table by category
    python benchmarks/eval_recall.py --misses   # also list every miss and false pick
    python benchmarks/eval_recall.py --check    # exit 1 when recall is under the goal

Deterministic: no model, no clock, the memdir is regenerated from its generator.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EVAL_DIR = ROOT / "tests" / "recall_eval"
CASES = EVAL_DIR / "cases.json"
RECALL_GOAL = 0.8

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from jupyter_memory.memdir.scan import scan  # noqa: E402
from jupyter_memory.recall.offline import MAX_SELECTED, select  # noqa: E402


@dataclass
class CaseResult:
    id: str
    category: str
    query: str
    expected: list[str]
    selected: list[str]
    forbidden_hits: list[str] = field(default_factory=list)

    @property
    def hits(self) -> int:
        return len(set(self.selected) & set(self.expected))

    @property
    def recall(self) -> float | None:
        return self.hits / len(self.expected) if self.expected else None

    @property
    def precision(self) -> float | None:
        return self.hits / len(self.selected) if self.selected else None


@dataclass
class Report:
    results: list[CaseResult]

    def _subset(self, category: str | None) -> list[CaseResult]:
        return [r for r in self.results if category is None or r.category == category]

    def recall(self, category: str | None = None) -> float | None:
        values = [r.recall for r in self._subset(category) if r.recall is not None]
        return sum(values) / len(values) if values else None

    def precision(self, category: str | None = None) -> float | None:
        """Mean precision over cases that selected something (a pick for a message that
        should select nothing counts as precision 0)."""
        values = [r.precision or 0.0 for r in self._subset(category) if r.selected]
        return sum(values) / len(values) if values else None

    def micro(self, category: str | None = None) -> tuple[float | None, float | None]:
        rows = self._subset(category)
        hits = sum(r.hits for r in rows)
        expected = sum(len(r.expected) for r in rows)
        selected = sum(len(r.selected) for r in rows)
        return (hits / selected if selected else None, hits / expected if expected else None)

    def empty_rate(self, category: str | None = None) -> float | None:
        """Share of messages with no expected memory for which nothing was selected."""
        rows = [r for r in self._subset(category) if not r.expected]
        return sum(1 for r in rows if not r.selected) / len(rows) if rows else None

    @property
    def forbidden(self) -> list[CaseResult]:
        return [r for r in self.results if r.forbidden_hits]

    @property
    def categories(self) -> list[str]:
        seen: list[str] = []
        for r in self.results:
            if r.category not in seen:
                seen.append(r.category)
        return seen

    def to_json(self) -> dict[str, Any]:
        precision, recall = self.micro()
        return {
            "cases": len(self.results),
            "recall": self.recall(), "precision": self.precision(),
            "micro_recall": recall, "micro_precision": precision,
            "empty_rate": self.empty_rate(),
            "forbidden": len(self.forbidden),
            "by_category": {c: {"cases": len(self._subset(c)), "recall": self.recall(c),
                                "precision": self.precision(c)} for c in self.categories},
        }


def load_cases(path: Path = CASES) -> list[dict[str, Any]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return list(data["cases"])


def build_memdir(target: Path) -> Path:
    spec = importlib.util.spec_from_file_location("recall_eval_make_memdir", EVAL_DIR / "make_memdir.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules.get(spec.name)
    if module is None:
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up while it loads
        spec.loader.exec_module(module)
    return module.build(target)


def evaluate(memdir: Path | None = None, cases: Sequence[dict[str, Any]] | None = None) -> Report:
    """Run the offline selector over every case; ``memdir`` defaults to a fresh build."""
    cases = load_cases() if cases is None else cases
    if memdir is None:
        with tempfile.TemporaryDirectory() as tmp:
            return evaluate(build_memdir(Path(tmp) / "memory"), cases)
    memories = scan(memdir, limit=None)
    results = []
    for case in cases:
        selection = select(case["query"], memories, recent_tools=case.get("recent_tools", ()),
                           limit=MAX_SELECTED)
        chosen = selection.files
        results.append(CaseResult(
            case["id"], case["category"], case["query"], list(case["expected"]), chosen,
            [f for f in case.get("forbidden", []) if f in chosen]))
    return Report(results)


def _fmt(value: float | None) -> str:
    return "   -" if value is None else f"{value:4.2f}"


def render(report: Report, *, misses: bool = False) -> str:
    lines = [f"Offline selector, at most {MAX_SELECTED} memories per message "
             f"({len(report.results)} cases)", "",
             f"{'category':<14} {'cases':>5}  {'recall':>6}  {'precision':>9}  {'empty ok':>8}"]
    for category in [*report.categories, None]:
        rows = report._subset(category)
        name = category or "all"
        if category is None:
            lines.append("-" * 50)
        lines.append(f"{name:<14} {len(rows):>5}  {_fmt(report.recall(category)):>6}  "
                     f"{_fmt(report.precision(category)):>9}  {_fmt(report.empty_rate(category)):>8}")
    micro_p, micro_r = report.micro()
    lines += ["", f"micro-averaged: recall {_fmt(micro_r)}, precision {_fmt(micro_p)}",
              f"usage notes of recently used tools picked: {len(report.forbidden)} case(s)",
              f"goal: recall >= {RECALL_GOAL:.2f} -> "
              f"{'met' if (report.recall() or 0) >= RECALL_GOAL else 'NOT met'}"]
    if misses:
        lines += ["", "Misses and false picks:"]
        for r in report.results:
            missed = [f for f in r.expected if f not in r.selected]
            extra = [f for f in r.selected if f not in r.expected]
            if missed or extra or r.forbidden_hits:
                lines.append(f"  {r.id}: {r.query}")
                if missed:
                    lines.append(f"      missed: {', '.join(missed)}")
                if extra:
                    lines.append(f"      extra:  {', '.join(extra)}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 when mean recall is below {RECALL_GOAL}")
    parser.add_argument("--misses", action="store_true", help="list misses and false picks")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--memdir", type=Path, help="evaluate this memdir instead of a fresh build")
    args = parser.parse_args(argv)
    report = evaluate(args.memdir)
    print(json.dumps(report.to_json(), indent=2) if args.json else render(report, misses=args.misses))
    if args.check and (report.recall() or 0.0) < RECALL_GOAL:
        print(f"FAIL: recall {report.recall():.3f} is below the goal {RECALL_GOAL}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
