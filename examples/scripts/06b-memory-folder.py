"""The scripted model of 06b-memory-folder.ipynb (used by make_recordings.py).

The notebook makes no model call: where the memory folder lives, whether memory is on and
what the settings files may change are decided by jupyter-memory on this machine, not by a
model. So this script has no answer to give: a request reaching it means the notebook
changed, and make_recordings.py reports it as a request the script does not answer.
"""

from __future__ import annotations

from typing import Any


def respond(req: Any) -> None:
    """No answer: this notebook is not meant to call the model (see the module docstring)."""
    return None
