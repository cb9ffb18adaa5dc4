"""Fit the offline selector's policies on the development split (never the held-out).

For every development question the selector's parts (lexical, semantic, date) are
computed once. A logistic model of "this memory is one the question expects" is fitted
on the features (:func:`jupyter_memory.recall.offline.features`) of every memory the
selector may attach (Newton's method with a little L2, numpy), in a few rounds because
the same-sitting feature depends on which memory the model finds likeliest. Then the cut
(``precision_weight`` and ``expected_floor``) is the one with the most development recall
whose mean precision there is at least ``--precision`` (0.40 by default: the goal is 0.35
on data we cannot see, so keep a margin) and which does no worse on the committed
evaluation set (``tests/recall_eval``, recall and precision) than the selector at git
revision ``--guard`` (default ``main``). It prints the two policies to paste into
``jupyter_memory/recall/offline.py`` (lexical only, and hybrid when the semantic extra is
installed).

    python benchmarks/fit_recall.py [--precision 0.40] [--guard main | --no-guard]
    python benchmarks/fit_recall.py --curve        # dev recall and precision of every cut
    python benchmarks/fit_recall.py --unrelated    # the meaning-alone floor

Needs numpy (the semantic extra) and the converted LoCoMo data (benchmarks/recall_data).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for entry in (ROOT, ROOT / "benchmarks"):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

import eval_recall  # noqa: E402
from recall_data import at_ref, harness, locomo  # noqa: E402

from jupyter_memory.memdir.scan import scan  # noqa: E402
from jupyter_memory.recall import offline as selector  # noqa: E402

ROUNDS = 4
"""Fits of the model; from the second on, the same-sitting feature uses the last fit."""
L2 = 0.1
PRECISION_WEIGHTS = [round(0.02 * i, 2) for i in range(0, 101)]
EXPECTED_FLOORS = [0.0, 0.5, 1.0]
SEMANTIC_FEATURES = ("semantic", "cosine_gap")

Question = tuple[list[selector.Ranked], list[str]]
Case = tuple[list[selector.Ranked], dict[str, Any]]
Point = tuple[float, float, float, float, float]
"""(expected_floor, precision_weight, mean recall, mean precision, memories attached)."""


def prepare(semantic: bool) -> list[Question]:
    """Each development question's parts and expected files."""
    conversations = locomo.load("dev")
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        stores = harness.memdirs(conversations, Path(tmp))
        if semantic:
            harness.warm_vectors([m for ms in stores.values() for m in ms])
        for conversation in conversations:
            memories = stores[conversation.id]
            now = harness.asked_at(conversation)
            for q in conversation.questions:
                parts = selector._parts(q["query"], memories, recent_tools=(), now=now,
                                        semantic=semantic)
                out.append((parts, q["expected"]))
    return out


def _rows(data: Sequence[Question], policy: selector.Policy,
          names: Sequence[str]) -> tuple[list[list[float]], list[float]]:
    """Features and labels of every memory ``policy`` may attach (sitting as it sees it)."""
    rows, labels = [], []
    for parts, expected in data:
        best = selector.best_cosine(parts)
        for r in selector.fuse(parts, policy):
            if (r.excluded is None and not r.priority and selector.related(r)
                    and selector.has_evidence(r, policy)):
                x = dict(zip(selector.FEATURES, selector.features(r, best), strict=True))
                rows.append([x[n] for n in names])
                labels.append(1.0 if r.file in expected else 0.0)
    return rows, labels


def _logistic(rows: list[list[float]], labels: list[float]) -> tuple[list[float], float]:
    """Weights and bias of an L2-regularised logistic regression (Newton's method)."""
    import numpy as np

    x = np.hstack([np.asarray(rows, dtype=float), np.ones((len(rows), 1))])
    y = np.asarray(labels, dtype=float)
    w = np.zeros(x.shape[1])
    ridge = L2 * np.eye(len(w))
    ridge[-1, -1] = 0.0  # the bias is not pulled to zero
    for _ in range(25):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        gradient = x.T @ (p - y) + ridge @ w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + ridge + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return [float(v) for v in w[:-1]], float(w[-1])


def fit_weights(data: Sequence[Question], start: selector.Policy,
                names: Sequence[str]) -> selector.Policy:
    """``start`` with weights and bias fitted on ``data`` for the features ``names``."""
    without = [n for n in names if n != "same_sitting"]
    policy = replace(start, weights=tuple((n, 0.0) for n in without), bias=0.0)
    for round_ in range(ROUNDS):
        use = without if round_ == 0 else list(names)
        weights, bias = _logistic(*_rows(data, policy, use))
        policy = replace(policy, weights=tuple((n, round(w, 2)) for n, w in
                                               zip(use, weights, strict=True)),
                         bias=round(bias, 2))
    return policy


