"""Resume a conversation after a kernel restart: from the saved notebook or a JSONL log.

The notebook is the transcript (docs/reference.md#the-notebook-mapping): every agent cell's output carries the record of
its turn, and a record's ``messages`` are exactly the messages that turn added. Reading
them in cell order rebuilds the conversation; a cell whose output was cleared, or that
was deleted, carries no record and so is not part of it. The JSONL log beside the memdir
(ours, or one written by the reference tool) is the other source. Either way the
conversation starts after the last compaction and gets the clean-ups of docs/reference.md#resume
(``transcript.rebuild.rebuild_conversation``). A compaction (a ``%compact`` cell, or one the
agent made during a turn) restarts the conversation at what the compaction left.

``jupyter-memory transcript`` shows these (:mod:`jupyter_memory.commands.transcript`).
"""

from __future__ import annotations

import copy
import json
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_memory.agent.loop import TURN_MIME
from jupyter_memory.context.assemble import wire_messages
from jupyter_memory.context.json_copy import copy_json
from jupyter_memory.context.part_refs import refer, references
from jupyter_memory.context.request_parts import (
    MissingPart,
    content_digest,
    expand_record,
    expand_request,
    notebook_parts,
)
from jupyter_memory.errors import JupyterMemoryError, PathRefused
from jupyter_memory.memdir.gateway import Root, Roots, person_root
from jupyter_memory.memdir.location import projects_dir
from jupyter_memory.transcript.reader import find_session_log, read_entries
from jupyter_memory.transcript.rebuild import rebuild_conversation

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session

__all__ = [
    "Imported",
    "ResumeError",
    "Resumed",
    "apply_resume",
    "conversation_from_entries",
    "conversation_from_log",
    "conversation_from_notebook",
    "has_turn_records",
    "import_transcript",
    "load_conversation",
    "notebook_entries",
    "notebook_for",
    "notebook_requests",
    "notebook_roots",
    "resume_session",
]

#: The output of a ``%compact`` cell (docs/compaction.md); defined by the front end, named
#: here because the core never imports the front end.
COMPACTION_MIME = "application/vnd.jupyter-memory.compaction+json"
_SUBCOMMANDS = ("resume", "record", "replay", "status")


class ResumeError(JupyterMemoryError):
    """A notebook or log that cannot be resumed from."""


