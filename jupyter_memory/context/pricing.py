"""What the model calls of a session cost: a price table, a ledger, and a report.

Token counts alone mislead: a cache read bills a tenth of an uncached input token and a
cache write a quarter more, and the side calls (the recall selector, the extraction
fork, compaction summaries, session notes) never show in a turn's own numbers. The
session keeps one :class:`CostLedger` that every call site charges (``ledger.charge``); the
ledger's snapshot travels in each turn record under ``"cost"``, so a saved notebook can
be priced without a kernel (``jupyter-memory cost NOTEBOOK.ipynb``, docs/context.md).

Prices are US dollars per million tokens from Anthropic's public pricing page
(https://platform.claude.com/docs/en/about-claude/pricing, read 2026-12-01). Cache
writes are billed at 1.25x the input price (the 5-minute cache this project uses) and
cache reads at 0.1x, except where the page lists a lower cache-hit price.

Usage answered by the local scripted server (``jupyter_memory.localapi``, which replay
also uses) is *simulated*: that server names its messages ``msg_fake_NNNN``, and a call whose
message id has that prefix is counted as simulated, so no report passes invented numbers
off as a bill.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_memory.context.tokens import Usage
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir.gateway import person_root

PRICING_SOURCE = "https://platform.claude.com/docs/en/about-claude/pricing"
PRICING_DATE = "2026-12-01"
#: Cache writes (5-minute cache) cost this times the input price.
CACHE_WRITE_FACTOR = 1.25
#: Cache reads cost this times the input price, unless a row says otherwise.
CACHE_READ_FACTOR = 0.1
#: Message ids of the local scripted server start with this (see ``localapi.server``).
SIMULATED_ID_PREFIX = "msg_fake_"
#: The kinds of model call, in the order reports list them.
KINDS = ("main", "selector", "extraction", "remember", "summary", "notes")
KIND_LABELS = {
    "main": "main turns",
    "selector": "recall selector",
    "extraction": "extraction fork",
    "remember": "%%remember",
    "summary": "compaction summaries",
    "notes": "session notes",
}
TURN_MIME = "application/vnd.jupyter-memory.turn+json"


class CostError(JupyterMemoryError):
    """A notebook or file that cannot be priced (missing, not a notebook, damaged)."""


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens for one model family."""

    input: float
    output: float
    cache_read: float | None = None  # None: CACHE_READ_FACTOR x input

    @property
    def cache_write(self) -> float:
        return self.input * CACHE_WRITE_FACTOR

    @property
    def read(self) -> float:
        return self.cache_read if self.cache_read is not None else self.input * CACHE_READ_FACTOR


