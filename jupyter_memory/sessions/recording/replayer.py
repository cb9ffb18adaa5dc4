"""Replay: a model endpoint that answers every model call from a recording, through the
local Messages API server (``jupyter_memory.localapi``), so the agent runs exactly the code
it runs against the real API with no key and no network.

A request that is not in the recording is refused with the first difference, so a changed
prompt or a changed memory fails loudly instead of silently drifting.
"""

from __future__ import annotations

import datetime as _dt
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jupyter_memory._version import __version__
from jupyter_memory.agent.endpoint import ModelEndpoint
from jupyter_memory.agent.hooks import TurnHook, TurnInProgress, TurnOutcome
from jupyter_memory.context.assemble import digest
from jupyter_memory.context.sdk import ModelClient
from jupyter_memory.sessions.recording.differences import describe_difference, locate_difference
from jupyter_memory.sessions.recording.file import Recording, RecordingError
from jupyter_memory.sessions.recording.matching import (
    MATCH_ENV,
    MATCH_MODES,
    conversation_view,
    describe_changes,
)
from jupyter_memory.sessions.recording.normalise import Normaliser

if TYPE_CHECKING:
    import anthropic

    from jupyter_memory.agent.session import Session
    from jupyter_memory.localapi.server import FakeAnthropic
    from jupyter_memory.transcript.mirror import SessionLog

