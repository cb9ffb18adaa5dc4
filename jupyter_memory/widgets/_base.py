"""The display bundle every view returns: the live widget plus static fallbacks.

A notebook saved with these outputs keeps ``text/html`` and ``text/plain`` beside the
widget's view, so nbconvert, GitHub and any viewer without a running kernel show the
same information (frozen at the moment the output was displayed).

JupyterLab alone would still prefer the widget view in a trusted notebook and, once the
kernel that made the widget is gone, show "Error displaying widget: model not found".
So the bundle also carries :data:`VIEW_MIME`, a small marker our lab extension renders
ahead of the widget view (labextension/src/widgetview.ts): it shows the static copy, and
the live widget only while its model exists (docs/widgets.md, "Without a kernel").
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from jupyter_memory.widgets.roots import bundle_on_page

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: The marker of a widget output with a static copy; its data names the view.
VIEW_MIME = "application/vnd.jupyter-memory.view+json"


def fallback_bundle(widget: widgets.Widget, html: str, text: str, **kwargs: Any) -> dict[str, Any]:
    """``widget``'s own bundle with ``text/html`` and ``text/plain`` set to the fallbacks,
    and the :data:`VIEW_MIME` marker that lets the lab extension choose between them."""
    bundle = dict(widgets.Widget._repr_mimebundle_(widget, **kwargs) or {})
    if WIDGET_MIME in bundle:
        bundle[VIEW_MIME] = {"view": type(widget).__name__, "version": 1}
    bundle["text/html"] = html
    bundle["text/plain"] = text
    return bundle_on_page(bundle)
