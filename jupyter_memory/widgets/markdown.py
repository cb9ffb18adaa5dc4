"""Markdown to HTML for answers and summaries, with raw HTML always escaped."""

from __future__ import annotations

import html
from typing import Any


def markdown_to_html(text: str) -> str:
    """Markdown rendered with mistune (shipped with Jupyter), else shown preformatted.

    Raw HTML in the text is escaped, never passed through: answers and summaries are
    model output that a poisoned memory or file could steer, and a freshly executed
    notebook's HTML output is trusted by JupyterLab.
    """
    try:
        return str(_markdown()(text))
    except Exception:  # mistune missing or failing: a plain, still legible fallback
        return f"<pre style='white-space:pre-wrap'>{html.escape(text)}</pre>"


_RENDERER: Any = None


def _markdown() -> Any:
    global _RENDERER
    if _RENDERER is None:
        import mistune

        _RENDERER = mistune.create_markdown(escape=True, plugins=["table", "strikethrough"])
    return _RENDERER