@dataclass
class Resumed:
    """A rebuilt conversation and how it was found."""

    source: str
    """``"notebook"`` or ``"log"``."""
    path: Path
    messages: list[dict[str, Any]]
    turns: int = 0
    session_ids: list[str] = field(default_factory=list)
    compacted: bool = False
    summary: str | None = None
    summary_index: int | None = None
    """Position of the compaction summary in :attr:`messages`, when known."""
    cleanups: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    interrupted: str = "none"
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line for the person: what was resumed, from where, and what was fixed."""
        what = f"{self.turns} turn{'s' if self.turns != 1 else ''}" if self.source == "notebook" \
            else f"{len(self.messages)} messages"
        text = f"Resumed {what} from {self.path.name}"
        if self.source == "notebook":
            text += f" ({len(self.messages)} messages)"
        if self.compacted:
            text += ", starting at the last compaction"
        if self.cleanups:
            text += "; fixed: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(self.cleanups.items()))
        cleared = self.skipped.get("cleared_agent_cells")
        if cleared:
            text += f"; {cleared} agent cell{'s' if cleared != 1 else ''} without output left out"
        if self.notes:
            text += "; " + "; ".join(self.notes)
        return text + "."

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "path": str(self.path),
            "turns": self.turns,
            "session_ids": self.session_ids,
            "compacted": self.compacted,
            "summary": self.summary,
            "cleanups": self.cleanups,
            "skipped": self.skipped,
            "interrupted": self.interrupted,
            "notes": self.notes,
            "messages": [{k: v for k, v in m.items() if k != "_meta"} for m in self.messages],
        }


# --------------------------------------------------------------------------- notebooks


def has_turn_records(path: Path) -> bool:
    """Cheap check: does the saved notebook hold any turn record at all?"""
    try:
        return TURN_MIME.encode() in person_root(path).read(path)
    except (OSError, PathRefused):
        return False


def _source(cell: Mapping[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _is_agent_turn_cell(source: str) -> bool:
    head = source.lstrip()
    if head.startswith("%%agent"):
        return True
    if head.startswith("%agent"):
        words = head[len("%agent"):].split()
        command = bool(words) and words[0] in _SUBCOMMANDS and len(words) <= 2
        return bool(words) and not command
    return False


def notebook_entries(
    path: Path, *, before_source: str | None = None
) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, int]]:
    """What a saved notebook says about the conversation, in cell order, and what was left out.

    Entries are ``("turn", record)`` for each turn record and ``("compaction", data)`` for
    each compaction: a ``%compact`` cell's output, or an automatic compaction listed in a
    turn record's ``compactions`` (it happened before the turn's own messages). With
    ``before_source`` (the text of the cell being run), only cells above the first cell
    with exactly that text count: after "Restart and run all" the cells below still show
    the previous run's outputs, which are not part of the conversation yet.
    """
    import nbformat

    try:
        text = person_root(path).text(path, errors="replace")
        nb = nbformat.reads(text, as_version=4)  # type: ignore[no-untyped-call]  # nbformat is unannotated
    except FileNotFoundError:
        raise ResumeError(f"No notebook at {path}; save it first, or give its path.") from None
    except Exception as exc:  # nbformat raises several kinds for a damaged file
        raise ResumeError(f"Could not read the notebook {path}: {exc}") from None
    cells = list(nb.get("cells", []))
    skipped: dict[str, int] = {}
    if before_source is not None:
        wanted = before_source.strip()
        for i, cell in enumerate(cells):
            if _source(cell).strip() == wanted:
                skipped["cells_below_current"] = len(cells) - i
                cells = cells[:i]
                break
    entries: list[tuple[str, dict[str, Any]]] = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        turns = 0
        for output in cell.get("outputs", []):
            data = output.get("data") if isinstance(output, Mapping) else None
            if not isinstance(data, Mapping):
                continue
            compaction = _json_value(data.get(COMPACTION_MIME))
            if isinstance(compaction, Mapping) and isinstance(compaction.get("summary"), str):
                entries.append(("compaction", dict(compaction)))
            record = _json_value(data.get(TURN_MIME))
            if isinstance(record, Mapping) and isinstance(record.get("messages"), list):
                for made in record.get("compactions") or []:
                    if isinstance(made, Mapping) and isinstance(made.get("summary"), str):
                        entries.append(("compaction", dict(made)))
                entries.append(("turn", dict(record)))
                turns += 1
            elif record is not None:
                skipped["unreadable_records"] = skipped.get("unreadable_records", 0) + 1
        if not turns and _is_agent_turn_cell(_source(cell)):
            skipped["cleared_agent_cells"] = skipped.get("cleared_agent_cells", 0) + 1
    return entries, skipped


def _json_value(value: Any) -> Any:
    if isinstance(value, str):  # some writers keep JSON types as text
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _after_compaction(marker: Mapping[str, Any], before: list[dict[str, Any]],
                      roots: Roots) -> tuple[list[dict[str, Any]], str | None]:
    """The conversation as a compaction left it, rebuilt from its record, and a note
    naming the files it named that were not read.

    The summary message is made again from the recorded summary exactly as the compaction
    made it; messages it kept word for word are the last ones of the conversation before
    it; the files it re-attached are read again from disk, as the compaction did, but only
    through the gateway, inside ``roots``: the record is data anyone could have written.
    """
    from jupyter_memory.agent import lifecycle
    from jupyter_memory.agent.compaction.core import INSERTED_KINDS, SUMMARY_KIND, kind_of
    from jupyter_memory.agent.compaction.prompt import summary_message_text
    from jupyter_memory.agent.compaction.restore import restore_files

    method = str(marker.get("method") or "model")
    kept_count = int(marker.get("kept_messages") or 0)
    transcript = marker.get("transcript_path")
    text = summary_message_text(str(marker["summary"]), method=method, transcript=transcript,
                                kept_messages=kept_count)
    boundary = {"trigger": marker.get("trigger"), "pre_tokens": marker.get("pre_tokens"),
                "at": marker.get("created"), "method": method,
                "post_tokens": marker.get("post_tokens")}
    out: list[dict[str, Any]] = [{
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "_meta": {"kind": SUMMARY_KIND, "compact_boundary": boundary, "transcript": transcript},
    }]
    if kept_count:
        out += [copy.deepcopy(m) for m in before if kind_of(m) not in INSERTED_KINDS][-kept_count:]
    files = [str(f["path"]) for f in marker.get("files") or []
             if isinstance(f, Mapping) and f.get("path")]
    restored = restore_files(files, roots)
    out += [r.message for r in restored.files]
    texts = [t for t in marker.get("hook_context") or [] if isinstance(t, str)]
    hook = lifecycle.context_message(lifecycle.HookOutcome("SessionStart", texts=texts))
    if hook is not None:
        out.append(hook)
    return out, restored.note(roots)


def conversation_from_entries(
    entries: Sequence[tuple[str, Mapping[str, Any]]], roots: Roots,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Play the notebook's entries in order, then apply the resume clean-ups.

    A turn adds its messages; a compaction replaces everything before it with what the
    compaction left (so the conversation starts at the last one), its files read again
    only inside ``roots``; then ``transcript.rebuild.rebuild_conversation``'s clean-ups
    make it sendable.
    """
    facts: dict[str, Any] = {"compacted": False, "notes": [], "summary": None}
    messages: list[dict[str, Any]] = []
    for kind, data in entries:
        if kind == "compaction":
            messages, skipped = _after_compaction(data, messages, roots)
            if skipped is not None:
                facts["notes"].append(skipped)
            facts["compacted"], facts["summary"] = True, str(data["summary"])
        else:
            messages.extend(copy_json(dict(m)) for m in data["messages"] if isinstance(m, Mapping))
    cleaned, conv = _clean(messages)
    facts.update(cleanups=dict(conv.cleanups), interrupted=conv.interrupted,
                 summary_index=0 if facts["compacted"] and cleaned else None)
    return cleaned, facts


