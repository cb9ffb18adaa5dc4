"""Fit the offline selector's cut-off policy on the development split (never the held-out).

For every development question the selector's parts (lexical, semantic, date) are
computed once; then each field of :class:`jupyter_memory.recall.offline.Policy` is searched
over a grid in turn (coordinate ascent, a few rounds) to maximise mean recall while
mean precision stays at or above ``--precision`` (0.45 by default: the goal is 0.35 on
data we cannot see, so keep a margin). It prints the two policies to paste into
``selector.py`` (lexical only, and hybrid when the semantic extra is installed).

    python benchmarks/fit_recall.py [--precision 0.45]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for entry in (ROOT, ROOT / "benchmarks"):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

from recall_data import harness, locomo  # noqa: E402

from jupyter_memory.recall import offline as selector  # noqa: E402

GRID: dict[str, list[Any]] = {
    "semantic_weight": [0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0],
    "date_weight": [0.0, 0.25, 0.5, 1.0, 2.0],
    "relative_to_best": [0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9],
    "semantic_floor": [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 1.01],
    "one_fact_limit": [1, 2, 3, 4, 5],
    "list_limit": [2, 3, 4, 5],
    "entity_penalty": [0.3, 0.5, 0.7, 0.85, 1.0],
}


def prepare(semantic: bool) -> list[tuple[list[selector.Ranked], bool, list[str]]]:
    """Each development question's parts, list flag and expected files."""
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
                out.append((_contenders(parts), selector.is_list_question(q["query"]),
                            q["expected"]))
    return out


def _contenders(parts: list[selector.Ranked], keep: int = 25) -> list[selector.Ranked]:
    """The memories any policy could choose: the best by each part (the fused score is a
    weighted mean of the parts, so a memory low on every part never reaches the top)."""
    by_lexical = sorted(parts, key=lambda r: -r.lexical)[:keep]
    by_semantic = sorted(parts, key=lambda r: -(r.semantic or 0.0))[:keep]
    dated = [r for r in parts if (r.date or 0.0) >= 0.5]
    seen = {r.file: r for r in [*by_lexical, *by_semantic, *dated]}
    return list(seen.values())


def measure(data: list[Any], policy: selector.Policy) -> tuple[float, float]:
    recall = precision = 0.0
    picked = 0
    for parts, is_list, expected in data:
        ranked = selector.fuse(parts, policy)
        chosen, _, _ = selector.choose(ranked, policy, list_question=is_list)
        hits = len({r.file for r in chosen} & set(expected))
        recall += hits / len(expected)
        if chosen:
            precision += hits / len(chosen)
            picked += 1
    return recall / len(data), precision / max(picked, 1)


def objective(recall: float, precision: float, target: float) -> float:
    return recall - (0.0 if precision >= target else 3.0 * (target - precision))


def fit(data: list[Any], start: selector.Policy, target: float, fields: list[str]) -> selector.Policy:
    best = start
    best_value = objective(*measure(data, best), target)
    for _ in range(3):
        improved = False
        for name in fields:
            for value in GRID[name]:
                candidate = replace(best, **{name: value})
                value_here = objective(*measure(data, candidate), target)
                if value_here > best_value + 1e-9:
                    best, best_value, improved = candidate, value_here, True
        print(f"  round done: {asdict(best)} recall {measure(data, best)[0]:.3f}", flush=True)
        if not improved:
            break
    return best


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


def main(argv: list[str] | None = None) -> int:
    if not locomo.available():
        print(locomo.MISSING, file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--precision", type=float, default=0.45,
                        help="mean precision the fitted policy must keep on the dev split")
    parser.add_argument("--only", choices=["lexical", "hybrid"], help="fit just one policy")
    parser.add_argument("--unrelated", action="store_true",
                        help="print the meaning-alone floor (needs the semantic extra)")
    args = parser.parse_args(argv)
    if args.unrelated:
        print(f"meaning_alone_floor = {unrelated_floor():.2f}")
        return 0
    lexical_fields = ["date_weight", "relative_to_best", "one_fact_limit", "list_limit",
                      "entity_penalty"]
    if args.only != "hybrid":
        data = prepare(semantic=False)
        lexical = fit(data, selector.LEXICAL_POLICY, args.precision, lexical_fields)
        print("LEXICAL_POLICY =", asdict(lexical),
              "dev recall {:.3f} precision {:.3f}".format(*measure(data, lexical)))
    if args.only == "lexical":
        return 0
    ok, note = selector.semantic_status()
    if not ok:
        print(f"hybrid not fitted: {note}")
        return 0
    data = prepare(semantic=True)
    hybrid = fit(data, selector.HYBRID_POLICY, args.precision, list(GRID))
    print("HYBRID_POLICY =", asdict(hybrid),
          "dev recall {:.3f} precision {:.3f}".format(*measure(data, hybrid)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