def measure(data: Sequence[Question], policy: selector.Policy,
            cuts: Sequence[tuple[float, float]] | None = None) -> list[Point]:
    """Recall, precision and memories attached on ``data`` for each ``(expected_floor,
    precision_weight)`` of ``cuts`` (default: the policy's own)."""
    cuts = [(policy.expected_floor, policy.precision_weight)] if cuts is None else cuts
    policies = [replace(policy, expected_floor=f, precision_weight=w) for f, w in cuts]
    totals = [[0.0, 0.0, 0, 0] for _ in cuts]
    for parts, expected in data:
        ranked = selector.fuse(parts, policy)
        for t, cut in zip(totals, policies, strict=True):
            chosen, _, _ = selector.choose(ranked, cut)
            hits = len({r.file for r in chosen} & set(expected))
            t[0] += hits / len(expected)
            t[2] += len(chosen)
            if chosen:
                t[1] += hits / len(chosen)
                t[3] += 1
    n = len(data)
    return [(f, w, t[0] / n, t[1] / max(t[3], 1), t[2] / n)
            for (f, w), t in zip(cuts, totals, strict=True)]


def committed_cases(semantic: bool) -> list[Case]:
    """The parts of every message of the committed evaluation set, and its case."""
    with tempfile.TemporaryDirectory() as tmp:
        memories = scan(eval_recall.build_memdir(Path(tmp) / "memory"), limit=None)
        return [(selector._parts(case["query"], memories,
                                 recent_tools=case.get("recent_tools", ()), now=None,
                                 semantic=semantic), case)
                for case in eval_recall.load_cases()]


def committed(cases: Sequence[Case], hybrid: selector.Policy,
              lexical: selector.Policy) -> eval_recall.Report:
    """The committed set's report with these policies (the lexical one for messages whose
    meaning is not compared, as :func:`selector.policy_for` chooses)."""
    results = []
    for parts, case in cases:
        policy = hybrid if any(r.similarity is not None for r in parts) else lexical
        chosen = [r.file for r in selector.choose(selector.fuse(parts, policy), policy)[0]]
        results.append(eval_recall.CaseResult(
            case["id"], case["category"], case["query"], list(case["expected"]), chosen,
            [f for f in case.get("forbidden", []) if f in chosen]))
    return eval_recall.Report(results)


def guard_floor(ref: str, semantic: bool) -> tuple[float, float]:
    """The committed set's mean recall and precision with the selector at ``ref``."""
    report = eval_recall.evaluate(selector=at_ref.load(ref), semantic=semantic)
    return report.recall() or 0.0, report.precision() or 0.0


def fit(data: Sequence[Question], start: selector.Policy, names: Sequence[str], target: float,
        guard: tuple[tuple[float, float], Any] | None = None,
        ) -> tuple[selector.Policy, list[Point], str]:
    """The fitted policy with the cut of most development recall at ``target`` precision
    that passes ``guard`` (the committed set's floor of recall and precision, and a function
    of the policy giving its report there); the curve of every cut; what the guard did."""
    policy = fit_weights(data, start, names)
    curve = measure(data, policy, [(f, w) for f in EXPECTED_FLOORS for w in PRECISION_WEIGHTS])
    ok = [row for row in curve if row[3] >= target]
    order = sorted(ok, key=lambda row: (-row[2], -row[3]))
    note = "no guard"
    if guard is not None:
        (floor_recall, floor_precision), report_of = guard
        note = (f"no cut at dev precision >= {target} keeps the committed set at recall "
                f">= {floor_recall:.3f} and precision >= {floor_precision:.3f}; "
                "the cut of most dev recall is shipped")
        for row in order:
            cut = replace(policy, expected_floor=row[0], precision_weight=row[1])
            report = report_of(cut)
            if (report.recall() or 0) >= floor_recall - 1e-9 and (
                    report.precision() or 0) >= floor_precision - 1e-9:
                order = [row]
                note = (f"committed set: recall {report.recall():.3f}, precision "
                        f"{report.precision():.3f} (guard: {floor_recall:.3f}, "
                        f"{floor_precision:.3f})")
                break
    chosen = order[0] if order else max(curve, key=lambda row: row[3])
    return replace(policy, expected_floor=chosen[0], precision_weight=chosen[1]), curve, note


