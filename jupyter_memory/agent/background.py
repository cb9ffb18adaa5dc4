"""The one runner for a session's background work: prefetch, extraction, session notes.

Live, each piece of work runs in a daemon thread of its own, so no cell waits for it (the
reference's behaviour). In **synchronous mode** nothing runs in a thread: work waits in a
queue until the agent loop reaches a defined point and calls :meth:`BackgroundRunner.settle`
(docs/architecture.md lists the points: after the prefetch starts, after the call hooks of
each model call, when the turn has ended), or until someone waits for it. Two runs of the
same notebook then do the same thing at the same point, which is what record and replay
need, and what a test that wants a fixed order selects.

Work reports its own outcome (a failed selector is a ``skipped`` decision, a failed
extraction a notice); anything that still escapes it is logged with its traceback here and
the runner carries on.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

__all__ = ["BackgroundRunner", "BackgroundTask"]

log = logging.getLogger(__name__)


class BackgroundTask:
    """One piece of background work: run it once, and wait for it to finish.

    In synchronous mode a task that has not run yet runs in the caller's thread as soon
    as someone waits for it, so a wait never blocks on a queue nobody drains.
    """

    def __init__(self, name: str, work: Callable[[], None], runner: BackgroundRunner) -> None:
        self.name = name
        self._work = work
        self._runner = runner
        self._claimed = False
        self._lock = threading.Lock()
        self._done = threading.Event()

    def run(self) -> None:
        """Run the work here, unless it already ran or is running elsewhere."""
        with self._lock:
            if self._claimed:
                return
            self._claimed = True
        try:
            self._work()
        except Exception:  # work reports its own failures; this is one it did not
            log.error("background work %r failed", self.name, exc_info=True)
        finally:
            self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the work has finished (running it now if it is still queued in
        synchronous mode) or ``timeout`` seconds passed; True when finished."""
        if not self._claimed and self._runner.take(self):
            self.run()
        return self._done.wait(timeout)


class BackgroundRunner:
    """Runs a session's background work in threads, or at defined points (synchronous).

    ``synchronous`` is what the session chose (record, replay and tests choose it);
    ``endpoint_synchronous`` is set by ``Session.use_endpoint`` from the endpoint in use,
    so a recording or replaying endpoint makes the work synchronous while it is in use.
    A child session shares its parent's runner.
    """

    def __init__(self, *, synchronous: bool = False) -> None:
        self.synchronous_chosen = synchronous
        self.endpoint_synchronous = False
        self._queue: deque[BackgroundTask] = deque()
        self._lock = threading.Lock()

    @property
    def synchronous(self) -> bool:
        return self.synchronous_chosen or self.endpoint_synchronous

    def submit(self, name: str, work: Callable[[], None]) -> BackgroundTask:
        """Start ``work`` in a thread, or queue it for the next :meth:`settle`."""
        task = BackgroundTask(name, work, self)
        if self.synchronous:
            with self._lock:
                self._queue.append(task)
            log.debug("queued %s until the next settle point", name)
        else:
            threading.Thread(target=task.run, name=f"jupyter-memory-{name}",
                             daemon=True).start()
        return task

    def take(self, task: BackgroundTask) -> bool:
        """Remove ``task`` from the queue; True when it was waiting there."""
        with self._lock:
            try:
                self._queue.remove(task)
            except ValueError:
                return False
            return True

    def settle(self) -> None:
        """Run every queued task to completion, in order, including tasks they queue."""
        while True:
            with self._lock:
                if not self._queue:
                    return
                task = self._queue.popleft()
            task.run()

    @property
    def pending(self) -> int:
        """Tasks queued and not run yet (always 0 when work runs in threads)."""
        with self._lock:
            return len(self._queue)
