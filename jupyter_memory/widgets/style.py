"""Colours, patterns and theme-aware CSS shared by the widgets and their HTML fallbacks.

Each category of the context bar differs from its neighbours in three ways, so it reads
without colour vision and in a grayscale print: its fill gets lighter along the bar
(lightness rises by at least 8 L* from one category to the next), most fills carry a
pattern, and every segment is named in the legend. Text and borders use JupyterLab's
``--jp-*`` CSS variables with light-theme fallbacks, so the same HTML reads in light and
dark themes and outside JupyterLab.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BORDER",
    "CSS",
    "ERROR",
    "FONT",
    "FONT_MUTED",
    "LEVEL_STYLES",
    "MONO",
    "PALETTE",
    "SURFACE",
    "WARN",
    "Swatch",
    "lightness",
    "swatch",
    "swatch_css",
    "text_on",
]

FONT = "var(--jp-ui-font-color1, #1f1f1f)"
FONT_MUTED = "var(--jp-ui-font-color2, #5a5a5a)"
BORDER = "var(--jp-border-color1, #9e9e9e)"
SURFACE = "var(--jp-layout-color2, #f2f2f2)"
MONO = "var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, Consolas, monospace)"
WARN = "var(--jp-warn-color1, #b35900)"
ERROR = "var(--jp-error-color1, #b3261e)"


@dataclass(frozen=True)
class Swatch:
    """How one category is drawn: a fill, an optional pattern over it, a short tag."""

    colour: str
    pattern: str
    pattern_size: str
    tag: str
    description: str


_STRIPES = "repeating-linear-gradient({angle}deg, {ink} 0 {w}px, transparent {w}px {gap}px)"


def _stripes(angle: int, ink: str, width: int, gap: int) -> str:
    return _STRIPES.format(angle=angle, ink=ink, w=width, gap=gap)


#: Category → swatch, in bar order; fills get lighter from left to right.
PALETTE: dict[str, Swatch] = {
    "system": Swatch("#1b2f4b", "", "", "S", "solid dark blue"),
    "tools": Swatch("#2a5384", _stripes(45, "rgba(255,255,255,.30)", 2, 6), "",
                    "T", "blue, diagonal stripes"),
    "instructions": Swatch("#8a4ea1", "radial-gradient(rgba(255,255,255,.55) 1px, "
                           "transparent 1.6px)", "5px 5px", "I", "purple, dots"),
    "index": Swatch("#dd6a2a", _stripes(90, "rgba(0,0,0,.28)", 1, 5), "",
                    "X", "orange, vertical stripes"),
    "memories": Swatch("#e3a92a", _stripes(45, "rgba(0,0,0,.25)", 1, 5) + ", "
                       + _stripes(-45, "rgba(0,0,0,.25)", 1, 5), "",
                       "M", "amber, cross-hatched"),
    "messages": Swatch("#a3dfba", _stripes(0, "rgba(0,0,0,.18)", 1, 4), "",
                       "C", "pale green, horizontal lines"),
    "autocompact buffer": Swatch("#d0d0d0", _stripes(-45, "rgba(0,0,0,.38)", 2, 7), "",
                                 "B", "grey, wide hatching"),
    "free": Swatch("transparent", "", "", "", "empty"),
}
_FALLBACK = Swatch("#777777", _stripes(30, "rgba(255,255,255,.4)", 1, 3), "", "?", "grey")


def swatch(name: str) -> Swatch:
    return PALETTE.get(name, _FALLBACK)


def swatch_css(name: str) -> str:
    """Inline CSS drawing the fill of category ``name`` (the free space shows the page)."""
    sw = swatch(name)
    if name == "free":
        return f"background-color:{SURFACE};"
    css = f"background-color:{sw.colour};"
    if sw.pattern:
        css += f"background-image:{sw.pattern};"
    if sw.pattern_size:
        css += f"background-size:{sw.pattern_size};"
    return css


def lightness(colour: str) -> float:
    """CIE L* (0 black … 100 white) of a ``#rrggbb`` colour: its grey level in print."""
    value = colour.lstrip("#")
    r, g, b = (int(value[i : i + 2], 16) / 255 for i in (0, 2, 4))

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    y = 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)
    return 116 * y ** (1 / 3) - 16 if y > 0.008856 else 903.3 * y


def text_on(colour: str) -> str:
    """Black or white, whichever reads on ``colour``."""
    if not colour.startswith("#"):
        return FONT
    return "#ffffff" if lightness(colour) < 55 else "#111111"


#: Threshold marker → (line style, words). Line styles differ, not only colours.
LEVEL_STYLES: dict[str, tuple[str, str]] = {
    "warning": ("2px dashed", "warning: compaction is near"),
    "autocompact": ("3px solid", "automatic compaction starts"),
    "blocking": ("4px double", "requests are refused"),
}


#: Styles for the widget views (HTML widgets are not sanitised, so a class works there).
CSS = f"""
<style>
.jm-mono select, .jm-mono textarea {{ font-family: {MONO}; font-size: 12px; }}
.jm-root {{ color: {FONT}; font-size: 13px; line-height: 1.4; }}
.jm-root pre {{ white-space: pre-wrap; word-break: break-word; font-family: {MONO};
  font-size: 12px; background: {SURFACE}; color: {FONT}; padding: 6px; margin: 4px 0;
  border: 1px solid {BORDER}; border-radius: 3px; max-height: 32em; overflow: auto; }}
.jm-badge {{ display: inline-block; border: 1px solid {BORDER}; border-radius: 3px;
  padding: 0 4px; margin-left: 4px; font-size: 11px; color: {FONT}; }}
</style>
"""
