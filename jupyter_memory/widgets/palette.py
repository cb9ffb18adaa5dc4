"""The context bar's colours, one per category, defined once for every view.

``%context``, the turn view, their static copies and the lab extension all draw the same
bar, so a category has one colour everywhere and keeps it when another is missing. The
lab's copy (``labextension/src/palette.ts`` and ``labextension/style/palette.css``) is
generated from this module (``python scripts/palette_lab.py``) and a test
checks it matches.

Contrast (WCAG 2.x ratios, at least 3:1 for graphics): every fill against the bar's track
(the free space, and the gap drawn between segments) in every theme; neighbours in the
bar's order against each other, dark and light fills alternating; the bar's outline
against a white and a dark page. A missing category leaves two fills of the same
lightness side by side, and the track-coloured gap between them keeps them apart.

JupyterLab's "Dark High Contrast" theme keeps the dark fills on a black track inside a
white outline (its own borders are white), keyed by the theme's name, so every fill
stands further from the track than in the dark theme.

Static copies have no theme: they use the light fills on a white track inside a grey
outline, which reads on white and dark pages. In JupyterLab each segment also carries a
``jm-cat-*`` class, so the lab's stylesheet gives it the dark theme's fill there.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = [
    "BAR_ORDER",
    "CATEGORIES",
    "HATCH",
    "OUTLINE",
    "THEMES",
    "THEME_BASE",
    "THEME_SELECTORS",
    "TRACK",
    "UNKNOWN",
    "CategoryColour",
    "category_class",
    "colour",
    "contrast",
    "ink",
    "luminance",
    "palette_css",
    "palette_ts",
]

#: The themes a fill is chosen for: JupyterLab's light, dark and dark high-contrast ones.
THEMES = ("light", "dark", "high-contrast")
#: The CSS selector each theme's variables are set under in the lab.
THEME_SELECTORS = {
    "light": ":root",
    "dark": "body[data-jp-theme-light='false']",
    "high-contrast": "body[data-jp-theme-name='JupyterLab Dark High Contrast']",
}
#: A theme whose page also matches another's selector: its block holds only what differs
#: (the high-contrast theme is a dark theme, so the dark block applies to it first).
THEME_BASE = {"high-contrast": "dark"}


@dataclass(frozen=True)
class CategoryColour:
    """A category's fill in each theme, its one-letter tag and its colour in words."""

    name: str
    light: str
    dark: str
    tag: str
    words: str
    #: The high-contrast theme's fill, when it is not the dark one.
    high_contrast: str | None = None

    def fill(self, theme: str) -> str:
        if theme not in THEMES:
            raise ValueError(f"unknown theme {theme!r}; use one of {', '.join(THEMES)}")
        if theme == "light":
            return self.light
        if theme == "high-contrast" and self.high_contrast is not None:
            return self.high_contrast
        return self.dark


#: The bar's order: what the request holds, then free space, then the autocompact buffer
#: (reserved from the autocompact level to the window's end). Dark and light fills
#: alternate along it in each theme.
CATEGORIES: tuple[CategoryColour, ...] = (
    CategoryColour("system", "#1b2f4b", "#9fc3f0", "S", "dark blue / light blue"),
    CategoryColour("tools", "#2f94a3", "#2c6f7b", "T", "teal"),
    CategoryColour("instructions", "#3b1a60", "#d6b4f0", "I", "dark purple / lilac"),
    CategoryColour("index", "#d86d22", "#a04e14", "X", "orange"),
    CategoryColour("memories", "#452600", "#f0c36a", "M", "dark brown / amber"),
    CategoryColour("messages", "#3f9c55", "#2f7340", "C", "green"),
    CategoryColour("free", "#ffffff", "#111111", "F", "the bar's empty track", "#000000"),
    CategoryColour("autocompact buffer", "#8a8a8a", "#6e6e6e", "B", "grey, hatched"),
)
BAR_ORDER: tuple[str, ...] = tuple(c.name for c in CATEGORIES)
_BY_NAME = {c.name: c for c in CATEGORIES}
#: A category this palette does not know (a newer report): neutral, and still 3:1 on the track.
UNKNOWN = CategoryColour("other", "#5c5c5c", "#a8a8a8", "?", "grey")

#: The bar's track (free space and the gaps between segments), per theme.
TRACK = {theme: _BY_NAME["free"].fill(theme) for theme in THEMES}
#: The bar's outline: at least 3:1 against the page, white or dark, in each theme.
OUTLINE = {"light": "#767676", "dark": "#8a8a8a", "high-contrast": "#ffffff"}
#: The buffer's hatching: darker stripes, so the buffer reads as reserved, not used.
HATCH = "repeating-linear-gradient(-45deg, rgba(0,0,0,.3) 0 2px, transparent 2px 6px)"


