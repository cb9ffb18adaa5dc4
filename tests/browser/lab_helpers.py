"""Steps the browser tests share: open a notebook, type and run a cell, take a screenshot,
switch the theme, and the checks JupyterLab and Notebook 7 modules both run: axe-core on
output areas, clipping and overlap at every width, the context bar's contrast as applied,
the free segment of a sanitised bar, console errors."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


def _wait_for_kernel(page: Any) -> None:
    # Typed cells run only once the kernel is connected; until then Shift+Enter just moves on.
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget;"
        " const k = w && w.sessionContext && w.sessionContext.session"
        " && w.sessionContext.session.kernel;"
        " return !!k && k.connectionStatus === 'connected' && k.status === 'idle'; }"
    )


def new_notebook(page: Any, lab: Any) -> None:
    """Open the launcher and start a new notebook with the Python kernel."""
    page.goto(lab.home_url())
    page.locator('.jp-LauncherCard[data-category="Notebook"]').first.click()
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(state="visible")
    _wait_for_kernel(page)


def open_notebook(page: Any, lab: Any, path: str) -> None:
    """Open the notebook at ``path`` (JupyterLab or Notebook 7) once its kernel is idle."""
    page.goto(lab.page_url(path))
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(state="visible")
    _wait_for_kernel(page)


def run_cell(page: Any, index: int, source: str) -> Any:
    """Type ``source`` into cell ``index``, run it, wait until it ran; return the cell."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.locator(".cm-content").click()
    page.keyboard.insert_text(source)
    page.keyboard.press("Shift+Enter")
    # The prompt reads "[*]:" while the cell runs and "[N]:" once it is done.
    page.wait_for_function(
        "el => /^\\[\\d+\\]:$/.test(el.textContent.trim())",
        arg=cell.locator(".jp-InputArea-prompt").element_handle(),
    )
    return cell


def shot(target: Any, artifacts: Path, name: str) -> None:
    """A screenshot of a page or of one element (cropped to it) in test-artifacts."""
    target.screenshot(path=str(artifacts / f"{name}.png"))


def output(cell: Any) -> Any:
    return cell.locator(".jp-OutputArea")


#: The widths every view is checked at (issue 31: a sidebar open, two notebooks side by side).
WIDTHS = (1400, 800, 630, 440, 400)
#: An ipywidgets view in an output area (the live ``%memory`` and ``%context``).
WIDGET = ".jp-OutputArea-output .widget-vbox"
#: The first cell of a notebook that runs an agent turn against the fake Messages API:
#: recall that waits for its prefetch and needs no model, so the turn's requests are fixed.
AGENT_SETUP = (
    "%load_ext jupyter_memory\n"
    "%config Agent.recall_mode = 'prefetch'\n"
    "%config Agent.recall_selector = 'offline'\n"
    "%config Agent.wait_for_prefetch = True"
)

# What the accessibility checks fail on: axe-core's two worst impact levels.
AXE_FAILING = ("serious", "critical")


def axe_violations(page: Any, script: Path, selector: str) -> list[str]:
    """axe-core's serious and critical violations inside ``selector``, one line each.

    The bundle is injected from the lab extension's node_modules (``axe_script``
    fixture); only the WCAG A and AA rules and axe's best practices run.
    """
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(script))
    found = page.evaluate(
        """async selector => {
          const result = await window.axe.run(selector, {
            runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa', 'best-practice']},
            resultTypes: ['violations'],
          });
          if (result.passes.length === 0) {
            throw new Error('axe-core checked nothing in ' + selector);
          }
          return result.violations.map(v => ({
            id: v.id, impact: v.impact, help: v.help,
            targets: v.nodes.slice(0, 3).map(n => n.target.join(' ')),
            summary: v.nodes.length ? v.nodes[0].failureSummary : '',
          }));
        }""",
        selector,
    )
    return [
        f"{v['impact']} {v['id']}: {v['help']} at {v['targets']} ({v['summary']})"
        for v in found
        if v["impact"] in AXE_FAILING
    ]


#: JupyterLab 4's themes by the palette's name for them (``palette.THEMES``).
THEMES = {
    "light": "JupyterLab Light",
    "dark": "JupyterLab Dark",
    "high-contrast": "JupyterLab Dark High Contrast",
}


