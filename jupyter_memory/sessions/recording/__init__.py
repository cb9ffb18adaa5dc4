"""Record every model exchange of a session, and replay it offline (docs/reference.md#where-this-project-differs).

A recording is one JSON file (by default ``<notebook stem>.recording.json`` beside the
notebook) holding, for each request the session sent, its digest, the request itself and
the response. Replay serves those responses from a small local server that speaks the
Messages API (``jupyter_memory.localapi``), so the agent runs exactly the code it runs
against the real API — the SDK, streaming, the tool loop — with no key and no network. A
request that is not in the recording is refused with the first difference, so a changed
prompt or a changed memory fails loudly instead of silently drifting.

Requests are compared after normalisation: the parts that change from one machine, folder
or day to the next are replaced by placeholders before hashing (see :class:`Normaliser`
and docs/sessions.md for the exact list). Responses are stored normalised too, and the
placeholders are filled with this machine's values when they are served, so a tool call
that read ``/old/folder/memory/x.md`` reads ``/new/folder/memory/x.md`` on replay.

Modules, one concern each: ``normalise`` (placeholders), ``differences`` (the first
difference), ``matching`` (the conversation a request carries, what else changed),
``file`` (the recording file and its start snapshot), ``recorder`` and ``replayer`` (the
two model endpoints) and ``control`` (start, stop, which one runs). Neither waits for
background work: both are synchronous endpoints, so the agent loop runs it at defined
points (``agent/background.py``). Every name
is also exported here, loaded on first use, so ``from jupyter_memory.sessions import
recording as record; record.start_replay(...)`` works as it always did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jupyter_memory.lazy import lazy_exports

if TYPE_CHECKING:
    from jupyter_memory.sessions.recording.control import (
        REPLAY_ENV,
        controller,
        match_mode,
        start_recording,
        start_replay,
        stop,
    )
    from jupyter_memory.sessions.recording.differences import (
        describe_difference,
        first_difference,
    )
    from jupyter_memory.sessions.recording.file import (
        FORMAT,
        SNAPSHOT_MAX_BYTES,
        SUFFIX,
        VERSION,
        Recording,
        RecordingError,
        ReplayMismatch,
        default_recording_path,
    )
    from jupyter_memory.sessions.recording.matching import (
        MATCH_ENV,
        MATCH_MODES,
        conversation_view,
        describe_changes,
    )
    from jupyter_memory.sessions.recording.normalise import (
        INSTANT,
        MTIME,
        PATH_PLACEHOLDERS,
        PLATFORM,
        PYTHON,
        TIMESTAMP,
        TODAY,
        Normaliser,
    )
    from jupyter_memory.sessions.recording.recorder import SDK_OPTIONS, Recorder, RecordingClient
    from jupyter_memory.sessions.recording.replayer import Replayer

#: Where each name lives (``__all__`` and the imports for the type checker list the same).
_EXPORTS = {
    "FORMAT": "file",
    "INSTANT": "normalise",
    "MATCH_ENV": "matching",
    "MATCH_MODES": "matching",
    "MTIME": "normalise",
    "PATH_PLACEHOLDERS": "normalise",
    "PLATFORM": "normalise",
    "PYTHON": "normalise",
    "REPLAY_ENV": "control",
    "SDK_OPTIONS": "recorder",
    "SNAPSHOT_MAX_BYTES": "file",
    "SUFFIX": "file",
    "TIMESTAMP": "normalise",
    "TODAY": "normalise",
    "VERSION": "file",
    "Normaliser": "normalise",
    "Recorder": "recorder",
    "Recording": "file",
    "RecordingClient": "recorder",
    "RecordingError": "file",
    "ReplayMismatch": "file",
    "Replayer": "replayer",
    "controller": "control",
    "conversation_view": "matching",
    "default_recording_path": "file",
    "describe_changes": "matching",
    "describe_difference": "differences",
    "first_difference": "differences",
    "match_mode": "control",
    "start_recording": "control",
    "start_replay": "control",
    "stop": "control",
}

__all__ = [
    "FORMAT",
    "INSTANT",
    "MATCH_ENV",
    "MATCH_MODES",
    "MTIME",
    "PATH_PLACEHOLDERS",
    "PLATFORM",
    "PYTHON",
    "REPLAY_ENV",
    "SDK_OPTIONS",
    "SNAPSHOT_MAX_BYTES",
    "SUFFIX",
    "TIMESTAMP",
    "TODAY",
    "VERSION",
    "Normaliser",
    "Recorder",
    "Recording",
    "RecordingClient",
    "RecordingError",
    "ReplayMismatch",
    "Replayer",
    "controller",
    "conversation_view",
    "default_recording_path",
    "describe_changes",
    "describe_difference",
    "first_difference",
    "match_mode",
    "start_recording",
    "start_replay",
    "stop",
]


__getattr__, __dir__ = lazy_exports(
    __name__, globals(), {name: f".{module}" for name, module in _EXPORTS.items()})
