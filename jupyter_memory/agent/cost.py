"""The cost section of each turn record: the session's cost ledger so far."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jupyter_memory.agent.hooks import TurnHook, TurnInProgress
from jupyter_memory.context.pricing import CostLedger

__all__ = ["CostInRecord"]


class CostInRecord(TurnHook):
    """Puts the ledger's rows into each turn record (``record["cost"]``), so a saved
    notebook can be priced without its kernel (``context/pricing.py``)."""

    def __init__(self, ledger: CostLedger) -> None:
        self.ledger = ledger

    def record_fields(self, turn: TurnInProgress) -> Mapping[str, Any] | None:
        return {"cost": self.ledger.to_json()}