def colour(name: str) -> CategoryColour:
    """The colours of category ``name`` (:data:`UNKNOWN` for one this palette lacks)."""
    return _BY_NAME.get(name, UNKNOWN)


@functools.lru_cache(maxsize=256)
def category_class(name: str) -> str:
    """The CSS class of a category's segment and swatch: ``jm-cat-autocompact-buffer``."""
    return "jm-cat-" + (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "other")


@functools.lru_cache(maxsize=256)
def luminance(hex_colour: str) -> float:
    """WCAG relative luminance of a ``#rrggbb`` colour (worked out once per colour: every
    context bar asks for the ink of each fill)."""
    value = hex_colour.lstrip("#")
    if not re.fullmatch(r"[0-9a-fA-F]{6}", value):
        raise ValueError(f"not a #rrggbb colour: {hex_colour!r}")
    r, g, b = (int(value[i : i + 2], 16) / 255 for i in (0, 2, 4))

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)


def contrast(a: str, b: str) -> float:
    """The WCAG contrast ratio of two colours (1 … 21)."""
    la, lb = sorted((luminance(a), luminance(b)))
    return (lb + 0.05) / (la + 0.05)


@functools.lru_cache(maxsize=256)
def ink(fill: str) -> str:
    """Black or white text, whichever contrasts more with ``fill``."""
    return "#ffffff" if contrast(fill, "#ffffff") >= contrast(fill, "#000000") else "#000000"


# --------------------------------------------------------------------------- the lab's copy

_HEADER = ("Generated by 'python scripts/palette_lab.py' from "
           "jupyter_memory/widgets/palette.py: do not edit.")


def _var(name: str, what: str = "") -> str:
    return f"--jm-context-{category_class(name)[len('jm-cat-'):]}{what}"


def _theme_values(theme: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for cat in (*CATEGORIES, UNKNOWN):
        values[_var(cat.name)] = cat.fill(theme)
        values[_var(cat.name, "-ink")] = ink(cat.fill(theme))
    values["--jm-context-track"] = TRACK[theme]
    values["--jm-context-outline"] = OUTLINE[theme]
    return values


def palette_css() -> str:
    """CSS variables per theme and one rule per category class.

    The rules carry ``!important`` because the static copies draw their fills inline
    (for viewers without this stylesheet); in JupyterLab the theme's fill wins.
    """
    lines = [f"/* {_HEADER} */", ""]
    for theme, selector in THEME_SELECTORS.items():
        values = _theme_values(theme)
        base = THEME_BASE.get(theme)
        if base is not None:  # its page matches the base theme's selector too
            inherited = _theme_values(base)
            values = {k: v for k, v in values.items() if inherited[k] != v}
        lines.append(f"{selector} {{")
        lines += [f"  {name}: {value};" for name, value in values.items()]
        lines.append("}")
        lines.append("")
    for cat in (*CATEGORIES, UNKNOWN):
        lines.append(f".{category_class(cat.name)} {{")
        lines.append(f"  background-color: var({_var(cat.name)}) !important;")
        lines.append(f"  color: var({_var(cat.name, '-ink')}) !important;")
        if cat.name == "autocompact buffer":
            lines.append(f"  background-image: {HATCH} !important;")
        lines.append("}")
        lines.append("")
    lines += [
        ".jm-bar-track {",
        "  background-color: var(--jm-context-track) !important;",
        "  border-color: var(--jm-context-outline) !important;",
        "}",
        "",
    ]
    return "\n".join(lines)


def palette_ts() -> str:
    """The bar's order, tags and class names for the lab renderer."""
    rows = ",\n".join(
        f"  {{ name: '{c.name}', tag: '{c.tag}', className: '{category_class(c.name)}', "
        f"light: '{c.light}', dark: '{c.dark}' }}" for c in CATEGORIES)
    return (
        f"/* {_HEADER} */\n\n"
        "/** One category of the context bar: its tag, class and fill per theme. */\n"
        "export interface ICategoryColour {\n  name: string;\n  tag: string;\n"
        "  className: string;\n  light: string;\n  dark: string;\n}\n\n"
        "/** The bar's order: used categories, then free space, then the autocompact buffer. */\n"
        f"export const CATEGORIES: ICategoryColour[] = [\n{rows}\n];\n\n"
        "/** The class of a category the palette does not know. */\n"
        f"export const UNKNOWN_CLASS = '{category_class(UNKNOWN.name)}';\n"
    )
