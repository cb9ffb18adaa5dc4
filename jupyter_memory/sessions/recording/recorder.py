"""Recording: a session hook and SDK client factory that write every finished model
exchange, normalised, to the recording file."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from jupyter_memory.sessions.recording.file import Recording
from jupyter_memory.sessions.recording.normalise import Normaliser, jsonable
from jupyter_memory.sessions.recording.settle import (
    settle_background,
    settle_prefetch,
    settle_session_notes,
)

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session

__all__ = ["SDK_OPTIONS", "Recorder", "RecordingClient"]

#: Keyword arguments of SDK calls that are client options, not part of the request body.
SDK_OPTIONS = frozenset({"timeout", "extra_headers", "extra_query", "extra_body", "stream"})


def _response_dict(message: Any) -> dict[str, Any]:
    if hasattr(message, "model_dump"):
        data = message.model_dump(mode="json", exclude_none=True)
    else:
        data = jsonable(message)
    keep = ("id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage")
    return {k: data[k] for k in keep if k in data}


class _RecordedStream:
    """Wraps the SDK's stream manager; hands the final message over on a clean exit."""

    def __init__(self, manager: Any, on_final: Callable[[Any], None]) -> None:
        self._manager = manager
        self._on_final = on_final
        self._stream: Any = None

    def __enter__(self) -> Any:
        self._stream = self._manager.__enter__()
        return self._stream

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        final = self._stream.get_final_message() if exc_type is None else None
        result = self._manager.__exit__(exc_type, exc, tb)
        if final is not None:
            self._on_final(final)
        return result


class _RecordingMessages:
    def __init__(self, inner: Any, recorder: Recorder) -> None:
        self._inner = inner
        self._recorder = recorder

    def create(self, **kwargs: Any) -> Any:
        message = self._inner.create(**kwargs)
        if not kwargs.get("stream"):
            self._recorder.capture(kwargs, message, stream=False)
        return message

    def stream(self, **kwargs: Any) -> _RecordedStream:
        return _RecordedStream(
            self._inner.stream(**kwargs),
            lambda message: self._recorder.capture(kwargs, message, stream=True),
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class RecordingClient:
    """An SDK client whose message calls are written to the recording as they finish."""

    def __init__(self, inner: Any, recorder: Recorder) -> None:
        self._inner = inner
        self.messages = _RecordingMessages(inner.messages, recorder)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class Recorder:
    """Session hook and client factory that record every model exchange to a file."""

    kind = "record"

    def __init__(self, session: Session, recording: Recording) -> None:
        self.session = session
        self.recording = recording
        self._previous_factory: Any = None
        self.active = False

    def start(self) -> Recorder:
        session = self.session
        self._previous_factory = session.client_factory
        session.client_factory = self._make_client
        session.hooks.append(self)
        self.active = True
        return self

    def stop(self) -> None:
        if not self.active:
            return
        session = self.session
        session.client_factory = self._previous_factory
        if self in session.hooks:
            session.hooks.remove(self)
        self.active = False

    def _make_client(self) -> RecordingClient:
        if self._previous_factory is not None:
            inner = self._previous_factory()
        else:
            from jupyter_memory.agent.client import make_client

            config = self.session.config
            inner = make_client(self.session.env, max_retries=config.max_retries,
                                timeout=config.timeout)
        return RecordingClient(inner, self)

    def capture(self, kwargs: Mapping[str, Any], message: Any, *, stream: bool) -> None:
        """Store one finished exchange and save the file."""
        request = jsonable({k: v for k, v in kwargs.items() if k not in SDK_OPTIONS})
        norm = Normaliser.for_session(self.session)
        self.recording.add_exchange(
            norm.request(request), norm.response(_response_dict(message)), stream=stream
        )
        self.recording.save()

    # -- turn hooks

    def before_call(self, turn: Any, round_index: int) -> None:
        settle_prefetch(turn, round_index)
        settle_session_notes(self.session)

    def after_turn(self, turn: Any, result: Any) -> None:
        settle_background(self.session)
        record = result.record
        self.recording.add_turn({
            "turn": record.get("turn"),
            "status": record.get("status"),
            "today": self.session.today(),
            "session_id": record.get("session_id"),
            "started": record.get("started"),
            "ended": record.get("ended"),
            "prompt": Normaliser.for_session(self.session).text(turn.prompt),
            "requests": [{"sent": r.get("sent"), "id": r.get("id")} for r in record.get("requests", [])],
        })
        self.recording.save()

    def status(self) -> str:
        return (f"recording to {self.recording.path} "
                f"({len(self.recording.exchanges)} exchanges, {len(self.recording.turns)} turns)")
