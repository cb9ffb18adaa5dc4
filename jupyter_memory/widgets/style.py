"""Colours, patterns and theme-aware CSS shared by the widgets and their HTML fallbacks.

The context bar's fills come from :mod:`jupyter_memory.widgets.palette` (one colour per
category, the lab's copy generated from it). A category differs from its neighbours in
lightness (dark and light fills alternate, at least 3:1), by a track-coloured gap, and by
its name in the legend, so it reads without colour vision and in grayscale print. Text and
borders use JupyterLab's ``--jp-*`` CSS variables with light-theme fallbacks, so the same
HTML reads in light and dark themes and outside JupyterLab.
"""

from __future__ import annotations

from dataclasses import dataclass

from jupyter_memory.widgets import palette

__all__ = [
    "BORDER",
    "CSS",
    "ERROR",
    "FONT",
    "FONT_MUTED",
    "GAP_PX",
    "LEVEL_STYLES",
    "MONO",
    "PALETTE",
    "SURFACE",
    "TRACK_CLASS",
    "TRACK_CSS",
    "WARN",
    "Swatch",
    "gap_css",
    "swatch",
    "swatch_class",
    "swatch_css",
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
    """How one category is drawn in a static copy: its fill (the light theme's), an
    optional pattern over it, its one-letter tag and its colour in words."""

    colour: str
    pattern: str
    pattern_size: str
    tag: str
    description: str


def _swatch(cat: palette.CategoryColour) -> Swatch:
    pattern = palette.HATCH if cat.name == "autocompact buffer" else ""
    return Swatch(cat.light, pattern, "", cat.tag, cat.words)


#: Category → swatch, in bar order (:mod:`jupyter_memory.widgets.palette` holds the colours).
PALETTE: dict[str, Swatch] = {cat.name: _swatch(cat) for cat in palette.CATEGORIES}
_FALLBACK = _swatch(palette.UNKNOWN)


def swatch(name: str) -> Swatch:
    return PALETTE.get(name, _FALLBACK)


def swatch_css(name: str) -> str:
    """Inline CSS drawing the fill of category ``name`` in a static copy: plain ``#rrggbb``
    (sanitisers drop ``var()``), with the text colour that reads on it."""
    sw = swatch(name)
    css = f"background-color:{sw.colour};color:{palette.ink(sw.colour)};"
    if sw.pattern:
        css += f"background-image:{sw.pattern};"
    if sw.pattern_size:
        css += f"background-size:{sw.pattern_size};"
    return css


def swatch_class(name: str) -> str:
    """The class that gives category ``name`` its theme's fill where the lab's styles load."""
    return palette.category_class(name)


#: Inline CSS of the bar's track (free space and the gaps between segments) and outline
#: in a static copy; :data:`TRACK_CLASS` gives them the theme's colours in JupyterLab.
TRACK_CSS = (f"background-color:{palette.TRACK['light']};"
             f"border:1px solid {palette.OUTLINE['light']};")
TRACK_CLASS = "jm-bar-track"
#: Pixels of track between two segments: two fills of one lightness (a category missing
#: between them) stay apart.
GAP_PX = 2


def gap_css(name: str, *, last: bool) -> str:
    """The gap after a segment: none after free space (it is the track) or the last one."""
    return "" if last or name == "free" else f"margin-right:{GAP_PX}px;"


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
