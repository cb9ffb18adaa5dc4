"""Steps the browser tests share: open a notebook, type and run a cell, take a screenshot,
check a part of the page with axe-core."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def new_notebook(page: Any, lab: Any) -> None:
    """Open the launcher and start a new notebook with the Python kernel."""
    page.goto(lab.home_url())
    page.locator('.jp-LauncherCard[data-category="Notebook"]').first.click()
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(state="visible")
    # Typed cells run only once the kernel is connected; until then Shift+Enter just moves on.
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget;"
        " const k = w && w.sessionContext && w.sessionContext.session"
        " && w.sessionContext.session.kernel;"
        " return !!k && k.connectionStatus === 'connected' && k.status === 'idle'; }"
    )


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


def set_theme(page: Any, name: str) -> None:
    """Switch JupyterLab's theme ("JupyterLab Light" or "JupyterLab Dark") and wait for it."""
    light = "true" if "Light" in name else "false"
    page.evaluate(
        "name => window.jupyterapp.commands.execute('apputils:change-theme', {theme: name})",
        name,
    )
    page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{light}'")