__all__ = ["Replayer"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Identity:
    """What a replay changes of its session, given back when the replay is closed."""

    session_id: str
    notebook: str | None
    today_override: str | None
    log: SessionLog | None


class Replayer(ModelEndpoint, TurnHook):
    """The endpoint of a replayed session: every model call answered from a recording.

    A local Messages API server (:class:`~jupyter_memory.localapi.server.FakeAnthropic`
    with a responder) looks each request up by its normalised digest. While replaying,
    the session takes the recording's session id, date, conversation start and turn
    count; it logs to ``<session id>/replays/<time>.jsonl`` beside the recorded session's
    log (never into it); and each turn record gets the recorded timestamps and message
    ids (the turn hook), so a replayed notebook shows the same outputs every time.
    Background work is synchronous while replaying, as it was while recording. Closing
    the replay stops its server and gives the session its own id, date and log back.
    """

    kind = "replay"
    synchronous = True

    def __init__(self, session: Session, recording: Recording, *, match: str = "conversation") -> None:
        if match not in MATCH_MODES:
            raise RecordingError(
                f"Unknown replay match {match!r}; use one of {', '.join(MATCH_MODES)} "
                f"(for example {MATCH_ENV}=strict)."
            )
        self.session = session
        self.recording = recording
        self.match = match
        self.used: set[int] = set()
        self.served = 0
        self.mismatches: list[str] = []
        self.warnings: list[str] = []
        self._warned: set[str] = set()
        self._warnings_reported = 0
        self._reported = 0
        self._turn_index = 0
        self._turn_mismatches = 0
        self._lock = threading.Lock()
        self._server: FakeAnthropic | None = None
        self._client: anthropic.Anthropic | None = None
        self._identity: _Identity | None = None
        self.active = False
        self._today = str(recording.data.get("today") or session.today())
        self._by_digest: dict[str, list[dict[str, Any]]] = {}
        self._by_conversation: dict[str, list[dict[str, Any]]] = {}
        for exchange in recording.exchanges:
            self._by_digest.setdefault(exchange["digest"], []).append(exchange)
            key = digest({"messages": conversation_view(recording.request(exchange))})
            self._by_conversation.setdefault(key, []).append(exchange)

    def start(self) -> Replayer:
        """Start the local server and give the session the recording's identity; then
        ``session.use_endpoint(replayer)`` sends its calls here (``control.start_replay``)."""
        from jupyter_memory.localapi.server import FakeAnthropic

        session = self.session
        self._server = FakeAnthropic(responder=self._respond).start()
        self._identity = _Identity(session.session_id, session.notebook,
                                   session.today_override, session.log)
        if self.recording.session_id:
            session.session_id = self.recording.session_id
        if not session.notebook:
            # A kernel started without its notebook's path (nbconvert, nbclient, papermill)
            # takes the recorded notebook's name beside the recording, so the session's
            # identity does not depend on how the kernel was started.
            adopted = self.recording.notebook_beside()
            if adopted is not None:
                session.notebook = str(adopted)
        if session.log is not None:
            session.log = _replay_log(session)
        session.today_override = self._today
        session.reload()  # the memory store takes the new session id
        start = self.recording.start
        norm = Normaliser.for_session(session)
        session.messages[:] = norm.restore(start.get("messages") or [])
        session.conversation.turn_count = int(start.get("turn_count") or 0)
        self.active = True
        return self

    def stop(self) -> None:
        """Stop replaying: the session's calls go to the live endpoint again."""
        if self.session.endpoint is self:
            from jupyter_memory.agent.endpoint import LiveEndpoint

            self.session.use_endpoint(LiveEndpoint(self.session.env))

    def close(self) -> None:
        """Stop the server and give the session its own id, date, notebook and log back."""
        if not self.active:
            return
        self.active = False
        session = self.session
        saved = self._identity
        if saved is not None:
            session.log = saved.log
            session.today_override = saved.today_override
            session.notebook = saved.notebook
            if session.session_id != saved.session_id:
                session.session_id = saved.session_id
                session.reload()
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._server is not None:
            self._server.stop()
            self._server = None

    def describe(self) -> str:
        return self.status()

    def turn_hooks(self) -> tuple[TurnHook, ...]:
        return (self,)

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RecordingError("The replay server is not running; start the replay first.")
        return str(self._server.base_url)

    def client(self, *, max_retries: int, timeout: float) -> ModelClient:
        """A client of the replay server (no key; a refusal is never worth a retry)."""
        if self._client is None:
            import anthropic

            self._client = anthropic.Anthropic(base_url=self.base_url,
                                               api_key="replay-needs-no-key", max_retries=0,
                                               timeout=timeout)
        return self._client

    # -- answering

    def _respond(self, body: dict[str, Any]) -> Any:
        from jupyter_memory.localapi.script import Fault

        request = {k: v for k, v in body.items() if k != "stream"}
        norm = Normaliser.for_session(self.session)
        normalised = norm.request(request)
        key = digest(normalised)
        with self._lock:
            if self.match == "strict":
                exchange = self._take(key, self._by_digest)
            else:
                exchange = self._take(digest({"messages": conversation_view(normalised)}),
                                      self._by_conversation)
            if exchange is None:
                problem = self._mismatch_message(normalised, key)
            else:
                self.served += 1
                problem = None
                if exchange["digest"] != key:
                    self._warn(exchange, normalised)
        if problem is None:
            assert exchange is not None
            turn = _turn_for(norm.restore(exchange["response"]), exchange["seq"])
            if isinstance(turn, str):
                problem = turn
            else:
                # The recorded reply already reflects max_tokens and stop sequences; keep
                # the server from cutting it again by its own token estimate.
                body["max_tokens"] = 1 << 30
                body.pop("stop_sequences", None)
                return turn
        with self._lock:
            self.mismatches.append(problem)
        log.info("replay refused a request: %s", problem.splitlines()[0])
        return _fault_turn(Fault, problem)

    def _warn(self, exchange: Mapping[str, Any], normalised: Mapping[str, Any]) -> None:
        """Note, once per kind of change, how a served request differs from the recording."""
        changes = describe_changes(self.recording.request(exchange), normalised)
        fresh = [c for c in changes if c.split(" (")[0] not in self._warned]
        if not fresh:
            return
        self._warned.update(c.split(" (")[0] for c in fresh)
        self.warnings.append(
            f"Replay warning: the requests differ from {self.recording.path.name} in "
            f"{'; '.join(fresh)} (first seen at exchange {exchange['seq']}). The conversation "
            "matches, so the recorded answers are served; %agent replay --strict refuses this."
        )

    def take_new_warnings(self) -> list[str]:
        """Warnings added since the last call (for the front end to show once)."""
        with self._lock:
            out = self.warnings[self._warnings_reported:]
            self._warnings_reported = len(self.warnings)
            return out

    def _take(self, key: str, index: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any] | None:
        candidates = index.get(key) or []
        for exchange in candidates:
            if exchange["seq"] not in self.used:
                self.used.add(exchange["seq"])
                return exchange
        return candidates[-1] if candidates else None  # the same request again (a re-run)

    def _mismatch_message(self, normalised: dict[str, Any], key: str) -> str:
        unused = [e for e in self.recording.exchanges if e["seq"] not in self.used]
        total = len(self.recording.exchanges)
        head = f"Replay: this request is not in the recording {self.recording.path.name} "
        if not unused:
            return (
                head + f"(all {total} recorded exchanges have been served; digest {key[:19]}…). "
                "The notebook asks the model more than the recorded session did. Re-record "
                "with %agent record, or remove the extra agent cells."
            )
        strict = self.match == "strict"

        def view(request: Mapping[str, Any]) -> Any:
            return request if strict else {"messages": conversation_view(request)}

        mine = view(normalised)
        best, best_score, best_text = unused[0], -1, ""
        for exchange in unused[:50]:
            recorded = view(self.recording.request(exchange))
            found = locate_difference(recorded, mine, "", [0])
            score = found[3] if found is not None else 1 << 30
            if score > best_score:
                best, best_score = exchange, score
                best_text = describe_difference(recorded, mine)
        rule = ("identical to the recorded ones (strict matching, after normalising paths, "
                "the date and the platform)" if strict else
                "whose conversation (what the person and the model said, tool calls and "
                "results) matches the recorded one")
        return (
            head + f"(closest: exchange {best['seq']} of {total}).\n{best_text}\n"
            f"Replay answers only requests {rule}; see docs/sessions.md. Undo the change, "
            "or re-record the notebook with %agent record."
        )

    def take_new_mismatch(self) -> str | None:
        """The first mismatch since the last call (for the front end to raise), or None."""
        with self._lock:
            if self._reported >= len(self.mismatches):
                return None
            message = self.mismatches[self._reported]
            self._reported = len(self.mismatches)
            return message

    # -- turn hooks

    def before_turn(self, turn: TurnInProgress) -> None:
        with self._lock:
            self._turn_mismatches = len(self.mismatches)
        recorded = self._recorded_turn()
        if recorded and recorded.get("today"):
            self._today = self.session.today_override = str(recorded["today"])

    def after_turn(self, turn: TurnInProgress, result: TurnOutcome) -> None:
        recorded = self._recorded_turn()
        self._turn_index += 1
        with self._lock:
            clean = len(self.mismatches) == self._turn_mismatches
        if recorded is None or not clean:
            return
        record = result.record
        for key in ("session_id", "started", "ended"):
            if recorded.get(key) is not None:
                record[key] = recorded[key]
        _restore_requests(record.get("requests", []), recorded.get("requests", []))
        for run, requests in zip(record.get("delegations", []), recorded.get("delegations", []),
                                 strict=False):
            _restore_requests(run.get("requests", []), requests)
        # the side calls the record carries (a delegated agent's, the selector's, ...)
        sent = {c.get("number"): c.get("sent") for c in recorded.get("calls", [])}
        for call in record.get("calls", []):
            if sent.get(call.get("number")) is not None:
                call["sent"] = sent[call["number"]]

    def _recorded_turn(self) -> dict[str, Any] | None:
        turns = self.recording.turns
        return turns[self._turn_index] if self._turn_index < len(turns) else None

    def status(self) -> str:
        total = len(self.recording.exchanges)
        return (f"replaying {self.recording.path} ({self.match} matching; {self.served} of "
                f"{total} exchanges served, {len(self.mismatches)} refused, "
                f"{len(self.warnings)} warnings)")


def _restore_requests(mine: list[dict[str, Any]], recorded: list[dict[str, Any]]) -> None:
    """Give request entries the recorded times they were sent and the recorded ids."""
    for entry, theirs in zip(mine, recorded, strict=False):
        if theirs.get("sent") is not None:
            entry["sent"] = theirs["sent"]
        if theirs.get("id") is not None and "id" in entry:
            entry["id"] = theirs["id"]


def _replay_log(session: Session) -> SessionLog:
    """A session log writing to its own file, so a replay never adds to the original log.

    Its ``path`` stays the recorded session's log, which is what the conversation names
    (a compaction summary points the model at it, hooks get it as ``transcript_path``):
    the replayed requests and what the cells show, token counts included, are then the
    recorded ones. ``written_to`` is where this replay's turns go.
    """
    from jupyter_memory.transcript.mirror import SessionLog, git_branch, log_path
    from jupyter_memory.transcript.writer import TranscriptWriter

    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    target = log_path(session).with_suffix("") / "replays" / f"replay-{stamp}.jsonl"

    class ReplayLog(SessionLog):
        written_to = target

        def writer(self) -> TranscriptWriter:
            if self._writer is None:
                self._writer = TranscriptWriter(
                    target, session_id=self.session.session_id, cwd=str(self.session.cwd),
                    version=__version__, git_branch=git_branch(self.session.cwd),
                )
            return self._writer

    return ReplayLog(session)


def _turn_for(response: Mapping[str, Any], seq: int) -> Any:
    """A fake-server turn that reproduces a recorded response, or why it cannot."""
    from jupyter_memory.localapi.script import STOP_REASONS, ToolCall, Turn

    content = list(response.get("content") or [])
    kinds = [b.get("type") for b in content]
    texts = [b for b in content if b.get("type") == "text"]
    uses = [b for b in content if b.get("type") == "tool_use"]
    shape_ok = (
        len(texts) + len(uses) == len(content)
        and len(texts) <= 1
        and (not texts or kinds[0] == "text")
    )
    if not shape_ok:
        return (
            f"Replay cannot reproduce recorded exchange {seq}: its response holds the blocks "
            f"{kinds}, and replay serves one text block followed by tool calls."
        )
    stop_reason = response.get("stop_reason")
    usage = {k: v for k, v in (response.get("usage") or {}).items() if v is not None}
    return Turn(
        text=texts[0].get("text", "") if texts else "",
        tool_calls=[ToolCall(u["name"], dict(u.get("input") or {}), id=u.get("id")) for u in uses],
        stop_reason=stop_reason if stop_reason in STOP_REASONS else None,
        stop_sequence=response.get("stop_sequence"),
        usage=usage,
    )


def _fault_turn(fault_cls: Any, message: str) -> Any:
    from jupyter_memory.localapi.script import Turn

    return Turn(fault=fault_cls("api_error", message=message, should_retry=False, retry_after=None))
