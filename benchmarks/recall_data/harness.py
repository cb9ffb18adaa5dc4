"""Running selectors over the LoCoMo memdirs: the shipped selector and the baselines.

- ``offline``: :func:`jupyter_memory.recall.offline.select` as the prefetch path runs it (the
  hybrid when the semantic extra is installed, else lexical);
- ``offline-lexical``: the same with the semantic part off (what runs without the extra);
- ``before``, ``before-lexical``: the same two with the selector of another git revision
  (``recall_data.at_ref``), to compare a change with what it replaces in one run;
- ``ranking-top5``: the shipped selector's ranking cut at five, without its cut-off;
- ``bm25``: plain Okapi BM25 over the descriptions, top 5, no stemming, no cut-off;
- ``bm25-body``: the same over each file's body (what a search of the memdir would read);
- ``embedding``: all-MiniLM-L6-v2 cosine similarity over the descriptions, top 5.

Metrics per question: recall (share of the expected memories chosen), hit (any chosen),
precision (share of the chosen that are expected, over questions with a choice) and the
empty rate (questions with nothing chosen). A question that expects no memory (the
"nothing relevant" messages of ``tests/recall_eval``) has no recall or hit; anything
chosen for it counts against precision, and choosing nothing is its right answer. Each
selection's CPU time is kept (selectors take turns on every question, so load on a shared
machine hits them alike); the summary gives its median and 95th percentile.
Memory vectors are kept on disk between runs (in the temp folder) because encoding 2,500
memories takes a minute on a busy CPU.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import math
import os
import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

from jupyter_memory.memdir.scan import scan
from jupyter_memory.recall import offline as selector
from jupyter_memory.recall import semantic
from jupyter_memory.recall.grade import score_choice

from . import locomo

TOP = 5
VECTOR_CACHE = Path(tempfile.gettempdir()) / "jupyter-memory-recall-vectors.npz"


@dataclass
class Scores:
    """Totals for one selector over a set of questions, by category."""

    rows: dict[str, list[tuple[float | None, bool | None, float | None, int]]] = field(
        default_factory=dict)
    times: dict[str, list[float]] = field(default_factory=dict)

    def add(self, category: str, chosen: Sequence[str], expected: Sequence[str],
            seconds: float | None = None) -> None:
        self.rows.setdefault(category, []).append(
            (*score_choice(chosen, expected), len(chosen)))
        if seconds is not None:
            self.times.setdefault(category, []).append(seconds)

    def summary(self, category: str | None = None) -> dict[str, float | int | None]:
        rows = [r for c, rs in self.rows.items() if category in (None, c) for r in rs]
        times = sorted(t for c, ts in self.times.items() if category in (None, c) for t in ts)
        if not rows:
            return {"n": 0, "recall": None, "hit": None, "precision": None, "f1": None,
                    "empty": None, "attached": None, "median_ms": None, "p95_ms": None}
        recalls = [r for r, _, _, _ in rows if r is not None]
        hits = [h for _, h, _, _ in rows if h is not None]
        precisions = [p for _, _, p, _ in rows if p is not None]
        recall = sum(recalls) / len(recalls) if recalls else None
        precision = sum(precisions) / len(precisions) if precisions else None
        f1 = (2 * recall * precision / (recall + precision)
              if recall and precision else None)
        return {"n": len(rows), "recall": recall,
                "hit": sum(hits) / len(hits) if hits else None,
                "precision": precision, "f1": f1,
                "empty": sum(1 for *_, n in rows if n == 0) / len(rows),
                "attached": sum(n for *_, n in rows) / len(rows),
                "median_ms": percentile(times, 0.5) * 1000 if times else None,
                "p95_ms": percentile(times, 0.95) * 1000 if times else None}


def percentile(ordered: Sequence[float], share: float) -> float:
    """The ``share`` quantile of sorted ``ordered`` (nearest rank)."""
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def bm25_top(query: str, memories: Sequence[Any], k: int = TOP) -> list[str]:
    """Plain Okapi BM25 (k1 1.2, b 0.75) over descriptions: the lexical baseline."""
    docs = [_words(m.description or "") for m in memories]
    n = len(docs)
    avg = sum(map(len, docs)) / max(n, 1)
    df: dict[str, int] = {}
    for d in docs:
        for w in set(d):
            df[w] = df.get(w, 0) + 1
    terms = set(_words(query))
    scored = []
    for m, d in zip(memories, docs, strict=True):
        s = 0.0
        for w in terms:
            tf = d.count(w)
            if tf:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(d) / avg))
        scored.append((s, m.file))
    scored.sort(key=lambda x: (-x[0], x[1]))
    return [f for s, f in scored[:k] if s > 0]


@functools.lru_cache(maxsize=16384)
def _body(path: str) -> str:
    """A memory file's text after its frontmatter."""
    text = Path(path).read_text(encoding="utf-8")
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end != -1:
            return text[end + 4:]
    return text


