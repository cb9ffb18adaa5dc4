"""Recall: how memories reach the model (docs/reference.md#recall).

Path A (the index in every request) is assembled by :mod:`jupyter_memory.context.assemble`; this
package holds path B, relevance prefetch, and the explanation of recall for every path.

- :func:`start_prefetch` — called by the session at the start of each turn; returns a
  :class:`Prefetch` (running, finished or skipped) whose ``take_messages()`` the agent
  loop drains and whose ``decisions`` go into the turn record.
- :func:`explain` / :func:`render_explain` — the data and the table behind
  ``%memory why``.
"""

from __future__ import annotations

from jupyter_memory.recall.attach import Excerpt, attachment_message, header_text, read_excerpt
from jupyter_memory.recall.caches import scan_cache
from jupyter_memory.recall.conversation import (
    RECALL_KIND,
    agent_files,
    budget_used,
    is_real_user_message,
    recall_messages,
    recent_tools,
    surfaced_files,
)
from jupyter_memory.recall.explain import (
    DECISIONS,
    decision,
    explain,
    explain_index,
    explain_static,
    files_of,
    render_explain,
)
from jupyter_memory.recall.limits import (
    CJK_MIN_CHARS,
    MAX_FILE_BYTES,
    MAX_FILE_LINES,
    MAX_FILES_PER_TURN,
    SELECTOR_MAX_TOKENS,
    SELECTOR_TIMEOUT_SECONDS,
    SESSION_BUDGET_BYTES,
)
from jupyter_memory.recall.model_selector import SELECTOR_SYSTEM, SELECTOR_TOOL, SelectorError
from jupyter_memory.recall.prefetch import (
    SELECTOR_KINDS,
    Prefetch,
    cjk_count,
    last_prefetch,
    skip_reason,
    start_prefetch,
)

__all__ = [
    "CJK_MIN_CHARS",
    "DECISIONS",
    "MAX_FILES_PER_TURN",
    "MAX_FILE_BYTES",
    "MAX_FILE_LINES",
    "RECALL_KIND",
    "SELECTOR_KINDS",
    "SELECTOR_MAX_TOKENS",
    "SELECTOR_SYSTEM",
    "SELECTOR_TIMEOUT_SECONDS",
    "SELECTOR_TOOL",
    "SESSION_BUDGET_BYTES",
    "Excerpt",
    "Prefetch",
    "SelectorError",
    "agent_files",
    "attachment_message",
    "budget_used",
    "cjk_count",
    "decision",
    "explain",
    "explain_index",
    "explain_static",
    "files_of",
    "header_text",
    "is_real_user_message",
    "last_prefetch",
    "read_excerpt",
    "recall_messages",
    "recent_tools",
    "render_explain",
    "scan_cache",
    "skip_reason",
    "start_prefetch",
    "surfaced_files",
]