def _clean(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Any]:
    """The resume clean-ups of ``transcript.rebuild.rebuild_conversation`` applied to messages.

    When they change nothing the model would see, the messages are kept exactly as they
    were (with the private ``_meta`` that recall and compaction read); otherwise the
    cleaned messages are used.
    """
    entries = []
    parent = None
    for message in messages:
        role = message.get("role")
        if role not in ("user", "assistant"):
            continue
        uid = str(uuid.uuid4())
        entries.append({
            "type": role, "uuid": uid, "parentUuid": parent,
            "isMeta": bool(message.get("_meta")),
            "message": {"role": role, "content": copy_json(message.get("content", []))},
        })
        parent = uid
    conv = rebuild_conversation(entries, include_meta=True)
    kept = [m for m in messages if m.get("role") in ("user", "assistant")]
    if not conv.cleanups and wire_messages(kept) == wire_messages(list(conv)):
        return kept, conv
    return list(conv), conv


class _Texts:
    """Puts back the texts a notebook's records keep as parts: from the notebook's outputs,
    else from the logs of the sessions that wrote them (read once, when first needed)."""

    def __init__(self, entries: Sequence[tuple[str, Mapping[str, Any]]], path: Path,
                 env: Mapping[str, str] | None) -> None:
        self.path = path
        self.env = env
        self.parts = notebook_parts(data for kind, data in entries if kind == "turn")
        self.logs: dict[str, tuple[Path | None, dict[str, str]]] = {}
        self.from_logs: dict[Path, int] = {}

    def _log(self, session_id: str) -> tuple[Path | None, dict[str, str]]:
        if session_id not in self.logs:
            log = find_session_log(session_id, projects_dir(self.env))
            found: dict[str, str] = {}

            def keep(text: str) -> str:
                key = content_digest(text)
                found[key] = text
                return key

            for entry in read_entries(log, from_last_boundary=False) if log is not None else []:
                message = entry.get("message")
                if isinstance(message, Mapping):
                    refer(message.get("content"), keep)
            self.logs[session_id] = (log, found)
        return self.logs[session_id]

    def expand(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """``record`` with its texts put back (the others as they are)."""
        session_id = str(record.get("session_id") or "")
        used: set[str] = set()

        def lookup(digest: str) -> Any:
            found = self.parts.get(digest)
            if found is None:  # kept in an output that is gone: the session's log may hold it
                texts = self._log(session_id)[1]
                if digest in texts:
                    used.add(digest)
                    return texts[digest]
            return found

        try:
            expanded = expand_record(record, lookup, sections=("messages",))
        except MissingPart as exc:
            log = self._log(session_id)[0]
            where = (f"the session's log {log} does not hold it either" if log is not None else
                     f"the session's log ({session_id}.jsonl) is not under {projects_dir(self.env)}")
            raise ResumeError(
                f"Cannot resume from {self.path.name}: turn {record.get('turn', '?')} (session "
                f"{session_id or '?'}) needs {_what_needs(record, exc.digest)}, which is kept "
                "once, in an earlier output of the notebook that was cleared or deleted, and "
                f"{where}. Restore that output, resume from a log (%agent resume PATH.jsonl), "
                "or clear this turn's output too to leave the turn out.") from None
        if used:
            log = self._log(session_id)[0]
            if log is not None:
                self.from_logs[log] = self.from_logs.get(log, 0) + len(used)
        return expanded

    def notes(self) -> list[str]:
        return [f"{count} text{'s' if count != 1 else ''} of cleared outputs read from the "
                f"session log {log.name}" for log, count in self.from_logs.items()]


def _what_needs(record: Mapping[str, Any], digest: str) -> str:
    """Which part of a turn a missing text belongs to, in the person's words."""
    calls = {c.get("id"): c for c in record.get("tool_calls") or [] if isinstance(c, Mapping)}
    for index, message in enumerate(record.get("messages") or []):
        if not isinstance(message, Mapping) or digest not in set(references(message)):
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, Mapping) or digest not in set(references(block)):
                continue
            if block.get("type") == "tool_result":
                call_id = block.get("tool_use_id")
                name = (calls.get(call_id) or {}).get("name", "a tool")
                return f"the result of tool call {call_id} ({name})"
            if block.get("type") == "tool_use":
                return f"the input of tool call {block.get('id')} ({block.get('name', 'a tool')})"
        return f"message {index + 1} of the turn ({message.get('role', '?')})"
    return f"the text part {digest[:19]}…"


