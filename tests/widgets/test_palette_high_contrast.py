"""The context bar in JupyterLab's "Dark High Contrast" theme (issue 31): its own track
and outline, keyed by the theme's name in the lab's stylesheet, every goal of 3:1 met."""

from __future__ import annotations

from jupyter_memory.widgets import palette

#: The theme's page colours (--jp-layout-color0/1 of JupyterLab 4's dark high-contrast theme).
HC_PAGES = ("#111111", "#000000")


def test_the_theme_has_its_own_track_and_outline():
    assert palette.TRACK["high-contrast"] == "#000000"
    assert palette.OUTLINE["high-contrast"] == "#ffffff"
    for page in HC_PAGES:
        assert palette.contrast(palette.OUTLINE["high-contrast"], page) >= 3.0, page


def test_every_fill_stands_further_from_the_track_than_in_dark():
    for cat in (*palette.CATEGORIES, palette.UNKNOWN):
        if cat.name == "free":
            continue
        hc = palette.contrast(cat.fill("high-contrast"), palette.TRACK["high-contrast"])
        dark = palette.contrast(cat.fill("dark"), palette.TRACK["dark"])
        assert hc >= max(3.0, dark), cat.name


def test_the_lab_stylesheet_keys_the_theme_by_name_after_the_dark_rules():
    css = palette.palette_css()
    dark = css.index(palette.THEME_SELECTORS["dark"] + " {")
    hc = css.index("body[data-jp-theme-name='JupyterLab Dark High Contrast'] {")
    # Same specificity as the dark block: coming later is what makes it win.
    assert hc > dark
    block = css[hc:css.index("}", hc)]
    assert "--jm-context-track: #000000;" in block
    assert "--jm-context-outline: #ffffff;" in block
    # The fills it shares with the dark theme come from the dark block, not a copy.
    assert "--jm-context-system:" not in block