def set_theme(page: Any, name: str) -> None:
    """Switch to theme ``name`` (a value of :data:`THEMES`) and wait until it applies."""
    page.evaluate(
        "name => window.jupyterapp.commands.execute('apputils:change-theme', {theme: name})",
        name,
    )
    page.wait_for_function("name => document.body.dataset.jpThemeName === name", arg=name)
    light = "true" if "Light" in name else "false"
    page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{light}'")

def console_errors(page: Any) -> list[str]:
    """A list that collects the page's console errors from now on (it fills as they come)."""
    found: list[str] = []
    page.on("console", lambda msg: found.append(msg.text) if msg.type == "error" else None)
    return found


def wait_for_static_views(page: Any, selector: str, count: int) -> None:
    """Wait until ``count`` views match ``selector`` and each has concluded that the
    notebook's widget manager holds no model for it (so its static copy stays)."""
    page.wait_for_function(
        "([sel, n]) => { const views = document.querySelectorAll(sel);"
        " return views.length === n && [...views].every("
        "   v => v.classList.contains('jp-MemoryView-nomodel')); }",
        arg=[selector, count],
    )


def axe_outputs(page: Any, script: Path, cells: dict[str, Any]) -> dict[str, list[str]]:
    """axe-core's serious and critical findings in each cell's output area, by name."""
    found = {}
    for name, cell in cells.items():
        cell.evaluate("(el, name) => { el.dataset.axe = name; }", name)
        cell.scroll_into_view_if_needed()
        found[name] = axe_violations(page, script, f"[data-axe={name}] .jp-OutputArea")
    return found


#: Bounding-box checks run in the page: returns a list of problems, empty when none.
LAYOUT_CHECK = """
root => {
  const problems = [];
  const area = root.getBoundingClientRect();
  const box = el => el.getBoundingClientRect();
  const textBox = el => {
    const range = document.createRange();
    range.selectNodeContents(el);
    return range.getBoundingClientRect();
  };
  const overlap = (a, b) =>
    a.left < b.right - 0.5 && b.left < a.right - 0.5 &&
    a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const inside = r => r.left >= area.left - 0.5 && r.right <= area.right + 0.5;
  const levels = [...root.querySelectorAll('.jm-level-label')];
  levels.forEach((el, i) => {
    const r = textBox(el);
    if (!inside(r)) problems.push(`level label "${el.textContent}" leaves the output`);
    levels.slice(0, i).forEach(other => {
      if (overlap(r, textBox(other)))
        problems.push(`level labels "${el.textContent}" and "${other.textContent}" overlap`);
    });
  });
  for (const seg of root.querySelectorAll('[class^="jm-cat-"]')) {
    if (seg.textContent && seg.scrollWidth > seg.clientWidth + 1)
      problems.push(`segment label "${seg.textContent}" is cut`);
  }
  const rows = [...root.querySelectorAll('.widget-hbox')].filter(
    row => row.querySelector('.jm-gauge-label'));
  if (root.querySelector('.jm-gauge-label') && rows.length === 0)
    problems.push('no gauge rows found');
  for (const row of rows) {
    const parts = [...row.children];
    parts.forEach((part, i) => {
      const r = box(part);
      if (!inside(r)) problems.push(`gauge part ${i} of "${row.textContent}" leaves the output`);
      if (part.scrollWidth > part.clientWidth + 1)
        problems.push(`gauge part ${i} of "${row.textContent}" is cut`);
      parts.slice(0, i).forEach(other => {
        if (overlap(r, box(other))) problems.push(`gauge parts overlap in "${row.textContent}"`);
      });
    });
  }
  return problems;
}
"""

#: The applied fills of the bar's segments, in order, and the track's colour.
FILLS = """
root => {
  const bar = root.querySelector('.jm-bar-track');
  if (!bar) return null;
  const hex = c => '#' + c.match(/\\d+/g).slice(0, 3)
    .map(n => Number(n).toString(16).padStart(2, '0')).join('');
  // The page behind the bar: the nearest ancestor with a background of its own.
  let page = 'rgb(255, 255, 255)';
  for (let el = bar.parentElement; el; el = el.parentElement) {
    const bg = getComputedStyle(el).backgroundColor;
    if (bg && !/rgba\\(.*, 0\\)$/.test(bg) && bg !== 'transparent') { page = bg; break; }
  }
  return {
    track: hex(getComputedStyle(bar).backgroundColor),
    outline: hex(getComputedStyle(bar).borderTopColor),
    page: hex(page),
    fills: [...bar.children].filter(s => /jm-cat-/.test(s.className))
      .map(s => [s.className, hex(getComputedStyle(s).backgroundColor)])
  };
}
"""