def conversation_from_notebook(
    path: Path, *, before_source: str | None = None, roots: Roots | None = None,
    env: Mapping[str, str] | None = None,
) -> Resumed:
    """Rebuild the conversation from a saved notebook's turn records and compactions.

    Files a record names are read again only inside ``roots`` (a session's; by default
    the notebook's own project and memdir, :func:`notebook_roots`). A record keeps each
    long text once per session (from version 3): a text stored in an output that was cleared
    or deleted since is read from the session's log (found under ``<base>/projects``,
    ``env`` choosing the base), or the turn and tool call that need it are named in a
    :class:`ResumeError`.
    """
    path = Path(path)
    entries, skipped = notebook_entries(path, before_source=before_source)
    texts = _Texts(entries, path, env)
    entries = [(kind, texts.expand(data) if kind == "turn" else data) for kind, data in entries]
    messages, facts = conversation_from_entries(
        entries, roots if roots is not None else notebook_roots(path))
    facts["notes"].extend(texts.notes())
    records = [data for kind, data in entries if kind == "turn"]
    sessions = []
    for record in records:
        sid = record.get("session_id")
        if isinstance(sid, str) and sid not in sessions:
            sessions.append(sid)
    return Resumed(
        source="notebook", path=path, messages=messages, turns=len(records),
        session_ids=sessions, compacted=facts["compacted"], summary=facts["summary"],
        summary_index=facts["summary_index"], cleanups=facts["cleanups"], skipped=skipped,
        interrupted=facts["interrupted"], notes=facts["notes"],
    )


# --------------------------------------------------------------------------- logs


def conversation_from_log(path: Path) -> Resumed:
    """Rebuild the conversation from a JSONL log (ours or the reference tool's).

    Reading starts at the last compaction boundary; unknown entry types are skipped;
    meta messages are kept, because they were part of what the model saw.
    """
    path = Path(path)
    try:
        entries = read_entries(path)
    except FileNotFoundError:
        raise ResumeError(f"No session log at {path}; check the path.") from None
    except IsADirectoryError:
        raise ResumeError(f"{path} is a folder; give a session log (.jsonl) file.") from None
    conv = rebuild_conversation(entries, include_meta=True)
    summary_index = next((i for i, m in enumerate(conv.meta) if m.is_compact_summary), None)
    # Counted by log entry: rebuilding merges the summary with the prompt after it (roles
    # must alternate), and that prompt still began a turn.
    by_uuid = {e.get("uuid"): e for e in entries}
    kept = [by_uuid.get(u) for meta in conv.meta if not meta.synthetic for u in meta.uuids]
    prompts = sum(1 for e in kept if e is not None and _is_prompt(e))
    return Resumed(
        source="log", path=path, messages=list(conv), turns=prompts,
        session_ids=[conv.session_id] if conv.session_id else [],
        compacted=conv.boundary is not None, summary=conv.summary, summary_index=summary_index,
        cleanups=dict(conv.cleanups), skipped=dict(conv.skipped), interrupted=conv.interrupted,
    )