def bm25_body_top(query: str, memories: Sequence[Any], k: int = TOP) -> list[str]:
    """Plain Okapi BM25 over each memory's body: the baseline a text search would give."""
    bodies = [SimpleNamespace(file=m.file, description=_body(str(m.path))) for m in memories]
    return bm25_top(query, bodies, k)


def _items(memories: Sequence[Any]) -> list[tuple[str, float, str]]:
    return [(m.file, float(m.mtime), m.description or m.name or m.file) for m in memories]


def _load_cache() -> dict[str, Any]:
    import numpy as np

    try:
        with np.load(VECTOR_CACHE) as data:
            return dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
    except (OSError, ValueError, KeyError):
        return {}


def warm_vectors(all_memories: Sequence[Any]) -> bool:
    """Load cached memory vectors into the encoder, encode the rest, save; False when off."""
    enc = semantic.encoder()
    if enc is None:
        return False
    import numpy as np

    items = _items(all_memories)
    keys = [hashlib.sha1(f"{semantic.MODEL_NAME}\0{t}".encode()).hexdigest() for _, _, t in items]
    known = _load_cache()
    have = [(it, known[k]) for it, k in zip(items, keys, strict=True) if k in known]
    if have:
        enc.preload([h[0] for h in have], [h[1] for h in have])
    missing = [(it, k) for it, k in zip(items, keys, strict=True) if k not in known]
    if missing:
        fresh = enc.vectors([it for it, _ in missing])
        known = {**_load_cache(), **known}  # another run may have saved meanwhile
        known.update({k: v for (_, k), v in zip(missing, fresh, strict=True)})
        tmp = VECTOR_CACHE.with_suffix(f".{os.getpid()}.npz")
        np.savez(tmp, keys=np.array(list(known)), vectors=np.stack(list(known.values())))
        tmp.replace(VECTOR_CACHE)
    return True


def embedding_top(query: str, memories: Sequence[Any], k: int = TOP) -> list[str]:
    """Cosine similarity with all-MiniLM-L6-v2, top ``k``: the embedding baseline."""
    sims = semantic.similarities(query, _items(memories)) or []
    order = sorted(range(len(sims)), key=lambda i: (-sims[i], memories[i].file))
    return [memories[i].file for i in order[:k]]


def memdirs(conversations: Sequence[locomo.Conversation], root: Path) -> dict[str, list[Any]]:
    """Write each conversation's memdir under ``root`` and scan it (all files, no limit)."""
    return {c.id: scan(locomo.write_memdir(c, root / c.id), limit=None) for c in conversations}


def asked_at(conversation: locomo.Conversation) -> dt.datetime:
    """When the questions are asked: a day after the conversation's last session."""
    last = max(dt.datetime.fromisoformat(m["date"]) for m in conversation.memories)
    return last + dt.timedelta(days=1)


def choose(name: str, query: str, memories: Sequence[Any], now: dt.datetime,
           before: ModuleType | None = None) -> list[str]:
    """The files selector ``name`` picks for ``query`` (see the module's list)."""
    if name == "offline":
        return selector.select(query, memories, now=now).files
    if name == "offline-lexical":
        return selector.select(query, memories, now=now, semantic=False).files
    if name in ("before", "before-lexical"):
        if before is None:
            raise ValueError(f"{name!r} needs the selector of another revision (before=)")
        semantic_part = None if name == "before" else False
        files: list[str] = before.select(query, memories, now=now, semantic=semantic_part).files
        return files
    if name == "ranking-top5":
        return [r.file for r in selector.rank(query, memories, now=now)[:TOP] if r.score > 0]
    if name == "bm25":
        return bm25_top(query, memories)
    if name == "bm25-body":
        return bm25_body_top(query, memories)
    if name == "embedding":
        return embedding_top(query, memories)
    raise ValueError(f"unknown selector {name!r}")


def run(
    conversations: Sequence[locomo.Conversation],
    names: Sequence[str],
    *,
    root: Path | None = None,
    before: ModuleType | None = None,
) -> dict[str, Scores]:
    """Scores of each named selector over every question of ``conversations``; ``before``
    is the selector module of another revision, for ``before`` and ``before-lexical``."""
    if root is None:
        with tempfile.TemporaryDirectory() as tmp:
            return run(conversations, names, root=Path(tmp), before=before)
    stores = memdirs(conversations, root)
    if {"offline", "before", "ranking-top5", "embedding"} & set(names):
        warm_vectors([m for ms in stores.values() for m in ms])
    results = {name: Scores() for name in names}
    for conversation in conversations:
        memories = stores[conversation.id]
        now = asked_at(conversation)
        for name in names:  # the first call fills each selector's caches, not timed
            choose(name, "warm-up", memories, now, before)
        for question in conversation.questions:
            query, category, expected = question["query"], question["category"], question["expected"]
            for name in names:
                start = time.process_time()
                chosen = choose(name, query, memories, now, before)
                results[name].add(category, chosen, expected, time.process_time() - start)
    return results