def resize(page: Any, width: int) -> None:
    """Make the window ``width`` px wide and wait until the page has laid itself out."""
    page.set_viewport_size({"width": width, "height": 1600})
    page.wait_for_function(f"() => window.innerWidth === {width}")
    # Two frames: the app's layout has run after the resize event.
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def layout_problems(views: dict[str, Any]) -> list[str]:
    """What :data:`LAYOUT_CHECK` finds clipped or overlapping in each view, prefixed."""
    return [f"{name}: {problem}" for name, view in views.items()
            for problem in view.evaluate(LAYOUT_CHECK)]


def contrast_problems(views: dict[str, Any], theme: str) -> list[str]:
    """Where the context bars drawn in ``views`` miss the palette's goals in ``theme``.

    The applied colours are read from the page: the track and each fill must be the
    palette's for the theme; every fill contrasts at least 3:1 with the track (the free
    space and the gaps), neighbours in the bar's order with each other, and the bar's
    outline with the page behind it.
    """
    from jupyter_memory.widgets import palette

    problems: list[str] = []
    bars = {name: bar for name, view in views.items() if (bar := view.evaluate(FILLS))}
    if not bars:
        return [f"{theme}: no context bar on the page"]
    expected = {palette.category_class(c.name): c.fill(theme) for c in palette.CATEGORIES}
    order = [palette.category_class(name) for name in palette.BAR_ORDER]

    def low(a: str, b: str) -> bool:
        return palette.contrast(a, b) < 3.0

    for name, bar in bars.items():
        where = f"{theme} {name}"
        if bar["track"] != palette.TRACK[theme]:
            problems.append(f"{where}: track {bar['track']}, not {palette.TRACK[theme]}")
        if low(bar["outline"], bar["page"]):
            problems.append(f"{where}: outline {bar['outline']} on page {bar['page']}")
        seen: list[tuple[str, str]] = []
        for classes, fill in bar["fills"]:
            cls = next(c for c in classes.split() if c.startswith("jm-cat-"))
            if cls in expected and fill != expected[cls]:
                problems.append(f"{where}: {cls} is {fill}, not {expected[cls]}")
            if cls != "jm-cat-free" and low(fill, bar["track"]):
                problems.append(f"{where}: {cls} {fill} on track {bar['track']}")
            if seen and cls in order and seen[-1][0] in order:
                prev_cls, prev_fill = seen[-1]
                if order.index(cls) == order.index(prev_cls) + 1 and "jm-cat-free" not in (
                        cls, prev_cls) and low(fill, prev_fill):
                    problems.append(f"{where}: {prev_cls} {prev_fill} next to {cls} {fill}")
            seen.append((cls, fill))
    return problems


#: The free segment of the first context bar in an element: its drawn share of the bar
#: and the share its inline ``flex`` asks for (both percent), and its applied fill.
_FREE = """
root => {
  const bar = root.querySelector('.jm-bar-track');
  const free = bar && bar.querySelector('.jm-cat-free');
  if (!free) return null;
  const hex = c => '#' + c.match(/\\d+/g).slice(0, 3)
    .map(n => Number(n).toString(16).padStart(2, '0')).join('');
  return {
    drawn: 100 * free.getBoundingClientRect().width / bar.getBoundingClientRect().width,
    asked: parseFloat(free.style.flexBasis),
    fill: hex(getComputedStyle(free).backgroundColor),
    track: hex(getComputedStyle(bar).backgroundColor),
    text: free.textContent,
  };
}
"""


def free_segment_problems(view: Any) -> list[str]:
    """What is wrong with the free segment of a static context bar, [] when nothing.

    A sanitiser (an untrusted notebook) that dropped its ``flex`` or its fill would
    leave free space drawn as nothing, or in another colour than the track it stands for.
    """
    free = view.evaluate(_FREE)
    if free is None:
        return ["no free segment in the bar"]
    problems = []
    if math.isnan(free["asked"]):  # no flex-basis left on the element
        problems.append("the free segment lost its width (flex)")
    elif abs(free["drawn"] - free["asked"]) > 3:
        problems.append(f"free drawn at {free['drawn']:.1f}% of the bar, not {free['asked']}%")
    if free["fill"] != free["track"]:
        problems.append(f"free is {free['fill']}, not the track's {free['track']}")
    if not free["text"].startswith("free"):
        problems.append(f"free segment reads {free['text']!r}")
    return problems
