"""One fence detector for every markdown reader: nested and longer fences included."""

from __future__ import annotations

from jupyter_memory.memdir.dates import find_relative_dates
from jupyter_memory.memdir.index import parse_index
from jupyter_memory.memdir.markdown import fence_flags, fence_open_at_end


def test_a_tilde_block_may_hold_backtick_lines_and_a_long_fence_a_short_one() -> None:
    lines = ["~~~", "```", "inside", "~~~", "after", "`````", "```", "still", "`````", "out"]
    assert fence_flags(lines) == [True, True, True, True, False, True, True, True, True, False]
    assert fence_open_at_end(lines) is False
    assert fence_open_at_end(["```python", "x = 1"]) is True
    assert fence_flags(["``` not`a fence", "text"]) == [False, False]  # backtick in info string
    assert fence_flags(["    ```", "text"]) == [False, False]  # indented 4: code, not a fence


def test_the_index_and_the_date_finder_agree_on_nested_fences() -> None:
    text = "~~~\n```\n- [Hidden](hidden.md) — inside the block\n~~~\n- [Seen](seen.md) — after it\n"
    assert [e.file for e in parse_index(text).entries] == ["seen.md"]
    assert not parse_index(text).open_fence
    dates = find_relative_dates("~~~\n```\nyesterday\n~~~\nyesterday\n")
    assert [d.line for d in dates] == [5]