# Model id prefix -> price. The longest matching prefix wins, so dated ids find their family.
PRICES: dict[str, Price] = {
    "claude-fable-5-1": Price(10.0, 50.0, cache_read=0.25),
    "claude-mythos-5-1": Price(10.0, 50.0, cache_read=0.25),
    "claude-fable-5": Price(10.0, 50.0),
    "claude-mythos-5": Price(10.0, 50.0),
    "claude-opus-5-5": Price(4.0, 20.0),
    "claude-opus-5": Price(5.0, 25.0),
    "claude-opus-4-8": Price(5.0, 25.0),
    "claude-opus-4-7": Price(5.0, 25.0),
    "claude-opus-4-6": Price(5.0, 25.0),
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4": Price(15.0, 75.0),
    "claude-sonnet-5-5": Price(2.0, 10.0),
    "claude-sonnet-5": Price(2.0, 10.0),
    "claude-sonnet-4-6": Price(3.0, 15.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-3-7-sonnet": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.8, 4.0),
    "claude-3-haiku": Price(0.25, 1.25),
}


def price_for(model: str) -> Price | None:
    """The price of ``model`` by its longest known prefix; None for an unknown model."""
    best = max((p for p in PRICES if model.startswith(p)), key=len, default=None)
    return PRICES[best] if best else None


def price_usage(usage: Usage, model: str) -> float | None:
    """What ``usage`` of ``model`` costs in dollars; None when the model has no price."""
    price = price_for(model)
    if price is None:
        return None
    return (usage.input_tokens * price.input
            + usage.cache_read_input_tokens * price.read
            + usage.cache_creation_input_tokens * price.cache_write
            + usage.output_tokens * price.output) / 1_000_000


def is_simulated(message: Any) -> bool:
    """True for a response of the local scripted server (its ids start ``msg_fake_``)."""
    ident = message.get("id") if isinstance(message, Mapping) else getattr(message, "id", None)
    return str(ident or "").startswith(SIMULATED_ID_PREFIX)


class CostLedger:
    """Usage of every model call of one session, by kind, model and simulated or not.

    Thread-safe: the selector, the extraction fork and the note taker charge it from
    background threads.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str, bool], tuple[int, Usage]] = {}

    def add(self, kind: str, model: str, usage: Usage, *, simulated: bool, calls: int = 1) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown kind of model call {kind!r}; one of {', '.join(KINDS)}")
        key = (kind, model, simulated)
        with self._lock:
            n, total = self._rows.get(key, (0, Usage()))
            self._rows[key] = (n + calls, total + usage)

    def charge(self, kind: str, message: Any, model: str = "") -> None:
        """Add one response (an SDK message or its dict form) of ``kind``."""
        get: Callable[[str], Any] = (
            message.get if isinstance(message, Mapping) else lambda k: getattr(message, k, None)
        )
        self.add(kind, str(get("model") or model), Usage.from_api(get("usage")),
                 simulated=is_simulated(message))

    def to_json(self) -> list[dict[str, Any]]:
        """Rows ``{kind, model, simulated, calls, usage}``; what a turn record carries."""
        with self._lock:
            items = sorted(self._rows.items(), key=lambda kv: (KINDS.index(kv[0][0]), kv[0][1]))
            return [{"kind": k, "model": m, "simulated": s, "calls": n, "usage": u.to_json()}
                    for (k, m, s), (n, u) in items]

    @classmethod
    def from_json(cls, rows: Iterable[Mapping[str, Any]]) -> CostLedger:
        ledger = cls()
        for row in rows:
            ledger.add(str(row["kind"]), str(row.get("model") or ""), Usage.from_api(row.get("usage")),
                       simulated=bool(row.get("simulated")), calls=int(row.get("calls") or 0))
        return ledger

    def merge(self, other: CostLedger) -> None:
        for row in other.to_json():
            self.add(row["kind"], row["model"], Usage.from_api(row["usage"]),
                     simulated=row["simulated"], calls=row["calls"])


@dataclass(frozen=True)
class CostRow:
    kind: str
    calls: int
    usage: Usage
    dollars: float | None  # None: some model of this kind has no price
    simulated: bool
    unpriced_models: tuple[str, ...] = ()


@dataclass(frozen=True)
class CostReport:
    """A priced summary of a ledger: one row per kind of call and a total."""

    rows: tuple[CostRow, ...]
    source: str
    note: str = ""

    @property
    def total(self) -> CostRow:
        usage = Usage()
        dollars: float | None = 0.0
        for row in self.rows:
            usage = usage + row.usage
            dollars = None if dollars is None or row.dollars is None else dollars + row.dollars
        return CostRow("total", sum(r.calls for r in self.rows), usage, dollars,
                       any(r.simulated for r in self.rows),
                       tuple(sorted({m for r in self.rows for m in r.unpriced_models})))

    @property
    def simulated(self) -> bool:
        return any(r.simulated for r in self.rows)

    def to_json(self) -> dict[str, Any]:
        def one(row: CostRow) -> dict[str, Any]:
            return {"kind": row.kind, "calls": row.calls,
                    "uncached_input": row.usage.input_tokens,
                    "cache_reads": row.usage.cache_read_input_tokens,
                    "cache_writes": row.usage.cache_creation_input_tokens,
                    "output": row.usage.output_tokens,
                    "dollars": None if row.dollars is None else round(row.dollars, 6),
                    "simulated": row.simulated, "unpriced_models": list(row.unpriced_models)}

        return {"source": self.source, "note": self.note, "simulated": self.simulated,
                "prices": {"source": PRICING_SOURCE, "date": PRICING_DATE},
                "rows": [one(r) for r in self.rows], "total": one(self.total)}

    def render_text(self) -> str:
        head = ("call", "calls", "uncached in", "cache reads", "cache writes", "output", "price")
        lines = [head]
        for row in (*self.rows, self.total):
            price = "no price" if row.dollars is None else f"${row.dollars:,.4f}"
            label = KIND_LABELS.get(row.kind, row.kind)
            lines.append((label + (" (simulated)" if row.simulated else ""), f"{row.calls}",
                          f"{row.usage.input_tokens:,}", f"{row.usage.cache_read_input_tokens:,}",
                          f"{row.usage.cache_creation_input_tokens:,}",
                          f"{row.usage.output_tokens:,}", price))
        widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
        out = []
        for n, line in enumerate(lines):
            if n == len(lines) - 1:
                out.append("  ".join("-" * w for w in widths))
            out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                 for i, (c, w) in enumerate(zip(line, widths, strict=True))))
        out.append(f"Source: {self.source}.")
        if self.simulated:
            # The committed example notebooks show this sentence word for word, old module
            # name included; it changes when they are next recorded.
            out.append("Simulated: these numbers came from the local scripted server "
                       "(testing.fake_api, which replay also uses), not from a bill.")
        unpriced = self.total.unpriced_models
        if unpriced:
            out.append(f"No price on file for {', '.join(unpriced)}: those calls are counted, "
                       "not priced.")
        if self.note:
            out.append(self.note)
        out.append(f"Prices: {PRICING_SOURCE} (read {PRICING_DATE}); cache writes "
                   f"{CACHE_WRITE_FACTOR}x input, cache reads {CACHE_READ_FACTOR}x input.")
        return "\n".join(out)


def report(ledger: CostLedger, source: str, note: str = "") -> CostReport:
    """Price ``ledger`` by kind of call (kinds with no calls are left out)."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for row in ledger.to_json():
        by_kind.setdefault(row["kind"], []).append(row)
    rows = []
    for kind in KINDS:
        entries = by_kind.get(kind)
        if not entries:
            continue
        usage, dollars, unpriced = Usage(), 0.0, set()
        for e in entries:
            u = Usage.from_api(e["usage"])
            usage = usage + u
            d = price_usage(u, e["model"])
            if d is None:
                unpriced.add(e["model"] or "(unknown model)")
            else:
                dollars += d
        rows.append(CostRow(kind, sum(e["calls"] for e in entries), usage,
                            None if unpriced else dollars,
                            any(e["simulated"] for e in entries), tuple(sorted(unpriced))))
    return CostReport(tuple(rows), source, note)


def _turn_records(nb: Mapping[str, Any]) -> list[dict[str, Any]]:
    records = []
    for cell in nb.get("cells") or []:
        for output in cell.get("outputs") or [] if isinstance(cell, Mapping) else []:
            data = output.get("data") if isinstance(output, Mapping) else None
            record = data.get(TURN_MIME) if isinstance(data, Mapping) else None
            if isinstance(record, str):
                try:
                    record = json.loads(record)
                except ValueError:
                    record = None
            if isinstance(record, Mapping):
                records.append(dict(record))
    return records


def notebook_ledger(path: str | Path) -> tuple[CostLedger, str]:
    """The ledger of every session whose turns a saved notebook shows, and a note.

    Each turn record carries the session's ledger so far, so the last record of each
    session holds all of it up to that turn. A record written before ledgers existed
    contributes its main-turn usage only, and the note says so.
    """
    path = Path(path)
    try:
        nb = json.loads(person_root(path).text(path))  # the notebook the person named
    except FileNotFoundError:
        raise CostError(f"{path}: no such notebook. Give the path of a saved .ipynb file.") from None
    except (OSError, ValueError) as exc:
        raise CostError(f"{path} is not a readable notebook ({exc}); give a saved .ipynb file.") from None
    if not isinstance(nb, Mapping) or not isinstance(nb.get("cells"), list):
        raise CostError(f"{path} is not a notebook: it has no list of cells.")
    last: dict[str, dict[str, Any]] = {}
    old: list[dict[str, Any]] = []
    for record in _turn_records(nb):
        if isinstance(record.get("cost"), list):
            sid = str(record.get("session_id") or "")
            if sid not in last or int(record.get("turn") or 0) >= int(last[sid].get("turn") or 0):
                last[sid] = record
        else:
            old.append(record)
    ledger = CostLedger()
    for record in last.values():
        ledger.merge(CostLedger.from_json(record["cost"]))
    note = ""
    covered = set(last)
    legacy = [r for r in old if str(r.get("session_id") or "") not in covered]
    for record in legacy:
        ids = [str(r.get("id") or "") for r in record.get("requests") or [] if isinstance(r, Mapping)]
        calls = max(1, len(ids))
        ledger.add("main", str(record.get("model") or ""), Usage.from_api(record.get("usage")),
                   simulated=any(i.startswith(SIMULATED_ID_PREFIX) for i in ids), calls=calls)
    if legacy:
        note = (f"{len(legacy)} turn record(s) predate the cost ledger: only their main calls "
                "are counted (the selector, extraction, summaries and notes were not recorded). "
                "Run the notebook again to count every call.")
    if last:
        extra = ("An extraction or notes update that finished after the last turn's output was "
                 "saved is not in the notebook; %context --cost in the live kernel includes it.")
        note = f"{note} {extra}".strip()
    return ledger, note
