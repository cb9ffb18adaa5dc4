"""The numbers of relevance prefetch (docs/reference.md#path-b-relevance-prefetch), in one place.

They reproduce the reference: the selector sees the 200 newest files, picks at most 5,
each attached file is cut at 4,096 bytes or 200 lines, and a session attaches at most
60 KB before prefetch stops starting.
"""

from __future__ import annotations

__all__ = [
    "CJK_MIN_CHARS",
    "MAX_FILES_PER_TURN",
    "MAX_FILE_BYTES",
    "MAX_FILE_LINES",
    "SELECTOR_MAX_TOKENS",
    "SELECTOR_TIMEOUT_SECONDS",
    "SESSION_BUDGET_BYTES",
]

MAX_FILES_PER_TURN = 5
"""Most memories one prefetch attaches (5 × 4,096 bytes ≈ 20 KB a turn)."""
MAX_FILE_BYTES = 4_096
"""UTF-8 bytes of one memory that an attachment carries."""
MAX_FILE_LINES = 200
"""Lines of one memory that an attachment carries."""
SESSION_BUDGET_BYTES = 60 * 1024
"""Bytes of attached memories the conversation may hold; past it no prefetch starts."""
SELECTOR_MAX_TOKENS = 256
"""Output budget of the selector call: a short list of file names."""
SELECTOR_TIMEOUT_SECONDS = 30.0
"""How long one selector request may take before the prefetch gives up."""
CJK_MIN_CHARS = 2
"""With ``cjk_trigger``, an unspaced message with this many CJK characters still triggers."""
