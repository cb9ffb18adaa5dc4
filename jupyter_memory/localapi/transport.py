"""The local server's HTTP plumbing: a threading HTTP/1.1 server, its request handler,
and the writer of one response (JSON, raw bytes, a chunked event stream, or a dropped
connection). What to answer is decided elsewhere: the server hands every request to its
``on_request`` callback."""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Exchange", "Handler", "Server"]


class Exchange:
    """Writes one HTTP response on the handler's socket; tolerates a client gone away."""

    def __init__(self, handler: Handler, request_id: str) -> None:
        self.handler = handler
        self.request_id = request_id

    def _head(self, status: int, headers: Mapping[str, str]) -> None:
        phrases = {529: "Overloaded"}
        self.handler.send_response(status, phrases.get(status))
        self.handler.send_header("request-id", self.request_id)
        for name, value in headers.items():
            self.handler.send_header(name, value)
        self.handler.end_headers()

    def send_bytes(
        self, status: int, data: bytes, content_type: str, headers: Mapping[str, str] | None = None
    ) -> None:
        all_headers = {
            "content-type": content_type,
            "content-length": str(len(data)),
            **(headers or {}),
        }
        try:
            self._head(status, all_headers)
            self.handler.wfile.write(data)
            self.handler.wfile.flush()
        except OSError:
            self.handler.close_connection = True

    def send_json(
        self, status: int, payload: Any, headers: Mapping[str, str] | None = None
    ) -> None:
        self.send_bytes(status, json.dumps(payload).encode("utf-8"), "application/json", headers)

    def start_stream(self) -> bool:
        try:
            self._head(
                200,
                {
                    "content-type": "text/event-stream; charset=utf-8",
                    "cache-control": "no-cache",
                    "transfer-encoding": "chunked",
                },
            )
            return True
        except OSError:
            self.handler.close_connection = True
            return False

    def chunk(self, data: bytes) -> bool:
        try:
            self.handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.handler.wfile.flush()
            return True
        except OSError:
            self.handler.close_connection = True
            return False

    def end_stream(self) -> None:
        try:
            self.handler.wfile.write(b"0\r\n\r\n")
            self.handler.wfile.flush()
        except OSError:
            self.handler.close_connection = True

    def drop(self) -> None:
        """Close the socket abruptly, as a network failure would."""
        self.handler.close_connection = True
        try:
            self.handler.wfile.flush()
            self.handler.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class Handler(BaseHTTPRequestHandler):
    """Reads one request at a time off a keep-alive connection and passes it on."""

    protocol_version = "HTTP/1.1"
    server: Server
    timeout = 30  # idle keep-alive connections give their thread back eventually
    disable_nagle_algorithm = True  # headers and body go out as separate writes

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read server.requests
        return

    def setup(self) -> None:
        super().setup()
        self.server.on_open(self.connection)

    def parse_request(self) -> bool:
        self.received = time.perf_counter()  # the request line has just been read
        return super().parse_request()

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.on_close(self.connection)

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _dispatch(self) -> None:
        self.server.on_request(self, self._read_body())

    do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = _dispatch


class Server(ThreadingHTTPServer):
    """Serves each connection in a thread of its own; the callbacks belong to the owner."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        *,
        on_request: Callable[[Handler, bytes], None],
        on_open: Callable[[socket.socket], None],
        on_close: Callable[[socket.socket], None],
    ) -> None:
        self.on_request = on_request
        self.on_open = on_open
        self.on_close = on_close
        super().__init__(address, Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client hanging up (or stop() closing its socket) is normal here; anything
        # else is a bug in the fake and deserves the default traceback.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)
