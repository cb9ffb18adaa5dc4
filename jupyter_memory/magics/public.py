"""What a notebook cell may use from Python: the names ``from jupyter_memory import ...``
gives (the package's ``__init__`` imports them from here on first use).

Each reads this kernel's session, the one ``%%agent`` talks through, so a learner's cell
sees what the magics see without reaching into the package's modules.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_memory.errors import ConfigError

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session
    from jupyter_memory.context.pricing import CostReport
    from jupyter_memory.sessions.request_view import TurnCalls

__all__ = ["cost_report", "explain_recall", "kernel_session", "last_compaction",
           "last_selection", "model_calls", "recall_budget"]


def kernel_session() -> Session:
    """The agent session of this kernel (made on first use, as ``%%agent`` would).

    >>> session = kernel_session()
    >>> session.last_record["answer"]      # the last turn's answer
    """
    from IPython import get_ipython

    shell = get_ipython()
    agent = None if shell is None else shell.magics_manager.registry.get("Agent")
    if agent is None:
        raise ConfigError("kernel_session() needs an IPython kernel with the extension "
                          "loaded: run %load_ext jupyter_memory first.")
    session: Session = agent.session()
    return session


def model_calls(notebook: str | Path | None = None) -> TurnCalls:
    """Every model call of this kernel's session, or of a saved ``notebook``: the data
    behind ``%request``, each call with its turn, kind and exact body.

    >>> calls = model_calls()
    >>> [c.kind for c in calls.of_turn(1)]          # ['selector', 'main', 'extraction']
    >>> calls.of_turn(1)[1].body["system"]           # the system blocks, as sent
    """
    from jupyter_memory.sessions.request_view import live_calls, notebook_calls

    if notebook is not None:
        return notebook_calls(Path(notebook).expanduser())
    return live_calls(kernel_session())


def cost_report(notebook: str | Path | None = None, *,
                sessions: Iterable[Session] | None = None) -> CostReport:
    """What this kernel's model calls cost so far, by kind of call (``%context --cost``), or
    a saved notebook's (``jupyter-memory cost``), or the ``sessions`` given together: earlier
    sessions of this kernel, each kept from ``kernel_session()`` before ``%agent new``.

    >>> print(cost_report().render_text())
    >>> first = kernel_session()                 # ... %agent new ...
    >>> cost_report(sessions=[first, kernel_session()]).total.dollars
    """
    from jupyter_memory.context.pricing import CostLedger, notebook_ledger, report

    if sessions is not None:
        if notebook is not None:
            raise ConfigError("cost_report() prices a saved notebook or sessions, not both: "
                              "give one of them.")
        chosen = list(sessions)
        if not chosen:
            raise ConfigError("cost_report(sessions=...) got no session: pass the sessions "
                              "you kept with kernel_session(), or call cost_report() for "
                              "this kernel's current one.")
        total = CostLedger()
        for session in chosen:
            total.merge(session.cost_ledger)
        return report(total, f"{len(chosen)} session{'s' * (len(chosen) != 1)} of this kernel")
    if notebook is not None:
        path = Path(notebook).expanduser()
        ledger, note = notebook_ledger(path)
        return report(ledger, f"the turn records saved in {path.name}", note)
    return report(kernel_session().cost_ledger, "this session, live")


def explain_recall() -> list[dict[str, Any]]:
    """Why each memory reached the model or not in this session's latest turn: the rows
    of ``%memory why``, one dict per memory (``file``, ``decision``, ``reason``, ...).

    >>> [(row["file"], row["decision"]) for row in explain_recall()]
    """
    from jupyter_memory.recall.explain import explain

    return explain(kernel_session())


def last_selection(timeout: float = 60.0) -> dict[str, Any] | None:
    """What the recall selector did for this session's latest turn, once it has finished:
    ``status``, ``selector`` (``model`` or ``offline``), ``selected``, ``attached``, the
    ``request`` it sent and the ``answer`` it got back (``None`` before the first prefetch).

    The prefetch runs beside the answer and may end after it, so this waits up to
    ``timeout`` seconds for it; a prefetch still running then is returned as it stands
    (``status`` says so).

    >>> selection = last_selection()
    >>> selection["selected"]                                  # the files it chose
    >>> selection["request"]["messages"][0]["content"][0]["text"]   # what it was shown
    """
    prefetch = kernel_session().last_prefetch
    if prefetch is None:
        return None
    prefetch.wait(timeout)
    selection: dict[str, Any] = prefetch.to_json()
    return selection


def last_compaction() -> dict[str, Any] | None:
    """The record of this session's latest compaction, as ``%compact`` displayed it:
    ``summary`` (the text the conversation now starts with), ``instructions``, ``method``,
    ``pre_tokens``/``post_tokens``, and ``requests`` (each summary request's ``digest`` and
    the model's whole ``answer``, scratchpad included). ``None`` before the first.

    >>> record = last_compaction()
    >>> print(record["requests"][-1]["answer"])     # the reply, <analysis> and all
    """
    results = kernel_session().compaction.results
    if not results:
        return None
    record: dict[str, Any] = results[-1].to_json()
    return record


def recall_budget() -> dict[str, Any]:
    """Where this session's recall budget stands: ``memories`` (the recalled memories the
    conversation still holds), ``used`` (their bytes), ``limit`` (61,440: 60 KB) and
    ``spent`` (whether ``used`` has reached it, so no new prefetch starts). The count is the
    conversation's: a compaction, which drops the attachments, resets it.

    >>> budget = recall_budget()
    >>> f"{budget['used']:,} of {budget['limit']:,} bytes"
    """
    from jupyter_memory.recall.conversation import budget_used, recall_messages
    from jupyter_memory.recall.limits import SESSION_BUDGET_BYTES

    messages = kernel_session().messages
    used = budget_used(messages)
    return {"memories": len(recall_messages(messages)), "used": used,
            "limit": SESSION_BUDGET_BYTES, "spent": used >= SESSION_BUDGET_BYTES}
