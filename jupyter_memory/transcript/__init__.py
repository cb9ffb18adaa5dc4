"""The JSONL session log (docs/reference.md#the-transcript), one concern per module.

- :mod:`~jupyter_memory.transcript.writer`: appending entries the way the reference does.
- :mod:`~jupyter_memory.transcript.reader`: reading a log fast, from its last compaction
  boundary.
- :mod:`~jupyter_memory.transcript.rebuild`: the conversation to resume with, with the
  resume clean-ups.
- :mod:`~jupyter_memory.transcript.retention`: deleting old logs (``cleanupPeriodDays``).
- :mod:`~jupyter_memory.transcript.entries`: what an entry is (types, boundary, shape).
- :mod:`~jupyter_memory.transcript.mirror`: the hook that mirrors each turn into the log.
"""
