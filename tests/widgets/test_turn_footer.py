"""The footer under each turn, static and live: the input split as billed, and whose
numbers they are."""

from __future__ import annotations

from jupyter_memory.widgets.render import turn_markdown
from jupyter_memory.widgets.turn_view import TurnView

USAGE = {"input_tokens": 12, "cache_read_input_tokens": 3_000, "cache_creation_input_tokens": 450,
         "output_tokens": 80}


def record(simulated: bool) -> dict:
    return {"turn": 2, "model": "claude-haiku-4-5", "answer": "Done.", "usage": USAGE,
            "context": {"window": 200_000, "used": 3_462},
            "cost": [{"kind": "main", "model": "claude-haiku-4-5", "simulated": simulated,
                      "calls": 1, "usage": USAGE}]}


def test_the_footer_splits_input_as_it_is_billed() -> None:
    text = turn_markdown(record(simulated=False))
    assert "3,462 in (12 uncached · 3,000 cache read · 450 cache write) · 80 out" in text
    assert "simulated" not in text


def test_usage_from_the_local_server_is_labelled_simulated() -> None:
    assert "80 out (simulated: the local server)" in turn_markdown(record(simulated=True))


def test_the_live_footer_marks_simulated_usage() -> None:
    assert "80 out (simulated: the local server)" in TurnView(record(True)).footer.value
    real = TurnView(record(False)).footer.value
    assert "3,462 in (12 uncached" in real and "simulated" not in real
