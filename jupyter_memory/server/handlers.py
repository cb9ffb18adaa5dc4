"""REST handlers of the jupyter-memory server extension (under ``/jupyter-memory/``).

Every request names a notebook with ``?path=`` (relative to the server root); the
project, and so the memdir, is resolved from that notebook's folder exactly as the
kernel resolves it. Replies use the JSON shapes of ``jupyter-memory ... --json``.
Errors are JSON too: ``{"error": <kind>, "message": <what was wrong and how to fix
it>}``, with the HTTP status each error class carries (``errors.py``): 400 for bad input,
403 for paths that would leave the root or the memdir, 404 for what does not exist, 409
for conflicts, 502 when the model call failed, 503 when the memdir stayed locked, and 500
(``InternalError``, its traceback logged) for a bug of ours.

Store calls touch the disk and may wait for the memdir lock, so they run in a worker
thread instead of blocking the server's event loop.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

import tornado.web
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from jupyter_memory.errors import InternalError, JupyterMemoryError, internal_error
from jupyter_memory.memdir.location import MemoryLocation, locate
from jupyter_memory.memdir.store import MemoryChanges, MemoryStore
from jupyter_memory.server.resolve import (
    location_json,
    memdir_stamp,
    notebook_folder,
)

__all__ = ["NAMESPACE", "setup_handlers"]

NAMESPACE = "jupyter-memory"

T = TypeVar("T")

_CREATE_FIELDS = {"name", "description", "type", "body", "file", "hook"}
_CREATE_REQUIRED = ("name", "description", "type", "body")
_UPDATE_FIELDS = {"name", "description", "type", "body", "hook"}
_EXAMPLE = (
    '{"name": "revenue-in-cents", "description": "sales.revenue is stored in cents", '
    '"type": "project", "body": "Divide by 100 before showing money."}'
)


def status_for(error: BaseException) -> int:
    """The HTTP status that tells a client what kind of mistake an error was: the one its
    error class carries (a bug of ours: 500)."""
    if isinstance(error, tornado.web.HTTPError):
        return error.status_code
    if isinstance(error, JupyterMemoryError):
        return error.http_status
    return InternalError.http_status


def _bad_request(message: str) -> tornado.web.HTTPError:
    return tornado.web.HTTPError(400, message, reason="Bad Request")


class MemoryAPIHandler(APIHandler):
    """Shared plumbing: locating the store, running it off the event loop, JSON errors."""

    def _root_dir(self) -> str:
        root = self.settings.get("server_root_dir") or getattr(
            self.contents_manager, "root_dir", None
        )
        if not root:
            raise tornado.web.HTTPError(
                500, "The server has no root directory, so notebook paths cannot be resolved."
            )
        return os.path.expanduser(str(root))

    def _allow_hidden(self) -> bool:
        return bool(getattr(self.contents_manager, "allow_hidden", False))

    def _notebook_path(self) -> str:
        return self.get_query_argument("path", "")

    def _locate(self) -> tuple[MemoryLocation, MemoryStore]:
        """The notebook's project location and its store (blocking: call off the loop)."""
        folder = notebook_folder(self._root_dir(), self._notebook_path())
        location = locate(folder, os.environ)
        from jupyter_memory.memdir.team import (
            open_store,  # private and team memories, each with its scope
        )

        return location, open_store(location, os.environ, provenance_default="user")

    def _location_json(self, location: MemoryLocation) -> dict[str, Any]:
        return location_json(location, self._root_dir(), allow_hidden=self._allow_hidden())

    async def _off_loop(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    def _reply(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.finish(json.dumps(data, ensure_ascii=False))

    def _json_body(self, allowed: set[str], required: Iterable[str] = ()) -> dict[str, str]:
        """The request's JSON object, checked: known string fields only, required ones present."""
        raw = self.request.body
        if not raw or not raw.strip():
            raise _bad_request(f"The request has no body. Send a JSON object such as {_EXAMPLE}.")
        try:
            data = json.loads(raw)
        except RecursionError:  # e.g. 100,000 nested [[[…: the decoder runs out of stack
            raise _bad_request(
                "The request body is nested too deeply to read. Send a flat JSON object of "
                f"string fields, such as {_EXAMPLE}."
            ) from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise _bad_request(
                f"The request body is not valid JSON ({exc}). Send a JSON object such as "
                f"{_EXAMPLE}."
            ) from None
        if not isinstance(data, dict):
            raise _bad_request(
                f"The request body must be a JSON object, not {type(data).__name__}. "
                f"For example: {_EXAMPLE}."
            )
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise _bad_request(
                f"Unknown field(s) {', '.join(unknown)}; the fields are "
                f"{', '.join(sorted(allowed))}."
            )
        missing = [name for name in required if name not in data]
        if missing:
            raise _bad_request(f"Missing field(s) {', '.join(missing)}. For example: {_EXAMPLE}.")
        for name, value in data.items():
            if not isinstance(value, str):
                raise _bad_request(f"Field {name!r} must be a string, not {type(value).__name__}.")
        return data

    def _memory_file(self, file: str) -> str:
        if not file.endswith(".md"):
            raise _bad_request(
                f"{file!r} is not a memory file: memory files end in '.md' (for example "
                "'project_revenue.md')."
            )
        return file

    # --- errors ---------------------------------------------------------------------

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Every error as ``{"error", "message"}`` JSON, with the status its kind deserves."""
        error = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(error, tornado.web.HTTPError):
            kind = "".join((error.reason or self._reason).split())  # "Bad Request" -> "BadRequest"
            message = error.log_message or self._reason
            if error.args:
                message = message % error.args
        elif isinstance(error, JupyterMemoryError):
            status_code = status_for(error)
            kind = type(error).__name__
            message = str(error)
        else:  # a bug of ours, reported as one (log_exception logged its traceback)
            status_code = InternalError.http_status
            kind = InternalError.__name__
            message = str(InternalError(error)) if error is not None else self._reason
        self.clear_header("Content-Type")
        self.set_header("Content-Type", "application/json")
        self.set_status(status_code)
        self.finish(json.dumps({"error": kind, "message": message}, ensure_ascii=False))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        """Expected mistakes get one line in the server's log; a bug of ours, its
        traceback in the jupyter_memory log (and the server's)."""
        if isinstance(value, JupyterMemoryError) and not isinstance(value, InternalError):
            self.log.warning("%d %s: %s", status_for(value), self._request_summary(), value)
            return
        if isinstance(value, Exception) and not isinstance(value, tornado.web.HTTPError):
            internal_error(value, f"in {self._request_summary()}")
        super().log_exception(typ, value, tb)


class MemoriesHandler(MemoryAPIHandler):
    """``GET memories?path=`` lists the project's memories; ``POST`` creates one."""

    @tornado.web.authenticated
    async def get(self) -> None:
        def work() -> dict[str, Any]:
            location, store = self._locate()
            return {
                "location": self._location_json(location),
                "memories": [memory.to_json() for memory in store.list()],
                "stamp": memdir_stamp(store.memdir),
            }

        self._reply(await self._off_loop(work))

    @tornado.web.authenticated
    async def post(self) -> None:
        data = self._json_body(_CREATE_FIELDS, _CREATE_REQUIRED)
        if "file" in data:
            self._memory_file(data["file"])

        def work() -> dict[str, Any]:
            _location, store = self._locate()
            store.root.make_folder()
            result = store.create(
                data["name"],
                data["description"],
                data["type"],
                data["body"],
                file=data.get("file"),
                hook=data.get("hook"),
                provenance="user",
            )
            return {
                **result.to_json(),
                "messages": result.messages,
                "memory": store.get(result.file).to_json(),
            }

        self._reply(await self._off_loop(work), status=201)


class MemoryHandler(MemoryAPIHandler):
    """``GET``, ``PUT`` and ``DELETE memories/<file>?path=``: read, update, forget."""

    @tornado.web.authenticated
    async def get(self, file: str) -> None:
        file = self._memory_file(file)

        def work() -> dict[str, Any]:
            _location, store = self._locate()
            text = store.read(file)
            memory = store.get(store.normalize(file))
            return {**memory.to_json(), "text": text}

        self._reply(await self._off_loop(work))

    @tornado.web.authenticated
    async def put(self, file: str) -> None:
        file = self._memory_file(file)
        # JSON checked by _json_body: string values, keys from _UPDATE_FIELDS only
        data = cast(MemoryChanges, self._json_body(_UPDATE_FIELDS))
        if not data:
            raise _bad_request(
                f"Nothing to update: send one or more of {', '.join(sorted(_UPDATE_FIELDS))}."
            )

        def work() -> dict[str, Any]:
            _location, store = self._locate()
            result = store.update(file, **data, provenance="user")
            return {
                **result.to_json(),
                "messages": result.messages,
                "memory": store.get(result.file).to_json(),
            }

        self._reply(await self._off_loop(work))

    @tornado.web.authenticated
    async def delete(self, file: str) -> None:
        file = self._memory_file(file)

        def work() -> dict[str, Any]:
            _location, store = self._locate()
            result = store.forget(file)
            return {**result.to_json(), "messages": result.messages}

        self._reply(await self._off_loop(work))


class DoctorHandler(MemoryAPIHandler):
    """``GET doctor?path=``: the problems ``jupyter-memory doctor`` would report."""

    @tornado.web.authenticated
    async def get(self) -> None:
        from jupyter_memory.memdir.doctor import doctor

        def work() -> dict[str, Any]:
            location, store = self._locate()
            findings = doctor(store, env=os.environ)
            return {
                "memdir": str(store.memdir),
                "location": self._location_json(location),
                "findings": [finding.to_json() for finding in findings],
                "errors": sum(1 for f in findings if f.severity == "error"),
                "warnings": sum(1 for f in findings if f.severity == "warning"),
                "infos": sum(1 for f in findings if f.severity == "info"),
            }

        self._reply(await self._off_loop(work))


class IndexHandler(MemoryAPIHandler):
    """``GET index?path=``: ``MEMORY.md`` exactly as the model receives it."""

    @tornado.web.authenticated
    async def get(self) -> None:
        from jupyter_memory.memdir.index import load_for_model

        def work() -> dict[str, Any]:
            _location, store = self._locate()
            loaded = load_for_model(store.read_index())
            return {"path": str(store.index_path), **loaded.to_json()}

        self._reply(await self._off_loop(work))


class StampHandler(MemoryAPIHandler):
    """``GET stamp?path=``: a digest that changes whenever the memdir's files change."""

    @tornado.web.authenticated
    async def get(self) -> None:
        def work() -> dict[str, Any]:
            _location, store = self._locate()
            return {"stamp": memdir_stamp(store.memdir)}

        self._reply(await self._off_loop(work))


def setup_handlers(web_app: tornado.web.Application) -> None:
    """Mount the handlers under ``<base_url>/jupyter-memory/``."""
    base = url_path_join(web_app.settings.get("base_url", "/"), NAMESPACE)
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "memories"), MemoriesHandler),
            (url_path_join(base, "memories", "(?P<file>.+)"), MemoryHandler),
            (url_path_join(base, "doctor"), DoctorHandler),
            (url_path_join(base, "index"), IndexHandler),
            (url_path_join(base, "stamp"), StampHandler),
        ],
    )
