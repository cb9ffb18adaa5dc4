"""Names a package exports but imports only on first use (PEP 562).

The package is imported by the kernel and by jupyter_server alike, so a package's
``__init__`` stays light: it maps each public name to the module that defines it, and
:func:`lazy_exports` gives it the module ``__getattr__`` and ``__dir__`` that import the
module when the name is first read and keep the value.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, namespace: dict[str, Any], exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, whose globals are ``namespace``.

    ``exports`` maps a name to its module: a full dotted name, or one relative to the
    package when it starts with a dot (``".control"``).
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
