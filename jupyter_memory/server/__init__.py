"""The jupyter_server extension: the REST API the JupyterLab panel talks to.

Enabled automatically by ``etc/jupyter/jupyter_server_config.d/jupyter_memory.json``,
which the wheel installs. Importing this package is cheap; the handlers (and
jupyter_server) are imported only when the server loads the extension.
"""

from __future__ import annotations

from typing import Any

__all__ = ["_jupyter_server_extension_points", "_load_jupyter_server_extension"]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_memory.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Mount the ``/jupyter-memory/`` handlers on the server's web application."""
    from jupyter_memory.logs import setup as setup_log
    from jupyter_memory.memdir.basedir import config_base
    from jupyter_memory.server.handlers import NAMESPACE, setup_handlers

    setup_handlers(serverapp.web_app)
    where = setup_log(config_base())
    serverapp.log.info("jupyter-memory: REST API mounted under /%s/ (log: %s)", NAMESPACE, where)
