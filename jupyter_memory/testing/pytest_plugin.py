"""Deprecated: register ``jupyter_memory.localapi.pytest_plugin`` instead.

The ``fake_api`` fixture is re-exported here for one release; importing this module warns.
"""

from __future__ import annotations

import warnings

from jupyter_memory.localapi.pytest_plugin import fake_api

__all__ = ["fake_api"]

warnings.warn(
    "jupyter_memory.testing.pytest_plugin is deprecated and will be removed in the next "
    'release: register pytest_plugins = ["jupyter_memory.localapi.pytest_plugin"] instead.',
    DeprecationWarning,
    stacklevel=2,
)
