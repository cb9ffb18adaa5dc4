"""Folders named by their role on the page: ``<memdir>``, ``<transcripts>``, ``<base>``,
``<project>``, ``<tmp>``.

With ``Agent.display_roots`` on (docs/configuration.md#folder-names-on-the-page), what this
package shows on the page — printed text, the static copies of its views, turn views,
notices — names the memory folder, the session logs folder, the configuration folder, the
project folder and the temporary folder by role
instead of by path, so a saved notebook carries no machine paths and two runs in different
folders show the same text. Only the page: requests, recordings and the turn records an
output carries as data keep the exact paths (resume and bundles rebuild requests from them).

The magics set the roots of the kernel's session with :func:`use_display_roots`; every
display path passes its text through :func:`on_page` or its bundle through
:func:`bundle_on_page`, which change nothing while no roots are set.
"""

from __future__ import annotations

import html
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_memory.widgets.safe import _inline_escape, _literal

__all__ = ["DisplayRoots", "bundle_on_page", "current_display_roots", "on_page",
           "use_display_roots"]

#: The bundle entries that are text for people (the rest is data, kept exact).
PAGE_MIMES = ("text/plain", "text/markdown", "text/html")
_MARKUP_MIMES = ("text/markdown", "text/html")


def _forms(path: str) -> set[str]:
    """``path`` as written and as its real path, without a trailing separator."""
    forms = {path.rstrip(os.sep) or path}
    real = os.path.realpath(path)
    forms.add(real.rstrip(os.sep) or real)
    return {f for f in forms if len(f) > 1}


@dataclass(frozen=True)
class DisplayRoots:
    """The folders the page names by role, each with its name; the longest path first, so
    a memdir inside the project reads ``<memdir>`` rather than ``<project>/…``."""

    roots: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, *, memdir: Path | str | None, project: Path | str | None,
           tmp: Path | str | None = None, base: Path | str | None = None,
           transcripts: Path | str | None = None) -> DisplayRoots:
        """The roots of a session: its memdir, its project root, the temporary folder
        (``tempfile.gettempdir()`` unless given), the configuration folder (``<base>``:
        ``CLAUDE_CONFIG_DIR`` or ``~/.claude``) and the folder of its session logs and notes
        (``<base>/projects/<key>``, whose key spells the project's path out)."""
        named: dict[str, str] = {}
        for path, name in ((tmp if tmp is not None else tempfile.gettempdir(), "<tmp>"),
                           (project, "<project>"), (base, "<base>"),
                           (transcripts, "<transcripts>"), (memdir, "<memdir>")):
            if path is not None and str(path):
                for form in _forms(str(path)):
                    named[form] = name  # a later (narrower) role wins for the same folder
        ordered = sorted(named.items(), key=lambda item: (-len(item[0]), item[0]))
        return cls(roots=tuple(ordered))

    def _sub(self, text: str, markup: bool) -> str:
        for path, name in self.roots:
            shown = html.escape(name, quote=False) if markup else name
            spellings = {path}
            if markup:
                spellings |= {html.escape(path, quote=True), _literal(path),
                              _inline_escape(path)}
            for spelling in sorted(spellings, key=len, reverse=True):
                # A whole folder name only: /tmp/x must not shorten /tmp/xy.
                text = re.sub(re.escape(spelling) + r"(?![\w-]|\.\w)", shown.replace("\\", "\\\\"),
                              text)
        return text

    def shorten(self, text: str) -> str:
        """Plain ``text`` with each root replaced by its name."""
        return self._sub(text, markup=False)

    def shorten_markup(self, text: str) -> str:
        """HTML or markdown with each root, in any of the escaped forms this package
        writes, replaced by its name, entity-escaped."""
        return self._sub(text, markup=True)

    def bundle(self, bundle: Mapping[str, Any]) -> dict[str, Any]:
        """``bundle`` with its text for people shortened; data entries left exact."""
        out = dict(bundle)
        for mime in PAGE_MIMES:
            value = out.get(mime)
            if isinstance(value, str):
                out[mime] = (self.shorten_markup(value) if mime in _MARKUP_MIMES
                             else self.shorten(value))
        return out


_current: DisplayRoots | None = None


def use_display_roots(roots: DisplayRoots | None) -> None:
    """Name these roots on the page from now on (None: show paths as they are)."""
    global _current
    _current = roots


def current_display_roots() -> DisplayRoots | None:
    return _current


def on_page(text: str) -> str:
    """Plain ``text`` as the page shows it: the session's folders named by role while
    ``Agent.display_roots`` is on (public: a cell printing a request uses it too)."""
    roots = _current
    return text if roots is None else roots.shorten(text)


def bundle_on_page(bundle: Mapping[str, Any]) -> dict[str, Any]:
    """A display bundle as the page shows it."""
    roots = _current
    return dict(bundle) if roots is None else roots.bundle(bundle)
