"""The display bundle every view returns: the live widget plus static fallbacks.

A notebook saved with these outputs keeps ``text/html`` and ``text/plain`` beside the
widget's view, so nbconvert, GitHub and any viewer without a running kernel show the
same information (frozen at the moment the output was displayed).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def fallback_bundle(widget: widgets.Widget, html: str, text: str, **kwargs: Any) -> dict[str, Any]:
    """``widget``'s own bundle with ``text/html`` and ``text/plain`` set to the fallbacks."""
    bundle = dict(widgets.Widget._repr_mimebundle_(widget, **kwargs) or {})
    bundle["text/html"] = html
    bundle["text/plain"] = text
    return bundle