def _is_prompt(entry: Mapping[str, Any]) -> bool:
    """A log entry in which the person wrote something (not a tool result, a summary or
    text the harness added)."""
    if entry.get("type") != "user" or entry.get("isMeta") or entry.get("isCompactSummary"):
        return False
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, str):
        return bool(content.strip())
    return any(isinstance(b, Mapping) and b.get("type") == "text" for b in content or [])


def load_conversation(
    path: Path, *, before_source: str | None = None, roots: Roots | None = None,
    env: Mapping[str, str] | None = None,
) -> Resumed:
    """A notebook (``.ipynb``) or a session log (``.jsonl``), told apart by content."""
    path = Path(path).expanduser()
    if path.suffix == ".ipynb":
        return conversation_from_notebook(path, before_source=before_source, roots=roots,
                                          env=env)
    if path.suffix == ".jsonl":
        return conversation_from_log(path)
    try:
        head = person_root(path).read(path, limit=1).lstrip()
    except FileNotFoundError:
        raise ResumeError(f"Nothing at {path}: give a saved notebook (.ipynb) or a session "
                          "log (.jsonl).") from None
    except (OSError, PathRefused) as exc:
        raise ResumeError(f"Could not read {path}: {exc}") from None
    if head == b"{" and _is_json(person_root(path).text(path, errors="replace")):
        return conversation_from_notebook(path, before_source=before_source, roots=roots,
                                          env=env)
    return conversation_from_log(path)


def _is_json(text: str) -> bool:
    """Whether ``text`` is one JSON document (a notebook), not JSON lines (a session log)."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def notebook_roots(path: Path, env: Mapping[str, str] | None = None) -> Roots:
    """The folders a notebook's records may name files in when no session says: the
    notebook's project and its memdir."""
    from jupyter_memory.memdir.location import locate

    location = locate(Path(path).expanduser().parent, env)
    return Roots((Root.declare("project", location.project_root),
                  Root.declare("memdir", location.memdir)))


# --------------------------------------------------------------------------- sessions


def notebook_for(session: Session, user_ns: Mapping[str, Any] | None = None) -> Path | None:
    """The notebook this kernel serves, if anything tells (see ``notebook_path``)."""
    from jupyter_memory.notebook_path import current_notebook_path

    path = current_notebook_path(user_ns)
    if path is None and session.notebook:
        path = Path(session.notebook)
    return Path(path) if path is not None else None


def apply_resume(session: Session, resumed: Resumed, *, seed_log: bool = True) -> None:
    """Make ``resumed`` the session's conversation.

    The session's first SessionStart hooks then get source ``resume``. Stored usage is not carried over (it describes the old context; trusting it would
    trigger an immediate compaction). With ``seed_log``, the session's own JSONL log
    starts with the resumed conversation, as a new root, so a later resume from the log
    finds the whole conversation.
    """
    session.messages[:] = copy.deepcopy(resumed.messages)
    session.conversation.turn_count = resumed.turns
    session.conversation.last_usage = None
    session.lifecycle.mark_resumed()  # its SessionStart hooks get source "resume"
    log = session.log
    if seed_log and log is not None and resumed.messages:
        _seed(log.writer(), resumed)


def _seed(writer: Any, resumed: Resumed, parent: str | None = None) -> None:
    """Write the resumed messages, chained from ``parent`` (None: a new root)."""
    for i, message in enumerate(resumed.messages):
        body = {k: v for k, v in message.items() if k != "_meta"}
        blocks = list(body["content"])
        if i == resumed.summary_index and blocks and blocks[0].get("type") == "text":
            # Rebuilding merged the summary with the user messages after it: the summary
            # is the first block. Log it as the summary entry, the rest as a message.
            parent = writer.append_summary(blocks[0].get("text", ""), parent_uuid=parent)
            blocks = blocks[1:]
            if not blocks:
                continue
            body = {"role": body["role"], "content": blocks}
        parent = writer.append_message(body["role"], body, parent_uuid=parent,
                                       is_meta=bool(message.get("_meta")))


