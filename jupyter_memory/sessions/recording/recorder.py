"""Recording: a model endpoint that writes every finished model exchange, normalised, to
the recording file, on its way through to the endpoint it records."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any

from jupyter_memory.agent.endpoint import ModelEndpoint
from jupyter_memory.agent.hooks import TurnHook, TurnInProgress, TurnOutcome
from jupyter_memory.context.sdk import MessagesAPI, ModelClient
from jupyter_memory.sessions.recording.file import Recording
from jupyter_memory.sessions.recording.normalise import Normaliser, jsonable

if TYPE_CHECKING:
    from anthropic.lib.streaming import MessageStream
    from anthropic.types import Message, MessageTokensCount

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

    def __init__(self, manager: AbstractContextManager[MessageStream],
                 on_final: Callable[[Message], None]) -> None:
        self._manager = manager
        self._on_final = on_final
        self._stream: MessageStream | None = None

    def __enter__(self) -> MessageStream:
        self._stream = self._manager.__enter__()
        return self._stream

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool | None:
        stream = self._stream
        final = stream.get_final_message() if exc_type is None and stream is not None else None
        result = self._manager.__exit__(exc_type, exc, tb)
        if final is not None:
            self._on_final(final)
        return result


class _RecordingMessages:
    """``client.messages`` of a recorded client: each finished call is captured."""

    def __init__(self, inner: MessagesAPI, recorder: Recorder) -> None:
        self._inner = inner
        self._recorder = recorder

    def create(self, **kwargs: Any) -> Message:
        message = self._inner.create(**kwargs)
        self._recorder.capture(kwargs, message, stream=False)
        return message

    def stream(self, **kwargs: Any) -> _RecordedStream:
        return _RecordedStream(
            self._inner.stream(**kwargs),
            lambda message: self._recorder.capture(kwargs, message, stream=True),
        )

    def count_tokens(self, **kwargs: Any) -> MessageTokensCount:
        return self._inner.count_tokens(**kwargs)  # no exchange to record


class RecordingClient:
    """An SDK client whose message calls are written to the recording as they finish."""

    def __init__(self, inner: ModelClient, recorder: Recorder) -> None:
        self.inner = inner
        self._messages = _RecordingMessages(inner.messages, recorder)

    @property
    def messages(self) -> _RecordingMessages:
        return self._messages

    def close(self) -> None:
        self.inner.close()


class Recorder(ModelEndpoint, TurnHook):
    """The endpoint of a session being recorded: the endpoint it wraps (``inner``) answers,
    and every exchange is written down; as a turn hook it notes each turn's timing.

    Background work is synchronous while recording, so a replay of the file makes the
    same requests at the same points. Stopping hands the session back the endpoint it
    recorded (:meth:`stop`).
    """

    kind = "record"
    synchronous = True

    def __init__(self, session: Session, recording: Recording, inner: ModelEndpoint) -> None:
        self.session = session
        self.recording = recording
        self.inner = inner
        self._released = False
        self._client: RecordingClient | None = None

    # -- the endpoint

    def client(self, *, max_retries: int, timeout: float) -> ModelClient:
        inner = self.inner.client(max_retries=max_retries, timeout=timeout)
        if self._client is None or self._client.inner is not inner:
            self._client = RecordingClient(inner, self)
        return self._client

    def turn_hooks(self) -> tuple[TurnHook, ...]:
        return (self,)

    def owns(self, other: ModelEndpoint) -> bool:
        return other is self.inner and not self._released

    def describe(self) -> str:
        return f"{self.status()}, through {self.inner.describe()}"

    def stop(self) -> None:
        """Stop recording (the file stays): the session gets back the endpoint recorded."""
        if self.session.endpoint is self:
            self._released = True
            self.session.use_endpoint(self.inner)

    def close(self) -> None:
        if not self._released:
            self.inner.close()

    def capture(self, kwargs: Mapping[str, Any], message: Any, *, stream: bool) -> None:
        """Store one finished exchange and save the file."""
        request = jsonable({k: v for k, v in kwargs.items() if k not in SDK_OPTIONS})
        norm = Normaliser.for_session(self.session)
        self.recording.add_exchange(
            norm.request(request), norm.response(_response_dict(message)), stream=stream
        )
        self.recording.save()

    # -- turn hooks

    def after_turn(self, turn: TurnInProgress, result: TurnOutcome) -> None:
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
            **({"delegations": [[{"sent": r.get("sent"), "id": r.get("id")}
                                 for r in run.get("requests", [])]
                                for run in record["delegations"]]}
               if record.get("delegations") else {}),
            **({"calls": [{"number": c.get("number"), "sent": c.get("sent")}
                          for c in record["calls"]]} if record.get("calls") else {}),
        })
        self.recording.save()

    def status(self) -> str:
        return (f"recording to {self.recording.path} "
                f"({len(self.recording.exchanges)} exchanges, {len(self.recording.turns)} turns)")
