"""A command that calls the model (``context --count``) reports a failed call as one, in both
front ends: the command line exits 3 with the endpoint's reason, the magic fails with that one
line; neither calls it a bug of ours (exit 70, "internal error") or logs it as one.

The endpoint here is a real HTTP server on 127.0.0.1 that refuses every request with a 400
the SDK does not retry, as an endpoint refusing a request does."""

from __future__ import annotations

import io
import json
import logging
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from jupyter_memory.errors import EXIT_MODEL

REASON = "count refused for this test"
SAID = f"The model endpoint answered with an error (400): {REASON}"


class _Refuse(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        # Counted before the answer leaves: the client may read it, and the test check the
        # count, before this thread runs again.
        self.server.refused += 1  # type: ignore[attr-defined]
        body = json.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                      "message": REASON}}).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture
def refusing(monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadingHTTPServer]:
    """A model endpoint that refuses every call, named by the environment."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuse)
    server.refused = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def _ours(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records
            if r.name.startswith("jupyter_memory") and r.levelno >= logging.WARNING]


def test_the_command_line_exits_3_with_the_endpoints_reason(
        project: Path, memdir: Path, refusing: ThreadingHTTPServer,
        caplog: pytest.LogCaptureFixture) -> None:
    from jupyter_memory.cli import app

    out, err = io.StringIO(), io.StringIO()
    code = app.main(["context", "--count", "--brief", "--project", str(project)],
                    env=dict(os.environ), stdout=out, stderr=err)
    assert refusing.refused == 1  # the call was made, and refused
    assert (code, err.getvalue()) == (EXIT_MODEL, f"jupyter-memory context: {SAID}\n")
    assert out.getvalue() == ""
    assert _ours(caplog) == []  # the endpoint's refusal is not a bug of ours


def test_the_magic_fails_with_the_same_line(ip: InteractiveShell, refusing: ThreadingHTTPServer,
                                            caplog: pytest.LogCaptureFixture) -> None:
    with capture_output():
        result = ip.run_cell("%context --count --brief", store_history=True)
    assert refusing.refused == 1
    error = result.error_in_exec
    assert isinstance(error, UsageError) and str(error) == f"%context: {SAID}"
    assert _ours(caplog) == []


def test_an_internal_error_ends_its_sentence_once() -> None:
    """The cause's message may end with a full stop of its own (the SDK's "Connection
    error."): the line reads ``…: Connection error. This is a bug…``, not ``error..``."""
    from jupyter_memory.errors import InternalError

    said = str(InternalError(ValueError("Connection error."), "in jupyter-memory context"))
    assert said.startswith("jupyter-memory hit an internal error in jupyter-memory context: "
                           "ValueError: Connection error. This is a bug in jupyter-memory")
