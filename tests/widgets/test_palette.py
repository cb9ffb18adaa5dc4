"""The context bar's palette: one colour per category, legible in both themes, shared
with the lab extension."""

from __future__ import annotations

import colorsys
import re
from itertools import pairwise
from pathlib import Path

import pytest

from jupyter_memory.widgets import palette
from jupyter_memory.widgets.html import MIN_BAR_PX, _fits
from jupyter_memory.widgets.turn_static import turn_inputs_html

LAB = Path(__file__).resolve().parents[2] / "labextension"
#: Pages a static copy is shown on: white, JupyterLab's dark layout colours, GitHub dark.
PAGES = {"white": "#ffffff", "lab dark 0": "#111111", "lab dark 1": "#212121",
         "github dark": "#0d1117"}
USED = [name for name in palette.BAR_ORDER if name not in ("free", "autocompact buffer")]


def _fills(theme: str) -> dict[str, str]:
    return {c.name: c.fill(theme) for c in palette.CATEGORIES}


def test_the_lab_copy_is_generated_from_the_python_palette():
    assert (LAB / "src" / "palette.ts").read_text(encoding="utf-8") == palette.palette_ts(), (
        "labextension/src/palette.ts is stale: run python scripts/palette_lab.py")
    assert (LAB / "style" / "palette.css").read_text(encoding="utf-8") == palette.palette_css()
    assert "palette.css" in (LAB / "style" / "index.css").read_text(encoding="utf-8")
    assert "palette.css" in (LAB / "style" / "index.js").read_text(encoding="utf-8")


@pytest.mark.parametrize("theme", palette.THEMES)
def test_every_adjacent_pair_contrasts_at_least_3_to_1(theme):
    """Every fill against the track (free space, and the gap between any two segments, so
    a missing category never leaves two fills touching), and neighbours in the bar's
    order against each other."""
    fills = _fills(theme)
    track = palette.TRACK[theme]
    ratios = {f"{name} / track": palette.contrast(fill, track)
              for name, fill in fills.items() if name != "free"}
    ratios["other / track"] = palette.contrast(palette.UNKNOWN.fill(theme), track)
    ratios.update({f"{a} / {b}": palette.contrast(fills[a], fills[b]) for a, b in pairwise(USED)})
    ratios.update({f"{name} / outline": palette.contrast(fills[name], palette.OUTLINE[theme])
                   for name in ("free",)})
    low = {pair: round(r, 2) for pair, r in ratios.items() if r < 3.0}
    assert not low, f"{theme}: below 3:1: {low}"


@pytest.mark.parametrize("page", PAGES)
def test_static_bar_outline_reads_on_white_and_dark_pages(page):
    # Static copies draw the light fills on a white track inside this outline.
    assert palette.contrast(palette.OUTLINE["light"], PAGES[page]) >= 3.0


def test_lab_dark_outline_reads_on_the_dark_pages():
    for page in ("lab dark 0", "lab dark 1"):
        assert palette.contrast(palette.OUTLINE["dark"], PAGES[page]) >= 3.0


def test_segment_text_reads_on_its_fill():
    for theme in palette.THEMES:
        for cat in palette.CATEGORIES:
            fill = cat.fill(theme)
            assert palette.contrast(palette.ink(fill), fill) >= 4.5, (theme, cat.name)


def test_the_buffer_is_grey_not_red():
    for theme in palette.THEMES:
        value = palette.colour("autocompact buffer").fill(theme).lstrip("#")
        r, g, b = (int(value[i : i + 2], 16) / 255 for i in (0, 2, 4))
        assert colorsys.rgb_to_hsv(r, g, b)[1] < 0.05, theme


def test_contrast_matches_wcag_reference_values():
    assert palette.contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert palette.contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)
    with pytest.raises(ValueError, match="#rrggbb"):
        palette.luminance("red")


def _record(categories: dict[str, int]) -> dict:
    window = 200_000
    used = sum(categories.values())
    cats = [{"name": n, "tokens": t} for n, t in categories.items()]
    cats += [{"name": "autocompact buffer", "tokens": 33_000},
             {"name": "free", "tokens": window - used - 33_000}]
    return {"context": {"window": window, "used": used, "categories": cats,
                        "thresholds": {"autocompact": 167_000}}}


def _segments(html: str) -> list[tuple[str, str]]:
    """(class, inline style) of each bar segment, in order."""
    return re.findall(r"<div class='(jm-cat-[a-z-]+)' title='[^']*' style='([^']*)'", html)


def test_a_category_keeps_its_colour_when_another_is_missing():
    full = dict(_segments(turn_inputs_html(_record(
        {"system": 3000, "tools": 2300, "index": 400, "messages": 23_600}))))
    without = dict(_segments(turn_inputs_html(_record({"system": 3000, "messages": 23_600}))))
    assert "jm-cat-tools" not in without
    for name in ("jm-cat-system", "jm-cat-messages"):
        assert full[name] == without[name]
    # tools and messages, the block the old palette drew as one green: their own hues,
    # and a gap of track between them (3:1 against each) where index is missing.
    tools_only = dict(_segments(turn_inputs_html(_record(
        {"system": 3000, "tools": 2300, "messages": 23_600}))))
    assert "background-color:#2f94a3" in tools_only["jm-cat-tools"]
    assert "background-color:#3f9c55" in tools_only["jm-cat-messages"]
    assert "margin-right:2px" in tools_only["jm-cat-tools"]
    for name in ("tools", "messages"):
        assert palette.contrast(palette.colour(name).light, palette.TRACK["light"]) >= 3


def test_static_bar_is_used_then_free_then_buffer_in_plain_colours():
    html = turn_inputs_html(_record({"system": 3000, "tools": 2300, "messages": 23_600}))
    segments = _segments(html)
    assert [cls for cls, _ in segments] == [
        "jm-cat-system", "jm-cat-tools", "jm-cat-messages", "jm-cat-free",
        "jm-cat-autocompact-buffer"]
    for _cls, css in segments:  # a sanitiser drops var(): the fills are plain hex
        assert re.search(r"background-color:#[0-9a-f]{6};", css) and "var(" not in css
    assert "jm-bar-track" in html and "#767676" in html


def test_segment_labels_fit_the_narrowest_bar():
    """A label is drawn only where it fits a bar of MIN_BAR_PX (a 400 px window)."""
    assert _fits("S", 100 * 14 / MIN_BAR_PX)
    assert not _fits("messages 24K", 10)
    assert _fits("messages 24K", 40)
