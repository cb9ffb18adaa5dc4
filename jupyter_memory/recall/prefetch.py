"""Relevance prefetch (docs/reference.md#path-b-relevance-prefetch): pick memories for the person's message in the background.

:func:`start_prefetch` decides at once whether this message triggers a prefetch and, if
so, hands the session's background runner the work: scan the memdir, ask a selector (a
small model, or the offline ranking) which memories fit, and read the chosen files into
attachment messages. Live that is a thread, and the agent loop never waits for it unless
``wait_for_prefetch`` is on: it calls :meth:`Prefetch.take_messages` before each model
call that follows a tool round, and an answer that needs no tool call simply misses the
memories, as in the reference. When the session's background work is synchronous (record,
replay), the loop runs the prefetch to completion right after starting it, so it is ready
the same way in every run; the memories are still attached only after a tool round.

Every outcome, including a skip, is a :class:`Prefetch` whose :attr:`~Prefetch.decisions`
explain each memory, so the turn record always says why recall did what it did. Nothing
in here raises into the turn: a failing selector becomes a ``skipped`` decision, and
:meth:`Prefetch.failure_notice` the one notice that tells the person (once per session and
kind of failure, so a broken endpoint does not repeat it every turn).
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from jupyter_memory.errors import InvalidPath
from jupyter_memory.memdir.freshness import SECONDS_PER_DAY, age_days
from jupyter_memory.memdir.scan import SCAN_LIMIT, ScanCache, manifest
from jupyter_memory.memdir.team import scan_all
from jupyter_memory.recall.attach import attachment_message
from jupyter_memory.recall.caches import scan_cache
from jupyter_memory.recall.conversation import (
    agent_files,
    budget_used,
    recent_tools,
    surfaced_files,
)
from jupyter_memory.recall.explain import decision, explain_index
from jupyter_memory.recall.limits import (
    CJK_MIN_CHARS,
    MAX_FILE_BYTES,
    MAX_FILE_LINES,
    MAX_FILES_PER_TURN,
    SESSION_BUDGET_BYTES,
)
from jupyter_memory.recall.model_selector import (
    SelectorError,
    build_request,
    call_selector,
    validate,
)
from jupyter_memory.recall.session_view import RecallSession, Waitable

if TYPE_CHECKING:
    from jupyter_memory.context.sdk import ModelClient
    from jupyter_memory.recall.offline import Selection

__all__ = [
    "SELECTOR_KINDS",
    "Prefetch",
    "cjk_count",
    "last_prefetch",
    "skip_reason",
    "start_prefetch",
]

log = logging.getLogger(__name__)

SELECTOR_KINDS = ("model", "offline")
"""Values of the ``recall_selector`` setting."""


_CJK_RE = re.compile(
    r"[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
    r"\uac00-\ud7af\u1100-\u11ff\u3130-\u318f\U00020000-\U0002ffff]"
)


def cjk_count(text: str) -> int:
    """How many Chinese, Japanese (kana included) or Korean characters ``text`` has."""
    return len(_CJK_RE.findall(text))


def skip_reason(
    prompt: str,
    *,
    mode: str = "prefetch",
    memory_on: bool = True,
    spent: int = 0,
    cjk_trigger: bool = False,
) -> str | None:
    """Why this message does not start a prefetch, or ``None`` when it does.

    The reference's rules, in order: the feature is on, there is a real message, the
    session budget is not spent, and the message is not a single word (no whitespace
    after trimming). That last rule also skips unspaced Chinese and Japanese questions;
    with ``cjk_trigger`` a message with at least two CJK characters triggers anyway.
    """
    if not memory_on:
        return "memory is off for this project"
    if mode != "prefetch":
        return f"recall mode is {mode!r}: MEMORY.md reaches the model instead (path A)"
    text = prompt.strip()
    if not text:
        return "there is no user message to select memories for"
    if spent >= SESSION_BUDGET_BYTES:
        return (f"the session's recall budget is spent ({spent:,} of {SESSION_BUDGET_BYTES:,} "
                "bytes of memories are already in the conversation)")
    if not re.search(r"\s", text):
        if cjk_trigger and cjk_count(text) >= CJK_MIN_CHARS:
            return None
        hint = (" (cjk_trigger lets unspaced Chinese or Japanese messages through)"
                if cjk_count(text) and not cjk_trigger else "")
        return f"single-word message: no whitespace after trimming{hint}"
    return None


# ----------------------------------------------------------------------------- shared state


def _overflow_decisions(
    cache: ScanCache, memdir: Path, shown: frozenset[str]
) -> tuple[list[dict[str, Any]], float]:
    """``skipped`` decisions for the files past the selector's manifest, and when the
    first of their ages changes (they are kept until then or until the memdir changes)."""
    now = time.time()
    out = []
    expires = math.inf
    for f in cache.files(memdir):
        if f.file in shown:
            continue
        mtime = f.stat.st_mtime
        age = age_days(mtime, now)
        expires = min(expires, mtime + (age + 1) * SECONDS_PER_DAY)
        out.append(decision(
            f.file, "skipped",
            f"not among the {SCAN_LIMIT} newest memories the selector is shown", "B",
            age_days=age, bytes=f.stat.st_size))
    return out, expires


def _describe_error(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    message = str(getattr(exc, "message", "") or exc).strip() or type(exc).__name__
    head = f"{type(exc).__name__} ({status})" if status else type(exc).__name__
    return f"{head}: {message}"


# ----------------------------------------------------------------------------- the prefetch


class Prefetch:
    """One message's relevance prefetch: its thread, its attachments, its decisions.

    ``status`` is ``skipped`` (the trigger rules said no), ``running``, ``done`` or
    ``failed`` (the selector or the scan failed; the turn carries on without memories).
    ``selector`` is ``"model"`` or ``"offline"``; ``request`` is the exact selector
    request when a model was asked, and ``answer`` what it answered: the input of its
    ``select_memories`` call, ``{"selected_memories": [...]}``, before any name was checked
    against the manifest.
    """

    def __init__(
        self,
        session: RecallSession,
        prompt: str,
        client: ModelClient | None = None,
        *,
        selector: str = "model",
        skip: str | None = None,
        note: str | None = None,
    ) -> None:
        self.prompt = prompt
        self.selector = selector
        self.selector_note = note
        self.model: str | None = session.config.small_model or None
        self.status = "skipped" if skip else "running"
        self.reason = skip
        self.request: dict[str, Any] | None = None
        self.answer: dict[str, Any] | None = None
        self.recent_tools: list[str] = []
        self._session = weakref.ref(session)
        self._client = client
        self._mode = session.recall_mode
        self._memdir = Path(session.memdir) if session.memdir is not None else None
        self._lock = threading.RLock()
        self._done = threading.Event()
        self._task: Waitable | None = None
        self._ctx: Any = None
        self._messages_at_start: list[Mapping[str, Any]] = []
        self._seen_at_start: set[str] = set()
        # outcome, filled in by the thread
        self._manifest: list[Any] = []
        self._overflow: list[dict[str, Any]] = []
        self._filtered: dict[str, tuple[str, str]] = {}  # file -> (reason, path)
        self._selected: list[str] = []
        self._unknown: list[str] = []
        self._over_limit: list[str] = []
        self._selection: Selection | None = None
        self._skipped: dict[str, str] = {}
        self._attached: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._taken = False
        self._dropped_at_take: dict[str, str] = {}
        self._skip_decisions: list[dict[str, Any]] | None = None
        self._failure_kind: str | None = None
        # Callbacks waiting for the end; None once the run has ended (or never started).
        self._when_done: list[Callable[[Prefetch], None]] | None = None if skip else []
        if skip:
            self._done.set()

    # ----- public surface

    def done(self) -> bool:
        """True once the prefetch has finished (or was skipped, or failed)."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until finished (running it now if the session's background work is
        synchronous and it has not run yet) or ``timeout`` seconds; return :meth:`done`."""
        if self._task is not None:
            self._task.wait(timeout)
        return self._done.wait(timeout)

    def when_done(self, callback: Callable[[Prefetch], None]) -> None:
        """Call ``callback(self)`` once the prefetch has finished: now if it has, else from
        its thread as it ends, before :meth:`wait` returns. A callback that raises is
        logged, never raised."""
        with self._lock:
            if self._when_done is not None:
                self._when_done.append(callback)
                return
        self._call(callback)

    def _call(self, callback: Callable[[Prefetch], None]) -> None:
        try:
            callback(self)
        except Exception:  # a front end's notice must not break recall
            log.exception("a callback of the recall prefetch failed")

    def failure_notice(self) -> tuple[str, dict[str, Any]] | None:
        """What to tell the person when the selector failed, with its payload; None when
        it did not, or when this session was already told of this kind of failure."""
        with self._lock:
            if self.status != "failed" or self._failure_kind is None:
                return None
            kind, reason = self._failure_kind, str(self.reason)
        session = self._session()
        if session is None or kind in session.recall_failures_told:
            return None
        session.recall_failures_told.add(kind)
        who = f"the selector ({self.model})" if self.selector == "model" else "the selector"
        endpoint = ("Prefetch needs an endpoint that answers a forced tool call "
                    "(`tool_choice`); " if kind.startswith(f"{SelectorError.__name__}:") else "")
        text = (f"🧠 Recall attached no memories to this message: {who} failed "
                f"({reason.removeprefix('selector failed: ')}). The turn went on without them; "
                f"`%memory why` lists the decisions. {endpoint}"
                "`%config Agent.recall_selector = 'offline'` selects without a model. This is "
                "said once per session for this error.")
        return text, {"kind": "recall", "status": "failed", "reason": reason,
                      "model": self.model if self.selector == "model" else None}

    @property
    def selected(self) -> list[str]:
        """Files the selector chose that are in the manifest (before reading and budget)."""
        with self._lock:
            return list(self._selected)

    def take_messages(self) -> list[dict[str, Any]]:
        """The attachment messages, once; empty while running or after the first take.

        A memory the agent read with its own tools since the selection is dropped here
        instead of being sent twice.
        """
        if not self._done.is_set():
            return []
        with self._lock:
            if self._taken:
                return []
            self._taken = True
            seen = self._agent_files()
            out = []
            for file, message in self._attached.items():
                if file in seen:
                    self._dropped_at_take[file] = (
                        "selected, but the agent read it with its tools before it could be "
                        "attached")
                    continue
                out.append(message)
            return out

    @property
    def decisions(self) -> list[dict[str, Any]]:
        """One decision per memory (see :mod:`.explain`); a snapshot, never blocks."""
        with self._lock:
            if self.status == "skipped":
                return self._decisions_for_skip()
            return self._decisions()

    def to_json(self) -> dict[str, Any]:
        """A summary for records and logs: status, selector, chosen files, the request and
        the answer."""
        with self._lock:
            return {
                "status": self.status,
                "reason": self.reason,
                "selector": self.selector,
                "offline_mode": (self._selection.mode if self._selection is not None
                                 else None),
                "model": self.model if self.selector == "model" else None,
                "recent_tools": list(self.recent_tools),
                "selected": list(self._selected),
                "unknown": list(self._unknown),
                "attached": list(self._attached) if self._taken else [],
                "request": self.request,
                "answer": self.answer,
            }

    # ----- the run

    def _start(self, session: RecallSession) -> None:
        messages = list(session.messages)
        self._messages_at_start = messages
        self._ctx = session.tool_context()
        self.recent_tools = recent_tools(messages, self.prompt)
        # What the agent had read when the prefetch started, whenever the work runs.
        self._seen_at_start = self._agent_files()
        self._task = session.runner.submit("prefetch", self._run)

    def _agent_files(self) -> set[str]:
        if self._ctx is None or self._memdir is None:
            return set()
        return agent_files(self._memdir, list(self._ctx.read_files),
                           set(self._ctx.written_memdir_files))

    def _run(self) -> None:
        try:
            self._select_and_read()
            with self._lock:
                self.status = "done"
        except Exception as exc:  # never break the turn: record, log and carry on
            _log_failure(exc)
            status = getattr(exc, "status_code", None)
            with self._lock:
                self.status = "failed"
                self.reason = f"selector failed: {_describe_error(exc)}"
                self._failure_kind = f"{type(exc).__name__}:{status or ''}"
                self._attached.clear()
        finally:
            with self._lock:
                callbacks, self._when_done = self._when_done or [], None
            for callback in callbacks:
                self._call(callback)
            self._done.set()

    def _select_and_read(self) -> None:
        memdir = self._memdir
        assert memdir is not None  # a running prefetch always has a memdir
        cache = scan_cache(memdir)
        memories = scan_all(memdir, limit=SCAN_LIMIT, cache=cache)  # private + team/…
        overflow: list[dict[str, Any]] = []
        if len(memories) >= SCAN_LIMIT:
            shown = frozenset(m.file for m in memories)
            overflow = cache.memo(memdir, "prefetch_overflow", shown,
                                  lambda: _overflow_decisions(cache, memdir, shown))
        with self._lock:
            self._manifest = memories
            self._overflow = overflow

        surfaced = surfaced_files(self._messages_at_start)
        self._filter(memories, surfaced, self._seen_at_start, after=False)
        candidates = [m for m in memories if m.file not in self._filtered]
        if not candidates:
            return

        files = [m.file for m in candidates]
        if self.selector == "offline":
            from jupyter_memory.recall.offline import select

            selection = select(self.prompt, candidates, recent_tools=self.recent_tools)
            with self._lock:
                self._selection = selection
                if selection.note:  # why the semantic part did not run, next to what it chose
                    self.selector_note = "; ".join(filter(None, [self.selector_note,
                                                                 selection.note]))
            chosen = selection.files
        else:
            session = self._session()
            if session is None:
                raise RuntimeError("the session ended before the selector was asked")
            request = build_request(self.model or "", self.prompt, manifest(candidates),
                                    self.recent_tools)
            with self._lock:
                self.request = request
            ledger = session.cost_ledger

            def on_response(response: Any) -> None:
                ledger.charge("selector", response, str(request.get("model") or ""))

            assert self._client is not None  # the model selector is chosen only with one
            names = call_selector(self._client, request, on_response)
            with self._lock:
                self.answer = {"selected_memories": list(names)}
            answer = validate(names, files)
            with self._lock:
                self._unknown = list(answer.dropped)
                self._over_limit = list(answer.over_limit)
            chosen = list(answer.kept)
        with self._lock:
            self._selected = list(chosen)

        session = self._session()
        messages_now = list(session.messages) if session is not None else []
        self._filter([m for m in candidates if m.file in chosen],
                     surfaced | surfaced_files(messages_now), self._agent_files(), after=True)
        self._read([f for f in chosen if f not in self._filtered])

    def _filter(self, memories: list[Any], surfaced: set[str], seen: set[str], *, after: bool) -> None:
        when = " (checked again after the selector answered)" if after else ""
        with self._lock:
            for memory in memories:
                if memory.file in surfaced:
                    self._filtered[memory.file] = (
                        f"already attached earlier in this session and still in the "
                        f"conversation{when}", "B")
                elif memory.file in seen:
                    self._filtered[memory.file] = (
                        f"the agent already read or wrote it with its tools{when}", "C")

    def _read(self, chosen: list[str]) -> None:
        memdir = self._memdir
        assert memdir is not None
        spent = budget_used(self._messages_at_start)
        for position, file in enumerate(chosen):
            if position >= MAX_FILES_PER_TURN:
                with self._lock:
                    self._skipped[file] = f"past the {MAX_FILES_PER_TURN}-files-a-turn limit"
                continue
            try:
                message = attachment_message(memdir, file)
            except (OSError, InvalidPath) as exc:
                reason = exc.strerror if isinstance(exc, OSError) else None
                with self._lock:
                    self._skipped[file] = (
                        f"selected, but the file could not be read: {reason or exc}")
                continue
            size = int(message["_meta"]["bytes"])
            if spent + size > SESSION_BUDGET_BYTES:
                with self._lock:
                    for rest in chosen[position:]:
                        self._skipped[rest] = (
                            f"selected, but attaching it would pass the session's recall "
                            f"budget of {SESSION_BUDGET_BYTES:,} bytes ({spent:,} already "
                            "attached)")
                return
            spent += size
            with self._lock:
                self._attached[file] = message

    # ----- decisions

    def _selector_words(self, file: str, *, note: bool = True) -> str:
        if self.selector == "offline" and self._selection is not None:
            words = self._selection.reason(file)
        elif file in self._selected:
            words = f"selected by the model selector ({self.model})"
        else:
            words = f"the model selector ({self.model}) did not pick it"
        if note and self.selector_note:
            words += f" — {self.selector_note}"
        return words

    def _decisions_for_skip(self) -> list[dict[str, Any]]:
        if self._skip_decisions is None:
            session = self._session()
            if session is None or self._memdir is None:
                self._skip_decisions = []
            elif self._mode != "prefetch":
                self._skip_decisions = explain_index(session)
            else:
                memories = scan_all(self._memdir, limit=None, cache=scan_cache(self._memdir))
                self._skip_decisions = [
                    decision(m, "skipped", f"prefetch did not run: {self.reason}", "B")
                    for m in memories]
        return [dict(d) for d in self._skip_decisions]

    def record_decisions(self, limit: int) -> tuple[list[Any], dict[str, int]]:
        """At most ``limit`` decisions for the turn record and the counts of those left out
        (:func:`.explain.for_record`), without a pass over every memory: the files past
        the manifest are all ``skipped``, so they are counted, not sorted."""
        from jupyter_memory.recall.explain import for_record

        with self._lock:
            if self.status == "skipped":
                return for_record(self._decisions_for_skip(), limit)
            overflow = self._overflow
            head = self._decisions(include_overflow=False)
        kept, omitted = for_record([*head, *overflow[:limit]], limit)
        rest = len(overflow) - min(len(overflow), limit)
        if rest:
            omitted["skipped"] = omitted.get("skipped", 0) + rest
        return kept, omitted

    def _decisions(self, *, include_overflow: bool = True) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        running = self.status == "running"
        for memory in self._manifest:
            file = memory.file
            if file in self._filtered:
                reason, path = self._filtered[file]
                out.append(decision(memory, "filtered", reason, path))
            elif running:
                out.append(decision(memory, "skipped",
                                    "the selector had not answered yet when this was recorded "
                                    "(the prefetch does not hold up the answer)", "B"))
            elif self.status == "failed":
                out.append(decision(memory, "skipped", str(self.reason), "B"))
            elif file in self._dropped_at_take:
                out.append(decision(memory, "filtered", self._dropped_at_take[file], "C"))
            elif file in self._attached:
                out.append(self._attached_decision(memory))
            elif file in self._skipped:
                out.append(decision(memory, "skipped", self._skipped[file], "B"))
            elif file in self._over_limit:
                out.append(decision(memory, "skipped",
                                    f"named by the selector beyond the {MAX_FILES_PER_TURN}-file "
                                    "limit", "B"))
            else:
                out.append(decision(memory, "not_selected",
                                    self._selector_words(file, note=False), "B"))
        if include_overflow:
            out.extend(self._overflow)  # shared between turns (ScanCache.memo): read-only
        for name in self._unknown:
            out.append(decision(name, "filtered",
                                "named by the selector but not in the manifest it was shown; "
                                "ignored", "B"))
        return out

    def _attached_decision(self, memory: Any) -> dict[str, Any]:
        message = self._attached[memory.file]
        meta = message["_meta"]
        selector = self._selector_words(memory.file)
        extra = {"sent_bytes": meta["bytes"], "truncated": meta["truncated"]}
        if not self._taken:
            return decision(
                memory, "skipped",
                "selected and ready, but not attached: no model call followed a tool round "
                "after it was ready, and prefetch attaches only then (wait_for_prefetch "
                f"waits before the first call); {selector}", "B", **extra)
        if meta["truncated"]:
            limit = (f"{MAX_FILE_BYTES:,}-byte" if meta["truncated"] == "bytes"
                     else f"{MAX_FILE_LINES}-line")
            return decision(
                memory, "truncated",
                f"attached (path B) but cut at the {limit} limit: {meta['bytes']:,} of "
                f"{meta['total_bytes']:,} bytes sent; {selector}", "B", **extra)
        return decision(memory, "injected", f"attached (path B); {selector}", "B", **extra)


# ----------------------------------------------------------------------------- entry point


def _selector_kind(session: RecallSession, client: ModelClient | None) -> tuple[str, str | None]:
    wanted = session.config.recall_selector
    if wanted == "offline":
        return "offline", None
    if client is None:
        return "offline", "used because no model client was given"
    if not session.config.small_model:
        return "offline", "used because no small model is configured"
    return "model", None


def start_prefetch(session: RecallSession, prompt: str,
                   client: ModelClient | None = None) -> Prefetch:
    """Start relevance prefetch for ``prompt`` (already appended to the conversation).

    Returns at once. A message that does not trigger (feature off, no message, budget
    spent, single word) gets a finished :class:`Prefetch` with no messages whose
    decisions say why. The selector is the small model unless the ``recall_selector``
    setting is ``"offline"`` or no model is available.
    """
    memory_on = session.memdir is not None
    spent = budget_used(session.messages)
    skip = skip_reason(prompt, mode=session.recall_mode, memory_on=memory_on, spent=spent,
                       cjk_trigger=session.config.cjk_trigger)
    kind, note = _selector_kind(session, client)
    prefetch = Prefetch(session, prompt, client, selector=kind, skip=skip, note=note)
    if skip is None:
        prefetch._start(session)
    return prefetch


class HasPrefetch(Protocol):
    @property
    def last_prefetch(self) -> Prefetch | None: ...


def last_prefetch(session: HasPrefetch) -> Prefetch | None:
    """The most recent prefetch started for ``session`` (its ``last_prefetch`` field)."""
    return session.last_prefetch


def _log_failure(exc: BaseException) -> None:
    """A selector the endpoint failed (or that refused) at INFO; a bug of ours at ERROR,
    both with the traceback."""
    import anthropic

    from jupyter_memory.errors import JupyterMemoryError

    expected = isinstance(exc, JupyterMemoryError | SelectorError | anthropic.APIError
                          | TimeoutError | OSError)
    log.log(logging.INFO if expected else logging.ERROR, "relevance prefetch failed: %s: %s",
            type(exc).__name__, exc, exc_info=(type(exc), exc, exc.__traceback__))