def render(name: str, policy: selector.Policy) -> str:
    weights = ", ".join(f"({n!r}, {w})" for n, w in policy.weights)
    extra = ""
    if policy.semantic_floor <= 1.0:
        extra = (f", semantic_floor={policy.semantic_floor}, "
                 f"meaning_alone_floor={policy.meaning_alone_floor}")
    return (f"{name} = Policy(\n    weights=({weights}),\n    bias={policy.bias}, "
            f"precision_weight={policy.precision_weight}, "
            f"expected_floor={policy.expected_floor}{extra})")


def unrelated_floor(per_conversation: int = 20, share: float = 0.95) -> float:
    """The cosine a memory sharing no word must pass: the ``share`` quantile of the best
    similarity a development question finds among the other conversations' memories
    (other people, so none of them answers it)."""
    import random

    from jupyter_memory.recall import semantic

    conversations = locomo.load("dev")
    best: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        stores = harness.memdirs(conversations, Path(tmp))
        harness.warm_vectors([m for ms in stores.values() for m in ms])
        rng = random.Random(0)
        for i, conversation in enumerate(conversations):
            others = [m for j, c in enumerate(conversations) if j != i for m in stores[c.id]]
            items = [(m.file, float(m.mtime), m.description or m.name) for m in others]
            for q in rng.sample(conversation.questions, per_conversation):
                best.append(max(semantic.similarities(q["query"], items) or [0.0]))
    best.sort()
    return best[min(len(best) - 1, int(len(best) * share))]


def _report(name: str, policy: selector.Policy, curve: list[Point], note: str,
            show_curve: bool) -> None:
    print(render(name, policy))
    [(_, _, recall, precision, attached)] = [
        row for row in curve if (row[0], row[1]) == (policy.expected_floor,
                                                     policy.precision_weight)]
    print(f"# dev recall {recall:.3f} precision {precision:.3f} attached {attached:.2f}; "
          f"{note}")
    if show_curve:
        print("# expected_floor  precision_weight  recall  precision  attached")
        for f, w, r, p, a in curve:
            print(f"#   {f:4.2f}            {w:4.2f}            {r:.3f}   {p:.3f}      {a:.2f}")


def main(argv: list[str] | None = None) -> int:
    if not locomo.available():
        print(locomo.MISSING, file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--precision", type=float, default=0.40,
                        help="mean precision the fitted policy must keep on the dev split")
    parser.add_argument("--only", choices=["lexical", "hybrid"], help="fit just one policy")
    parser.add_argument("--guard", default="main", metavar="REF",
                        help="do no worse on the committed set than the selector at this "
                             "git revision (default: main)")
    parser.add_argument("--no-guard", action="store_true", help="fit on the dev split alone")
    parser.add_argument("--curve", action="store_true",
                        help="also print recall and precision for every cut")
    parser.add_argument("--unrelated", action="store_true",
                        help="print the meaning-alone floor (needs the semantic extra)")
    args = parser.parse_args(argv)
    if args.unrelated:
        print(f"meaning_alone_floor = {unrelated_floor():.2f}")
        return 0
    guard_ref = None if args.no_guard else args.guard
    if guard_ref is not None:
        try:
            at_ref.load(guard_ref)
        except at_ref.RefUnavailable as exc:
            print(f"{exc}; use --no-guard to fit without the committed set's guard",
                  file=sys.stderr)
            return 2
    lexical = selector.LEXICAL_POLICY
    if args.only != "hybrid":
        names = [n for n in selector.FEATURES if n not in SEMANTIC_FEATURES]
        guard = None
        if guard_ref is not None:
            cases = committed_cases(semantic=False)
            guard = (guard_floor(guard_ref, semantic=False),
                     lambda p: committed(cases, selector.HYBRID_POLICY, p))
        lexical, curve, note = fit(prepare(semantic=False), selector.LEXICAL_POLICY, names,
                                   args.precision, guard)
        _report("LEXICAL_POLICY", lexical, curve, note, args.curve)
    if args.only == "lexical":
        return 0
    ok, note = selector.semantic_status()
    if not ok:
        print(f"hybrid not fitted: {note}")
        return 0
    guard = None
    if guard_ref is not None:
        cases = committed_cases(semantic=True)
        guard = (guard_floor(guard_ref, semantic=True),
                 lambda p: committed(cases, p, lexical))
    hybrid, curve, note = fit(prepare(semantic=True), selector.HYBRID_POLICY,
                              list(selector.FEATURES), args.precision, guard)
    _report("HYBRID_POLICY", hybrid, curve, note, args.curve)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
