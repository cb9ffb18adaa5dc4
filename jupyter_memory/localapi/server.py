"""The local stand-in for the Anthropic Messages API: :class:`FakeAnthropic`.

No model API key exists where this project is built and tested, so everything that talks
to a model talks to this server instead, through the real ``anthropic`` SDK pointed at it
with ``ANTHROPIC_BASE_URL``. The transport is never mocked: the SDK's own HTTP client,
retry loop and stream parser run against real sockets, so bugs in how we call the SDK
show up here as they would against the API.

Replies come from a queue of scripted turns (``script``) or a ``responder`` callable for
dynamic replies. The server checks requests the way the API does (``validation``),
reports usage with prompt-cache accounting (``cache``), and can inject faults (rate
limits, overloads, dropped or slow streams, garbage bodies). This module ties those
together: routing, the script queue, faults, the record of requests and the lifecycle.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_memory.localapi.cache import CacheUsage, PromptCache
from jupyter_memory.localapi.reply import Reply, build_reply
from jupyter_memory.localapi.script import CONTEXT_LIMIT_TOKENS, STATUS_FAULTS, Fault, Turn
from jupyter_memory.localapi.sse import sse, stream_events
from jupyter_memory.localapi.tokens import estimate_request_tokens
from jupyter_memory.localapi.transport import Exchange, Handler, Server
from jupyter_memory.localapi.validation import ApiError, check_expectations, invalid, validate

__all__ = ["NO_TURN_LEFT", "FakeAnthropic", "RecordedRequest"]

#: The 500 body text when a request finds neither a scripted turn nor a responder.
NO_TURN_LEFT = "fake_api: no scripted turn left for this request"

_REDACTED_HEADERS = frozenset({"x-api-key", "authorization"})


@dataclass
class RecordedRequest:
    """One request as the server received it (API keys removed from the headers)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    time: float
    status: int | None = None
    #: ``time.perf_counter()`` when the request line arrived: compare with the same clock
    #: in the client's process to see how long a request took to leave it.
    received: float = 0.0
    #: How the server's prompt cache billed this request's input (reads, writes, each
    #: breakpoint); None for a request that got no reply from a turn (a fault, a refusal,
    #: ``count_tokens``). A turn's ``usage`` override changes what the reply reports, not this.
    usage: CacheUsage | None = None
    #: Output tokens of the reply, as reported.
    output_tokens: int = 0

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []


class FakeAnthropic:
    """A Messages API server on localhost that replies from a script of turns.

    Use as a context manager, or ``start()``/``stop()``. Point the SDK at ``base_url``
    with any API key. Thread-safe: the SDK, the test and handler threads may all touch it.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Callable[[], float] | None = None,
        *,
        min_cache_tokens: int | None = None,
        responder: Callable[[dict[str, Any]], Turn | None] | None = None,
        connection_delay: float = 0.0,
    ) -> None:
        if connection_delay < 0:
            raise ValueError("fake_api: connection_delay is in seconds and cannot be negative")
        if min_cache_tokens is not None and min_cache_tokens < 0:
            raise ValueError("fake_api: min_cache_tokens is a number of tokens and cannot be "
                             "negative; None bills each model's own minimum")
        self.host = host
        #: Seconds each new connection waits before its first request is read, as a TLS
        #: handshake with a distant endpoint would; a reused connection pays nothing.
        self.connection_delay = connection_delay
        self._requested_port = port
        self.clock: Callable[[], float] = clock or time.monotonic
        self.cache = PromptCache(self.clock, min_cache_tokens)
        self.responder = responder
        self._lock = threading.RLock()
        self._turns: deque[Turn] = deque()
        self._faults: deque[Fault] = deque()
        self._requests: list[RecordedRequest] = []
        self._failures: list[str] = []
        self._counters = {"request": 0, "message": 0, "tool": 0, "turn": 0}
        self._connections: set[socket.socket] = set()
        self._accepted = 0
        self._server: Server | None = None
        self._thread: threading.Thread | None = None

    # ----- lifecycle

    def start(self) -> FakeAnthropic:
        """Bind and serve in a background thread; returns self."""
        if self._server is not None:
            return self
        self._server = Server(
            (self.host, self._requested_port),
            on_request=self._handle,
            on_open=self._connection_opened,
            on_close=self._connection_closed,
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name="fake-anthropic",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every open connection."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("fake_api: the server is not running; call start() first")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The URL to give the SDK as ``base_url`` / ``ANTHROPIC_BASE_URL``."""
        return f"http://{self.host}:{self.port}"

    # ----- scripting

    def script(self, turns: Iterable[Turn | Mapping[str, Any]]) -> None:
        """Replace the pending turns with ``turns`` (Turn objects or their JSON form)."""
        parsed = [
            t if isinstance(t, Turn) else Turn.from_dict(t, f"turn {i}")
            for i, t in enumerate(turns)
        ]
        with self._lock:
            self._turns = deque(parsed)

    def push(self, turn: Turn | Mapping[str, Any]) -> None:
        """Append one turn to the script."""
        parsed = turn if isinstance(turn, Turn) else Turn.from_dict(turn)
        with self._lock:
            self._turns.append(parsed)

    def fail_next(self, fault: Fault | str, times: int = 1, **options: Any) -> None:
        """Inject ``fault`` into the next ``times`` requests to ``/v1/messages``.

        Status faults answer without using a scripted turn, so a retry gets the turn.
        ``drop``, ``garbage`` and ``stream_error`` break the reply of the next turn
        without using it up; ``slow`` delivers that turn slowly.
        """
        if times < 1:
            raise ValueError("fail_next: times must be 1 or more")
        if options and not isinstance(fault, str):
            raise TypeError(
                "fail_next: pass options only with a fault kind name, e.g. fail_next('drop', after_events=2)"
            )
        item = Fault(kind=fault, **options) if isinstance(fault, str) else Fault.coerce(fault)
        with self._lock:
            self._faults.extend([item] * times)

    @property
    def remaining(self) -> int:
        """Scripted turns not yet used."""
        with self._lock:
            return len(self._turns)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            if not self._requests:
                raise LookupError("fake_api: no request has been received yet")
            return self._requests[-1]

    @property
    def failures(self) -> list[str]:
        """Messages of errors the fake produced on its own (not injected faults)."""
        with self._lock:
            return list(self._failures)

    def reset(self) -> None:
        """Forget requests, turns, faults, the responder, the cache and the id counters."""
        with self._lock:
            self._turns.clear()
            self._faults.clear()
            self._requests.clear()
            self._failures.clear()
            self._counters = dict.fromkeys(self._counters, 0)
            self.responder = None
        self.cache.clear()

    # ----- internals

    @property
    def connections_opened(self) -> int:
        """Connections accepted since the server started (HTTP/1.1 keep-alive reuses them)."""
        with self._lock:
            return self._accepted

    @property
    def connections_open(self) -> int:
        """Connections open right now."""
        with self._lock:
            return len(self._connections)

    def _connection_opened(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)
            self._accepted += 1
        if self.connection_delay:
            time.sleep(self.connection_delay)

    def _connection_closed(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)

    def _next_id(self, kind: str) -> int:
        with self._lock:
            self._counters[kind] += 1
            return self._counters[kind]

    def _next_tool_id(self) -> str:
        return f"toolu_fake_{self._next_id('tool'):04d}"

    def _handle(self, handler: Handler, raw: bytes) -> None:
        exchange = Exchange(handler, f"req_fake_{self._next_id('request'):04d}")
        path = handler.path.split("?", 1)[0]
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {
            k.lower(): v for k, v in handler.headers.items() if k.lower() not in _REDACTED_HEADERS
        }
        record = RecordedRequest(handler.command, path, headers, body, time.time(),
                                 received=getattr(handler, "received", 0.0))
        with self._lock:
            self._requests.append(record)
        try:
            self._answer(handler, exchange, record, raw)
        except ApiError as err:
            self._send_error(exchange, record, err)
        except Exception as err:  # a responder or expectation bug: make the test fail loudly
            message = f"fake_api: internal error {type(err).__name__}: {err}"
            with self._lock:
                self._failures.append(message)
            self._send_error(
                exchange, record, ApiError(500, "api_error", message, {"x-should-retry": "false"})
            )

    def _send_error(self, exchange: Exchange, record: RecordedRequest, err: ApiError) -> None:
        record.status = err.status
        if err.status >= 500 or err.status == 429:
            headers = {"x-should-retry": "true"}
        else:
            headers = {"x-should-retry": "false"}
        headers.update(err.headers)
        body = {
            "type": "error",
            "error": {"type": err.error_type, "message": err.message},
            "request_id": exchange.request_id,
        }
        exchange.send_json(err.status, body, headers)

    def _refuse(self, err: ApiError) -> ApiError:
        with self._lock:
            self._failures.append(err.message)
        return err

    def _answer(
        self, handler: Handler, exchange: Exchange, record: RecordedRequest, raw: bytes
    ) -> None:
        path = record.path
        if path not in ("/v1/messages", "/v1/messages/count_tokens"):
            raise self._refuse(
                ApiError(404, "not_found_error", f"fake_api: no route for {record.method} {path}")
            )
        if record.method != "POST":
            raise self._refuse(
                ApiError(405, "invalid_request_error", f"fake_api: {path} accepts POST only")
            )
        if not (handler.headers.get("x-api-key") or handler.headers.get("authorization")):
            raise self._refuse(
                ApiError(
                    401,
                    "authentication_error",
                    "x-api-key header is required (any value works with fake_api)",
                )
            )
        if not handler.headers.get("anthropic-version"):
            raise self._refuse(invalid("anthropic-version: header is required"))
        if not isinstance(record.body, dict):
            raise self._refuse(
                invalid(
                    "There was an error parsing the body of your request as JSON. Send a JSON object."
                )
            )
        body = record.body
        if path == "/v1/messages/count_tokens":
            try:
                validate(body, count_only=True)
            except ApiError as err:
                raise self._refuse(err) from None
            record.status = 200
            exchange.send_json(200, {"input_tokens": estimate_request_tokens(body)})
            return

        with self._lock:
            fault = self._faults.popleft() if self._faults else None
        if fault is not None and fault.is_status:
            raise self._fault_error(fault, body)
        try:
            validate(body, count_only=False)
        except ApiError as err:
            raise self._refuse(err) from None

        consume = fault is None or fault.kind == "slow"
        turn, number = self._take_turn(body, consume)
        if turn is None:
            if fault is None:
                raise self._refuse(
                    ApiError(500, "api_error", NO_TURN_LEFT, {"x-should-retry": "false"})
                )
            turn = Turn()
        if fault is None and isinstance(turn.fault, Fault):
            fault = turn.fault
            if fault.is_status:
                raise self._fault_error(fault, body)
        try:
            check_expectations(turn, body, number)
        except ApiError as err:
            raise self._refuse(err) from None
        if fault is not None and fault.kind == "stream_error" and not body.get("stream"):
            # Without a stream there is no error event to send: overload the request instead.
            raise self._fault_error(Fault("overloaded", retry_after=fault.retry_after), body)

        usage = self.cache.account(body)
        reply = build_reply(
            turn, body, usage, f"msg_fake_{self._next_id('message'):04d}", self._next_tool_id
        )
        record.usage = usage
        record.output_tokens = int(reply.message["usage"].get("output_tokens") or 0)
        delay = turn.delay + (fault.delay if fault is not None and fault.kind == "slow" else 0.0)
        streaming = bool(body.get("stream"))
        dropped_early = (
            fault is not None
            and fault.kind == "drop"
            and (not streaming or fault.after_events == 0)
        )
        record.status = None if dropped_early else 200
        if streaming:
            self._send_stream(exchange, reply, fault, delay)
        else:
            self._send_message(exchange, reply, fault, delay)

    def _take_turn(self, body: dict[str, Any], consume: bool) -> tuple[Turn | None, int]:
        with self._lock:
            if self._turns:
                if not consume:
                    return self._turns[0], self._counters["turn"] + 1
                self._counters["turn"] += 1
                return self._turns.popleft(), self._counters["turn"]
            responder = self.responder
            number = self._counters["turn"] + 1
            if consume:
                self._counters["turn"] += 1
        if responder is None:
            return None, number
        turn = responder(body)
        if turn is not None and not isinstance(turn, Turn):
            raise TypeError(f"the responder must return a Turn or None, not {type(turn).__name__}")
        return turn, number

    def _fault_error(self, fault: Fault, body: Mapping[str, Any]) -> ApiError:
        status, error_type, template = STATUS_FAULTS[fault.kind]
        tokens = max(
            estimate_request_tokens(body) if isinstance(body, Mapping) else 0,
            CONTEXT_LIMIT_TOKENS + 1,
        )
        message = fault.message or template.format(tokens=tokens, limit=CONTEXT_LIMIT_TOKENS)
        headers: dict[str, str] = {}
        if fault.retry_after is not None and (status == 429 or status >= 500):
            headers["retry-after"] = f"{fault.retry_after:g}"
        if fault.should_retry is not None:
            headers["x-should-retry"] = "true" if fault.should_retry else "false"
        return ApiError(status, error_type, message, headers)

    def _send_message(
        self, exchange: Exchange, reply: Reply, fault: Fault | None, delay: float
    ) -> None:
        if delay:
            time.sleep(delay)
        if fault is not None and fault.kind == "drop":
            exchange.drop()
            return
        if fault is not None and fault.kind == "garbage":
            exchange.send_bytes(
                200, b"<html>fake_api garbage: this body is not JSON", "application/json"
            )
            return
        exchange.send_json(200, reply.message)

    def _send_stream(
        self, exchange: Exchange, reply: Reply, fault: Fault | None, delay: float
    ) -> None:
        kind = fault.kind if fault is not None else None
        limit = fault.after_events if fault is not None else -1
        if kind == "drop" and limit == 0:  # before the status line: a connection error
            exchange.drop()
            return
        if not exchange.start_stream():
            return
        for sent, (event, data) in enumerate(stream_events(reply)):
            if sent == limit and kind == "drop":
                exchange.drop()
                return
            if sent == limit and kind == "stream_error":
                error = {
                    "type": "error",
                    "error": {"type": "overloaded_error", "message": "Overloaded"},
                }
                exchange.chunk(sse("error", error))
                exchange.end_stream()
                return
            if sent == limit and kind == "garbage":
                exchange.chunk(b"event: content_block_delta\ndata: {this is not json\n\n")
                exchange.end_stream()
                return
            if delay and sent:
                time.sleep(delay)
            if not exchange.chunk(sse(event, data)):
                return
        if kind == "drop":  # fewer events than after_events: still never finish cleanly
            exchange.drop()
            return
        exchange.end_stream()
