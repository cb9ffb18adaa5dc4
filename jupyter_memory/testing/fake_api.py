"""Deprecated: the local Messages API server is ``jupyter_memory.localapi`` now.

Its names are re-exported here for one release, and ``python -m
jupyter_memory.testing.fake_api`` still serves a script (``python -m
jupyter_memory.localapi`` is the new command). Importing or running this module warns.
"""

from __future__ import annotations

import warnings

from jupyter_memory.localapi.cache import (
    CACHE_LOOKBACK_BLOCKS,
    CACHE_TTL_SECONDS,
    CacheUsage,
    PromptCache,
)
from jupyter_memory.localapi.cli import main
from jupyter_memory.localapi.clock import ManualClock
from jupyter_memory.localapi.echo import echo_responder
from jupyter_memory.localapi.script import (
    CONTEXT_LIMIT_TOKENS,
    FAULT_KINDS,
    STOP_REASONS,
    Fault,
    ToolCall,
    Turn,
    load_script,
)
from jupyter_memory.localapi.server import NO_TURN_LEFT, FakeAnthropic, RecordedRequest
from jupyter_memory.localapi.tokens import (
    BLOCK_OVERHEAD_TOKENS,
    BYTES_PER_TOKEN,
    estimate_request_tokens,
    text_tokens,
)
from jupyter_memory.localapi.validation import MAX_CACHE_BREAKPOINTS

__all__ = [
    "BLOCK_OVERHEAD_TOKENS",
    "BYTES_PER_TOKEN",
    "CACHE_LOOKBACK_BLOCKS",
    "CACHE_TTL_SECONDS",
    "CONTEXT_LIMIT_TOKENS",
    "FAULT_KINDS",
    "MAX_CACHE_BREAKPOINTS",
    "NO_TURN_LEFT",
    "STOP_REASONS",
    "CacheUsage",
    "FakeAnthropic",
    "Fault",
    "ManualClock",
    "PromptCache",
    "RecordedRequest",
    "ToolCall",
    "Turn",
    "echo_responder",
    "estimate_request_tokens",
    "load_script",
    "main",
    "text_tokens",
]

_MOVED = (
    "jupyter_memory.testing.fake_api is deprecated and will be removed in the next release: "
    "import from jupyter_memory.localapi instead, and run the server with "
    "`python -m jupyter_memory.localapi`."
)

if __name__ == "__main__":
    # Run by hand: a DeprecationWarning raised in __main__ is shown by default.
    warnings.warn(_MOVED, DeprecationWarning, stacklevel=1)
    raise SystemExit(main())

warnings.warn(_MOVED, DeprecationWarning, stacklevel=2)
