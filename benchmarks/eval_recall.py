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

That set was written alongside the selector, so it is also scored on data it was not
written for: LoCoMo's long conversations turned into memdirs of dated one-fact memories
(``benchmarks/recall_data``, CC BY-NC 4.0), a development split the cut-offs were
fitted on and a held-out split never tuned on, beside plain BM25 and the embedding
baseline (all-MiniLM-L6-v2 top 5, when the semantic extra is installed):

    python benchmarks/eval_recall.py --locomo heldout   # also the LoCoMo tables
    python benchmarks/eval_recall.py --locomo all --cost
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

for _entry in (ROOT, ROOT / "benchmarks"):
    if str(_entry) not in sys.path:
        sys.path.insert(0, str(_entry))

from recall_data import harness, locomo  # noqa: E402

from jupyter_memory.memdir.scan import scan  # noqa: E402
from jupyter_memory.recall.offline import MAX_SELECTED, select, semantic_status  # noqa: E402

BASELINES = ("bm25", "embedding")
COST_GOAL_MS = 50.0
"""Most CPU time for one hybrid choice among 200 memories once warm (2 cores)."""


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


def locomo_report(split: str, *, conversations: int | None = None) -> dict[str, Any]:
    """Every selector's numbers on a LoCoMo split, overall and by category."""
    convs = locomo.load(None if split == "all" else split)[:conversations]
    ok, note = semantic_status()
    names = ["offline", *([] if not ok else ["offline-lexical"]), "bm25",
             *(["embedding"] if ok else [])]
    scores = harness.run(convs, names)
    categories = sorted({q["category"] for c in convs for q in c.questions})
    return {"split": split, "conversations": len(convs),
            "memories": sum(len(c.memories) for c in convs),
            "questions": sum(len(c.questions) for c in convs),
            "selector": note, "names": names, "categories": categories,
            "scores": {n: {"all": s.summary(), **{c: s.summary(c) for c in categories}}
                       for n, s in scores.items()}}


def render_locomo(res: dict[str, Any]) -> str:
    lines = [f"LoCoMo {res['split']} split: {res['conversations']} conversations, "
             f"{res['memories']} memories, {res['questions']} questions "
             f"(offline = {res['selector']})", "",
             f"{'selector':<16} {'category':<12} {'n':>4}  {'recall@5':>8}  {'hit@5':>5}  "
             f"{'precision':>9}  {'empty':>5}  {'attached':>8}"]
    for name in res["names"]:
        for category in ["all", *res["categories"]]:
            row = res["scores"][name][category]
            lines.append(f"{name:<16} {category:<12} {row['n']:>4}  {_fmt(row['recall']):>8}  "
                         f"{_fmt(row['hit']):>5}  {_fmt(row['precision']):>9}  "
                         f"{_fmt(row['empty']):>5}  {_fmt(row['attached']):>8}")
        lines.append("")
    return "\n".join(lines)


def goal_check(res: dict[str, Any]) -> tuple[bool, str]:
    """recall@5 ahead of every baseline, with at least twice the best baseline's precision."""
    ours = res["scores"]["offline"]["all"]
    base = [res["scores"][b]["all"] for b in BASELINES if b in res["scores"]]
    recall_ok = all((ours["recall"] or 0) > (b["recall"] or 0) for b in base)
    precision_ok = all((ours["precision"] or 0) >= 2 * (b["precision"] or 0) for b in base)
    words = (f"recall {ours['recall']:.3f} vs " + ", ".join(
        f"{n} {res['scores'][n]['all']['recall']:.3f}" for n in BASELINES if n in res["scores"])
        + f"; precision {ours['precision']:.3f} vs " + ", ".join(
        f"{n} {res['scores'][n]['all']['precision']:.3f}" for n in BASELINES if n in res["scores"]))
    return recall_ok and precision_ok, words


def cost(memories: int = 200, queries: int = 20) -> dict[str, Any]:
    """CPU milliseconds to choose among ``memories`` for one question, warm, per mode."""
    import time

    with tempfile.TemporaryDirectory() as tmp:
        if locomo.available():
            conv = max(locomo.load("heldout"), key=lambda c: len(c.memories))
            mems = scan(locomo.write_memdir(conv, Path(tmp) / "m"), limit=memories)
            qs = [q["query"] for q in conv.questions[:queries]]
        else:  # the 127-case memdir (170 memories) and its questions
            mems = scan(build_memdir(Path(tmp) / "m"), limit=memories)
            qs = [c["query"] for c in load_cases()[:queries]]
        out: dict[str, Any] = {"memories": len(mems), "queries": len(qs)}
        modes = [("lexical", False)] + ([("hybrid", True)] if semantic_status()[0] else [])
        for name, use in modes:
            select(qs[0] + " warm-up", mems, semantic=use)  # load the model, fill the caches
            samples = []
            for q in qs:
                start = time.process_time()
                select(q, mems, semantic=use)
                samples.append(time.process_time() - start)
            samples.sort()
            out[name] = {"median_ms": samples[len(samples) // 2] * 1000,
                         "max_ms": samples[-1] * 1000}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 when mean recall is below {RECALL_GOAL} (and, with "
                             "--locomo, when the offline selector is not ahead of the baselines)")
    parser.add_argument("--misses", action="store_true", help="list misses and false picks")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--memdir", type=Path, help="evaluate this memdir instead of a fresh build")
    parser.add_argument("--locomo", choices=["dev", "heldout", "all"],
                        help="also score the LoCoMo split against the baselines")
    parser.add_argument("--conversations", type=int,
                        help="only the first N conversations of the split (quick runs)")
    parser.add_argument("--cost", action="store_true",
                        help="also time one choice among 200 memories, per mode")
    args = parser.parse_args(argv)
    report = evaluate(args.memdir)
    failed = []
    out: dict[str, Any] = {"cases": report.to_json()}
    text = [render(report, misses=args.misses)]
    if args.check and (report.recall() or 0.0) < RECALL_GOAL:
        failed.append(f"recall {report.recall():.3f} is below the goal {RECALL_GOAL}")
    if args.locomo and not locomo.available():
        print(locomo.MISSING, file=sys.stderr)
        return 2
    if args.locomo:
        res = locomo_report(args.locomo, conversations=args.conversations)
        ok, words = goal_check(res)
        out["locomo"] = res
        text += ["", render_locomo(res),
                 f"goal (recall ahead of the baselines, precision >= 2x theirs): "
                 f"{'met' if ok else 'NOT met'} ({words})"]
        if args.check and not ok:
            failed.append(f"LoCoMo {args.locomo}: {words}")
    if args.cost:
        res_cost = cost()
        out["cost"] = res_cost
        text += ["", f"Choosing among {res_cost['memories']} memories, warm, CPU ms per question: "
                 + ", ".join(f"{k} median {v['median_ms']:.1f} (max {v['max_ms']:.1f})"
                             for k, v in res_cost.items() if isinstance(v, dict))]
    print(json.dumps(out, indent=2) if args.json else "\n".join(text))
    for problem in failed:
        print(f"FAIL: {problem}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
