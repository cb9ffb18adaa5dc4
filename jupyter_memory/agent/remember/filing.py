"""``%%remember`` with a model: a short side run that files the text with the memory tools.

The run has Read, Grep and Glob, and Write and Edit inside the target folder only: it
picks the type, writes a specific description, and updates an existing memory instead
of adding a duplicate.
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_memory.agent.remember.result import MemoryNotFiled, RememberResult
from jupyter_memory.context import prompts
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.dates import RelativeDate, find_relative_dates
from jupyter_memory.memdir.index import INDEX_NAME
from jupyter_memory.memdir.store import MemoryStore

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session
    from jupyter_memory.context.sdk import ModelClient

__all__ = ["REMEMBER_SYSTEM", "remember_prompt", "remember_with_agent"]

_LOG = logging.getLogger("jupyter_memory")


REMEMBER_SYSTEM = """\
You file memories for a data scientist who works in Jupyter. They ran the `%%remember` \
command on a piece of text, and your only job in this exchange is to store that text as \
a memory, well: the right type, a specific description, no duplicate. You have Read, Grep \
and Glob, and Write and Edit inside the memory folder only; nothing else."""


def remember_prompt(
    body: str, *, folder: Path, manifest: str, today: str, fixed: Mapping[str, str]
) -> str:
    """The instruction of a ``%%remember`` run: the text, what exists, and the steps."""
    given = "".join(f"\n- {key}: {value}" for key, value in fixed.items() if value)
    fixed_text = f"The person fixed these fields; use them as given:{given}\n\n" if given else ""
    existing = manifest or "(none yet)"
    return f"""\
Store the text at the end of this message as one memory in `{folder}`.
Today's date is {today}.

Memories that already exist there (type, file, last change, description):
{existing}

{fixed_text}Steps:
1. If an existing memory already covers this fact, Read it and update it with Edit (or \
Write the merged text) instead of creating a second file. Glob or Grep the folder when \
the descriptions are not enough to tell.
2. Otherwise Write a new file named `<type>_<short_topic>.md` with frontmatter `name`, \
`description` (one specific line: it is all a future search sees) and `type` (user, \
feedback, project or reference), then the text as the body. Keep the person's wording; \
for feedback and project memories keep or add the **Why:** and **How to apply:** lines \
when the text gives the reason, and do not invent one.
3. Replace relative dates ("yesterday", "last week", "上周", "先週") with absolute dates \
counted from today.
4. The index `{INDEX_NAME}` is kept up to date for you: do not edit it.
5. Finish with one line naming the file and whether it is new or updated.

The text:
<<<
{body.strip()}
>>>"""


def _refused_writes(messages: list[dict[str, Any]]) -> list[str]:
    """The first line of each error the run's Write and Edit calls got back."""
    writes = {block.get("id") for message in messages if message.get("role") == "assistant"
              for block in message.get("content") or []
              if block.get("type") == "tool_use" and block.get("name") in ("Write", "Edit")}
    return [str(block.get("content") or "").strip().splitlines()[0]
            for message in messages if message.get("role") == "user"
            for block in message.get("content") or []
            if isinstance(block, dict) and block.get("type") == "tool_result"
            and block.get("is_error") and block.get("tool_use_id") in writes
            and str(block.get("content") or "").strip()]


def _dates_in(store: MemoryStore, files: list[str], today: _dt.date | None) -> list[RelativeDate]:
    found: list[RelativeDate] = []
    for file in files:
        found += find_relative_dates(frontmatter.parse(store.read(file)).body, today)
    return found


def remember_with_agent(
    session: Session,
    client: ModelClient,
    store: MemoryStore,
    body: str,
    *,
    name: str | None = None,
    description: str | None = None,
    type: str | None = None,
    today: _dt.date | None = None,
    max_calls: int = 5,
) -> RememberResult:
    """Let the model file ``body`` with the memory tools, confined to ``store``'s folder.

    The fields the person gave are enforced after the run, whatever the model wrote.
    Raises :class:`MemoryNotFiled` when nothing was saved (the model answered without
    filing, as an echoing endpoint does), and whatever the model call raises (the caller
    reports it and offers ``--offline``).
    """
    from jupyter_memory.agent.extraction import WriteTrackingStore, memory_registry, run_confined
    from jupyter_memory.agent.tools import PermissionPolicy, ToolContext
    from jupyter_memory.context.assemble import CACHE
    from jupyter_memory.memdir.scan import manifest, scan

    day = today or _dt.date.today()
    folder = Path(store.memdir)
    recording = WriteTrackingStore(folder, session_id=session.session_id, maintain_index=True,
                                   mark_provenance=session.config.provenance,
                                   provenance_default="user")
    ctx = ToolContext(project_root=session.project_root, memdir=folder, store=recording,
                      permission=PermissionPolicy(mode="deny", interactive=False),
                      restrict_to_memdir=True, provenance="user")
    registry = memory_registry(session.tools)
    definitions = registry.definitions()
    rules = prompts.memory_rules(str(folder), mode="index", maintain_index=True)
    system = [{"type": "text", "text": REMEMBER_SYSTEM},
              {"type": "text", "text": rules, "cache_control": dict(CACHE)}]
    fixed = {"type": type or "", "name": name or "", "description": description or ""}
    first = {"role": "user", "content": [{"type": "text", "text": remember_prompt(
        body, folder=folder, manifest=manifest(scan(folder)), today=day.isoformat(),
        fixed=fixed)}]}

    def body_for(messages: list[dict[str, Any]]) -> dict[str, Any]:
        return {"model": session.config.model, "max_tokens": session.config.max_tokens,
                "system": system, "tools": definitions, "messages": messages}

    run = run_confined(client, body_for, [first],
                        lambda tool, args: registry.run(tool, args, ctx), max_calls=max_calls,
                        on_response=lambda m: session.cost_ledger.charge(
                            "remember", m, session.config.model))
    files = [f for f in recording.before if f != INDEX_NAME and (folder / f).exists()]
    created = [f for f in files if recording.before[f] is None]
    out = RememberResult("agent", folder, files, created, agent_text=run.final_text)
    enforce = {k: v for k, v in (("type", type), ("name", name),
                                 ("description", description)) if v}
    for file in files:
        if enforce:
            doc = frontmatter.parse(store.read(file))
            changes = {k: v for k, v in enforce.items() if doc.get(k) != v}
            if changes:
                store.update(file, provenance="user", type=changes.get("type"),
                             name=changes.get("name"), description=changes.get("description"))
    settle = getattr(store, "settle", None)  # the team folder's rules (docs/reference.md#team-mode)
    moved = settle(files) if settle is not None else []
    if moved:  # saved, in the scope the rules give it: not a memory lost
        out.notes += [m.note for m in moved]
        files = [f for f in files if (folder / f).exists()]
        out.files, out.created = files, [f for f in created if f in files]
    if run.stopped:
        out.notes.append(f"The agent used all {max_calls} model calls before it finished.")
    if not files and not moved:
        _LOG.debug("%%remember filed nothing; the model answered: %s", run.final_text)
        refused = _refused_writes(run.messages)
        if refused:
            why = (f"the model's {'write was' if len(refused) == 1 else 'writes were'} "
                   f"refused ({refused[0]})")
        else:
            why = " ".join(out.notes) or (
                f"the model ({session.config.model}) answered without filing it")
        raise MemoryNotFiled(why, agent_text=run.final_text)
    out.dates = _dates_in(store, files, day)
    return out