def resume_session(
    session: Session,
    path: Path | str | None = None,
    *,
    user_ns: Mapping[str, Any] | None = None,
    before_source: str | None = None,
    seed_log: bool = True,
) -> Resumed:
    """Rebuild the conversation from ``path`` (default: this kernel's saved notebook)."""
    if path is None:
        path = notebook_for(session, user_ns)
        if path is None:
            raise ResumeError(
                "I do not know which notebook this kernel serves. Give its path, e.g. "
                "%agent resume analysis.ipynb, or a session log (.jsonl)."
            )
    path = Path(path).expanduser()
    if not path.is_absolute():
        path = Path(os.getcwd()) / path
    resumed = load_conversation(path, before_source=before_source, roots=session.tool_roots(),
                                env=session.env)
    apply_resume(session, resumed, seed_log=seed_log)
    return resumed


# --------------------------------------------------------------------------- import


@dataclass
class Imported:
    """A log copied into this project's transcripts folder, ready to resume."""

    source: Path
    path: Path
    session_id: str
    resumed: Resumed

    def to_json(self) -> dict[str, Any]:
        data = self.resumed.to_json()
        data.pop("messages")
        return {"source": str(self.source), "path": str(self.path),
                "session_id": self.session_id, "messages": len(self.resumed.messages), **data}


def import_transcript(
    source: Path, *, cwd: Path, env: Mapping[str, str] | None = None
) -> Imported:
    """Rebuild a log (for example one of the reference tool) and write it as a new session.

    The new log (``<base>/projects/<key of cwd>/<new id>.jsonl``) holds only what a resume
    needs: the compaction boundary when there was one, the summary, and the cleaned
    messages. ``%agent resume PATH`` then continues from it.
    """
    from jupyter_memory._version import __version__
    from jupyter_memory.memdir.location import transcripts_dir
    from jupyter_memory.transcript.mirror import git_branch
    from jupyter_memory.transcript.writer import TranscriptWriter

    resumed = conversation_from_log(Path(source))
    if not resumed.messages:
        raise ResumeError(f"{source} holds no conversation to import (no user or assistant "
                          "messages after its last compaction).")
    session_id = str(uuid.uuid4())
    target = transcripts_dir(Path(cwd), env) / f"{session_id}.jsonl"
    writer = TranscriptWriter(target, session_id=session_id, cwd=str(cwd), version=__version__,
                              git_branch=git_branch(Path(cwd)))
    parent = writer.append_compact_boundary("manual", 0, None) if resumed.compacted else None
    _seed(writer, resumed, parent)
    writer.flush()
    return Imported(Path(source), target, session_id, resumed)


# --------------------------------------------------------------------------- a saved turn's requests


def notebook_requests(
    path: Path, *, turn: int | None = None, round_index: int | None = None
) -> dict[str, Any]:
    """The exact request bodies of one agent turn saved in a notebook, rebuilt and checked.

    ``turn`` counts the notebook's turn records from 1 in cell order (default: the last);
    ``round_index`` picks one model call of the turn (default: all). Version-2 records are
    rebuilt from the parts of every record in the notebook (request_parts.py), and each
    body is checked against the digest recorded when it was sent.
    """
    records = [data for kind, data in notebook_entries(path)[0] if kind == "turn"]
    if not records:
        raise ResumeError(f"{path} holds no agent turn output: run an %%agent cell and save "
                          "the notebook, or check that its outputs were not cleared.")
    number = len(records) if turn is None else turn
    if not 1 <= number <= len(records):
        raise ResumeError(f"--turn {turn} is out of range: {path} holds {len(records)} agent "
                          f"turn{'s' if len(records) != 1 else ''} (1 to {len(records)}).")
    record = records[number - 1]
    entries = list(record.get("requests") or [])
    if round_index is not None:
        if not 0 <= round_index < len(entries):
            raise ResumeError(f"--round {round_index} is out of range: turn {number} made "
                              f"{len(entries)} model call{'s' if len(entries) != 1 else ''} "
                              f"(0 to {len(entries) - 1}).")
        entries = [entries[round_index]]
    parts = notebook_parts(records)
    version = record.get("version")
    rebuilt = []
    for entry in entries:
        try:
            body = expand_request(entry, parts, version=version if isinstance(version, int) else 1)
        except JupyterMemoryError as exc:
            raise ResumeError(f"Turn {number} of {path}: {exc}") from None
        rebuilt.append({"round": entry.get("round"), "digest": entry.get("digest"), "body": body})
    return {"notebook": str(path), "turn": number, "record_version": record.get("version"),
            "requests": rebuilt}
